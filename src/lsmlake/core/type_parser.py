"""Column types written in Flink or Spark DDL (``STRING``, ``TIMESTAMP(3) WITH LOCAL TIME ZONE``,
``ARRAY<INT>``, ``MAP<STRING, INT>``, ``ROW<a INT, b STRING>``, ``STRUCT<a: INT>``) as Paimon types."""

from __future__ import annotations

from lsmlake.core.sql_lexer import Cursor
from lsmlake.core.types import DataField, DataType, parse_sql_type

_ALIASES = {
    "LONG": "BIGINT",
    "SHORT": "SMALLINT",
    "BYTE": "TINYINT",
    "REAL": "FLOAT",
    "BOOL": "BOOLEAN",
    "TIMESTAMP_NTZ": "TIMESTAMP",
    "TEXT": "STRING",
}
_NESTED = ("ARRAY", "MAP", "MULTISET", "ROW", "STRUCT")


def parse_type(cur: Cursor) -> DataType:
    """One type at the cursor, with an optional ``NOT NULL`` / ``NULL`` suffix."""
    tok = cur.peek()
    if tok is None or tok.kind != "word":
        raise cur.error("expected a column type")
    root = tok.value.upper()
    t = _nested(cur, root) if root in _NESTED else _atomic(cur)
    if cur.accept("NOT", "NULL"):
        return t.copy(nullable=False)
    cur.accept("NULL")
    return t


def _nested(cur: Cursor, root: str) -> DataType:
    cur.next()
    if root in ("ROW", "STRUCT") and cur.accept("("):
        closer = ")"
    else:
        cur.expect("<")
        closer = ">"
    if root in ("ARRAY", "MULTISET"):
        element = parse_type(cur)
        cur.expect(closer)
        return DataType(root, element=element)
    if root == "MAP":
        key = parse_type(cur)
        cur.expect(",")
        value = parse_type(cur)
        cur.expect(closer)
        return DataType("MAP", key=key.copy(nullable=False), value=value)
    fields = []
    while True:
        name = cur.name("a ROW field name")
        cur.accept(":")
        ftype = parse_type(cur)
        comment = cur.string("a comment") if cur.accept("COMMENT") else None
        fields.append(DataField(-1, name, ftype, comment))
        if not cur.accept(","):
            break
    cur.expect(closer)
    return DataType("ROW", fields=tuple(fields))


def _atomic(cur: Cursor) -> DataType:
    words = [cur.next().value.upper()]
    if words[0] == "DOUBLE" and cur.accept("PRECISION"):
        pass
    elif words[0] == "CHARACTER" and cur.accept("VARYING"):
        words = ["VARCHAR"]
    name = _ALIASES.get(words[0], words[0])
    args: list[str] = []
    if cur.accept("("):
        while True:
            tok = cur.next()
            if tok.kind != "number":
                raise cur.error(f"expected a number in the parameters of type {name}")
            args.append(tok.value)
            if cur.accept(")"):
                break
            cur.expect(",")
    text = name + (f"({', '.join(args)})" if args else "")
    if cur.accept("WITH", "LOCAL", "TIME", "ZONE"):
        text += " WITH LOCAL TIME ZONE"
    elif cur.accept("WITHOUT", "TIME", "ZONE"):
        pass
    try:
        return parse_sql_type(text)
    except ValueError:
        raise cur.error(f"unknown column type {text!r}") from None
