"""Bucket routing: fixed, dynamic (HASH index), cross-partition and postpone modes."""
