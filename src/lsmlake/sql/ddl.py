"""Catalog statements: CREATE/DROP DATABASE, CREATE TABLE [AS SELECT], DROP TABLE, USE, SHOW, DESCRIBE."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

import pyarrow as pa

from lsmlake.core.field_metadata import field_metadata
from lsmlake.core.sql_lexer import Cursor, Statement, parse_key_values, rewrite_for_sqlglot
from lsmlake.core.type_parser import parse_type
from lsmlake.core.types import DataType, to_arrow_type
from lsmlake.errors import NoSuchDatabaseError, SqlError, UnsupportedError
from lsmlake.sql.common import Result, default_literal, type_sql
from lsmlake.sql.context import DEFAULT_DATABASE, SqlContext
from lsmlake.sql.query import QueryEngine, parse_query
from lsmlake.system.registry import read_system_table
from lsmlake.table import Table


@dataclass
class TableSpec:
    """What a CREATE TABLE statement says."""

    name: list[str]
    if_not_exists: bool = False
    columns: list[tuple[str, DataType, str | None]] = field(default_factory=list)
    """(name, type, comment) of each column."""
    defaults: dict[str, str] = field(default_factory=dict)
    """Column -> its DEFAULT literal's SQL text (as Paimon's Spark catalog stores it)."""
    primary_key: list[str] | None = None
    partition_keys: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    query_start: int | None = None
    """Token index of the query of CREATE TABLE ... AS SELECT."""


def _names(cur: Cursor, what: str) -> list[str]:
    toks = cur.group()
    names = [t.value for t in toks if t.is_name]
    if not names or len(toks) != 2 * len(names) - 1:
        raise cur.error(f"expected a list of column names for {what}")
    return names


def _set_primary_key(spec: TableSpec, cur: Cursor, names: list[str]) -> None:
    if spec.primary_key is not None:
        raise cur.error("the primary key is declared twice")
    spec.primary_key = names
    cur.accept("NOT", "ENFORCED")


def _column_list(cur: Cursor, spec: TableSpec) -> None:
    cur.expect("(")
    while True:
        if cur.accept("CONSTRAINT"):
            cur.name("a constraint name")
        if cur.accept("PRIMARY", "KEY"):
            _set_primary_key(spec, cur, _names(cur, "PRIMARY KEY"))
        elif cur.accept("WATERMARK"):
            raise UnsupportedError("CREATE TABLE: WATERMARK definitions are not supported")
        else:
            name = cur.name("a column name")
            if cur.accept("AS"):
                raise UnsupportedError(f"CREATE TABLE: computed column {name!r} is not supported")
            dtype = parse_type(cur)
            comment = None
            while True:
                if cur.accept("PRIMARY", "KEY"):
                    _set_primary_key(spec, cur, [name])
                elif cur.accept("COMMENT"):
                    comment = cur.string("a column comment")
                elif cur.accept("DEFAULT"):  # Spark's column default: c INT DEFAULT 5
                    spec.defaults[name] = default_literal(cur)
                elif cur.accept("NOT", "NULL"):
                    dtype = dtype.copy(nullable=False)
                elif cur.accept("METADATA"):
                    raise UnsupportedError(f"CREATE TABLE: metadata column {name!r} is not supported")
                else:
                    break
            spec.columns.append((name, dtype, comment))
        if cur.accept(")"):
            return
        cur.expect(",")


def _partition_list(cur: Cursor, spec: TableSpec) -> None:
    known = {c[0] for c in spec.columns}
    cur.expect("(")
    while True:
        name = cur.name("a partition column")
        nxt = cur.peek()
        if nxt is not None and nxt.kind == "word":  # Hive style: PARTITIONED BY (dt STRING)
            dtype = parse_type(cur)
            if name not in known:
                spec.columns.append((name, dtype, None))
        spec.partition_keys.append(name)
        if cur.accept(")"):
            return
        cur.expect(",")


def parse_create_table(stmt: Statement) -> TableSpec:
    cur = Cursor(stmt)
    cur.expect("CREATE")
    if cur.accept("TEMPORARY") or cur.accept("OR", "REPLACE"):
        raise UnsupportedError("CREATE TEMPORARY / OR REPLACE TABLE is not supported")
    cur.expect("TABLE")
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    spec = TableSpec(cur.qualified(), if_not_exists)
    if (tok := cur.peek()) is not None and tok.value == "(":
        _column_list(cur, spec)
    while not cur.done:
        if cur.accept("COMMENT"):
            spec.comment = cur.string("a table comment")
        elif cur.accept("PARTITIONED", "BY"):
            _partition_list(cur, spec)
        elif cur.accept("USING"):
            fmt = cur.name("a table format")
            if fmt.lower() != "paimon":
                raise SqlError(f"CREATE TABLE ... USING {fmt}: only paimon tables can be created")
        elif cur.accept("WITH") or cur.accept("TBLPROPERTIES"):
            spec.options.update(parse_key_values(cur.group(), what="table options"))
        elif cur.accept("LIKE"):
            raise UnsupportedError("CREATE TABLE ... LIKE is not supported")
        elif cur.accept("AS"):
            spec.query_start = cur.i
            break
        else:
            raise cur.error("expected COMMENT, PARTITIONED BY, WITH or AS")
    # Paimon's Spark catalog (and CTAS in Flink) take keys as options.
    for key, target in (("primary-key", "primary_key"), ("partition", "partition_keys")):
        if key in spec.options:
            if getattr(spec, target):
                what = target.replace("_", " ")
                raise SqlError(f"CREATE TABLE: {what} given twice (also as option {key!r})")
            setattr(spec, target, [c.strip() for c in spec.options.pop(key).split(",") if c.strip()])
    return spec


def create_table(ctx: SqlContext, stmt: Statement) -> Result:
    spec = parse_create_table(stmt)
    name = ctx.name(spec.name, allow_system=False)
    data: pa.Table | None = None
    if spec.query_start is not None:
        if spec.columns:
            raise SqlError(
                "CREATE TABLE ... AS SELECT takes its columns from the query; drop the column list"
            )
        if spec.if_not_exists and ctx.catalog.table_exists(name.identifier):
            return Result("create table", stmt.text, message=f"table {name} already exists")
        rewritten = rewrite_for_sqlglot(stmt, stmt.tokens[spec.query_start :])
        with QueryEngine(ctx, rewritten.hints) as engine:
            data = engine.run(parse_query(rewritten.text))
        schema = data.schema
    else:
        if not spec.columns:
            raise SqlError(f"CREATE TABLE {name}: no columns")
        schema = pa.schema(
            [
                pa.field(n, to_arrow_type(t), t.nullable, metadata=field_metadata(c, spec.defaults.get(n)))
                for n, t, c in spec.columns
            ]
        )
    ctx.ensure_database(name.database)
    existed = spec.if_not_exists and ctx.catalog.table_exists(name.identifier)
    table = ctx.catalog.create_table(
        name.identifier,
        schema=schema,
        primary_key=spec.primary_key,
        partition_keys=spec.partition_keys,
        options=spec.options,
        comment=spec.comment,
        exist_ok=spec.if_not_exists,
    )
    if existed:
        return Result("create table", stmt.text, message=f"table {name} already exists")
    if data is not None:
        sid = table.write(data)
        return Result(
            "create table",
            stmt.text,
            message=f"created table {name} with {data.num_rows} rows",
            snapshot_id=sid,
        )
    return Result("create table", stmt.text, message=f"created table {name}")


# --------------------------------------------------------------------------- the rest


def create_database(ctx: SqlContext, stmt: Statement) -> Result:
    cur = Cursor(stmt, 2)
    exist_ok = cur.accept("IF", "NOT", "EXISTS")
    name = cur.name("a database name")
    if cur.accept("COMMENT"):
        cur.string()
    if cur.accept("WITH"):
        cur.group()
    cur.end()
    existed = exist_ok and name in ctx.catalog.list_databases()
    ctx.catalog.create_database(name, exist_ok=exist_ok)
    return Result(
        "create database",
        stmt.text,
        message=f"database {name} already exists" if existed else f"created database {name}",
    )


def drop(ctx: SqlContext, stmt: Statement) -> Result:
    cur = Cursor(stmt, 1)
    if cur.accept("DATABASE") or cur.accept("SCHEMA"):
        ignore = cur.accept("IF", "EXISTS")
        db = cur.name("a database name")
        cascade = cur.accept("CASCADE")
        cur.accept("RESTRICT")
        cur.end()
        ctx.catalog.drop_database(db, ignore_missing=ignore, cascade=cascade)
        if ctx.database == db:
            ctx.database = DEFAULT_DATABASE
        return Result("drop database", stmt.text, message=f"dropped database {db}")
    if cur.accept("TEMPORARY") or cur.accept("VIEW"):
        raise UnsupportedError("DROP TEMPORARY TABLE / VIEW is not supported")
    cur.expect("TABLE")
    ignore = cur.accept("IF", "EXISTS")
    name = ctx.name(cur.qualified(), allow_system=False)
    cur.accept("PURGE")
    cur.end()
    existed = ctx.catalog.table_exists(name.identifier)
    ctx.catalog.drop_table(name.identifier, ignore_missing=ignore)
    return Result(
        "drop table",
        stmt.text,
        message=f"dropped table {name}" if existed else f"table {name} does not exist",
    )


def use(ctx: SqlContext, stmt: Statement) -> Result:
    cur = Cursor(stmt, 1)
    if not cur.accept("DATABASE"):
        cur.accept("SCHEMA")
    parts = cur.qualified("a database name")
    cur.end()
    if len(parts) == 2 and parts[0] in ctx.catalogs and parts[0] != ctx.catalog_name:
        # Flink's USE catalog.db: switch to that catalog and database
        name, catalog = parts[0], ctx.catalogs[parts[0]]
        db = parts[1]
        if db == DEFAULT_DATABASE:
            catalog.create_database(db, exist_ok=True)
        if db not in catalog.list_databases():
            raise NoSuchDatabaseError(f"database {name}.{db} does not exist")
        ctx.catalog, ctx.catalog_name, ctx.database = catalog, name, db
        return Result("use", stmt.text, message=f"using catalog {name}, database {db}")
    db = ctx.database_name(parts)
    ctx.ensure_database(db)
    if db not in ctx.catalog.list_databases():
        raise NoSuchDatabaseError(f"database {db} does not exist")
    ctx.database = db
    return Result("use", stmt.text, message=f"using database {db}")


def _like(cur: Cursor) -> str | None:
    if cur.accept("LIKE"):
        return cur.string("a LIKE pattern").replace("%", "*").replace("_", "?")
    return None


def show(ctx: SqlContext, stmt: Statement) -> Result:
    cur = Cursor(stmt, 1)
    if cur.accept("DATABASES") or cur.accept("SCHEMAS"):
        pattern = _like(cur)
        cur.end()
        names = [
            d for d in ctx.catalog.list_databases() if pattern is None or fnmatch.fnmatchcase(d, pattern)
        ]
        return Result("show databases", stmt.text, pa.table({"database_name": pa.array(names, pa.string())}))
    if cur.accept("TABLES"):
        db = ctx.database
        if cur.accept("FROM") or cur.accept("IN"):
            db = ctx.database_name(cur.qualified("a database name"))
        pattern = _like(cur)
        cur.end()
        if db == DEFAULT_DATABASE and db not in ctx.catalog.list_databases():
            return Result("show tables", stmt.text, pa.table({"table_name": pa.array([], pa.string())}))
        names = [t for t in ctx.catalog.list_tables(db) if pattern is None or fnmatch.fnmatchcase(t, pattern)]
        return Result("show tables", stmt.text, pa.table({"table_name": pa.array(names, pa.string())}))
    if cur.accept("CREATE", "TABLE"):
        name = ctx.name(cur.qualified(), allow_system=False)
        cur.end()
        text = show_create_table(ctx.table(name))
        return Result("show create table", stmt.text, pa.table({"create_statement": [text]}), message=text)
    if cur.accept("CURRENT", "DATABASE"):
        return Result("show", stmt.text, pa.table({"database_name": [ctx.database]}))
    raise cur.error("SHOW supports DATABASES, TABLES [FROM db] [LIKE 'p'], CREATE TABLE t, CURRENT DATABASE")


def describe(ctx: SqlContext, stmt: Statement) -> Result:
    cur = Cursor(stmt, 1)
    if not cur.accept("EXTENDED"):
        cur.accept("FORMATTED")
    cur.accept("TABLE")
    name = ctx.name(cur.qualified())
    cur.end()
    table = ctx.table(name)
    if name.system:
        schema = read_system_table(table, name.system).schema
        rows = {
            "name": schema.names,
            "type": [str(f.type) for f in schema],
            "nullable": [f.nullable for f in schema],
        }
        return Result("describe", stmt.text, pa.table(rows))
    return Result("describe", stmt.text, describe_table(table))


def describe_table(table: Table) -> pa.Table:
    """One row per column: name, type, nullable, primary/partition key membership, comment."""
    s = table.schema
    return pa.table(
        {
            "name": [f.name for f in s.fields],
            "type": [type_sql(f.type.copy(nullable=True)) for f in s.fields],
            "nullable": [f.type.nullable for f in s.fields],
            "primary_key": [f.name in s.primary_keys for f in s.fields],
            "partition_key": [f.name in s.partition_keys for f in s.fields],
            "comment": pa.array([f.description for f in s.fields], pa.string()),
        }
    )


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def show_create_table(table: Table) -> str:
    """Flink DDL that re-creates ``table`` (columns, primary key, partitioning, options)."""
    s = table.schema
    lines = []
    for f in s.fields:
        comment = f" COMMENT {_sql_string(f.description)}" if f.description else ""
        lines.append(f"  `{f.name}` {type_sql(f.type)}{comment}")
    if s.primary_keys:
        lines.append(f"  PRIMARY KEY ({', '.join(f'`{k}`' for k in s.primary_keys)}) NOT ENFORCED")
    out = f"CREATE TABLE `{table.name.replace('.', '`.`')}` (\n" + ",\n".join(lines) + "\n)"
    if s.comment:
        out += f"\nCOMMENT {_sql_string(s.comment)}"
    if s.partition_keys:
        out += f"\nPARTITIONED BY ({', '.join(f'`{k}`' for k in s.partition_keys)})"
    if s.options:
        opts = ",\n".join(f"  {_sql_string(k)} = {_sql_string(v)}" for k, v in sorted(s.options.items()))
        out += f"\nWITH (\n{opts}\n)"
    return out
