"""nn.train.TrainingGuard: a NaN loss restores the weights and the optimizer state exactly, any exception restores
them and every submodule's mode, and guarded steps are bitwise those of an unguarded loop."""

import pytest
import torch
from torch import nn

from neurips26.nn.train import NonFiniteLossError, TrainingGuard, train_lm

torch.set_num_threads(1)


def _model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 1))


def _data(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(16, 4, generator=g), torch.randn(16, 1, generator=g)


def _warm(model, opt, x, y, steps=3):
    """A few plain steps so the optimizer has state (Adam's moments, step counts) worth restoring."""
    model.train()
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def _copy_state(model, opt):
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    state = {i: {k: v.clone() if torch.is_tensor(v) else v for k, v in s.items()}
             for i, s in enumerate(opt.state.values())}
    return weights, state, [dict((k, v) for k, v in g.items() if k != "params") for g in opt.param_groups]


def _assert_same(model, opt, saved):
    weights, state, groups = saved
    now = model.state_dict()
    assert now.keys() == weights.keys()
    assert all(torch.equal(now[k], weights[k]) for k in weights)
    assert len(opt.state) == len(state)
    for i, s in enumerate(opt.state.values()):
        assert s.keys() == state[i].keys()
        for k, v in s.items():
            assert torch.equal(v, state[i][k]) if torch.is_tensor(v) else v == state[i][k]
    assert [dict((k, v) for k, v in g.items() if k != "params") for g in opt.param_groups] == groups


def test_a_nan_loss_restores_weights_and_optimizer_state_exactly():
    model, (x, y) = _model(), _data()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    _warm(model, opt, x, y)
    saved = _copy_state(model, opt)
    params_before = [id(p) for p in model.parameters()]
    with pytest.raises(NonFiniteLossError, match=r"fit: the training loss is non-finite \(nan\) at step 2") as err:
        with TrainingGuard(model, opt, where="fit") as guard:
            for step in range(3):  # two good steps change everything, the third loss is NaN
                for group in opt.param_groups:
                    group["lr"] = 0.1 * (step + 1)
                loss = nn.functional.mse_loss(model(x), y) * (float("nan") if step == 2 else 1.0)
                guard.check_loss(loss, step=step)
                opt.zero_grad()
                loss.backward()
                opt.step()
    assert isinstance(err.value, FloatingPointError) and isinstance(err.value, ValueError)
    assert "model and optimizer are restored" in str(err.value)
    _assert_same(model, opt, saved)
    assert [id(p) for p in model.parameters()] == params_before  # restored in place: the optimizer still owns them
    _warm(model, opt, x, y, steps=1)  # and it can keep training


def test_any_exception_restores_the_weights_and_each_submodules_mode():
    model, (x, y) = _model(), _data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _warm(model, opt, x, y)
    model.eval()
    model[3].train()  # a mixed state: only the BatchNorm in train mode
    saved = _copy_state(model, opt)
    modes = [m.training for m in model.modules()]
    with pytest.raises(KeyError, match="boom"):
        with TrainingGuard(model, opt):
            model.train()
            _warm(model, opt, x, y, steps=2)  # also moves BatchNorm's running statistics (buffers)
            raise KeyError("boom")
    assert [m.training for m in model.modules()] == modes
    _assert_same(model, opt, saved)


def test_an_optimizer_created_inside_is_watched_and_success_keeps_the_training():
    model, (x, y) = _model(), _data()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with TrainingGuard(model) as guard:
        opt = guard.watch(torch.optim.Adam(model.parameters(), lr=1e-2))
        _warm(model, opt, x, y, steps=2)
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())  # success: kept
    after_ok = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(RuntimeError):
        with TrainingGuard(model) as guard:
            opt = guard.watch(torch.optim.Adam(model.parameters(), lr=1e-2))
            _warm(model, opt, x, y, steps=2)
            raise RuntimeError("late failure")
    assert all(torch.equal(after_ok[k], v) for k, v in model.state_dict().items())


def test_guarded_steps_are_bitwise_those_of_an_unguarded_loop():
    x, y = _data()
    runs = []
    for guarded in (False, True):
        model = _model(3)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        torch.manual_seed(7)  # dropout draws
        losses = []
        guard = TrainingGuard(model, opt)
        with guard if guarded else torch.enable_grad():
            model.train()
            for step in range(5):
                loss = nn.functional.mse_loss(model(x), y)
                if guarded:
                    guard.check_loss(loss, step=step)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        runs.append((losses, [p.detach().clone() for p in model.parameters()]))
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))


def test_check_loss_accepts_numbers_and_refuses_inf_and_a_bad_model():
    guard = TrainingGuard(nn.Linear(1, 1), what="the CTC loss")
    guard.check_loss(1.5)
    guard.check_loss(torch.tensor([1.0, 2.0]))
    with pytest.raises(NonFiniteLossError, match=r"the CTC loss is non-finite \(inf\); the model is restored"):
        guard.check_loss(float("inf"))
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        TrainingGuard("model")


def test_train_lm_restores_a_given_optimizer_and_the_mode_on_a_nan_loss():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batches = [(torch.randint(0, 10, (2, 5)), torch.randint(0, 10, (2, 5))) for _ in range(4)]
    train_lm(model, iter(batches), steps=2, lr=1e-2, optimizer=opt)  # optimizer state to restore
    model.eval()
    saved = _copy_state(model, opt)
    calls = []

    def loss_fn(m, xb, yb):  # the second step's loss is NaN: the first step's update must be undone too
        calls.append(1)
        out = nn.functional.cross_entropy(m(xb).flatten(0, 1), yb.flatten())
        return out * float("nan") if len(calls) == 2 else out

    with pytest.raises(FloatingPointError, match="train_lm: the training loss is non-finite .* at step 1"):
        train_lm(model, iter(batches), steps=2, lr=1e-2, optimizer=opt, loss_fn=loss_fn)
    assert not model.training
    _assert_same(model, opt, saved)


def test_a_failed_fit_restores_the_gradients_as_they_were():
    import torch
    from torch import nn

    from neurips26.nn.train import NonFiniteLossError, TrainingGuard

    model = nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(NonFiniteLossError):
        with TrainingGuard(model, opt, where="fit") as guard:
            model(torch.ones(1, 3)).sum().backward()  # a step's worth of gradient, then a NaN loss
            guard.check_loss(torch.tensor(float("nan")))
    assert all(p.grad is None for p in model.parameters())
