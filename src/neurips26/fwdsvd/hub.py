"""Save an edited (or factorised) model as Hugging Face-style safetensors, and load it back.

``save_pretrained(model, directory)`` writes ``model.safetensors`` and ``fwdsvd.json`` (which modules are
factorised into ``Sequential(Linear(n, k), Linear(k, m))``, and at which rank). For a
:class:`neurips26.nn.Llama` the tensor names are those of ``transformers``' ``LlamaForCausalLM``
(``model.layers.3.self_attn.q_proj.weight``, ``model.layers.3.input_layernorm.weight``, ...) and a
``config.json`` in its field names is written beside them, so a dense save (``factorized="dense"``, the
factors multiplied back) is a Llama checkpoint directory. ``load_pretrained(directory)`` rebuilds the Llama
(or fills a given ``model``), re-creating every factorised module with its rank.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from neurips26.constraints import Choice, Optional, validate

from .svd import MODEL

__all__ = ["load_pretrained", "save_pretrained"]

_WEIGHTS, _EDITS, _CONFIG = "model.safetensors", "fwdsvd.json", "config.json"
# our Llama's names -> transformers' LlamaForCausalLM names (inside one block)
_TO_HF = ((r"\.attn\.", ".self_attn."), (r"\.attn_norm\.", ".input_layernorm."),
          (r"\.mlp_norm\.", ".post_attention_layernorm."))


def _is_llama(model: nn.Module) -> bool:
    from neurips26.nn import Llama

    return isinstance(model, Llama)


def _to_hf(name: str) -> str:
    if name.startswith("lm_head."):
        return name
    for ours, theirs in _TO_HF:
        name = re.sub(ours, theirs, name)
    return "model." + name


def _from_hf(name: str) -> str:
    if name.startswith("lm_head."):
        return name
    name = name.removeprefix("model.")
    for ours, theirs in _TO_HF:
        name = re.sub(re.escape(theirs), ours.replace("\\", ""), name)
    return name


def _factorized_modules(model: nn.Module) -> dict[str, dict[str, int]]:
    """``{name: {"rank": k, "in": n, "out": m, "bias": 0/1}}`` of the factorised pairs laser_reduce made."""
    out = {}
    for name, mod in model.named_modules():
        if (isinstance(mod, nn.Sequential) and len(mod) == 2 and all(isinstance(m, nn.Linear) for m in mod)
                and mod[0].bias is None and mod[0].out_features == mod[1].in_features):
            out[name] = {"rank": mod[0].out_features, "in": mod[0].in_features, "out": mod[1].out_features,
                         "bias": int(mod[1].bias is not None)}
    return out


def _hf_config(model: nn.Module) -> dict[str, Any]:
    c = model.config
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": c.vocab_size,
            "hidden_size": c.d_model, "intermediate_size": c.d_ff, "num_hidden_layers": c.n_layers,
            "num_attention_heads": c.n_heads, "num_key_value_heads": c.n_kv_heads,
            "max_position_embeddings": c.max_seq_len, "rope_theta": c.rope_theta, "rms_norm_eps": c.norm_eps,
            "tie_word_embeddings": c.tie_embeddings, "hidden_act": "silu", "attention_bias": False,
            "torch_dtype": str(model.embed_tokens.weight.dtype).removeprefix("torch.")}


@validate(model=MODEL, factorized=Choice("keep", "dense"))
def save_pretrained(model: nn.Module, directory: str | os.PathLike, *, factorized: str = "keep") -> Path:
    """Write ``model`` (edited in place by :func:`~neurips26.fwdsvd.laser_reduce` or not) to ``directory``.

    Args:
        factorized: ``"keep"`` stores each factorised module as its two factors (``<name>.0.weight [k, n]``,
            ``<name>.1.weight [m, k]``: the memory saving survives the save); ``"dense"`` stores their
            product under the original ``<name>.weight`` (loadable by any Llama reader).
    Returns:
        the directory. Tied weights (the LM head of a tied Llama) are stored once.
    """
    from safetensors.torch import save_file

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    pairs = _factorized_modules(model)
    state = {k: v.detach() for k, v in model.state_dict().items()}
    if factorized == "dense":
        for name in pairs:
            first, second = state.pop(f"{name}.0.weight"), state.pop(f"{name}.1.weight")
            state[f"{name}.weight"] = (second.double() @ first.double()).to(first.dtype)  # W_k = U_k (Σ_k V_kᵀ)
            if f"{name}.1.bias" in state:
                state[f"{name}.bias"] = state.pop(f"{name}.1.bias")
        pairs = {}
    llama = _is_llama(model)
    if llama and model.config.tie_embeddings:
        state.pop("lm_head.weight", None)
    seen: dict[int, str] = {}
    tensors = {}
    for key, t in state.items():  # safetensors refuses shared storage: keep the first name of each tensor
        if t.data_ptr() in seen and t.numel() > 0:
            continue
        seen[t.data_ptr()] = key
        tensors[_to_hf(key) if llama else key] = t.contiguous().cpu()
    save_file(tensors, str(out / _WEIGHTS), metadata={"format": "pt", "written_by": "neurips26.fwdsvd"})
    (out / _EDITS).write_text(json.dumps({"factorized": pairs, "names": "hf-llama" if llama else "state_dict"},
                                         indent=1))
    if llama:
        (out / _CONFIG).write_text(json.dumps(_hf_config(model), indent=1))
    return out


def _swap_in_pairs(model: nn.Module, pairs: dict[str, dict[str, int]]) -> list[tuple[str, nn.Module]]:
    """Swap each listed module for an empty factor pair; returns ``[(name, old module)]`` to undo it."""
    olds = []
    for name in pairs:
        try:
            olds.append((name, model.get_submodule(name)))
        except AttributeError as err:
            raise ValueError(f"the saved model factorises {name!r}, which this model does not have") from err
    for (name, old), p in zip(olds, pairs.values()):
        ref = next(iter(old.parameters()), None)
        kw = {} if ref is None else {"dtype": ref.dtype, "device": ref.device}
        pair = nn.Sequential(nn.Linear(p["in"], p["rank"], bias=False, **kw),
                             nn.Linear(p["rank"], p["out"], bias=bool(p["bias"]), **kw))
        _set(model, name, pair)
    return olds


def _set(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, module)


@validate(model=Optional(MODEL))
def load_pretrained(directory: str | os.PathLike, model: nn.Module | None = None) -> nn.Module:
    """Load what :func:`save_pretrained` wrote. Without ``model``, a :class:`neurips26.nn.Llama` is built from
    ``config.json``; with it, its weights are replaced (modules factorised in the save are factorised here).
    Every stored tensor must match a parameter or buffer and the other way round (``ValueError`` naming them)."""
    from safetensors.torch import load_file

    src = Path(directory)
    if not (src / _WEIGHTS).is_file():
        raise FileNotFoundError(f"{src / _WEIGHTS} not found (save_pretrained writes it)")
    meta = json.loads((src / _EDITS).read_text()) if (src / _EDITS).is_file() else {"factorized": {},
                                                                                      "names": "hf-llama"}
    if model is None:
        if not (src / _CONFIG).is_file():
            raise ValueError(f"{src} has no config.json: pass the model to fill")
        from neurips26.nn import Llama, LlamaConfig

        c = json.loads((src / _CONFIG).read_text())
        model = Llama(LlamaConfig(vocab_size=c["vocab_size"], d_model=c["hidden_size"],
                                  n_layers=c["num_hidden_layers"], n_heads=c["num_attention_heads"],
                                  n_kv_heads=c["num_key_value_heads"], d_ff=c["intermediate_size"],
                                  max_seq_len=c["max_position_embeddings"], rope_theta=c["rope_theta"],
                                  norm_eps=c["rms_norm_eps"], tie_embeddings=c["tie_word_embeddings"]))
        dtype = getattr(torch, str(c.get("torch_dtype", "float32")), None)
        model = model.to(dtype if isinstance(dtype, torch.dtype) else torch.float32)
    stored = load_file(str(src / _WEIGHTS))
    olds = _swap_in_pairs(model, meta["factorized"])
    try:
        _fill(model, stored, meta, src)
    except BaseException:  # a refused load leaves a given model as it was
        for name, old in olds:
            _set(model, name, old)
        raise
    return model.eval()


def _fill(model: nn.Module, stored: dict[str, torch.Tensor], meta: dict[str, Any], src: Path) -> None:
    if meta.get("names") == "hf-llama":
        stored = {_from_hf(k): v for k, v in stored.items()}
    tied = _is_llama(model) and model.config.tie_embeddings
    expected = {k for k in model.state_dict() if not (tied and k == "lm_head.weight")}
    missing, extra = sorted(expected - set(stored)), sorted(set(stored) - expected)
    if missing or extra:
        raise ValueError(f"{src / _WEIGHTS} does not match the model: missing {missing[:5]}, unexpected {extra[:5]}")
    params = model.state_dict()
    for key in expected:
        if stored[key].shape != params[key].shape:
            raise ValueError(f"{key}: stored shape {tuple(stored[key].shape)}, model {tuple(params[key].shape)}")
    with torch.no_grad():
        for key in expected:
            params[key].copy_(stored[key])
