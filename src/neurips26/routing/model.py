r"""The decoder-only heavy-decoder TSP model: gated attention, ReZero, no encoder, no LayerNorm.

At construction step $t$ (partial tour $\pi_1..\pi_{t-1}$, unvisited set $R_t$) the model re-reads

$$H^{(0)} = [\,W_f e_{\pi_1};\ \{e_r\}_{r \in R_t};\ W_l e_{\pi_{t-1}}\,], \qquad e_i = W_e x_i + b_e,$$

(first node, every unvisited node, last node; LEHD's token layout, no positional encoding) through
$L$ blocks of full self-attention and scores each unvisited token, $s_r = w_s^\top h^{(L)}_r + b_s$,
$p(\pi_t = r) = \mathrm{softmax}_r(s)$. Without positions the scores are equivariant to the order of
the unvisited nodes. One block (confirmed components; the exact form is inferred):

$$y = \mathrm{MHA}(x) \odot \sigma(W_g x + b_g), \quad x \leftarrow x + \alpha_1 (W_o y + b_o), \quad
x \leftarrow x + \alpha_2\,\mathrm{FFN}(x),$$

with ReZero scalars $\alpha_1 = \alpha_2 = 0$ at init (``rezero_init``; they train with their own, larger,
learning rate: ``train_supervised(alpha_lr_mult=...)``, since under one shared Adam rate each $\alpha$ moves
by at most ~lr per step and stays near 0 for a short run, damping every block) and
$\mathrm{FFN}(x) = W_2\,\mathrm{ReLU}(W_1 x + b_1) + b_2$ ($d \to 4d \to d$). Parameters per block: $4d^2$
(Q, K, V, O) $+ d^2$ (gate) $+ 8d^2$ (FFN) $= 13d^2$ plus $7d + 2$ biases and scalars.
``gated_attention=False, rezero=False`` is the LEHD-style ablation (plain residual, no norm, $12d^2$ per block).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..constraints import Bool, Instance, Int, Real, Tensor, check_arguments, validate
from ._checks import COORDS, check_step, trusted

__all__ = ["DecoderBlock", "DecoderConfig", "TSPDecoderOnly", "count_params", "decoder_step_flops",
           "tour_flops", "train_step_flops"]


@dataclass(frozen=True)
class DecoderConfig:
    """Shape of a :class:`TSPDecoderOnly`.

    Attributes:
        d_model: embedding width $d$ (divisible by ``head_dim``).
        n_layers: number of decoder blocks $L$.
        ff_mult: FFN hidden width as a multiple of $d$ (4).
        head_dim: width per attention head (16, as LEHD); heads $= d / $ ``head_dim``.
        gated_attention: elementwise sigmoid output gate on attention.
        rezero: ReZero residual scalars; off means a plain residual $x + f(x)$.
        rezero_init: initial value of the ReZero scalars (0, the identity map at init, as in ReZero).
    """

    d_model: int
    n_layers: int
    ff_mult: int = 4
    head_dim: int = 16
    gated_attention: bool = True
    rezero: bool = True
    rezero_init: float = 0.0

    def __post_init__(self) -> None:
        check_arguments("DecoderConfig", _CONFIG, self.__dict__)
        if self.d_model % self.head_dim:
            raise ValueError(f"DecoderConfig: d_model must be divisible by head_dim: got d_model={self.d_model}, "
                             f"head_dim={self.head_dim}")

    @property
    def n_heads(self) -> int:
        return self.d_model // self.head_dim

    @property
    def label(self) -> str:
        flags = "" if (self.gated_attention and self.rezero) else "-lehd" if not (
            self.gated_attention or self.rezero) else "-gate" if self.gated_attention else "-rezero"
        return f"{self.d_model}x{self.n_layers}{flags}"


_CONFIG = {"d_model": Int(low=1), "n_layers": Int(low=1), "ff_mult": Int(low=1), "head_dim": Int(low=1),
           "gated_attention": Bool(), "rezero": Bool(), "rezero_init": Real()}
_CFG = Instance(DecoderConfig)


@validate(cfg=_CFG)
def count_params(cfg: DecoderConfig) -> int:
    r"""Closed-form parameter count of ``TSPDecoderOnly(cfg)``.

    Per block: $(4 + g + 2f) d^2$ weights ($g$ = gate, $f$ = ff_mult) plus $d$ (out bias) $+ g d$ (gate bias)
    $+ f d + d$ (FFN biases) $+ 2 r$ (ReZero scalars). Outside the blocks: embedding $3d$, first/last
    projections $2(d^2 + d)$, scorer $d + 1$.
    """
    d, f = cfg.d_model, cfg.ff_mult
    g, r = int(cfg.gated_attention), int(cfg.rezero)
    block = (4 + g + 2 * f) * d * d + d + g * d + f * d + d + 2 * r
    return cfg.n_layers * block + 3 * d + 2 * (d * d + d) + d + 1


@validate(cfg=_CFG, n_remaining=Int(low=0))
def decoder_step_flops(cfg: DecoderConfig, n_remaining: int) -> int:
    r"""Forward matmul FLOPs of one decoder call over $T = m + 2$ tokens ($m$ unvisited nodes).

    Per block: projections $2T(4 + g + 2f)d^2$ and attention $2 \cdot 2 T^2 d$ ($QK^\top$ and $AV$);
    plus first/last projections $2 \cdot 2d^2$ and the scorer $2md$ (the embedding is computed once per
    instance and counted in :func:`tour_flops`).
    """
    d, f, g = cfg.d_model, cfg.ff_mult, int(cfg.gated_attention)
    T = n_remaining + 2
    block = 2 * T * (4 + g + 2 * f) * d * d + 4 * T * T * d
    return cfg.n_layers * block + 4 * d * d + 2 * n_remaining * d


@validate(cfg=_CFG, n_remaining=Int(low=0))
def train_step_flops(cfg: DecoderConfig, n_remaining: int) -> int:
    """Training FLOPs per sample (forward + backward $\\approx 3\\times$ forward) of one sub-path step."""
    return 3 * decoder_step_flops(cfg, n_remaining)


@validate(cfg=_CFG, n_nodes=Int(low=1))
def tour_flops(cfg: DecoderConfig, n_nodes: int) -> int:
    """Forward FLOPs of one greedy tour of ``n_nodes``: embedding plus one call per step with >= 2 choices."""
    return 4 * n_nodes * cfg.d_model + sum(decoder_step_flops(cfg, m) for m in range(2, n_nodes))


class DecoderBlock(nn.Module):
    """One gated-attention ReZero block (see the module docstring); input and output ``[B, T, d]``."""

    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.gate = nn.Linear(d, d) if cfg.gated_attention else None
        self.out = nn.Linear(d, d)
        self.ffn = nn.Sequential(nn.Linear(d, cfg.ff_mult * d), nn.ReLU(), nn.Linear(cfg.ff_mult * d, d))
        if self.gate is not None:
            nn.init.zeros_(self.gate.bias)  # sigma(0) = 1/2: the gate starts half open
        # ReZero: alpha = 0 (default), so every block starts as the identity map (Bachlechner et al. 2020)
        a0 = float(cfg.rezero_init)
        self.alpha_attn = nn.Parameter(torch.full((), a0)) if cfg.rezero else None
        self.alpha_ffn = nn.Parameter(torch.full((), a0)) if cfg.rezero else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # finiteness is skipped inside trusted() (a policy's own, checked, tokens); the shape never is
        check_arguments("DecoderBlock.forward", _block_input(self.out.in_features), {"x": x})
        B, T, d = x.shape
        # q, k, v: [B, heads, T, head_dim]
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        # softmax(q k^T / sqrt(head_dim)) v, full (unmasked) attention over all tokens
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, d)
        if self.gate is not None:
            # gated attention: y <- y * sigma(W_g x + b_g), elementwise
            y = y * torch.sigmoid(self.gate(x))
        a = self.out(y)
        # x <- x + alpha_1 * W_o y  (plain residual when ReZero is off)
        x = x + (self.alpha_attn * a if self.alpha_attn is not None else a)
        h = self.ffn(x)
        # x <- x + alpha_2 * FFN(x)
        return x + (self.alpha_ffn * h if self.alpha_ffn is not None else h)


@functools.lru_cache(maxsize=64)
def _block_input(d: int) -> dict[str, Tensor]:
    return {"x": Tensor(f"B T {d}")}


class TSPDecoderOnly(nn.Module):
    """Decoder-only heavy-decoder TSP policy (the paper's model; both flags off: the LEHD-style ablation).

    ``encode(X)`` embeds coordinates once (``[B, n, 2] -> [B, n, d]``); ``score(e, first, last, remaining)``
    runs the $L$ blocks over ``[first, remaining..., last]`` and returns logits ``[B, m]`` over the
    ``remaining`` nodes (``[B, m]`` indices). ``forward(X, first, last, remaining)`` does both.
    """

    @validate(cfg=_CFG)
    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Linear(2, d)
        self.first_proj = nn.Linear(d, d)
        self.last_proj = nn.Linear(d, d)
        self.blocks = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.n_layers))
        self.scorer = nn.Linear(d, 1)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @validate(X=COORDS)
    def encode(self, X: torch.Tensor) -> torch.Tensor:
        """Node embeddings $e_i = W_e x_i + b_e$: ``[B, n, 2] -> [B, n, d]``."""
        return self.embed(X)

    def score(self, emb: torch.Tensor, first: torch.Tensor, last: torch.Tensor,
              remaining: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, m]`` for the next node among ``remaining``.

        ``emb`` ``[B, n, d]`` from :meth:`encode`; ``first``/``last`` ``[B]``; ``remaining`` ``[B, m]``.
        """
        check_step("TSPDecoderOnly.score", emb, first, last, remaining, self.cfg.d_model)
        B, _, d = emb.shape
        rows = torch.arange(B, device=emb.device)
        e_first = self.first_proj(emb[rows, first])[:, None]  # [B, 1, d]
        e_last = self.last_proj(emb[rows, last])[:, None]  # [B, 1, d]
        e_rem = torch.gather(emb, 1, remaining[:, :, None].expand(-1, -1, d))  # [B, m, d]
        h = torch.cat([e_first, e_rem, e_last], dim=1)  # [B, m + 2, d]
        with trusted():
            for block in self.blocks:
                h = block(h)
        return self.scorer(h[:, 1:-1]).squeeze(-1)  # s_r = w_s^T h_r + b_s, [B, m]

    def forward(self, X: torch.Tensor, first: torch.Tensor, last: torch.Tensor,
                remaining: torch.Tensor) -> torch.Tensor:
        return self.score(self.encode(X), first, last, remaining)
