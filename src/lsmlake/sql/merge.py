"""MERGE INTO: DuckDB evaluates every WHEN clause over the joined rows; the upserts and deletes that
result are written in one lsmlake commit (Paimon's rules: no primary-key updates, at most one source
row per target row)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lsmlake.core.sql_lexer import strip_hint
from lsmlake.errors import SqlError, UnsupportedError
from lsmlake.sql.common import Result
from lsmlake.sql.context import SqlContext, TableName
from lsmlake.sql.dml import (
    Hints,
    check_deletable,
    check_settable,
    field_name,
    shape_rows,
    target_table,
)
from lsmlake.sql.query import QueryEngine, arg
from lsmlake.table import Table

ACTION = "__lsmlake_action"


@dataclass(frozen=True)
class Clause:
    """One WHEN clause: which rows it applies to, its condition, and its action."""

    scope: str  # matched | not_matched | not_matched_by_source
    condition: exp.Expr | None
    action: str  # update | delete | insert
    values: dict[str, exp.Expr]
    """Column -> expression for UPDATE SET and INSERT."""


def _source_alias(using: exp.Expr, what: str) -> str:
    alias = using.alias or (strip_hint(using.name, {})[0] if isinstance(using, exp.Table) else "")
    if not alias:
        raise SqlError(f"{what}: the USING subquery needs an alias")
    return alias


def _clauses(tree: exp.Merge, table: Table, source: str, what: str) -> list[Clause]:
    whens = arg(tree, "whens")
    out = []
    for when in whens.expressions if whens is not None else []:
        scope = (
            "matched"
            if when.args.get("matched")
            else ("not_matched_by_source" if when.args.get("source") else "not_matched")
        )
        then = when.args.get("then")
        values: dict[str, exp.Expr] = {}
        if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            action = "delete"
        elif isinstance(then, exp.Update):
            action = "update"
            for eq in then.expressions:
                if isinstance(eq, exp.Star):  # UPDATE SET *: every non-key column from the source
                    values.update(
                        {
                            f: exp.column(f, table=source, quoted=True)
                            for f in table.schema.field_names
                            if f not in table.primary_keys and f not in table.partition_keys
                        }
                    )
                    continue
                column = field_name(table, eq.this, what)
                check_settable(table, [column], what)
                values[column] = eq.expression
        elif isinstance(then, exp.Insert):
            action = "insert"
            if isinstance(then.this, exp.Star):
                values = {f: exp.column(f, table=source, quoted=True) for f in table.schema.field_names}
            else:
                cols = [field_name(table, c, what) for c in then.this.expressions]
                exprs = list(then.expression.expressions)
                if len(cols) != len(exprs):
                    raise SqlError(f"{what}: INSERT lists {len(cols)} column(s) but {len(exprs)} value(s)")
                values = dict(zip(cols, exprs, strict=True))
        else:
            raise SqlError(f"{what}: unsupported WHEN action {then.sql() if then else None!r}")
        if (scope == "not_matched") != (action == "insert"):
            raise SqlError(f"{what}: WHEN {scope.replace('_', ' ').upper()} cannot {action.upper()}")
        out.append(Clause(scope, when.args.get("condition"), action, values))
    return out


def _select(clauses: list[Clause], table: Table, base: str | None) -> list[exp.Expr]:
    """``ACTION`` (1-based clause number, 0 = no clause applies) and each column's new value."""
    action = exp.case()
    for n, c in enumerate(clauses, 1):
        action = action.when(c.condition.copy() if c.condition else exp.true(), exp.Literal.number(n))
    action = action.else_(exp.Literal.number(0))
    out: list[exp.Expr] = [exp.alias_(action, ACTION, quoted=True)]
    for f in table.schema.field_names:
        keep = exp.column(f, table=base, quoted=True) if base else exp.null()
        value = exp.case()
        for c in clauses:
            value = value.when(
                c.condition.copy() if c.condition else exp.true(),
                c.values[f].copy() if f in c.values else keep.copy(),
            )
        out.append(exp.alias_(value.else_(keep) if clauses else keep, f, quoted=True))
    return out


def _no_match(on: exp.Expr, other: exp.Expr) -> exp.Expr:
    probe = exp.select("1").from_(other.copy()).where(on.copy())
    return exp.not_(exp.Exists(this=probe))


def _check_single_match(rows: pa.Table, table: Table, what: str) -> None:
    counts = rows.group_by(table.primary_keys).aggregate([([], "count_all")])
    dup = counts.filter(pc.greater(counts.column("count_all"), 1))
    if dup.num_rows:
        key = {k: dup.column(k)[0].as_py() for k in table.primary_keys}
        raise SqlError(f"{what}: {dup.num_rows} target row(s) matched more than one source row, e.g. {key}")


def merge(ctx: SqlContext, stmt: str, tree: exp.Merge, hints: Hints) -> Result:
    what = "MERGE INTO"
    name, table, target = target_table(ctx, tree.this, hints, what)
    what = f"{what} {name}"
    using, on = arg(tree, "using"), arg(tree, "on")
    if using is None or on is None or arg(tree, "using_cond"):
        raise SqlError(f"{what}: expected USING <source> ON <condition>")
    if not table.primary_keys:
        raise UnsupportedError(f"{what}: MERGE INTO needs a primary-key table")
    source = _source_alias(using, what)
    clauses = _clauses(tree, table, source, what)
    if any(c.action == "delete" for c in clauses):
        check_deletable(table, what)
    target_node = tree.this
    queries: dict[str, Callable[[exp.Select], exp.Select]] = {
        "matched": lambda sel: sel.from_(target_node.copy()).join(using.copy(), on=on.copy()),
        "not_matched": lambda sel: sel.from_(using.copy()).where(_no_match(on, target_node)),
        "not_matched_by_source": lambda sel: sel.from_(target_node.copy()).where(_no_match(on, using)),
    }
    upserts: list[pa.Table] = []
    deletes: list[pa.Table] = []
    with QueryEngine(ctx, hints, changing=name) as engine:
        for scope, build in queries.items():
            group = [c for c in clauses if c.scope == scope]
            if not group:
                continue
            base = None if scope == "not_matched" else target
            rows = engine.run(build(exp.select(*_select(group, table, base))))
            acted = rows.filter(pc.greater(rows.column(ACTION), 0))
            if scope == "matched":
                _check_single_match(acted, table, what)
            for n, clause in enumerate(group, 1):
                part = acted.filter(pc.equal(acted.column(ACTION), n)).drop_columns([ACTION])
                if part.num_rows == 0:
                    continue
                if clause.action == "delete":
                    deletes.append(part.select(table.primary_keys))
                else:
                    upserts.append(shape_rows(engine, table, part, table.schema.field_names, what=what))
    return _commit(stmt, name, table, upserts, deletes)


def _commit(
    stmt: str, name: TableName, table: Table, upserts: list[pa.Table], deletes: list[pa.Table]
) -> Result:
    written = sum(t.num_rows for t in upserts)
    removed = sum(t.num_rows for t in deletes)
    sid = None
    if written or removed:
        with table.writer() as w:
            for t in upserts:
                w.write(t)
            for t in deletes:
                w.delete(t)
        sid = w.snapshot_ids[-1] if w.snapshot_ids else None
    suffix = f" (snapshot {sid})" if sid is not None else ""
    return Result(
        "merge",
        stmt,
        message=f"merged into {name}: {written} row(s) upserted, {removed} deleted" + suffix,
        snapshot_id=sid,
    )
