"""Random writes, deletes, compactions and legal ALTERs (add / drop / rename / widen / move): every read
equals a Python model that applies the same schema changes; random illegal ALTERs are refused and write
nothing; filters on renamed, added and widened columns return exactly the model's rows (no file is
pruned wrongly through statistics of older schemas)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lsmlake
from lsmlake import schema_change as sc
from lsmlake.errors import InvalidOptionError, UnsupportedError
from lsmlake.expr import evaluate, parse_filter
from lsmlake.schema_change import SchemaChangeError, schema_ids
from lsmlake.table import Table

REFUSED = (SchemaChangeError, UnsupportedError, InvalidOptionError)
WIDER = {
    "TINYINT": ["SMALLINT", "INT", "BIGINT", "DOUBLE", "DECIMAL(9, 2)"],
    "SMALLINT": ["INT", "BIGINT", "DOUBLE"],
    "INT": ["BIGINT", "DOUBLE", "DECIMAL(12, 1)"],
    "BIGINT": ["DECIMAL(20, 0)"],
    "FLOAT": ["DOUBLE"],
    "DECIMAL(6, 2)": ["DECIMAL(8, 2)", "DECIMAL(9, 3)"],
    "DECIMAL(8, 2)": ["DECIMAL(10, 2)"],
    "DECIMAL(9, 3)": ["DECIMAL(12, 4)"],
    "VARCHAR(8)": ["VARCHAR(20)", "STRING"],
    "VARCHAR(20)": ["STRING"],
}
NEW_TYPES = [
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL(6, 2)",
    "VARCHAR(8)",
    "STRING",
]


def value_for(type_text: str, seed: int) -> Any:
    """A value of the column's type that every legal widening keeps exactly."""
    if seed % 7 == 0:
        return None
    x = seed % 200 - 100
    if type_text in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return x if type_text != "BIGINT" else x * 10**9
    if type_text in ("FLOAT", "DOUBLE"):
        return x / 4  # exact in float32
    if type_text.startswith("DECIMAL"):
        scale = int(type_text.rstrip(")").split(",")[1])
        return Decimal(x) / 4 if scale >= 2 else Decimal(x) / 2 if scale == 1 else Decimal(x)
    return f"v{x:+04d}"[:8]


@dataclass
class Model:
    """The table as the test expects it: current columns (name -> type text) and rows by key."""

    pk: bool
    columns: dict[str, str]
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    appended: list[dict[str, Any]] = field(default_factory=list)
    counter: int = 0

    def fresh_name(self) -> str:
        self.counter += 1
        return f"c{self.counter}"

    @property
    def all_rows(self) -> list[dict[str, Any]]:
        return list(self.rows.values()) if self.pk else self.appended

    def for_each_row(self, fn: Any) -> None:
        for r in self.all_rows:
            fn(r)


def arrow_schema(t: Table) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in t.schema.logical_arrow_schema()])


def _norm(value: Any) -> Any:
    if isinstance(value, Decimal):
        return ("num", value.normalize())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("num", Decimal(str(value)).normalize())
    return value


def _canon(rows: list[dict[str, Any]], names: list[str]) -> list[tuple[Any, ...]]:
    out = [tuple(_norm(r.get(n)) for n in names) for r in rows]
    return sorted(out, key=lambda row: tuple((v is None, str(v)) for v in row))


def check_read(t: Table, model: Model) -> None:
    got = t.read()
    assert got.column_names == list(model.columns)
    assert _canon(got.to_pylist(), list(model.columns)) == _canon(model.all_rows, list(model.columns))


def check_filters(t: Table, model: Model, picks: list[tuple[int, int, int]]) -> None:
    """Filters on random columns return exactly the model's matching rows."""
    names = list(model.columns)
    for col_pick, op_pick, seed in picks:
        name = names[col_pick % len(names)]
        type_text = model.columns[name]
        while seed % 7 == 0:  # a non-null literal
            seed += 1
        literal = value_for(type_text, seed)
        if op_pick % 4 == 0:
            where = f"{name} IS NULL"
        elif op_pick % 4 == 1:
            where = f"{name} IS NOT NULL"
        else:
            text = repr(literal) if isinstance(literal, str) else str(literal)
            where = f"{name} {'>' if op_pick % 4 == 2 else '='} {text}"
        pred = parse_filter(where, t.schema.fields)
        expected = [r for r in model.all_rows if evaluate(pred, r) is True]
        got = t.read(filter=where).to_pylist()
        assert _canon(got, names) == _canon(expected, names), where


# --------------------------------------------------------------------------- operations

OP = st.one_of(
    st.tuples(
        st.just("write"),
        st.lists(st.tuples(st.integers(0, 30), st.integers(0, 10_000)), min_size=1, max_size=12),
    ),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 30), min_size=1, max_size=4)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("add"), st.tuples(st.integers(0, 99), st.integers(0, 99))),
    st.tuples(st.just("drop"), st.integers(0, 99)),
    st.tuples(st.just("rename"), st.integers(0, 99)),
    st.tuples(st.just("widen"), st.tuples(st.integers(0, 99), st.integers(0, 99))),
    st.tuples(st.just("move"), st.tuples(st.integers(0, 99), st.integers(0, 99))),
    st.tuples(st.just("illegal"), st.tuples(st.integers(0, 99), st.integers(0, 99))),
    st.tuples(st.just("reopen"), st.just(0)),
)


def value_columns(model: Model) -> list[str]:
    return [n for n in model.columns if n not in ("k", "p")]


def do_write(t: Table, model: Model, arg: list[tuple[int, int]]) -> None:
    rows = []
    for key, seed in arg:
        row = {"k": key, "p": key % 2}
        for i, (name, type_text) in enumerate(model.columns.items()):
            if name not in row:
                row[name] = value_for(type_text, seed + 13 * i)
        rows.append(row)
    t.write(pa.Table.from_pylist(rows, schema=arrow_schema(t)))
    if model.pk:
        for row in rows:  # the last row of a key in one write wins
            model.rows[row["k"]] = dict(row)
    else:
        model.appended.extend(dict(r) for r in rows)


def legal_change(model: Model, op: str, arg: Any) -> sc.SchemaChange | None:
    values = value_columns(model)
    names = list(model.columns)
    if op == "add":
        return sc.add_column(
            model.fresh_name(),
            NEW_TYPES[arg[0] % len(NEW_TYPES)],
            after=names[arg[1] % len(names)] if arg[1] % 3 else None,
        )
    if not values:
        return None
    name = values[(arg[0] if isinstance(arg, tuple) else arg) % len(values)]
    if op == "drop":
        return sc.drop_column(name) if len(model.columns) > 3 else None
    if op == "rename":
        return sc.rename_column(name, model.fresh_name())
    if op == "widen":
        wider = WIDER.get(model.columns[name], [])
        return sc.update_column_type(name, wider[arg[1] % len(wider)]) if wider else None
    if op == "move":
        other = names[arg[1] % len(names)]
        return sc.update_column_position(name, after=other) if other != name else None
    raise AssertionError(op)


def apply_to_model(model: Model, change: sc.SchemaChange) -> None:
    cols = model.columns
    if isinstance(change, sc.AddColumn):
        items = list(cols.items())
        at = len(items) if change.move is None else [n for n, _ in items].index(change.move.reference) + 1
        items.insert(at, (change.name, _type_text(change.type)))
        model.columns = dict(items)
        model.for_each_row(lambda r: r.__setitem__(change.name, None))
    elif isinstance(change, sc.DropColumn):
        del cols[change.name]
        model.for_each_row(lambda r: r.pop(change.name, None))
    elif isinstance(change, sc.RenameColumn):
        model.columns = {change.new_name if n == change.name else n: v for n, v in cols.items()}
        model.for_each_row(lambda r: r.__setitem__(change.new_name, r.pop(change.name, None)))
    elif isinstance(change, sc.UpdateColumnType):
        cols[change.name] = _type_text(change.type)
    elif isinstance(change, sc.UpdateColumnPosition):
        items = [(n, v) for n, v in cols.items() if n != change.name]
        at = [n for n, _ in items].index(change.move.reference) + 1  # type: ignore[arg-type]
        items.insert(at, (change.name, cols[change.name]))
        model.columns = dict(items)


def _type_text(t: Any) -> str:
    text = str(t)
    return "STRING" if text == "STRING" else text


def illegal_change(model: Model, arg: tuple[int, int]) -> sc.SchemaChange:
    values = value_columns(model)
    name = values[arg[0] % len(values)] if values else "k"
    kinds = [
        sc.drop_column("k"),
        sc.drop_column("p") if not model.pk else sc.rename_column("p", "q"),
        sc.update_column_type("k", "BIGINT"),
        sc.add_column("n0", "INT NOT NULL"),
        sc.rename_column(name, "k"),
        sc.add_column(name, "INT"),
        sc.drop_column("no_such_column"),
        sc.update_column_nullability(name, False),
        sc.set_option("bucket", "0"),
        sc.update_column_type(name, "TINYINT" if model.columns.get(name) != "TINYINT" else "VARCHAR(1)"),
        sc.update_column_type(name, "BOOLEAN"),
    ]
    return kinds[arg[1] % len(kinds)]


@settings(max_examples=35, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(OP, min_size=1, max_size=14),
    pk=st.booleans(),
    dv=st.booleans(),
    buckets=st.sampled_from([1, 2]),
    picks=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99), st.integers(0, 10_000)), max_size=6),
)
def test_reads_equal_a_model_through_schema_changes(
    ops: list[tuple[str, Any]],
    pk: bool,
    dv: bool,
    buckets: int,
    picks: list[tuple[int, int, int]],
) -> None:
    with tempfile.TemporaryDirectory() as wh:
        cat = lsmlake.Catalog(wh)
        cat.create_database("db")
        base = pa.schema(
            [
                pa.field("k", pa.int32(), False),
                pa.field("p", pa.int32(), False),
                ("v", pa.int16()),
                ("s", pa.string()),
                ("f", pa.float32()),
            ]
        )
        options = {"bucket": str(buckets), "num-sorted-run.compaction-trigger": "3"}
        if pk:
            options["deletion-vectors.enabled"] = str(dv).lower()
        else:
            options["bucket-key"] = "k"
        t = cat.create_table(
            "db.t", schema=base, primary_key=["k", "p"] if pk else None, partition_keys=["p"], options=options
        )
        assert isinstance(t, Table)
        model = Model(pk, {"k": "INT", "p": "INT", "v": "SMALLINT", "s": "STRING", "f": "FLOAT"})
        for op, arg in ops:
            if op == "write":
                do_write(t, model, arg)
            elif op == "delete":
                if not pk:
                    continue
                keys = {"k": pa.array(arg, pa.int32()), "p": pa.array([k % 2 for k in arg], pa.int32())}
                t.delete(pa.table(keys))
                for k in arg:
                    model.rows.pop(k, None)
            elif op == "compact":
                if pk:
                    t.compact(full=arg)
            elif op == "reopen":
                reopened = cat.get_table("db.t")
                assert isinstance(reopened, Table) and reopened.schema == t.schema
                t = reopened
            elif op == "illegal":
                before = schema_ids(t.io, t.root)
                with pytest.raises(REFUSED):
                    t.alter(illegal_change(model, arg))
                assert schema_ids(t.io, t.root) == before
                assert t.latest_schema() == t.schema
            else:
                change = legal_change(model, op, arg)
                if change is None:
                    continue
                t = t.alter(change)
                apply_to_model(model, change)
                assert t.schema.field_names == list(model.columns)
            check_read(t, model)
        check_filters(t, model, picks)
        ids = [f.id for f in t.schema.fields]
        assert len(set(ids)) == len(ids) and t.schema.highest_field_id >= max(ids)


def test_old_snapshots_read_with_their_own_schema(tmp_path: Path) -> None:
    """Time travel reads an old snapshot with the schema it was committed under (Paimon's
    ``tryTimeTravel`` copies the table onto ``schema(snapshot.schemaId())``); latest reads use today's."""
    cat = lsmlake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([pa.field("k", pa.int32(), False), ("v", pa.int32())]),
        primary_key=["k"],
        options={"bucket": "1"},
    )
    first = t.write(pa.table({"k": [1, 2], "v": [10, 20]}, schema=arrow_schema(t)))
    t = t.alter(
        sc.rename_column("v", "w"), sc.update_column_type("w", "BIGINT"), sc.add_column("n", "STRING")
    )
    t.write(pa.table({"k": [2], "w": [2**40], "n": ["x"]}, schema=arrow_schema(t)))
    old = t.read(snapshot_id=first)
    assert old.to_pylist() == [{"k": 1, "v": 10}, {"k": 2, "v": 20}]
    assert old.schema.field("v").type == pa.int32()
    assert sorted(t.read().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "w": 10, "n": None},
        {"k": 2, "w": 2**40, "n": "x"},
    ]
