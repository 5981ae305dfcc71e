"""``CALL sys.<procedure>(...)``: Paimon's maintenance procedures, with Flink's and Spark's argument names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from lsmlake.core.options import parse_duration_ms
from lsmlake.core.sql_lexer import Cursor, Statement, Token
from lsmlake.errors import SqlError, UnsupportedError
from lsmlake.maintenance import create_tag, delete_tag, expire_snapshots, remove_orphan_files, rollback_to
from lsmlake.sql.common import Result, parse_time_millis
from lsmlake.sql.context import SqlContext, open_data_table
from lsmlake.sql.partitions import drop_partition_call, expire_partitions_call, specs_from_text
from lsmlake.table import Table

Args = dict[str, object]


@dataclass(frozen=True)
class Procedure:
    params: tuple[str, ...]
    """Positional order (Flink's); named arguments may use any of these or an alias."""
    run: Callable[[SqlContext, Args], tuple[pa.Table, str]]
    aliases: tuple[tuple[str, str], ...] = ()
    supported: tuple[str, ...] | None = None


def _value(tok: Token) -> object:
    if tok.kind == "string":
        return tok.value
    if tok.kind == "number":
        return int(tok.value) if tok.value.isdigit() else float(tok.value)
    if tok.is_word("TRUE", "FALSE"):
        return tok.value.upper() == "TRUE"
    if tok.is_word("NULL"):
        return None
    raise SqlError(f"procedure arguments must be literals (quote names: 'db.t'), got {tok.value!r}")


def parse_call(stmt: Statement) -> tuple[str, list[object], Args]:
    """``CALL [catalog.]sys.name(a, b)`` or ``(x => a, y => b)``: name, positional, named."""
    cur = Cursor(stmt, 1)
    parts = cur.qualified("a procedure name")
    if len(parts) < 2 or parts[-2].lower() != "sys":
        raise SqlError(f"CALL {'.'.join(parts)}: procedures live in the sys database (CALL sys.compact(...))")
    positional: list[object] = []
    named: Args = {}
    inner = Cursor(Statement(stmt.text, tuple(cur.group()), stmt.number, stmt.line))
    cur.end()
    while not inner.done:
        if (nxt := inner.peek(1)) is not None and nxt.value == "=>":
            key = inner.name("an argument name").lower()
            inner.next()
            if key in named:
                raise inner.error(f"argument {key!r} given twice")
            named[key] = _value(inner.next())
        elif named:
            raise inner.error("positional arguments must come before named ones")
        else:
            positional.append(_value(inner.next()))
        if not inner.done:
            inner.expect(",")
    return parts[-1].lower(), positional, named


def _table(ctx: SqlContext, args: Args) -> Table:
    ident = args.get("table")
    if not isinstance(ident, str) or not ident:
        raise SqlError("the 'table' argument is required, e.g. table => 'db.t'")
    return ctx.table(ctx.name(ident.split("."), allow_system=False))


def _int(args: Args, key: str) -> int | None:
    value = args.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return int(str(value))
    except ValueError:
        raise SqlError(f"argument {key!r} must be an integer, got {value!r}") from None


def _bool(args: Args, key: str) -> bool:
    value = args.get(key)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _compact(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    strategy = str(args.get("compact_strategy") or ("full" if args.get("full", True) else "minor")).lower()
    if strategy not in ("full", "minor"):
        raise SqlError(f"compact_strategy must be 'full' or 'minor', got {strategy!r}")
    table = _table(ctx, args)
    if args.get("options"):
        table = table.with_options(dict(kv.split("=", 1) for kv in str(args["options"]).split(",") if kv))
    sid = table.compact(full=strategy == "full")
    done = f"snapshot {sid}" if sid is not None else "nothing to compact"
    return pa.table(
        {"result": [True], "snapshot_id": pa.array([sid], pa.int64())}
    ), f"{strategy} compaction of {table.name}: {done}"


def _expire(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    older = args.get("older_than")
    result = expire_snapshots(
        table,
        retain_max=_int(args, "retain_max"),
        retain_min=_int(args, "retain_min"),
        older_than_ms=None if older in (None, "") else parse_time_millis(older, what="older_than"),
        max_deletes=_int(args, "max_deletes"),
    )
    n = len(result.expired_snapshot_ids)
    return pa.table(
        {"deleted_snapshots_count": pa.array([n], pa.int32())}
    ), f"expired {n} snapshot(s) of {table.name}, {len(result.deleted_files)} file(s) deleted"


def _create_tag(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    name = args.get("tag")
    if not isinstance(name, str):
        raise SqlError("create_tag needs tag => 'name'")
    retained = args.get("time_retained")
    tag = create_tag(
        table,
        name,
        _int(args, "snapshot_id"),
        time_retained_ms=None if not retained else parse_duration_ms("time_retained", str(retained)),
    )
    return pa.table({"result": [True]}), f"created tag {name} of {table.name} at snapshot {tag.snapshot.id}"


def _delete_tag(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    names = [n.strip() for n in str(args.get("tag") or "").split(",") if n.strip()]
    if not names:
        raise SqlError("delete_tag needs tag => 'name' (or several, comma-separated)")
    for name in names:
        delete_tag(table, name)
    return pa.table({"result": [True]}), f"deleted tag(s) {', '.join(names)} of {table.name}"


def _rollback(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    version = args.get("version")
    snapshot, tag = _int(args, "snapshot_id"), args.get("tag") or None
    if version not in (None, ""):
        if snapshot is not None or tag is not None:
            raise SqlError("rollback: give only one of version, snapshot and tag")
        text = str(version).strip()
        snapshot, tag = (int(text), None) if text.isdigit() else (None, text)
    if (snapshot is None) == (tag is None):
        raise SqlError("rollback needs exactly one of snapshot_id => n and tag => 'name'")
    previous = table.snapshot_manager.latest_id()
    result = rollback_to(table, snapshot_id=snapshot, tag=None if tag is None else str(tag))
    out = pa.table(
        {
            "previous_snapshot_id": pa.array([previous], pa.int64()),
            "current_snapshot_id": pa.array([result.snapshot_id], pa.int64()),
        }
    )
    return out, f"rolled {table.name} back from snapshot {previous} to {result.snapshot_id}"


def _orphans(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    ident = str(args.get("table") or "")
    if ident.endswith(".*"):
        db = ident[:-2] or ctx.database
        tables = [open_data_table(ctx.catalog, f"{db}.{t}") for t in ctx.catalog.list_tables(db)]
    else:
        tables = [_table(ctx, args)]
    older = args.get("older_than")
    dry_run = _bool(args, "dry_run")
    paths: list[str] = []
    for table in tables:
        paths += remove_orphan_files(
            table,
            older_than_ms=None if older in (None, "") else parse_time_millis(older, what="older_than"),
            dry_run=dry_run,
        )
    verb = "found (dry run)" if dry_run else "deleted"
    return pa.table(
        {"deletedFileCount": pa.array([len(paths)], pa.int64())}
    ), f"{len(paths)} orphan file(s) {verb}" + "".join(f"\n  {p}" for p in paths)


def _name(args: Args, key: str, proc: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise SqlError(f"{proc} needs {key} => 'name'")
    return value


def _create_branch(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table, name = _table(ctx, args), _name(args, "branch", "create_branch")
    tag = args.get("tag") or None
    table.create_branch(name, None if tag is None else str(tag))
    origin = f" from tag {tag}" if tag else ""
    return pa.table({"result": [True]}), f"created branch {name} of {table.name}{origin}"


def _delete_branch(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    names = [n.strip() for n in _name(args, "branch", "delete_branch").split(",") if n.strip()]
    for name in names:
        table.delete_branch(name)
    return pa.table({"result": [True]}), f"deleted branch(es) {', '.join(names)} of {table.name}"


def _fast_forward(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table, name = _table(ctx, args), _name(args, "branch", "fast_forward")
    table.fast_forward(name)
    return pa.table({"result": [True]}), f"fast-forwarded {table.name} to branch {name}"


def _drop_partition(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    return drop_partition_call(_table(ctx, args), args.get("partitions"))


def _rewrite_file_index(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    text = args.get("partitions")
    result = table.rewrite_file_index(*(specs_from_text(str(text)) if text not in (None, "") else []))
    note = f" (snapshot {result.snapshot_id})" if result.snapshot_id is not None else ""
    older = f"; {result.older_schema} file(s) of older schemas left as they are" if result.older_schema else ""
    return pa.table({"result": [True]}), f"rewrote the file index of {result.rewritten} file(s){note}{older}"


def _expire_partitions(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    return expire_partitions_call(_table(ctx, args), args)


PROCEDURES: dict[str, Procedure] = {
    "drop_partition": Procedure(("table", "partitions"), _drop_partition),
    "rewrite_file_index": Procedure(("table", "partitions"), _rewrite_file_index),
    "expire_partitions": Procedure(
        ("table", "expiration_time", "timestamp_formatter", "timestamp_pattern", "expire_strategy", "max_expires"),
        _expire_partitions,
    ),
    "create_branch": Procedure(("table", "branch", "tag"), _create_branch),
    "delete_branch": Procedure(("table", "branch"), _delete_branch),
    "fast_forward": Procedure(("table", "branch"), _fast_forward),
    "compact": Procedure(
        (
            "table",
            "partitions",
            "order_strategy",
            "order_by",
            "options",
            "where",
            "partition_idle_time",
            "compact_strategy",
            "buckets",
        ),
        _compact,
        supported=("table", "options", "compact_strategy", "full"),
    ),
    "expire_snapshots": Procedure(
        ("table", "retain_max", "retain_min", "older_than", "max_deletes", "options"),
        _expire,
        supported=("table", "retain_max", "retain_min", "older_than", "max_deletes"),
    ),
    "create_tag": Procedure(
        ("table", "tag", "snapshot_id", "time_retained"), _create_tag, aliases=(("snapshot", "snapshot_id"),)
    ),
    "delete_tag": Procedure(("table", "tag"), _delete_tag),
    "rollback_to": Procedure(
        ("table", "tag", "snapshot_id"), _rollback, aliases=(("snapshot", "snapshot_id"),)
    ),
    "rollback": Procedure(
        ("table", "version", "snapshot_id", "tag"), _rollback, aliases=(("snapshot", "snapshot_id"),)
    ),
    "remove_orphan_files": Procedure(
        ("table", "older_than", "dry_run", "parallelism", "mode"),
        _orphans,
        supported=("table", "older_than", "dry_run", "parallelism", "mode"),
    ),
}


def call(ctx: SqlContext, stmt: Statement) -> Result:
    name, positional, named = parse_call(stmt)
    proc = PROCEDURES.get(name)
    if proc is None:
        known = ", ".join(sorted(PROCEDURES))
        raise UnsupportedError(f"CALL sys.{name}: unknown procedure; supported: {known}")
    if len(positional) > len(proc.params):
        raise SqlError(f"CALL sys.{name}: at most {len(proc.params)} arguments ({', '.join(proc.params)})")
    args: Args = dict(zip(proc.params, positional, strict=False))
    for key, value in named.items():
        key = dict(proc.aliases).get(key, key)
        if key not in proc.params and not (proc.supported and key in proc.supported):
            raise SqlError(f"CALL sys.{name}: unknown argument {key!r}; arguments: {', '.join(proc.params)}")
        if key in args:
            raise SqlError(f"CALL sys.{name}: argument {key!r} given twice")
        args[key] = value
    allowed = proc.supported or proc.params
    ignored = [k for k, v in args.items() if k not in allowed and v not in (None, "")]
    if ignored:
        raise UnsupportedError(f"CALL sys.{name}: argument(s) {ignored} are not supported by lsmlake yet")
    table, message = proc.run(ctx, args)
    return Result("call", stmt.text, table, message)
