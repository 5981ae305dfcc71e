"""Paimon's per-table system tables (`t$files`, `t$snapshots`, ...), one module per group."""
