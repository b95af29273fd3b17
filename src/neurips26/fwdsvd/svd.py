r"""LASER edits: replace one ``nn.Linear``'s weight by its rank-$k$ truncated SVD, and undo it exactly.

A linear layer computes $y = W x$ with $W \in \mathbb{R}^{m \times n}$ (PyTorch stores ``weight [m, n]``).
Its thin SVD is $W = \sum_{i=1}^{r} \sigma_i u_i v_i^\top$, $r = \min(m, n)$, $\sigma_1 \ge \dots \ge \sigma_r$.
A LASER edit with reduction $\rho \in (0, 1]$ keeps the $k = \max(1, \lfloor \rho r \rfloor)$ largest
("lower-order") components:

$$W_k = \sum_{i \le k} \sigma_i u_i v_i^\top .$$

(LASER's code: ``desired_rank = int(max_rank * rate)``.) :func:`laser_reduce` writes $W_k$ into the layer
(dense) or swaps the layer for two Linears $x \mapsto U_k (\Sigma_k V_k^\top x)$ (factorised) and returns a
:class:`RestoreHandle` that puts the original weight back bit for bit.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from neurips26.constraints import (
    ArgumentTypeError,
    Bool,
    Choice,
    Instance,
    Int,
    Real,
    Tensor,
    check_arguments,
    validate,
)

__all__ = ["ComposedEdit", "RankReduction", "RestoreHandle", "candidate_linears", "compose_edits", "laser_reduce",
           "rank_for_rho", "svd_factors"]

# the argument declarations shared by the package's entry points
MODEL = Instance(nn.Module, "torch.nn.Module")
MODULE_NAME = Instance(str, "dotted module name (str)")
RHO = Real(0, 1, closed="right")  # a LASER reduction in (0, 1]
RANK = Int(low=1)
_CANDIDATE_SETS = Choice("all", "mlp", "last_half")


@dataclass(frozen=True)
class RankReduction:
    """One LASER edit: the dotted module name, the reduction $\\rho$ and the kept rank $k$."""

    module: str
    rho: float
    rank: int

    def __post_init__(self) -> None:
        check_arguments("RankReduction", _REDUCTION, {"module": self.module, "rho": self.rho, "rank": self.rank})
        if not self.module:
            raise ArgumentTypeError(f"RankReduction: module must be a non-empty dotted module name, got "
                                    f"{self.module!r}")


_REDUCTION = {"module": MODULE_NAME, "rho": RHO, "rank": RANK}


@validate(rho=RHO, r=RANK)
def rank_for_rho(rho: float, r: int) -> int:
    r"""$k = \max(1, \lfloor \rho r \rfloor)$ (LASER's rule), for ``rho`` in (0, 1] and full rank ``r``."""
    rho = float(rho)
    # the 1e-9 guards float products such as 0.1 * 30 = 3.0000000000000004 / 0.29 * 100 = 28.999999999999996
    return max(1, math.floor(rho * r + 1e-9))


def _tied_weights(model: nn.Module) -> set[int]:
    """ids of parameters shared with an ``nn.Embedding`` (a tied LM head)."""
    return {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}


def _get_linear(model: nn.Module, module: str) -> nn.Linear:
    """The ``nn.Linear`` named ``module`` (both already declared valid: a module and a string)."""
    try:
        layer = model.get_submodule(module)
    except AttributeError as err:
        raise ValueError(f"module {module!r} not found in the model") from err
    if not isinstance(layer, nn.Linear):
        raise TypeError(f"module {module!r} must be an nn.Linear, got {type(layer).__name__}")
    if id(layer.weight) in _tied_weights(model):
        raise ValueError(f"module {module!r} shares its weight with an embedding (tied LM head); not a candidate")
    return layer


_MLP_WORDS = ("mlp", "ffn", "feed_forward", "gate_proj", "up_proj", "down_proj", "fc1", "fc2", "fc_in", "fc_out")


def _layer_index(name: str) -> int | None:
    """The block index in names such as ``layers.12.mlp.up_proj`` (first integer path component)."""
    for part in name.split("."):
        if part.isdigit():
            return int(part)
    return None


@validate(model=MODEL)
def candidate_linears(model: nn.Module, candidates: str | Sequence[str] = "all") -> list[str]:
    """The dotted names of the ``nn.Linear`` layers a search may edit, in module order.

    Args:
        candidates: ``"all"`` (every Linear not tied to an embedding), ``"mlp"`` (names with an MLP word:
            mlp/ffn/gate_proj/up_proj/down_proj/fc...), ``"last_half"`` (Linears of blocks with index
            $\\ge \\lceil L/2 \\rceil$, the index being the first integer in the name), or a list of names.
    """
    if isinstance(candidates, str):
        check_arguments("candidate_linears", {"candidates": _CANDIDATE_SETS}, {"candidates": candidates})
    elif not (isinstance(candidates, Sequence) and all(isinstance(c, str) for c in candidates)):
        raise TypeError(f"candidate_linears: candidates must be 'all', 'mlp', 'last_half' or a list of module names, "
                        f"got {candidates!r}")
    tied = _tied_weights(model)
    linears = [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and id(m.weight) not in tied]
    if isinstance(candidates, str):
        if candidates == "all":
            chosen = linears
        elif candidates == "mlp":
            chosen = [n for n in linears if any(w in n.split(".")[-2:] or n.endswith(w) for w in _MLP_WORDS)]
        else:  # "last_half"
            idx = {n: _layer_index(n) for n in linears}
            known = [i for i in idx.values() if i is not None]
            if not known:
                raise ValueError("candidates='last_half' needs numbered blocks (names like 'layers.3.mlp.up_proj')")
            n_layers = max(known) + 1
            chosen = [n for n in linears if idx[n] is not None and idx[n] >= math.ceil(n_layers / 2)]
    else:
        for name in candidates:
            _get_linear(model, name)
        chosen = list(dict.fromkeys(candidates))
    if not chosen:
        raise ValueError(f"candidates={candidates!r} selects no nn.Linear in the model")
    return chosen


@validate(weight=Tensor("M N", dtype="float"))
def svd_factors(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Thin SVD in float64 on the CPU: ``U [m, r]``, ``S [r]`` (descending), ``Vh [r, n]``;
    $W = U \,\mathrm{diag}(S)\, V_h$."""
    w = weight.detach().to(device="cpu", dtype=torch.float64)
    return torch.linalg.svd(w, full_matrices=False)


# Live dense edits per layer, oldest first. Each handle keeps the weight from just before its edit. Restoring
# the newest edit copies that weight back (bit for bit); restoring an older one hands its "before" weight to
# the next newer edit and replays the newer truncations on it, so edits of one matrix undo in any order and the
# last restore gives the original back bit for bit.
_LIVE: weakref.WeakKeyDictionary[nn.Linear, list[RestoreHandle]] = weakref.WeakKeyDictionary()


def _truncate(weight: torch.Tensor, k: int) -> torch.Tensor:
    """$W_k$ of ``weight`` (float64 SVD), in the weight's dtype and device."""
    U, S, Vh = svd_factors(weight)
    return ((U[:, :k] * S[:k]) @ Vh[:k]).to(device=weight.device, dtype=weight.dtype)


class RestoreHandle:
    """Undo of one :func:`laser_reduce` edit: ``restore()`` (idempotent) or ``with laser_reduce(...):``.

    Several dense edits of one matrix may be live at once; they can be restored in any order (an older one
    restored first leaves the newer ones applied to the weight from before the older one), and once all are,
    the weight is the original, bit for bit. A factorised edit puts its original ``nn.Linear`` object back."""

    def __init__(self, model: nn.Module, reduction: RankReduction, layer: nn.Linear,
                 original: torch.Tensor | None, factorized: nn.Module | None) -> None:
        self.model, self.reduction = model, reduction
        self._layer, self._before, self._factorized = layer, original, factorized
        self.restored = False

    def restore(self) -> None:
        if self.restored:
            return
        if self._factorized is not None:  # put the original Linear object back in its parent
            parent_name, _, child = self.reduction.module.rpartition(".")
            setattr(self.model.get_submodule(parent_name) if parent_name else self.model, child, self._layer)
        else:
            live = _LIVE.get(self._layer, [])
            idx = next((i for i, h in enumerate(live) if h is self), None)
            with torch.no_grad():
                if idx is None or idx == len(live) - 1:   # the newest edit: its "before" weight, bit for bit
                    self._layer.weight.copy_(self._before)
                    if idx is not None:
                        live.pop()
                else:                                      # an older one: replay the newer edits without it
                    live.pop(idx)
                    weight = self._before
                    for h in live[idx:]:
                        h._before = weight
                        weight = _truncate(weight, h.reduction.rank)
                    self._layer.weight.copy_(weight)
            if not live:
                _LIVE.pop(self._layer, None)
        self.restored = True

    def __enter__(self) -> RestoreHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()

    def __repr__(self) -> str:
        return f"RestoreHandle({self.reduction}, restored={self.restored})"


class ComposedEdit:
    """Several edits applied in order (:func:`compose_edits`); ``restore()`` undoes them in reverse order."""

    def __init__(self, handles: list[RestoreHandle]) -> None:
        self.handles = handles

    @property
    def reductions(self) -> list[RankReduction]:
        return [h.reduction for h in self.handles]

    def restore(self) -> None:
        for h in reversed(self.handles):
            h.restore()

    def __enter__(self) -> ComposedEdit:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()

    def __repr__(self) -> str:
        return f"ComposedEdit({self.reductions})"


@validate(model=MODEL, factorize=Bool())
def compose_edits(model: nn.Module, reductions: Sequence[RankReduction | tuple[str, float]],
                  factorize: bool = False) -> ComposedEdit:
    """Apply several LASER edits (``RankReduction`` or ``(module, rho)``) one after the other; if one is
    refused, the ones already applied are undone before the error propagates (the model is left as it was)."""
    if isinstance(reductions, str) or not isinstance(reductions, Sequence):
        raise TypeError(f"reductions must be a list of RankReduction or (module, rho), got {reductions!r}")
    handles: list[RestoreHandle] = []
    try:
        for red in reductions:
            if isinstance(red, RankReduction):
                module, rho = red.module, red.rho
            elif isinstance(red, tuple) and len(red) == 2:
                module, rho = red
            else:
                raise TypeError(f"each reduction must be a RankReduction or (module, rho), got {red!r}")
            handles.append(laser_reduce(model, module, rho, factorize))
    except BaseException:
        for h in reversed(handles):
            h.restore()
        raise
    return ComposedEdit(handles)


def _check_svd(svd: Any, m: int, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Precomputed factors ``(U [m, r], S [r], Vh [r, n])`` of the ``m x n`` weight, ``r = min(m, n)``: finite
    floating tensors."""
    if not isinstance(svd, tuple | list) or len(svd) != 3:
        raise TypeError(f"laser_reduce: svd must be the (U, S, Vh) tensors of svd_factors, got {type(svd).__name__}")
    r = min(m, n)
    factors = {"svd[0] (U)": Tensor(f"{m} {r}", dtype="float"), "svd[1] (S)": Tensor(f"{r}", dtype="float"),
               "svd[2] (Vh)": Tensor(f"{r} {n}", dtype="float")}
    check_arguments("laser_reduce", factors, dict(zip(factors, svd)))
    return svd[0], svd[1], svd[2]


@validate(model=MODEL, module=MODULE_NAME, rho=RHO, factorize=Bool())
def laser_reduce(model: nn.Module, module: str, rho: float, factorize: bool = False, *,
                 svd: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> RestoreHandle:
    r"""Replace ``model.<module>`` (an ``nn.Linear``) by its rank-$k$ truncation $W_k$,
    $k = \max(1, \lfloor\rho r\rfloor)$.

    Args:
        model: any ``nn.Module``; edited in place.
        module: dotted name of an ``nn.Linear`` that is not tied to an embedding.
        rho: reduction in (0, 1]; ``rho = 1`` keeps every component.
        factorize: swap the layer for ``Sequential(Linear(n, k), Linear(k, m))`` (weights $\Sigma_k V_k^\top$
            and $U_k$; the bias moves to the second) instead of writing the dense $W_k$ [m, n].
        svd: precomputed :func:`svd_factors` of the current weight (searches cache them).
    Returns:
        a :class:`RestoreHandle`; the weight is restored bit for bit.
    """
    layer = _get_linear(model, module)
    rho = float(rho)
    m, n = layer.weight.shape
    U, S, Vh = svd_factors(layer.weight) if svd is None else _check_svd(svd, m, n)
    k = rank_for_rho(rho, min(m, n))
    reduction = RankReduction(module, rho, k)
    dtype, device = layer.weight.dtype, layer.weight.device
    if not factorize:
        # W_k = U_k diag(σ_1..σ_k) V_kᵀ, formed in float64, then cast to the layer's dtype
        w_k = (U[:, :k] * S[:k]) @ Vh[:k]
        before = layer.weight.detach().clone()
        with torch.no_grad():
            layer.weight.copy_(w_k.to(device=device, dtype=dtype))
        handle = RestoreHandle(model, reduction, layer, before, None)
        _LIVE.setdefault(layer, []).append(handle)
        return handle
    first = nn.Linear(n, k, bias=False, device=device, dtype=dtype)
    second = nn.Linear(k, m, bias=layer.bias is not None, device=device, dtype=dtype)
    with torch.no_grad():
        first.weight.copy_((S[:k, None] * Vh[:k]).to(device=device, dtype=dtype))  # Σ_k V_kᵀ  [k, n]
        second.weight.copy_(U[:, :k].to(device=device, dtype=dtype))               # U_k       [m, k]
        if layer.bias is not None:
            second.bias.copy_(layer.bias)
    pair = nn.Sequential(first, second).requires_grad_(layer.weight.requires_grad)
    parent_name, _, child = module.rpartition(".")
    setattr(model.get_submodule(parent_name) if parent_name else model, child, pair)
    return RestoreHandle(model, reduction, layer, None, pair)
