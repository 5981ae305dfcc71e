"""The file-index container (embedded in a manifest entry or a ``<data file>.index`` file): magic, head, bodies."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from lsmlake.errors import CorruptFileError

MAGIC = 1493475289347502
VERSION = 1
EMPTY_INDEX = -1
INDEX_SUFFIX = ".index"


@dataclass(frozen=True)
class IndexBlob:
    """One (column, index type) entry: its bytes, or None when the writer saw no values (empty index)."""

    column: str
    index_type: str
    data: bytes | None


def _read_utf(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", buf, pos)
    return buf[pos + 2 : pos + 2 + n].decode("utf-8"), pos + 2 + n


def _utf(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack(">H", len(b)) + b


def read_container(buf: bytes, *, source: str) -> list[IndexBlob]:
    """Every index in a container; ``source`` names it in errors."""
    try:
        magic, version, head_length = struct.unpack_from(">qii", buf, 0)
        if magic != MAGIC:
            raise CorruptFileError(f"{source} is not a Paimon file index (bad magic)")
        if version != VERSION:
            raise CorruptFileError(f"{source}: file index version {version} is not supported (only 1)")
        (columns,) = struct.unpack_from(">i", buf, 16)
        pos = 20
        out: list[IndexBlob] = []
        for _ in range(columns):
            column, pos = _read_utf(buf, pos)
            (types,) = struct.unpack_from(">i", buf, pos)
            pos += 4
            for _ in range(types):
                index_type, pos = _read_utf(buf, pos)
                start, length = struct.unpack_from(">ii", buf, pos)
                pos += 8
                if start != EMPTY_INDEX and (start < head_length or start + length > len(buf)):
                    raise CorruptFileError(f"{source}: index {column}/{index_type} lies outside the file")
                data = None if start == EMPTY_INDEX else bytes(buf[start : start + length])
                out.append(IndexBlob(column, index_type, data))
        return out
    except (struct.error, UnicodeDecodeError) as e:
        raise CorruptFileError(f"{source}: truncated or malformed file index ({e})") from e


def write_container(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """A container of ``{column: {index type: bytes or None}}``, in the given order."""
    names = b"".join(_utf(c) + b"".join(_utf(t) for t in types) for c, types in indexes.items())
    n_indexes = sum(len(t) for t in indexes.values())
    head_length = 8 + 4 + 4 + 4 + n_indexes * 8 + len(indexes) * 4 + 4 + len(names)
    head = [struct.pack(">qiii", MAGIC, VERSION, head_length, len(indexes))]
    body: list[bytes] = []
    offset = 0
    for column, types in indexes.items():
        head.append(_utf(column) + struct.pack(">i", len(types)))
        for index_type, data in types.items():
            if data is None:
                head.append(_utf(index_type) + struct.pack(">ii", EMPTY_INDEX, 0))
            else:
                head.append(_utf(index_type) + struct.pack(">ii", head_length + offset, len(data)))
                body.append(data)
                offset += len(data)
    head.append(struct.pack(">i", 0))  # redundant length
    return b"".join(head) + b"".join(body)
