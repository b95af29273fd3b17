"""Federated setting for WLIA: label-skewed partitions, models with a classifier head, the client's
local training (shared by the in-process loop and the Flower client) and an in-process FedAvg loop.

The in-process loop :func:`simulate_fedavg` and the Flower apps in :mod:`neurips26.wlia.flower` call the
same :func:`local_train` with the same per-(seed, round, client) seeds, so an attack sees the same
updates in both (up to float summation order in the aggregation).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.constraints import (
    ArrayLike,
    Bool,
    Choice,
    Instance,
    Int,
    Optional,
    Real,
    Tensor,
    check_arguments,
    validate,
)
from neurips26.constraints import Callable as IsCallable

from .attack import UpdateAttack
from .rnr import RNRPenalty

__all__ = [
    "dirichlet_partition", "label_distribution_metrics", "label_distribution", "ClassifierNet",
    "make_model", "client_seed", "local_train", "make_optimizer", "OPTIMIZERS", "fedavg_aggregate",
    "simulate_fedavg", "FedAvgHistory",
]


# ---------------------------------------------------------------------------------------------- checks
#: the declared (neurips26.constraints) features and labels of one call: ``X [n, ...]`` finite floats, ``y [n]`` ints.
XY = {"X": Tensor("N ...", dtype="float"), "y": Tensor("N", dtype="integer")}
MODULE = Instance(nn.Module, "nn.Module")
SEED = Int(low=0)


def _check_labels(X: torch.Tensor, y: torch.Tensor, n_classes: int | None = None) -> None:
    """What :data:`XY` cannot say: ``n >= 1`` and the labels in ``[0, n_classes)``."""
    if X.ndim < 2 or X.shape[0] == 0:
        raise ValueError(f"X and y must have the same non-zero length and X must be [n, d], got X of shape "
                         f"{tuple(X.shape)}")
    if n_classes is not None and (int(y.min()) < 0 or int(y.max()) >= n_classes):
        raise ValueError(f"y must lie in [0, {n_classes}) (the model's classes), got range "
                         f"[{int(y.min())}, {int(y.max())}]")


def _check_xy(X: Any, y: Any, n_classes: int | None = None, where: str = "wlia") -> None:
    """``X [n, d]`` finite float tensor and ``y [n]`` integer labels in ``[0, n_classes)``, ``n >= 1``."""
    check_arguments(where, XY, {"X": X, "y": y})
    _check_labels(X, y, n_classes)


#: local optimizers a client may use (see :func:`make_optimizer`).
OPTIMIZERS = ("sgd", "momentum", "adam")
#: momentum and weight decay of the ``"momentum"`` optimizer (the usual "SGD with momentum + wd" client).
MOMENTUM, WEIGHT_DECAY = 0.9, 5e-4


@validate(name=Choice(*OPTIMIZERS))
def make_optimizer(name: str, params: Any, lr: float) -> torch.optim.Optimizer:
    r"""The client's local optimizer.

    * ``"sgd"``: plain SGD, ``θ ← θ − η g``.
    * ``"momentum"``: heavy-ball SGD with weight decay, ``v ← 0.9 v + g + 5·10⁻⁴ θ``, ``θ ← θ − η v``.
    * ``"adam"``: Adam (β = 0.9, 0.999), ``θ ← θ − η m̂ / (√v̂ + ε)``; the per-coordinate normalisation
      makes every coordinate move by about η whatever the gradient's size, which is what removes the
      class-count scale from the row norms WLIA reads (measured in the claim check).
    The optimizer state starts fresh every round (clients are stateless between rounds, as in FedAvg).
    """
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    return torch.optim.Adam(params, lr=lr)


#: the declared local-training arguments (shared by local_train, simulate_fedavg and the Flower apps).
LOCAL = {"optimizer": Choice(*OPTIMIZERS), "epochs": Int(low=1), "lr": Real(low=0.0, closed="neither"),
         "batch_size": Int(low=1), "seed": SEED, "proximal_mu": Real(low=0.0)}


def _check_local_args(epochs: Any, lr: Any, batch_size: Any, seed: Any, proximal_mu: Any,
                      optimizer: Any = "sgd", where: str = "wlia") -> None:
    check_arguments(where, LOCAL, {"optimizer": optimizer, "epochs": epochs, "lr": lr, "batch_size": batch_size,
                                   "seed": seed, "proximal_mu": proximal_mu})


def _n_outputs(model: nn.Module, weight_key: str) -> int | None:
    params = dict(model.named_parameters())
    return int(params[weight_key].shape[0]) if weight_key in params and params[weight_key].ndim == 2 else None


# ---------------------------------------------------------------------------------------------- data
@validate(n_clients=Int(low=1), alpha=Real(low=0.0, closed="neither"), seed=SEED, min_size=Int(low=0),
          max_tries=Int(low=1))
def dirichlet_partition(y: np.ndarray | Sequence[int], n_clients: int, alpha: float, *, seed: int = 0,
                        min_size: int = 10, max_tries: int = 1000) -> list[np.ndarray]:
    """Split sample indices among clients with Dirichlet(α) label skew (Hsu et al. 2019).

    For each class c, proportions q_c ~ Dir(α·1_K) decide which share of class c each client gets;
    the draw is repeated until every client has at least ``min_size`` samples. Small α -> few classes
    per client; large α -> near-IID.

    Args:
        y: integer labels ``[N]``.
        n_clients: K >= 1 (at most N).
        alpha: concentration α > 0.
        seed: the split is a function of (y, n_clients, alpha, seed, min_size).
        min_size: minimum samples per client (K·min_size <= N).
        max_tries: redraws before giving up with a ValueError.
    Returns:
        K sorted int64 index arrays, disjoint, covering all N samples.
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y must be a non-empty 1-D label array, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if not (np.issubdtype(y.dtype, np.floating) and np.all(np.mod(y, 1) == 0)):
            raise TypeError(f"y must hold integer labels, got dtype {y.dtype}")
        y = y.astype(np.int64)
    if n_clients > y.size:
        raise ValueError(f"n_clients={n_clients} is larger than the number of samples ({y.size}); "
                         "every client needs at least one sample")
    if n_clients * min_size > y.size:
        raise ValueError(f"n_clients * min_size = {n_clients * min_size} exceeds the {y.size} samples; "
                         "lower min_size or n_clients")
    rng = np.random.default_rng(seed)
    classes = np.unique(y)
    for _ in range(max_tries):
        buckets: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(y == c))
            # q_c ~ Dir(α 1_K); cut class c's shuffled indices at the cumulative proportions
            q = rng.dirichlet(np.full(n_clients, float(alpha)))
            cuts = (np.cumsum(q)[:-1] * idx.size).astype(int)
            for k, part in enumerate(np.split(idx, cuts)):
                buckets[k].append(part)
        parts = [np.sort(np.concatenate(b)).astype(np.int64) for b in buckets]
        if min(p.size for p in parts) >= max(min_size, 1):
            return parts
    raise ValueError(f"could not draw a Dirichlet(alpha={alpha}) split with every client >= {min_size} samples "
                     f"in {max_tries} tries; lower min_size or n_clients, or raise alpha")


@validate(n_classes=Int(low=1))
def label_distribution(y: np.ndarray, n_classes: int) -> np.ndarray:
    """Empirical label distribution ``[C]`` of integer labels ``y``."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D label array, got shape {y.shape}")
    if y.size == 0:
        raise ValueError("y is empty: a client without samples has no label distribution")
    if not np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_:
        if not (np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) and np.all(np.mod(y, 1) == 0)):
            raise TypeError(f"y must hold integer labels, got dtype {y.dtype}")
    y = y.astype(np.int64)
    if y.min() < 0 or y.max() >= n_classes:
        raise ValueError(f"labels must lie in [0, {n_classes}), got range [{y.min()}, {y.max()}]")
    return np.bincount(y, minlength=n_classes) / y.size


def _as_distribution(p: Any, name: str) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)  # declared ArrayLike("C") (finite) by the caller
    if np.any(arr < 0):
        raise ValueError(f"{name} must be finite and non-negative, got {arr}")
    total = arr.sum()
    if total <= 0:
        raise ValueError(f"{name} sums to 0; it must hold a distribution or counts")
    return arr / total


@validate(true=ArrayLike("C"), pred=ArrayLike("C"))
def label_distribution_metrics(true: Any, pred: Any) -> dict[str, float]:
    """Distances between a true and an inferred label distribution (inputs normalised to sum 1).

    Returns:
        ``js``: Jensen–Shannon divergence in bits (0..1), ``l1``: Σ|p − q| (0..2),
        ``linf``: max|p − q| (0..1), ``cos``: cosine similarity (0..1, higher = closer).
    """
    p = _as_distribution(true, "true")
    q = _as_distribution(pred, "pred")
    m = 0.5 * (p + q)

    def _kl(a: np.ndarray, b: np.ndarray) -> float:
        # KL(a‖b) = Σ a log₂(a/b), with 0·log 0 = 0 (b > 0 wherever a > 0 since b = (a + ·)/2)
        mask = a > 0
        return float(np.sum(a[mask] * np.log2(a[mask] / b[mask])))

    # JS(p, q) = ½ KL(p‖m) + ½ KL(q‖m),  m = (p + q)/2
    js = 0.5 * _kl(p, m) + 0.5 * _kl(q, m)
    diff = np.abs(p - q)
    cos = float(p @ q / (np.linalg.norm(p) * np.linalg.norm(q)))
    return {"js": max(js, 0.0), "l1": float(diff.sum()), "linf": float(diff.max()), "cos": cos}


# --------------------------------------------------------------------------------------------- models
KINDS = ("logistic", "mlp-relu", "mlp-tanh", "cnn")


class ClassifierNet(nn.Module):
    """``logits = fc(features(x))``: a feature extractor and a linear classifier ``fc`` (``[C, H]``).

    Kinds: ``"logistic"`` (no hidden layer: multinomial logistic regression on the inputs),
    ``"mlp-relu"`` / ``"mlp-tanh"`` (in -> hidden -> C), ``"cnn"`` (1×28×28 inputs, two strided
    convolutions, a ReLU hidden layer, then ``fc``).
    """

    @validate(in_features=Int(low=1), n_classes=Int(low=2), kind=Choice(*KINDS), hidden=Int(low=1), bias=Bool())
    def __init__(self, in_features: int, n_classes: int, *, kind: str = "mlp-relu", hidden: int = 64,
                 bias: bool = True) -> None:
        super().__init__()
        if kind == "logistic":
            self.features: nn.Module = nn.Identity()
            width = in_features
        elif kind in ("mlp-relu", "mlp-tanh"):
            act = nn.ReLU() if kind == "mlp-relu" else nn.Tanh()
            self.features = nn.Sequential(nn.Linear(in_features, hidden), act)
            width = hidden
        else:  # kind == "cnn" (declared)
            if in_features != 784:
                raise ValueError(f"kind='cnn' expects 28x28 = 784 input features, got {in_features}")
            self.features = nn.Sequential(
                nn.Unflatten(1, (1, 28, 28)),
                nn.Conv2d(1, 8, 5, stride=2), nn.ReLU(),     # [B, 8, 12, 12]
                nn.Conv2d(8, 16, 3, stride=2), nn.ReLU(),    # [B, 16, 5, 5]
                nn.Flatten(), nn.Linear(400, hidden), nn.ReLU())
            width = hidden
        self.kind = kind
        self.fc = nn.Linear(width, n_classes, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [B, in_features]`` -> logits ``[B, C]``."""
        return self.fc(self.features(x))


@validate(n_classes=Int(low=2), seed=SEED)
def make_model(kind: str, in_features: int, n_classes: int, *, hidden: int = 64, bias: bool = True,
               seed: int = 0) -> ClassifierNet:
    """A seeded :class:`ClassifierNet` (same seed -> same initial weights)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ClassifierNet(in_features, n_classes, kind=kind, hidden=hidden, bias=bias)


# ------------------------------------------------------------------------------------- client training
@validate(seed=SEED, round_idx=SEED, client_id=SEED)
def client_seed(seed: int, round_idx: int, client_id: int) -> int:
    """The seed of one client's local training in one round (same in every engine)."""
    return int(np.random.SeedSequence([int(seed), int(round_idx), int(client_id)]).generate_state(1)[0])


@validate(model=MODULE, **XY, **LOCAL, penalty=Optional(Instance(RNRPenalty, "RNRPenalty")))
def local_train(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, epochs: int, lr: float,
                batch_size: int, seed: int, penalty: RNRPenalty | None = None,
                penalty_key: Sequence[int] | None = None, weight_key: str = "fc.weight",
                proximal_mu: float = 0.0, optimizer: str = "sgd") -> dict[str, float]:
    """One client's local training: ``epochs`` of mini-batch ``optimizer`` steps on
    ``CE (+ RNR penalty) (+ FedProx term)``, in place. ``proximal_mu > 0`` adds FedProx's
    ``mu/2 ||w - w^g||^2`` over all parameters (``w^g``: the received weights).

    Args:
        model: starts from the received global weights; trained in place.
        X: features ``[n, d]`` float32; y: labels ``[n]`` int64.
        epochs, lr, batch_size: local epochs, step size η and batch size of ``optimizer``.
        optimizer: ``"sgd"`` (plain), ``"momentum"`` (0.9, weight decay 5e-4) or ``"adam"``; see
            :func:`make_optimizer` (fresh state each call).
        seed: shuffling seed (use :func:`client_seed`).
        penalty: optional :class:`RNRPenalty`; ``start_round`` is called here with the received
            classifier and ``penalty_key`` (e.g. ``(client_id, round)``).
        weight_key: name of the classifier weight parameter the penalty acts on.
    Returns:
        ``{"num-examples": n, "train-loss": mean CE of the last epoch}``.
    """
    _check_labels(X, y, _n_outputs(model, weight_key))
    params = dict(model.named_parameters())
    anchor = {k: v.detach().clone() for k, v in params.items()} if proximal_mu > 0 else None
    if penalty is not None:
        if weight_key not in params:
            raise ValueError(f"weight_key {weight_key!r} is not a parameter of the model "
                             f"(parameters: {list(params)})")
        penalty_key = RNRPenalty._check_key(penalty_key)
        penalty.start_round(params[weight_key].detach(), key=penalty_key)
    opt = make_optimizer(optimizer, model.parameters(), lr)
    gen = torch.Generator().manual_seed(int(seed) % (2**63))
    n = X.shape[0]
    model.train()
    last = 0.0
    for epoch in range(epochs):
        if penalty is not None:
            penalty.start_epoch(epoch)
        order = torch.randperm(n, generator=gen)
        total, count = 0.0, 0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            logits = model(X[idx])
            ce = F.cross_entropy(logits, y[idx])
            # L = CE + λ Σ_c (‖w_c‖ − r_c)²
            loss = ce if penalty is None else ce + penalty(params[weight_key])
            if anchor is not None:  # FedProx: + mu/2 sum ||w - w^g||^2
                loss = loss + 0.5 * proximal_mu * sum(((params[k] - anchor[k]) ** 2).sum() for k in anchor)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(ce.detach()) * idx.numel()
            count += idx.numel()
        last = total / count
    return {"num-examples": float(n), "train-loss": last}


def fedavg_aggregate(states: Sequence[Mapping[str, torch.Tensor]], weights: Sequence[float]
                     ) -> dict[str, torch.Tensor]:
    """``Σ_k (n_k / Σ n) θ_k``, per tensor (float32, like Flower's ``aggregate_arrayrecords``).

    ``states``: one state dict per client, same keys and shapes; ``weights``: as many finite numbers >= 0
    with a positive sum (the clients' example counts)."""
    states, weights = list(states), list(weights)
    if not states:
        raise ValueError("states must hold at least one client state dict, got none")
    if len(weights) != len(states):
        raise ValueError(f"weights must have one entry per state ({len(states)}), got {len(weights)}")
    check_arguments("fedavg_aggregate", {f"weights[{k}]": Real(low=0.0) for k in range(len(weights))},
                    {f"weights[{k}]": w for k, w in enumerate(weights)})
    if float(sum(weights)) <= 0:
        raise ValueError(f"weights must have a positive sum (they are example counts), got {weights}")
    ref = states[0]
    for k, state in enumerate(states):
        if not isinstance(state, Mapping) or set(state) != set(ref):
            raise ValueError(f"states[{k}] must be a state dict with the keys of states[0] ({sorted(ref)[:5]})")
        for key, value in state.items():
            if not isinstance(value, torch.Tensor) or value.shape != ref[key].shape:
                raise ValueError(f"states[{k}][{key!r}] must be a tensor of shape {tuple(ref[key].shape)}, got "
                                 f"{tuple(getattr(value, 'shape', ())) or type(value).__name__}")
            if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise ValueError(f"states[{k}][{key!r}] contains NaN or inf")
    total = float(sum(weights))
    out: dict[str, torch.Tensor] = {}
    for state, w in zip(states, weights, strict=True):
        for key, value in state.items():
            term = value.detach().float() * (w / total)
            out[key] = term if key not in out else out[key] + term
    return out


# --------------------------------------------------------------------------------------- FedAvg loop
@dataclass
class FedAvgHistory:
    """What :func:`simulate_fedavg` returns.

    Attributes:
        global_state: final global state dict.
        test_accuracy: global-model test accuracy after each round (fraction; empty without test data).
        participants: client ids that trained in each round (``participants[r - 1]`` for round r).
        true_distributions: ``{client: label distribution [C]}``.
        client_metrics: ``{(round, client): local_train metrics}``.
    """

    global_state: dict[str, torch.Tensor]
    test_accuracy: list[float] = field(default_factory=list)
    participants: list[list[int]] = field(default_factory=list)
    true_distributions: dict[int, np.ndarray] = field(default_factory=dict)
    client_metrics: dict[tuple[int, int], dict[str, float]] = field(default_factory=dict)


def _as_tensors(X: Any, y: Any, names: tuple[str, str] = ("X", "y")) -> tuple[torch.Tensor, torch.Tensor]:
    """``X [N, d]`` float32 and ``y [N]`` int64 tensors (declared shapes; finiteness, ``N >= 1`` and the label
    range are checked by the caller)."""
    X_t = torch.as_tensor(np.asarray(X), dtype=torch.float32)
    y_t = torch.as_tensor(np.asarray(y), dtype=torch.int64)
    check_arguments("simulate_fedavg", {names[0]: Tensor("N D", finite=False), names[1]: Tensor("N")},
                    {names[0]: X_t, names[1]: y_t})
    return X_t, y_t


@torch.no_grad()
@validate(model=MODULE, **XY)
def evaluate_accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of correct argmax predictions."""
    _check_labels(X, y)
    model.eval()
    return float((model(X).argmax(dim=1) == y).float().mean())


@validate(model_fn=IsCallable(), rounds=Int(low=1), local_epochs=Int(low=1), lr=LOCAL["lr"],
          batch_size=LOCAL["batch_size"], seed=SEED, fraction=Real(low=0.0, high=1.0, closed="right"),
          penalty=Optional(Instance(RNRPenalty, "RNRPenalty")), optimizer=LOCAL["optimizer"],
          on_update=Optional(IsCallable()))
def simulate_fedavg(model_fn: Callable[[], nn.Module], X: Any, y: Any, parts: Sequence[np.ndarray], *,
                    rounds: int = 20, local_epochs: int = 2, lr: float = 0.05, batch_size: int = 32,
                    seed: int = 0, fraction: float = 1.0, attacks: Sequence[UpdateAttack] = (),
                    penalty: RNRPenalty | None = None, weight_key: str = "fc.weight",
                    X_test: Any = None, y_test: Any = None, optimizer: str = "sgd",
                    on_update: Callable[[int, int, dict, dict], None] | None = None) -> FedAvgHistory:
    """In-process FedAvg (no Ray), with every client update fed to the server-side ``attacks``.

    Round r = 1..rounds: sample ``ceil(fraction·K)`` clients (all when ``fraction=1``), each trains
    with :func:`local_train` from the global model, every attack observes ``(client, r, global, local)``,
    then the server averages the local models weighted by client size.

    Args:
        model_fn: builds the (seeded) initial global model; must expose ``weight_key``.
        X, y: all samples ``[N, d]`` and labels ``[N]``; ``parts``: client index arrays.
        rounds, local_epochs, lr, batch_size: FedAvg and local training settings.
        optimizer: the clients' local optimizer (``"sgd"``, ``"momentum"``, ``"adam"``; :func:`make_optimizer`).
        seed: seeds client sampling and every client's shuffling.
        fraction: share of clients per round, in (0, 1].
        attacks: observers (WLIA, baselines); state dicts are passed as tensors.
        penalty: RNR penalty applied by every client (targets keyed by (client, round)).
        X_test, y_test: optional held-out set for the global test accuracy per round.
        on_update: optional callback ``(round, client, global_state, local_state)``.
    """
    X_t, y_t = _as_tensors(X, y)
    _check_xy(X_t, y_t, where="simulate_fedavg")
    attacks = list(attacks)
    for j, attack in enumerate(attacks):
        if not callable(getattr(attack, "observe", None)):
            raise TypeError(f"attacks[{j}] must have observe(client, round, global, local), got "
                            f"{type(attack).__name__}")
    if isinstance(parts, str | bytes) or not hasattr(parts, "__len__") or len(parts) < 1:
        raise ValueError("parts must hold at least one client's indices")
    for k, part in enumerate(parts):
        part = np.asarray(part)
        if part.ndim != 1 or part.size:  # a 1-D array of int sample indices
            check_arguments("simulate_fedavg", {f"parts[{k}]": ArrayLike("_", dtype="integer")}, {f"parts[{k}]": part})
        if part.size == 0:
            raise ValueError(f"parts[{k}] is empty; every client needs samples")
        if part.min() < 0 or part.max() >= X_t.shape[0]:
            raise ValueError(f"parts[{k}] has indices outside [0, {X_t.shape[0]})")
    model = model_fn()
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if weight_key not in state:
        raise ValueError(f"weight_key {weight_key!r} is not in the model's state dict ({list(state)})")
    n_classes = int(state[weight_key].shape[0])
    if int(y_t.min()) < 0 or int(y_t.max()) >= n_classes:
        raise ValueError(f"y must lie in [0, {n_classes}) (the model's classes), got range "
                         f"[{int(y_t.min())}, {int(y_t.max())}]")
    has_test = X_test is not None and y_test is not None
    if has_test:
        Xte, yte = _as_tensors(X_test, y_test, ("X_test", "y_test"))
        _check_xy(Xte, yte)
    hist = FedAvgHistory(global_state=state)
    hist.true_distributions = {k: label_distribution(y_t[np.asarray(p)].numpy(), n_classes)
                               for k, p in enumerate(parts)}
    n_sample = max(1, math.ceil(fraction * len(parts)))
    rng = np.random.default_rng([int(seed), 7])
    for r in range(1, rounds + 1):
        chosen = list(range(len(parts))) if n_sample == len(parts) else sorted(
            rng.choice(len(parts), size=n_sample, replace=False).tolist())
        states, weights = [], []
        for k in chosen:
            model.load_state_dict(state)
            idx = torch.as_tensor(np.asarray(parts[k]), dtype=torch.int64)
            metrics = local_train(model, X_t[idx], y_t[idx], epochs=local_epochs, lr=lr, batch_size=batch_size,
                                  seed=client_seed(seed, r, k), penalty=penalty, penalty_key=(k, r),
                                  weight_key=weight_key, optimizer=optimizer)
            local = {key: v.detach().clone() for key, v in model.state_dict().items()}
            for attack in attacks:
                attack.observe(k, r, state, local)
            if on_update is not None:
                on_update(r, k, state, local)
            states.append(local)
            weights.append(metrics["num-examples"])
            hist.client_metrics[(r, k)] = metrics
        state = fedavg_aggregate(states, weights)
        hist.participants.append(chosen)
        if has_test:
            model.load_state_dict(state)
            hist.test_accuracy.append(evaluate_accuracy(model, Xte, yte))
    hist.global_state = state
    return hist
