r"""Synthetic associative-recall tasks (re-implemented after Zoology's MQAR; seeded, numpy).

Every example is ``seq_len`` tokens: a *context* of key-value pairs, then a *query region* where keys
reappear among random filler tokens. The label at the last token of a query key is its value; every
other label is ``-100`` (ignored), so loss and accuracy count query positions only. The value is *not*
written after the query (the model must recall it, not copy it).

Vocabulary: keys come from ``[1, V/2)``, values from ``[V/2, V)`` (disjoint halves); filler tokens are
uniform over the vocabulary minus this example's key tokens (so a filler never fakes a key).

* :func:`mqar` — one-token keys (``k v`` pairs); query keys sit at power-law positions
  $p(i) \propto (i+1)^{a-1}$ over the query slots (``power_a = 0.01``: early slots favoured).
* :func:`compositional_mqar` — two-token keys ``(a, b)`` on an $m \times m$ grid
  ($m = \lceil\sqrt{n}\rceil$): every ``a`` and every ``b`` occurs in several keys, so only the pair
  identifies the value (a 1-layer attention must compose the two tokens, e.g. with a short conv).
* :func:`gap_mqar` (inferred design) — compositional keys where, with probability ``gap_prob`` per
  occurrence, a random filler token sits between ``a`` and ``b``: the lag between the key tokens
  varies, so a fixed (static) filter cannot always compose them, an input-dependent one can.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from neurips26.constraints import Int, Real, validate

IGNORE_INDEX = -100


#: declared arguments of every task generator (neurips26.constraints)
COUNT = Int(low=1)
TASK_ARGS = {"vocab_size": COUNT, "num_examples": COUNT, "seq_len": COUNT, "num_kv_pairs": COUNT,
             "power_a": Real(low=0.0, high=1.0, closed="right"), "seed": Int(low=0)}


def _check_vocab(vocab_size: int, seq_len: int) -> None:
    if vocab_size <= seq_len:
        raise ValueError(f"vocab_size ({vocab_size}) must exceed seq_len ({seq_len})")


def _build(rng: np.random.Generator, vocab_size: int, num_examples: int, seq_len: int,
           keys: list[np.ndarray], values: np.ndarray, key_tokens: np.ndarray, gap_prob: float,
           power_a: float, slot: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Lay out contexts and queries. ``keys[j]: [N, n]`` = j-th token of each pair's key."""
    n_pairs = values.shape[1]
    n_key_tok = len(keys)
    inputs = np.full((num_examples, seq_len), -1, dtype=np.int64)
    labels = np.full((num_examples, seq_len), IGNORE_INDEX, dtype=np.int64)
    for i in range(num_examples):
        pos = 0
        # context: key tokens (with an optional filler gap before the last one), then the value
        for p in rng.permutation(n_pairs):
            for j in range(n_key_tok):
                if j == n_key_tok - 1 and n_key_tok > 1 and rng.random() < gap_prob:
                    pos += 1  # filler slot (-1, filled below)
                inputs[i, pos] = keys[j][i, p]
                pos += 1
            inputs[i, pos] = values[i, p]
            pos += 1
        # query region: slots of `slot` tokens, chosen with power-law probability over slot index
        n_slots = (seq_len - pos) // slot
        n_q = min(n_pairs, n_slots)
        weights = (np.arange(n_slots) + 1.0) ** (power_a - 1.0)
        chosen = rng.choice(n_slots, size=n_q, replace=False, p=weights / weights.sum())
        for p, s in zip(rng.permutation(n_pairs)[:n_q], chosen):
            q = pos + s * slot
            for j in range(n_key_tok):
                if j == n_key_tok - 1 and n_key_tok > 1 and rng.random() < gap_prob:
                    q += 1
                inputs[i, q] = keys[j][i, p]
                q += 1
            labels[i, q - 1] = values[i, p]
    # filler: uniform over the vocabulary, redrawn where it would collide with this example's keys
    holes = inputs < 0
    fill = rng.integers(0, vocab_size, size=inputs.shape)
    while True:
        bad = holes & (fill[:, :, None] == key_tokens[:, None, :]).any(-1)
        if not bad.any():
            break
        fill[bad] = rng.integers(0, vocab_size, size=int(bad.sum()))
    inputs[holes] = fill[holes]
    return torch.from_numpy(inputs), torch.from_numpy(labels)


@validate(**TASK_ARGS)
def mqar(vocab_size: int, num_examples: int, seq_len: int, num_kv_pairs: int, power_a: float = 0.01,
         seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Multi-query associative recall with one-token keys.

    Returns:
        ``(inputs, labels)``, both int64 ``[num_examples, seq_len]``; labels are values at query
        positions and ``-100`` elsewhere.
    """
    vocab_size, num_examples, seq_len, num_kv_pairs = int(vocab_size), int(num_examples), int(seq_len), \
        int(num_kv_pairs)
    power_a = float(power_a)
    _check_vocab(vocab_size, seq_len)
    half = vocab_size // 2
    if num_kv_pairs > half - 1:
        raise ValueError(f"num_kv_pairs ({num_kv_pairs}) must be < vocab_size/2 - 1 = {half - 1} (distinct keys)")
    if 2 * num_kv_pairs + 1 > seq_len:
        raise ValueError(f"seq_len ({seq_len}) must be >= 2*num_kv_pairs+1 = {2 * num_kv_pairs + 1} (context "
                         "plus at least one query)")
    rng = np.random.default_rng(int(seed))
    keys = np.stack([rng.choice(np.arange(1, half), num_kv_pairs, replace=False) for _ in range(num_examples)])
    values = rng.integers(half, vocab_size, size=(num_examples, num_kv_pairs))
    return _build(rng, vocab_size, num_examples, seq_len, [keys], values, keys, 0.0, power_a, 1)


@validate(**TASK_ARGS, gap_prob=Real(low=0.0, high=1.0))
def compositional_mqar(vocab_size: int, num_examples: int, seq_len: int, num_kv_pairs: int = 9,
                       power_a: float = 0.01, seed: int = 0, *, gap_prob: float = 0.0
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """Associative recall with two-token keys ``(a, b)`` on a ``⌈√n⌉ x ⌈√n⌉`` grid (see module doc).

    ``gap_prob`` > 0 gives the gap variant (a filler between ``a`` and ``b`` per occurrence).
    Returns ``(inputs, labels)`` as :func:`mqar`.
    """
    vocab_size, num_examples, seq_len, num_kv_pairs = int(vocab_size), int(num_examples), int(seq_len), \
        int(num_kv_pairs)
    power_a = float(power_a)
    _check_vocab(vocab_size, seq_len)
    half = vocab_size // 2
    m = math.ceil(math.sqrt(num_kv_pairs))
    if 2 * m > half - 1:
        raise ValueError(f"num_kv_pairs ({num_kv_pairs}) needs 2*ceil(sqrt(n)) = {2 * m} key tokens, "
                         f"vocab_size/2 - 1 = {half - 1} available")
    key_len = 3 if gap_prob > 0 else 2
    if num_kv_pairs * (key_len + 1) + key_len > seq_len:
        raise ValueError(f"seq_len ({seq_len}) too short for {num_kv_pairs} pairs of {key_len}-token keys plus "
                         f"a query: need >= {num_kv_pairs * (key_len + 1) + key_len}")
    rng = np.random.default_rng(int(seed))
    n = num_examples
    toks = np.stack([rng.choice(np.arange(1, half), 2 * m, replace=False) for _ in range(n)])  # [N, 2m]
    cells = np.stack([rng.choice(m * m, num_kv_pairs, replace=False) for _ in range(n)])  # grid cells
    a = np.take_along_axis(toks[:, :m], cells // m, axis=1)
    b = np.take_along_axis(toks[:, m:], cells % m, axis=1)
    values = rng.integers(half, vocab_size, size=(n, num_kv_pairs))
    return _build(rng, vocab_size, n, seq_len, [a, b], values, toks, float(gap_prob), power_a, key_len)


@validate(**TASK_ARGS, gap_prob=Real(low=0.0, high=1.0, closed="right"))
def gap_mqar(vocab_size: int, num_examples: int, seq_len: int, num_kv_pairs: int = 9, power_a: float = 0.01,
             seed: int = 0, gap_prob: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """Compositional MQAR with a random filler between the two key tokens w.p. ``gap_prob`` (inferred)."""
    return compositional_mqar(vocab_size, num_examples, seq_len, num_kv_pairs, power_a, seed, gap_prob=gap_prob)
