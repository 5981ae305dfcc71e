"""Streaming and incremental reads: where a stream starts, which snapshots follow, change rows."""
