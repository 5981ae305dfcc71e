"""Benchmark steps run inside pypaimon's own venv; prints one JSON line of timings and checksums.

Usage: python pypaimon_child.py '<json command>'. It never imports lsmlake.

With ``"warmup": true`` each step first runs once untimed (a read of the same table, or a small write
into a scratch table), so the timed run is as warm as lsmlake's, which repeats in one process.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pypaimon import CatalogFactory, Schema

NATIVE = {"read.native.enabled": "true", "write.native.enabled": "true", "commit.native.enabled": "true"}


def checksum(table: pa.Table) -> dict[str, Any]:
    ids = table.column("id")
    amount = table.column("amount")
    return {
        "rows": table.num_rows,
        "id_sum": int(pc.sum(ids).as_py() or 0),
        "amount_sum": round(float(pc.sum(amount).as_py() or 0.0), 3),
    }


def table_for(cmd: dict[str, Any]) -> Any:
    catalog = CatalogFactory.create({"warehouse": cmd["warehouse"]})
    table = catalog.get_table("db.t")
    return table.copy(NATIVE) if cmd.get("native") else table


def write(table: Any, data: pa.Table) -> None:
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    writer.write_arrow(data)
    messages = writer.prepare_commit()
    writer.close()
    commit = builder.new_commit()
    commit.commit(messages)
    commit.close()


def read_ipc(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as f:
        return pa.ipc.open_file(f).read_all()


def create_table(cmd: dict[str, Any], name: str, schema: pa.Schema) -> Any:
    """A 4-bucket primary-key table ``db.<name>``, with the native options when asked."""
    catalog = CatalogFactory.create({"warehouse": cmd["warehouse"]})
    catalog.create_database("db", True)
    options = {"bucket": "4", "file.format": "parquet", "file.compression": "zstd"}
    catalog.create_table(
        f"db.{name}", Schema.from_pyarrow_schema(schema, primary_keys=["id"], options=options), True
    )
    table = catalog.get_table(f"db.{name}")
    return table.copy(NATIVE) if cmd.get("native") else table


def warm_writer(cmd: dict[str, Any], data: pa.Table) -> None:
    """One untimed small write into a scratch table: later writes run with every code path loaded."""
    if cmd.get("warmup"):
        write(create_table(cmd, "warmup", data.schema), data.slice(0, 1000))


def cmd_write(cmd: dict[str, Any]) -> dict[str, Any]:
    """Create the 4-bucket table and time the initial write."""
    data = read_ipc(cmd["data"])
    table = create_table(cmd, "t", data.schema)
    warm_writer(cmd, data)
    start = time.perf_counter()
    write(table, data)
    return {"seconds": time.perf_counter() - start}


def cmd_upserts(cmd: dict[str, Any]) -> dict[str, Any]:
    table = table_for(cmd)
    batches = [read_ipc(p) for p in cmd["data_files"]]
    warm_writer(cmd, batches[0])
    start = time.perf_counter()
    for batch in batches:
        write(table, batch)
    return {"seconds": time.perf_counter() - start}


def cmd_read(cmd: dict[str, Any]) -> dict[str, Any]:
    table = table_for(cmd)
    if cmd.get("warmup"):
        read(table, cmd.get("filter"))
    start = time.perf_counter()
    result = read(table, cmd.get("filter"))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, **checksum(result)}


def cmd_point_reads(cmd: dict[str, Any]) -> dict[str, Any]:
    """One filtered read per key (``id = k``), each timed after an untimed read of the same key; the
    checksum covers every key's rows."""
    table = table_for(cmd)
    seconds, results = [], []
    for key in cmd["keys"]:
        if cmd.get("warmup"):
            read(table, ["eq", key])
        start = time.perf_counter()
        results.append(read(table, ["eq", key]))
        seconds.append(time.perf_counter() - start)
    return {"seconds": seconds, **checksum(pa.concat_tables(results))}


def read(table: Any, flt: list[Any] | None) -> pa.Table:
    """Plan and read the table (optionally filtered) to one Arrow table."""
    builder = table.new_read_builder()
    if flt:
        pb = builder.new_predicate_builder()
        if flt[0] == "between":
            builder = builder.with_filter(pb.between("id", flt[1], flt[2]))
        elif flt[0] == "eq":
            builder = builder.with_filter(pb.equal("id", flt[1]))
        elif flt[0] == "in":
            builder = builder.with_filter(pb.is_in("id", flt[1]))
        else:
            builder = builder.with_filter(pb.greater_than("amount", flt[1]))
    splits = builder.new_scan().plan().splits()
    return builder.new_read().to_arrow(splits)


def main() -> None:
    cmd = json.loads(sys.argv[1])
    handlers = {"write": cmd_write, "upserts": cmd_upserts, "read": cmd_read, "point_reads": cmd_point_reads}
    handler = handlers[cmd["op"]]
    result = handler(cmd)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


if __name__ == "__main__":
    main()
