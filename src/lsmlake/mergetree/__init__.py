"""The merge tree: key-value layout, levels, interval partition, compaction policy, merge engines, lookup."""
