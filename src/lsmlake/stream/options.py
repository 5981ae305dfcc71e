"""What a stream asks for (filter, projection, where to start, when to stop), as one frozen object."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lsmlake.expr import FilterInput


@dataclass(frozen=True)
class StreamOptions:
    """The keyword arguments of ``Table.stream``, carried unchanged to the stream.

    ``mode``, ``snapshot_id``, ``timestamp_millis`` and ``consumer_id`` override the table options
    `scan.mode`, `scan.snapshot-id`, `scan.timestamp-millis` and `consumer-id`; ``poll_interval`` (seconds)
    defaults to `continuous.discovery-interval`."""

    filter: FilterInput = None
    columns: Sequence[str] | None = None
    """Stored as a tuple (any sequence of names is accepted)."""
    mode: str | None = None
    snapshot_id: int | None = None
    timestamp_millis: int | None = None
    consumer_id: str | None = None
    poll_interval: float | None = None
    stop_when_caught_up: bool = False
    until_snapshot: int | None = None
    auto_commit: bool = True
    binlog: bool = False

    def __post_init__(self) -> None:
        if self.columns is not None and not isinstance(self.columns, tuple):
            object.__setattr__(self, "columns", tuple(self.columns))
        if self.poll_interval is not None and self.poll_interval < 0:
            raise ValueError(f"poll_interval must be >= 0, got {self.poll_interval}")
