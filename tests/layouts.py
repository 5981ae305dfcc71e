"""A small text notation for merge-tree file layouts, used by the pure planning tests.

A layout is files separated by spaces; ``|`` separates groups, and a group may start with
``L<n>:`` to give its files level ``n`` (default level 1). A file is ``[min,max]`` over one INT key,
optionally followed by ``@<level>``, ``:<size in MB>`` (default 1), ``!`` (has delete rows) or
``?`` (unknown delete row count), e.g. ``"L0: [1,5]! | L1: [1,2] [3,4]:8"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lsmlake.core.binary_row import deserialize_row, serialize_row
from lsmlake.core.types import DataType
from lsmlake.metadata.data_file import DataFileMeta
from lsmlake.metadata.stats import EMPTY_STATS

INT = DataType("INT", False)
MB = 1024 * 1024
_FILE = re.compile(r"\[(-?\d+),(-?\d+)\](?:@(\d+))?(?::(\d+))?([!?])?")
_LEVEL = re.compile(r"^\s*L(\d+):")


def make_file(
    lo: int, hi: int, *, level: int = 1, size: int = MB, delete_rows: int | None = 0, name: str | None = None
) -> DataFileMeta:
    return DataFileMeta(
        file_name=name or f"f[{lo},{hi}]@{level}",
        file_size=size,
        row_count=hi - lo + 1,
        min_key=serialize_row([lo], [INT]),
        max_key=serialize_row([hi], [INT]),
        key_stats=EMPTY_STATS,
        value_stats=EMPTY_STATS,
        min_sequence_number=0,
        max_sequence_number=0,
        schema_id=0,
        level=level,
        delete_row_count=delete_rows,
    )


def parse_layout(text: str) -> list[DataFileMeta]:
    files: list[DataFileMeta] = []
    for group in text.split("|"):
        level = 1
        m = _LEVEL.match(group)
        if m:
            level = int(m.group(1))
            group = group[m.end() :]
        pos = 0
        for fm in _FILE.finditer(group):
            if group[pos : fm.start()].strip():
                raise ValueError(f"cannot parse {group[pos : fm.start()]!r} in layout {text!r}")
            pos = fm.end()
            lo, hi = int(fm.group(1)), int(fm.group(2))
            flag = fm.group(5)
            files.append(
                make_file(
                    lo,
                    hi,
                    level=int(fm.group(3)) if fm.group(3) else level,
                    size=int(fm.group(4)) * MB if fm.group(4) else MB,
                    delete_rows=1 if flag == "!" else None if flag == "?" else 0,
                    name=f"f{len(files)}",
                )
            )
        if group[pos:].strip():
            raise ValueError(f"cannot parse {group[pos:]!r} in layout {text!r}")
    return files


def bounds(f: DataFileMeta) -> tuple[int, int]:
    """The (min, max) INT key of a layout file."""
    return deserialize_row(f.min_key, [INT])[0], deserialize_row(f.max_key, [INT])[0]  # type: ignore[return-value]


def render_file(f: DataFileMeta) -> str:
    lo, hi = bounds(f)
    return f"[{lo},{hi}]"


def render_files(files: Sequence[DataFileMeta]) -> str:
    return " ".join(render_file(f) for f in files)


def render_sections(sections: Sequence[Sequence[Sequence[DataFileMeta]]]) -> str:
    """Sections as ``{run / run}`` blocks; runs inside a section sorted by their first file."""
    out = []
    for section in sections:
        runs = sorted(section, key=lambda run: bounds(run[0]))
        out.append("{" + " / ".join(render_files(run) for run in runs) + "}")
    return " ".join(out)
