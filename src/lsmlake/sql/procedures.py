"""``CALL sys.<procedure>(...)``: Paimon's maintenance procedures, with Flink's and Spark's argument names."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from lsmlake.core.options import parse_duration_ms
from lsmlake.core.sql_lexer import Cursor, Statement, Token
from lsmlake.core.tag_period import local_time
from lsmlake.errors import SqlError, UnsupportedError
from lsmlake.maintenance import create_tag, delete_tag, expire_snapshots, remove_orphan_files, rollback_to
from lsmlake.maintenance.auto_tags import create_auto_tags, expire_tags
from lsmlake.metadata.tags import create_tag_from_timestamp, rename_tag, replace_tag
from lsmlake.schema_change import update_column_default_value
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


def _compact_database(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    """Compact every primary-key table whose database fully matches ``including_databases`` and whose
    ``db.table`` matches ``including_tables`` and not ``excluding_tables`` (Java regexes, read with
    Python's); ``mode`` only shapes Flink's job and is accepted as Paimon names it."""
    mode = str(args.get("mode") or "divided").strip().lower()
    if mode not in ("divided", "combined"):
        raise SqlError(f"compact_database: mode must be 'divided' or 'combined', got {mode!r}")
    strategy = str(args.get("compact_strategy") or "full").strip().lower()
    if strategy not in ("full", "minor"):
        raise SqlError(f"compact_strategy must be 'full' or 'minor', got {strategy!r}")
    databases = re.compile(str(args.get("including_databases") or ".*"))
    including = re.compile(str(args.get("including_tables") or ".*"))
    excluding = re.compile(str(args["excluding_tables"])) if args.get("excluding_tables") else None
    options = dict(kv.split("=", 1) for kv in str(args.get("table_options") or "").split(",") if kv)
    names, ids, skipped = [], [], []
    for db in ctx.catalog.list_databases():
        if not databases.fullmatch(db):
            continue
        for name in ctx.catalog.list_tables(db):
            full = f"{db}.{name}"
            if not including.fullmatch(full) or (excluding is not None and excluding.fullmatch(full)):
                continue
            table = open_data_table(ctx.catalog, full).with_options({**options, "write-only": "false"})
            if not table.primary_keys:
                skipped.append(full)  # lsmlake cannot compact append tables yet
                continue
            names.append(full)
            ids.append(table.compact(full=strategy == "full"))
    if not names:
        raise SqlError(
            "no tables to be compacted: none matched the patterns"
            + (f" (append tables are skipped: {', '.join(skipped)})" if skipped else "")
        )
    out = pa.table({"table": names, "snapshot_id": pa.array(ids, pa.int64())})
    note = f"; skipped append table(s) {', '.join(skipped)}" if skipped else ""
    return out, f"{strategy} compaction of {len(names)} table(s){note}"


def _compact_manifest(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    sid = table.compact_manifests()
    done = f"snapshot {sid}" if sid is not None else "nothing to merge"
    return pa.table({"result": ["success"]}), f"manifest compaction of {table.name}: {done}"


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
    tag = create_tag(table, name, _int(args, "snapshot_id"), time_retained_ms=_retained(args))
    return pa.table({"result": [True]}), f"created tag {name} of {table.name} at snapshot {tag.snapshot.id}"


def _retained(args: Args) -> int | None:
    retained = args.get("time_retained")
    return None if retained in (None, "") else parse_duration_ms("time_retained", str(retained))


def _create_tag_from_timestamp(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table, name = _table(ctx, args), _name(args, "tag", "create_tag_from_timestamp")
    timestamp = _int(args, "timestamp")
    if timestamp is None:
        raise SqlError("create_tag_from_timestamp needs timestamp => epoch milliseconds")
    tag = create_tag_from_timestamp(table, name, timestamp, time_retained_ms=_retained(args))
    s = tag.snapshot
    out = pa.table(
        {
            "tagName": [name],
            "snapshot": pa.array([s.id], pa.int64()),
            "commit_time": pa.array([s.time_millis], pa.int64()),
            "watermark": [str(s.watermark)],  # Java prints String.valueOf: 'null' when unset
        }
    )
    return out, f"created tag {name} of {table.name} at snapshot {s.id}"


def _rename_tag(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    name, target = _name(args, "tag", "rename_tag"), _name(args, "target_tag", "rename_tag")
    rename_tag(table, name, target)
    message = f"Rename [{name}] to [{target}] successfully."
    return pa.table({"result": [message]}), message


def _replace_tag(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table, name = _table(ctx, args), _name(args, "tag", "replace_tag")
    tag = replace_tag(table, name, _int(args, "snapshot_id"), time_retained_ms=_retained(args))
    return pa.table(
        {"result": [True]}
    ), f"tag {name} of {table.name} now points at snapshot {tag.snapshot.id}"


def _expire_tags(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    older = args.get("older_than")
    older_than = (
        None if older in (None, "") else local_time(parse_time_millis(older, what="older_than"), None)
    )
    expired = expire_tags(table, older_than=older_than)
    rows = expired or ["No expired tags."]
    return pa.table({"expired_tags": rows}), "\n".join(rows)


def _trigger_auto_tags(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    created = create_auto_tags(table)
    return pa.table({"result": [True]}), f"created tag(s) {', '.join(created) or 'none'} of {table.name}"


def _reset_consumer(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table, consumer = _table(ctx, args), _name(args, "consumer_id", "reset_consumer")
    next_id = _int(args, "next_snapshot_id")
    table.reset_consumer(consumer, next_id)
    done = "deleted" if next_id is None else f"reset to snapshot {next_id}"
    return pa.table({"result": ["Success"]}), f"consumer {consumer} of {table.name} {done}"


def _clear_consumers(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    including, excluding = args.get("including_consumers"), args.get("excluding_consumers")
    cleared = table.clear_consumers(
        None if including is None else str(including), None if excluding is None else str(excluding)
    )
    return pa.table(
        {"result": ["Success"]}
    ), f"cleared consumer(s) {', '.join(cleared) or 'none'} of {table.name}"


def _expire_changelogs(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    older = args.get("older_than")
    expired = table.expire_changelogs(
        retain_max=_int(args, "retain_max"),
        retain_min=_int(args, "retain_min"),
        older_than_ms=None if older in (None, "") else parse_time_millis(older, what="older_than"),
        max_deletes=_int(args, "max_deletes"),
        delete_all=_bool(args, "delete_all"),
    )
    text = "Delete all separated changelogs success." if _bool(args, "delete_all") else str(len(expired))
    return pa.table({"result": [text]}), f"expired {len(expired)} changelog(s) of {table.name}"


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
    return _rolled_back(table.name, previous, result.snapshot_id)


def _rolled_back(name: str, previous: int | None, current: int) -> tuple[pa.Table, str]:
    """A rollback's result row (Paimon's previous/current snapshot ids) and message."""
    out = pa.table(
        {
            "previous_snapshot_id": pa.array([previous], pa.int64()),
            "current_snapshot_id": pa.array([current], pa.int64()),
        }
    )
    return out, f"rolled {name} back from snapshot {previous} to {current}"


def _rollback_to_timestamp(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    timestamp = args.get("timestamp")
    if timestamp in (None, ""):
        raise SqlError("rollback_to_timestamp needs timestamp => epoch milliseconds")
    previous = table.snapshot_manager.latest_id()
    if previous is None:
        raise SqlError(f"table {table.name} has no snapshot to roll back")
    result = table.rollback_to_timestamp(parse_time_millis(timestamp, what="timestamp"))
    return _rolled_back(table.name, previous, result.snapshot_id)


def _rollback_to_watermark(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    watermark = _int(args, "watermark")
    if watermark is None:
        raise SqlError("rollback_to_watermark needs watermark => epoch milliseconds")
    result = table.rollback_to_watermark(watermark)
    message = f"Success roll back to snapshot: {result.snapshot_id} ."
    return pa.table({"result": [message]}), message


def _rename_branch(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    source, target = _name(args, "from_branch", "rename_branch"), _name(args, "to_branch", "rename_branch")
    table.rename_branch(source, target)
    return pa.table({"result": [True]}), f"renamed branch {source} of {table.name} to {target}"


def _purge_files(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    table.purge_files()
    return pa.table({"result": ["Success"]}), f"purged the files of {table.name}"


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


def _remove_unexisting_files(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    """One row per removed (or, on a dry run, missing) data file path, as Paimon returns them."""
    table = _table(ctx, args)
    dry_run = args.get("dry_run")
    if (
        dry_run is not None
        and not isinstance(dry_run, bool)
        and str(dry_run).strip().lower()
        not in (
            "true",
            "false",
        )
    ):
        raise SqlError(f"remove_unexisting_files: dry_run must be true or false, got {dry_run!r}")
    paths = table.remove_unexisting_files(dry_run=_bool(args, "dry_run"))
    verb = "missing (dry run)" if _bool(args, "dry_run") else "removed from the manifests"
    return pa.table({"result": pa.array(paths, pa.string())}), f"{len(paths)} data file(s) {verb}"


def _alter_column_default_value(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    """Flink's way to set a default (its DDL has none): the text is stored as given, as Java's procedure does."""
    table = _table(ctx, args)
    column = _name(args, "column", "alter_column_default_value")
    if "." in column:
        raise UnsupportedError(
            f"CALL sys.alter_column_default_value: {column!r} is a nested column; lsmlake sets defaults of "
            "top-level columns only"
        )
    value = args.get("default_value")
    if not isinstance(value, str):
        raise SqlError("CALL sys.alter_column_default_value: 'default_value' must be a string, e.g. '5'")
    table.alter(update_column_default_value(column, value))
    return pa.table({"result": ["Success"]}), f"set the default value of {table.name}.{column} to {value}"


def _rescale(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    """Paimon's rescale(table, bucket_num, partition); the parallelism arguments only shape Flink's job."""
    table = _table(ctx, args)
    buckets = _int(args, "bucket_num")
    text = args.get("partition")
    specs = specs_from_text(str(text)) if text not in (None, "") else []
    if len(specs) > 1:
        raise SqlError(f"rescale takes one partition, got {len(specs)}: {text!r}")
    sid = table.rescale(buckets, specs[0] if specs else None)
    where = f" partition {text}" if specs else ""
    count = buckets if buckets is not None else table.options.bucket
    return pa.table({"result": [True]}), f"rescaled {table.name}{where} to {count} bucket(s): snapshot {sid}"


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


def _mark_partition_done(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    written = table.mark_partitions_done(*specs_from_text(str(args.get("partitions") or "")))
    return pa.table({"result": ["Success"]}), f"marked {len(written)} partition(s) of {table.name} done"


def _rewrite_file_index(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    table = _table(ctx, args)
    text = args.get("partitions")
    result = table.rewrite_file_index(*(specs_from_text(str(text)) if text not in (None, "") else []))
    note = f" (snapshot {result.snapshot_id})" if result.snapshot_id is not None else ""
    older = (
        f"; {result.older_schema} file(s) of older schemas left as they are" if result.older_schema else ""
    )
    return pa.table({"result": [True]}), f"rewrote the file index of {result.rewritten} file(s){note}{older}"


def _expire_partitions(ctx: SqlContext, args: Args) -> tuple[pa.Table, str]:
    return expire_partitions_call(_table(ctx, args), args)


PROCEDURES: dict[str, Procedure] = {
    "drop_partition": Procedure(("table", "partitions"), _drop_partition),
    "mark_partition_done": Procedure(("table", "partitions"), _mark_partition_done),
    "rewrite_file_index": Procedure(("table", "partitions"), _rewrite_file_index),
    "alter_column_default_value": Procedure(("table", "column", "default_value"), _alter_column_default_value),
    "rescale": Procedure(
        ("table", "bucket_num", "partition", "scan_parallelism", "sink_parallelism"),
        _rescale,
        supported=("table", "bucket_num", "partition", "scan_parallelism", "sink_parallelism"),
    ),
    "remove_unexisting_files": Procedure(
        ("table", "dry_run", "parallelism"),
        _remove_unexisting_files,
        supported=("table", "dry_run", "parallelism"),
    ),
    "expire_partitions": Procedure(
        (
            "table",
            "expiration_time",
            "timestamp_formatter",
            "timestamp_pattern",
            "expire_strategy",
            "max_expires",
        ),
        _expire_partitions,
    ),
    "create_branch": Procedure(("table", "branch", "tag"), _create_branch),
    "delete_branch": Procedure(("table", "branch"), _delete_branch),
    "fast_forward": Procedure(("table", "branch"), _fast_forward),
    "rename_branch": Procedure(("table", "from_branch", "to_branch"), _rename_branch),
    "rollback_to_timestamp": Procedure(("table", "timestamp"), _rollback_to_timestamp),
    "rollback_to_watermark": Procedure(("table", "watermark"), _rollback_to_watermark),
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
    "compact_manifest": Procedure(("table", "options"), _compact_manifest, supported=("table",)),
    "compact_database": Procedure(
        (
            "including_databases",
            "mode",
            "including_tables",
            "excluding_tables",
            "table_options",
            "partition_idle_time",
            "compact_strategy",
        ),
        _compact_database,
        supported=(
            "including_databases",
            "mode",
            "including_tables",
            "excluding_tables",
            "table_options",
            "compact_strategy",
        ),
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
    "reset_consumer": Procedure(("table", "consumer_id", "next_snapshot_id"), _reset_consumer),
    "clear_consumers": Procedure(("table", "including_consumers", "excluding_consumers"), _clear_consumers),
    "expire_changelogs": Procedure(
        ("table", "retain_max", "retain_min", "older_than", "max_deletes", "delete_all"), _expire_changelogs
    ),
    "create_tag_from_timestamp": Procedure(
        ("table", "tag", "timestamp", "time_retained"), _create_tag_from_timestamp
    ),
    "rename_tag": Procedure(
        ("table", "tag", "target_tag"),
        _rename_tag,
        aliases=(("tagname", "tag"), ("targettagname", "target_tag")),
    ),
    "replace_tag": Procedure(
        ("table", "tag", "snapshot_id", "time_retained"), _replace_tag, aliases=(("snapshot", "snapshot_id"),)
    ),
    "expire_tags": Procedure(("table", "older_than"), _expire_tags),
    "trigger_tag_automatic_creation": Procedure(("table",), _trigger_auto_tags),
    "rollback_to": Procedure(
        ("table", "tag", "snapshot_id"), _rollback, aliases=(("snapshot", "snapshot_id"),)
    ),
    "rollback": Procedure(
        ("table", "version", "snapshot_id", "tag"), _rollback, aliases=(("snapshot", "snapshot_id"),)
    ),
    "purge_files": Procedure(("table",), _purge_files),
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
