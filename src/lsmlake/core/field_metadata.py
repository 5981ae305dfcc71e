"""A column's comment and default value carried in Arrow field metadata, under the names Paimon's schema JSON
gives them (``description``, as pypaimon does, and ``defaultValue``), so an Arrow schema can create them."""

from __future__ import annotations

import pyarrow as pa

DESCRIPTION = b"description"
DEFAULT_VALUE = b"defaultValue"


def field_metadata(description: str | None, default_value: str | None) -> dict[bytes, bytes] | None:
    """Arrow field metadata for a column's comment and default value (SQL text), or None for neither."""
    meta = {k: v.encode() for k, v in ((DESCRIPTION, description), (DEFAULT_VALUE, default_value)) if v is not None}
    return meta or None


def field_extras(field: pa.Field) -> tuple[str | None, str | None]:
    """``(description, default value)`` an Arrow field's metadata gives (None for each it lacks)."""
    meta = field.metadata or {}
    description, default = meta.get(DESCRIPTION), meta.get(DEFAULT_VALUE)
    return (
        None if description is None else description.decode(),
        None if default is None else default.decode(),
    )
