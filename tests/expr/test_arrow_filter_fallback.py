"""A pyarrow expression whose serialized layout cannot be read (another pyarrow) still filters exactly."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lsmlake
from lsmlake.errors import InvalidFilterError
from lsmlake.expr import arrow_filter

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def test_unreadable_layout_falls_back_to_an_exact_residual(
    catalog: lsmlake.Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": list(range(10)), "v": [str(i % 3) for i in range(10)]}, schema=SCHEMA))
    expression = (pc.field("id") > 3) & (pc.field("v") == "1")
    expected = t.read(filter=expression).sort_by("id")

    def unreadable(_: pc.Expression) -> object:
        raise InvalidFilterError("layout changed")

    monkeypatch.setattr(arrow_filter, "_tokens", unreadable)
    got = t.read(filter=expression).sort_by("id")
    assert got.equals(expected) and got.column("id").to_pylist() == [4, 7]
    with pytest.raises(InvalidFilterError, match="not a boolean"):
        t.read(filter=pc.field("id") + 1)
