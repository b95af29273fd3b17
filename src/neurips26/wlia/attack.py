"""WLIA: infer a client's label distribution from how its classifier rows change in norm.

The server of a FedAvg round sends the global model ``W^g`` and receives the client's local model
``W^k``. With cross-entropy, the gradient of classifier row ``w_c`` is

    g_c = Σ_i (p_ic − y_ic) h_i

so local SGD adds a *pull* term ∝ Σ_{i: y_i = c} (1 − p_ic) h_i, which grows with the class count n_c,
and a *push* term ∝ Σ_{i: y_i ≠ c} p_ic h_i. Rows of frequent classes therefore grow faster in norm
(the long-tail observation of Kang et al. 2020). WLIA reads that growth, round after round.

Everything in this file that goes beyond "norms of classifier rows, variation across rounds" (the
abstract) is our inference: the per-round score, the round weighting and the score→distribution map.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from neurips26.constraints import ArrayLike, Bool, Choice, Int, Real, check_arguments, validate

__all__ = ["UpdateAttack", "WLIA", "to_numpy", "extract_array"]

_ESTIMATORS = ("linear", "softmax", "zero_aware")
_ROUND_WEIGHTINGS = ("uniform", "std")
_TEMPERATURE = Real(low=0.0, closed="neither")


def to_numpy(value: Any) -> np.ndarray:
    """A torch tensor, a Flower ``Array``, or anything array-like -> float64 numpy array (a copy)."""
    try:
        import torch

        if isinstance(value, torch.Tensor):
            return value.detach().cpu().numpy().astype(np.float64)  # astype copies
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass
    if hasattr(value, "numpy") and callable(value.numpy):  # flwr.app.Array
        return np.asarray(value.numpy(), dtype=np.float64).copy()
    return np.array(value, dtype=np.float64)


def extract_array(state: Any, key: str, *, argument: str) -> np.ndarray:
    """Take ``state[key]`` from a state dict / ``ArrayRecord`` (or use ``state`` itself if it is an array).

    Raises ValueError naming ``argument`` when the key is missing.
    """
    if isinstance(state, Mapping) or (hasattr(state, "keys") and hasattr(state, "__getitem__")):
        keys = list(state.keys())
        if key not in keys:
            shown = ", ".join(map(repr, keys[:12])) + (" ..." if len(keys) > 12 else "")
            raise ValueError(f"{argument}: no entry {key!r} (the classifier key); available keys: {shown}")
        return to_numpy(state[key])
    return to_numpy(state)


class UpdateAttack:
    """Common machinery of label-distribution attacks that read one layer of FedAvg updates.

    A subclass defines :meth:`_round_scores` (one score per class and round, larger = more samples);
    this class validates the inputs, stores scores per ``(client, round)``, averages them over rounds
    and maps the average to a distribution on the simplex.

    Args:
        weight_key: state-dict key of the classifier weight ``[C, H]`` (or of the bias for bias attacks).
        estimator: score -> distribution map: ``"linear"`` (p ∝ max(s − min s, 0)), ``"softmax"``
            (p = softmax(s / (τ·std s))) or ``"zero_aware"`` (p ∝ max(s, 0), null classes at 0).
        round_weighting: ``"uniform"`` (ω_t = 1) or ``"std"`` (ω_t = 1 / std_c s^t, equalises rounds).
        temperature: τ of the softmax estimator (> 0).
    """

    #: ndim of the array at ``weight_key`` (2 for a weight matrix, 1 for a bias vector).
    _ndim = 2

    @validate(estimator=Choice(*_ESTIMATORS), round_weighting=Choice(*_ROUND_WEIGHTINGS), temperature=_TEMPERATURE)
    def __init__(self, *, weight_key: str = "fc.weight", estimator: str = "linear",
                 round_weighting: str = "uniform", temperature: float = 1.0) -> None:
        if not isinstance(weight_key, str) or not weight_key:
            raise TypeError(f"weight_key must be a non-empty string, got {weight_key!r}")
        self.weight_key = weight_key
        self.estimator = estimator
        self.round_weighting = round_weighting
        self.temperature = float(temperature)
        self._scores: dict[Any, dict[int, np.ndarray]] = {}
        self._shape: tuple[int, ...] | None = None

    # ------------------------------------------------------------------ observation
    @validate(round_idx=Int(low=0))
    def observe(self, client_id: Any, round_idx: int, global_state: Any, local_state: Any) -> np.ndarray:
        """Record one client's update of one round; returns that round's score vector ``[C]``.

        Args:
            client_id: any hashable id (partition id, Flower node id).
            round_idx: the communication round (int >= 0; Flower counts from 1).
            global_state: the model the server sent: a state dict / ``ArrayRecord``, or the layer itself.
            local_state: the model the client returned, same form as ``global_state``.
        """
        try:
            hash(client_id)
        except TypeError as err:
            raise TypeError(f"client_id must be hashable, got {type(client_id).__name__}") from err
        w_global = extract_array(global_state, self.weight_key, argument="global_state")
        w_local = extract_array(local_state, self.weight_key, argument="local_state")
        if w_global.ndim != self._ndim:
            raise ValueError(f"global_state[{self.weight_key!r}] must be {self._ndim}-D, "
                             f"got shape {w_global.shape}")
        if w_local.shape != w_global.shape:
            raise ValueError(f"local_state[{self.weight_key!r}] has shape {w_local.shape}, but "
                             f"global_state[{self.weight_key!r}] has shape {w_global.shape}; "
                             "a client update must have the global model's shapes")
        if self._shape is not None and w_global.shape != self._shape:
            raise ValueError(f"{self.weight_key!r} has shape {w_global.shape} in this update but "
                             f"{self._shape} in earlier updates")
        if not (np.all(np.isfinite(w_global)) and np.all(np.isfinite(w_local))):
            raise ValueError(f"{self.weight_key!r} contains NaN or inf (global or local state)")
        if int(round_idx) in self._scores.get(client_id, {}):
            raise ValueError(f"client {client_id!r} already observed in round {round_idx}")
        scores = self._round_scores(w_global, w_local)
        # commit only now: a refused update registers nothing (not even the client)
        self._shape = w_global.shape
        self._scores.setdefault(client_id, {})[int(round_idx)] = scores
        return scores.copy()

    def _round_scores(self, w_global: np.ndarray, w_local: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # ------------------------------------------------------------------ inference
    @property
    def clients(self) -> list[Any]:
        """Clients observed so far, in first-seen order."""
        return list(self._scores)

    def rounds_of(self, client_id: Any) -> list[int]:
        """Rounds in which ``client_id`` was observed (sorted)."""
        return sorted(self._check_client(client_id))

    def round_scores(self, client_id: Any) -> dict[int, np.ndarray]:
        """Per-round score vectors ``{round: [C]}`` of one client (copies)."""
        return {t: s.copy() for t, s in sorted(self._check_client(client_id).items())}

    def scores(self, client_id: Any, *, rounds: Iterable[int] | None = None) -> np.ndarray:
        r"""Aggregated score ``s̄_c = Σ_t ω_t s^t_c / Σ_t ω_t`` over ``rounds`` (default: all observed)."""
        observed = self._check_client(client_id)
        chosen = sorted(observed) if rounds is None else sorted(set(_check_rounds(rounds)) & set(observed))
        if not chosen:
            raise ValueError(f"client {client_id!r} has no observed round in {rounds!r}")
        stack = np.stack([observed[t] for t in chosen])  # [T, C]
        if self.round_weighting == "uniform":
            weights = np.ones(len(chosen))
        else:
            # ω_t = 1 / std_c(s^t): removes the lr × steps × feature-norm scale of each round (inferred).
            spread = stack.std(axis=1)
            weights = np.where(spread > 0, 1.0 / np.where(spread > 0, spread, 1.0), 0.0)
            if weights.sum() == 0:
                weights = np.ones(len(chosen))
        return (weights[:, None] * stack).sum(axis=0) / weights.sum()

    def infer(self, client_id: Any, *, rounds: Iterable[int] | None = None) -> np.ndarray:
        """Inferred label distribution ``p̂ [C]`` (non-negative, sums to 1) of one client."""
        return scores_to_distribution(self.scores(client_id, rounds=rounds), self.estimator, self.temperature)

    def infer_all(self, *, rounds: Iterable[int] | None = None) -> dict[Any, np.ndarray]:
        """``{client: p̂}`` for every observed client (clients with no round in ``rounds`` are skipped)."""
        out = {}
        rounds = None if rounds is None else _check_rounds(rounds)
        for client in self._scores:
            if rounds is None or set(rounds) & set(self._scores[client]):
                out[client] = self.infer(client, rounds=rounds)
        return out

    def reset(self) -> None:
        """Forget every observation."""
        self._scores.clear()
        self._shape = None

    def _check_client(self, client_id: Any) -> dict[int, np.ndarray]:
        if client_id not in self._scores:
            raise ValueError(f"client {client_id!r} was never observed (observed: {self.clients[:10]})")
        return self._scores[client_id]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(weight_key={self.weight_key!r}, estimator={self.estimator!r}, "
                f"round_weighting={self.round_weighting!r})")


def _check_rounds(rounds: Any) -> list[int]:
    """``rounds``: an iterable of int round indices (>= 0)."""
    if isinstance(rounds, str | bytes) or not hasattr(rounds, "__iter__"):
        raise TypeError(f"rounds must be an iterable of int round indices or None, got {type(rounds).__name__}")
    out = []
    for t in rounds:
        if isinstance(t, bool) or not isinstance(t, int | np.integer) or t < 0:
            raise ValueError(f"rounds must hold ints >= 0, got {t!r}")
        out.append(int(t))
    return out


@validate(scores=ArrayLike("C"), estimator=Choice(*_ESTIMATORS), temperature=_TEMPERATURE)
def scores_to_distribution(scores: np.ndarray, estimator: str = "linear", temperature: float = 1.0) -> np.ndarray:
    """Map a score vector ``s [C]`` (larger = more samples) to a distribution ``p̂ [C]``.

    * linear:     p̂_c ∝ max(s_c − min_c' s_c', 0)   (the rarest class gets 0)
    * softmax:    p̂ = softmax(s / (τ · std(s)))
    * zero_aware: p̂_c ∝ max(s_c, 0)   (classes only pushed, s_c <= 0, are called absent, as in Decaf)
    A constant score vector gives the uniform distribution (no information, no 0/0).
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        raise ValueError(f"scores must be a non-empty 1-D array, got shape {s.shape}")
    temperature = float(temperature)
    n = s.size
    uniform = np.full(n, 1.0 / n)
    if estimator == "linear":
        p = np.maximum(s - s.min(), 0.0)
    elif estimator == "softmax":
        spread = s.std()
        if spread == 0:
            return uniform
        z = s / (temperature * spread)
        p = np.exp(z - z.max())
    else:  # "zero_aware" (the estimator is declared)
        p = np.maximum(s, 0.0)
        if p.sum() == 0:
            p = np.maximum(s - s.min(), 0.0)
    total = p.sum()
    return uniform if total <= 0 else p / total


class WLIA(UpdateAttack):
    r"""Weight-norm-based Label distribution Inference Attack (server side, no auxiliary data).

    Per observed round t of client k (our formulation, inferred from the abstract):

        δ^{k,t}_c = ‖W^{k,t}_c‖₂ − ‖W^{g,t}_c‖₂            (relative=True: divided by ‖W^{g,t}_c‖₂)

    then ``δ̄^k = Σ_t ω_t δ^{k,t} / Σ_t ω_t`` and ``p̂^k = estimator(δ̄^k)``.

    Args:
        weight_key: state-dict key of the classifier weight ``[C, H]`` (rows = classes).
        relative: divide each row's norm change by the global row norm.
        estimator, round_weighting, temperature: see :class:`UpdateAttack`.

    Example:
        >>> attack = WLIA(weight_key="fc.weight")
        >>> attack.observe(client_id=0, round_idx=1, global_state=gsd, local_state=lsd)  # doctest: +SKIP
        >>> attack.infer(0)                                                              # doctest: +SKIP
    """

    def __init__(self, *, weight_key: str = "fc.weight", relative: bool = False, estimator: str = "linear",
                 round_weighting: str = "uniform", temperature: float = 1.0) -> None:
        check_arguments("WLIA", {"relative": Bool()}, {"relative": relative})
        super().__init__(weight_key=weight_key, estimator=estimator, round_weighting=round_weighting,
                         temperature=temperature)
        self.relative = relative

    def _round_scores(self, w_global: np.ndarray, w_local: np.ndarray) -> np.ndarray:
        # ‖W_c‖₂ per row c: [C, H] -> [C]
        norm_global = np.linalg.norm(w_global, axis=1)
        norm_local = np.linalg.norm(w_local, axis=1)
        # δ_c = ‖W^k_c‖ − ‖W^g_c‖
        delta = norm_local - norm_global
        if self.relative:
            if np.any(norm_global == 0):
                raise ValueError("relative=True needs non-zero global classifier rows; "
                                 f"rows {np.flatnonzero(norm_global == 0).tolist()} of {self.weight_key!r} are 0")
            delta = delta / norm_global
        return delta
