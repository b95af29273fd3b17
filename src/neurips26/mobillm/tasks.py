r"""Tasks and federations for the claim check (rt-polarity is not available offline).

* :func:`comedy_tragedy_passages` — passages of ``words`` words of spoken text from Shakespeare's comedies
  (label 0) and tragedies (label 1), **split by play**: the test plays never appear in training.
  Speaker tags, act/scene headings and stage directions are dropped.
* :func:`planted_task` — random token sequences whose label is planted as extra tokens from a class-specific
  set (for the smoke scale and the tests: learnable from frozen *random* backbones).
* :func:`dirichlet_partition` — label skew: device $j$'s share of class $c$ is $p_{c,j}$,
  $p_{c,\cdot} \sim \mathrm{Dirichlet}(\alpha \mathbf{1})$.
* :func:`make_profiles` — speeds $S_j = S_0 \cdot \mathrm{LogNormal}(0, \sigma)$, the ``stragglers`` slowest
  draws made 10x slower, bandwidths log-uniform in [1, 20] Mbit/s (the spec's federation).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import torch

from .simulate import DeviceProfile

__all__ = ["comedy_tragedy_passages", "dirichlet_partition", "encode_texts", "make_profiles", "planted_task",
           "subset"]

_SPEAKER = re.compile(r"^[A-Z][A-Z' ,&-]*\.?$")
_HEADING = re.compile(r"^(ACT|SCENE|Scene|Act)\b")


def _spoken_words(text: str) -> list[str]:
    text = re.sub(r"\[[^\]]*\]", " ", text)  # stage directions
    words: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or _SPEAKER.match(line) or _HEADING.match(line):
            continue
        words.extend(line.split())
    return words


def comedy_tragedy_passages(*, n_train: int, n_test: int, words: int = 24, test_plays_per_group: int = 3,
                            seed: int = 0) -> dict[str, object]:
    """Comedy-vs-tragedy passages from ``neurips26.data.load_shakespeare_plays()``, split by play.

    Returns ``{"train": (texts, labels), "test": (texts, labels), "train_plays", "test_plays"}``; classes are
    balanced in both splits, passages drawn evenly over plays (seeded), each passage ``words`` consecutive
    words starting at a random word of the play's spoken text (the first 5% of the play, its cast list and
    prologue, skipped).
    """
    from neurips26.data import load_shakespeare_plays

    plays = load_shakespeare_plays()
    rng = np.random.default_rng(seed)
    split: dict[str, list[str]] = {"train": [], "test": []}
    for group in ("comedy", "tragedy"):
        names = plays.names(group)
        held = set(rng.permutation(len(names))[:test_plays_per_group].tolist())
        split["test"] += [n for i, n in enumerate(names) if i in held]
        split["train"] += [n for i, n in enumerate(names) if i not in held]
    out: dict[str, object] = {"train_plays": tuple(split["train"]), "test_plays": tuple(split["test"])}
    for part, n_total in (("train", n_train), ("test", n_test)):
        texts, labels = [], []
        for label, group in enumerate(("comedy", "tragedy")):
            keys = [k for k in split[part] if plays.group(k) == group]
            per = np.full(len(keys), (n_total // 2) // len(keys))
            per[: (n_total // 2) % len(keys)] += 1
            for k, count in zip(keys, per):
                w = _spoken_words(plays[k])
                lo = len(w) // 20
                starts = rng.choice(np.arange(lo, len(w) - words), size=int(count), replace=False)
                texts += [" ".join(w[s:s + words]) for s in sorted(starts)]
                labels += [label] * int(count)
        order = rng.permutation(len(texts))
        out[part] = ([texts[i] for i in order], np.asarray(labels, dtype=np.int64)[order])
    return out


def encode_texts(tokenizer: object, texts: Sequence[str], labels: np.ndarray, *, max_len: int = 64,
                 add_special: bool = True) -> dict[str, torch.Tensor]:
    """Right-padded ``{"input_ids", "attention_mask", "labels", "sample_ids"}`` from a ``tokenizers.Tokenizer``
    (``encode_batch``) or a ``neurips26.nn.BPETokenizer`` (``encode``); rows cut to ``max_len`` tokens."""
    texts = list(texts)
    n_labels = len(np.asarray(labels).reshape(-1))
    if len(texts) != n_labels:
        raise ValueError(f"texts and labels must have the same length, got {len(texts)} texts and {n_labels} labels")
    if not texts:
        raise ValueError("texts must hold at least one text, got none")
    if hasattr(tokenizer, "encode_batch"):
        rows = [e.ids for e in tokenizer.encode_batch(list(texts), add_special_tokens=add_special)]
    else:
        rows = [tokenizer.encode(t) for t in texts]
    rows = [r[:max_len] if len(r) > max_len else r for r in rows]
    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": torch.as_tensor(labels, dtype=torch.long),
            "sample_ids": torch.arange(len(rows))}


def planted_task(n: int, *, vocab_size: int = 64, min_len: int = 8, max_len: int = 16, signal: int = 3,
                 seed: int = 0) -> dict[str, torch.Tensor]:
    """Random tokens ``[4, vocab)``; a sample of class ``c`` also holds ``signal`` tokens drawn from
    ``{4 + 4c, ..., 7 + 4c}`` at random positions. Lengths uniform in ``[min_len, max_len]``, right-padded with 0."""
    g = torch.Generator().manual_seed(int(seed))
    labels = torch.randint(2, (n,), generator=g)
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=g)
    ids = torch.zeros(n, max_len, dtype=torch.long)
    mask = torch.zeros(n, max_len, dtype=torch.long)
    for i in range(n):
        length = int(lengths[i])
        row = torch.randint(12, vocab_size, (length,), generator=g)
        pos = torch.randperm(length, generator=g)[:signal]
        row[pos] = 4 + 4 * int(labels[i]) + torch.randint(4, (len(pos),), generator=g)
        ids[i, :length] = row
        mask[i, :length] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels, "sample_ids": torch.arange(n)}


def subset(data: dict[str, torch.Tensor], idx: np.ndarray | torch.Tensor) -> dict[str, torch.Tensor]:
    """Rows ``idx`` of every tensor in ``data`` (sample ids kept)."""
    idx = torch.as_tensor(np.asarray(idx), dtype=torch.long)
    return {k: v[idx] for k, v in data.items()}


def dirichlet_partition(labels: np.ndarray | torch.Tensor, n_devices: int, alpha: float, *, seed: int = 0,
                        min_size: int = 4) -> list[np.ndarray]:
    """Indices per device with Dirichlet(``alpha``) label skew; redrawn (seeded) until every device has at least
    ``min_size`` samples."""
    y = np.asarray(labels)
    if not (isinstance(n_devices, int) and n_devices >= 1):
        raise ValueError(f"n_devices must be an int >= 1, got {n_devices!r}")
    if not (isinstance(alpha, int | float) and alpha > 0):
        raise ValueError(f"alpha must be > 0, got {alpha!r}")
    if min_size * n_devices > len(y):
        raise ValueError(f"{len(y)} samples cannot give {n_devices} devices {min_size} each")
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        parts: list[list[int]] = [[] for _ in range(n_devices)]
        for c in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == c))
            shares = rng.dirichlet(np.full(n_devices, float(alpha)))
            cuts = (np.cumsum(shares)[:-1] * len(idx)).astype(int)
            for j, chunk in enumerate(np.split(idx, cuts)):
                parts[j].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_size:
            return [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]
    raise RuntimeError(f"no Dirichlet({alpha}) partition with {min_size} samples per device in 1000 draws")


def make_profiles(n_devices: int, *, seed: int = 0, base_flops_per_s: float = 5e10, sigma: float = 0.8,
                  stragglers: int = 2, straggler_factor: float = 10.0, min_mbps: float = 1.0, max_mbps: float = 20.0
                  ) -> list[DeviceProfile]:
    """Heterogeneous :class:`DeviceProfile` s (the spec's federation); the ``stragglers`` slowest devices are
    a further ``straggler_factor`` times slower. Downlink = 2x uplink (inferred)."""
    rng = np.random.default_rng(seed)
    speed = base_flops_per_s * rng.lognormal(0.0, sigma, n_devices)
    slow = np.argsort(speed)[:stragglers]
    speed[slow] /= straggler_factor
    up = 1e6 * np.exp(rng.uniform(np.log(min_mbps), np.log(max_mbps), n_devices))
    return [DeviceProfile(float(s), float(u), float(2 * u)) for s, u in zip(speed, up)]
