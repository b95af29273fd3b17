"""Tiny random backbones of two kinds (a causal Llama and a bidirectional BERT) for the mobillm tests."""

import torch

from neurips26.nn import Llama, LlamaConfig
from neurips26.nn.minilm import BertConfig, BertEncoder


def tiny_llama(seed: int = 0, layers: int = 3, d: int = 32) -> Llama:
    torch.manual_seed(seed)
    return Llama(LlamaConfig(vocab_size=64, d_model=d, n_layers=layers, n_heads=4, max_seq_len=64)).eval()


def tiny_bert(seed: int = 1, layers: int = 2, d: int = 24) -> BertEncoder:
    torch.manual_seed(seed)
    enc = BertEncoder(BertConfig(vocab_size=64, hidden_size=d, num_hidden_layers=layers, num_attention_heads=4,
                                 intermediate_size=2 * d, max_position_embeddings=64))
    for p in enc.parameters():  # BERT init in nn.minilm is PyTorch's default; make it a bit less flat
        if p.dim() == 2:
            torch.nn.init.normal_(p, std=0.2)
    return enc.eval()
