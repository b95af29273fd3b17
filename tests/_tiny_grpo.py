"""The tiny GRPO set-up the DualKV/TRL tests share (in process and under ``accelerate launch``): a character-level
tokenizer over a-z, a 2-layer Qwen3 of width 32 and a rule-based reward. Needs transformers and tokenizers."""

from __future__ import annotations

import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers

VOCAB = ["<pad>", "<eos>"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]


def char_tokenizer() -> transformers.PreTrainedTokenizerFast:
    """One token per character of ``VOCAB`` (id 0 pads, id 1 ends), padded on the left as generation wants."""
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    fast.padding_side = "left"
    return fast


def tiny_qwen3(seed: int = 0) -> transformers.Qwen3ForCausalLM:
    """A seeded 2-layer Qwen3 (width 32, 4 heads over 2 KV heads) on ``VOCAB``."""
    torch.manual_seed(seed)
    cfg = transformers.Qwen3Config(vocab_size=len(VOCAB), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                   max_position_embeddings=128, pad_token_id=0, eos_token_id=1, bos_token_id=1,
                                   attention_dropout=0.0)
    return transformers.Qwen3ForCausalLM(cfg)


def a_fraction_reward(completions, **_):
    """Rule-based: the fraction of 'a' in each completion."""
    return [c.count("a") / max(len(c), 1) for c in completions]
