"""deletion-vectors.modifiable: the deletion-vector mode of a table holding data changes only when the
options in force before the change allow it (ALTER, RESET and dynamic options alike, as in Paimon)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lsmlake
from lsmlake.errors import UnsupportedError
from lsmlake.schema_change import remove_option, set_option

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int64())])


def _table(tmp_path: Path, options: dict[str, str]) -> lsmlake.Table:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", **options})
    table.write(pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([1, 2], pa.int64())}))
    return table


def test_an_empty_table_may_change_mode_without_it(tmp_path: Path) -> None:
    catalog = lsmlake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    table = table.alter(set_option("deletion-vectors.enabled", "true"))
    assert table.options.deletion_vectors_enabled


@pytest.mark.parametrize("on", [False, True])
def test_alter_reset_and_dynamic_options_need_it(tmp_path: Path, on: bool) -> None:
    table = _table(tmp_path, {"deletion-vectors.enabled": str(on).lower()})
    flip = str(not on).lower()
    with pytest.raises(UnsupportedError, match=r"set deletion-vectors\.modifiable=true first"):
        table.alter(set_option("deletion-vectors.enabled", flip))
    with pytest.raises(UnsupportedError, match="deletion vectors mode"):
        table.with_options({"deletion-vectors.enabled": flip})
    with pytest.raises(UnsupportedError, match="deletion vectors mode"):  # read before the change, not after
        table.with_options({"deletion-vectors.modifiable": "true", "deletion-vectors.enabled": flip})
    if on:
        with pytest.raises(UnsupportedError, match="deletion vectors mode"):
            table.alter(remove_option("deletion-vectors.enabled"))  # a reset to the default, false
    table.with_options({"deletion-vectors.modifiable": "true"}).with_options({"deletion-vectors.enabled": flip})
    table = table.alter(set_option("deletion-vectors.modifiable", "true"))
    table = table.alter(set_option("deletion-vectors.enabled", flip))
    assert table.options.deletion_vectors_enabled is (not on)
    table.compact(full=True)
    assert table.read().sort_by("id").to_pylist() == [{"id": 1, "v": 1}, {"id": 2, "v": 2}]
