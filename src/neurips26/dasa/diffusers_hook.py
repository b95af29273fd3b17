r"""A diffusers-shaped attention processor that puts a :class:`~neurips26.dasa.cache.KVCachePolicy` (DASA's
dynamic cache or any baseline) behind the self-attention of a diffusers Wan transformer
(``diffusers.WanTransformer3DModel``, the backbone of Self-Forcing / CausVid), for chunk-wise AR generation.

diffusers runs a transformer on the whole latent it is given; a chunk-wise AR sampler calls it once per chunk
and per denoising step. :func:`attach_dasa` replaces every block's ``attn1`` processor with a
:class:`DASAAttnProcessor` sharing one :class:`DASAStream`; before each call the sampler says which chunk it
is (:meth:`DASAStream.begin`): its first latent frame, the region mask of DASA's cheap static path, and
whether this call is the clean re-run that writes the chunk's K/V into the cache. The processor then

* projects q, k, v as Wan's own processor does (``to_q/to_k/to_v``, ``norm_q/norm_k``, heads);
* applies Wan's 3-D RoPE at the chunk's **absolute** frame positions (the transformer's ``rope`` tables,
  offset by ``start_frame``; diffusers' own ``rotary_emb`` starts every call at frame 0), so cached keys keep
  their original positions;
* attends with :func:`~neurips26.dasa.attention.dasa_attention` over ``[cache ; chunk]`` (count bias, static
  policy and region mask as in :class:`~neurips26.dasa.model.ARVideoDiT`);
* on a writing call, keeps each layer's K/V aside and commits them to the cache only after the whole
  transformer forward has returned (a forward hook): a failed forward writes nothing.

Cross-attention (``attn2``) keeps its processor. No diffusers import is needed here (the processor is
duck-typed on Wan's attention module); the tests build a ``WanTransformer3DModel`` from a tiny config.
"""

from __future__ import annotations

import torch

from ..constraints import Choice, Instance, Int, validate
from .attention import dasa_attention
from .cache import BaseKVCache
from .dynamics import DASAConfig, token_dynamics, token_mask


def _positions(start: int, frames: int, hw: tuple[int, int], device) -> torch.Tensor:
    """``[frames·h·w, 3]`` long (t, h, w), frame-major raster (Wan's ``flatten(2)`` order)."""
    h, w = hw
    t = torch.arange(start, start + frames).repeat_interleave(h * w)
    hh, ww = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    return torch.stack([t, hh.reshape(-1).repeat(frames), ww.reshape(-1).repeat(frames)], dim=1).to(device)


def wan_rope(rope: torch.nn.Module, start: int, frames: int, hw: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Wan's rotary tables ``(cos, sin) [1, F·h·w, 1, head_dim]`` for latent frames ``start..start+F-1`` (as
    ``WanRotaryPosEmbed.forward`` builds them for frames ``0..F-1``), from ``rope``'s ``freqs_cos/freqs_sin``
    buffers and its ``t_dim/h_dim/w_dim`` split."""
    if start + frames > rope.freqs_cos.shape[0]:
        raise ValueError(f"frames up to {start + frames - 1} exceed the transformer's rope_max_seq_len "
                         f"{rope.freqs_cos.shape[0]}")
    h, w = hw
    split = [rope.t_dim, rope.h_dim, rope.w_dim]
    out = []
    for table in (rope.freqs_cos, rope.freqs_sin):
        ft, fh, fw = table.split(split, dim=1)
        parts = [ft[start:start + frames].view(frames, 1, 1, -1).expand(frames, h, w, -1),
                 fh[:h].view(1, h, 1, -1).expand(frames, h, w, -1),
                 fw[:w].view(1, 1, w, -1).expand(frames, h, w, -1)]
        out.append(torch.cat(parts, dim=-1).reshape(1, frames * h * w, 1, -1))
    return out[0], out[1]


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Wan's interleaved-pair rotation of ``x [B, N, H, d]``."""
    x1, x2 = x.unflatten(-1, (-1, 2)).unbind(-1)
    c, s = cos[..., 0::2], sin[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = (x1 * c - x2 * s).to(x.dtype)
    out[..., 1::2] = (x1 * s + x2 * c).to(x.dtype)
    return out


_POLICY = Instance(BaseKVCache, "KV cache policy (BaseKVCache)")


class DASAStream:
    """The state shared by the processors of one transformer: the cache policy, the DASA config, the latent
    shape of the current call and the chunk being generated.

    Args:
        policy: the KV cache (one layer per transformer block).
        cfg: DASA settings (region size / dilation resolved from the latent token grid).
        patch_size: the transformer's ``(p_t, p_h, p_w)``.
        rope: the transformer's ``WanRotaryPosEmbed`` module.
    """

    @validate(policy=_POLICY)
    def __init__(self, policy: BaseKVCache, cfg: DASAConfig | None, patch_size, rope: torch.nn.Module) -> None:
        self.policy, self.cfg, self.rope = policy, cfg or DASAConfig(), rope
        self.patch_size = tuple(int(p) for p in patch_size)
        self.start_frame = 0
        self.region: torch.Tensor | None = None
        self.write: dict | None = None
        self.shape: tuple[int, int, int] | None = None      # latent (frames, h, w) in tokens of the current call
        self.stats: dict = {}
        self._pending: list[tuple[int, torch.Tensor, torch.Tensor]] = []

    @validate(start_frame=Int(low=0))
    def begin(self, start_frame: int, *, region: torch.Tensor | None = None, write: bool = False,
              dyn_mask: torch.Tensor | None = None, keyframe: bool = False) -> None:
        """Say what the next transformer call is: its chunk starts at latent frame ``start_frame``; ``region``
        bool ``[B, R]`` selects DASA's region path (None: every query attends to the whole cache);
        ``write=True`` makes it the clean re-run that stores the chunk (``dyn_mask`` bool ``[B, N]`` of the
        dynamic tokens, None = all; ``keyframe`` stores it in full)."""
        self.start_frame, self.region = start_frame, region
        self.write = {"dyn_mask": dyn_mask, "keyframe": bool(keyframe)} if write else None
        self._pending = []

    def dynamic_mask(self, chunk_latents: torch.Tensor, prev_last: torch.Tensor) -> torch.Tensor:
        """``bool [B, N]``: DASA's dynamic tokens of a latent chunk ``[B, C, F, H, W]`` (each frame against the
        one before it; ``prev_last [B, C, H, W]`` is the previous chunk's last latent frame), scored on the
        transformer's spatial patches."""
        pt, ph, pw = self.patch_size
        if pt != 1:
            raise ValueError("dynamic_mask supports temporal patch 1 (Wan's default) only")
        b, c, f, hh, ww = chunk_latents.shape
        grid = (hh // ph, ww // pw)
        cfg = self.cfg.for_grid(grid)

        def tokens(x):                                   # [B, C, H, W] -> [B, h·w, C·ph·pw]
            x = x.reshape(b, c, grid[0], ph, grid[1], pw).permute(0, 2, 4, 1, 3, 5)
            return x.reshape(b, grid[0] * grid[1], -1)

        masks, before = [], tokens(prev_last)
        for i in range(f):
            cur = tokens(chunk_latents[:, :, i])
            masks.append(token_mask(token_dynamics(before, cur, cfg.score), grid, cfg))
            before = cur
        return torch.cat(masks, dim=1)

    # ---- hooks -------------------------------------------------------------------------------------------
    def _pre_forward(self, module, args, kwargs) -> None:
        x = kwargs.get("hidden_states", args[0] if args else None)
        pt, ph, pw = self.patch_size
        self.shape = (x.shape[2] // pt, x.shape[3] // ph, x.shape[4] // pw)
        self._pending = []

    def _post_forward(self, module, args, kwargs, output) -> None:
        if self.write is None:
            return
        f, h, w = self.shape
        pos = _positions(self.start_frame, f, (h, w), self._pending[0][1].device if self._pending else "cpu")
        dyn = self.write["dyn_mask"]
        pending, self._pending = self._pending, []
        for layer, k, v in pending:              # all or nothing: validate every layer first
            self.policy.validate_append(layer, k, v, pos, self.start_frame, dyn)
        for layer, k, v in pending:
            self.policy.append(layer, k, v, pos, self.start_frame, dyn, self.write["keyframe"])
        self.write = None


class DASAAttnProcessor:
    """Self-attention processor for one Wan block (``attn1``), in diffusers' processor shape
    ``__call__(attn, hidden_states, encoder_hidden_states=None, attention_mask=None, rotary_emb=None)``.

    Args:
        stream: the shared :class:`DASAStream`.
        layer: this block's index (its layer of the cache).
    """

    def __init__(self, stream: DASAStream, layer: int) -> None:
        self.stream, self.layer = stream, layer

    # a self-attention processor (attn1: keep attn2's processor) without a mask (the cache decides what is attended)
    @validate(encoder_hidden_states=Choice(None), attention_mask=Choice(None))
    def __call__(self, attn, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor | None = None,
                 attention_mask: torch.Tensor | None = None, rotary_emb=None) -> torch.Tensor:
        st = self.stream
        if getattr(attn, "fused_projections", False):
            raise ValueError("fused q/k/v projections are not supported; call unfuse_qkv_projections() first")
        if st.shape is None:
            raise RuntimeError("the stream has no latent shape: attach it with attach_dasa (its pre-forward hook)")
        q = attn.norm_q(attn.to_q(hidden_states)).unflatten(2, (attn.heads, -1))
        k = attn.norm_k(attn.to_k(hidden_states)).unflatten(2, (attn.heads, -1))
        v = attn.to_v(hidden_states).unflatten(2, (attn.heads, -1))
        f, h, w = st.shape
        cos, sin = wan_rope(st.rope, st.start_frame, f, (h, w))
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                          # [B, H, N, d]
        cache = st.policy if st.policy._stores[self.layer] is not None else None
        cfg = st.cfg.for_grid((h, w))
        o = dasa_attention(q, k, v, cache, self.layer, st.region if cache is not None else None, cfg,
                           stats=st.stats)
        if st.write is not None:
            st._pending.append((self.layer, k.detach(), v.detach()))
        o = o.transpose(1, 2).flatten(2, 3).type_as(hidden_states)
        return attn.to_out[1](attn.to_out[0](o))


@validate(policy=_POLICY)
def attach_dasa(transformer: torch.nn.Module, policy: BaseKVCache, cfg: DASAConfig | None = None) -> DASAStream:
    """Put ``policy`` behind every block's self-attention of a diffusers Wan transformer (``blocks[i].attn1``);
    returns the :class:`DASAStream` to drive it. :func:`detach_dasa` restores the original processors."""
    blocks = getattr(transformer, "blocks", None)
    if blocks is None or not hasattr(transformer, "rope") or not hasattr(transformer, "config"):
        raise TypeError(f"expected a diffusers WanTransformer3DModel-like module (blocks, rope, config), got "
                        f"{type(transformer).__name__}")
    if policy.num_layers != len(blocks):
        raise ValueError(f"policy has {policy.num_layers} layers, the transformer {len(blocks)} blocks")
    stream = DASAStream(policy, cfg, transformer.config.patch_size, transformer.rope)
    stream._saved = [blk.attn1.processor for blk in blocks]
    for i, blk in enumerate(blocks):
        blk.attn1.set_processor(DASAAttnProcessor(stream, i))
    stream._handles = [transformer.register_forward_pre_hook(stream._pre_forward, with_kwargs=True),
                       transformer.register_forward_hook(stream._post_forward, with_kwargs=True)]
    return stream


def detach_dasa(transformer: torch.nn.Module, stream: DASAStream) -> None:
    """Undo :func:`attach_dasa`."""
    for blk, proc in zip(transformer.blocks, stream._saved):
        blk.attn1.set_processor(proc)
    for handle in stream._handles:
        handle.remove()
