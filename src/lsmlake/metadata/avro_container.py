"""The Avro object container codec (and the legacy ORC fallback) shared by manifest, manifest-list and
index files: a header ordered like Java's DataFileWriter, one data block, every Paimon codec."""

from __future__ import annotations

import bz2
import datetime as dt
import io
import json
import lzma
import secrets
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro
import pyarrow as pa
import zstandard

from lsmlake.core.caches import FunctionCache
from lsmlake.errors import CorruptFileError, UnsupportedError

try:
    import pyarrow.orc as pa_orc
except ImportError:  # pragma: no cover - pyarrow wheels without ORC (e.g. some Windows builds)
    pa_orc = None

AVRO_MAGIC = b"Obj\x01"
ORC_MAGIC = b"ORC"
PARQUET_MAGIC = b"PAR1"
_DEFAULT_ZSTD_LEVEL = 1
# the container header's metadata keys
_SCHEMA_KEY = "avro.schema"
_CODEC_KEY = "avro.codec"


def java_schema_json(schema: Any) -> str:
    """Compact JSON exactly as Java Avro's Schema.toString() spells our schemas."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def strip_logical_types(schema: Any) -> Any:
    """Drop logicalType annotations so timestamp-millis values stay raw ints."""
    if isinstance(schema, list):
        return [strip_logical_types(s) for s in schema]
    if isinstance(schema, dict):
        out = {k: strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
        if "fields" in schema:
            out["fields"] = [dict(f, type=strip_logical_types(f["type"])) for f in schema["fields"]]
        return out
    return schema


@lru_cache(maxsize=64)
def _parsed(schema_json: str) -> Any:
    return fastavro.parse_schema(strip_logical_types(json.loads(schema_json)))


FunctionCache("parsed avro schemas", _parsed)


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_long(buf: memoryview, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _read_bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    n, pos = _read_long(buf, pos)
    if n < 0 or pos + n > len(buf):
        raise ValueError("length out of range")
    return bytes(buf[pos : pos + n]), pos + n


def _snappy_compress(raw: bytes) -> bytes:
    body = pa.Codec("snappy").compress(raw, asbytes=True)
    return bytes(body) + struct.pack(">I", zlib.crc32(raw))


def _snappy_decompress(data: bytes) -> bytes:
    body, crc = data[:-4], struct.unpack(">I", data[-4:])[0]
    size, _ = _read_long_unsigned(body)
    raw = bytes(pa.Codec("snappy").decompress(body, decompressed_size=size, asbytes=True))
    if zlib.crc32(raw) != crc:
        raise ValueError("snappy block checksum mismatch")
    return raw


def _read_long_unsigned(data: bytes) -> tuple[int, int]:
    shift = result = pos = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _compress(codec: str, raw: bytes, level: int | None) -> bytes:
    if codec == "null":
        return raw
    if codec == "zstandard":
        # Streaming compressor, no content size: the frame layout Java's ZstdOutputStream produces.
        zstd = zstandard.ZstdCompressor(level=level or _DEFAULT_ZSTD_LEVEL, write_content_size=False)
        c = zstd.compressobj()
        return c.compress(raw) + c.flush()
    if codec == "deflate":
        d = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, -15)
        return d.compress(raw) + d.flush()
    if codec == "snappy":
        return _snappy_compress(raw)
    if codec == "bzip2":
        return bz2.compress(raw)
    if codec == "xz":
        return lzma.compress(raw)
    raise ValueError(f"unknown Avro codec {codec!r}")


def _decompress(codec: str, data: bytes) -> bytes:
    if codec == "null":
        return data
    if codec == "zstandard":
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        return bytes(reader.read())
    if codec == "deflate":
        return zlib.decompress(data, -15)
    if codec == "snappy":
        return _snappy_decompress(data)
    if codec == "bzip2":
        return bz2.decompress(data)
    if codec == "xz":
        return lzma.decompress(data)
    raise UnsupportedError(f"unsupported Avro codec {codec!r}")


_CODECS = frozenset({"null", "zstandard", "deflate", "snappy", "bzip2", "xz"})
_CODEC_ALIASES = {"zstd": "zstandard", "none": "null", "uncompressed": "null"}


def avro_codec_name(codec: str) -> str:
    """The Avro codec name for a `manifest.compression` value (Paimon says `zstd`, Avro `zstandard`)."""
    lowered = codec.strip().lower()
    return _CODEC_ALIASES.get(lowered, lowered)


def encode_avro_container(
    schema_json: str,
    records: Iterable[Mapping[str, Any]],
    *,
    codec: str = "zstandard",
    level: int | None = None,
    sync_marker: bytes | None = None,
) -> bytes:
    """An Avro object container file with one data block, header ordered like Java's DataFileWriter."""
    codec = avro_codec_name(codec)
    if codec not in _CODECS:
        raise ValueError(f"unknown Avro codec {codec!r} (expected one of {sorted(_CODECS)})")
    sync = sync_marker if sync_marker is not None else secrets.token_bytes(16)
    if len(sync) != 16:
        raise ValueError("an Avro sync marker has 16 bytes")
    parsed = _parsed(schema_json)
    body = io.BytesIO()
    count = 0
    for rec in records:
        fastavro.schemaless_writer(body, parsed, rec)
        count += 1
    out = avro_header(schema_json, codec, sync)
    if count:
        out += avro_block(count, body.getvalue(), codec=codec, level=level, sync_marker=sync)
    return out


def avro_header(schema_json: str, codec: str, sync_marker: bytes) -> bytes:
    """An Avro container's header (magic, schema and codec metadata in Java's order, sync marker)."""
    out = bytearray(AVRO_MAGIC)
    out += _zigzag(2)
    for key, value in ((_SCHEMA_KEY, schema_json.encode()), (_CODEC_KEY, codec.encode())):
        out += _zigzag(len(key)) + key.encode() + _zigzag(len(value)) + value
    out += _zigzag(0) + sync_marker
    return bytes(out)


def avro_block(count: int, raw: bytes, *, codec: str, level: int | None, sync_marker: bytes) -> bytes:
    """One data block of ``count`` encoded records, compressed with ``codec``, closed by the sync marker."""
    block = _compress(codec, raw, level)
    return _zigzag(count) + _zigzag(len(block)) + block + sync_marker


def read_avro_long(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: its value and the position after it."""
    return _read_long(memoryview(data), pos)


@dataclass(frozen=True)
class AvroContents:
    """The decoded parts of an Avro container: header schema text, codec, sync and raw records."""

    schema_json: str
    codec: str
    sync_marker: bytes
    records: list[Any]


_DECODE_ERRORS = (
    ValueError,
    KeyError,
    IndexError,
    EOFError,
    zstandard.ZstdError,
    lzma.LZMAError,
    zlib.error,
    OSError,
    pa.ArrowException,
)


@dataclass(frozen=True)
class AvroHeader:
    """An Avro container's header: its schema text, codec, sync marker and where the first block starts."""

    schema_json: str
    codec: str
    sync_marker: bytes
    end: int


def decode_avro_header(data: bytes, *, name: str) -> AvroHeader:
    buf = memoryview(data)
    try:
        if bytes(buf[:4]) != AVRO_MAGIC:
            raise ValueError("not an Avro container file (bad magic)")
        pos = 4
        meta: dict[str, bytes] = {}
        while True:
            n, pos = _read_long(buf, pos)
            if n == 0:
                break
            if n < 0:
                _, pos = _read_long(buf, pos)
                n = -n
            for _ in range(n):
                key, pos = _read_bytes(buf, pos)
                meta[key.decode()], pos = _read_bytes(buf, pos)
        sync = bytes(buf[pos : pos + 16])
        pos += 16
        if len(sync) != 16:
            raise ValueError("truncated header")
        return AvroHeader(meta[_SCHEMA_KEY].decode(), meta.get(_CODEC_KEY, b"null").decode(), sync, pos)
    except _DECODE_ERRORS as e:
        raise CorruptFileError(f"cannot decode Avro file {name}: {e}") from e


def iter_avro_blocks(data: bytes, header: AvroHeader, *, name: str) -> Iterator[list[Any]]:
    """The records of each data block in turn (timestamp-millis values as raw ints); only one block's
    records are held at a time."""
    buf = memoryview(data)
    pos = header.end
    try:
        parsed = _parsed(header.schema_json)
        while pos < len(buf):
            count, pos = _read_long(buf, pos)
            size, pos = _read_long(buf, pos)
            if size < 0 or pos + size + 16 > len(buf):
                raise ValueError("truncated data block")
            block = _decompress(header.codec, bytes(buf[pos : pos + size]))
            pos += size
            if bytes(buf[pos : pos + 16]) != header.sync_marker:
                raise ValueError("sync marker mismatch")
            pos += 16
            stream = io.BytesIO(block)
            records = [fastavro.schemaless_reader(stream, parsed, None) for _ in range(count)]
            yield records
    except _DECODE_ERRORS as e:
        raise CorruptFileError(f"cannot decode Avro file {name}: {e}") from e


def decode_avro_container(data: bytes, *, name: str) -> AvroContents:
    """Parse an Avro container; timestamp-millis values come back as raw ints."""
    header = decode_avro_header(data, name=name)
    records = [r for block in iter_avro_blocks(data, header, name=name) for r in block]
    return AvroContents(header.schema_json, header.codec, header.sync_marker, records)


_EPOCH = dt.datetime(1970, 1, 1)


def _plain(value: Any) -> Any:
    """ORC values -> what the Avro reader yields (timestamps as raw wall-clock millis)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dt.datetime):
        naive = value.replace(tzinfo=None) - (value.utcoffset() or dt.timedelta())
        return (naive - _EPOCH) // dt.timedelta(milliseconds=1)
    return value


def decode_records(data: bytes, *, name: str) -> list[dict[str, Any]]:
    """Records of a manifest-kind file, Avro (any codec, ≤0.9 union layout) or legacy ORC."""
    if data[:4] == AVRO_MAGIC:
        contents = decode_avro_container(data, name=name)
        return [r for r in contents.records if r is not None]
    if data[:3] == ORC_MAGIC:
        if pa_orc is None:
            raise UnsupportedError(f"ORC manifest {name} needs pyarrow built with ORC support")
        try:
            table = pa_orc.ORCFile(pa.BufferReader(data)).read()
        except (pa.ArrowException, OSError) as e:
            raise CorruptFileError(f"cannot decode ORC file {name}: {e}") from e
        return [_plain(r) for r in table.to_pylist()]
    if data[:4] == PARQUET_MAGIC:
        raise UnsupportedError(f"Parquet-format manifest {name} is not supported")
    raise CorruptFileError(f"{name} is neither an Avro nor an ORC file (magic {data[:4]!r})")
