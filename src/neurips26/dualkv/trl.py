r"""TRL integration: a ``GRPOTrainer`` whose policy-update forwards pack each prompt group with DualKV.

TRL's ``GRPOTrainer`` scores the completions with ``_get_per_token_logps_and_entropies(model, input_ids,
attention_mask, logits_to_keep, ...)``: ``input_ids [B, P_pad + C]`` is the left-padded prompt followed by the
right-padded completion, one row per completion, so each prompt is processed once *per completion*. This
subclass overrides only that method (the loss, KL, clipping, logging and generation stay TRL's):

1. per micro-batch chunk, the real prompt tokens of each row (``attention_mask`` of the prompt part) and its
   real completion tokens (``attention_mask`` of the completion part, a prefix) are read;
2. rows with equal prompts form one group ``(prompt, [completion_1, …, completion_N])``;
   :func:`~.packing.pack_shared_prompt` lays the chunk out as ``[P | R_1 | … | R_N]`` per group, one row;
3. one forward through the model switched to ``"dualkv"`` (:func:`~.hf.packed_logits`, LM head only on the
   rows that predict completion tokens), then $\log\mathrm{softmax}(z / \tau)$ and the entropy, scattered back to
   TRL's ``[B, C]`` layout with zeros at padded positions (what TRL returns there).

The same model generates the rollouts: without a packed batch its ``"dualkv"`` attention is SDPA.

    from neurips26.dualkv.trl import DualKVGRPOTrainer
    trainer = DualKVGRPOTrainer(model=model, reward_funcs=reward, args=GRPOConfig(...), train_dataset=ds)
    trainer.train()

Falls back to TRL's own method (with a one-time warning) for what packing does not cover: multimodal inputs,
``token_type_ids``, completion masks that are not a prefix, or a chunk whose completions are all masked.
Exactness holds for strictly causal per-token decoders (no attention dropout; see :mod:`.hf`). TRL shifts the
positions of left-padded prompts (RoPE positions count pads); attention under RoPE depends only on position
differences, so both give the same log-probs up to rounding.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from trl import GRPOTrainer

from neurips26.constraints import Choice, check_arguments

from .hf import ATTENTION_NAME, enable_dualkv, packed_completion_logps

__all__ = ["DualKVGRPOTrainer", "packed_completion_logps"]

_UNSUPPORTED = ("pixel_values", "image_grid_thw", "pixel_attention_mask", "spatial_shapes", "num_tiles",
                "image_sizes", "token_type_ids", "mm_token_type_ids", "image_position_ids")


class DualKVGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` with DualKV-packed policy-update (and reference/old-policy) forwards.

    Takes exactly ``GRPOTrainer``'s arguments plus ``dualkv_backend`` (``"auto" | "torch" | "triton"``). The
    policy (and the reference model, when ``beta > 0``) are switched to ``"dualkv"`` attention; generation with
    transformers runs them on SDPA. MoE auxiliary losses are not packed (falls back to TRL's method).
    """

    def __init__(self, *args: Any, dualkv_backend: str = "auto", **kwargs: Any) -> None:
        check_arguments("DualKVGRPOTrainer", {"dualkv_backend": Choice("auto", "torch", "triton")},
                        {"dualkv_backend": dualkv_backend})
        super().__init__(*args, **kwargs)
        self.dualkv_backend = dualkv_backend
        self._dualkv_warned = False
        for m in (self.model, self.ref_model):
            if m is not None:
                base = m.get_base_model() if hasattr(m, "get_base_model") else m
                enable_dualkv(base)

    def _fallback(self, why: str) -> None:
        if not self._dualkv_warned:
            warnings.warn(f"DualKVGRPOTrainer: {why}; using TRL's unpacked forward for such batches", stacklevel=3)
            self._dualkv_warned = True

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **kwargs):
        if compute_aux_loss or any(kwargs.get(k) is not None for k in _UNSUPPORTED):
            self._fallback("multimodal inputs, token_type_ids or an MoE auxiliary loss")
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss,
                **kwargs)
        base = self.accelerator.unwrap_model(model)
        base = base.get_base_model() if hasattr(base, "get_base_model") else base
        if getattr(base.config, "_attn_implementation", None) != ATTENTION_NAME:
            enable_dualkv(base)
        batch_size = batch_size or input_ids.size(0)
        all_logps, all_entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            ids, mask = input_ids[start:start + batch_size], attention_mask[start:start + batch_size]
            with self.accelerator.autocast():  # the wrapped model: DDP/FSDP hooks stay in the forward
                got = packed_completion_logps(model, ids, mask, logits_to_keep, temperature=self.temperature,
                                              compute_entropy=compute_entropy, backend=self.dualkv_backend)
            if got is None:
                self._fallback("a completion mask that is not a prefix, or no real completion token")
                logps, entropies, _ = super()._get_per_token_logps_and_entropies(
                    model, ids, mask, logits_to_keep, None, compute_entropy, False)
            else:
                logps, entropies = got
            all_logps.append(logps)
            if compute_entropy:
                all_entropies.append(entropies)
        logps = torch.cat(all_logps, dim=0)
        entropies = torch.cat(all_entropies, dim=0) if compute_entropy else None
        return logps, entropies, None
