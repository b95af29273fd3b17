"""RNR penalty against hand computation; partitions, metrics, FedAvg loop; bad input."""

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cosine, jensenshannon

from neurips26.wlia import (
    WLIA,
    RNRPenalty,
    UniformGuess,
    dirichlet_partition,
    fedavg_aggregate,
    label_distribution_metrics,
    make_model,
    simulate_fedavg,
)


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: one torch thread (two spin-wait when the other core is busy)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# ------------------------------------------------------------------------------ RNR
def test_rnr_targets_penalty_and_gradient_by_hand():
    W0 = torch.tensor([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0]], dtype=torch.float64)   # row norms 5, 1, 10
    reg = RNRPenalty(lam=0.3, spread=0.5, seed=7)
    targets = reg.start_round(W0, key=(2, 4))
    # r_c = m̄ (1 + ε_c), m̄ = (5 + 1 + 10)/3, ε ~ U(−0.5, 0.5) from default_rng([seed, *key])
    eps = np.random.default_rng([7, 2, 4]).uniform(-0.5, 0.5, size=3)
    r = 16.0 / 3.0 * (1 + eps)
    np.testing.assert_allclose(targets.numpy(), r, rtol=1e-6)
    W = torch.tensor([[1.0, 2.0], [2.0, 0.0], [0.0, -3.0]], dtype=torch.float64, requires_grad=True)
    loss = reg(W)
    norms = np.array([np.sqrt(5.0), 2.0, 3.0])
    r32 = reg.targets.double().numpy()
    assert abs(float(loss.detach()) - 0.3 * np.sum((norms - r32) ** 2)) < 1e-9
    loss.backward()
    # ∂/∂w_c λ(‖w_c‖ − r_c)² = 2λ(‖w_c‖ − r_c) w_c / ‖w_c‖
    Wn = W.detach().numpy()
    expected = 2 * 0.3 * (norms - r32)[:, None] * Wn / norms[:, None]
    np.testing.assert_allclose(W.grad.numpy(), expected, rtol=1e-9)


def test_rnr_gradcheck_zero_row_and_determinism():
    reg = RNRPenalty(lam=0.5, spread=0.25, seed=1)
    reg.start_round(torch.ones(4, 3), key=(0, 1))
    W = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda w: reg(w), (W,))
    Z = torch.zeros(4, 3, requires_grad=True)
    reg(Z).backward()
    assert torch.isfinite(Z.grad).all()
    # same key -> same targets, different key -> different
    other = RNRPenalty(lam=0.5, spread=0.25, seed=1)
    assert torch.equal(other.start_round(torch.ones(4, 3), key=(0, 1)), reg.targets)
    assert not torch.equal(other.start_round(torch.ones(4, 3), key=(1, 1)), reg.targets)
    # targets inside [m̄(1−ρ), m̄(1+ρ)], m̄ = sqrt(3)
    t = reg.targets.numpy()
    assert np.all(t >= np.sqrt(3) * 0.75 - 1e-6) and np.all(t <= np.sqrt(3) * 1.25 + 1e-6)


def test_rnr_resample_per_epoch():
    reg = RNRPenalty(resample="epoch", seed=0)
    first = reg.start_round(torch.ones(5, 2), key=(0, 1))
    reg.start_epoch(0)
    assert torch.equal(reg.targets, first)
    reg.start_epoch(1)
    assert not torch.equal(reg.targets, first)
    per_round = RNRPenalty(resample="round", seed=0)
    per_round.start_round(torch.ones(5, 2), key=(0, 1))
    per_round.start_epoch(1)
    assert torch.equal(per_round.targets, first)


def test_rnr_bad_input():
    for kwargs, match in [({"lam": -1}, "lam"), ({"lam": float("nan")}, "lam"), ({"spread": 1.0}, "spread"),
                          ({"resample": "step"}, "resample"), ({"seed": -2}, "seed")]:
        with pytest.raises(ValueError, match=match):
            RNRPenalty(**kwargs)
    reg = RNRPenalty()
    with pytest.raises(RuntimeError, match="start_round"):
        reg(torch.ones(3, 2))
    reg.start_round(torch.ones(3, 2))
    with pytest.raises(ValueError, match="shape"):
        reg(torch.ones(4, 2))
    with pytest.raises(ValueError, match="2-D"):
        reg.start_round(torch.ones(3))


# ------------------------------------------------------------------------------ partitions and metrics
def test_dirichlet_partition_properties():
    y = np.repeat(np.arange(10), 100)
    parts = dirichlet_partition(y, 8, 0.3, seed=3, min_size=10)
    allidx = np.concatenate(parts)
    assert sorted(allidx.tolist()) == list(range(1000))
    assert min(p.size for p in parts) >= 10
    again = dirichlet_partition(y, 8, 0.3, seed=3, min_size=10)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))

    def skew(alpha):
        ps = dirichlet_partition(y, 8, alpha, seed=0, min_size=5)
        return np.mean([np.bincount(y[p], minlength=10).max() / p.size for p in ps])

    assert skew(0.1) > skew(100.0) + 0.3


def test_dirichlet_partition_bad_input():
    y = np.arange(20) % 4
    with pytest.raises(ValueError, match="alpha"):
        dirichlet_partition(y, 2, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        dirichlet_partition(y, 2, -1.0)
    with pytest.raises(ValueError, match="larger than the number of samples"):
        dirichlet_partition(y, 21, 1.0, min_size=0)
    with pytest.raises(ValueError, match="min_size"):
        dirichlet_partition(y, 5, 1.0, min_size=10)
    with pytest.raises(TypeError, match="integer labels"):
        dirichlet_partition(y + 0.5, 2, 1.0, min_size=1)


def test_metrics_against_scipy():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7) * 0.3)
        q[rng.integers(7)] = 0.0
        q /= q.sum()
        m = label_distribution_metrics(p, q)
        assert abs(m["js"] - jensenshannon(p, q, base=2) ** 2) < 1e-10
        assert abs(m["l1"] - np.abs(p - q).sum()) < 1e-12
        assert abs(m["linf"] - np.abs(p - q).max()) < 1e-12
        assert abs(m["cos"] - (1 - cosine(p, q))) < 1e-12
    assert label_distribution_metrics([1, 0], [0, 1])["js"] == pytest.approx(1.0)
    assert label_distribution_metrics([2, 2], [0.5, 0.5])["l1"] == pytest.approx(0.0)  # counts normalised
    with pytest.raises(ValueError, match="pred must be an array .* with C = 2 .from true."):
        label_distribution_metrics([0.5, 0.5], [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="non-negative"):
        label_distribution_metrics([0.5, 0.5], [1.5, -0.5])


# ------------------------------------------------------------------------------ FedAvg loop
def test_fedavg_aggregate_matches_naive():
    rng = np.random.default_rng(0)
    states = [{"a": torch.as_tensor(rng.normal(size=(3, 2)), dtype=torch.float32)} for _ in range(4)]
    w = [10.0, 20.0, 5.0, 65.0]
    naive = sum(wk * s["a"].double().numpy() for wk, s in zip(w, states, strict=True)) / sum(w)
    np.testing.assert_allclose(fedavg_aggregate(states, w)["a"].numpy(), naive, rtol=1e-5, atol=1e-6)


def _digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return (X / 16.0).astype(np.float32), y


def test_fedavg_end_to_end_wlia_and_rnr():
    # spec smoke criterion: digits, K=5, R=3; WLIA JS < 0.7 · uniform JS; RNR (λ=1) raises WLIA's JS
    X, y = _digits()
    parts = dirichlet_partition(y, 5, 0.5, seed=0)

    def run(penalty):
        wlia, uni = WLIA(), UniformGuess()
        h = simulate_fedavg(lambda: make_model("mlp-relu", 64, 10, seed=0), X, y, parts, rounds=3,
                            attacks=[wlia, uni], penalty=penalty, X_test=X[:300], y_test=y[:300])
        js = {n: np.mean([label_distribution_metrics(h.true_distributions[k], a.infer(k))["js"]
                          for k in range(5)]) for n, a in (("wlia", wlia), ("uniform", uni))}
        return js, h

    js, h = run(None)
    assert len(h.test_accuracy) == 3 and h.participants == [list(range(5))] * 3
    assert js["wlia"] < 0.7 * js["uniform"]
    js_rnr, _ = run(RNRPenalty(lam=1.0, spread=0.5, seed=0))
    assert js_rnr["wlia"] > js["wlia"]


def test_fedavg_sampling_and_bad_input():
    X, y = _digits()
    parts = dirichlet_partition(y[:400], 6, 1.0, seed=0)
    wlia = WLIA()
    h = simulate_fedavg(lambda: make_model("logistic", 64, 10), X[:400], y[:400], parts, rounds=3, fraction=0.5,
                        attacks=[wlia], local_epochs=1)
    assert all(len(p) == 3 for p in h.participants)
    assert set(wlia.clients) == set().union(*map(set, h.participants))
    for c in wlia.clients:  # rounds observed = rounds the client was sampled in
        assert wlia.rounds_of(c) == [r + 1 for r, p in enumerate(h.participants) if c in p]
    with pytest.raises(ValueError, match="weight_key"):
        simulate_fedavg(lambda: make_model("logistic", 64, 10), X[:400], y[:400], parts, rounds=1,
                        weight_key="head.weight")
    with pytest.raises(ValueError, match="fraction"):
        simulate_fedavg(lambda: make_model("logistic", 64, 10), X[:400], y[:400], parts, rounds=1, fraction=0)
