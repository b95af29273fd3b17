"""Synthetic egocentric clutter grounding (the spec's stand-in for Ego4D / EgoIntention; inferred design).

A scene is an RGB image in [0, 1] (``size``², 128 by default): Gaussian-smoothed noise, 20–40 clutter
shapes (discs and rectangles of random muted colours), in half of the scenes a skin-coloured "hand" blob
at the bottom, and 3–6 coloured digit glyphs (scikit-learn's bundled 8×8 digits, upsampled). The query is
(digit, colour) of a target that is unique in its scene; every distractor shares the digit *or* the colour
(the "misleading mention" of EgoIntention). Half of the targets are small (6–10 px at 128², about
0.3–0.6 % of the area), half medium (14–20 px); sizes scale with ``size / 128``.

Scene ``i`` is drawn from ``numpy.random.default_rng([seed, i])``: the same ``(seed, i)`` gives the same
scene, and train / test sets use different seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from scipy import ndimage
from torch import Tensor

from neurips26.constraints import Int, Real, validate

from ._checks import GRID, Boxes

#: object colours (RGB in [0, 1]); the query's colour id indexes this table
COLOURS = np.array([[0.90, 0.10, 0.10], [0.10, 0.80, 0.15], [0.15, 0.30, 0.95], [0.95, 0.85, 0.10]])
COLOUR_NAMES = ("red", "green", "blue", "yellow")
N_DIGITS, N_COLOURS = 10, len(COLOURS)
SKIN = np.array([0.87, 0.67, 0.55])


@lru_cache(maxsize=1)
def _glyphs() -> tuple[np.ndarray, np.ndarray]:
    from neurips26.data import load_digits

    x, y = load_digits()
    return (x.reshape(-1, 8, 8) / 16.0).astype(np.float32), y.astype(np.int64)


@lru_cache(maxsize=1)
def _by_digit() -> tuple[np.ndarray, ...]:
    _, labels = _glyphs()
    return tuple(np.flatnonzero(labels == d) for d in range(N_DIGITS))


@dataclass(frozen=True)
class Scene:
    """One scene: ``image [3, S, S]`` float32, ``box [4]`` (x1, y1, x2, y2, pixels), ``query`` (digit, colour),
    ``small`` (target of the small kind)."""

    image: Tensor
    box: Tensor
    query: Tensor
    small: bool
    #: every object placed, target first: ``[n_obj, 6]`` (x1, y1, x2, y2, digit, colour)
    objects: Tensor | None = None


def _paste_glyph(img: np.ndarray, glyph: np.ndarray, colour: np.ndarray, x: int, y: int, s: int) -> None:
    alpha = np.clip(ndimage.zoom(glyph, s / 8.0, order=1), 0, 1)[:s, :s]
    alpha = np.clip(alpha * 1.4, 0, 1)[..., None]                                    # bolder strokes
    patch = img[y:y + s, x:x + s]
    img[y:y + s, x:x + s] = patch * (1 - alpha) + colour * alpha


def _free(boxes: list[tuple[int, int, int]], x: int, y: int, s: int, gap: int) -> bool:
    return all(x + s + gap <= bx or bx + bs + gap <= x or y + s + gap <= by or by + bs + gap <= y
               for bx, by, bs in boxes)


def make_scene(rng: np.random.Generator, size: int = 128, small: bool = False) -> Scene:
    """Draw one scene from ``rng`` (see the module docstring)."""
    glyphs, _ = _glyphs()
    f = size / 128.0
    # background: smoothed noise, mid-grey, low contrast
    img = ndimage.gaussian_filter(rng.random((size, size, 3), dtype=np.float32), sigma=(3 * f, 3 * f, 0),
                                  truncate=2.5) * 0.5 + 0.25
    for _ in range(int(rng.integers(20, 41))):                                       # clutter shapes
        c = rng.random(3) * 0.5 + 0.2
        cx, cy, r = rng.random() * size, rng.random() * size, (2 + rng.random() * 6) * f
        x0, x1 = max(0, int(cx - r)), min(size, int(cx + r) + 1)
        y0, y1 = max(0, int(cy - r)), min(size, int(cy + r) + 1)
        if x1 <= x0 or y1 <= y0:
            continue
        yy, xx = np.mgrid[y0:y1, x0:x1]
        if rng.random() < 0.5:
            m = (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
        else:
            m = (np.abs(xx - cx) < r) & (np.abs(yy - cy) < r * (0.3 + rng.random()))
        win = img[y0:y1, x0:x1]
        win[m] = win[m] * 0.4 + c * 0.6
    if rng.random() < 0.5:                                                           # a "hand" at the bottom
        cx, r = rng.random() * size, (12 + rng.random() * 10) * f
        y0 = max(0, int(size - 1.6 * r))
        yy, xx = np.mgrid[y0:size, 0:size]
        m = ((xx - cx) / r) ** 2 + ((yy - size) / (1.6 * r)) ** 2 < 1
        img[y0:][m] = SKIN
    # objects: the target (digit t, colour c) and 2-5 distractors sharing the digit or the colour
    t, c = int(rng.integers(N_DIGITS)), int(rng.integers(N_COLOURS))
    objects = [(t, c)]
    for _ in range(int(rng.integers(2, 6))):
        if rng.random() < 0.5:
            objects.append((t, int((c + rng.integers(1, N_COLOURS)) % N_COLOURS)))
        else:
            objects.append((int((t + rng.integers(1, N_DIGITS)) % N_DIGITS), c))
    lo, hi = (6, 10) if small else (14, 20)
    placed: list[tuple[int, int, int]] = []
    attrs: list[tuple[int, int]] = []
    for k, (digit, colour) in enumerate(objects):
        s = max(3, int(round(rng.integers(lo, hi + 1) * f))) if k == 0 else max(3, int(round(rng.integers(6, 21) * f)))
        for _ in range(50):
            x, y = int(rng.integers(0, size - s + 1)), int(rng.integers(0, size - s + 1))
            if _free(placed, x, y, s, gap=2):
                break
        else:
            if k == 0:
                raise RuntimeError("could not place the target")                     # pragma: no cover
            continue
        placed.append((x, y, s))
        attrs.append((digit, colour))
        idx = rng.choice(_by_digit()[digit])
        _paste_glyph(img, glyphs[idx], COLOURS[colour], x, y, s)
    x, y, s = placed[0]
    image = torch.from_numpy(np.ascontiguousarray(np.clip(img, 0, 1).transpose(2, 0, 1))).float()
    objs = torch.tensor([[px, py, px + ps, py + ps, d, col] for (px, py, ps), (d, col) in zip(placed, attrs)],
                        dtype=torch.float32)
    return Scene(image, torch.tensor([x, y, x + s, y + s], dtype=torch.float32), torch.tensor([t, c]), small, objs)


class SyntheticEgoGrounding(torch.utils.data.Dataset):
    """``n`` seeded clutter-grounding scenes; item ``i`` is a dict with ``image [3, S, S]``, ``box [4]``,
    ``query [2]`` (digit, colour) and ``small`` (bool).

    Args:
        n: number of scenes (>= 1).
        size: image side in pixels (a multiple of 16, >= 32).
        small_frac: share of scenes whose target is small (scene i is small iff i < round(n * small_frac)
            after a seeded shuffle).
        seed: the seed of the scene generator (use different seeds for train and test).
    """

    @validate(n=Int(low=1), size=Int(low=32), small_frac=Real(low=0.0, high=1.0), seed=Int(low=0))
    def __init__(self, n: int, size: int = 128, small_frac: float = 0.5, seed: int = 0) -> None:
        if size % 16:
            raise ValueError(f"SyntheticEgoGrounding: size must be a multiple of 16, got {size}")
        self.n, self.size, self.small_frac, self.seed = int(n), int(size), float(small_frac), int(seed)
        order = np.random.default_rng([seed, 2**31 - 1]).permutation(n)
        self._small = order < int(round(n * self.small_frac))

    def __len__(self) -> int:
        return self.n

    def scene(self, i: int) -> Scene:
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not -self.n <= i < self.n:
            raise IndexError(f"index must be an int in [0, {self.n}), got {i!r}")
        i = int(i) % self.n
        return make_scene(np.random.default_rng([self.seed, i]), self.size, bool(self._small[i]))

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        s = self.scene(i)
        return {"image": s.image, "box": s.box, "query": s.query, "small": torch.tensor(s.small)}

    def batch(self, indices) -> dict[str, Tensor]:
        """Stack scenes ``indices`` into one batch: ``image [B, 3, S, S]``, ``box [B, 4]``, ``query [B, 2]``,
        ``small [B]``."""
        if isinstance(indices, str) or not hasattr(indices, "__iter__"):
            raise TypeError(f"indices must be a sequence of scene indices, got {type(indices).__name__}")
        items = [self[i if isinstance(i, int | np.integer) else int(i)] for i in indices]
        if not items:
            raise ValueError("indices must hold at least one scene index, got none")
        return {k: torch.stack([it[k] for it in items]) for k in items[0]}


@validate(boxes=Boxes("N 4"), image_size=Int(low=1), region_grid=GRID)
def region_labels(boxes: Tensor, image_size: int, region_grid: tuple[int, int]) -> Tensor:
    """Router targets ``[B, gh·gw]`` (bool, raster order): region j is foreground iff it overlaps the box
    with positive area; the region holding the box centre is always foreground (inferred rule)."""
    gh, gw = int(region_grid[0]), int(region_grid[1])
    rh, rw = image_size / gh, image_size / gw
    ys = torch.arange(gh, dtype=boxes.dtype) * rh
    xs = torch.arange(gw, dtype=boxes.dtype) * rw
    ox = (torch.minimum(boxes[:, None, 2], xs[None] + rw) - torch.maximum(boxes[:, None, 0], xs[None])) > 0  # [B, gw]
    oy = (torch.minimum(boxes[:, None, 3], ys[None] + rh) - torch.maximum(boxes[:, None, 1], ys[None])) > 0  # [B, gh]
    fg = (oy[:, :, None] & ox[:, None, :]).reshape(len(boxes), gh * gw)
    cx = ((boxes[:, 0] + boxes[:, 2]) / 2 / rw).floor().clamp(0, gw - 1).long()
    cy = ((boxes[:, 1] + boxes[:, 3]) / 2 / rh).floor().clamp(0, gh - 1).long()
    fg[torch.arange(len(boxes)), cy * gw + cx] = True
    return fg
