"""SnapshotManager: find, read and atomically publish the snapshots of one table (or branch) root."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from lsmlake.core.fileio import FileIO
from lsmlake.errors import NoSuchSnapshotError
from lsmlake.metadata.catalog_env import CatalogEnvironment
from lsmlake.metadata.manifest import ManifestEntry
from lsmlake.metadata.snapshot import (
    SNAPSHOT_PREFIX,
    Snapshot,
    decode_snapshot,
    encode_snapshot,
    snapshot_file_name,
)

EARLIEST = "EARLIEST"
LATEST = "LATEST"
_HINT_ATTEMPTS = 3
WALK_LIMIT = 64
"""``published_after`` reads at most this many snapshots one by one; further behind, LATEST is read."""
_NO_WATERMARK = -(2**63)
"""Java's Long.MIN_VALUE: a snapshot committed without a watermark."""


class SnapshotManager:
    """Snapshot ids and files under ``<table_root>/snapshot/``, with Java's hint-file rules (§3)."""

    def __init__(self, io: FileIO, table_root: str, *, catalog_env: CatalogEnvironment | None = None) -> None:
        self.io = io
        self.catalog_env = catalog_env
        self.table_root = table_root.rstrip("/")
        self.snapshot_dir = f"{self.table_root}/snapshot"

    # -- paths
    def snapshot_path(self, snapshot_id: int) -> str:
        return f"{self.snapshot_dir}/{snapshot_file_name(snapshot_id)}"

    def hint_path(self, hint: str) -> str:
        return f"{self.snapshot_dir}/{hint}"

    # -- ids
    def snapshot_ids(self) -> list[int]:
        """Ids of the unexpired snapshots, ascending: every `snapshot-<n>` file present (temp and hint
        files ignored) except those below the EARLIEST hint (see :meth:`expired_below`)."""
        ids = self.listed_ids()
        floor = self.expired_below(ids)
        ids = ids if floor is None else [i for i in ids if i >= floor]
        ceiling = self._recorded_latest_id()
        return ids if ceiling is None else [i for i in ids if i <= ceiling]

    def _recorded(self) -> tuple[bool, Snapshot | None]:
        """The catalog's record of the latest snapshot (see CatalogEnvironment.latest_snapshot): (False,
        None) when the table's catalog keeps none and its files say."""
        if self.catalog_env is None:
            return False, None
        return self.catalog_env.latest_snapshot(self.table_root)

    def _recorded_latest_id(self) -> int | None:
        """The highest snapshot id the table's files may be trusted for: the catalog's latest (0 when
        it says there is none), None when the catalog keeps no record. A snapshot file above it was
        never published through the catalog (a commit that bypassed it, or one it refused): read as
        absent, as Java's RESTCatalog never sees it either."""
        known, snapshot = self._recorded()
        if not known:
            return None
        return 0 if snapshot is None else snapshot.id

    def expired_below(self, listed: list[int] | None = None) -> int | None:
        """The EARLIEST hint when that snapshot exists: every snapshot below it has expired, even when
        its file is still listed. Expiry moves the hint before it deletes anything, so a snapshot left
        below it by an interrupted run (its files partly gone) reads as expired, never as corrupt;
        the next expiry finishes it. None when there is no valid hint."""
        hint = self._read_hint(EARLIEST)
        if hint is None:
            return None
        present = hint in listed if listed is not None else self.io.is_file(self.snapshot_path(hint))
        return hint if present else None

    def listed_ids(self) -> list[int]:
        """Ids of every `snapshot-<n>` file present, ascending, expired ones below EARLIEST included."""
        ids = []
        for status in self.io.list_dir(self.snapshot_dir):
            name = status.name
            if status.is_dir or not name.startswith(SNAPSHOT_PREFIX):
                continue
            suffix = name[len(SNAPSHOT_PREFIX) :]
            if suffix.isdigit():
                ids.append(int(suffix))
        return sorted(ids)

    def latest_id(self) -> int | None:
        """The latest snapshot's id: the catalog's record when the table's catalog keeps one (the REST
        catalog, as Java's SnapshotLoader reads it), else the LATEST hint when no `snapshot-<hint+1>`
        exists, else the largest listed id (on S3: a GET and a HEAD when the hint is current, no LIST)."""
        if self.catalog_env is not None:  # a catalog that publishes the commits knows the latest
            known, snapshot = self.catalog_env.latest_snapshot(self.table_root)
            if known:
                return None if snapshot is None else snapshot.id
        return self._latest_id_of_files()

    def _latest_id_of_files(self) -> int | None:
        hint = self._read_hint(LATEST)
        if hint is not None and hint > 0 and not self.io.is_file(self.snapshot_path(hint + 1)):
            return hint
        return self._by_listing(max)

    def earliest_id(self) -> int | None:
        """The EARLIEST hint when that snapshot exists, else the smallest listed id."""
        hint = self.valid_earliest_hint()
        return hint if hint is not None else self._by_listing(min)

    def valid_earliest_hint(self) -> int | None:
        """The EARLIEST hint when that snapshot exists (a GET and a HEAD on S3), else None."""
        hint = self._read_hint(EARLIEST)
        return hint if hint is not None and self.io.is_file(self.snapshot_path(hint)) else None

    def _by_listing(self, pick: Callable[[list[int]], int]) -> int | None:
        ids = self.listed_ids()
        return pick(ids) if ids else None

    def _read_hint(self, hint: str) -> int | None:
        path = self.hint_path(hint)
        for attempt in range(_HINT_ATTEMPTS):
            try:
                return int(self.io.read_text(path).strip())
            except FileNotFoundError:
                return None
            except ValueError:
                return None
            except OSError:
                if attempt + 1 < _HINT_ATTEMPTS:
                    time.sleep(0.001)
        return None

    # -- snapshots
    def snapshot_exists(self, snapshot_id: int) -> bool:
        """Whether snapshot ``snapshot_id`` exists and has not expired (is not below EARLIEST), and is not
        above the latest its catalog recorded (a file the catalog never published)."""
        ceiling = self._recorded_latest_id()
        if ceiling is not None and snapshot_id > ceiling:
            return False
        return self.io.is_file(self.snapshot_path(snapshot_id)) and not self._below_earliest(snapshot_id)

    def _below_earliest(self, snapshot_id: int) -> bool:
        hint = self._read_hint(EARLIEST)
        if hint is None or snapshot_id >= hint:
            return False
        return self.io.is_file(self.snapshot_path(hint))

    def snapshot(self, snapshot_id: int, *, expired: bool = False) -> Snapshot:
        """Snapshot ``snapshot_id``; NoSuchSnapshotError when its file is gone or it is below EARLIEST
        (an expiry has claimed it), unless ``expired`` (for the expiry that finishes it)."""
        path = self.snapshot_path(snapshot_id)
        if not expired and self._below_earliest(snapshot_id):
            raise NoSuchSnapshotError(
                f"snapshot {snapshot_id} has expired: it is below the earliest snapshot "
                f"{self._read_hint(EARLIEST)} ({path} is left by an interrupted expiry)"
            )
        try:
            data = self.io.read_bytes(path)
        except FileNotFoundError as e:
            raise NoSuchSnapshotError(f"snapshot {snapshot_id} does not exist ({path})") from e
        return decode_snapshot(data, name=path)

    def latest(self) -> Snapshot | None:
        """The latest snapshot, read without the EARLIEST hint: the latest is never below it (expiry
        keeps at least one snapshot, and writes LATEST at or above the EARLIEST it moves to before
        it deletes anything, so a stale LATEST never points below EARLIEST at a snapshot whose
        successor an expiry deleted)."""
        if self.catalog_env is not None:
            known, snapshot = self.catalog_env.latest_snapshot(self.table_root)
            if known:
                return snapshot
        sid = self._latest_id_of_files()
        return None if sid is None else self.snapshot(sid, expired=True)

    def read_if_present(self, snapshot_id: int) -> Snapshot | None:
        """Snapshot ``snapshot_id`` in one GET, None when its file is missing; EARLIEST is not consulted
        (a snapshot read whole is what it was when published, expired or not)."""
        path = self.snapshot_path(snapshot_id)
        try:
            data = self.io.read_bytes(path)
        except FileNotFoundError:
            return None
        return decode_snapshot(data, name=path)

    def published_after(self, known_id: int, *, limit: int = WALK_LIMIT) -> list[Snapshot] | None:
        """The snapshots published after snapshot ``known_id``, ascending, the last one the latest: read
        one GET each from ``known_id + 1`` until one is missing, then the EARLIEST hint (a GET) proves
        the walk did not stop at a gap an expiry left: a snapshot is deleted only after EARLIEST has
        moved past it, so EARLIEST at or below the last snapshot found means the missing one was
        never published. None when EARLIEST is past it, or when more than ``limit`` snapshots follow
        ``known_id`` (ask :meth:`latest` instead)."""
        known, recorded = self._recorded()
        if known:  # the catalog's record, never the files beyond it
            return self._recorded_after(known_id, recorded, limit)
        out: list[Snapshot] = []
        while (snapshot := self.read_if_present(known_id + len(out) + 1)) is not None:
            out.append(snapshot)
            if len(out) > limit:
                return None
        last = known_id + len(out)
        hint = self._read_hint(EARLIEST)
        return None if hint is not None and hint > last else out

    def _recorded_after(self, known_id: int, latest: Snapshot | None, limit: int) -> list[Snapshot] | None:
        """``published_after`` for a table whose catalog records its latest snapshot (``latest``): the
        snapshots from ``known_id + 1`` up to that one; None when the record is not ahead of
        ``known_id`` in a way the files can show (it went back: a rollback; or one is missing)."""
        top = 0 if latest is None else latest.id
        if top == known_id:
            return []
        if top < known_id or top - known_id > limit:
            return None
        out = [self.read_if_present(i) for i in range(known_id + 1, top)]
        found = [s for s in out if s is not None]
        if len(found) != len(out):
            return None
        assert latest is not None
        return [*found, latest]

    def latest_after(self, known: Snapshot | None) -> Snapshot | None:
        """The latest snapshot, found from ``known`` (a snapshot read earlier, None: the table had none)
        by :meth:`published_after`: two GETs when nothing was published since, one more per snapshot
        that was; :meth:`latest` when an expiry got past ``known``."""
        newer = self.published_after(known.id if known is not None else 0)
        if newer is None:
            return self.latest()
        return newer[-1] if newer else known

    def earliest(self) -> Snapshot | None:
        """The earliest snapshot (it is EARLIEST, or the smallest listed when there is no hint)."""
        sid = self.earliest_id()
        return None if sid is None else self.snapshot(sid, expired=True)

    def earlier_or_equal_time_millis(self, millis: int) -> Snapshot | None:
        """The newest snapshot committed at or before ``millis`` (epoch ms), None if all are newer."""
        for sid in reversed(self.snapshot_ids()):
            snapshot = self.snapshot(sid)
            if snapshot.time_millis <= millis:
                return snapshot
        return None

    def later_or_equal_time_millis(self, millis: int) -> Snapshot | None:
        """The oldest snapshot committed at or after ``millis`` (epoch ms), by binary search over the ids
        as Paimon's laterOrEqualTimeMills; None if all are older."""
        low, high = self.earliest_id(), self.latest_id()
        if low is None or high is None or self.snapshot(high).time_millis < millis:
            return None
        found = None
        while low <= high:
            mid = (low + high) // 2
            snapshot = self.snapshot(mid)
            if snapshot.time_millis > millis:
                high, found = mid - 1, snapshot
            elif snapshot.time_millis < millis:
                low = mid + 1
            else:
                return snapshot
        return found

    def earlier_or_equal_watermark(self, watermark: int) -> Snapshot | None:
        """Paimon's earlierOrEqualWatermark over watermarks that only grow: the newest snapshot whose
        watermark is at most ``watermark`` (snapshots without one, or with Java's Long.MIN_VALUE
        placeholder, skipped); None when there is none -- also when every watermark is later, where
        Paimon before apache/paimon#9037 returned the first snapshot with one, newer than asked for."""
        found = None
        for sid in self.snapshot_ids():
            snapshot = self.snapshot(sid)
            mark = snapshot.watermark
            if mark is None or mark == _NO_WATERMARK:
                continue
            if mark > watermark:
                break
            found = snapshot
        return found

    def later_or_equal_watermark(self, watermark: int) -> Snapshot | None:
        """The oldest snapshot whose watermark is at least ``watermark`` (snapshots without one, or with
        Java's Long.MIN_VALUE placeholder, skipped); None if there is none."""
        for sid in self.snapshot_ids():
            snapshot = self.snapshot(sid)
            mark = snapshot.watermark
            if mark is not None and mark != _NO_WATERMARK and mark >= watermark:
                return snapshot
        return None

    # -- publishing
    def try_publish(
        self, snapshot: Snapshot, delta: Sequence[ManifestEntry] = (), base: Snapshot | None = None
    ) -> bool:
        """Create `snapshot-<id>` only if absent; False when another commit claimed the id first.

        As in Java's RenamingSnapshotCommit, an existing file whose bytes equal this snapshot
        (a retried publish of the same commit) counts as success. A table whose catalog publishes
        its commits (``catalog_env``, the REST catalog) sends the snapshot there instead, with the
        snapshot's ``delta`` entries (the catalog keeps per-partition statistics from them) and the
        uuid of ``base``, the latest snapshot the commit was built on.
        """
        return self.publish_or_read(snapshot, delta, base)[0]

    def publish_or_read(
        self, snapshot: Snapshot, delta: Sequence[ManifestEntry] = (), base: Snapshot | None = None
    ) -> tuple[bool, Snapshot | None]:
        """``try_publish``, and when the id was taken, the snapshot that holds it (None if it is gone
        again, or the catalog published it): the GET that compares the bytes reads it anyway."""
        if self.catalog_env is not None:
            base_uuid = base.uuid if base is not None else None
            return self.catalog_env.commit_snapshot(self.table_root, snapshot, delta, base_uuid), None
        path = self.snapshot_path(snapshot.id)
        data = encode_snapshot(snapshot).encode("utf-8")
        if self.io.write_if_absent(path, data):
            return True, None
        try:
            found = self.io.read_bytes(path)
        except FileNotFoundError:
            return False, None
        if found == data:
            return True, None
        return False, decode_snapshot(found, name=path)

    def write_latest_hint(self, snapshot_id: int) -> None:
        self._write_hint(LATEST, snapshot_id)

    def write_earliest_hint(self, snapshot_id: int) -> None:
        self._write_hint(EARLIEST, snapshot_id)

    def _write_hint(self, hint: str, snapshot_id: int) -> None:
        path = self.hint_path(hint)
        for attempt in range(_HINT_ATTEMPTS):
            try:
                self.io.overwrite_hint(path, str(snapshot_id))
                return
            except OSError:
                if attempt + 1 == _HINT_ATTEMPTS:
                    raise
                time.sleep(0.05 * (attempt + 1))
