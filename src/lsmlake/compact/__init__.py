"""Compaction of one bucket: rewrite, lookup -> deletion vectors, compaction changelog."""
