"""Engine integrations over the Table facade: Polars lazy frames and DuckDB scans with pushdown."""
