"""Issue 16: every public dynconv entry point against a table of bad inputs (error type, the argument named,
object state unchanged; tests/_badinput.py)."""

import pytest
import torch

from _badinput import BadInput, check_bad_inputs
from neurips26.dynconv import (
    ConvAugmentedAttention,
    DynamicShortConv,
    StaticShortConv,
    compositional_mqar,
    conv_attention_factory,
    dynamic_conv1d,
    gap_mqar,
    lowrank_dynamic_conv1d,
    mqar,
)

NAN = float("nan")
X = torch.randn(2, 5, 6)
Z = torch.randn(2, 5, 3)
U = torch.randn(3, 24)
TAPS = torch.randn(2, 5, 3, 4)


def _nan(t, value=NAN):
    t = t.clone()
    t.view(-1)[0] = value
    return t


LOWRANK = [
    BadInput("x-wrong-type", (X.tolist(), Z, U), names="x"),
    BadInput("x-2d", (X[0], Z, U), names="x"),
    BadInput("x-int", (X.long(), Z, U), names="x"),
    BadInput("x-nan", (_nan(X), Z, U), names="x"),
    BadInput("z-inf", (X, _nan(Z, float("inf")), U), names="z"),
    BadInput("U-nan", (X, Z, _nan(U)), names="U"),
    BadInput("z-wrong-T", (X, Z[:, :4], U), names="z"),
    BadInput("U-wrong-width", (X, Z, U[:, :23]), names="U"),
    BadInput("z-dtype", (X, Z.double(), U), names="z"),
    BadInput("static-shape", (X, Z, U), {"static_w": torch.randn(3, 6)}, names="static_w"),
    BadInput("static-nan", (X, Z, U), {"static_w": _nan(torch.randn(4, 6))}, names="static_w"),
    BadInput("static-type", (X, Z, U), {"static_w": [[0.0] * 6] * 4}, names="static_w"),
    BadInput("backend", (X, Z, U), {"backend": "cuda"}, names="backend"),
    BadInput("cu-seqlens-B2", (X, Z, U), {"cu_seqlens": torch.tensor([0, 5])}, names="cu_seqlens"),
    BadInput("cu-seqlens-float", (X[:1], Z[:1], U), {"cu_seqlens": torch.tensor([0.0, 5.0])}, names="cu_seqlens"),
    BadInput("cu-seqlens-end", (X[:1], Z[:1], U), {"cu_seqlens": torch.tensor([0, 4])}, names="cu_seqlens"),
]
HEADWISE = [
    BadInput("taps-nan", (X, _nan(TAPS)), names="taps"),
    BadInput("taps-heads", (X, torch.randn(2, 5, 4, 4)), names="H"),
    BadInput("taps-T", (X, TAPS[:, :3]), names="taps"),
    BadInput("taps-type", (X, TAPS.numpy()), names="taps"),
    BadInput("taps-dtype", (X, TAPS.half()), names="taps"),
    BadInput("x-nan", (_nan(X), TAPS), names="x"),
]


@pytest.mark.parametrize("case", LOWRANK, ids=lambda c: c.id)
def test_lowrank_dynamic_conv1d_bad_input(case):
    check_bad_inputs(lowrank_dynamic_conv1d, case)


@pytest.mark.parametrize("case", HEADWISE, ids=lambda c: c.id)
def test_dynamic_conv1d_bad_input(case):
    check_bad_inputs(dynamic_conv1d, case)


def _layer():
    layer = DynamicShortConv(6, 4, rank=3, cond_dim=5)
    with torch.no_grad():
        layer.U.normal_()
    return layer


C = torch.randn(2, 5, 5)
MODULE = [
    BadInput("x-wrong-dim", (torch.randn(2, 5, 7), C), names="x"),
    BadInput("x-nan", (_nan(X), C), names="x"),
    BadInput("cond-inf", (X, _nan(C, float("inf"))), names="cond"),
    BadInput("cond-missing", (X,), names="cond"),
    BadInput("cond-wrong-T", (X, C[:, :4]), names="cond"),
    BadInput("cond-dtype", (X, C.double()), names="cond"),
    BadInput("x-type", ("x", C), names="x"),
]
STEP = [
    BadInput("x_t-shape", (X[:, 0, :5], C[:, 0], torch.zeros(2, 3, 6)), names="x_t"),
    BadInput("cond_t-shape", (X[:, 0], C[:, 0, :4], torch.zeros(2, 3, 6)), names="cond_t"),
    BadInput("state-shape", (X[:, 0], C[:, 0], torch.zeros(2, 2, 6)), names="state"),
    BadInput("state-dtype", (X[:, 0], C[:, 0], torch.zeros(2, 3, 6, dtype=torch.float64)), names="state"),
]


@pytest.mark.parametrize("case", MODULE, ids=lambda c: c.id)
def test_dynamic_short_conv_forward_bad_input(case):
    layer = _layer()
    check_bad_inputs(layer, case, target=layer)


@pytest.mark.parametrize("case", STEP, ids=lambda c: c.id)
def test_dynamic_short_conv_step_bad_input(case):
    layer = _layer()
    check_bad_inputs(layer.step, case, target=layer)


@pytest.mark.parametrize("case", [
    BadInput("dim-0", (0,), names="dim"), BadInput("kernel-0", (6, 0), names="kernel_size"),
    BadInput("dim-float", (6.5,), names="dim"), BadInput("backend", (6,), {"backend": "x"}, names="backend"),
], ids=lambda c: c.id)
def test_dynamic_short_conv_init_bad_input(case):
    check_bad_inputs(DynamicShortConv, case)


@pytest.mark.parametrize("case", [
    BadInput("x-nan", (_nan(X),), names="x"), BadInput("x-dim", (torch.randn(2, 5, 4),), names="x"),
    BadInput("x-int", (X.long(),), names="x"),
], ids=lambda c: c.id)
def test_static_short_conv_bad_input(case):
    layer = StaticShortConv(6)
    check_bad_inputs(layer, case, target=layer)


@pytest.mark.parametrize("case", [
    BadInput("conv-kind", (32, 4), {"conv": "fancy"}, names="conv"),
    BadInput("heads", (32, 5), names="n_heads"), BadInput("kv-heads", (32, 4, 3), names="n_kv_heads"),
], ids=lambda c: c.id)
def test_conv_attention_bad_input(case):
    check_bad_inputs(ConvAugmentedAttention, case)
    if case.id == "conv-kind":
        check_bad_inputs(conv_attention_factory, BadInput("factory", ("fancy",), names="conv"))


@pytest.mark.parametrize("task", [mqar, compositional_mqar, gap_mqar])
@pytest.mark.parametrize("case", [
    BadInput("vocab-0", (0, 4, 32, 4), names="vocab_size"), BadInput("n-neg", (64, -1, 32, 4), names="num_examples"),
    BadInput("len-float", (64, 4, 32.5, 4), names="seq_len"), BadInput("power-nan", (64, 4, 32, 4, NAN),
                                                                       names="power_a"),
], ids=lambda c: c.id)
def test_tasks_bad_input(task, case):
    check_bad_inputs(task, case)
