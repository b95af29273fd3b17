r"""The device: a frozen backbone, forward passes only, one quantised upload per minibatch.

For a batch, with hidden states $h_\ell \in \mathbb{R}^{B \times T \times d}$ of the chosen layers
$\ell \in \mathcal{L}_b$ and attention mask $m \in \{0, 1\}^{B \times T}$ (right padding):

* ``"pivot"`` (PAE-MobiLLM's single-token shortcut): $x_{\ell} = h_{\ell}[\,t^\ast]$, $t^\ast = \sum_t m_t - 1$,
  the last real token;
* ``"mean"``: $x_\ell = \sum_t m_t h_{\ell, t} / \sum_t m_t$;
* ``"all"``: every token, ``[B, K, T, d]``, with the mask.

The device never builds an autograd graph (``torch.no_grad`` and frozen parameters) and never downloads
weights while training; it only counts its FLOPs (:meth:`HiddenStates.flops_per_sample`) and bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import torch
from torch import nn

from neurips26.constraints import AnyOf, ArrayLike, Choice, Instance, Int, Optional, Tensor, check_arguments, validate

from .backbone import HiddenStates
from .payload import _BITS, ActivationPayload, quantize_absmax

__all__ = ["POSITIONS", "DeviceClient", "FeatureMemo", "select_positions"]

POSITIONS = ("pivot", "mean", "all")


def select_positions(states: Sequence[torch.Tensor], layers: Sequence[int], mask: torch.Tensor,
                     positions: str) -> torch.Tensor:
    """``[B, K, d]`` (pivot/mean) or ``[B, K, T, d]`` (all) from hidden states ``[B, T, d]`` per layer."""
    h = torch.stack([states[i] for i in layers], dim=1).float()  # [B, K, T, d]
    m = mask.to(h.dtype)
    if positions == "pivot":
        last = (mask.sum(1) - 1).clamp(min=0).long()  # [B] index of the last real token
        idx = last[:, None, None, None].expand(-1, h.shape[1], 1, h.shape[-1])
        return h.gather(2, idx).squeeze(2)
    if positions == "mean":
        w = m[:, None, :, None]
        return (h * w).sum(2) / w.sum(2).clamp(min=1.0)
    return h * m[:, None, :, None]


class FeatureMemo:
    """A simulation shortcut: features of ``(backbone_type, layers, positions, sample_id)`` computed once and
    reused by later simulated runs over the same devices. The device still *counts* the forward FLOPs each
    time; only the wall-clock work of the simulation is saved."""

    def __init__(self) -> None:
        self._store: dict[tuple, torch.Tensor] = {}

    def __len__(self) -> int:
        return len(self._store)

    def get(self, key: tuple) -> torch.Tensor | None:
        return self._store.get(key)

    def put(self, key: tuple, value: torch.Tensor) -> None:
        self._store[key] = value


def _int_tensor(spec: str) -> AnyOf:
    """An integer (or bool) tensor of shape ``spec``: any tensor that is not floating point."""
    return AnyOf(Tensor(spec, dtype="integer"), Tensor(spec, dtype="bool"))


_BATCH = {"input_ids": _int_tensor("B T"), "attention_mask": _int_tensor("B T"), "labels": _int_tensor("B"),
          "sample_ids": Optional(Tensor("B", finite=False))}


def _check_batch(batch: object, *, need_ids: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    Instance(Mapping, "dict with input_ids, attention_mask, labels").check(batch, "batch", "DeviceClient")
    for key in ("input_ids", "labels"):
        if key not in batch:
            raise ValueError(f"batch lacks {key!r} (needs input_ids, attention_mask, labels)")
    if batch.get("attention_mask") is None:
        raise ValueError("batch lacks 'attention_mask' [B, T] (1 = real token, right padding): the pivot and "
                         "mean positions need it")
    # input_ids and attention_mask [B, T], labels and sample_ids [B]: integer tensors, B and T agreeing
    check_arguments("DeviceClient: batch", _BATCH, batch)
    ids, mask, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]
    if ((mask != 0) & (mask != 1)).any() or (mask.sum(1) < 1).any():
        raise ValueError("batch['attention_mask'] must be 0/1 with at least one real token per row")
    # right padding: once a row's mask drops to 0 it stays 0
    if (mask[:, 1:] > mask[:, :-1]).any():
        raise ValueError("batch['attention_mask'] must be right-padded (1...1 0...0 per row)")
    sample_ids = batch.get("sample_ids")
    if sample_ids is None:
        if need_ids:
            raise ValueError("batch lacks 'sample_ids' [B], which a FeatureMemo needs")
        sample_ids = torch.arange(ids.shape[0])
    return ids, mask.long(), labels.long(), sample_ids.long()


class DeviceClient:
    """A device with a frozen backbone; :meth:`step` turns a batch into an :class:`ActivationPayload`.

    Args:
        backbone: any module that returns HF-style ``.hidden_states`` for ``output_hidden_states=True``
            (Hugging Face models, :class:`~.backbone.HiddenStates` over the library's models); frozen here.
        layers: indices into that tuple (0 = embeddings), e.g. ``[2, 4, 6]``.
        positions: ``"pivot"`` (last real token), ``"mean"`` (masked mean) or ``"all"``.
        quant_bits: 4, 8 (integer codes, absmax scale per vector), 16 (fp16) or 32 (float32).
        batch_size: samples per upload when the device walks its own ``data``.
        backbone_type: the name the server's aligners know this backbone by (default the class name).
        device_id: integer id.
        outliers: exact fp16 channels per vector (4/8 bits only; default 0).
        data: optional local dataset ``{"input_ids" [N, T], "attention_mask" [N, T], "labels" [N]}``.
        passes: passes over ``data`` (``None``: endless, for runs without a server cache).
        seed: shuffling seed of ``data``.
        memo: optional :class:`FeatureMemo` (simulation shortcut; FLOPs are still counted).
    """

    @validate(backbone=Instance(nn.Module, "torch.nn.Module"), layers=ArrayLike(ndim=1, dtype="integer"),
              positions=Choice(*POSITIONS), quant_bits=_BITS,
              batch_size=Int(low=1), device_id=Int(low=0), outliers=Int(low=0), passes=Optional(Int(low=1)),
              memo=Optional(Instance(FeatureMemo)))
    def __init__(self, backbone: nn.Module, layers: Sequence[int], positions: str = "pivot", quant_bits: int = 8,
                 batch_size: int = 16, backbone_type: str | None = None, device_id: int = 0, *, outliers: int = 0,
                 data: Mapping[str, torch.Tensor] | None = None, passes: int | None = 1, seed: int = 0,
                 memo: FeatureMemo | None = None) -> None:
        self.quant_bits = quant_bits
        n_states = self._n_states(backbone)
        for i in layers:
            if n_states is not None and not 0 <= i < n_states:
                raise ValueError(f"layers index {i} out of range: the backbone gives {n_states} hidden states "
                                 f"(0 = embeddings .. {n_states - 1})")
        if outliers and quant_bits not in (4, 8):
            raise ValueError(f"outliers needs quant_bits 4 or 8, got quant_bits={quant_bits}")
        if data is not None:
            _check_batch(data, need_ids=False)
        self.backbone = backbone.eval().requires_grad_(False)
        self.layers = [int(i) for i in layers]
        self.positions, self.batch_size, self.device_id = positions, batch_size, device_id
        self.backbone_type = backbone_type or type(backbone).__name__
        self.outliers, self.data, self.passes, self.seed, self.memo = outliers, data, passes, seed, memo
        self.flops = 0.0
        self.bytes_up = 0
        self.samples_seen = 0
        self.seq = 0
        self._batches: Iterator[dict[str, torch.Tensor]] | None = None

    @staticmethod
    def _n_states(backbone: nn.Module) -> int | None:
        if isinstance(backbone, HiddenStates):
            return backbone.n_layers + 1
        cfg = getattr(backbone, "config", None)
        n = getattr(cfg, "num_hidden_layers", None)
        return None if n is None else int(n) + 1

    @property
    def n_samples(self) -> int:
        return 0 if self.data is None else int(self.data["labels"].shape[0])

    def forward_flops(self, n_samples: int, tokens: int) -> float:
        """FLOPs of the backbone forward (all its blocks run) for ``n_samples`` of ``tokens`` tokens."""
        if isinstance(self.backbone, HiddenStates):
            return n_samples * self.backbone.flops_per_sample(tokens)
        params = sum(p.numel() for p in self.backbone.parameters())
        return n_samples * 2.0 * params * tokens  # any other model: 2 P T, embeddings included

    @torch.no_grad()
    def features(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Selected hidden states ``float32 [B, K, d]`` (``[B, K, T, d]`` for ``"all"``), no autograd graph."""
        ids, mask, _, sample_ids = _check_batch(batch, need_ids=self.memo is not None)
        if self.memo is not None:
            keys = [(self.backbone_type, tuple(self.layers), self.positions, int(s)) for s in sample_ids]
            got = [self.memo.get(k) for k in keys]
            if all(g is not None for g in got) and self.positions != "all":
                return torch.stack(got)
        where = next(self.backbone.parameters()).device
        out = self.backbone(input_ids=ids.to(where), attention_mask=mask.to(where), output_hidden_states=True)
        states = [h.cpu() for h in out.hidden_states]  # payloads are built on the device's CPU side
        if self.positions != "all" and max(self.layers) >= len(states):
            raise ValueError(f"layers index {max(self.layers)} out of range: the backbone gave {len(states)} states")
        feats = select_positions(states, self.layers, mask, self.positions)
        if self.memo is not None and self.positions != "all":
            for k, f in zip(keys, feats):
                self.memo.put(k, f.clone())
        return feats

    def step(self, batch: Mapping[str, torch.Tensor]) -> ActivationPayload:
        """Forward ``batch`` (no grad), select, quantise: the payload to upload. Counts FLOPs and bytes."""
        ids, mask, labels, sample_ids = _check_batch(batch, need_ids=self.memo is not None)
        feats = self.features(batch)
        parts = quantize_absmax(feats, self.quant_bits, outliers=self.outliers)
        payload = ActivationPayload(parts=parts, shape=tuple(feats.shape), quant_bits=self.quant_bits,
                                    labels=labels.clone(), sample_ids=sample_ids.clone(),
                                    backbone_type=self.backbone_type, device_id=self.device_id, seq=self.seq,
                                    positions=self.positions, outliers=self.outliers,
                                    token_mask=mask.bool().clone() if self.positions == "all" else None)
        self.seq += 1
        self.flops += self.forward_flops(ids.shape[0], ids.shape[1])
        self.bytes_up += payload.nbytes
        self.samples_seen += ids.shape[0]
        return payload

    # ------------------------------------------------------------------ walking the local data
    def _pass_order(self, pass_idx: int) -> torch.Tensor:
        g = torch.Generator().manual_seed((int(self.seed) * 7919 + self.device_id) * 1009 + pass_idx)
        return torch.randperm(self.n_samples, generator=g)

    def batch_indices(self, seq: int) -> torch.Tensor | None:
        """Rows of the ``seq``-th minibatch (stateless: pass ``seq // n_batches``, seeded per pass), or ``None``
        past the last pass."""
        per_pass = -(-self.n_samples // self.batch_size)
        pass_idx, k = divmod(int(seq), per_pass)
        if self.passes is not None and pass_idx >= self.passes:
            return None
        return self._pass_order(pass_idx)[k * self.batch_size:(k + 1) * self.batch_size]

    def _iter_batches(self) -> Iterator[dict[str, torch.Tensor]]:
        seq = 0
        while (idx := self.batch_indices(seq)) is not None:
            yield self.batch_at(idx)
            seq += 1

    def batch_at(self, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """Rows ``idx`` of the local data (padding trimmed to the longest row), with their ``sample_ids``."""
        mask = self.data["attention_mask"][idx]
        width = int(mask.sum(1).max())
        out = {"input_ids": self.data["input_ids"][idx, :width], "attention_mask": mask[:, :width],
               "labels": self.data["labels"][idx]}
        base = self.data.get("sample_ids")
        out["sample_ids"] = base[idx] if base is not None else idx.clone()
        return out

    def next_batch(self) -> dict[str, torch.Tensor] | None:
        """The next local minibatch, or ``None`` once ``passes`` are done (or no data)."""
        if self.data is None or self.n_samples == 0:
            return None
        if self._batches is None:
            self._batches = self._iter_batches()
        return next(self._batches, None)

    def reset(self) -> None:
        """Forget counters and the data position (a fresh run)."""
        self.flops, self.bytes_up, self.samples_seen, self.seq, self._batches = 0.0, 0, 0, 0, None
