"""A PNG picture of a table's LSM shape: per bucket, the bytes and file count in each level."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lsmlake.errors import LsmlakeError


def render_levels_png(per_level: pa.Table, path: str | Path, *, title: str) -> None:
    """Draw ``per_level`` (partition, bucket, level, files, records, bytes rows) as one bar row per bucket."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # optional: the `png` extra
        raise LsmlakeError(
            "--png needs matplotlib, which the 'png' extra installs: pip install '.[png]' in an lsmlake "
            "checkout (or pip install matplotlib)"
        ) from None
    rows = per_level.to_pylist()
    for r in rows:
        r["partition"] = "" if r["partition"] in (None, "{}") else r["partition"]
    buckets = sorted({(r["partition"], r["bucket"]) for r in rows})
    levels = sorted({r["level"] for r in rows}) or [0]
    fig, ax = plt.subplots(figsize=(10, 0.5 * max(len(buckets), 1) + 1.5))
    left = [0.0] * len(buckets)
    colors = plt.get_cmap("viridis", max(len(levels), 2))
    for li, level in enumerate(levels):
        widths = []
        for b in buckets:
            match = [r for r in rows if (r["partition"], r["bucket"]) == b and r["level"] == level]
            widths.append(sum(r["bytes"] for r in match) / 1024**2)
        ax.barh(
            [f"{p} bucket {b}".strip() for p, b in buckets],
            widths,
            left=left,
            color=colors(li),
            label=f"level {level}",
        )
        left = [a + w for a, w in zip(left, widths, strict=True)]
    ax.set_xlabel("MB of data files")
    ax.set_title(title)
    ax.invert_yaxis()
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
