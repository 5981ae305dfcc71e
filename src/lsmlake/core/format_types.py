"""Which column types a data file format can hold (Paimon's FileFormat.validateDataFields), checked when a
table is created or altered."""

from __future__ import annotations

from collections.abc import Sequence

from lsmlake.core.options import CoreOptions
from lsmlake.core.types import DataField, DataType
from lsmlake.errors import SchemaMismatchError

_AVRO_ROOTS = frozenset(
    {
        "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR", "VARCHAR", "BINARY",
        "VARBINARY", "BLOB", "TIMESTAMP", "TIMESTAMP_LTZ", "DATE", "TIME", "DECIMAL", "ROW", "ARRAY", "MAP",
    }
)  # fmt: skip


def avro_refusal(t: DataType) -> str | None:
    """Why Java Paimon's AvroSchemaConverter cannot convert ``t`` (or a type nested in it), or None."""
    if t.root not in _AVRO_ROOTS:
        return f"Avro data files cannot hold type {t}"
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (6 if t.precision is None else t.precision) > 6:
        return f"Avro does not support {t}: timestamp precision above 6"
    if t.root == "TIME" and (t.precision or 0) > 3:
        return f"Avro does not support {t}: time precision above 3"
    for child in (t.element, t.key, t.value, *(f.type for f in t.fields)):
        reason = None if child is None else avro_refusal(child)
        if reason is not None:
            return reason
    return None


def check_format_types(fields: Sequence[DataField], options: CoreOptions, *, table: str) -> None:
    """Every column's type must have a form in the format of every file the table writes: ``file.format``
    and, for a primary-key table, each level's ``file.format.per.level`` (only Avro limits them)."""
    formats = [(options.file_format, f"file.format={options.file_format}")]
    if options.primary_key_table:
        per_level = options.per_level(CoreOptions.FILE_FORMAT_PER_LEVEL).items()
        formats += [(fmt.strip().lower(), f"file.format.per.level entry '{level}:{fmt}'") for level, fmt in per_level]
    for file_format, what in formats:
        if file_format != "avro":
            continue
        for f in fields:
            reason = avro_refusal(f.type)
            if reason is not None:
                raise SchemaMismatchError(f"table {table}: column {f.name!r}: {reason} ({what})")
