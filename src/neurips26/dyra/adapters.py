r"""PEFT-style use of DyRA: a config, one call on a (transformers) model, save/load of the correction state,
merge/unmerge.

DyRA is not a trained adapter: its "state" is what :func:`~.swap.apply_dyra` computed from the base weights
(the structured factors of $W_s$, the dense residual $E = W - W_s$, an optional static fallback). Saving it spares
the factorisation (and, for the whitened SVD, the calibration data) at load time; loading puts it back onto the
*same* base model (the layers' shapes are checked; their weights are not re-read).

* :class:`DyRAConfig` — like ``peft.LoraConfig``: ``target_modules`` (names or name suffixes, e.g.
  ``["query", "key", "value"]``; ``None`` = every ``nn.Linear``) plus :func:`apply_dyra`'s arguments.
* :func:`get_dyra_model` (``peft.get_peft_model``) swaps the targeted linears in place.
* :func:`save_dyra` / :func:`load_dyra` (``save_pretrained`` / ``PeftModel.from_pretrained``): one
  ``dyra.safetensors`` and one ``dyra_config.json`` in a directory.
* :func:`merge` / :func:`unmerge` / :func:`merge_and_unload`: a merged DyRA layer applies $W_s + E = W$ exactly
  (the dense layer: no speed-up); ``unmerge`` gives the dynamic correction back, bit-identical.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..constraints import Choice, Instance, Optional, check_arguments, validate
from ._checks import MODULE
from .correction import DyRALinear, StaticResidualCorrection
from .structured import StructuredLinear
from .swap import DyRAModules, _install_mask_hooks, apply_dyra, replace_linears

CONFIG_NAME, WEIGHTS_NAME = "dyra_config.json", "dyra.safetensors"
_DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class DyRAConfig:
    """What :func:`get_dyra_model` applies (the fields are :func:`apply_dyra`'s arguments).

    ``target_modules``: layer names, or suffixes of dotted names (``"query"`` matches
    ``encoder.layer.0.attention.self.query``), PEFT's convention; ``None`` targets every ``nn.Linear``.
    ``residual_dtype`` is a name (``"float32"``, ``"bfloat16"``, ...) so the config is JSON.
    """

    target_modules: list[str] | None = None
    flop_budget: float = 0.5
    structure: str = "svd"
    correction_rank: int = 32
    oversample: int = 8
    power_iters: int = 0
    n_tokens: int = 1024
    group: str = "sample"
    sketch: str = "gaussian"
    seed: int = 0
    residual_dtype: str = "float32"
    static_fallback: bool = False
    blocks: int = 4
    mask_arg: str = "attention_mask"
    mask_position: int = 1
    layers: dict[str, dict[str, Any]] = field(default_factory=dict)  # filled by save_dyra

    def __post_init__(self) -> None:
        if self.target_modules is not None:
            if isinstance(self.target_modules, str) or not all(isinstance(t, str) for t in self.target_modules):
                raise TypeError(f"target_modules must be a list of layer names (str) or None, got "
                                f"{self.target_modules!r}")
            self.target_modules = list(self.target_modules)
        check_arguments("DyRAConfig", {"residual_dtype": Choice(*sorted(_DTYPES))},
                        {"residual_dtype": self.residual_dtype})
    def matches(self, name: str, module: nn.Module) -> bool:
        """Whether layer ``name`` is targeted."""
        if not isinstance(module, nn.Linear):
            return False
        if self.target_modules is None:
            return True
        return any(name == t or name.endswith("." + t) for t in self.target_modules)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    @validate(d=Instance(dict, "dict (a DyRA config)"))
    def from_dict(cls, d: dict[str, Any]) -> DyRAConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown DyRA config keys {sorted(unknown)}; known: {sorted(known)}")
        return cls(**d)


@validate(model=MODULE, config=Instance(DyRAConfig, "DyRAConfig"))
def get_dyra_model(model: nn.Module, config: DyRAConfig,
                   calib_inputs: dict[str, torch.Tensor] | None = None) -> DyRAModules:
    """Swap the linears ``config`` targets for :class:`DyRALinear` in place (``peft.get_peft_model``'s role);
    returns ``name -> DyRALinear``. ``calib_inputs`` as in :func:`apply_dyra` (whitened SVD, static fallback).
    The model is unchanged when it raises."""
    if any(isinstance(m, DyRALinear) for m in model.modules()):
        raise ValueError("model already holds DyRALinear layers (apply DyRA once; merge_and_unload to undo)")
    return apply_dyra(model, config.matches, config.flop_budget, structure=config.structure,
                      correction_rank=config.correction_rank, oversample=config.oversample,
                      power_iters=config.power_iters, n_tokens=config.n_tokens, blocks=config.blocks,
                      calib_inputs=calib_inputs, static_fallback=config.static_fallback, mask_arg=config.mask_arg,
                      mask_position=config.mask_position, group=config.group, sketch=config.sketch,
                      seed=config.seed, residual_dtype=_DTYPES[config.residual_dtype])


def _dyra_layers(model: nn.Module, where: str) -> dict[str, DyRALinear]:
    check_arguments(where, {"model": MODULE}, {"model": model})
    layers = {name: m for name, m in model.named_modules() if isinstance(m, DyRALinear)}
    if not layers:
        raise ValueError("model holds no DyRALinear layer (use get_dyra_model first)")
    return layers


def dyra_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every DyRA layer's tensors (structured factors, E, fallback), keyed ``<layer>.<tensor>``."""
    return {f"{name}.{k}": v.detach().contiguous()
            for name, mod in _dyra_layers(model, "dyra_state_dict").items() for k, v in mod.state_dict().items()}


def _layer_meta(mod: DyRALinear) -> dict[str, Any]:
    s = mod.structured
    meta = {"in_features": mod.in_features, "out_features": mod.out_features, "rank": mod.rank,
            "oversample": mod.oversample, "power_iters": mod.power_iters, "group": mod.group,
            "sketch": mod.sketch, "seed": mod.seed,
            "residual_dtype": next(k for k, v in _DTYPES.items() if v == mod.E.dtype),
            "structure": s.structure, "structured_rank": s.rank, "blocks": s.blocks,
            "factors": [k for k, v in s._buffers.items() if v is not None and k != "bias"],
            "bias": s.bias is not None, "fallback": None}
    if mod.fallback is not None:
        fb = mod.fallback.structured
        meta["fallback"] = {"structure": fb.structure, "structured_rank": fb.rank, "blocks": fb.blocks,
                            "factors": [k for k, v in fb._buffers.items() if v is not None and k != "bias"],
                            "bias": fb.bias is not None}
    return meta


@validate(model=MODULE, config=Optional(Instance(DyRAConfig, "DyRAConfig")))
def save_dyra(model: nn.Module, directory: str | Path, config: DyRAConfig | None = None) -> Path:
    """Write ``dyra.safetensors`` (every DyRA layer's tensors) and ``dyra_config.json`` (``config`` plus each
    layer's shapes and settings) into ``directory`` (created). Returns the directory."""
    from safetensors.torch import save_file

    layers = _dyra_layers(model, "save_dyra")
    cfg = DyRAConfig.from_dict({**(config or DyRAConfig()).to_dict(), "layers": {}})
    cfg.layers = {name: _layer_meta(mod) for name, mod in layers.items()}
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    save_file(dyra_state_dict(model), str(out / WEIGHTS_NAME))
    (out / CONFIG_NAME).write_text(json.dumps(cfg.to_dict(), indent=1))
    return out


def _structured(meta: dict, tensors: dict[str, torch.Tensor], prefix: str, n: int, m: int) -> StructuredLinear:
    factors = {k: tensors[f"{prefix}{k}"] for k in meta["factors"]}
    bias = tensors[f"{prefix}bias"] if meta["bias"] else None
    return StructuredLinear(meta["structure"], n, m, factors, bias, rank=meta["structured_rank"],
                            blocks=meta["blocks"])


@validate(model=MODULE)
def load_dyra(model: nn.Module, directory: str | Path) -> DyRAModules:
    """Put a saved DyRA state back onto the base ``model`` (the one it was computed from): every saved layer's
    ``nn.Linear`` is swapped for its DyRA layer, tensors as saved. All layers are rebuilt and checked (names,
    shapes) before the first swap, so an error leaves the model unchanged. Returns ``name -> DyRALinear``."""
    from safetensors.torch import load_file

    d = Path(directory)
    if not (d / CONFIG_NAME).is_file() or not (d / WEIGHTS_NAME).is_file():
        raise FileNotFoundError(f"directory must hold {CONFIG_NAME} and {WEIGHTS_NAME} (from save_dyra), got {d}")
    cfg = DyRAConfig.from_dict(json.loads((d / CONFIG_NAME).read_text()))
    tensors = load_file(str(d / WEIGHTS_NAME))
    modules = dict(model.named_modules())
    built: dict[str, DyRALinear] = {}
    for name, meta in cfg.layers.items():
        lin = modules.get(name)
        if not isinstance(lin, nn.Linear):
            raise ValueError(f"model has no nn.Linear named {name!r} (saved from another model?)")
        n, m = meta["in_features"], meta["out_features"]
        if (lin.in_features, lin.out_features) != (n, m):
            raise ValueError(f"layer {name!r} is {lin.out_features}x{lin.in_features} in model but {m}x{n} "
                             "in the saved state")
        s = _structured(meta, tensors, f"{name}.structured.", n, m)
        fb = None
        if meta["fallback"] is not None:
            fs = _structured(meta["fallback"], tensors, f"{name}.fallback.structured.", n, m)
            fb = StaticResidualCorrection.from_factors(fs, tensors[f"{name}.fallback.Q"],
                                                       tensors[f"{name}.fallback.G"])
        mod = DyRALinear(lin, s, rank=meta["rank"], oversample=meta["oversample"],
                         power_iters=meta["power_iters"], group=meta["group"], sketch=meta["sketch"],
                         seed=meta["seed"], residual_dtype=_DTYPES[meta["residual_dtype"]], fallback=fb)
        state = {k[len(name) + 1:]: v for k, v in tensors.items() if k.startswith(name + ".")}
        mod.load_state_dict(state, strict=True)
        built[name] = mod
    out = DyRAModules(replace_linears(model, lambda name, lin: built[name], lambda name, _m: name in built))
    out.handles = _install_mask_hooks(model, out, cfg.mask_arg, cfg.mask_position)
    return out


def merge(model: nn.Module) -> nn.Module:
    """:meth:`DyRALinear.merge` on every DyRA layer (each applies $W_s + E$); returns the model."""
    for mod in _dyra_layers(model, "merge").values():
        mod.merge()
    return model


def unmerge(model: nn.Module) -> nn.Module:
    """:meth:`DyRALinear.unmerge` on every DyRA layer; returns the model."""
    for mod in _dyra_layers(model, "unmerge").values():
        mod.unmerge()
    return model


def merge_and_unload(model: nn.Module) -> nn.Module:
    """Replace every DyRA layer by a plain ``nn.Linear`` holding $W_s + E$ (the base model back, up to E's
    dtype); the mask hooks of a :class:`DyRAModules` stay harmless (they only touch DyRA layers). Returns it."""
    layers = _dyra_layers(model, "merge_and_unload")
    replace = {name: mod.to_linear() for name, mod in layers.items()}
    for name, lin in replace.items():
        parent_name, _, leaf = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, leaf, lin)
    return model
