"""Paimon data types: their JSON spelling and their mapping to and from Arrow."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

MAX_LENGTH = 2147483647


def is_int64(value: int) -> bool:
    """Whether an int fits a BIGINT (Java long, numpy int64)."""
    return -(2**63) <= value < 2**63


# Roots whose values are fixed-width in a BinaryRow slot.
ATOMIC_ROOTS = frozenset(
    {
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
        "DECIMAL",
        "CHAR",
        "VARCHAR",
        "BINARY",
        "VARBINARY",
        "VARIANT",
        "BLOB",
    }
)
NESTED_ROOTS = frozenset({"ARRAY", "MAP", "MULTISET", "ROW"})


@dataclass(frozen=True)
class DataField:
    """One column (or nested ROW field) with its stable Paimon field id."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None
    """Paimon's ``defaultValue``: SQL text written for the column when a row leaves it null."""


@dataclass(frozen=True)
class DataType:
    """A Paimon logical type; parameters are set only for the roots that use them."""

    root: str
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    element: DataType | None = None
    key: DataType | None = None
    value: DataType | None = None
    fields: tuple[DataField, ...] = field(default_factory=tuple)

    def copy(self, *, nullable: bool) -> DataType:
        return replace(self, nullable=nullable)

    @property
    def is_string(self) -> bool:
        return self.root in ("CHAR", "VARCHAR")

    @property
    def is_binary(self) -> bool:
        return self.root in ("BINARY", "VARBINARY", "BLOB")

    def __str__(self) -> str:
        spelled = type_to_json(self)
        return spelled if isinstance(spelled, str) else str(spelled)


# --------------------------------------------------------------------------- JSON


def _atomic_sql(t: DataType) -> str:
    r = t.root
    if r == "VARCHAR":
        return "STRING" if t.length == MAX_LENGTH else f"VARCHAR({t.length})"
    if r == "VARBINARY":
        return "BYTES" if t.length == MAX_LENGTH else f"VARBINARY({t.length})"
    if r in ("CHAR", "BINARY"):
        return f"{r}({t.length})"
    if r == "DECIMAL":
        return f"DECIMAL({t.precision}, {t.scale})"
    if r in ("TIME", "TIMESTAMP"):
        return f"{r}({t.precision})"
    if r == "TIMESTAMP_LTZ":
        return f"TIMESTAMP({t.precision}) WITH LOCAL TIME ZONE"
    return r


def type_to_json(t: DataType) -> str | dict[str, Any]:
    """Serialize a type the way Paimon's schema JSON spells it."""
    suffix = "" if t.nullable else " NOT NULL"
    if t.root in ATOMIC_ROOTS:
        return _atomic_sql(t) + suffix
    head = t.root + suffix
    if t.root in ("ARRAY", "MULTISET"):
        assert t.element is not None
        return {"type": head, "element": type_to_json(t.element)}
    if t.root == "MAP":
        assert t.key is not None and t.value is not None
        return {"type": head, "key": type_to_json(t.key), "value": type_to_json(t.value)}
    if t.root == "ROW":
        return {"type": head, "fields": [field_to_json(f) for f in t.fields]}
    raise ValueError(f"cannot serialize type {t.root}")


def field_to_json(f: DataField) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    if f.default_value is not None:
        out["defaultValue"] = f.default_value
    return out


def field_from_json(obj: dict[str, Any]) -> DataField:
    return DataField(
        id=int(obj["id"]),
        name=str(obj["name"]),
        type=type_from_json(obj["type"]),
        description=obj.get("description"),
        default_value=json_text(obj.get("defaultValue")),
    )


def json_text(value: Any) -> str | None:
    """A JSON value as Jackson's ``asText`` gives it (None when absent or null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return value if isinstance(value, str) else json.dumps(value)


_SQL = re.compile(r"^\s*([A-Z_ ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(WITH LOCAL TIME ZONE)?\s*$")
_ALIASES = {
    "INTEGER": "INT",
    "STRING": "VARCHAR",
    "BYTES": "VARBINARY",
    "DEC": "DECIMAL",
    "NUMERIC": "DECIMAL",
}


def type_from_json(obj: str | dict[str, Any]) -> DataType:
    """Parse a type from Paimon's schema JSON (a SQL string or a nested-type object)."""
    if isinstance(obj, dict):
        head = str(obj["type"]).strip().upper()
        nullable = not head.endswith("NOT NULL")
        root = head.removesuffix("NOT NULL").strip()
        if root in ("ARRAY", "MULTISET"):
            return DataType(root, nullable, element=type_from_json(obj["element"]))
        if root == "MAP":
            return DataType(
                root, nullable, key=type_from_json(obj["key"]), value=type_from_json(obj["value"])
            )
        if root == "ROW":
            return DataType(root, nullable, fields=tuple(field_from_json(f) for f in obj["fields"]))
        if root == "VECTOR":
            raise ValueError("VECTOR columns are not supported")
        raise ValueError(f"unknown nested type {obj['type']!r}")
    return parse_sql_type(obj)


def parse_sql_type(text: str) -> DataType:
    """Parse an atomic SQL type spelling such as ``DECIMAL(10, 2) NOT NULL``."""
    s = text.strip().upper()
    nullable = True
    if s.endswith("NOT NULL"):
        nullable, s = False, s.removesuffix("NOT NULL").strip()
    elif s.endswith(" NULL"):
        s = s.removesuffix(" NULL").strip()
    m = _SQL.match(s)
    if not m:
        raise ValueError(f"cannot parse type {text!r}")
    name, a, b, ltz = m.group(1).strip(), m.group(2), m.group(3), m.group(4)
    if name in ("STRING", "BYTES") and a is None:
        return DataType(_ALIASES[name], nullable, length=MAX_LENGTH)
    name = _ALIASES.get(name, name)
    if name == "TIMESTAMP_LTZ" or (name == "TIMESTAMP" and ltz):
        return DataType("TIMESTAMP_LTZ", nullable, precision=int(a) if a else 6)
    if name == "TIMESTAMP":
        return DataType("TIMESTAMP", nullable, precision=int(a) if a else 6)
    if name == "TIME":
        return DataType("TIME", nullable, precision=int(a) if a else 0)
    if name == "DECIMAL":
        return DataType("DECIMAL", nullable, precision=int(a) if a else 10, scale=int(b) if b else 0)
    if name in ("VARCHAR", "VARBINARY"):
        return DataType(name, nullable, length=int(a) if a else 1)
    if name in ("CHAR", "BINARY"):
        return DataType(name, nullable, length=int(a) if a else 1)
    if name in ATOMIC_ROOTS:
        return DataType(name, nullable)
    raise ValueError(f"unknown type {text!r}")


# --------------------------------------------------------------------------- Arrow

_SIMPLE_TO_ARROW: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "DATE": pa.date32(),
    "CHAR": pa.string(),
    "VARCHAR": pa.string(),
    "BINARY": pa.binary(),
    "VARBINARY": pa.binary(),
    "BLOB": pa.binary(),
}


def timestamp_unit(precision: int) -> str:
    """Arrow unit that holds a Paimon TIMESTAMP(p) without loss."""
    if precision == 0:
        return "s"
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


def to_arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type lsmlake uses for a Paimon type."""
    if t.root in _SIMPLE_TO_ARROW:
        return _SIMPLE_TO_ARROW[t.root]
    if t.root == "DECIMAL":
        assert t.precision is not None and t.scale is not None
        return pa.decimal128(t.precision, t.scale)
    if t.root == "TIME":
        return pa.time32("ms")
    if t.root == "TIMESTAMP":
        return pa.timestamp(timestamp_unit(t.precision or 0))
    if t.root == "TIMESTAMP_LTZ":
        return pa.timestamp(timestamp_unit(t.precision or 0), tz="UTC")
    if t.root == "ARRAY":
        assert t.element is not None
        return pa.list_(pa.field("element", to_arrow_type(t.element), t.element.nullable))
    if t.root == "MAP":
        assert t.key is not None and t.value is not None
        return pa.map_(to_arrow_type(t.key), pa.field("value", to_arrow_type(t.value), t.value.nullable))
    if t.root == "ROW":
        return pa.struct([to_arrow_field(f) for f in t.fields])
    raise ValueError(f"type {t.root} has no Arrow mapping")


def to_arrow_field(f: DataField) -> pa.Field:
    """An Arrow field carrying the Paimon field id as Parquet field id metadata."""
    return pa.field(
        f.name,
        to_arrow_type(f.type),
        nullable=f.type.nullable,
        metadata={b"PARQUET:field_id": str(f.id).encode()},
    )


def from_arrow_type(t: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type (nested ROW fields get id -1 until assigned)."""
    simple = {
        pa.bool_(): "BOOLEAN",
        pa.int8(): "TINYINT",
        pa.int16(): "SMALLINT",
        pa.int32(): "INT",
        pa.int64(): "BIGINT",
        pa.float32(): "FLOAT",
        pa.float64(): "DOUBLE",
        pa.date32(): "DATE",
    }
    if t in simple:
        return DataType(simple[t], nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return DataType("VARCHAR", nullable, length=MAX_LENGTH)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return DataType("VARBINARY", nullable, length=MAX_LENGTH)
    if pa.types.is_fixed_size_binary(t):
        return DataType("BINARY", nullable, length=t.byte_width)
    if pa.types.is_decimal(t):
        return DataType("DECIMAL", nullable, precision=t.precision, scale=t.scale)
    if pa.types.is_date64(t):
        return DataType("DATE", nullable)
    if pa.types.is_time(t):
        return DataType("TIME", nullable, precision=3 if t.unit in ("s", "ms") else 6)
    if pa.types.is_timestamp(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return DataType("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", nullable, precision=precision)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        vf = t.value_field
        return DataType("ARRAY", nullable, element=from_arrow_type(vf.type, vf.nullable))
    if pa.types.is_map(t):
        return DataType(
            "MAP",
            nullable,
            key=from_arrow_type(t.key_type, False),
            value=from_arrow_type(t.item_type, t.item_field.nullable),
        )
    if pa.types.is_struct(t):
        fields = tuple(DataField(-1, f.name, from_arrow_type(f.type, f.nullable)) for f in t)
        return DataType("ROW", nullable, fields=fields)
    raise ValueError(f"Arrow type {t} has no Paimon equivalent")


def assign_field_ids(fields: list[tuple[str, DataType]], start: int = 0) -> tuple[list[DataField], int]:
    """Number top-level fields first, then nested ROW fields depth-first; returns (fields, highest id)."""
    top = [DataField(start + i, name, t) for i, (name, t) in enumerate(fields)]
    counter = [start + len(fields) - 1]

    def renumber(t: DataType) -> DataType:
        if t.root == "ROW":
            new_fields = []
            for f in t.fields:
                counter[0] += 1
                fid = counter[0]
                new_fields.append(replace(f, id=fid, type=renumber(f.type)))
            return replace(t, fields=tuple(new_fields))
        if t.root in ("ARRAY", "MULTISET") and t.element is not None:
            return replace(t, element=renumber(t.element))
        if t.root == "MAP" and t.key is not None and t.value is not None:
            return replace(t, key=renumber(t.key), value=renumber(t.value))
        return t

    out = [replace(f, type=renumber(f.type)) for f in top]
    return out, counter[0]
