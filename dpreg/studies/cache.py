"""Per-cell cache of replication rows, so that an interrupted study resumes.

Layout: ``<cache_dir>/<study>/<first 20 hex digits of the cell key>/`` holds
``cell.json`` (what the cell is) and one file per finished chunk of replications,
``reps-<start>-<stop>.parquet`` (CSV when pyarrow is missing). Files are written to a
temporary name and renamed, so a killed run never leaves half a chunk. The key hashes
everything that determines the numbers except the number of replications, so asking for
more replications later reuses the ones already computed.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import pandas as pd

from dpreg.studies.spec import Cell

__all__ = ["CellCache"]

_CHUNK = re.compile(r"^reps-(\d+)-(\d+)\.(parquet|csv)$")


def _parquet_ok() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


class CellCache:
    """The cached replications of one cell.

    Parameters
    ----------
    root : str or Path
        The study cache folder (``cache_dir`` of :func:`dpreg.studies.run_replicates`).
    cell : Cell
    """

    def __init__(self, root, cell: Cell):
        self.cell = cell
        self.path = Path(root) / cell.study / cell.key[:20]
        self._ext = "parquet" if _parquet_ok() else "csv"

    def _chunks(self) -> list[tuple[int, int, Path]]:
        if not self.path.is_dir():
            return []
        out = []
        for f in self.path.iterdir():
            m = _CHUNK.match(f.name)
            if m:
                out.append((int(m.group(1)), int(m.group(2)), f))
        return sorted(out)

    def done(self, reps: int) -> set[int]:
        """Replications below ``reps`` already in the cache."""
        have = set()
        for start, stop, _ in self._chunks():
            have.update(range(start, min(stop, reps)))
        return have

    def load(self, reps: int) -> pd.DataFrame | None:
        """Cached rows of replications ``0 .. reps - 1`` (``None`` if there are none)."""
        frames, seen = [], set()
        for start, _stop, f in self._chunks():
            if start >= reps:
                continue
            frame = pd.read_parquet(f) if f.suffix == ".parquet" else pd.read_csv(f)
            # a replication computed twice (two runs at once) is the same numbers: keep one
            frame = frame[(frame["rep"] < reps) & ~frame["rep"].isin(seen)]
            seen.update(frame["rep"].unique().tolist())
            frames.append(frame)
        if not frames:
            return None
        return pd.concat(frames, ignore_index=True)

    def save(self, start: int, stop: int, frame: pd.DataFrame) -> Path:
        """Write the rows of replications ``start .. stop - 1`` atomically."""
        self.path.mkdir(parents=True, exist_ok=True)
        meta = self.path / "cell.json"
        if not meta.exists():
            _atomic_text(meta, json.dumps(self.cell.describe(), indent=2))
        target = self.path / f"reps-{start:07d}-{stop:07d}.{self._ext}"
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".tmp-", suffix=f".{self._ext}")
        os.close(fd)
        try:
            if self._ext == "parquet":
                frame.to_parquet(tmp, index=False)
            else:
                frame.to_csv(tmp, index=False)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return target


def _atomic_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
