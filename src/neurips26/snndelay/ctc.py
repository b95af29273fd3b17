"""CTC around the decoders: a validated loss, greedy decoding, PER, Viterbi forced alignment and the
boundary-aligned uncertainty analysis.

Conventions: class 0 is the CTC blank; phoneme labels are 1..40 (39 ARPAbet + SIL, SIL a real class).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ._checks import ArrayLike, Choice, Int, TensorC, int_list, validate

BLANK = 0
N_LABELS = 40


def ctc_min_length(target: Sequence[int]) -> int:
    """Shortest input a CTC path needs: $U + \\#\\{u : y_u = y_{u-1}\\}$ (a blank between repeats)."""
    target = int_list("target", target)
    return len(target) + sum(1 for a, b in zip(target[:-1], target[1:]) if a == b)


def _as_lists(targets: Sequence[Sequence[int]] | Tensor) -> list[list[int]]:
    if isinstance(targets, Tensor):
        targets = targets.tolist()
    if isinstance(targets, str | bytes) or not isinstance(targets, Sequence):
        raise TypeError(f"targets must be a sequence of label lists, got {type(targets).__name__}")
    return [int_list(f"targets[{i}]", t) for i, t in enumerate(targets)]


def validate_targets(targets: Sequence[Sequence[int]], input_lengths: Sequence[int], n_labels: int = N_LABELS) -> None:
    """Labels in 1..n_labels, non-empty, and each input long enough for its target."""
    if len(targets) != len(input_lengths):
        raise ValueError(f"targets and input_lengths must have the same length, got {len(targets)} and "
                         f"{len(input_lengths)}")
    for i, (tgt, t_len) in enumerate(zip(targets, input_lengths)):
        if len(tgt) == 0:
            raise ValueError(f"targets[{i}] is empty; every sentence needs at least one phoneme")
        bad = [v for v in tgt if not 1 <= v <= n_labels]
        if bad:
            raise ValueError(f"targets[{i}] must hold labels in 1..{n_labels} (0 is the CTC blank), got {bad[:5]}")
        need = ctc_min_length(tgt)
        if int(t_len) < need:
            raise ValueError(f"input_lengths[{i}]={int(t_len)} is too short for CTC: its target of {len(tgt)} "
                             f"labels needs T >= {need}")


@validate(logits=TensorC("B T C", dtype="float"), reduction=Choice("mean", "sum", "none"))
def ctc_loss(logits: Tensor, targets: Sequence[Sequence[int]], input_lengths: Sequence[int] | Tensor, *,
             reduction: str = "mean") -> Tensor:
    """CTC loss of ``logits [B, T, C]`` against label lists, after validating them (blank 0,
    ``zero_infinity=True``; ``"mean"`` divides each sentence by its target length, as torch does)."""
    tg = _as_lists(targets)
    lens = int_list("input_lengths", input_lengths)
    if len(tg) != logits.shape[0]:
        raise ValueError(f"targets must hold one label list per sentence ({logits.shape[0]}), got {len(tg)}")
    if len(lens) != logits.shape[0] or any(not 1 <= v <= logits.shape[1] for v in lens):
        raise ValueError(f"input_lengths must be {logits.shape[0]} values in 1..T={logits.shape[1]}, got {lens}")
    validate_targets(tg, lens, logits.shape[-1] - 1)
    flat = torch.tensor([v for t in tg for v in t], dtype=torch.long)
    log_probs = logits.float().log_softmax(-1).transpose(0, 1)  # [T, B, C]
    return F.ctc_loss(log_probs, flat, torch.tensor(lens), torch.tensor([len(t) for t in tg]), blank=BLANK,
                      reduction=reduction, zero_infinity=True)


@validate(logits=TensorC("B T C", finite=False))
def ctc_greedy_decode(logits: Tensor, lengths: Sequence[int] | Tensor | None = None) -> list[list[int]]:
    """Best-path decoding: argmax per bin, collapse repeats, drop blanks. ``logits [B, T, C] -> B id lists``."""
    if logits.is_floating_point() and torch.isnan(logits).any():  # +-inf are fine for an argmax, NaN is not
        raise ValueError("ctc_greedy_decode: logits contain NaN values")
    b, t, _ = logits.shape
    lens = [t] * b if lengths is None else int_list("lengths", lengths)
    if len(lens) != b or any(not 0 <= v <= t for v in lens):
        raise ValueError(f"lengths must be {b} values in 0..{t}, got {lens}")
    best = logits.argmax(-1).tolist()
    out = []
    for row, n in zip(best, lens):
        ids, prev = [], None
        for v in row[:n]:
            if v != prev and v != BLANK:
                ids.append(v)
            prev = v
        out.append(ids)
    return out


def edit_distance(a: Sequence[int], b: Sequence[int]) -> int:
    """Levenshtein distance (unit costs), two-row dynamic programme; ``editdistance`` when installed."""
    for name, v in (("a", a), ("b", b)):
        if v is None or not hasattr(v, "__len__") or not hasattr(v, "__iter__"):
            raise TypeError(f"{name} must be a sequence of labels, got {type(v).__name__}")
    try:
        import editdistance

        return int(editdistance.eval(list(a), list(b)))
    except ImportError:
        return _edit_distance_dp(a, b)


def _edit_distance_dp(a: Sequence[int], b: Sequence[int]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            # D[i,j] = min(D[i-1,j] + 1, D[i,j-1] + 1, D[i-1,j-1] + [x != y])
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def phoneme_error_rate(hyps: Sequence[Sequence[int]], refs: Sequence[Sequence[int]]) -> float:
    """$\\mathrm{PER} = \\sum_n \\mathrm{edit}(h_n, r_n) / \\sum_n |r_n|$."""
    for name, v in (("hyps", hyps), ("refs", refs)):
        if isinstance(v, str | bytes) or not isinstance(v, Sequence):
            raise TypeError(f"{name} must be a sequence of label sequences, got {type(v).__name__}")
    if len(hyps) != len(refs):
        raise ValueError(f"hyps and refs must have the same length, got {len(hyps)} and {len(refs)}")
    total = sum(len(r) for r in refs)
    if total == 0:
        raise ValueError("refs must contain at least one label in total")
    return sum(edit_distance(h, r) for h, r in zip(hyps, refs)) / total


@validate(log_probs=ArrayLike(ndim=2, finite=False))
def ctc_forced_align(log_probs: Tensor | np.ndarray, target: Sequence[int]) -> np.ndarray:
    """Viterbi alignment of ``log_probs [T, C]`` (log-posteriors) to ``target`` (labels, no blanks).

    Lattice over the extended sequence $z = (\\varnothing, y_1, \\varnothing, y_2, \\dots, y_U, \\varnothing)$:
    $\\delta_t(s) = \\log p_t(z_s) + \\max(\\delta_{t-1}(s), \\delta_{t-1}(s-1), \\delta_{t-1}(s-2))$, the skip
    allowed only from a blank to a different label. Returns the frame labels ``[T]`` (0 = blank) of the best
    path, which collapses to ``target``.
    """
    lp = np.asarray(log_probs.detach().cpu().double() if isinstance(log_probs, Tensor) else log_probs, float)
    if np.isnan(lp).any() or np.isposinf(lp).any():
        raise ValueError("log_probs must be log-probabilities (NaN and +inf refused; -inf is log 0)")
    tgt = int_list("target", target)
    if not tgt or any(not 1 <= v < lp.shape[1] for v in tgt):
        raise ValueError(f"target must be a non-empty list of labels in 1..{lp.shape[1] - 1}, got {tgt[:5]}")
    t_len = lp.shape[0]
    if t_len < ctc_min_length(tgt):
        raise ValueError(f"T={t_len} is too short for a target of {len(tgt)} labels (needs {ctc_min_length(tgt)})")
    z = [BLANK]
    for v in tgt:
        z += [v, BLANK]
    s_len = len(z)
    zarr = np.array(z)
    skip = np.zeros(s_len, bool)
    skip[3::2] = zarr[3::2] != zarr[1:-2:2]  # label s may come from label s-2 when they differ
    delta = np.full(s_len, -np.inf)
    delta[:2] = lp[0, zarr[:2]]
    back = np.zeros((t_len, s_len), np.int8)  # 0: stay, 1: from s-1, 2: from s-2
    for t in range(1, t_len):
        cand = np.stack([delta,
                         np.concatenate([[-np.inf], delta[:-1]]),
                         np.where(skip, np.concatenate([[-np.inf, -np.inf], delta[:-2]]), -np.inf)])
        back[t] = cand.argmax(0)
        delta = cand.max(0) + lp[t, zarr]
    s = s_len - 1 if delta[-1] >= delta[-2] else s_len - 2
    path = np.empty(t_len, int)
    for t in range(t_len - 1, -1, -1):
        path[t] = zarr[s]
        s -= back[t, s]
    return path


def _token_positions(path: np.ndarray) -> np.ndarray:
    """Index u of the target token each frame belongs to (the last token emitted at or before t; 0 before
    the first)."""
    pos, u, prev = np.zeros(len(path), int), -1, BLANK
    for t, v in enumerate(path):
        if v != BLANK and v != prev:
            u += 1
        pos[t] = max(u, 0)
        prev = v
    return pos


@dataclass(frozen=True)
class BoundaryUncertainty:
    """Mean posterior entropy (nats) and 1 − max p at boundary frames (±``window``) vs interior frames."""

    window: int
    boundary_entropy: float
    interior_entropy: float
    boundary_one_minus_max: float
    interior_one_minus_max: float
    n_boundary: int
    n_interior: int
    per_sentence_boundary_entropy: tuple[float, ...] = ()
    per_sentence_interior_entropy: tuple[float, ...] = ()


@validate(lead=Int(low=0))
def true_boundaries(frame_labels: Sequence[int] | np.ndarray, lead: int = 0) -> np.ndarray:
    """Frames at which the generator's label changes (a new phoneme starts), moved ``lead`` bins earlier
    because the neural activity leads the label by ``lead`` bins (:func:`synthetic_speech_bci`); the
    boundaries a decoder can see, independent of any model. Clipped to frame 0, duplicates dropped."""
    lab = np.asarray(frame_labels).ravel()
    changes = np.flatnonzero(np.diff(lab) != 0) + 1
    return np.unique(np.clip(changes - int(lead), 0, None))


@validate(window=Int(low=0))
def boundary_uncertainty(log_probs: Sequence[Tensor], targets: Sequence[Sequence[int]], *,
                         window: int = 1, boundaries: Sequence[Sequence[int]] | None = None) -> BoundaryUncertainty:
    """Boundary-aligned CTC uncertainty over sentences.

    For each sentence (``log_probs[n] [T_n, C]``), the boundaries are either given (``boundaries[n]``,
    frame indices, e.g. :func:`true_boundaries` of the generator's labels: the same frames for every model)
    or, by default, taken from the model's own forced alignment to the target (a frame where the aligned
    token changes, the first one excluded; these move with the model's peakiness). Boundary frames are
    those within ``window`` bins of a boundary, interior frames the rest.
    Entropy $H_t = -\\sum_c p_{t,c}\\log p_{t,c}$.
    """
    window = int(window)
    if len(log_probs) != len(targets) or not len(targets):
        raise ValueError(f"need equal, non-zero numbers of log_probs and targets, got {len(log_probs)}, {len(targets)}")
    if boundaries is not None and len(boundaries) != len(targets):
        raise ValueError(f"boundaries must hold one frame list per sentence ({len(targets)}), got {len(boundaries)}")
    ent_b, ent_i, om_b, om_i, sent_b, sent_i = [], [], [], [], [], []
    for n, (lp, tgt) in enumerate(zip(log_probs, targets)):
        lp_np = np.asarray(lp.detach().cpu().double() if isinstance(lp, Tensor) else lp, float)
        if boundaries is None:
            pos = _token_positions(ctc_forced_align(lp_np, tgt))
            changes = np.flatnonzero(np.diff(pos) != 0) + 1  # frames where token u starts (u >= 1)
        else:
            changes = np.asarray(boundaries[n], dtype=int).ravel()
            if changes.size and (changes.min() < 0 or changes.max() >= len(lp_np)):
                raise ValueError(f"boundaries[{n}] must be frames in 0..{len(lp_np) - 1}, got "
                                 f"{changes.min()}..{changes.max()}")
        near = np.zeros(len(lp_np), bool)
        for c in changes:
            near[max(0, c - window): c + window + 1] = True
        p = np.exp(lp_np)
        ent = -(p * lp_np).sum(1)
        om = 1.0 - p.max(1)
        ent_b += list(ent[near])
        ent_i += list(ent[~near])
        om_b += list(om[near])
        om_i += list(om[~near])
        sent_b.append(float(ent[near].mean()) if near.any() else math.nan)
        sent_i.append(float(ent[~near].mean()) if (~near).any() else math.nan)

    def mean(v: list[float]) -> float:
        return float(np.mean(v)) if v else math.nan

    return BoundaryUncertainty(window, mean(ent_b), mean(ent_i), mean(om_b), mean(om_i), len(ent_b), len(ent_i),
                               tuple(sent_b), tuple(sent_i))
