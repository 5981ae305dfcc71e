"""Child-side pypaimon driver run inside the isolated pypaimon venv; never imports lsmlake."""

# This file is executed with the pypaimon venv's interpreter (pyarrow<20,
# pypaimon==2.1.0).  It receives one JSON command (argv[1] or stdin), talks to
# pypaimon, exchanges table data as Arrow IPC stream files and writes a JSON
# result to ``command["result_path"]``.  Any failure exits non-zero with the
# traceback on stderr; the parent turns that into a RuntimeError.

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema


def _catalog(command: dict[str, Any]) -> Any:
    catalog_options: dict[str, str] = {"warehouse": str(command["warehouse"])}
    catalog_options.update(command.get("catalog_options") or {})
    return CatalogFactory.create(catalog_options)


def _table(command: dict[str, Any]) -> Any:
    table = _catalog(command).get_table(command["identifier"])
    options: dict[str, str] | None = command.get("options")
    if options:
        table = table.copy(dict(options))
    return table


def _read_ipc(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as source:
        return pa.ipc.open_stream(source).read_all()


def _write_ipc(path: str, table: pa.Table) -> None:
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def _latest_snapshot_id(table: Any) -> int | None:
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return None if snapshot is None else int(snapshot.id)


def cmd_version(command: dict[str, Any]) -> dict[str, Any]:
    from importlib.metadata import version

    return {"pypaimon": version("pypaimon"), "pyarrow": pa.__version__}


def cmd_create_table(command: dict[str, Any]) -> dict[str, Any]:
    catalog = _catalog(command)
    database = str(command["identifier"]).split(".", 1)[0]
    catalog.create_database(database, True)
    arrow_schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(command["schema_b64"])))
    schema = Schema.from_pyarrow_schema(
        arrow_schema,
        partition_keys=list(command.get("partition_keys") or []),
        primary_keys=list(command.get("primary_keys") or []),
        options=dict(command.get("table_options") or {}),
    )
    catalog.create_table(command["identifier"], schema, bool(command.get("ignore_if_exists")))
    return {}


def cmd_read(command: dict[str, Any]) -> dict[str, Any]:
    table = _table(command)
    read_builder = table.new_read_builder()
    projection: list[str] | None = command.get("projection")
    if projection is not None:
        read_builder = read_builder.with_projection(list(projection))
    splits = read_builder.new_scan().plan().splits()
    result = read_builder.new_read().to_arrow(splits)
    if result is None:
        from pypaimon.schema.data_types import PyarrowFieldParser

        schema = PyarrowFieldParser.from_paimon_schema(read_builder.read_type())
        result = schema.empty_table()
    _write_ipc(command["output_path"], result)
    return {"num_rows": result.num_rows, "num_splits": len(splits)}


def cmd_write(command: dict[str, Any]) -> dict[str, Any]:
    table = _table(command)
    data = _read_ipc(command["input_path"])
    write_builder = table.new_batch_write_builder()
    commit_kind = command.get("commit_kind", "append")
    if commit_kind == "overwrite":
        write_builder = write_builder.overwrite(command.get("overwrite_partition"))
    elif commit_kind != "append":
        raise ValueError(f"unknown commit_kind {commit_kind!r} (expected 'append' or 'overwrite')")
    table_write = write_builder.new_write()
    try:
        table_write.write_arrow(data)
        messages = table_write.prepare_commit()
    finally:
        table_write.close()
    table_commit = write_builder.new_commit()
    try:
        table_commit.commit(messages)
    finally:
        table_commit.close()
    return {"snapshot_id": _latest_snapshot_id(table)}


def cmd_files(command: dict[str, Any]) -> dict[str, Any]:
    """The live data files pypaimon plans for a writer (level 0 included, also with deletion vectors)."""
    table = _table(command)
    splits = table.new_read_builder().new_scan().plan_for_write().splits()
    files = []
    for split in splits:
        for f in split.files:
            files.append(
                {
                    "bucket": int(split.bucket),
                    "partition": [None if v is None else str(v) for v in split.partition.values],
                    "file_name": f.file_name,
                    "file_path": str(f.file_path) if f.file_path else None,
                    "level": int(f.level),
                    "row_count": int(f.row_count),
                    "min_sequence_number": int(f.min_sequence_number),
                    "max_sequence_number": int(f.max_sequence_number),
                    "delete_row_count": None if f.delete_row_count is None else int(f.delete_row_count),
                }
            )
    return {"files": files, "snapshot_id": _latest_snapshot_id(table)}


def cmd_batch(command: dict[str, Any]) -> dict[str, Any]:
    """Run several commands in order in this one process (saves the interpreter start-up per step)."""
    results = []
    for index, step in enumerate(command.get("commands") or []):
        handler = COMMANDS.get(step.get("op", ""))
        if handler is None or handler is cmd_batch:
            raise SystemExit(f"batch step {index}: unknown op {step.get('op')!r}")
        try:
            results.append(handler(step))
        except Exception as exc:
            what = f"op={step.get('op')!r}, {step.get('identifier')!r}"
            raise RuntimeError(f"batch step {index} ({what}) failed") from exc
    return {"results": results}


COMMANDS = {
    "version": cmd_version,
    "create_table": cmd_create_table,
    "read": cmd_read,
    "write": cmd_write,
    "files": cmd_files,
    "batch": cmd_batch,
}


def main(argv: list[str]) -> int:
    raw = argv[1] if len(argv) > 1 else sys.stdin.read()
    command: dict[str, Any] = json.loads(raw)
    handler = COMMANDS.get(command.get("op", ""))
    if handler is None:
        raise SystemExit(f"unknown op {command.get('op')!r}; expected one of {sorted(COMMANDS)}")
    result = handler(command)
    result_path = command.get("result_path")
    if result_path:
        with open(result_path, "w", encoding="utf-8") as out:
            json.dump(result, out)
    else:
        sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
