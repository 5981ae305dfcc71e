"""Benchmarks of lsmlake against a baseline measured in the same run."""
