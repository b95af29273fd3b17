"""Text corpora as token streams for small language-model experiments, and resumable token windows.

* :func:`split_text` cuts a text into train/validation by *contiguous blocks* (never by random lines,
  which would leak neighbouring lines across the split): the text is divided into ``n_blocks`` equal
  spans and the last ``val_fraction`` of each span (cut at a line break) goes to validation.
  ``n_blocks=1`` is the nanoGPT convention (the last 10 % of tiny shakespeare).
* :func:`load_text_corpus` loads tiny shakespeare from the data registry, splits it, trains a byte-level
  BPE tokenizer on the *train* part only (cached, see :mod:`neurips26.nn.tokenizer`) and returns both
  token streams with their byte counts (for bits-per-byte).
* :class:`TokenWindows` serves batches of contiguous windows from a token stream. The stream is laid out
  as ``batch_size`` parallel lanes read left to right by one shared cursor, so the rows of a step are
  ``lanes[:, c : c + row_len]`` and the row length may change from step to step (TST reads
  ``s·(L+1)`` tokens per row in its first phase and ``L+1`` later). Every token of an epoch is read at
  most once; at the end of a lane the epoch counter increases and reading restarts at a seeded offset.
  ``state_dict()`` / ``load_state_dict()`` capture the data position exactly (for checkpoint/resume),
  and ``rank``/``world_size`` shard the lanes for DDP so that the union over ranks is the same global
  batch as one process would read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .tokenizer import BPETokenizer, train_bpe_tokenizer


def split_text(text: str, *, val_fraction: float = 0.1, n_blocks: int = 1) -> tuple[str, str]:
    """Split ``text`` into ``(train, validation)`` by contiguous blocks.

    The text is cut into ``n_blocks`` equal spans; the tail ``val_fraction`` of each span, moved back to
    the previous line break when there is one, goes to validation. Concatenating the pieces in order
    reproduces every character exactly once.
    """
    if not isinstance(text, str) or not text:
        raise ValueError("text must be a non-empty str")
    if not (isinstance(val_fraction, float | int) and 0.0 < float(val_fraction) < 1.0):
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    if not isinstance(n_blocks, int) or n_blocks < 1 or n_blocks > len(text):
        raise ValueError(f"n_blocks must be an int in [1, len(text)={len(text)}], got {n_blocks!r}")
    train, val = [], []
    edges = [round(i * len(text) / n_blocks) for i in range(n_blocks + 1)]
    for i in range(1, n_blocks):  # move interior block edges to the next line start (when there is one)
        newline = text.find("\n", edges[i] - 1, edges[i + 1])
        edges[i] = max(edges[i - 1], newline + 1 if newline >= 0 else edges[i])
    for start, end in zip(edges[:-1], edges[1:]):
        if end <= start:
            continue
        cut = end - max(1, round((end - start) * float(val_fraction)))
        newline = text.rfind("\n", start, cut + 1)
        if newline > start:
            cut = newline + 1
        train.append(text[start:cut])
        val.append(text[cut:end])
    return "".join(train), "".join(val)


@dataclass
class TextCorpus:
    """A tokenised corpus: train/validation token streams, their UTF-8 byte counts and the tokenizer."""

    name: str
    tokenizer: BPETokenizer
    train_tokens: torch.Tensor  # int64 [n_train]
    val_tokens: torch.Tensor  # int64 [n_val]
    train_bytes: int
    val_bytes: int
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def val_bytes_per_token(self) -> float:
        return self.val_bytes / max(1, len(self.val_tokens))

    def bits_per_byte(self, nats_per_token: float) -> float:
        r"""Validation bits per UTF-8 byte: $\mathrm{bpb} = \ell \cdot n_\mathrm{tok} / (n_\mathrm{bytes} \ln 2)$."""
        return float(nats_per_token) / (self.val_bytes_per_token * math.log(2))


def load_text_corpus(name: str = "tinyshakespeare", *, vocab_size: int = 2048, val_fraction: float = 0.1,
                     n_blocks: int = 1, cache_dir: str | None = None) -> TextCorpus:
    """Load a registered text corpus, split it by contiguous blocks and tokenise it with a BPE trained
    on the train split (cached on disk).

    Only ``"tinyshakespeare"`` (1,115,394 characters, via :func:`neurips26.data.load_tinyshakespeare`)
    is registered today.
    """
    if name != "tinyshakespeare":
        raise ValueError(f"unknown text corpus {name!r}; available: ['tinyshakespeare']")
    from neurips26.data import load_tinyshakespeare

    text = load_tinyshakespeare()
    train_text, val_text = split_text(text, val_fraction=val_fraction, n_blocks=n_blocks)
    tok = train_bpe_tokenizer(train_text, vocab_size, cache_dir=cache_dir)
    train_ids = torch.from_numpy(tok.encode_to_array(train_text))
    val_ids = torch.from_numpy(tok.encode_to_array(val_text))
    return TextCorpus(name=name, tokenizer=tok, train_tokens=train_ids, val_tokens=val_ids,
                      train_bytes=len(train_text.encode("utf-8")), val_bytes=len(val_text.encode("utf-8")),
                      info={"chars": len(text), "val_fraction": val_fraction, "n_blocks": n_blocks,
                            "vocab_size": tok.vocab_size, "tokenizer_path": str(tok.path)})


class TokenWindows:
    """Resumable batches of contiguous token windows from one stream, with a per-step row length.

    Args:
        tokens: int64 ``[N]`` token stream.
        batch_size: global number of rows per step (lanes); must be divisible by ``world_size``.
        seed: seeds the start offset of each epoch after the first.
        rank, world_size: this process's share of the lanes (rows ``rank·B/W .. (rank+1)·B/W``).

    ``next_batch(row_len)`` returns ``int64 [batch_size / world_size, row_len]``. The cursor moves by
    ``row_len`` tokens along every lane, so ``tokens_read`` counts the whole global batch.
    """

    def __init__(self, tokens: torch.Tensor, *, batch_size: int, seed: int = 0, rank: int = 0,
                 world_size: int = 1) -> None:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1 or tokens.dtype != torch.int64:
            raise ValueError("tokens must be a 1-D int64 tensor, got "
                             f"{getattr(tokens, 'dtype', type(tokens))} {tuple(getattr(tokens, 'shape', ()))}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(world_size, int) or world_size < 1 or batch_size % world_size:
            raise ValueError(f"world_size must be a positive int dividing batch_size={batch_size}, "
                             f"got {world_size!r}")
        if not isinstance(rank, int) or not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, {world_size}), got {rank!r}")
        lane_len = len(tokens) // batch_size
        if lane_len < 2:
            raise ValueError(f"{len(tokens)} tokens are too few for batch_size={batch_size}")
        self.batch_size, self.seed, self.rank, self.world_size = batch_size, seed, rank, world_size
        self.lane_len = lane_len
        self.n_tokens = len(tokens)
        per_rank = batch_size // world_size
        # [B, lane_len]; this rank keeps its lanes only.
        self._lanes = tokens[: lane_len * batch_size].view(batch_size, lane_len)[rank * per_rank:
                                                                                 (rank + 1) * per_rank]
        self.cursor, self.epoch, self.tokens_read = 0, 0, 0

    def _epoch_offset(self, epoch: int, row_len: int) -> int:
        if epoch == 0:
            return 0
        slack = min(row_len, self.lane_len - row_len)
        gen = np.random.default_rng([self.seed, epoch])
        return int(gen.integers(0, slack + 1))

    def next_batch(self, row_len: int) -> torch.Tensor:
        """The next ``[rows, row_len]`` windows (contiguous within each lane)."""
        if not isinstance(row_len, int) or row_len < 1:
            raise ValueError(f"row_len must be a positive int, got {row_len!r}")
        if row_len > self.lane_len:
            raise ValueError(f"row_len={row_len} exceeds the lane length {self.lane_len} "
                             f"({self.n_tokens} tokens / batch_size {self.batch_size})")
        if self.cursor + row_len > self.lane_len:  # end of the stream: a new epoch, the tail is dropped
            self.epoch += 1
            self.cursor = self._epoch_offset(self.epoch, row_len)
        batch = self._lanes[:, self.cursor:self.cursor + row_len]
        self.cursor += row_len
        self.tokens_read += row_len * self.batch_size
        return batch.clone()

    @property
    def epochs(self) -> float:
        """Tokens read so far over the stream length (fractional epochs)."""
        return self.tokens_read / (self.lane_len * self.batch_size)

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": self.cursor, "epoch": self.epoch, "tokens_read": self.tokens_read,
                "batch_size": self.batch_size, "seed": self.seed, "lane_len": self.lane_len}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key in ("batch_size", "seed", "lane_len"):
            if state[key] != getattr(self, key):
                raise ValueError(f"data state has {key}={state[key]!r}, this stream has "
                                 f"{getattr(self, key)!r}: not the same data layout")
        self.cursor, self.epoch, self.tokens_read = int(state["cursor"]), int(state["epoch"]), \
            int(state["tokens_read"])


def eval_windows(tokens: torch.Tensor, *, context_len: int, max_windows: int | None = None) -> torch.Tensor:
    """Non-overlapping validation windows ``int64 [n, context_len + 1]`` (inputs + shifted targets),
    evenly spaced over the stream when ``max_windows`` limits their number."""
    if not isinstance(context_len, int) or context_len < 1:
        raise ValueError(f"context_len must be a positive int, got {context_len!r}")
    n = (len(tokens) - 1) // context_len
    if n < 1:
        raise ValueError(f"{len(tokens)} tokens are too few for context_len={context_len}")
    starts = np.arange(n) * context_len
    if max_windows is not None and max_windows < n:
        starts = starts[np.linspace(0, n - 1, max_windows).round().astype(int)]
    return torch.stack([tokens[s:s + context_len + 1] for s in starts])
