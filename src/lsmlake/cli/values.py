"""Arrow values as the command line prints them: JSON-friendly values and table cells."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any


def plain_value(value: Any) -> Any:
    """A JSON-friendly version of an Arrow value (times as ISO text, decimals as text, bytes as hex)."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return value


def cell_text(value: Any) -> str:
    """One value as a table or CSV cell (NULL for null, JSON for nested values)."""
    if value is None:
        return "NULL"
    plain = plain_value(value)
    return json.dumps(plain, ensure_ascii=False) if isinstance(plain, (dict, list)) else str(plain)
