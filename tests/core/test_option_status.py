"""Every Paimon CoreOptions key has a status in lsmlake (honoured, accepted with no effect and why, or refused
and why); an honoured option is read by some implementation, an ignored one by none."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from lsmlake.core.options import BY_KEY, validate_create_options
from lsmlake.core.options.config_option import ConfigOption
from lsmlake.core.options.paimon_keys import PAIMON_CORE_OPTIONS
from lsmlake.core.options.paimon_refusals import REFUSED, REFUSED_FALLBACK_KEYS
from lsmlake.core.options.registry import FALLBACK_KEYS, OptionDeclarations
from lsmlake.core.options.status import HONOURED, NO_EFFECT_STATUS, all_statuses, option_status
from lsmlake.errors import InvalidOptionError, UnsupportedError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "lsmlake"
OPTIONS_PACKAGE = PACKAGE / "core" / "options"
# Honoured with no read of their own, and why.
NOT_READ = {
    "partition.mark-done-action": "only success-file is accepted (validation refuses the rest), and that action is "
    "what partition.end-input-to-done runs",
}


def _declared_names() -> dict[str, str]:
    """Key -> the name of its declaration (``BUCKET``), across the registry and what it inherits."""
    return {
        v.key: name
        for cls in OptionDeclarations.__mro__
        for name, v in vars(cls).items()
        if isinstance(v, ConfigOption)
    }


@cache
def _reads_outside_options() -> tuple[frozenset[str], frozenset[str]]:
    """(attribute names, exact string constants) used by src/lsmlake outside the options package; a CoreOptions
    property or method used outside adds the declarations it reads (``opts.bucket`` reads ``BUCKET``), and so
    does a function of the options package imported outside (``external_roots`` reads the external-path keys)."""
    attrs: set[str] = set()
    strings: set[str] = set()
    imported: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(OPTIONS_PACKAGE):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                attrs.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lsmlake.core.options"):
                imported |= {a.name for a in node.names}
    tree = ast.parse((OPTIONS_PACKAGE / "core_options.py").read_text())
    view = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CoreOptions")
    for member in view.body:
        if isinstance(member, ast.FunctionDef) and member.name in attrs:
            attrs |= {n.attr for n in ast.walk(member) if isinstance(n, ast.Attribute)}
    # validation's checks run at create time for every table: they decide nothing about reading or writing
    for path in sorted(set(OPTIONS_PACKAGE.glob("*.py")) - {OPTIONS_PACKAGE / "validation.py"}):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name in imported and not node.name.startswith("validate"):
                attrs |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return frozenset(attrs), frozenset(strings)


def _is_read(key: str) -> bool:
    attrs, strings = _reads_outside_options()
    name = _declared_names().get(key)
    # a per-column key (fields.default-aggregate-function) is read by its suffix
    return (name is not None and name in attrs) or key in strings or key.removeprefix("fields.") in strings


def test_every_paimon_key_has_a_status_and_every_refusal_or_no_effect_a_reason() -> None:
    statuses = all_statuses()
    assert set(PAIMON_CORE_OPTIONS) <= set(statuses)
    missing = [k for k, s in statuses.items() if s is None]
    assert not missing, f"Paimon keys with no status (declare them or list them in paimon_refusals): {missing}"
    for key, s in statuses.items():
        assert s is not None
        if s.status != HONOURED:
            assert s.reason and len(s.reason) > 10, f"{key} is {s.status} without a reason"


def test_honoured_options_are_read_by_an_implementation() -> None:
    unread = [
        k
        for k, s in all_statuses().items()
        if s is not None and s.status == HONOURED and k not in NOT_READ and not _is_read(k)
    ]
    assert not unread, (
        "options marked honoured that nothing outside lsmlake.core.options reads (implement them, or declare them "
        f"with NO_EFFECT and a reason, or refuse them): {unread}"
    )


def test_options_with_no_effect_are_read_by_nothing() -> None:
    read = [k for k, s in all_statuses().items() if s is not None and s.status == NO_EFFECT_STATUS and _is_read(k)]
    assert not read, f"options described as having no effect that code reads (update their description): {read}"


def test_refusal_table_lists_only_paimon_keys_without_a_declaration() -> None:
    stale = sorted(k for k in REFUSED if k in BY_KEY or k in FALLBACK_KEYS)
    assert not stale, f"declared options still listed in paimon_refusals.REFUSED (delete them there): {stale}"
    assert set(REFUSED) <= set(PAIMON_CORE_OPTIONS)
    assert set(REFUSED_FALLBACK_KEYS) <= {k for fallbacks in PAIMON_CORE_OPTIONS.values() for k in fallbacks}


def test_paimon_fallback_keys_of_accepted_options_are_read_as_paimon_reads_them_or_refused() -> None:
    for key, fallbacks in PAIMON_CORE_OPTIONS.items():
        s = option_status(key)
        if s is None or s.declared is None or s.status not in (HONOURED, NO_EFFECT_STATUS):
            continue
        unread = set(fallbacks) - set(s.declared.fallback_keys)
        assert unread <= set(REFUSED_FALLBACK_KEYS), f"{key}: Paimon also reads {sorted(unread)}"
    for fallback in REFUSED_FALLBACK_KEYS:
        with pytest.raises(UnsupportedError, match="deprecated spelling"):
            validate_create_options({fallback: "1"}, primary_key_table=True)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("compaction.force-up-level-0", "does not implement it yet"),
        ("commit.callback.3.param", "Java classes"),
        ("sink.clustering.by-columns", "cluster"),  # a fallback key of a refused option
        ("blob-field", "BLOB"),
        ("type", "type 'table'"),
    ],
)
def test_refused_paimon_keys_fail_create_with_their_reason(key: str, message: str) -> None:
    with pytest.raises(UnsupportedError, match=f"{key!r} is not supported by lsmlake: .*{message}"):
        validate_create_options({key: "1"}, primary_key_table=True)


def test_engine_tuning_options_are_accepted_and_typed() -> None:
    validate_create_options(
        {"sort-engine": "min-heap", "lookup.hash-load-factor": "0.5", "orc.write.batch-size": "10"},
        primary_key_table=True,
    )
    with pytest.raises(InvalidOptionError, match="sort-engine"):
        validate_create_options({"sort-engine": "bubble"}, primary_key_table=True)
    with pytest.raises(InvalidOptionError, match="not a number"):
        validate_create_options({"lookup.hash-load-factor": "half"}, primary_key_table=True)
    with pytest.raises(UnsupportedError, match=r"'manifest\.format'='orc' is not supported by lsmlake: it writes Avro"):
        validate_create_options({"manifest.format": "orc"}, primary_key_table=True)


def test_unknown_keys_stay_refused_as_unknown() -> None:
    with pytest.raises(InvalidOptionError, match=r"unknown table option 'sort-engin' \(did you mean 'sort-engine'\?\)"):
        validate_create_options({"sort-engin": "min-heap"}, primary_key_table=True)
    assert option_status("no.such.option") is None
