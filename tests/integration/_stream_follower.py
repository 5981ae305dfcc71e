"""A stream follower run as its own process: writes each change table to ``OUT/<snapshot>-<piece>.arrow``.

Usage: ``python _stream_follower.py WAREHOUSE TABLE CONSUMER_ID OUT_DIR``. It stops after the snapshot
holding the sentinel key -1; the per-snapshot file names make re-delivered snapshots idempotent.
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa
import pyarrow.ipc as ipc

import lsmlake

SENTINEL = -1


def _write_atomically(path: str, table: pa.Table) -> None:
    tmp = path + ".tmp"
    with pa.OSFile(tmp, "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)


def main(warehouse: str, identifier: str, consumer_id: str, out: str) -> None:
    table = lsmlake.Catalog(warehouse).get_table(identifier)
    stream = table.stream(mode="latest", consumer_id=consumer_id, poll_interval=0.02)
    pieces: dict[int, int] = {}
    log = os.path.join(out, f"log-{os.getpid()}.txt")
    for changes in stream:
        sid = stream.snapshot_id
        assert sid is not None
        piece = pieces.get(sid, 0)
        pieces[sid] = piece + 1
        _write_atomically(os.path.join(out, f"{sid:06d}-{piece:03d}.arrow"), changes)
        with open(log, "a") as f:
            f.write(f"{sid} {piece} {changes.num_rows}\n")
        stream.commit()  # the piece is safe: after a snapshot's last piece a restart skips the snapshot
        ids = changes.column("id").to_pylist()
        if SENTINEL in ids:
            return


if __name__ == "__main__":
    main(*sys.argv[1:5])
