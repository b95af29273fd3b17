"""A side-tuning config in PEFT's shape, and save/load of the side network with its aligners.

:class:`SideTuningConfig` carries the fields a PEFT ``PeftConfig`` user expects (``peft_type``, ``task_type``,
``to_dict``/``from_dict``, ``save_pretrained``/``from_pretrained`` of a directory holding a JSON file) plus what
the side network and each backbone type's aligner need. It is not a ``peft.PeftConfig`` subclass (PEFT has no
side-tuning type to register against); it only mirrors the interface.

    cfg = SideTuningConfig(d_side=64, n_layers=3, backbones={"minilm-6": {"n_layers": 3, "d_model": 384}})
    side, aligners = cfg.build()                       # SideNetwork, {"minilm-6": FeatureAligner}
    save_side_model("out/", side, aligners, cfg)       # side_config.json + side_model.safetensors
    side2, aligners2, cfg2 = load_side_model("out/")   # the same weights, buffers and config
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from neurips26.constraints import Choice, Instance, Int, check_arguments, validate

from .side import INITS, NORMS, FeatureAligner, SideNetwork

__all__ = ["CONFIG_NAME", "WEIGHTS_NAME", "SideTuningConfig", "load_side_model", "save_side_model"]

CONFIG_NAME = "side_config.json"
WEIGHTS_NAME = "side_model.safetensors"
_BLOCKS = ("mlp", "transformer")


_FIELDS = {"d_side": Int(low=1), "n_layers": Int(low=1), "n_heads": Int(low=1), "n_classes": Int(low=2),
           "window": Int(low=0), "block": Choice(*_BLOCKS), "norm": Choice(*NORMS), "init": Choice(*INITS),
           "backbones": Instance(dict)}
_SPEC = {"spec": Instance(dict), "n_layers": Int(low=1), "d_model": Int(low=1)}


@dataclass
class SideTuningConfig:
    """Everything needed to rebuild a side network and its per-type aligners.

    Args:
        d_side, n_layers, n_classes, block, gate_T, n_heads: as :class:`SideNetwork`.
        window, norm, init: every aligner's (as :class:`FeatureAligner`).
        backbones: ``{backbone_type: {"n_layers": K, "d_model": d_b, ...}}`` (extra keys such as ``"layers"``
            or ``"positions"`` are kept for the devices).
        peft_type, task_type, inference_mode: PEFT's fields (informational here).
    """

    d_side: int = 64
    n_layers: int = 3
    n_classes: int = 2
    block: str = "mlp"
    gate_T: float = 0.1
    n_heads: int = 4
    window: int = 1
    norm: str = "running"
    init: str = "pca"
    backbones: dict[str, dict[str, Any]] = field(default_factory=dict)
    peft_type: str = "SIDE_TUNING"
    task_type: str = "SEQ_CLS"
    inference_mode: bool = False

    def __post_init__(self) -> None:
        check_arguments("SideTuningConfig", _FIELDS, {name: getattr(self, name) for name in _FIELDS})
        for name, spec in self.backbones.items():
            Instance(str).check(name, "a backbones key", "SideTuningConfig")
            where = f"SideTuningConfig: backbones[{name!r}]"
            check_arguments(where, _SPEC, {"spec": spec, **({k: spec.get(k) for k in ("n_layers", "d_model")}
                                                              if isinstance(spec, dict) else {})})

    # ------------------------------------------------------------------ PEFT-shaped I/O
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    @validate(data=Instance(dict))
    def from_dict(cls, data: dict[str, Any]) -> SideTuningConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"SideTuningConfig.from_dict: unknown fields {unknown}")
        return cls(**data)

    def save_pretrained(self, directory: str | os.PathLike) -> Path:
        """Write ``side_config.json`` into ``directory`` (created); returns the file's path."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        path = d / CONFIG_NAME
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True))
        return path

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike) -> SideTuningConfig:
        path = Path(directory) / CONFIG_NAME
        if not path.is_file():
            raise FileNotFoundError(f"SideTuningConfig.from_pretrained: no {CONFIG_NAME} in {directory}")
        return cls.from_dict(json.loads(path.read_text()))

    # ------------------------------------------------------------------ modules
    def build_side(self) -> SideNetwork:
        return SideNetwork(self.d_side, self.n_layers, self.n_classes, self.block, self.gate_T, n_heads=self.n_heads)

    def build_aligner(self, backbone_type: str) -> FeatureAligner:
        if backbone_type not in self.backbones:
            raise ValueError(f"backbone_type {backbone_type!r} is not in the config's backbones "
                             f"{sorted(self.backbones)}")
        spec = self.backbones[backbone_type]
        return FeatureAligner(spec["n_layers"], spec["d_model"], self.n_layers, self.d_side, window=self.window,
                              norm=self.norm, init=self.init)

    def build(self) -> tuple[SideNetwork, dict[str, FeatureAligner]]:
        """A fresh side network and one aligner per backbone type."""
        return self.build_side(), {b: self.build_aligner(b) for b in sorted(self.backbones)}


def _flat_state(side: SideNetwork, aligners: dict[str, FeatureAligner]) -> dict[str, torch.Tensor]:
    out = {f"side.{k}": v for k, v in side.state_dict().items()}
    for b, a in aligners.items():
        out.update({f"aligner.{b}.{k}": v for k, v in a.state_dict().items()})
    # safetensors stores no 0-d bool; keep every tensor contiguous and at least 1-d
    return {k: v.detach().cpu().contiguous().reshape(-1) if v.dim() == 0 else v.detach().cpu().contiguous()
            for k, v in out.items()}


@validate(side=Instance(SideNetwork))
def save_side_model(directory: str | os.PathLike, side: SideNetwork, aligners: dict[str, FeatureAligner],
                    config: SideTuningConfig) -> Path:
    """Write ``config`` and the weights and buffers of ``side`` and every aligner (safetensors) into
    ``directory``. The modules must match the config (checked first: nothing is written otherwise)."""
    Instance(SideTuningConfig).check(config, "config", "save_side_model")
    if not isinstance(aligners, dict) or set(aligners) != set(config.backbones):
        raise ValueError(f"aligners must have exactly the config's backbone types {sorted(config.backbones)}, got "
                         f"{sorted(aligners) if isinstance(aligners, dict) else aligners!r}")
    ref = config.build_side()
    if {k: tuple(v.shape) for k, v in side.state_dict().items()} != {k: tuple(v.shape)
                                                                      for k, v in ref.state_dict().items()}:
        raise ValueError("side does not match the config (its shapes differ from config.build_side())")
    for b, a in aligners.items():
        if not isinstance(a, FeatureAligner) or (a.n_backbone_layers, a.d_backbone, a.n_side_layers, a.d_side) != (
                config.backbones[b]["n_layers"], config.backbones[b]["d_model"], config.n_layers, config.d_side):
            raise ValueError(f"aligners[{b!r}] does not match the config's shapes")
    try:
        from safetensors.torch import save_file
    except ImportError as err:  # pragma: no cover - safetensors ships with the hf extra
        raise ImportError("saving a side model needs safetensors: pip install 'neurips26[hf]'") from err
    state = _flat_state(side, aligners)
    d = Path(directory)
    config.save_pretrained(d)
    save_file(state, str(d / WEIGHTS_NAME), metadata={"format": "pt", "peft_type": config.peft_type})
    return d


def load_side_model(directory: str | os.PathLike) -> tuple[SideNetwork, dict[str, FeatureAligner],
                                                           SideTuningConfig]:
    """Rebuild ``(side, aligners, config)`` from :func:`save_side_model`'s directory (eval mode)."""
    config = SideTuningConfig.from_pretrained(directory)
    path = Path(directory) / WEIGHTS_NAME
    if not path.is_file():
        raise FileNotFoundError(f"load_side_model: no {WEIGHTS_NAME} in {directory}")
    from safetensors.torch import load_file

    state = load_file(str(path))
    side, aligners = config.build()
    modules = {"side": side, **{f"aligner.{b}": a for b, a in aligners.items()}}
    for prefix, module in modules.items():
        own = module.state_dict()
        sub = {k[len(prefix) + 1:]: v for k, v in state.items() if k.startswith(prefix + ".")}
        missing = sorted(set(own) - set(sub))
        if missing:
            raise ValueError(f"load_side_model: {prefix} lacks {missing} in {path}")
        module.load_state_dict({k: sub[k].reshape(own[k].shape) for k in own})
        module.eval()
    return side, aligners, config
