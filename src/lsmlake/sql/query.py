"""Queries over lsmlake tables: each table reference is read into Arrow (with WHERE conjuncts and the
needed columns pushed into ``Table.read``, and time travel resolved to a snapshot), registered in an
in-memory DuckDB, and DuckDB runs the rewritten query."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from lsmlake.catalog import SYSTEM_TABLE_SPLITTER
from lsmlake.core.schema import TableSchema
from lsmlake.core.sql_lexer import strip_hint
from lsmlake.errors import SqlError
from lsmlake.expr import parse_filter, sqlglot_error_text
from lsmlake.scan.travel import (
    SNAPSHOT_ID,
    TAG_NAME,
    TIMESTAMP,
    TIMESTAMP_MILLIS,
    VERSION,
    TimeTravel,
    tag_exists,
    time_travel,
)
from lsmlake.scan.travel import TIME_TRAVEL_OPTIONS as TIME_TRAVEL_OPTIONS  # re-exported for DML checks
from lsmlake.sql.common import parse_time_millis
from lsmlake.sql.context import SqlContext, TableName
from lsmlake.stream.batch_incremental import is_incremental
from lsmlake.system.global_tables import SYSTEM_DATABASE, GlobalSystemTable
from lsmlake.system.registry import read_system_table
from lsmlake.table import Table

_NOT_PUSHABLE = (exp.Subquery, exp.Select, exp.Exists, exp.Window, exp.AggFunc, exp.Star)


def arg(node: exp.Expr, *names: str) -> Any:
    """``node.args[name]`` for the first name present (sqlglot renamed ``from`` to ``from_``)."""
    for name in names:
        if node.args.get(name) is not None:
            return node.args[name]
    return None


def to_arrow(relation: Any) -> pa.Table:
    """A DuckDB relation as an Arrow table (``to_arrow_table`` in DuckDB >= 1.4, ``arrow`` before)."""
    fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
    return fetch()


STREAM_BATCH_ROWS = 65_536
"""Rows per batch of a streamed query result (DuckDB hands results over in vectors of 2048 rows)."""


def to_reader(relation: Any, batch_rows: int = STREAM_BATCH_ROWS) -> pa.RecordBatchReader:
    """A DuckDB relation as a stream of record batches (``to_arrow_reader`` in DuckDB >= 1.4)."""
    fetch = getattr(relation, "to_arrow_reader", None) or relation.fetch_record_batch
    reader: pa.RecordBatchReader = fetch(batch_rows)
    return reader


def _query_error(e: duckdb.Error) -> SqlError:
    message = str(e).replace("__lsmlake_", "view ")
    first = message.splitlines()[0] if message else type(e).__name__
    return SqlError(f"query failed: {first}")


# --------------------------------------------------------------------------- time travel


def _version_value(node: exp.Expr) -> object:
    """A literal version/timestamp, or the value DuckDB computes for an expression."""
    inner = node.this if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) else node
    if isinstance(inner, exp.Literal):
        return str(inner.this) if inner.is_string else int(str(inner.this))
    try:
        with duckdb.connect() as con:
            row = con.execute("SELECT " + node.sql(dialect="duckdb")).fetchone()
    except duckdb.Error as e:
        raise SqlError(f"cannot evaluate time-travel expression {node.sql()!r}: {e}") from None
    return None if row is None else row[0]


def travel_options(table: Table, options: dict[str, str], version: exp.Expr | None) -> dict[str, str]:
    """Pop time-travel options from ``options`` (or take an AS OF clause): at most one, as one option."""
    travel = {k: options.pop(k) for k in TIME_TRAVEL_OPTIONS if k in options}
    if version is not None:
        if travel:
            raise SqlError(
                f"table {table.name}: both an AS OF clause and time-travel options {sorted(travel)}"
            )
        value = _version_value(version.expression)
        if str(version.this).upper() == "VERSION":
            return {VERSION: str(value)}
        return {TIMESTAMP_MILLIS: str(parse_time_millis(value, what=f"table {table.name} TIMESTAMP AS OF"))}
    if len(travel) > 1:
        raise SqlError(f"table {table.name}: more than one time-travel option: {sorted(travel)}")
    if TIMESTAMP in travel:
        text = travel.pop(TIMESTAMP)
        travel[TIMESTAMP_MILLIS] = str(parse_time_millis(text, what=f"table {table.name} {TIMESTAMP}"))
    return travel


def travelled(
    table: Table, options: dict[str, str], version: exp.Expr | None
) -> tuple[Table, TimeTravel | None]:
    """``table`` with its hint options and time travel, and the snapshot (with its schema) it names.

    The returned table names the snapshot by one option that reads the same snapshot again: the tag
    (readable after its snapshot expired) or the snapshot id."""
    travel = travel_options(table, options, version)
    dynamic = {**options, **travel}
    table = table.with_options(dynamic) if dynamic else table
    found = time_travel(table)
    if found is None or TAG_NAME in travel or (VERSION in travel and tag_exists(table, travel[VERSION])):
        return table, found
    pinned = {k: v for k, v in table.dynamic_options.items() if k not in TIME_TRAVEL_OPTIONS}
    pinned[SNAPSHOT_ID] = str(found.snapshot.id)
    return replace(table, dynamic_options=pinned), found


# --------------------------------------------------------------------------- references


@dataclass
class TableRef:
    """One table reference of a query, with what will be pushed into its read."""

    node: exp.Table
    name: TableName
    table: Table
    """The table with its hint options, time travel included (reads resolve it again)."""
    alias: str
    travel: TimeTravel | None = None
    """The snapshot a time-travel read names, with the table under that snapshot's schema."""
    filter: str | None = None
    columns: list[str] | None = None
    limit: int | None = None
    changed: bool = False
    """The target of an UPDATE, DELETE or MERGE: read as `Table.rows_to_change` reads."""

    @property
    def snapshot_id(self) -> int | None:
        return None if self.travel is None else self.travel.snapshot.id

    @property
    def schema(self) -> TableSchema:
        """The schema the read returns and the query's names refer to (a past snapshot's own)."""
        return self.table.schema if self.travel is None else self.travel.table.schema

    @property
    def key(self) -> tuple[object, ...]:
        cols = None if self.columns is None else tuple(self.columns)
        return (
            str(self.name),
            tuple(sorted(self.table.dynamic_options.items())),
            self.snapshot_id,
            self.filter,
            cols,
            self.limit,
            self.changed,
        )

    def read(self) -> pa.Table:
        if self.name.system:
            out = read_system_table(self.table, self.name.system)
            return out if self.columns is None else out.select(self.columns)
        if self.changed:
            return self.table.rows_to_change(self.filter, self.columns)
        return self.table.read(filter=self.filter, columns=self.columns, limit=self.limit)

    def read_stream(self) -> pa.Table | pa.RecordBatchReader:
        """The rows as a one-shot stream of `read.batch-size` batches where a read can stream them
        (a data table, not an incremental read); else :meth:`read`."""
        if self.name.system or self.changed or is_incremental(self.table):
            return self.read()
        scan = self.table.scan(filter=self.filter, columns=self.columns, limit=self.limit)
        scan.plan  # noqa: B018 - planning errors (a missing snapshot, a bad filter) raise here, not in DuckDB
        return scan.to_batches()

    def describe(self) -> str:
        lines = [
            f"{self.name} AS {self.alias}: snapshot {self.snapshot_id or 'latest'}, "
            f"columns {self.columns or 'all'}, filter {self.filter or 'none'}"
            + (f", limit {self.limit}" if self.limit is not None else "")
        ]
        if self.name.system:
            lines.append(f"  system table ${self.name.system}: read in full, filtered by DuckDB")
        else:
            lines.extend("  " + line for line in self.table.explain(filter=self.filter).splitlines())
        return "\n".join(lines)


@dataclass
class GlobalRef:
    """A reference to a catalog-wide system table (``sys.tables``), read in full."""

    node: exp.Table
    table: GlobalSystemTable
    alias: str

    @property
    def key(self) -> tuple[object, ...]:
        return (self.table.name,)

    def read(self) -> pa.Table:
        return self.table.read()

    def read_stream(self) -> pa.Table:
        return self.read()

    def describe(self) -> str:
        return f"{self.table.name} AS {self.alias}: global system table, read in full, filtered by DuckDB"


def _enclosing_select(node: exp.Table) -> exp.Select | None:
    parent = node.parent
    if isinstance(parent, (exp.From, exp.Join)) and isinstance(parent.parent, exp.Select):
        return parent.parent
    return None


def _pushable(select: exp.Select, node: exp.Table) -> bool:
    """Whether WHERE conjuncts may filter this table before the joins (not on a null-extended side)."""
    for join in arg(select, "joins") or []:
        if (join.side or "").upper() in ("RIGHT", "FULL"):
            return False
    if isinstance(node.parent, exp.Join):
        return not node.parent.side and (node.parent.kind or "").upper() not in ("SEMI", "ANTI")
    return True


def _conjunct_filter(conj: exp.Expr, ref: TableRef, single: bool) -> str | None:
    columns = list(conj.find_all(exp.Column))
    if not columns or conj.find(*_NOT_PUSHABLE):
        return None
    for col in columns:
        qualifier = col.table
        if single and not qualifier:
            continue
        if qualifier.lower() != ref.alias.lower() or col.args.get("db"):
            return None
    stripped = conj.copy()
    for col in stripped.find_all(exp.Column):
        col.set("table", None)
    text = stripped.sql()
    try:
        parse_filter(text, ref.schema.fields)
    except (ValueError, TypeError):
        return None
    return text


def _where_filter(ref: TableRef) -> str | None:
    select = _enclosing_select(ref.node)
    where = None if select is None else arg(select, "where")
    if select is None or where is None or ref.name.system or not _pushable(select, ref.node):
        return None
    single = not arg(select, "joins")
    condition = where.this.unnest()
    conjuncts: list[Any] = list(condition.flatten()) if isinstance(condition, exp.And) else [condition]
    parts = [p for c in conjuncts if (p := _conjunct_filter(c, ref, single)) is not None]
    return " AND ".join(f"({p})" for p in parts) if parts else None


def _simple_limit(ref: TableRef, tree: exp.Expr) -> int | None:
    select = _enclosing_select(ref.node)
    if select is not tree or select is None:
        return None
    limit = arg(select, "limit")
    blockers = (
        "where",
        "group",
        "having",
        "order",
        "distinct",
        "joins",
        "qualify",
        "offset",
        "with",
        "with_",
    )
    if limit is None or any(arg(select, b) for b in blockers):
        return None
    if any(e.find(exp.AggFunc, exp.Window) for e in select.expressions):
        return None
    value = limit.expression if isinstance(limit, exp.Limit) else None
    if isinstance(value, exp.Literal) and not value.is_string and str(value.this).isdigit():
        return int(str(value.this))
    return None


def _needed_columns(tree: exp.Expr, fields: list[str], primary_keys: list[str]) -> list[str] | None:
    for star in tree.find_all(exp.Star):
        if not isinstance(star.parent, exp.Count):
            return None
    if any(str(j.args.get("method") or "").upper() == "NATURAL" for j in tree.find_all(exp.Join)):
        return None  # NATURAL JOIN uses columns nobody names
    names = {i.name.lower() for i in tree.find_all(exp.Identifier)}
    needed = [f for f in fields if f.lower() in names]
    return needed or [primary_keys[0] if primary_keys else fields[0]]


class QueryEngine:
    """Runs queries for one statement; every table it reads is read once and shared."""

    def __init__(
        self,
        ctx: SqlContext,
        hints: Mapping[str, Mapping[str, str]] | None = None,
        *,
        changing: TableName | None = None,
    ) -> None:
        """``changing``: the table an UPDATE, DELETE or MERGE changes (its rows are read over every level)."""
        self.ctx = ctx
        self.hints = hints or {}
        self.changing = changing
        self.con = duckdb.connect()
        self.con.execute("SET enable_progress_bar = false")  # DuckDB would draw it on stdout, amid the rows
        self._views: dict[tuple[object, ...], str] = {}
        self._failures: list[BaseException] = []
        """What a streamed table read raised inside DuckDB (DuckDB reports it as its own error)."""

    def _guarded(self, data: pa.Table | pa.RecordBatchReader) -> pa.Table | pa.RecordBatchReader:
        if isinstance(data, pa.Table):
            return data

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                yield from data
            except Exception as e:
                self._failures.append(e)
                raise

        return pa.RecordBatchReader.from_batches(data.schema, batches())

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> QueryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def register(self, data: pa.Table) -> str:
        """Register an Arrow table under a fresh view name; returns the name."""
        name = f"__lsmlake_{len(self._views)}"
        self._views[(name,)] = name
        self.con.register(name, data)
        return name

    # -- planning
    def references(self, tree: exp.Expr) -> list[TableRef | GlobalRef]:
        """The lsmlake tables ``tree`` reads (CTE names and table functions are left alone)."""
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        refs: list[TableRef | GlobalRef] = []
        for node in list(tree.find_all(exp.Table)):
            if not isinstance(node.this, exp.Identifier) or node.name.startswith("__lsmlake_"):
                continue
            if not node.db and node.name.lower() in ctes:
                continue
            raw, options = strip_hint(node.name, self.hints)
            parts = [p for p in (node.catalog, node.db, raw) if p]
            if len(parts) >= 2 and parts[-2] == SYSTEM_DATABASE and SYSTEM_TABLE_SPLITTER not in raw:
                refs.append(GlobalRef(node, self.ctx.catalog.global_system_table(raw), node.alias or raw))
                continue
            name = self.ctx.name(parts)
            base = self.ctx.table(name)
            table, travel = travelled(base, options, node.args.get("version"))
            ref = TableRef(node, name, table, node.alias or raw, travel)
            ref.changed = travel is None and name == self.changing
            if not name.system:
                ref.filter = _where_filter(ref)
                ref.columns = _needed_columns(tree, ref.schema.field_names, table.primary_keys)
                ref.limit = _simple_limit(ref, tree)
            refs.append(ref)
        return refs

    def bind(
        self, tree: exp.Expr, *, read: bool = True, stream: bool = False
    ) -> tuple[exp.Expr, list[TableRef | GlobalRef]]:
        """A copy of ``tree`` whose table references point at registered Arrow data. With ``stream``,
        a query that reads one table once (no CTE that could scan it twice) reads it as a stream."""
        tree = tree.copy()
        refs = self.references(tree)
        streamed = stream and len(refs) == 1 and tree.find(exp.CTE) is None
        for ref in refs:
            view = self._views.get(ref.key)
            if view is None:
                view = f"__lsmlake_{len(self._views)}"
                if read:
                    self.con.register(view, self._guarded(ref.read_stream()) if streamed else ref.read())
                self._views[ref.key] = view
            alias = exp.TableAlias(this=exp.to_identifier(ref.alias, quoted=True))
            ref.node.replace(exp.Table(this=exp.to_identifier(view, quoted=True), alias=alias))
        return tree, refs

    # -- running
    def sql(self, tree: exp.Expr) -> str:
        return tree.sql(dialect="duckdb")

    def execute(self, sql_text: str) -> pa.Table:
        try:
            return to_arrow(self.con.sql(sql_text))
        except duckdb.Error as e:
            raise _query_error(e) from None

    def run(self, tree: exp.Expr) -> pa.Table:
        bound, _ = self.bind(tree)
        return self.execute(self.sql(bound))

    def stream(self, tree: exp.Expr) -> pa.RecordBatchReader:
        """The query's rows as a stream that reads its table as it goes (see :meth:`bind`); the engine
        closes when the stream ends or is closed. Errors in planning raise here, later ones on reading."""
        try:
            bound, _ = self.bind(tree, stream=True)
            reader = to_reader(self.con.sql(self.sql(bound)))
        except duckdb.Error as e:
            self.close()
            raise self._stream_error(e) from None
        except BaseException:
            self.close()
            raise

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                yield from reader
            except duckdb.Error as e:
                raise self._stream_error(e) from None
            finally:
                self.close()

        return pa.RecordBatchReader.from_batches(reader.schema, batches())

    def _stream_error(self, e: duckdb.Error) -> BaseException:
        """A table read that failed inside DuckDB raises its own error, not DuckDB's report of it."""
        return self._failures[0] if self._failures else _query_error(e)

    def explain(self, tree: exp.Expr) -> str:
        bound, refs = self.bind(tree, read=False)
        parts = [ref.describe() for ref in refs] or ["(no lsmlake tables)"]
        parts.append("DuckDB runs: " + self.sql(bound))
        return "\n".join(parts)


def parse_query(text: str) -> exp.Expr:
    """Parse one query (Spark dialect) and check it is one."""
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.ParseError as e:
        raise SqlError(parse_error_text(e)) from None
    if not isinstance(tree, (exp.Query, exp.Values)):
        raise SqlError(f"expected a query, got {type(tree).__name__.upper()}")
    return tree


def parse_error_text(e: sqlglot.errors.ParseError) -> str:
    return f"cannot parse: {sqlglot_error_text(e)}"
