"""ReZero as intended: its own learning rate for alpha, a configurable init, and the old shared-lr set-up."""

import numpy as np
import pytest
import torch

from neurips26.routing import DecoderConfig, TSPDecoderOnly, make_tsp_instances, solve_tsp_reference, train_supervised
from neurips26.routing.model import DecoderBlock


def _data():
    X = make_tsp_instances(64, 8, seed=3)
    return X, solve_tsp_reference(X, "exact")


def _alphas(m):
    return np.array([[float(b.alpha_attn.detach()), float(b.alpha_ffn.detach())] for b in m.blocks])


@pytest.mark.parametrize("mult", [1.0, 30.0])
def test_first_adam_step_moves_alpha_by_its_own_rate(mult):
    # Adam's first step is -lr * m1 / (sqrt(v1) + eps) = -lr * sign(g) (bias-corrected), so |delta| = the group's lr
    X, T = _data()
    torch.manual_seed(0)
    m = TSPDecoderOnly(DecoderConfig(16, 2))
    a0 = _alphas(m)
    lr = 1e-3
    train_supervised(m, X, T, steps=1, batch_size=16, lr=lr, warmup_steps=0, alpha_lr_mult=mult)
    np.testing.assert_allclose(np.abs(_alphas(m) - a0), mult * lr, rtol=1e-3)
    assert np.all(a0 == 0.0)  # ReZero default init


def test_other_parameters_keep_the_base_rate():
    X, T = _data()
    torch.manual_seed(0)
    m = TSPDecoderOnly(DecoderConfig(16, 2))
    w0 = m.scorer.weight.detach().clone()
    train_supervised(m, X, T, steps=1, batch_size=16, lr=1e-3, warmup_steps=0, alpha_lr_mult=30.0)
    assert float((m.scorer.weight.detach() - w0).abs().max()) <= 1e-3 * (1 + 1e-3)


def test_rezero_init_one_equals_the_plain_residual_block():
    # x + 1 * f(x) is the plain residual: same weights, same output
    torch.manual_seed(0)
    a = DecoderBlock(DecoderConfig(16, 1, rezero=True, rezero_init=1.0))
    b = DecoderBlock(DecoderConfig(16, 1, rezero=False))
    b.load_state_dict({k: v for k, v in a.state_dict().items() if "alpha" not in k})
    x = torch.randn(3, 7, 16)
    torch.testing.assert_close(a(x), b(x))
    z = DecoderBlock(DecoderConfig(16, 1))  # alpha = 0: the identity at init
    torch.testing.assert_close(z(x), x)


def test_eval_curve_is_recorded_every_k_steps_and_at_the_end():
    X, T = _data()
    m = TSPDecoderOnly(DecoderConfig(16, 1))
    calls = []
    res = train_supervised(m, X, T, steps=7, batch_size=8, lr=1e-3, eval_fn=lambda: calls.append(1) or 1.5,
                           eval_every=3)
    assert res.eval_steps == [3, 6, 7] and res.evals == [1.5, 1.5, 1.5] and m.training


def test_bad_rezero_options_are_refused():
    with pytest.raises(ValueError, match="rezero_init"):
        DecoderConfig(16, 1, rezero_init=float("nan"))
    X, T = _data()
    m = TSPDecoderOnly(DecoderConfig(16, 1))
    with pytest.raises(ValueError, match="alpha_lr_mult"):
        train_supervised(m, X, T, steps=1, batch_size=8, lr=1e-3, alpha_lr_mult=0.0)
    with pytest.raises(TypeError, match="eval_fn"):
        train_supervised(m, X, T, steps=1, batch_size=8, lr=1e-3, eval_fn=3, eval_every=1)
