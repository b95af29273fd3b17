"""Dynamic short convolutions (P17, arXiv 2606.03825; Sieberling, Runwal, Panda, Kim 2026).

What: a causal depthwise convolution of width W (≈4) whose taps are produced per token from the input,
added to the query/key/value streams of a Transformer right after their projections (before RoPE).
Why: static short convs (Canon layers, Mamba convs) give attention a locality bias; letting each token
choose how to mix its last W-1 neighbours composes multi-token keys ("the old can opener") where a
fixed filter cannot. The paper reports a 1.33x compute advantage over compute-matched Transformers.
How: ``K_t = reshape((W_in c_t) U, (W, D))`` with a zero-initialised low-rank ``U`` (rank R), plus a
static filter and a residual; :func:`lowrank_dynamic_conv1d` / :func:`dynamic_conv1d` run it as fused
Triton kernels (forward + backward, any T and D) or as a plain PyTorch reference. :class:`DynamicShortConv`
adds decoding (:meth:`~DynamicShortConv.step`) and packed varlen batches (``cu_seqlens``);
:class:`ConvAugmentedAttention` puts it on Q/K/V of :class:`neurips26.nn.Llama` (KV-cached :func:`generate`
carries the conv states); :func:`every_linear_llama` puts it after every linear layer (the 1.60x placement);
:func:`add_convs_to_hf` puts it on a Hugging Face model in a way ``generate`` respects.
"""

from .baselines import naive_dynamic_conv1d, naive_lowrank_dynamic_conv1d, static_depthwise_conv1d
from .decoding import HFConvs, add_convs_to_hf, conv_cache, generate
from .every_linear import ConvLinear, add_convs_after_linears, every_linear_llama
from .hosts import GatedRecurrentMixer, recurrent_mixer_factory
from .modules import (
    ConvAugmentedAttention,
    ConvCache,
    DynamicShortConv,
    KVCache,
    StaticShortConv,
    conv_attention_factory,
    packed_causal_mask,
)
from .ops import dynamic_conv1d, lowrank_dynamic_conv1d
from .tasks import IGNORE_INDEX, compositional_mqar, gap_mqar, mqar

__all__ = ["ConvAugmentedAttention", "ConvCache", "ConvLinear", "DynamicShortConv", "GatedRecurrentMixer", "HFConvs",
           "KVCache", "add_convs_after_linears", "add_convs_to_hf", "conv_cache", "every_linear_llama", "generate",
           "recurrent_mixer_factory", "IGNORE_INDEX", "StaticShortConv", "compositional_mqar",
           "conv_attention_factory", "dynamic_conv1d", "gap_mqar", "lowrank_dynamic_conv1d", "mqar",
           "naive_dynamic_conv1d", "naive_lowrank_dynamic_conv1d", "packed_causal_mask", "static_depthwise_conv1d"]
