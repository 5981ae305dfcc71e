"""Dynamic-bucket assignment (Java's ``HashBucketAssigner``/``PartitionIndex``), vectorized per batch.

A partition's index maps key hashes to buckets (sorted numpy arrays, searched with ``searchsorted``).
A known hash keeps its bucket; new hashes, in arrival order, fill the owned buckets whose row count is
below ``dynamic-bucket.target-row-num`` (lowest id first), then open the lowest unused owned bucket id,
and once ``dynamic-bucket.max-buckets`` is reached go to a random owned bucket. As in Java, buckets are
owned by assigners (``bucket % num_assigners == assigner``) and a record's assigner is computed from the
partition and key hashes; a single writer runs ``dynamic-bucket.initial-buckets`` assigners (default 1),
which is what makes a fresh partition start with that many buckets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from lsmlake.core.options import CoreOptions
from lsmlake.errors import InvalidOptionError, LsmlakeError

Ints = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

SHORT_MAX = 32767  # Java stores buckets as shorts in the index map


@dataclass(frozen=True)
class AssignerConfig:
    """The dynamic-bucket options a writer assigns with."""

    target_row_num: int = 2_000_000
    num_assigners: int = 1
    max_buckets: int = -1

    @staticmethod
    def of(options: CoreOptions) -> AssignerConfig:
        target = options.get(CoreOptions.DYNAMIC_BUCKET_TARGET_ROW_NUM)
        initial = options.dynamic_bucket_initial_buckets
        max_buckets = options.get(CoreOptions.DYNAMIC_BUCKET_MAX_BUCKETS)
        if target <= 0:
            raise InvalidOptionError(f"option 'dynamic-bucket.target-row-num' must be > 0, got {target}")
        if initial <= 0:
            raise InvalidOptionError(f"option 'dynamic-bucket.initial-buckets' must be > 0, got {initial}")
        if max_buckets == 0 or max_buckets < -1:
            raise InvalidOptionError(
                f"option 'dynamic-bucket.max-buckets' must be -1 or > 0, got {max_buckets}"
            )
        if max_buckets > 0:
            initial = min(initial, max_buckets)
        return AssignerConfig(target, initial, max_buckets)


def assigner_ids(partition_hash: int, key_hashes: Ints, num_assigners: int) -> Ints:
    """Java ``BucketAssigner.computeAssigner`` with as many channels as assigners."""
    if num_assigners == 1:
        return np.zeros(len(key_hashes), dtype=np.int32)
    start = abs(int(np.fmod(partition_hash, num_assigners)))
    own = np.abs(np.fmod(key_hashes.astype(np.int64), num_assigners))
    return ((start + own) % num_assigners).astype(np.int32)


@dataclass
class _Owner:
    """One assigner's buckets: row counts (all owned buckets) and whether the bucket cap was hit."""

    counts: dict[int, int] = field(default_factory=dict)
    upper_bound_reached: bool = False


class PartitionIndex:
    """Key hash -> bucket of one partition, with per-bucket row counts."""

    def __init__(self, hashes: Ints, buckets: Ints, config: AssignerConfig, *, seed: int = 0) -> None:
        order = np.argsort(hashes, kind="stable")
        self.hashes = hashes[order]
        self.buckets = buckets[order]
        self.config = config
        self._rng = np.random.default_rng(seed)
        self._owners = [_Owner() for _ in range(config.num_assigners)]
        ids, counts = np.unique(buckets, return_counts=True)
        for b, c in zip(ids.tolist(), counts.tolist(), strict=True):
            self._owners[b % config.num_assigners].counts[b] = c

    def lookup(self, hashes: Ints) -> Ints:
        """The bucket of each hash, -1 where the hash is unknown."""
        pos = np.searchsorted(self.hashes, hashes)
        clipped = np.minimum(pos, max(len(self.hashes) - 1, 0))
        hit = (pos < len(self.hashes)) & (self.hashes[clipped] == hashes) if len(self.hashes) else pos < 0
        out = np.full(len(hashes), -1, dtype=np.int32)
        out[hit] = self.buckets[clipped[hit]]
        return out

    def assign(self, key_hashes: Ints, assigners: Ints) -> Ints:
        """The bucket of every row (``key_hashes`` in arrival order); new hashes are added to the index."""
        uniq, first, inverse = np.unique(key_hashes, return_index=True, return_inverse=True)
        result = self.lookup(uniq)
        new = np.flatnonzero(result < 0)
        if len(new):
            new = new[np.argsort(first[new], kind="stable")]  # arrival order
            owners = assigners[first[new]]
            for a in np.unique(owners).tolist():
                chosen = new[owners == a]
                result[chosen] = self._new_buckets(len(chosen), a)
            self._insert(uniq[new], result[new])
        return result[inverse.reshape(-1)]

    def _new_buckets(self, n: int, assigner: int) -> Ints:
        """Buckets for ``n`` new hashes of one assigner, in order (Java ``PartitionIndex.assign``)."""
        owner, cfg = self._owners[assigner], self.config
        out = np.empty(n, dtype=np.int32)
        done = 0
        for b in sorted(owner.counts):  # non-full buckets, lowest id first
            room = cfg.target_row_num - owner.counts[b]
            if room <= 0:
                continue
            take = min(room, n - done)
            out[done : done + take] = b
            owner.counts[b] += take
            done += take
            if done == n:
                return out
        top = (SHORT_MAX if cfg.max_buckets == -1 else cfg.max_buckets) - 1
        candidate = assigner
        while done < n and not owner.upper_bound_reached:
            while candidate in owner.counts:
                candidate += cfg.num_assigners
            if candidate > top:
                if cfg.max_buckets == -1:
                    raise LsmlakeError(
                        f"dynamic bucket: more than {top} buckets needed; increase "
                        f"'dynamic-bucket.target-row-num' ({cfg.target_row_num})"
                    )
                owner.upper_bound_reached = True
                break
            take = min(cfg.target_row_num, n - done)
            out[done : done + take] = candidate
            owner.counts[candidate] = take
            done += take
        if done < n:
            existing = np.array(sorted(owner.counts), dtype=np.int32)
            if not len(existing):
                raise LsmlakeError("dynamic bucket: no bucket is available to this assigner")
            out[done:] = self._rng.choice(existing, n - done)
        return out

    def _insert(self, hashes: Ints, buckets: Ints) -> None:
        order = np.argsort(hashes, kind="stable")
        hashes, buckets = hashes[order], buckets[order]
        pos = np.searchsorted(self.hashes, hashes)
        self.hashes = np.insert(self.hashes, pos, hashes)
        self.buckets = np.insert(self.buckets, pos, buckets)
