"""Pytest configuration for interop tests against the pypaimon oracle."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    # Lets test modules `import pypaimon_env` under any pytest import mode.
    sys.path.insert(0, _HERE)
