"""Running SQL scripts: split into statements, dispatch each by kind, and name the statement in errors."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pyarrow as pa
import sqlglot
from sqlglot import exp

from lsmlake.catalog import Catalog
from lsmlake.core.redact import mask_values, redact_sql, secret_values
from lsmlake.core.sql_lexer import Statement, rewrite_for_sqlglot, split_statements
from lsmlake.errors import LsmlakeError, SqlError
from lsmlake.sql import alter, catalogs, ddl, dml, export, merge, procedures
from lsmlake.sql.common import Result, short
from lsmlake.sql.context import DEFAULT_DATABASE, SqlContext
from lsmlake.sql.query import QueryEngine, parse_error_text, parse_query

_SQLGLOT_KEYWORDS = ("SELECT", "WITH", "VALUES", "(", "INSERT", "UPDATE", "DELETE", "MERGE", "TABLE", "FROM")


class Session:
    """A SQL session over one catalog; ``USE db`` changes the database of later statements.

    With ``stream``, a query's Result carries its rows as ``batches`` (a one-shot stream that reads the
    table as it is consumed; read it before the next statement runs) instead of ``table``."""

    def __init__(self, catalog: Catalog, *, database: str = DEFAULT_DATABASE, stream: bool = False) -> None:
        self.ctx = SqlContext(catalog, database)
        self.stream = stream

    @property
    def database(self) -> str:
        return self.ctx.database

    def run(self, sql_text: str) -> Iterator[Result]:
        """Execute statements one by one, yielding each result as soon as it is done."""
        for stmt in split_statements(sql_text):
            yield self.execute_statement(stmt)

    def execute(self, sql_text: str) -> list[Result]:
        return list(self.run(sql_text))

    def execute_statement(self, stmt: Statement) -> Result:
        """Run one statement. Secret option values in it (a catalog's ``'token'``, ``'jdbc.password'``,
        ``'header.*'``, ...) are masked in its Result and in the error it raises."""
        secrets = secret_values(stmt.text)
        try:
            result = self._dispatch(stmt)
        except (LsmlakeError, ValueError) as e:
            label = f"statement {stmt.number} (line {stmt.line}: {short(redact_sql(stmt.text))})"
            message = mask_values(f"{label}: {e}", secrets)
            leaked = any(v in str(e) for v in secrets)
            try:
                wrapped = type(e)(message)
            except Exception:
                if leaked:
                    raise SqlError(message) from None
                raise e from None
            if leaked:  # the original error quotes a secret: do not chain it
                raise wrapped from None
            raise wrapped from e
        if secrets:
            return replace(result, statement=redact_sql(stmt.text))
        return result

    def _dispatch(self, stmt: Statement) -> Result:
        key = stmt.keyword
        words = stmt.words(3)
        if key == "CREATE" and len(words) > 1 and words[1] in ("DATABASE", "SCHEMA"):
            return ddl.create_database(self.ctx, stmt)
        if key in ("CREATE", "USE", "DROP") and len(words) > 1 and words[1] == "CATALOG":
            return {
                "CREATE": catalogs.create_catalog,
                "USE": catalogs.use_catalog,
                "DROP": catalogs.drop_catalog,
            }[key](self.ctx, stmt)
        if key == "SHOW" and len(words) > 1 and words[1] == "CATALOGS":
            return catalogs.show_catalogs(self.ctx, stmt)
        if key == "CREATE":
            return ddl.create_table(self.ctx, stmt)
        simple = {
            "DROP": ddl.drop,
            "USE": ddl.use,
            "SHOW": ddl.show,
            "DESCRIBE": ddl.describe,
            "DESC": ddl.describe,
            "CALL": procedures.call,
            "EXPLAIN": self._explain,
        }
        if key in simple:
            return simple[key](self.ctx, stmt)
        if key == "COPY":
            return export.copy(self.ctx, stmt)
        if key == "TRUNCATE":
            return self._truncate(stmt)
        if key == "ALTER":
            return alter.alter(self.ctx, stmt)
        if key in _SQLGLOT_KEYWORDS:
            return self._parsed(stmt)
        raise SqlError(f"unsupported statement starting with {key!r}")

    def _truncate(self, stmt: Statement) -> Result:
        tokens = [t for t in stmt.tokens[1:] if not t.is_word("TABLE")]
        parts = [t.value for t in tokens if t.is_name]
        if not parts or any(not (t.is_name or t.value == ".") for t in tokens):
            raise SqlError("TRUNCATE needs one table: TRUNCATE TABLE db.t")
        table = self.ctx.table(self.ctx.name(parts, allow_system=False))
        sid = table.truncate()
        return Result(
            "truncate", stmt.text, message=f"truncated {table.name} (snapshot {sid})", snapshot_id=sid
        )

    def _explain(self, ctx: SqlContext, stmt: Statement) -> Result:
        start = 1
        while start < len(stmt.tokens) and stmt.tokens[start].is_word("PLAN", "FOR", "EXTENDED", "FORMATTED"):
            start += 1
        if start >= len(stmt.tokens):
            raise SqlError("EXPLAIN needs a query")
        rewritten = rewrite_for_sqlglot(stmt, stmt.tokens[start:])
        tree = parse_query(rewritten.text)
        with QueryEngine(ctx, rewritten.hints) as engine:
            text = engine.explain(tree)
        return Result("explain", stmt.text, pa.table({"plan": [text]}), text)

    def _parsed(self, stmt: Statement) -> Result:
        rewritten = rewrite_for_sqlglot(stmt)
        try:
            tree = sqlglot.parse_one(rewritten.text, read="spark")
        except sqlglot.errors.ParseError as e:
            raise SqlError(parse_error_text(e)) from None
        hints = rewritten.hints
        if isinstance(tree, exp.Insert):
            return dml.insert(self.ctx, stmt.text, tree, hints)
        if isinstance(tree, exp.Update):
            return dml.update(self.ctx, stmt.text, tree, hints)
        if isinstance(tree, exp.Delete):
            return dml.delete(self.ctx, stmt.text, tree, hints)
        if isinstance(tree, exp.Merge):
            return merge.merge(self.ctx, stmt.text, tree, hints)
        if isinstance(tree, (exp.Query, exp.Values)) and self.stream:
            return Result("select", stmt.text, batches=QueryEngine(self.ctx, hints).stream(tree))
        if isinstance(tree, (exp.Query, exp.Values)):
            with QueryEngine(self.ctx, hints) as engine:
                table = engine.run(tree)
            return Result("select", stmt.text, table, f"{table.num_rows} row(s)")
        raise SqlError(f"unsupported statement {type(tree).__name__.upper()}")


def execute(catalog: Catalog, sql_text: str, *, database: str = DEFAULT_DATABASE) -> list[Result]:
    """Run a ``;``-separated SQL script against ``catalog``; one Result per statement."""
    return Session(catalog, database=database).execute(sql_text)
