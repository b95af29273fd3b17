"""DualKV (P19): exact shared-prompt attention for GRPO/DAPO-style training.

What: in RL post-training a micro-batch holds N responses to one prompt; the standard layout repeats the
P prompt tokens N times. DualKV packs ``[prompt | r_1 | … | r_N]`` (P + ΣR_i tokens instead of N·P + ΣR_i),
so norms, projections and MLPs process the prompt once, and attention runs in two calls: causal
self-attention of the prompt, then a "two-region" attention in which every response reads the single shared
prompt K/V plus its own causal K/V. It is exact: logits, log-probs and parameter gradients equal those of
the replicated layout (the prompt's gradient is the sum of the N copies' gradients).
How: :func:`pack_shared_prompt` builds the layout and position ids (restarting at P per response);
:func:`dualkv_attention` is the attention (PyTorch reference or Triton kernel with fp32 accumulation of
prompt K/V gradients); :func:`response_logprobs` reads the responses' token log-probs (token 0 from the last
prompt row). Sliding windows, Gemma-2 soft-capping and GPT-OSS attention sinks are applied per region with
the packing's logical positions; :mod:`.hf`, :mod:`.trl` and :mod:`.verl` plug it into transformers, TRL's
``GRPOTrainer`` and veRL's actor. Paper: Gai, Zhang, Song, Wang, Karypis, arXiv 2605.15422 (2026).
"""

from .attention import (
    DualKVAttention,
    decoded_attention_reference,
    dualkv_attention,
    dualkv_attention_fn,
    dualkv_decoded_attention,
    prompt_attention_reference,
)
from .baselines import build_flex_block_mask
from .packing import (
    SharedPromptBatch,
    attention_speedup_estimate,
    groups_from_rollouts,
    pack_replicated,
    pack_shared_prompt,
    replicated_response_logprobs,
    response_logprobs,
    token_mean_policy_loss,
    token_reduction_ratio,
)
from .verify import EquivalenceReport, verify_equivalence

__all__ = [
    "SharedPromptBatch",
    "pack_shared_prompt",
    "pack_replicated",
    "groups_from_rollouts",
    "token_reduction_ratio",
    "attention_speedup_estimate",
    "response_logprobs",
    "replicated_response_logprobs",
    "token_mean_policy_loss",
    "dualkv_attention",
    "dualkv_decoded_attention",
    "dualkv_attention_fn",
    "decoded_attention_reference",
    "prompt_attention_reference",
    "DualKVAttention",
    "build_flex_block_mask",
    "verify_equivalence",
    "EquivalenceReport",
]
