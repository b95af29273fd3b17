"""Your own TSPLIB / CVRPLIB files into the routing API, read with ``vrplib`` (the ``routing`` extra).

:func:`read_tsp` returns the coordinates as one instance ``[1, n, 2]`` (what :func:`greedy_construct`,
:func:`multi_start_construct`, :func:`tour_length` and the baselines take) with the file's distance
convention: TSPLIB's ``EUC_2D`` is the nint distance (``rounding="nint_half_up"``), ``CEIL_2D`` and
explicit matrices are refused by name rather than scored with the wrong metric. :func:`read_tour` reads a
``.tour`` / ``.opt.tour`` file as a 0-based permutation ``[1, n]`` (its own small parser: vrplib reads
CVRPLIB ``.sol`` routes, not TSPLIB tours).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..constraints import Instance, Int, Optional, validate
from .tsp import as_instances, check_tours

__all__ = ["TSPFile", "read_tour", "read_tsp"]

#: TSPLIB edge-weight types and the ``rounding`` of :func:`tour_length` that reproduces them
_ROUNDING_OF = {"EUC_2D": "nint_half_up"}


@dataclass(frozen=True)
class TSPFile:
    """A TSPLIB instance: ``X`` float64 ``[1, n, 2]``, its ``rounding`` for :func:`tour_length`, the raw header."""

    name: str
    X: np.ndarray
    rounding: str
    edge_weight_type: str
    header: dict[str, Any]

    @property
    def n(self) -> int:
        return int(self.X.shape[1])


def _vrplib():
    try:
        import vrplib
    except ImportError as err:
        raise ImportError("reading TSPLIB/CVRPLIB files needs vrplib: pip install -e '.[routing]'") from err
    return vrplib


_PATH = Instance((str, Path), "file path (str or Path)")


def _path(path: str | Path, name: str = "path") -> Path:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{name}: no such file: {p}")
    return p


@validate(path=_PATH)
def read_tsp(path: str | Path) -> TSPFile:
    """Read a TSPLIB ``.tsp`` file with 2-D node coordinates (``EUC_2D``; other types are refused by name)."""
    p = _path(path)
    try:
        data = _vrplib().read_instance(str(p), instance_format="vrplib", compute_edge_weights=False)
    except Exception as err:  # vrplib raises assorted errors on malformed files
        raise ValueError(f"{p}: not a readable TSPLIB file ({type(err).__name__}: {err})") from err
    kind = str(data.get("edge_weight_type", "")).upper()
    if kind not in _ROUNDING_OF:
        raise ValueError(f"{p}: EDGE_WEIGHT_TYPE {kind or '(missing)'} is not supported; the routing models take "
                         f"2-D coordinates with one of {sorted(_ROUNDING_OF)}")
    coords = data.get("node_coord")
    if coords is None:
        raise ValueError(f"{p}: no NODE_COORD_SECTION")
    X = as_instances(np.asarray(coords, dtype=np.float64)[None], name=f"{p.name} coordinates")
    header = {k: v for k, v in data.items() if np.ndim(v) == 0}
    return TSPFile(name=str(data.get("name", p.stem)), X=X, rounding=_ROUNDING_OF[kind], edge_weight_type=kind,
                   header=header)


@validate(path=_PATH, n=Optional(Int(low=1)))
def read_tour(path: str | Path, n: int | None = None) -> np.ndarray:
    """Read a TSPLIB tour file (``TOUR_SECTION``: 1-based node ids, ended by ``-1`` or ``EOF``) as int64
    ``[1, n]``, 0-based; ``n`` (optional) is the instance size it must be a permutation of."""
    p = _path(path)
    lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().upper().startswith("TOUR_SECTION"))
    except StopIteration:
        raise ValueError(f"{p}: no TOUR_SECTION (not a TSPLIB tour file)") from None
    ids: list[int] = []
    for line in lines[start + 1:]:
        tokens = line.split()
        if tokens and tokens[0].upper() == "EOF":
            break
        try:
            values = [int(t) for t in tokens]
        except ValueError:
            raise ValueError(f"{p}: TOUR_SECTION holds a non-integer line: {line.strip()!r}") from None
        if -1 in values:
            ids += values[:values.index(-1)]
            break
        ids += values
    if not ids:
        raise ValueError(f"{p}: TOUR_SECTION is empty")
    tour = np.asarray(ids, dtype=np.int64) - 1
    return check_tours(tour[None], 1, len(tour) if n is None else int(n), name=f"{p.name} tour")
