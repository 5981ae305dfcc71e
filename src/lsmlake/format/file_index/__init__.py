"""Paimon's per-data-file indexes: the index container, bloom filter, bitmap and bit-slice (BSI) indexes."""
