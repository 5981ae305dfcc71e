"""What a batch read asks for (filter, projection, point in time, row limit), as one frozen object."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from lsmlake.expr import FilterInput


class ReadKeywords(TypedDict, total=False):
    """``Table.read``'s keyword arguments, for functions that take them or a :class:`ReadOptions`."""

    filter: FilterInput
    columns: Sequence[str] | None
    snapshot_id: int | None
    tag: str | None
    as_of_millis: int | None
    limit: int | None


@dataclass(frozen=True)
class ReadOptions:
    """The keyword arguments of ``Table.read`` / ``Table.scan``, carried unchanged to the scan.

    ``snapshot_id``, ``tag`` and ``as_of_millis`` (at most one) name a past snapshot, read with its own
    schema: ``columns`` and ``filter`` then use its column names."""

    filter: FilterInput = None
    columns: Sequence[str] | None = None
    """Stored as a tuple (any sequence of names is accepted)."""
    snapshot_id: int | None = None
    tag: str | None = None
    as_of_millis: int | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"limit must be >= 0, got {self.limit}")
        if self.columns is not None and not isinstance(self.columns, tuple):
            object.__setattr__(self, "columns", tuple(self.columns))

    @property
    def names_a_snapshot(self) -> bool:
        """Whether the arguments pin a past snapshot (the table's options may still do so)."""
        return self.snapshot_id is not None or self.tag is not None or self.as_of_millis is not None


def read_options(options: ReadOptions | None, keywords: ReadKeywords) -> ReadOptions:
    """``options``, or the options the keywords give (not both)."""
    if options is None:
        return ReadOptions(**keywords)
    if keywords:
        raise TypeError(f"give ReadOptions or keyword arguments, not both (got {sorted(keywords)})")
    return options
