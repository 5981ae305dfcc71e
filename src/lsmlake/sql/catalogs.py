"""Catalog statements as Flink spells them: CREATE CATALOG ... WITH (...), USE CATALOG, SHOW/DROP CATALOG(S)."""

from __future__ import annotations

import pyarrow as pa

from lsmlake.catalog import Catalog
from lsmlake.catalog_options import METASTORE, REST, WAREHOUSE
from lsmlake.core.sql_lexer import Cursor, Statement, parse_key_values
from lsmlake.errors import AlreadyExistsError, InvalidOptionError, SqlError, UnsupportedError
from lsmlake.sql.common import Result
from lsmlake.sql.context import DEFAULT_DATABASE, SqlContext

TYPE = "type"  # Flink's catalog factory name: 'paimon'


def open_catalog(name: str, options: dict[str, str]) -> Catalog:
    """The catalog ``CREATE CATALOG name WITH (options)`` describes: ``type`` 'paimon' (or absent),
    ``warehouse`` (a REST catalog's may be absent when ``uri`` names its server), and catalog options."""
    given = dict(options)
    kind = given.pop(TYPE, "paimon")
    if kind.strip().lower() != "paimon":
        raise UnsupportedError(
            f"CREATE CATALOG {name}: 'type' = {kind!r}; lsmlake opens 'paimon' catalogs only"
        )
    rest = given.get(METASTORE, "").strip().lower() == REST
    warehouse = given.get(WAREHOUSE) or (given.get("uri") if rest else None)
    if not warehouse:
        raise InvalidOptionError(f"CREATE CATALOG {name}: the option 'warehouse' is required")
    return Catalog(warehouse, options=given)


def create_catalog(ctx: SqlContext, stmt: Statement) -> Result:
    cur = Cursor(stmt, 2)
    exist_ok = cur.accept("IF", "NOT", "EXISTS")
    name = cur.name("a catalog name")
    options: dict[str, str] = {}
    if cur.accept("WITH"):
        options = parse_key_values(cur.group(), what="catalog options")
    cur.end()
    if name in ctx.catalogs:
        if exist_ok:
            return Result("create catalog", stmt.text, message=f"catalog {name} already exists")
        raise AlreadyExistsError(f"catalog {name} already exists")
    ctx.catalogs[name] = open_catalog(name, options)
    return Result("create catalog", stmt.text, message=f"created catalog {name}")


def use_catalog(ctx: SqlContext, stmt: Statement) -> Result:
    cur = Cursor(stmt, 2)
    name = cur.name("a catalog name")
    cur.end()
    if name not in ctx.catalogs:
        raise SqlError(f"catalog {name} does not exist; known: {', '.join(sorted(ctx.catalogs))}")
    ctx.catalog, ctx.catalog_name, ctx.database = ctx.catalogs[name], name, DEFAULT_DATABASE
    return Result("use catalog", stmt.text, message=f"using catalog {name}")


def drop_catalog(ctx: SqlContext, stmt: Statement) -> Result:
    cur = Cursor(stmt, 2)
    ignore = cur.accept("IF", "EXISTS")
    name = cur.name("a catalog name")
    cur.end()
    if name == ctx.catalog_name:
        raise SqlError(f"catalog {name} is in use: USE CATALOG another one first")
    if name not in ctx.catalogs:
        if ignore:
            return Result("drop catalog", stmt.text, message=f"catalog {name} does not exist")
        raise SqlError(f"catalog {name} does not exist")
    ctx.catalogs.pop(name).close()  # forgets the catalog; its databases and tables stay
    return Result("drop catalog", stmt.text, message=f"dropped catalog {name}")


def show_catalogs(ctx: SqlContext, stmt: Statement) -> Result:
    return Result(
        "show catalogs", stmt.text, pa.table({"catalog name": pa.array(sorted(ctx.catalogs), pa.string())})
    )
