r"""KV-cache policies with one interface, and DASA's dynamic cache (inferred details, see the package docstring).

Tokens arrive chunk by chunk in frame-major raster order: ``k, v: [B, H, N, d]`` (keys already rotated by
RoPE), ``pos: [N, 3]`` long ``(t, h, w)``, ``N = F·h·w`` for a chunk of F whole frames. ``get(layer)`` returns
the stored entries padded across the batch: ``k, v: [B, H, M, d]``, ``pos: [B, M, 3]`` and
``log_count: [B, M]`` ($\log n_i$, $-\infty$ on padding; ``None`` when every entry counts once and no row is
padded).

**DASA (B).** A non-keyframe chunk keeps K/V only where ``dyn_mask`` is True. A dropped (static) token is
represented by the latest stored entry at its $(h, w)$, whose count $n_i$ grows by one. Attention with the
count bias, $\mathrm{softmax}(q k^\top/\sqrt d + \log n)$, then equals dense attention whenever a dropped key
and value equal their representative's: $n_i$ identical logits $e^{z}$ sum to $e^{z + \log n_i}$.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import torch

from ..constraints import Instance, Int, Optional, Tensor, check_arguments, validate
from .dynamics import DASAConfig


@runtime_checkable
class KVCachePolicy(Protocol):
    """What :func:`~neurips26.dasa.attention.dasa_attention` and :class:`ARVideoDiT` need from a cache."""

    num_tokens: int
    nbytes: int

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, frame_idx: int,
               dyn_mask: torch.Tensor | None = None, keyframe: bool = False) -> None: ...

    def get(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]: ...

    def reset(self) -> None: ...


class _Store:
    """Ragged per-sequence storage of one layer: ``k, v [H, M_b, d]``, ``pos [M_b, 3]``, ``count [M_b]``,
    ``frame [M_b]`` (the chunk's first frame), ``kf [M_b]`` (from a keyframe)."""

    def __init__(self, batch: int) -> None:
        self.k: list[torch.Tensor | None] = [None] * batch
        self.v: list[torch.Tensor | None] = [None] * batch
        self.pos: list[torch.Tensor | None] = [None] * batch
        self.count: list[torch.Tensor | None] = [None] * batch
        self.kf: list[torch.Tensor | None] = [None] * batch

    def size(self, b: int) -> int:
        return 0 if self.k[b] is None else self.k[b].shape[1]

    def push(self, b: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, count: torch.Tensor,
             kf: torch.Tensor) -> torch.Tensor:
        """Append entries to sequence ``b``; return their indices."""
        start = self.size(b)
        if self.k[b] is None:
            self.k[b], self.v[b], self.pos[b], self.count[b], self.kf[b] = k, v, pos, count, kf
        else:
            self.k[b] = torch.cat([self.k[b], k], dim=1)
            self.v[b] = torch.cat([self.v[b], v], dim=1)
            self.pos[b] = torch.cat([self.pos[b], pos], dim=0)
            self.count[b] = torch.cat([self.count[b], count], dim=0)
            self.kf[b] = torch.cat([self.kf[b], kf], dim=0)
        return torch.arange(start, start + k.shape[1], device=k.device)

    def keep(self, b: int, idx: torch.Tensor) -> None:
        """Keep only entries ``idx`` of sequence ``b`` (eviction)."""
        self.k[b], self.v[b] = self.k[b][:, idx], self.v[b][:, idx]
        self.pos[b], self.count[b], self.kf[b] = self.pos[b][idx], self.count[b][idx], self.kf[b][idx]


#: what one chunk's append must be (see the module docstring); the layer's range is the cache's own
_APPEND = {"k": Tensor("B H N d", dtype="float"), "v": Tensor("B H N d", dtype="float"),
           "pos": Tensor("N 3", dtype=torch.long, finite=False), "frame_idx": Int(low=0),
           "dyn_mask": Optional(Tensor("B N", dtype="bool"))}


class BaseKVCache:
    """Validation, ragged storage and padded reads shared by every policy. Subclasses implement ``_ingest``.

    Args:
        num_layers: number of transformer layers (one store each).
    """

    uses_counts = False

    @validate(num_layers=Int(low=1))
    def __init__(self, num_layers: int) -> None:
        self.num_layers = num_layers
        self.reset()

    def reset(self) -> None:
        """Forget every entry (the grid and batch shape are learnt again from the next append)."""
        self._stores: list[_Store | None] = [None] * self.num_layers
        self._next_frame = [0] * self.num_layers
        self._shape: tuple[int, int, int] | None = None  # (B, H, d)
        self.grid_hw: tuple[int, int] | None = None
        self._dtype = None

    # ---- validation -------------------------------------------------------------------------------------
    def _validate(self, layer: int, k: object, v: object, pos: object, frame_idx: object,
                  dyn_mask: object) -> tuple[int, int]:
        where = f"{type(self).__name__}.append"
        check_arguments(where, {"layer": self._layer(), **_APPEND},
                        {"layer": layer, "k": k, "v": v, "pos": pos, "frame_idx": frame_idx, "dyn_mask": dyn_mask})
        b, h, n, d = k.shape
        if self._shape is not None and (b, h, d) != self._shape:
            raise ValueError(f"{where}: k has (B, H, d) = {(b, h, d)}, the cache holds {self._shape}")
        if frame_idx < self._next_frame[layer]:
            raise ValueError(f"{where}: frame_idx {frame_idx} goes backwards: layer {layer} already holds frames up "
                             f"to {self._next_frame[layer] - 1}")
        grid = self.grid_hw or (int(pos[:, 1].max()) + 1, int(pos[:, 2].max()) + 1)
        p = grid[0] * grid[1]
        if n % p:
            raise ValueError(f"a chunk must hold whole frames of {grid[0]}x{grid[1]} = {p} tokens, got N = {n} "
                             "(partial chunk)")
        f = n // p
        hh, ww = torch.meshgrid(torch.arange(grid[0]), torch.arange(grid[1]), indexing="ij")
        expect = torch.stack([(frame_idx + torch.arange(f)).repeat_interleave(p),
                              hh.reshape(-1).repeat(f), ww.reshape(-1).repeat(f)], dim=1).to(pos.device)
        if not torch.equal(pos, expect):
            raise ValueError(f"pos must list frames {frame_idx}..{frame_idx + f - 1} of the {grid[0]}x{grid[1]} "
                             "grid in frame-major raster order (t, h, w), starting at frame_idx")
        return p, f

    def _layer(self) -> Int:
        return Int(low=0, high=self.num_layers - 1)

    def validate_append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, frame_idx: int,
                        dyn_mask: torch.Tensor | None = None) -> None:
        """Raise the error :meth:`append` would raise, writing nothing (for all-or-nothing multi-layer writes)."""
        self._validate(layer, k, v, pos, frame_idx, dyn_mask)

    # ---- the interface ---------------------------------------------------------------------------------
    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, frame_idx: int,
               dyn_mask: torch.Tensor | None = None, keyframe: bool = False) -> None:
        """Write one chunk's K/V of ``layer`` (see the module docstring for shapes); validated first."""
        p, f = self._validate(layer, k, v, pos, frame_idx, dyn_mask)
        if self.grid_hw is None:
            self.grid_hw = (int(pos[:, 1].max()) + 1, int(pos[:, 2].max()) + 1)
            self._shape = (k.shape[0], k.shape[1], k.shape[3])
            self._dtype = k.dtype
        if self._stores[layer] is None:
            self._stores[layer] = _Store(k.shape[0])
        self._ingest(layer, k, v, pos, frame_idx, dyn_mask, bool(keyframe), p, f)
        self._next_frame[layer] = frame_idx + f

    def _ingest(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, frame_idx: int,
                dyn_mask: torch.Tensor | None, keyframe: bool, p: int, f: int) -> None:
        raise NotImplementedError

    def _push_all(self, layer: int, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, keyframe: bool) -> None:
        st = self._stores[layer]
        n = k.shape[2]
        for b in range(k.shape[0]):
            st.push(b, k[b], v[b], pos, torch.ones(n, device=k.device),
                    torch.full((n,), keyframe, dtype=torch.bool, device=k.device))

    def sizes(self, layer: int) -> list[int]:
        """Stored entries per sequence of ``layer``."""
        st = self._stores[layer]
        return [0] * (self._shape[0] if self._shape else 0) if st is None else [st.size(b) for b in range(len(st.k))]

    def get(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``k, v [B, H, M, d]``, ``pos [B, M, 3]``, ``log_count [B, M]`` (or ``None``), padded to the longest."""
        self._layer().check(layer, "layer", f"{type(self).__name__}.get")
        st = self._stores[layer]
        if st is None:
            raise ValueError(f"layer {layer} of the cache is empty; append a chunk first")
        sizes = [st.size(b) for b in range(len(st.k))]
        m = max(sizes)
        bsz, h, d = self._shape
        dev = st.k[0].device
        k = torch.zeros(bsz, h, m, d, dtype=self._dtype, device=dev)
        v = torch.zeros_like(k)
        pos = torch.zeros(bsz, m, 3, dtype=torch.long, device=dev)
        logc = torch.full((bsz, m), -math.inf, device=dev)
        for b, s in enumerate(sizes):
            k[b, :, :s], v[b, :, :s], pos[b, :s] = st.k[b], st.v[b], st.pos[b]
            logc[b, :s] = st.count[b].log()
        uniform = len(set(sizes)) == 1
        if uniform and not self.uses_counts:
            return k, v, pos, None
        return k, v, pos, logc

    def keyframe_mask(self, layer: int) -> torch.Tensor:
        """``bool [B, M]``: entries of the latest keyframe chunk (all False if the policy has none)."""
        st = self._stores[layer]
        m = max(self.sizes(layer))
        out = torch.zeros(len(st.k), m, dtype=torch.bool)
        latest = getattr(self, "_latest_kf", None)
        for b in range(len(st.k)):
            if latest is not None and latest[layer] is not None:
                out[b, latest[layer][b]] = True
        return out

    @property
    def num_tokens(self) -> int:
        """Most entries any sequence holds in any layer (the per-sequence, per-layer KV budget)."""
        return max((max(self.sizes(layer)) for layer in range(self.num_layers)
                    if self._stores[layer] is not None), default=0)

    @property
    def nbytes(self) -> int:
        """Bytes of stored K and V (padding excluded)."""
        if self._shape is None:
            return 0
        _, h, d = self._shape
        item = torch.finfo(self._dtype).bits // 8
        return sum(2 * h * d * item * sum(self.sizes(layer)) for layer in range(self.num_layers)
                   if self._stores[layer] is not None)


class DynamicKVCache(BaseKVCache):
    """DASA's compressed cache: stores exactly the ``dyn_mask`` tokens of a chunk (all of a keyframe, and any
    token whose $(h, w)$ has no entry yet); counts each dropped token on the latest stored entry at its
    $(h, w)$; keeps original positions.

    Args:
        num_layers: transformer layers.
        cfg: the :class:`DASAConfig` (only ``count_bias`` matters to the cache).
    """

    uses_counts = True

    @validate(cfg=Optional(Instance(DASAConfig)))
    def __init__(self, num_layers: int, cfg: DASAConfig | None = None) -> None:
        self.cfg = DASAConfig() if cfg is None else cfg
        super().__init__(num_layers)

    def reset(self) -> None:
        super().reset()
        self._latest: list[torch.Tensor | None] = [None] * self.num_layers   # [B, P] entry index or -1
        self._latest_kf: list[list[torch.Tensor] | None] = [None] * self.num_layers

    def _keep_mask(self, layer: int, dyn_mask: torch.Tensor | None, b: int, sl: slice) -> torch.Tensor | None:
        return None if dyn_mask is None else dyn_mask[b, sl]

    def _ingest(self, layer, k, v, pos, frame_idx, dyn_mask, keyframe, p, f):
        st = self._stores[layer]
        bsz = k.shape[0]
        if self._latest[layer] is None:
            self._latest[layer] = torch.full((bsz, p), -1, dtype=torch.long)
        latest = self._latest[layer]
        kf_idx = []
        for b in range(bsz):
            new_kf = []
            for fr in range(f):
                sl = slice(fr * p, (fr + 1) * p)
                m = self._keep_mask(layer, dyn_mask, b, sl)
                keep = torch.ones(p, dtype=torch.bool) if keyframe or m is None else m.cpu().clone()
                keep |= latest[b] < 0          # a position never stored must be stored once
                kidx = keep.nonzero().squeeze(1)
                drop = (~keep).nonzero().squeeze(1)
                if drop.numel():
                    # each dropped token adds one frame to its representative: n_i <- n_i + 1
                    st.count[b].index_add_(0, latest[b, drop].to(st.count[b].device),
                                           torch.ones(drop.numel(), device=st.count[b].device))
                idx = st.push(b, k[b, :, sl][:, kidx], v[b, :, sl][:, kidx], pos[sl][kidx],
                              torch.ones(kidx.numel(), device=k.device),
                              torch.full((kidx.numel(),), keyframe, dtype=torch.bool, device=k.device))
                latest[b, kidx] = idx.cpu()
                new_kf.append(idx)
            kf_idx.append(torch.cat(new_kf))
        if keyframe:
            self._latest_kf[layer] = kf_idx

    def get(self, layer):
        k, v, pos, logc = super().get(layer)
        if not self.cfg.count_bias:
            logc = torch.where(torch.isfinite(logc), torch.zeros_like(logc), logc)
        return k, v, pos, logc

    def counts(self, layer: int) -> list[torch.Tensor]:
        """Per-sequence counts ``[M_b]`` of ``layer`` (frames each entry stands for)."""
        return [c.clone() for c in self._stores[layer].count]
