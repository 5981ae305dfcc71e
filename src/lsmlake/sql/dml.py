"""INSERT, UPDATE and DELETE: the changed rows are computed by DuckDB, then written in one commit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lsmlake.core.default_values import default_scalar
from lsmlake.core.options import CoreOptions
from lsmlake.core.sql_lexer import strip_hint
from lsmlake.errors import SchemaMismatchError, SqlError, UnsupportedError
from lsmlake.sql.common import Result, duckdb_type
from lsmlake.sql.context import SqlContext, TableName
from lsmlake.sql.query import TIME_TRAVEL_OPTIONS, QueryEngine, arg, to_arrow
from lsmlake.table import Table
from lsmlake.write.column_fit import FitRules, fit_column

Hints = Mapping[str, Mapping[str, str]]


def target_table(ctx: SqlContext, node: exp.Expr, hints: Hints, what: str) -> tuple[TableName, Table, str]:
    """The table a write goes to (hint options applied), and the name its columns are qualified by."""
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        raise SqlError(f"{what}: the target must be a table, got {node.sql()!r}")
    raw, options = strip_hint(node.name, hints)
    name = ctx.name([p for p in (node.catalog, node.db, raw) if p], allow_system=False)
    if node.args.get("version") is not None or any(k in options for k in TIME_TRAVEL_OPTIONS):
        raise SqlError(f"{what}: cannot write to an older version of {name}")
    table = ctx.table(name)
    return name, (table.with_options(options) if options else table), node.alias or raw


def field_name(table: Table, column: exp.Expr, what: str) -> str:
    """The table column a SET / INSERT column list names (case-insensitive, as DuckDB resolves)."""
    name = column.name if isinstance(column, (exp.Column, exp.Identifier)) else column.sql()
    by_lower = {f.lower(): f for f in table.schema.field_names}
    if name not in table.schema.field_names and name.lower() not in by_lower:
        raise SqlError(f"{what}: table {table.name} has no column {name!r}")
    return name if name in table.schema.field_names else by_lower[name.lower()]


def check_settable(table: Table, columns: Sequence[str], what: str) -> None:
    keys = [c for c in columns if c in table.schema.primary_keys]
    if keys:
        raise SqlError(f"{what}: primary-key column(s) {keys} of {table.name} cannot be updated")
    parts = [c for c in columns if c in table.schema.partition_keys]
    if parts:
        raise SqlError(f"{what}: partition column(s) {parts} of {table.name} cannot be updated")


def check_deletable(table: Table, what: str) -> None:
    """Paimon's rules for deleting from a primary-key table, by merge engine."""
    if not table.primary_keys:
        raise UnsupportedError(f"{what}: {table.name} has no primary key; deletes need a primary-key table")
    opts = table.options
    engine = opts.merge_engine
    allowed = {
        "deduplicate": True,
        "first-row": False,
        "partial-update": opts.get(CoreOptions.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)
        or bool(opts.get(CoreOptions.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP)),
        "aggregation": opts.get(CoreOptions.AGGREGATION_REMOVE_RECORD_ON_DELETE),
    }.get(engine, False)
    if not allowed:
        raise UnsupportedError(f"{what}: merge-engine {engine!r} of {table.name} does not accept deletes")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def shape_rows(
    engine: QueryEngine,
    table: Table,
    data: pa.Table,
    columns: Sequence[str],
    *,
    what: str,
    constants: Mapping[str, str] | None = None,
) -> pa.Table:
    """Rows of the table's schema from ``data`` (positional ``columns``), cast with SQL semantics by
    DuckDB, then to the exact Arrow types; missing columns are NULL, or their default value (as Spark fills
    a column an INSERT leaves out, so a NOT NULL column with a default may be left out), ``constants`` are
    SQL literals.
    ROW values are matched to the column's fields by position, as Flink's ``ROW(...)`` is."""
    constants = constants or {}
    if data.num_columns != len(columns):
        raise SqlError(
            f"{what}: the query gives {data.num_columns} column(s) but {len(columns)} are "
            f"expected ({', '.join(columns)})"
        )
    view = engine.register(data.rename_columns(list(columns)))
    select = {}
    for f in table.schema.fields:
        value = _quote(f.name) if f.name in columns else constants.get(f.name, "NULL")
        target = duckdb_type(f.type)
        select[f.name] = (f"CAST({value} AS {target})" if target else value) + f" AS {_quote(f.name)}"
    shaped = _run_casts(engine, view, select, table.name)
    rules = FitRules(table.name, by_position=True, lossy_time=True)
    arrays = [
        fit_column(shaped.column(i), f.type, path=f.name, rules=rules)
        for i, f in enumerate(table.schema.fields)
    ]
    for i, f in enumerate(table.schema.fields):
        if f.default_value is not None and f.name not in columns and f.name not in constants:
            try:
                arrays[i] = pc.fill_null(arrays[i], default_scalar(f.type, f.default_value))
            except ValueError as e:
                raise SchemaMismatchError(f"{what}: column {f.name}: {e}") from None
    return pa.Table.from_arrays(arrays, names=table.schema.field_names)


_VALUE_ERRORS = (duckdb.ConversionException, duckdb.OutOfRangeException, duckdb.TypeMismatchException)


def _run_casts(engine: QueryEngine, view: str, select: Mapping[str, str], table_name: str) -> pa.Table:
    """Run the casting SELECT; when DuckDB refuses a value, name the column it belongs to."""
    try:
        return engine.execute(f"SELECT {', '.join(select.values())} FROM {view}")
    except SqlError:
        for name, expression in select.items():
            reason = _value_error(engine, f"SELECT {expression} FROM {view}")
            if reason is not None:
                raise SchemaMismatchError(
                    f"table {table_name}: column {name}: a value does not fit ({reason})"
                ) from None
        raise


def _value_error(engine: QueryEngine, sql_text: str) -> str | None:
    """Why DuckDB cannot convert the values of one column (None: it can, or fails for another reason)."""
    try:
        to_arrow(engine.con.sql(sql_text))
    except _VALUE_ERRORS as e:
        return str(e).splitlines()[0]
    except duckdb.Error:
        return None
    return None


def _written(kind: str, stmt: str, verb: str, count: int, name: TableName, sid: int | None) -> Result:
    suffix = f" (snapshot {sid})" if sid is not None else ""
    return Result(kind, stmt, message=f"{verb} {count} row(s) in {name}{suffix}", snapshot_id=sid)


# --------------------------------------------------------------------------- statements


def insert(ctx: SqlContext, stmt: str, tree: exp.Insert, hints: Hints) -> Result:
    node = tree.this
    listed: list[exp.Expr] | None = None
    if isinstance(node, exp.Schema):
        listed, node = list(node.expressions), node.this
    what = "INSERT INTO"
    name, table, _ = target_table(ctx, node, hints, what)
    overwrite = bool(tree.args.get("overwrite"))
    if overwrite:
        what = "INSERT OVERWRITE"
    constants: dict[str, str] = {}
    partition = node.args.get("partition")
    for eq in partition.expressions if partition is not None else []:
        if not isinstance(eq, exp.EQ):
            raise SqlError(f"{what} {name}: PARTITION needs column = value pairs, got {eq.sql()!r}")
        col = field_name(table, eq.this, what)
        if col not in table.partition_keys:
            raise SqlError(f"{what} {name}: {col} is not a partition column")
        constants[col] = eq.expression.sql(dialect="duckdb")
    if listed is None:
        columns = [f for f in table.schema.field_names if f not in constants]
    else:
        columns = [field_name(table, c, what) for c in listed]
        if len(set(columns)) != len(columns):
            raise SqlError(f"{what} {name}: a column is listed twice: {columns}")
        static = [c for c in columns if c in constants]
        if static:  # as in Flink: a static partition column takes its value from PARTITION only
            raise SqlError(
                f"{what} {name}: static partition column(s) {static} get their value from the PARTITION "
                "clause and must not be in the column list"
            )
    with QueryEngine(ctx, hints) as engine:
        data = engine.run(tree.expression)
        rows = shape_rows(engine, table, data, columns, what=f"{what} {name}", constants=constants)
    if overwrite:
        # a static PARTITION (k=v) replaces that partition even with no rows; otherwise the partitions written
        spec = _constant_values(table, constants) if constants else None
        sid = table.overwrite(rows, partitions=spec)
        return _written("insert", stmt, "overwrote with", rows.num_rows, name, sid)
    sid = table.write(rows) if rows.num_rows else None
    return _written("insert", stmt, "inserted", rows.num_rows, name, sid)


def _constant_values(table: Table, constants: dict[str, str]) -> dict[str, object]:
    """Python values of PARTITION (k = literal) constants, typed as the partition columns."""
    out: dict[str, object] = {}
    rules = FitRules(table.name, lossy_time=True)
    for k, literal in constants.items():
        try:
            relation = duckdb.sql(f"SELECT {literal} AS v")
            assert relation is not None
            value = relation.to_arrow_table().column("v")
        except duckdb.Error as e:
            raise SqlError(f"PARTITION ({k} = {literal}): not a constant value ({e})") from None
        out[k] = fit_column(value, table.schema.field(k).type, path=k, rules=rules)[0].as_py()
    return out


def update(ctx: SqlContext, stmt: str, tree: exp.Update, hints: Hints) -> Result:
    what = "UPDATE"
    name, table, alias = target_table(ctx, tree.this, hints, what)
    if arg(tree, "from_", "from") is not None:
        raise UnsupportedError(f"{what} {name}: UPDATE ... FROM is not supported; use MERGE INTO")
    sets: dict[str, exp.Expr] = {}
    for eq in tree.expressions:
        if not isinstance(eq, exp.EQ):
            raise SqlError(f"{what} {name}: SET needs column = expression, got {eq.sql()!r}")
        col = field_name(table, eq.this, what)
        if col in sets:
            raise SqlError(f"{what} {name}: column {col} is set twice")
        sets[col] = eq.expression
    check_settable(table, list(sets), f"{what} {name}")
    projections = [
        exp.alias_(sets[f].copy() if f in sets else exp.column(f, table=alias, quoted=True), f, quoted=True)
        for f in table.schema.field_names
    ]
    select = exp.select(*projections).from_(tree.this.copy())
    where = tree.args.get("where")
    if where is not None:
        select = select.where(where.this.copy())
    with QueryEngine(ctx, hints, changing=name) as engine:
        data = engine.run(select)
        rows = shape_rows(engine, table, data, table.schema.field_names, what=f"{what} {name}")
    sid = None
    if rows.num_rows:
        with table.writer() as w:  # +U records, as Spark's UPDATE writes them
            w.update(rows)
        sid = w.snapshot_ids[-1] if w.snapshot_ids else None
    return _written("update", stmt, "updated", rows.num_rows, name, sid)


def delete(ctx: SqlContext, stmt: str, tree: exp.Delete, hints: Hints) -> Result:
    what = "DELETE FROM"
    name, table, alias = target_table(ctx, tree.this, hints, what)
    check_deletable(table, f"{what} {name}")
    if tree.args.get("using"):
        raise UnsupportedError(f"{what} {name}: DELETE ... USING is not supported; use MERGE INTO")
    select = exp.select(*[exp.column(k, table=alias, quoted=True) for k in table.primary_keys])
    select = select.from_(tree.this.copy())
    where = tree.args.get("where")
    if where is not None:
        select = select.where(where.this.copy())
    with QueryEngine(ctx, hints, changing=name) as engine:
        keys = engine.run(select)
    keys = keys.rename_columns(table.primary_keys)
    sid = table.delete(keys) if keys.num_rows else None
    return _written("delete", stmt, "deleted", keys.num_rows, name, sid)
