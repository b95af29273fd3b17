r"""Tasks and federations for the claim check (rt-polarity is not available offline).

* :func:`word_order_passages` — the claim check's task since protocol 4: Shakespeare passages, half of them with
  their words shuffled within windows of 4 words; label = corrupted. Split by play.
* :func:`genre_passages` — passages labelled by First-Folio group (comedy / history / tragedy), split by play.

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

from neurips26.constraints import Int, Real, validate

from .simulate import DeviceProfile

__all__ = ["comedy_tragedy_passages", "dirichlet_partition", "encode_texts", "genre_passages", "make_profiles",
           "planted_task", "shuffle_windows", "subset", "word_order_passages"]

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


@validate(n_train=Int(low=1), n_test=Int(low=1), words=Int(low=1), test_plays_per_class=Int(low=1),
          n_val=Int(low=0), val_plays_per_class=Int(low=1))
def genre_passages(*, classes: Sequence[Sequence[str]] = (("comedy",), ("tragedy",)), n_train: int, n_test: int,
                   words: int = 24, test_plays_per_class: int = 3, n_val: int = 0, val_plays_per_class: int = 1,
                   seed: int = 0) -> dict[str, object]:
    """Passages labelled by First-Folio group from ``neurips26.data.load_shakespeare_plays()``, split by play.

    ``classes[c]`` lists the groups of class ``c`` (e.g. ``(("comedy", "tragedy"), ("history",))``: history vs
    the rest). Returns ``{"train": (texts, labels), "test": (texts, labels), "train_plays", "test_plays"}``;
    classes are balanced in both splits, passages drawn evenly over the plays of a class (seeded), each passage
    ``words`` consecutive words starting at a random word of the play's spoken text (the first 5% of the play,
    its cast list and prologue, skipped). ``test_plays_per_class`` plays of each class are held out for
    ``"test"``; with ``n_val > 0`` a further ``val_plays_per_class`` plays of each class are held out of the
    training plays for ``"val"`` (a validation split for tuning, disjoint by play from both; ``"val_plays"``).
    """
    from neurips26.data import load_shakespeare_plays

    classes = [tuple(c) for c in classes]
    flat = [g for c in classes for g in c]
    if len(classes) < 2 or len(set(flat)) != len(flat):
        raise ValueError(f"classes must be at least two disjoint tuples of groups, got {classes!r}")
    plays = load_shakespeare_plays()
    rng = np.random.default_rng(seed)
    split: dict[str, list[tuple[str, int]]] = {"train": [], "test": [], "val": []}
    n_held = test_plays_per_class + (val_plays_per_class if n_val else 0)
    for label, groups in enumerate(classes):
        names = [k for k in plays.names() if plays.group(k) in groups]
        if len(names) <= n_held:
            raise ValueError(f"class {groups!r} has {len(names)} plays, cannot hold out {n_held}")
        order = rng.permutation(len(names)).tolist()
        held, val = set(order[:test_plays_per_class]), set(order[test_plays_per_class:n_held] if n_val else ())
        split["test"] += [(n, label) for i, n in enumerate(names) if i in held]
        split["val"] += [(n, label) for i, n in enumerate(names) if i in val]
        split["train"] += [(n, label) for i, n in enumerate(names) if i not in held and i not in val]
    out: dict[str, object] = {f"{part}_plays": tuple(k for k, _ in split[part]) for part in ("train", "test", "val")}
    n_cls = len(classes)
    parts = [("train", n_train), ("test", n_test)] + ([("val", n_val)] if n_val else [])
    for part, n_total in parts:
        texts, labels = [], []
        for label in range(n_cls):
            keys = [k for k, c in split[part] if c == label]
            per = np.full(len(keys), (n_total // n_cls) // len(keys))
            per[: (n_total // n_cls) % len(keys)] += 1
            for k, count in zip(keys, per):
                w = _spoken_words(plays[k])
                lo = len(w) // 20
                starts = rng.choice(np.arange(lo, len(w) - words), size=int(count), replace=False)
                texts += [" ".join(w[s:s + words]) for s in sorted(starts)]
                labels += [label] * int(count)
        order = rng.permutation(len(texts))
        out[part] = ([texts[i] for i in order], np.asarray(labels, dtype=np.int64)[order])
    return out


def shuffle_windows(text: str, window: int, rng: np.random.Generator) -> str:
    """``text`` with its words shuffled within consecutive windows of ``window`` words (local word-order
    corruption: the bag of words, and each word's neighbourhood to within ``window``, are kept)."""
    words = text.split()
    for s in range(0, len(words), window):
        seg = words[s:s + window]
        rng.shuffle(seg)
        words[s:s + window] = seg
    return " ".join(words)


@validate(window=Int(low=2))
def word_order_passages(*, n_train: int, n_test: int, n_val: int = 0, words: int = 32, window: int = 4,
                        test_plays_per_group: int = 3, seed: int = 0) -> dict[str, object]:
    """Word-order acceptability (a CoLA-like task): is a passage Shakespeare's own (0) or the same kind of
    passage with its words shuffled within windows of ``window`` words (1)?

    Passages come from :func:`genre_passages` over comedies, histories and tragedies (balanced over the
    three groups, **split by play**: ``test_plays_per_group`` plays of each group held out for test, one more for
    ``"val"`` when ``n_val > 0``); in each split exactly half of the passages (seeded) are corrupted, so
    the classes are balanced and no original appears beside its own corruption. The label is a property of
    the text alone, so it is learnable from frozen features (a centralised logistic probe on mean-pooled
    MiniLM-3 features reaches 0.89-0.92 at 24-32 words; the comedy/tragedy label of protocols 1-3 about 0.52).
    """
    base = genre_passages(classes=(("comedy",), ("history",), ("tragedy",)), n_train=n_train, n_test=n_test,
                          n_val=n_val, words=words, test_plays_per_class=test_plays_per_group, seed=seed)
    rng = np.random.default_rng([seed, 7])
    out: dict[str, object] = {k: v for k, v in base.items() if k.endswith("_plays")}
    for part in ("train", "test", "val"):
        if part not in base:
            continue
        texts, _ = base[part]
        y = np.zeros(len(texts), dtype=np.int64)
        y[rng.permutation(len(texts))[: len(texts) // 2]] = 1
        out[part] = ([shuffle_windows(t, window, rng) if yi else t for t, yi in zip(texts, y)], y)
    return out


def comedy_tragedy_passages(*, n_train: int, n_test: int, words: int = 24, test_plays_per_group: int = 3,
                            seed: int = 0) -> dict[str, object]:
    """Comedy (0) vs tragedy (1): :func:`genre_passages` with its default classes (protocols 1-3)."""
    return genre_passages(classes=(("comedy",), ("tragedy",)), n_train=n_train, n_test=n_test, words=words,
                          test_plays_per_class=test_plays_per_group, seed=seed)


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


@validate(n_devices=Int(low=1), alpha=Real(low=0.0, closed="neither", allow_inf=True))
def dirichlet_partition(labels: np.ndarray | torch.Tensor, n_devices: int, alpha: float, *, seed: int = 0,
                        min_size: int = 4) -> list[np.ndarray]:
    """Indices per device with Dirichlet(``alpha``) label skew; redrawn (seeded) until every device has at least
    ``min_size`` samples."""
    y = np.asarray(labels)
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
