"""What every SQL module shares: the result record, type spellings and time parsing."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import pyarrow as pa

from lsmlake.core.sql_lexer import Cursor
from lsmlake.core.types import DataType, timestamp_unit
from lsmlake.errors import SqlError


def default_literal(cur: Cursor, clause: str = "DEFAULT") -> str:
    """A column default's SQL text as Spark hands it to Paimon: a number, TRUE/FALSE, or a string literal
    with its quotes (Paimon drops one pair of enclosing quotes when it casts the text to the column type)."""
    sign = "-" if cur.accept("-") else ""
    tok = cur.next()
    if tok.kind == "string" and not sign:
        return "'" + tok.value + "'"
    if tok.kind == "number" or (tok.is_word("TRUE", "FALSE") and not sign):
        return sign + tok.value
    raise cur.error(f"{clause} takes a literal: a number, a 'string', TRUE or FALSE")


@dataclass(frozen=True)
class Result:
    """What one statement produced: rows (queries, SHOW, DESCRIBE, CALL) and/or a one-line message."""

    kind: str
    """The statement kind in lower case: ``select``, ``insert``, ``create table``, ``call``, ..."""
    statement: str
    table: pa.Table | None = None
    message: str = ""
    snapshot_id: int | None = None
    """The snapshot a write committed (None when nothing changed or nothing was written)."""
    batches: pa.RecordBatchReader | None = None
    """A query's rows as a one-shot stream, instead of ``table`` (``Session(stream=True)``)."""

    @property
    def rows(self) -> list[dict[str, object]]:
        return [] if self.table is None else self.table.to_pylist()


def short(statement: str, width: int = 60) -> str:
    """A statement squeezed onto one line for error messages."""
    text = " ".join(statement.split())
    return text if len(text) <= width else text[: width - 3] + "..."


# --------------------------------------------------------------------------- types


def _quote(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else "`" + name.replace("`", "``") + "`"


def type_sql(t: DataType) -> str:
    """A Paimon type in Flink SQL spelling, nested types included (``ROW<`a` INT, ...>``)."""
    null = "" if t.nullable else " NOT NULL"
    if t.root in ("ARRAY", "MULTISET"):
        assert t.element is not None
        return f"{t.root}<{type_sql(t.element)}>{null}"
    if t.root == "MAP":
        assert t.key is not None and t.value is not None
        return f"MAP<{type_sql(t.key)}, {type_sql(t.value)}>{null}"
    if t.root == "ROW":
        inner = ", ".join(f"{_quote(f.name)} {type_sql(f.type)}" for f in t.fields)
        return f"ROW<{inner}>{null}"
    return str(t)


_DUCKDB_SIMPLE = {
    "BOOLEAN": "BOOLEAN",
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INT": "INTEGER",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
    "TIME": "TIME",
    "CHAR": "VARCHAR",
    "VARCHAR": "VARCHAR",
    "BINARY": "BLOB",
    "VARBINARY": "BLOB",
    "BLOB": "BLOB",
}


def duckdb_type(t: DataType) -> str | None:
    """The DuckDB type to CAST a value to before it becomes a column of type ``t`` (None: leave it)."""
    if t.root in _DUCKDB_SIMPLE:
        return _DUCKDB_SIMPLE[t.root]
    if t.root == "DECIMAL":
        return f"DECIMAL({t.precision}, {t.scale})"
    if t.root == "TIMESTAMP":
        unit = timestamp_unit(t.precision or 0)
        return {"s": "TIMESTAMP_S", "ms": "TIMESTAMP_MS", "us": "TIMESTAMP", "ns": "TIMESTAMP_NS"}[unit]
    if t.root == "TIMESTAMP_LTZ":
        return "TIMESTAMPTZ"
    return None


# --------------------------------------------------------------------------- time


def parse_time_millis(value: object, *, what: str) -> int:
    """Epoch milliseconds from a number (millis) or a local timestamp string such as ``2024-01-01 12:00``."""
    if isinstance(value, bool):
        raise SqlError(f"{what}: expected a timestamp, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return int(dt.datetime(value.year, value.month, value.day).timestamp() * 1000)
    text = str(value).strip()
    if re.fullmatch(r"\d+", text):
        return int(text)
    try:
        parsed = dt.datetime.fromisoformat(text.replace("T", " "))
    except ValueError:
        raise SqlError(f"{what}: {text!r} is not a timestamp like '2024-01-31 12:00:00'") from None
    return int(parsed.timestamp() * 1000)
