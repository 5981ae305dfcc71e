"""Child-side pypaimon streaming reader (runs in the pypaimon venv; never imports lsmlake).

Reads one JSON command from stdin: ``warehouse``, ``identifier``, ``until`` (stop once every snapshot up
to it was planned), optional ``consumer_id``, and ``output_path`` for the change rows (Arrow IPC stream,
``_row_kind`` first). The consumer position is flushed before it exits, as a resumed plan loop would.
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa
from pypaimon import CatalogFactory


def main() -> None:
    command = json.loads(sys.stdin.read())
    table = CatalogFactory.create({"warehouse": command["warehouse"]}).get_table(command["identifier"])
    builder = table.new_stream_read_builder().with_poll_interval_ms(20).with_include_row_kind(True)
    if command.get("consumer_id"):
        builder = builder.with_consumer_id(command["consumer_id"])
    scan = builder.new_streaming_scan()
    read = builder.new_read()
    parts = []
    until = int(command["until"])
    for plan in scan.stream_sync():
        part = read.to_arrow(plan.splits())
        if part is not None and part.num_rows:
            parts.append(part)
        if scan.next_snapshot_id is not None and scan.next_snapshot_id > until:
            scan._flush_pending_consumer()
            break
    schema = parts[0].schema if parts else pa.schema([])
    with pa.OSFile(command["output_path"], "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        for part in parts:
            writer.write_table(part.cast(schema))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
