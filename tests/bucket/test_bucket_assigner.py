"""Dynamic-bucket assignment (Java ``PartitionIndex`` rules), HASH index files and their commit checks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from lsmlake.bucket.assigner import AssignerConfig, PartitionIndex, assigner_ids
from lsmlake.commit.hash_index_conflicts import hash_index_conflicts
from lsmlake.core.options import CoreOptions
from lsmlake.errors import CorruptFileError, InvalidOptionError
from lsmlake.metadata.hash_index import decode_hash_index, encode_hash_index
from lsmlake.metadata.index_manifest import HASH_INDEX, IndexFileMeta, IndexManifestEntry
from lsmlake.metadata.manifest import FileKind


def index(
    target: int,
    *,
    assigners: int = 1,
    max_buckets: int = -1,
    hashes: Sequence[int] = (),
    buckets: Sequence[int] = (),
) -> PartitionIndex:
    config = AssignerConfig(target, assigners, max_buckets)
    return PartitionIndex(np.array(hashes, np.int32), np.array(buckets, np.int32), config)


def assign(idx: PartitionIndex, hashes: list[int], assigners: list[int] | None = None) -> list[int]:
    h = np.array(hashes, np.int32)
    owners = np.zeros(len(h), np.int32) if assigners is None else np.array(assigners, np.int32)
    return [int(b) for b in idx.assign(h, owners)]


def test_new_keys_fill_buckets_up_to_the_target_and_known_keys_keep_theirs() -> None:
    idx = index(3)
    assert assign(idx, [10, 11, 12, 13, 10, 14]) == [0, 0, 0, 1, 0, 1]
    assert assign(idx, [13, 15, 16, 17, 11]) == [1, 1, 2, 2, 0]


def test_loaded_index_counts_existing_keys_and_fills_non_full_buckets_lowest_first() -> None:
    idx = index(2, hashes=[1, 2, 3, 7], buckets=[0, 0, 2, 1])
    # bucket 0 is full; bucket 1 and 2 have room for one key each; then bucket 3 opens
    assert assign(idx, [3, 50, 51, 52, 1]) == [2, 1, 2, 3, 0]


def test_assigners_own_buckets_modulo_their_count() -> None:
    idx = index(1, assigners=2)
    got = assign(idx, [5, 6, 7, 8], assigners=[0, 1, 0, 1])
    assert got == [0, 1, 2, 3]
    assert all(b % 2 == a for b, a in zip(got, [0, 1, 0, 1], strict=True))


def test_max_buckets_sends_overflow_to_existing_buckets() -> None:
    idx = index(1, max_buckets=2)
    got = assign(idx, list(range(100)))
    assert got[:2] == [0, 1] and set(got[2:]) <= {0, 1}
    again = assign(idx, list(range(100)))
    assert again == got  # once assigned, a key stays put


def test_assigner_ids_follow_java_compute_assigner() -> None:
    hashes = np.array([0, 1, -1, 7, -8, 2**31 - 1, -(2**31)], np.int32)
    n, partition_hash = 3, -5
    start = abs(int(np.fmod(partition_hash, n)))
    expected = [(start + abs(int(np.fmod(int(h), n)))) % n for h in hashes]
    assert assigner_ids(partition_hash, hashes, n).tolist() == expected


def test_assigner_config_validates_options() -> None:
    opts = CoreOptions.of(
        {"dynamic-bucket.initial-buckets": "4", "dynamic-bucket.max-buckets": "2"}, primary_key_table=True
    )
    assert AssignerConfig.of(opts) == AssignerConfig(2_000_000, 2, 2)
    for bad in ({"dynamic-bucket.target-row-num": "0"}, {"dynamic-bucket.max-buckets": "0"}):
        with pytest.raises(InvalidOptionError):
            AssignerConfig.of(CoreOptions.of(bad, primary_key_table=True))


def test_hash_index_file_is_big_endian_int32s() -> None:
    hashes = np.array([1, -1, 2**31 - 1, -(2**31)], np.int32)
    data = encode_hash_index(hashes)
    assert data[:8] == b"\x00\x00\x00\x01\xff\xff\xff\xff"
    np.testing.assert_array_equal(decode_hash_index(data), hashes)
    with pytest.raises(CorruptFileError):
        decode_hash_index(data[:-1])


def _hash(partition: bytes, bucket: int, name: str, kind: FileKind = FileKind.ADD) -> IndexManifestEntry:
    return IndexManifestEntry(kind, partition, bucket, IndexFileMeta(HASH_INDEX, name, 8, 2))


def test_hash_index_conflicts_only_for_partitions_re_indexed_by_someone_else() -> None:
    base = [_hash(b"p1", 0, "a"), _hash(b"p2", 0, "b")]
    changes = [_hash(b"p1", 0, "new")]
    assert hash_index_conflicts(base, base, changes) == []
    other_partition = [_hash(b"p1", 0, "a"), _hash(b"p2", 0, "b2")]
    assert hash_index_conflicts(base, other_partition, changes) == []
    same_partition_new_bucket = [*base, _hash(b"p1", 1, "c")]
    (problem,) = hash_index_conflicts(base, same_partition_new_bucket, changes)
    assert "bucket(s) [1] of a partition" in problem  # bucket numbers, not index file names
    replaced = [_hash(b"p1", 0, "a2"), _hash(b"p2", 0, "b")]
    assert "bucket(s) [0] of a partition" in hash_index_conflicts(base, replaced, changes)[0]
