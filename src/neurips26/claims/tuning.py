"""Equal tuning: every arm of a comparison searched over the same-sized grid, on a validation split.

A baseline run at one learning rate picked on our arm is a handicapped baseline. :func:`tune` searches one
arm's grid; :func:`tune_arms` searches every arm with the same number of configurations and records each
arm's grid, scores and choice in the run record, so a reader sees that the comparison was fair:

    tuned = tune_arms({"ours": (train_eval_ours, {"lr": [1e-3, 3e-3, 1e-2]}),
                       "gru":  (train_eval_gru,  {"lr": [1e-3, 3e-3, 1e-2]})},
                      split="validation", ctx=ctx)
    test_score = final_eval_ours(tuned["ours"].best)      # the test split is read once, after tuning

``train_eval(params, split) -> float`` trains with ``params`` and returns the score on ``split``. The test
split is refused here: choosing on it would leak the result into the choice.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .spec import CheckContext

TrainEval = Callable[[dict[str, Any], str], float]


@dataclass(frozen=True)
class Tuned:
    """One arm's search: the configurations tried (in order), their scores, and the chosen one."""

    arm: str
    grid: tuple[dict[str, Any], ...]
    scores: tuple[float, ...]
    best: dict[str, Any]
    best_score: float
    split: str
    higher_is_better: bool

    def record(self) -> dict[str, Any]:
        return {"arm": self.arm, "split": self.split, "size": len(self.grid), "grid": [dict(g) for g in self.grid],
                "scores": list(self.scores), "best": dict(self.best), "best_score": self.best_score,
                "higher_is_better": self.higher_is_better}


def expand_grid(grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A grid as a list of configurations: a dict ``name -> values`` (cartesian product, in key order) or a
    list of dicts (taken as given)."""
    if isinstance(grid, Mapping):
        if not grid:
            raise ValueError("grid must name at least one parameter")
        names = list(grid)
        for name in names:
            values = grid[name]
            if isinstance(values, str | bytes) or not isinstance(values, Sequence) or len(values) == 0:
                raise ValueError(f"grid[{name!r}] must be a non-empty list of values, got {values!r}")
        return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]
    if isinstance(grid, Sequence) and not isinstance(grid, str | bytes) and grid:
        if not all(isinstance(g, Mapping) for g in grid):
            raise TypeError("grid as a list must hold dicts of parameters")
        return [dict(g) for g in grid]
    raise ValueError(f"grid must be a dict name -> values or a non-empty list of dicts, got {grid!r}")


def _check_split(split: str) -> str:
    if not isinstance(split, str) or not split:
        raise ValueError(f"split must be a non-empty string, got {split!r}")
    if split.lower() == "test":
        raise ValueError("split='test' is refused: tune on a validation split, then evaluate the chosen "
                         "configuration on the test split once")
    return split


def _subset(configs: list[dict[str, Any]], budget: int | None, seed: int) -> list[dict[str, Any]]:
    if budget is None:
        return configs
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be a positive int (configurations per arm), got {budget!r}")
    if budget >= len(configs):
        return configs
    keep = sorted(np.random.default_rng(seed).choice(len(configs), size=budget, replace=False).tolist())
    return [configs[i] for i in keep]


def tune(train_eval: TrainEval, grid: Any, *, arm: str, split: str = "validation", budget: int | None = None,
         higher_is_better: bool = True, seed: int = 0, ctx: CheckContext | None = None) -> Tuned:
    """Search one arm's ``grid`` on ``split`` and return the best configuration (first of ties).

    Args:
        train_eval: ``train_eval(params, split) -> float`` (a finite score).
        grid: see :func:`expand_grid`. ``budget`` caps the configurations tried by a seeded subset.
        ctx: when given, the search is added to the run record (``record["tuning"]``).
    """
    if not callable(train_eval):
        raise TypeError(f"train_eval must be callable, got {type(train_eval).__name__}")
    if not isinstance(arm, str) or not arm:
        raise ValueError(f"arm must be a non-empty name, got {arm!r}")
    split = _check_split(split)
    configs = _subset(expand_grid(grid), budget, seed)
    scores = []
    for params in configs:
        score = train_eval(dict(params), split)
        if isinstance(score, bool) or not isinstance(score, int | float | np.number) or not math.isfinite(score):
            raise ValueError(f"train_eval({params}) on {split!r} for arm {arm!r} must return a finite number, "
                             f"got {score!r}")
        scores.append(float(score))
    pick = int(np.argmax(scores) if higher_is_better else np.argmin(scores))
    result = Tuned(arm, tuple(configs), tuple(scores), dict(configs[pick]), scores[pick], split, bool(higher_is_better))
    if ctx is not None:
        ctx.tuning.append(result.record())
    return result


def tune_arms(arms: Mapping[str, tuple[TrainEval, Any]], *, split: str = "validation", budget: int | None = None,
              higher_is_better: bool = True, seed: int = 0, ctx: CheckContext | None = None) -> dict[str, Tuned]:
    """Tune every arm of a comparison with the same number of configurations (see the module docstring).

    ``arms`` maps an arm's name to ``(train_eval, grid)``. Grids of different sizes (after ``budget``) are
    refused before anything trains: an arm searched over more settings has an advantage of its own.
    """
    if not isinstance(arms, Mapping) or len(arms) < 2:
        raise ValueError(f"arms must map at least two arm names to (train_eval, grid), got {arms!r}")
    split = _check_split(split)
    sizes = {}
    for name, spec in arms.items():
        if not (isinstance(spec, tuple) and len(spec) == 2 and callable(spec[0])):
            raise TypeError(f"arms[{name!r}] must be a (train_eval, grid) pair, got {spec!r}")
        sizes[name] = len(_subset(expand_grid(spec[1]), budget, seed))
    if len(set(sizes.values())) != 1:
        raise ValueError(f"every arm must be tuned over the same number of configurations, got {sizes}")
    return {name: tune(fn, grid, arm=name, split=split, budget=budget, higher_is_better=higher_is_better,
                       seed=seed, ctx=ctx) for name, (fn, grid) in arms.items()}


__all__ = ["Tuned", "expand_grid", "tune", "tune_arms"]
