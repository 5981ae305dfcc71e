"""The options registry: one declaration per key, typed reads, refusals at create time, no string-keyed
reads outside core/options, and docs/options.md generated from it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lsmlake.core.options import BY_KEY, CoreOptions, all_options, options_table, validate_create_options
from lsmlake.errors import UnsupportedError
from lsmlake.format.write_settings import file_settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "lsmlake"
_READS = ("get", "get_bool", "get_int", "get_size", "pop", "setdefault")


def test_every_key_is_declared_once_with_a_parsable_default() -> None:
    keys = [o.key for o in all_options()]
    assert len(keys) == len(set(keys))
    for o in all_options():
        if o.default_text is not None:
            assert o.from_text(o.default_text) == o.default


def test_typed_reads_use_defaults_and_fallback_keys() -> None:
    opts = CoreOptions.of({"snapshot.expire.clean-empty-directories": "true"}, primary_key_table=True)
    assert opts.get(CoreOptions.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES) is True
    assert opts.get(CoreOptions.COMMIT_MAX_RETRY_WAIT) == 1_000
    assert opts.get(CoreOptions.WRITE_BUFFER_SIZE) == 256 * 1024**2
    assert opts.get(CoreOptions.SCAN_SNAPSHOT_ID) is None
    assert opts.num_sorted_run_stop_trigger == 8 and opts.num_levels == 6
    assert not opts.sequence_descending
    assert CoreOptions.of({"sequence.field.sort-order": "DESCENDING"}, primary_key_table=True).sequence_descending


def test_early_full_compaction_options_are_accepted() -> None:
    options = {
        "compaction.optimization-interval": "1 h",
        "compaction.total-size-threshold": "64 mb",
        "compaction.incremental-size-threshold": "8 mb",
    }
    validate_create_options(options, primary_key_table=True)
    opts = CoreOptions.of(options, primary_key_table=True)
    assert opts.get(CoreOptions.COMPACTION_OPTIMIZATION_INTERVAL) == 3_600_000
    assert opts.get(CoreOptions.COMPACTION_TOTAL_SIZE_THRESHOLD) == 64 * 1024**2


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("data-evolution.enabled", "true", "data-evolution"),
    ],
)
def test_options_lsmlake_cannot_honour_are_refused_at_create_time(key: str, value: str, message: str) -> None:
    with pytest.raises(UnsupportedError, match=f"not supported by lsmlake: .*{message}"):
        validate_create_options({key: value}, primary_key_table=True)


@pytest.mark.parametrize(
    "options",
    [
        {"file.format": "avro"},
        {"file.format.per.level": "0:avro,3:parquet"},
        {"file.format.per.level.0": "AVRO"},
    ],
)
def test_avro_is_accepted_for_the_table_and_per_level(options: dict[str, str]) -> None:
    """lsmlake writes Avro data files, so neither the table's format nor a level's refuses avro (both
    refused it while lsmlake could only read them)."""
    validate_create_options(options, primary_key_table=True)
    opts = CoreOptions.of(options, primary_key_table=True)
    assert file_settings(opts, 0, primary_key_table=True).format == "avro"


def _string_key_reads(path: Path) -> list[str]:
    """Reads of a declared option by a string literal: ``x.get("key")``, ``x["key"]``, ``"key" in x``
    (keys without a dot or dash, such as ``bucket``, only on something named like options)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        key: ast.expr | None = None
        target: ast.expr | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _READS:
            key, target = (node.args[0] if node.args else None), node.func.value
        elif isinstance(node, ast.Subscript):
            key, target = node.slice, node.value
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            key, target = node.left, node.comparators[0]
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in BY_KEY):
            continue
        assert target is not None
        if any(c in key.value for c in ".-") or "option" in ast.unparse(target) or "raw" in ast.unparse(target):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {key.value}")
    return found


def test_no_option_is_read_by_a_string_key_outside_core_options() -> None:
    offenders = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if "core/options" not in path.as_posix()
        for hit in _string_key_reads(path)
    ]
    assert not offenders, "read options through CoreOptions.<NAME> declarations: " + ", ".join(offenders)


def test_docs_options_table_is_generated_from_the_registry() -> None:
    text = (ROOT / "docs" / "options.md").read_text()
    start = text.index("| Key |")
    end = text.index("\n\n", start) + 1
    assert text[start:end] == options_table(), "regenerate with lsmlake.core.options.options_table()"
