"""Partition statements: ALTER TABLE t DROP [IF EXISTS] PARTITION (k = v, ...)[, PARTITION (...)], and the
procedures drop_partition and expire_partitions."""

from __future__ import annotations

import pyarrow as pa

from lsmlake.core.options import parse_duration_ms
from lsmlake.core.sql_lexer import Cursor, Statement, Token
from lsmlake.errors import InvalidPartitionSpecError, SqlError
from lsmlake.sql.common import Result
from lsmlake.table import Table

Spec = dict[str, object]


def _spec(tokens: list[Token]) -> Spec:
    """``k = 'v', k2 = 1`` -> {k: 'v', k2: '1'} (values stay text: they are parsed as the columns' types)."""
    out: Spec = {}
    parts = [tokens[i : i + 3] for i in range(0, len(tokens), 4)]
    separators = tokens[3::4]
    ok = bool(tokens) and all(t.kind == "op" and t.value == "," for t in separators)
    for part in parts:
        if not ok or len(part) != 3 or not part[0].is_name or part[1].value != "=":
            raise SqlError("PARTITION needs column = value pairs: PARTITION (dt = '2024-01-01', hh = 1)")
        value = part[2]
        if value.kind not in ("string", "number") and not value.is_word("NULL", "TRUE", "FALSE"):
            raise SqlError(
                f"PARTITION ({part[0].value} = ...): the value must be a literal, got {value.value!r}"
            )
        out[part[0].value] = None if value.is_word("NULL") else value.value
    return out


def parse_drop_partitions(cur: Cursor) -> tuple[bool, list[Spec]] | None:
    """After ``ALTER TABLE t``: (if_exists, specs) for DROP [IF EXISTS] PARTITION (...)[, PARTITION (...)],
    or None (and nothing consumed) when the action is something else."""
    start = cur.i
    if not cur.accept("DROP"):
        return None
    if_exists = cur.accept("IF", "EXISTS")
    if not cur.accept("PARTITION"):
        cur.i = start
        return None
    specs = [_spec(cur.group())]
    while cur.accept(",", "PARTITION") or cur.accept("PARTITION"):
        specs.append(_spec(cur.group()))
    cur.end()
    return if_exists, specs


def drop_partition_result(stmt: Statement, table: Table, if_exists: bool, specs: list[Spec]) -> Result:
    sid = table.drop_partitions(*specs)
    if sid is None and not if_exists:
        raise InvalidPartitionSpecError(f"table {table.name}: no partition matches {specs}")
    message = f"dropped partition(s) {specs} of {table.name}" + (f" (snapshot {sid})" if sid else "")
    return Result("alter table", stmt.text, message=message, snapshot_id=sid)


def specs_from_text(text: str) -> list[Spec]:
    """Paimon's procedure form ``dt=20240101,hh=01;dt=20240102``: specs separated by ';'."""
    specs: list[Spec] = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        spec: Spec = {}
        for pair in part.split(","):
            key, eq, value = pair.partition("=")
            if not eq or not key.strip():
                raise SqlError(f"partitions: expected k=v[,k2=v2][;...], got {text!r}")
            spec[key.strip()] = value.strip()
        specs.append(spec)
    if not specs:
        raise SqlError("the procedure needs partitions => 'k=v[,k2=v2][;...]'")
    return specs


def drop_partition_call(table: Table, partitions: object) -> tuple[pa.Table, str]:
    sid = table.drop_partitions(*specs_from_text(str(partitions or "")))
    return pa.table({"result": [True]}), f"dropped partitions of {table.name}" + (
        f" (snapshot {sid})" if sid else ""
    )


def expire_partitions_call(table: Table, args: dict[str, object]) -> tuple[pa.Table, str]:
    """Paimon's expire_partitions procedure: the expired partitions, one row each (``k=v, ...``)."""
    expiration = args.get("expiration_time")
    limit = args.get("max_expires")
    dropped = table.expire_partitions(
        expiration_time_ms=None
        if expiration in (None, "")
        else parse_duration_ms("expiration_time", str(expiration)),
        strategy=str(args["expire_strategy"]) if args.get("expire_strategy") else None,
        timestamp_formatter=str(args["timestamp_formatter"]) if args.get("timestamp_formatter") else None,
        timestamp_pattern=str(args["timestamp_pattern"]) if args.get("timestamp_pattern") else None,
        max_expires=None if limit in (None, "") else int(str(limit)),
    )
    rows = [", ".join(f"{k}={v}" for k, v in spec.items()) for spec in dropped] or ["No expired partitions."]
    return pa.table(
        {"expired_partitions": pa.array(rows, pa.string())}
    ), f"expired {len(dropped)} partition(s)"
