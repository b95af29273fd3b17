"""The local optimizer option reaches the client update (checked against hand-written update rules), and
the RNR-aware tangential attack on toy updates (against a per-row loop and the radial-invariance property)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from neurips26.wlia import LLGRowSum, TangentialRowSum, local_train, make_model, simulate_fedavg
from neurips26.wlia.federated import MOMENTUM, OPTIMIZERS, WEIGHT_DECAY


def _toy(n=24, d=5, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), torch.randint(0, c, (n,), generator=g)


def _grads(params, X, y):
    W, b = (p.clone().requires_grad_(True) for p in params)
    loss = F.cross_entropy(X @ W.T + b, y)
    return torch.autograd.grad(loss, (W, b))


def _manual(optimizer, params, X, y, lr, steps):
    """Full-batch updates written out by hand (one step per epoch when batch_size = n)."""
    params = [p.detach().clone() for p in params]
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    for t in range(1, steps + 1):
        grads = _grads(params, X, y)
        for i, (p, g) in enumerate(zip(params, grads)):
            if optimizer == "sgd":
                p -= lr * g
            elif optimizer == "momentum":
                g = g + WEIGHT_DECAY * p                      # weight decay enters the gradient
                m[i] = g if t == 1 else MOMENTUM * m[i] + g   # heavy ball: v ← μ v + g
                p -= lr * m[i]
            else:  # Adam, β1 = 0.9, β2 = 0.999, ε = 1e-8
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                mh, vh = m[i] / (1 - 0.9 ** t), v[i] / (1 - 0.999 ** t)
                p -= lr * mh / (vh.sqrt() + 1e-8)
    return params


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_local_train_applies_the_named_optimizer(optimizer):
    X, y = _toy()
    model = make_model("logistic", 5, 3, seed=1)
    start = [model.fc.weight.detach().clone(), model.fc.bias.detach().clone()]
    local_train(model, X, y, epochs=3, lr=0.1, batch_size=len(y), seed=0, optimizer=optimizer)
    expected = _manual(optimizer, start, X, y, 0.1, steps=3)
    torch.testing.assert_close(model.fc.weight.detach(), expected[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.fc.bias.detach(), expected[1], rtol=1e-5, atol=1e-6)


def test_the_optimizers_give_different_updates_and_the_loop_passes_the_option():
    X, y = _toy(n=60, d=6, c=4)
    parts = [np.arange(0, 30), np.arange(30, 60)]
    finals = {}
    for opt in OPTIMIZERS:
        hist = simulate_fedavg(lambda: make_model("logistic", 6, 4, seed=0), X.numpy(), y.numpy(), parts, rounds=1,
                               local_epochs=1, lr=0.05, optimizer=opt)
        finals[opt] = hist.global_state["fc.weight"]
    assert not torch.allclose(finals["sgd"], finals["adam"])
    assert not torch.allclose(finals["sgd"], finals["momentum"])


@pytest.mark.parametrize("bad", ["rmsprop", "", None, 3, ["sgd"]])
def test_unknown_optimizer_is_refused_before_training(bad):
    X, y = _toy()
    model = make_model("logistic", 5, 3, seed=1)
    before = model.fc.weight.detach().clone()
    with pytest.raises(ValueError, match="optimizer must be one of"):
        local_train(model, X, y, epochs=1, lr=0.1, batch_size=8, seed=0, optimizer=bad)
    assert torch.equal(model.fc.weight.detach(), before)  # a refused call changes nothing
    with pytest.raises(ValueError, match="optimizer must be one of"):
        simulate_fedavg(lambda: make_model("logistic", 5, 3), X.numpy(), y.numpy(), [np.arange(24)], rounds=1,
                        optimizer=bad)


# ------------------------------------------------------------------------------------- tangential attack
def _naive_tangential(wg, wl):
    out = []
    for c in range(wg.shape[0]):
        d = wl[c] - wg[c]
        n = np.sqrt(sum(x * x for x in wg[c]))
        u = d - (sum(a * b for a, b in zip(d, wg[c])) / (n * n)) * wg[c] if n > 0 else d
        out.append(sum(u))
    return np.array(out)


def test_tangential_scores_match_a_per_row_loop():
    rng = np.random.default_rng(3)
    wg, wl = rng.normal(size=(4, 7)), rng.normal(size=(4, 7))
    wg[2] = 0.0  # a zero row has no radial direction: the whole update is kept
    att = TangentialRowSum()
    np.testing.assert_allclose(att.observe(0, 1, wg, wl), _naive_tangential(wg, wl), rtol=1e-12, atol=1e-12)


def test_tangential_attack_ignores_a_radial_push_that_fools_row_sum():
    """A toy RNR: the client's CE update u (tangential part) plus a radial step a_c ŵ_c toward random targets.
    The tangential attack's score does not move with a_c; the row-sum score does."""
    rng = np.random.default_rng(0)
    wg = np.abs(rng.normal(size=(3, 6)))              # non-negative rows (ReLU-like features)
    unit = wg / np.linalg.norm(wg, axis=1, keepdims=True)
    u = np.array([[1.0] * 6, [0.2] * 6, [-0.5] * 6])   # CE pull: class 0 frequent, class 2 absent
    u -= (u * unit).sum(axis=1, keepdims=True) * unit   # keep its tangential part
    scores = []
    for a in ([0.0, 0.0, 0.0], [-5.0, 0.0, 5.0]):       # no RNR, then a radial push reversing the norms
        t, r = TangentialRowSum(), LLGRowSum()
        wl = wg + u + np.asarray(a)[:, None] * unit
        scores.append((t.observe(0, 1, wg, wl), r.observe(0, 1, wg, wl)))
    np.testing.assert_allclose(scores[0][0], scores[1][0], atol=1e-12)
    assert np.argmax(scores[1][0]) == 0 and np.argmax(scores[1][1]) == 2  # row-sum fooled, tangential not
