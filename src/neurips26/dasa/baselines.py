r"""Baseline cache/attention policies behind DASA's interface, for comparisons at equal KV budget.

1. :class:`DenseKVCache` — everything (the reference).
2. :class:`WindowKVCache` — Self-Forcing's rolling window of the last W frames.
3. :class:`SinkWindowKVCache` — the first S frames (attention sink, StreamingLLM / PackForcing) + the last W;
   on DASA's region path its sink frames play the keyframe's part (a rolling window has none).
4. :class:`RandomDropKVCache` — DASA's cache with a *random* token mask of the same keep ratio (keyframes,
   counts and positions as DASA): isolates the value of the dynamics score.
5. :class:`TempCacheMerge` — TempCache-style merge (our reading): a new key is folded into the co-located
   latest entry when it is among the $(1-\rho)$ most similar by cosine; the entry becomes the running mean
   of keys and values and its count $n$ grows (count bias $\log n$).
6. :func:`svg_head_mask` — Sparse-VideoGen-style static spatial (same frame) / temporal (same position) masks.
"""

from __future__ import annotations

import math

import torch

from ..constraints import Choice, Int, Real, Tensor, validate
from .cache import BaseKVCache, DynamicKVCache
from .dynamics import DASAConfig

_RATIO = Real(low=0.0, high=1.0, closed="right")


class DenseKVCache(BaseKVCache):
    """Stores every token (``dyn_mask`` and ``keyframe`` are ignored)."""

    def _ingest(self, layer, k, v, pos, frame_idx, dyn_mask, keyframe, p, f):
        self._push_all(layer, k, v, pos, keyframe)


class SinkWindowKVCache(BaseKVCache):
    """Keeps the first ``sink_frames`` frames and the last ``window_frames`` frames.

    Args:
        num_layers: transformer layers.
        window_frames: recent frames kept (>= 1).
        sink_frames: initial frames kept for ever (>= 0).
    """

    @validate(window_frames=Int(low=1), sink_frames=Int(low=0))
    def __init__(self, num_layers: int, window_frames: int, sink_frames: int = 2) -> None:
        self.window_frames, self.sink_frames = window_frames, sink_frames
        super().__init__(num_layers)

    def _ingest(self, layer, k, v, pos, frame_idx, dyn_mask, keyframe, p, f):
        self._push_all(layer, k, v, pos, keyframe)
        st = self._stores[layer]
        newest = frame_idx + f - 1
        for b in range(k.shape[0]):
            t = st.pos[b][:, 0]
            keep = (t < self.sink_frames) | (t > newest - self.window_frames)
            st.keep(b, keep.nonzero().squeeze(1))


    def keyframe_mask(self, layer: int) -> torch.Tensor:
        """``bool [B, M]``: the sink frames' entries (what a static-region query sees on DASA's region path)."""
        st = self._stores[layer]
        m = max(self.sizes(layer))
        out = torch.zeros(len(st.k), m, dtype=torch.bool)
        for b in range(len(st.k)):
            s = st.size(b)
            out[b, :s] = st.pos[b][:, 0].cpu() < self.sink_frames
        return out


class WindowKVCache(SinkWindowKVCache):
    """Self-Forcing's rolling window: the last ``window_frames`` frames."""

    def __init__(self, num_layers: int, window_frames: int) -> None:
        super().__init__(num_layers, window_frames, sink_frames=0)


class RandomDropKVCache(DynamicKVCache):
    """DASA's cache with a random mask: each non-keyframe frame keeps ``ceil(keep_ratio·P)`` uniformly random
    tokens (seeded), ignoring ``dyn_mask``.

    Args:
        num_layers: transformer layers.
        keep_ratio: fraction of each frame's tokens stored, in (0, 1].
        seed: seed of the drop pattern (the same pattern is used in every layer).
        cfg: DASA settings (``count_bias``).
    """

    @validate(keep_ratio=_RATIO, seed=Int(low=0))
    def __init__(self, num_layers: int, keep_ratio: float, seed: int = 0, cfg: DASAConfig | None = None) -> None:
        self.keep_ratio, self.seed = float(keep_ratio), seed
        super().__init__(num_layers, cfg)

    def reset(self) -> None:
        super().reset()
        self._patterns: dict[tuple[int, int, int], torch.Tensor] = {}

    def _keep_mask(self, layer, dyn_mask, b, sl):
        p = sl.stop - sl.start
        key = (b, sl.start, self._next_frame[layer])
        if key not in self._patterns:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + hash(key) % 1_000_003)
            idx = torch.randperm(p, generator=g)[: max(1, math.ceil(self.keep_ratio * p - 1e-9))]
            self._patterns[key] = torch.zeros(p, dtype=torch.bool).index_fill_(0, idx, True)
        return self._patterns[key]


class TempCacheMerge(BaseKVCache):
    """Merge a new token into the co-located latest entry when it is among the ``1 - keep_ratio`` most
    similar (cosine of keys, heads concatenated) of its frame; merged entries hold the running mean of K and V
    and count the frames they stand for.

    Args:
        num_layers: transformer layers.
        keep_ratio: fraction of each frame's tokens stored as new entries, in (0, 1].
    """

    uses_counts = True

    @validate(keep_ratio=_RATIO)
    def __init__(self, num_layers: int, keep_ratio: float) -> None:
        self.keep_ratio = float(keep_ratio)
        super().__init__(num_layers)

    def reset(self) -> None:
        super().reset()
        self._latest: list[torch.Tensor | None] = [None] * self.num_layers

    def _ingest(self, layer, k, v, pos, frame_idx, dyn_mask, keyframe, p, f):
        st = self._stores[layer]
        bsz, h, _, d = k.shape
        if self._latest[layer] is None:
            self._latest[layer] = torch.full((bsz, p), -1, dtype=torch.long)
        latest = self._latest[layer]
        n_keep = max(1, math.ceil(self.keep_ratio * p - 1e-9))
        for b in range(bsz):
            for fr in range(f):
                sl = slice(fr * p, (fr + 1) * p)
                kn, vn = k[b, :, sl], v[b, :, sl]                          # [H, P, d]
                if (latest[b] < 0).any():
                    keep = torch.ones(p, dtype=torch.bool)
                else:
                    ko = st.k[b][:, latest[b]]                              # [H, P, d]
                    cos = torch.nn.functional.cosine_similarity(
                        kn.permute(1, 0, 2).reshape(p, -1), ko.permute(1, 0, 2).reshape(p, -1), dim=1)
                    keep = torch.zeros(p, dtype=torch.bool)
                    keep[cos.topk(n_keep, largest=False).indices.cpu()] = True
                drop = (~keep).nonzero().squeeze(1)
                if drop.numel():
                    j = latest[b, drop]
                    n = st.count[b][j]
                    # running mean: e <- (n·e + x) / (n + 1)
                    st.k[b][:, j] = (st.k[b][:, j] * n[:, None] + kn[:, drop]) / (n[:, None] + 1)
                    st.v[b][:, j] = (st.v[b][:, j] * n[:, None] + vn[:, drop]) / (n[:, None] + 1)
                    st.count[b][j] = n + 1
                kidx = keep.nonzero().squeeze(1)
                idx = st.push(b, kn[:, kidx], vn[:, kidx], pos[sl][kidx], torch.ones(kidx.numel()),
                              torch.zeros(kidx.numel(), dtype=torch.bool))
                latest[b, kidx] = idx


@validate(pos_q=Tensor("N 3", finite=False), pos_k=Tensor("M 3", finite=False), kind=Choice("spatial", "temporal"))
def svg_head_mask(pos_q: torch.Tensor, pos_k: torch.Tensor, kind: str) -> torch.Tensor:
    """Sparse-VideoGen-style static mask ``bool [N, M]``: ``"spatial"`` heads attend within the same frame,
    ``"temporal"`` heads to the same ``(h, w)`` in every frame (``pos_q [N, 3]``, ``pos_k [M, 3]`` long)."""
    if kind == "spatial":
        return pos_q[:, None, 0] == pos_k[None, :, 0]
    return (pos_q[:, None, 1:] == pos_k[None, :, 1:]).all(-1)                               # "temporal"
