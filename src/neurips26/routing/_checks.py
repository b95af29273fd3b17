"""What routing declares beyond :mod:`neurips26.constraints` (internal): the policy constraint, the coordinates
and decoder-step tensors, and the one value check of a decoder step (finite embeddings, node indices in range)."""

from __future__ import annotations

import functools
from typing import Any

import torch

from .._checks import is_trusted, trusted  # noqa: F401  (re-exported for the package)
from ..constraints import ArgumentTypeError, Constraint, Tensor, check_arguments

#: a policy's coordinates: a finite floating tensor ``[B, n, 2]``
COORDS = Tensor("B n 2", dtype="float")


class Policy(Constraint):
    """A routing policy: an object with ``encode()`` and ``score()``; with ``trainable``, an ``nn.Module`` with
    parameters too (what :func:`train_supervised` and :func:`subpath_loss` need)."""

    def __init__(self, *, trainable: bool = False) -> None:
        self.trainable = trainable
        self.expected = ("a routing policy (an nn.Module with encode() and score())" if trainable
                         else "a routing policy (with encode() and score())")

    def check(self, value: Any, name: str, where: str = "", dims: dict | None = None) -> None:
        prefix = f"{where}: " if where else ""
        ok = hasattr(value, "encode") and hasattr(value, "score")
        if not ok or (self.trainable and not isinstance(value, torch.nn.Module)):
            raise ArgumentTypeError(f"{prefix}{name} must be {self.expected}, got {type(value).__name__}")
        if self.trainable and next(value.parameters(), None) is None:
            raise ValueError(f"{prefix}{name} must be {self.expected} with parameters, got one without")


@functools.lru_cache(maxsize=64)
def _step(d: int) -> dict[str, Tensor]:
    # B (batch) binds across the four tensors; the embedding width is the model's
    return {"emb": Tensor(f"B n {d}", dtype="float", finite=False), "first": Tensor("B", dtype="integer"),
            "last": Tensor("B", dtype="integer"), "remaining": Tensor("B m", dtype="integer")}


def check_step(where: str, emb: Any, first: Any, last: Any, remaining: Any, d: int) -> None:
    """``emb [B, n, d]`` floating and finite; ``first``/``last`` int ``[B]`` and ``remaining`` int ``[B, m >= 1]``
    holding node indices in ``[0, n)``.

    The value checks (finiteness and index ranges) share one device-to-host transfer (one sync per call on a
    GPU), which is why finiteness is not left to the ``emb`` declaration."""
    named = {"emb": emb, "first": first, "last": last, "remaining": remaining}
    check_arguments(where, _step(d), named)
    B, n, _ = emb.shape
    if remaining.shape[1] < 1:
        raise ValueError(f"{where}: remaining must hold at least one node per row, got shape {list(remaining.shape)}")
    if B == 0:
        return
    index = (first, last, remaining)
    stats = torch.stack([torch.isfinite(emb).all().to(torch.int64)]
                        + [f(t).to(torch.int64).to(emb.device) for t in index for f in (torch.min, torch.max)])
    ok, *bounds = stats.tolist()
    if not ok:
        raise ValueError(f"{where}: emb must be finite (found NaN or inf)")
    for name, lo, hi in zip(("first", "last", "remaining"), bounds[0::2], bounds[1::2]):
        if lo < 0 or hi >= n:
            raise ValueError(f"{where}: {name} must hold node indices in [0, {n - 1}], got values in [{lo}, {hi}]")
