"""Merge engines: one vectorized class per Paimon ``merge-engine``, all behind ``MergeFunction``."""
