r"""Whole-model use: collect calibration inputs, match FLOP budgets, swap linears in place.

Budget matching (the spec requires every comparison at equal FLOPs per token): a layer m×n costs
$F_{dense} = 2mn + m$. At budget β the replacement must cost ≤ β·F_dense per token:

* weight-only rank r′: $2r'(m+n) + m \le \beta F_{dense}$;
* static correction: structured rank r plus $2nk + 2km + m$;
* DyRA: structured rank r plus :func:`~neurips26.dyra.correction.dyra_extra_flops` at group size N
  (the sketch and QR are amortised over the N tokens of a group).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import nn

from .. import constraints as c
from ..constraints import Bool, Choice, Instance, Optional, Real, Tensor, check_arguments, validate
from ._checks import FRACTION, MODULE, NONNEG_INT, POS_INT
from .correction import (
    DyRALinear,
    StaticResidualCorrection,
    dense_flops,
    dyra_extra_flops,
    static_extra_flops,
)
from .structured import STRUCTURES, StructuredLinear

LinearFilter = Callable[[str, nn.Module], bool]
_APPLY_STRUCTURES = tuple(s for s in STRUCTURES if s != "blockdiag")


def _all_linears(name: str, module: nn.Module) -> bool:
    return isinstance(module, nn.Linear)


def flops_per_token(module: nn.Module, n_tokens: int | None = None) -> float:
    """FLOPs per token of one layer: ``nn.Linear``, :class:`StructuredLinear`, :class:`StaticResidualCorrection`
    or :class:`DyRALinear` (which needs ``n_tokens``, its group size)."""
    if isinstance(module, DyRALinear):
        if n_tokens is None:
            raise ValueError("a DyRALinear's FLOPs depend on the group size: pass n_tokens")
        return module.flops_per_token(n_tokens)
    if isinstance(module, StaticResidualCorrection):
        return module.flops_per_token()
    if isinstance(module, StructuredLinear):
        return module.flops_per_token()
    if isinstance(module, nn.Linear):
        return dense_flops(module.out_features, module.in_features, module.bias is not None)
    raise TypeError(f"module must be a linear layer or one of its dyra replacements, got {type(module).__name__}")


# ---------------------------------------------------------------------------------- budgets
def _factor_unit(m: int, n: int, structure: str, blocks: int) -> float:
    """FLOPs per token per unit of rank: 2(m+n) for SVD kinds, 2b(m+n) for Monarch."""
    return 2.0 * (m + n) * (blocks if structure == "monarch" else 1)


@validate(m=POS_INT, n=POS_INT, flop_budget=FRACTION, structure=Choice(*STRUCTURES), blocks=POS_INT, extra=Real(),
          bias=Bool())
def budget_rank(m: int, n: int, flop_budget: float, *, structure: str = "svd", blocks: int = 4,
                extra: float = 0.0, bias: bool = True) -> int:
    r"""Largest structured rank whose cost plus ``extra`` FLOPs/token fits ``flop_budget`` of dense:
    $r = \lfloor (\beta F_{dense} - m - \text{extra}) / (2(m+n)) \rfloor$ (×b for Monarch). May be ≤ 0 when the
    budget cannot hold ``extra``."""
    room = flop_budget * dense_flops(m, n, bias) - (m if bias else 0) - extra
    return math.floor(room / _factor_unit(m, n, structure, blocks))


@validate(correction_rank=POS_INT)
def dyra_budget_rank(m: int, n: int, flop_budget: float, correction_rank: int, *, oversample: int = 8,
                     power_iters: int = 0, n_tokens: int = 1024, sketch: str = "gaussian",
                     structure: str = "svd", blocks: int = 4, bias: bool = True) -> int:
    """Structured rank left for DyRA(k = ``correction_rank``) at group size ``n_tokens`` within the budget."""
    extra = dyra_extra_flops(m, n, correction_rank, oversample, power_iters, n_tokens, sketch) - m
    return budget_rank(m, n, flop_budget, structure=structure, blocks=blocks, extra=extra, bias=bias)


@validate(correction_rank=POS_INT)
def static_budget_rank(m: int, n: int, flop_budget: float, correction_rank: int, *, structure: str = "svd",
                       blocks: int = 4, bias: bool = True) -> int:
    """Structured rank left for a static rank-k correction within the budget."""
    extra = static_extra_flops(m, n, correction_rank) - m
    return budget_rank(m, n, flop_budget, structure=structure, blocks=blocks, extra=extra, bias=bias)


# ---------------------------------------------------------------------------------- calibration
def _batch_call(model: nn.Module, batch: Any) -> Any:
    if isinstance(batch, Mapping):
        return model(**batch)
    if isinstance(batch, tuple | list):
        return model(*batch)
    return model(batch)


def _batch_mask(batch: Any, mask_arg: str) -> torch.Tensor | None:
    if isinstance(batch, Mapping):
        return batch.get(mask_arg)
    if isinstance(batch, tuple | list) and len(batch) > 1 and isinstance(batch[1], torch.Tensor) \
            and not batch[1].dtype.is_floating_point:
        return batch[1]
    return None


@torch.no_grad()
@validate(model=MODULE, max_tokens=POS_INT, filter=c.Callable(), mask_arg=Instance(str, "str (the mask keyword)"))
def collect_linear_inputs(model: nn.Module, batches: Iterable[Any], max_tokens: int = 8192,
                          filter: LinearFilter = _all_linears, *,
                          mask_arg: str = "attention_mask") -> dict[str, torch.Tensor]:
    """Inputs of every matching linear layer, as rows ``(N ≤ max_tokens, n)`` float32 on the CPU.

    Args:
        model: any module; each batch is passed as ``model(**b)`` (dict), ``model(*b)`` (tuple) or ``model(b)``.
        batches: an iterable of batches.
        max_tokens: rows kept per layer (the first ones).
        filter: ``filter(name, module)`` selects the layers (default: every ``nn.Linear``).
        mask_arg: the keyword (or the second positional integer tensor) holding the attention mask
            (B, T); pad tokens are left out.
    """
    if isinstance(batches, str | bytes | torch.Tensor) or not isinstance(batches, Iterable):
        raise TypeError(f"batches must be an iterable of batches (a list, a DataLoader), got {type(batches).__name__}")
    store: dict[str, list[torch.Tensor]] = {}
    count: dict[str, int] = {}
    current: dict[str, torch.Tensor | None] = {"mask": None}
    handles = []

    def hook(module: nn.Module, args: tuple, _name: str) -> None:
        x = args[0].detach()
        mask = current["mask"]
        if mask is not None and tuple(mask.shape) == tuple(x.shape[:-1]):
            x = x[mask.bool()]
        x = x.reshape(-1, x.shape[-1])
        left = max_tokens - count[_name]
        if left > 0:
            store[_name].append(x[:left].float().cpu())
            count[_name] += min(left, x.shape[0])

    chosen = [(name, mod) for name, mod in model.named_modules()
              if name and hasattr(mod, "in_features") and filter(name, mod)]
    if not chosen:
        raise ValueError("filter selected no linear layer of model")
    try:
        for name, mod in chosen:
            store[name], count[name] = [], 0
            handles.append(mod.register_forward_pre_hook(lambda module, args, _name=name: hook(module, args, _name)))
        for batch in batches:
            current["mask"] = _batch_mask(batch, mask_arg)
            _batch_call(model, batch)
    finally:
        for h in handles:
            h.remove()
    return {k: torch.cat(v) for k, v in store.items() if v}


@validate(x=Tensor("N D", dtype="float"))
def gram(x: torch.Tensor) -> torch.Tensor:
    r"""$X^\top X$ in float64 for rows X (N, n)."""
    x64 = x.detach().to(torch.float64)
    return x64.T @ x64


# ---------------------------------------------------------------------------------- swapping
class DyRAModules(dict):
    """``name -> replacement`` of the swapped layers; ``remove_hooks()`` detaches the mask hooks."""

    handles: list

    def remove_hooks(self) -> None:
        for h in getattr(self, "handles", []):
            h.remove()
        self.handles = []


@validate(model=MODULE, make=c.Callable(), filter=c.Callable())
def replace_linears(model: nn.Module, make: Callable[[str, nn.Linear], nn.Module],
                    filter: LinearFilter = _all_linears) -> dict[str, nn.Module]:
    """Swap every matching ``nn.Linear`` (in place) for ``make(name, linear)``; returns ``name -> new``.
    All replacements are built (and checked to be modules) before the first swap, so an error leaves the
    model unchanged."""
    targets = [(name, mod) for name, mod in model.named_modules()
               if name and isinstance(mod, nn.Linear) and filter(name, mod)]
    if not targets:
        raise ValueError("filter selected no nn.Linear of model")
    new = {name: make(name, mod) for name, mod in targets}
    for name, mod in new.items():
        if not isinstance(mod, nn.Module):
            raise TypeError(f"make must return a torch.nn.Module, got {type(mod).__name__} for layer {name!r}")
    for name, _ in targets:
        parent_name, _, leaf = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, leaf, new[name])
    return new


def _install_mask_hooks(model: nn.Module, modules: Mapping[str, nn.Module], mask_arg: str,
                        mask_position: int) -> list:
    def pre(module: nn.Module, args: tuple, kwargs: dict) -> None:
        mask = kwargs.get(mask_arg)
        if mask is None and len(args) > mask_position and isinstance(args[mask_position], torch.Tensor):
            mask = args[mask_position]
        for m in modules.values():
            if isinstance(m, DyRALinear):
                m.token_mask = None if mask is None else mask.bool()

    def post(module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
        for m in modules.values():
            if isinstance(m, DyRALinear):
                m.token_mask = None

    # always_call: the mask is cleared even when the forward raises (a failed call leaves no stale mask behind)
    return [model.register_forward_pre_hook(pre, with_kwargs=True),
            model.register_forward_hook(post, with_kwargs=True, always_call=True)]


_DYRA_KW = {"group", "sketch", "seed", "residual_dtype"}


@validate(model=MODULE, filter=c.Callable(), flop_budget=FRACTION, structure=Choice(*_APPLY_STRUCTURES),
          correction_rank=POS_INT, oversample=NONNEG_INT, power_iters=NONNEG_INT, n_tokens=POS_INT, blocks=POS_INT,
          calib_inputs=Optional(Instance(Mapping, "mapping name -> X (N, n) (from collect_linear_inputs)")),
          static_fallback=Bool(), mask_arg=Instance(str, "str (the forward's mask keyword)"),
          mask_position=NONNEG_INT)
def apply_dyra(model: nn.Module, filter: LinearFilter = _all_linears, flop_budget: float = 0.5, *,
               structure: str = "svd", correction_rank: int = 32, oversample: int = 8, power_iters: int = 0,
               n_tokens: int = 1024, blocks: int = 4, calib_inputs: Mapping[str, torch.Tensor] | None = None,
               static_fallback: bool = False, mask_arg: str = "attention_mask", mask_position: int = 1,
               **kw: Any) -> DyRAModules:
    """Replace every matching ``nn.Linear`` of ``model`` in place by a :class:`DyRALinear` costing at most
    ``flop_budget`` of dense FLOPs/token at group size ``n_tokens``.

    Args:
        structure: ``"svd"``, ``"whitened_svd"`` or ``"monarch"`` (budget-matched ranks).
        correction_rank: k of every layer (lowered to fit when the budget cannot hold k plus rank-1
            factors; a layer that cannot fit even k = 1 raises ``ValueError``).
        calib_inputs: ``name -> X (N, n)`` from :func:`collect_linear_inputs`, required for
            ``"whitened_svd"`` and ``static_fallback``.
        static_fallback: give each layer a static correction for groups with too few tokens.
        mask_arg, mask_position: where the model's forward receives its attention mask (keyword, or
            positional index); a forward pre-hook hands it to every DyRALinear so pads stay out of sketches.
        kw: more :class:`DyRALinear` arguments (``group``, ``sketch``, ``seed``, ``residual_dtype``).
    Returns:
        :class:`DyRAModules` ``name -> DyRALinear`` (with ``remove_hooks()``).
    """
    unknown = set(kw) - _DYRA_KW
    if unknown:
        raise TypeError(f"apply_dyra got unknown keyword arguments {sorted(unknown)}; DyRALinear takes "
                        f"{sorted(_DYRA_KW)}")
    needs_calib = structure == "whitened_svd" or static_fallback
    if needs_calib and calib_inputs is None:
        raise ValueError("structure='whitened_svd' and static_fallback=True need calib_inputs "
                         "(from collect_linear_inputs)")

    def make(name: str, lin: nn.Linear) -> DyRALinear:
        m, n = lin.out_features, lin.in_features
        g = None
        if needs_calib:
            if name not in calib_inputs:
                raise ValueError(f"calib_inputs has no entry for layer {name!r}")
            key = f"calib_inputs[{name!r}]"
            check_arguments("apply_dyra", {key: Tensor("N D", dtype="float")}, {key: calib_inputs[name]})
            g = gram(calib_inputs[name])
        k = min(correction_rank, min(m, n) - 1)
        while True:
            r = dyra_budget_rank(m, n, flop_budget, k, oversample=oversample, power_iters=power_iters,
                                 n_tokens=n_tokens, structure=structure, blocks=blocks, bias=lin.bias is not None)
            if r >= 1 or k == 1:
                break
            k = max(1, k // 2)
        if r < 1:
            raise ValueError(f"layer {name!r} ({m}x{n}): flop_budget {flop_budget} cannot hold a DyRA correction "
                             f"at n_tokens={n_tokens}")
        s = StructuredLinear.from_linear(lin, structure, blocks=blocks, calib_gram=g, rank=r)
        fb = StaticResidualCorrection(lin, s, k, g) if static_fallback else None
        return DyRALinear(lin, s, rank=k, oversample=oversample, power_iters=power_iters, fallback=fb, **kw)

    out = DyRAModules(replace_linears(model, make, filter))
    out.handles = _install_mask_hooks(model, out, mask_arg, mask_position)
    return out
