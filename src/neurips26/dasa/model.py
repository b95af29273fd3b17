r"""A tiny pixel-space chunk-wise autoregressive video diffusion transformer (the spec's stand-in for
Self-Forcing / Wan), with a KV cache behind :class:`~neurips26.dasa.cache.KVCachePolicy`.

- Frames ``[B, T, 3, S, S]`` are cut into ``patch × patch`` tokens, frame-major raster order.
- Factorised 3-D RoPE: the head dimension is split into (t, h, w) slices, each rotated by
  :func:`neurips26.nn.apply_rope` with its own axis position.
- adaLN-Zero blocks conditioned on the noise level $t$ (DiT); x₀-prediction flow matching,
  $x_t = (1 - t)\,x_0 + t\,\epsilon$.
- Training (teacher forcing): a clean stream (slightly noised) and a noisy stream; noisy chunk $c$ attends
  to clean chunks $< c$ and to itself, clean chunk $c$ to clean chunks $\le c$ (block-causal).
- Sampling (Self-Forcing): per chunk 4 steps $t \in \{1, .75, .5, .25\}$, each predicting $\hat x_0$ and
  re-noising to the next $t$, then a clean re-run at $t = 0$ writes the chunk's K/V into the cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.nn import apply_rope, layers, rope_cos_sin
from neurips26.nn.layers import AdaLNZeroBlock

from ..constraints import Bool, Choice, Instance, Int, Optional, Tensor, check_arguments, validate
from .attention import dasa_attention, dasa_attention_flex
from .baselines import DenseKVCache
from .cache import BaseKVCache
from .dynamics import DASAConfig, region_mask, token_dynamics, token_mask

SCHEDULE = (1.0, 0.75, 0.5, 0.25)


@dataclass
class VideoDiTConfig:
    """Shape of :class:`ARVideoDiT` (spec defaults: 64² frames, patch 8, d = 128, 4 blocks, 4 heads)."""

    frame_size: int = 64
    patch: int = 8
    dim: int = 128
    depth: int = 4
    heads: int = 4
    chunk_frames: int = 2
    rope_theta: float = 100.0
    mlp_ratio: int = 4
    copy_prior: bool = False       # x̂₀ = previous frame + f(·), f's output layer zero at init (see the module doc)

    def __post_init__(self) -> None:
        names = ("frame_size", "patch", "dim", "depth", "heads", "chunk_frames", "mlp_ratio")
        check_arguments("VideoDiTConfig", {**dict.fromkeys(names, Int(low=1)), "copy_prior": Bool()},
                        {name: getattr(self, name) for name in (*names, "copy_prior")})
        if self.frame_size % self.patch:
            raise ValueError(f"patch {self.patch} must divide frame_size {self.frame_size}")
        if self.dim % self.heads or (self.dim // self.heads) % 6:
            raise ValueError(f"dim/heads must be a multiple of 6 (three even RoPE slices), got "
                             f"{self.dim}/{self.heads}")

    @property
    def grid(self) -> int:
        return self.frame_size // self.patch

    @property
    def tokens_per_frame(self) -> int:
        return self.grid**2


@validate(start=Int(low=0), frames=Int(low=1), grid=Int(low=1))
def frame_positions(start: int, frames: int, grid: int) -> torch.Tensor:
    """``[frames·grid², 3]`` long (t, h, w) of frames ``start..start+frames-1``, frame-major raster."""
    t = torch.arange(start, start + frames).repeat_interleave(grid * grid)
    hh, ww = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    return torch.stack([t, hh.reshape(-1).repeat(frames), ww.reshape(-1).repeat(frames)], dim=1)


@validate(x=Tensor("B F C S S"), patch=Int(low=1))
def patchify(x: torch.Tensor, patch: int) -> torch.Tensor:
    """``[B, F, C, S, S]`` (square frames, finite) -> tokens ``[B, F·(S/p)², C·p²]``."""
    if x.shape[-1] % patch:
        raise ValueError(f"patchify: patch must divide the frame size {x.shape[-1]}, got {patch!r}")
    return _tokens(x, patch)


def _tokens(x: torch.Tensor, patch: int) -> torch.Tensor:
    """:func:`patchify` without the checks (values, NaN included, are only moved)."""
    b, f, c, s, _ = x.shape
    # each frame through the shared image patchify: [B F, C, S, S] -> [B F, g², C p²] -> [B, F g², C p²]
    return layers.patchify(x.flatten(0, 1), patch).reshape(b, f * (s // patch) ** 2, c * patch * patch)


@validate(tokens=Tensor("B N W", finite=False), frames=Int(low=1), patch=Int(low=1), channels=Int(low=1))
def unpatchify(tokens: torch.Tensor, frames: int, patch: int, channels: int = 3) -> torch.Tensor:
    """Inverse of :func:`patchify`: tokens ``[B, F·g², C·p²]`` -> ``[B, F, C, g·p, g·p]``."""
    b, n, width = tokens.shape
    g = int(math.isqrt(n // frames))
    if n % frames or g * g * frames != n or width != channels * patch * patch:
        raise ValueError(f"tokens of shape {tuple(tokens.shape)} are not {frames} frames of a square grid of "
                         f"{channels}·{patch}² = {channels * patch * patch}-wide patches")
    # [B, F g², C p²] -> [B F, g², C p²] -> shared image unpatchify [B F, C, g p, g p] -> [B, F, C, g p, g p]
    x = layers.unpatchify(tokens.reshape(b * frames, g * g, width), patch, g * patch, g * patch)
    return x.reshape(b, frames, channels, g * patch, g * patch)


def _shuffle_rows(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Each row of a bool ``[B, R]`` mask with its True entries moved to random places (same count per row)."""
    out = torch.zeros_like(mask)
    for b in range(mask.shape[0]):
        perm = torch.randperm(mask.shape[1], generator=generator)[: int(mask[b].sum())]
        out[b, perm.to(mask.device)] = True
    return out


class Rope3D(nn.Module):
    """Factorised rotary embedding: head dim split into equal even slices for t, h and w."""

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        self.slice = head_dim // 3
        self.theta = theta

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """``x: [B, H, N, hd]``, ``pos: [N, 3]`` -> rotated ``x``."""
        parts = []
        for axis in range(3):
            cos, sin = rope_cos_sin(pos[:, axis], self.slice, self.theta, dtype=x.dtype)
            sl = x[..., axis * self.slice:(axis + 1) * self.slice]
            parts.append(apply_rope(sl, cos.to(x.device), sin.to(x.device)))
        return torch.cat(parts, dim=-1)


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    r"""Sinusoidal embedding of noise levels ``t [...]`` in [0, 1] -> ``[..., dim]`` (of $1000\,t$)."""
    half = dim // 2
    freqs = torch.exp(-math.log(10_000) * torch.arange(half, device=t.device) / half)
    ang = 1000.0 * t[..., None].float() * freqs
    return torch.cat([ang.cos(), ang.sin()], dim=-1)


class DiTBlock(AdaLNZeroBlock):
    """adaLN-Zero transformer block (:class:`neurips26.nn.layers.AdaLNZeroBlock`: exact GELU, LayerNorm eps
    1e-5) with the 3-D RoPE on queries and keys:
    $x \\mathrel{+}= g_1 \\odot \\mathrm{Attn}(\\mathrm{LN}(x)(1+s_1)+b_1)$,
    same for the MLP; $(b, s, g)$ from the per-token noise-level embedding."""

    def __init__(self, dim: int, heads: int, mlp_ratio: int, rope: Rope3D) -> None:
        super().__init__(dim, heads, mlp_ratio, norm_eps=1e-5, gelu="none")
        self.rope = rope

    def forward(self, x: torch.Tensor, temb: torch.Tensor, pos: torch.Tensor, attend) -> torch.Tensor:
        """``x: [B, N, D]``, ``temb: [B, N, D]``, ``attend(q, k, v) -> [B, H, N, hd]`` (keys rotated)."""
        return super().forward(x, temb, rotate=lambda t: self.rope(t, pos), attend=attend)


class ARVideoDiT(nn.Module):
    """Chunk-wise AR video diffusion transformer (pixel space, x₀-prediction).

    Args:
        config: a :class:`VideoDiTConfig`.
    """

    def __init__(self, config: VideoDiTConfig | None = None) -> None:
        super().__init__()
        self.config = c = config or VideoDiTConfig()
        patch_dim = 3 * c.patch**2
        self.embed = nn.Linear(patch_dim, c.dim)
        self.t_mlp = nn.Sequential(nn.Linear(c.dim, c.dim), nn.SiLU(), nn.Linear(c.dim, c.dim))
        rope = Rope3D(c.dim // c.heads, c.rope_theta)
        self.blocks = nn.ModuleList([DiTBlock(c.dim, c.heads, c.mlp_ratio, rope) for _ in range(c.depth)])
        self.norm_out = nn.LayerNorm(c.dim, elementwise_affine=False)
        self.ada_out = nn.Linear(c.dim, 2 * c.dim)
        self.out = nn.Linear(c.dim, patch_dim)
        nn.init.zeros_(self.ada_out.weight)
        nn.init.zeros_(self.ada_out.bias)
        if c.copy_prior:           # f = 0 at initialisation: the model starts as "repeat the previous frame"
            nn.init.zeros_(self.out.weight)
            nn.init.zeros_(self.out.bias)

    # ---- core -----------------------------------------------------------------------------------------
    def _run(self, tokens: torch.Tensor, t_tok: torch.Tensor, pos: torch.Tensor, attend_for_layer,
             base: torch.Tensor | None = None) -> torch.Tensor:
        """Tokens -> predicted x̂₀ tokens; ``base`` (tokens, same shape) is added to the output (copy prior)."""
        temb = self.t_mlp(timestep_embedding(t_tok, self.config.dim))
        x = self.embed(tokens)
        for i, blk in enumerate(self.blocks):
            x = blk(x, temb, pos, attend_for_layer(i))
        sh, sc = self.ada_out(F.silu(temb)).chunk(2, dim=-1)
        out = self.out(self.norm_out(x) * (1 + sc) + sh)
        return out if base is None else out + base

    def _base(self, prev_frame: torch.Tensor | None, b: int, f: int, write: bool) -> torch.Tensor | None:
        """The copy prior's base tokens ``[B, F·P, C·p²]``: ``prev_frame [B, 3, S, S]`` repeated for the chunk's
        ``f`` frames (None without the prior; zeros for a cache-writing re-run given no frame: its output is
        not used)."""
        c = self.config
        if not c.copy_prior:
            return None
        if prev_frame is None:
            if not write:
                raise ValueError("a copy_prior model needs prev_frame [B, 3, S, S] (the frame before the chunk) "
                                 "to predict x̂₀; only a cache-writing re-run (write=...) may omit it")
            return None
        if isinstance(prev_frame, torch.Tensor) and prev_frame.dim() == 4:
            prev_frame = prev_frame[:, None]                                   # [B, 1, 3, S, S] also accepted
        Tensor(f"{b} 1 3 {c.frame_size} {c.frame_size}").check(prev_frame, "prev_frame", "ARVideoDiT.forward")
        return patchify(prev_frame.expand(b, f, *prev_frame.shape[2:]), c.patch)

    def _check_frames(self, name: str, x: object, where: str) -> torch.Tensor:
        """``x`` must be finite frames ``[B, F, 3, S, S]`` of this model's size (the constraint depends on the
        config, so it is built here rather than declared)."""
        s = self.config.frame_size
        Tensor(f"B F 3 {s} {s}").check(x, name, where)
        return x

    @validate(attn=Choice("dense", "dasa"), write=Optional(Instance(dict)), backend=Choice("gather", "flex"))
    def forward(self, x_noisy: torch.Tensor, t, cache: BaseKVCache | None = None, start_frame: int = 0,
                attn: str = "dense", *, region: torch.Tensor | None = None, cfg: DASAConfig | None = None,
                write: dict | None = None, stats: dict | None = None, backend: str = "gather",
                prev_frame: torch.Tensor | None = None) -> torch.Tensor:
        """Denoise one chunk: ``x_noisy [B, F, 3, S, S]`` at level ``t`` (float or ``[B]``) -> $\\hat x_0$.

        ``prev_frame [B, 3, S, S]``: the frame before the chunk, the base of a ``copy_prior`` model's residual
        (required there, except for a cache-writing re-run; ignored without the prior).

        Attention runs over ``[cache ; chunk]`` (:func:`dasa_attention`); ``attn="dasa"`` uses the region mask
        ``region [B, R]`` with ``cfg``'s static policy, ``"dense"`` ignores it. ``write={"dyn_mask", "keyframe"}``
        appends each layer's K/V of this chunk to ``cache`` (the clean re-run) after the whole forward has
        succeeded and every layer's chunk is validated: a failed forward leaves the cache as it was.
        ``backend``: ``"gather"`` (:func:`dasa_attention`, per-sequence gather + SDPA, any use) or ``"flex"``
        (:func:`dasa_attention_flex`, one ``flex_attention`` call with a ``BlockMask``; inference only).
        """
        c = self.config
        x_noisy = self._check_frames("x_noisy", x_noisy, "ARVideoDiT.forward")
        b, f = x_noisy.shape[:2]
        cfg = (cfg or DASAConfig()).for_grid((c.grid, c.grid))
        tt = torch.as_tensor(t, dtype=torch.float32, device=x_noisy.device).reshape(-1).expand(b)
        tokens = patchify(x_noisy, c.patch)
        pos = frame_positions(start_frame, f, c.grid).to(x_noisy.device)
        rm = region if attn == "dasa" else None
        if write is not None and not isinstance(cache, BaseKVCache):
            raise ValueError(f"write= needs a cache policy to write into, got {type(cache).__name__}")
        attention = dasa_attention if backend == "gather" else dasa_attention_flex
        pending: list[tuple[torch.Tensor, torch.Tensor]] = []

        def attend_for_layer(i):
            def attend(q, k, v):
                o = attention(q, k, v, cache, i, rm, cfg, stats=stats)
                if write is not None:
                    pending.append((k, v))         # written only once every layer has succeeded
                return o
            return attend

        base = self._base(prev_frame, b, f, write is not None)
        out = self._run(tokens, tt[:, None].expand(b, tokens.shape[1]), pos, attend_for_layer, base)
        if write is not None:
            # all or nothing: validate every layer's chunk first, then commit (a failed forward writes nothing)
            dyn, kf = write.get("dyn_mask"), write.get("keyframe", False)
            for i, (k, v) in enumerate(pending):
                cache.validate_append(i, k, v, pos, start_frame, dyn)
            for i, (k, v) in enumerate(pending):
                cache.append(i, k, v, pos, start_frame, dyn, kf)
        return unpatchify(out, f, c.patch)

    # ---- training -------------------------------------------------------------------------------------
    def teacher_forcing_loss(self, clip: torch.Tensor, generator: torch.Generator | None = None,
                             context_noise: float = 0.05) -> torch.Tensor:
        """x₀-MSE of the noisy stream (chunks ≥ 1) under the block-causal clean/noisy mask; ``clip [B, T, 3, S, S]``,
        T a multiple of ``chunk_frames``; noise levels drawn per (sequence, chunk) from the sampling schedule
        (:meth:`teacher_forcing_noise`, then :meth:`teacher_forcing_loss_given`)."""
        clip = self._check_tf_clip(clip)
        noise = self.teacher_forcing_noise(clip.shape[0], clip.shape[1], generator)
        return self.teacher_forcing_loss_given(clip, *noise, context_noise=context_noise)

    def _check_tf_clip(self, clip: torch.Tensor) -> torch.Tensor:
        c = self.config
        clip = self._check_frames("clip", clip, "ARVideoDiT.teacher_forcing_loss")
        tf = clip.shape[1]
        if tf % c.chunk_frames or tf < 2 * c.chunk_frames:
            raise ValueError(f"clip length must be a multiple of {c.chunk_frames} and >= 2 chunks, got {tf}")
        return clip

    def teacher_forcing_noise(self, batch: int, frames: int, generator: torch.Generator | None = None
                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The random draws of :meth:`teacher_forcing_loss` for ``batch`` clips of ``frames`` frames, in its order,
        one row per clip: ``(level [B, chunks] long index into the schedule, eps [B, L, C], u [B, 1, 1] uniform of
        the context noise, eps_clean [B, L, C])`` (L tokens, C = 3·p²). Drawn for a whole global batch, they can be
        sharded by row with the clips (data-parallel training equals one process)."""
        c = self.config
        shape = (batch, frames * c.tokens_per_frame, 3 * c.patch**2)
        level = torch.randint(len(SCHEDULE), (batch, frames // c.chunk_frames), generator=generator)
        eps = torch.randn(shape, generator=generator)
        u = torch.rand(batch, 1, 1, generator=generator)
        return level, eps, u, torch.randn(shape, generator=generator)

    @validate(clip=Tensor("B T _ _ _", finite=False), level=Tensor("B K", dtype="integer"), eps=Tensor("B L C"),
              u=Tensor("B 1 1"), eps_clean=Tensor("B L C"))
    def teacher_forcing_loss_given(self, clip: torch.Tensor, level: torch.Tensor, eps: torch.Tensor,
                                   u: torch.Tensor, eps_clean: torch.Tensor, *, context_noise: float = 0.05
                                   ) -> torch.Tensor:
        """:meth:`teacher_forcing_loss` with its draws given (:meth:`teacher_forcing_noise`, rows = clips); a mean
        over rows of equal size (each clip's own noise), so row shards average to the whole batch's loss."""
        c = self.config
        clip = self._check_tf_clip(clip)
        b, tf = clip.shape[:2]
        n_chunks, p = tf // c.chunk_frames, c.tokens_per_frame
        dev = clip.device
        x0 = patchify(clip, c.patch)                                                 # [B, L, C]
        lt = x0.shape[1]
        chunk = torch.arange(lt, device=dev) // (c.chunk_frames * p)
        sched = torch.tensor(SCHEDULE, device=dev)
        t_chunk = sched[level.to(dev)]
        t_tok = t_chunk[:, chunk]                                                   # [B, L]
        eps = eps.to(dev)
        noisy = (1 - t_tok[..., None]) * x0 + t_tok[..., None] * eps
        tc = context_noise * u.to(dev)
        clean = (1 - tc) * x0 + tc * eps_clean.to(dev)
        tokens = torch.cat([clean, noisy], dim=1)
        t_all = torch.cat([tc[..., 0].expand(b, lt), t_tok], dim=1)
        pos = frame_positions(0, tf, c.grid).to(dev).repeat(2, 1)
        ci, cj = chunk[:, None], chunk[None, :]
        # clean i sees clean j (c_j <= c_i); noisy i sees clean j (c_j < c_i) and noisy j (c_j == c_i)
        mask = torch.cat([torch.cat([cj <= ci, torch.zeros_like(ci == cj)], dim=1),
                          torch.cat([cj < ci, cj == ci], dim=1)], dim=0)

        def attend_for_layer(i):
            return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

        base = None
        if c.copy_prior:   # noisy chunk c's base: the last frame of chunk c − 1, clean (as generate gives it)
            last = x0.view(b, n_chunks, c.chunk_frames, p, -1)[:, :, -1:]                  # [B, n, 1, P, C]
            prev = torch.cat([torch.zeros_like(last[:, :1]), last[:, :-1]], dim=1)       # chunk 0: no frame
            base = torch.cat([torch.zeros_like(clean),
                              prev.expand(-1, -1, c.chunk_frames, -1, -1).reshape(clean.shape)], dim=1)
        pred = self._run(tokens, t_all, pos, attend_for_layer, base)[:, lt:]
        target_rows = chunk >= 1
        return F.mse_loss(pred[:, target_rows], x0[:, target_rows])

    # ---- sampling -------------------------------------------------------------------------------------
    @validate(steps=Int(low=1), policy=Optional(Instance(BaseKVCache, "KV cache policy (BaseKVCache)")),
              region_policy=Choice("dynamics", "random"))
    @torch.no_grad()
    def generate(self, context: torch.Tensor, num_frames: int, steps: int = 4, policy: BaseKVCache | None = None,
                 generator: torch.Generator | None = None, *, cfg: DASAConfig | None = None,
                 regions: bool | None = None, region_policy: str = "dynamics", region_seed: int = 0,
                 stats: dict | None = None, backend: str = "gather") -> torch.Tensor:
        """Roll out ``num_frames`` frames (context included) from ``context [B, chunk_frames, 3, S, S]``.

        Args:
            policy: the KV cache (reset first); default :class:`DenseKVCache`.
            cfg: DASA settings for the token masks written to the cache and, if ``regions``, the region masks
                predicted from the previous chunk (motion persistence; never from ground truth).
            regions: use DASA's region path (static regions take the cheap path); default: when ``cfg`` is
                given (a plain ``generate(context, n)`` is dense attention over whatever ``policy`` stores).
            steps: denoising steps per chunk (the first ``steps`` levels of 1, .75, .5, .25, ...).
            region_policy: ``"dynamics"`` (DASA: the regions of highest predicted dynamics) or ``"random"``
                (the same number of regions per sequence, drawn at random with ``region_seed``: the control
                for region allocation at equal attended pairs).
            stats: accumulates attended (query, key) pairs in ``stats["pairs"]``.
            backend: attention path of every forward, ``"gather"`` or ``"flex"`` (see :meth:`forward`).
        """
        c = self.config
        context = self._check_frames("context", context, "ARVideoDiT.generate")
        if context.shape[1] != c.chunk_frames:
            raise ValueError(f"context must hold one chunk of {c.chunk_frames} frames, got {context.shape[1]}")
        if not isinstance(num_frames, int) or num_frames < c.chunk_frames or num_frames % c.chunk_frames:
            raise ValueError(f"num_frames must be a multiple of {c.chunk_frames} >= {c.chunk_frames}, got "
                             f"{num_frames!r}")
        if regions is None:            # the region path only when asked for DASA settings
            regions = cfg is not None
        cfg = (cfg or DASAConfig()).for_grid((c.grid, c.grid))
        policy = DenseKVCache(c.depth) if policy is None else policy
        if policy.num_layers != c.depth:
            raise ValueError(f"policy must be a cache with num_layers = {c.depth}, got {policy!r}")
        policy.reset()
        levels = [1.0 - i / steps for i in range(steps)]
        b, dev = context.shape[0], context.device
        frames = [context]
        self(context, 0.0, policy, 0, write={"dyn_mask": None, "keyframe": True}, stats=stats, backend=backend)
        for ci in range(1, num_frames // c.chunk_frames):
            start = ci * c.chunk_frames
            prev = patchify(frames[-1], c.patch).view(b, c.chunk_frames, c.tokens_per_frame, -1)
            rmask, attn = None, "dense"
            if regions and cfg.static_policy != "full":
                rmask = region_mask(token_dynamics(prev[:, -2], prev[:, -1], cfg.score), (c.grid, c.grid), cfg)
                if region_policy == "random":
                    rmask = _shuffle_rows(rmask, torch.Generator().manual_seed(region_seed * 100_003 + ci))
                attn = "dasa"
            shape = (b, c.chunk_frames, 3, c.frame_size, c.frame_size)
            x = torch.randn(shape, generator=generator).to(dev)
            for i, t in enumerate(levels):
                x0 = self(x, t, policy, start, attn, region=rmask, cfg=cfg, stats=stats,
                          backend=backend, prev_frame=frames[-1][:, -1]).clamp(-0.5, 1.5)
                if i + 1 < len(levels):
                    tn = levels[i + 1]
                    x = (1 - tn) * x0 + tn * torch.randn(shape, generator=generator).to(dev)
            frames.append(x0)
            keyframe = ci % cfg.keyframe_every == 0
            self(x0, 0.0, policy, start, write={"dyn_mask": self._dyn_mask(x0, prev[:, -1], cfg),
                                                 "keyframe": keyframe}, stats=stats, backend=backend)
        return torch.cat(frames, dim=1)

    def _dyn_mask(self, x0: torch.Tensor, prev_last: torch.Tensor, cfg: DASAConfig) -> torch.Tensor:
        """``bool [B, F·P]``: each frame's dynamic tokens against the frame before it (within the chunk, and
        the previous chunk's last frame for the first)."""
        c = self.config
        cur = patchify(x0, c.patch).view(x0.shape[0], c.chunk_frames, c.tokens_per_frame, -1)
        masks, before = [], prev_last
        for f in range(c.chunk_frames):
            masks.append(token_mask(token_dynamics(before, cur[:, f], cfg.score), (c.grid, c.grid), cfg))
            before = cur[:, f]
        return torch.cat(masks, dim=1)
