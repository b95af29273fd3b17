"""dynconv error contract, part 2 (issue 16): the naive baselines, the static depthwise conv, the packed
mask, the attention forward, the decode helpers and the task seeds refuse bad input by name."""

import pytest
import torch

from _badinput import BadInput, check_bad_inputs
from neurips26.dynconv import (
    ConvAugmentedAttention,
    DynamicShortConv,
    StaticShortConv,
    compositional_mqar,
    conv_attention_factory,
    gap_mqar,
    mqar,
    naive_dynamic_conv1d,
    naive_lowrank_dynamic_conv1d,
    packed_causal_mask,
    static_depthwise_conv1d,
)

NAN = float("nan")
X = torch.randn(2, 5, 6)
Z = torch.randn(2, 5, 3)
U = torch.randn(3, 24)
TAPS = torch.randn(2, 5, 3, 4)
S = torch.randn(4, 6)


def _nan(t, value=NAN):
    t = t.clone()
    t.view(-1)[0] = value
    return t


@pytest.mark.parametrize("call, case", [
    (naive_dynamic_conv1d, BadInput("x-list", (X.tolist(), TAPS), names="x")),
    (naive_dynamic_conv1d, BadInput("x-nan", (_nan(X), TAPS), names="x")),
    (naive_dynamic_conv1d, BadInput("taps-nan", (X, _nan(TAPS)), names="taps")),
    (naive_dynamic_conv1d, BadInput("taps-T", (X, TAPS[:, :3]), names="taps")),
    (naive_dynamic_conv1d, BadInput("taps-heads", (X, torch.randn(2, 5, 4, 4)), names="H")),
    (naive_dynamic_conv1d, BadInput("taps-dtype", (X, TAPS.double()), names="taps")),
    (naive_dynamic_conv1d, BadInput("static-shape", (X, TAPS, torch.randn(3, 6)), names="static_w")),
    (naive_lowrank_dynamic_conv1d, BadInput("z-T", (X, Z[:, :4], U), names="z")),
    (naive_lowrank_dynamic_conv1d, BadInput("U-width", (X, Z, U[:, :23]), names="U")),
    (naive_lowrank_dynamic_conv1d, BadInput("U-nan", (X, Z, _nan(U)), names="U")),
    (naive_lowrank_dynamic_conv1d, BadInput("z-type", (X, Z.numpy(), U), names="z")),
    (naive_lowrank_dynamic_conv1d, BadInput("static-nan", (X, Z, U, _nan(S)), names="static_w")),
    (static_depthwise_conv1d, BadInput("x-2d", (X[0], S), names="x")),
    (static_depthwise_conv1d, BadInput("x-int", (X.long(), S), names="x")),
    (static_depthwise_conv1d, BadInput("w-channels", (X, torch.randn(4, 5)), names="static_w")),
    (static_depthwise_conv1d, BadInput("w-1d", (X, torch.randn(4)), names="static_w")),
    (static_depthwise_conv1d, BadInput("w-nan", (X, _nan(S)), names="static_w")),
    (static_depthwise_conv1d, BadInput("w-type", (X, S.tolist()), names="static_w")),
    (packed_causal_mask, BadInput("none", (None, 5, "cpu"), names="cu_seqlens")),
    (packed_causal_mask, BadInput("float", (torch.tensor([0.0, 5.0]), 5, "cpu"), names="cu_seqlens")),
    (packed_causal_mask, BadInput("end", (torch.tensor([0, 3]), 5, "cpu"), names="cu_seqlens")),
    (packed_causal_mask, BadInput("decreasing", (torch.tensor([0, 4, 2, 5]), 5, "cpu"), names="cu_seqlens")),
    (packed_causal_mask, BadInput("t-0", (torch.tensor([0]), 0, "cpu"), names="t")),
    (packed_causal_mask, BadInput("t-float", (torch.tensor([0, 5]), 5.0, "cpu"), names="t")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_functions_refuse(call, case):
    check_bad_inputs(call, case)


def test_baselines_still_agree_with_a_loop():
    """Independent reference: the triple loop over (t, w, d) of y = sum_w (K + S) x_{t-w}."""
    x, taps, s = torch.randn(1, 4, 4, dtype=torch.float64), torch.randn(1, 4, 2, 3, dtype=torch.float64), \
        torch.randn(3, 4, dtype=torch.float64)
    ref = torch.zeros_like(x)
    for t in range(4):
        for w in range(3):
            if t - w < 0:
                continue
            for d in range(4):
                ref[0, t, d] += (taps[0, t, d // 2, w] + s[w, d]) * x[0, t - w, d]
    torch.testing.assert_close(naive_dynamic_conv1d(x, taps, s), ref)
    torch.testing.assert_close(static_depthwise_conv1d(x, s), naive_dynamic_conv1d(x, torch.zeros_like(taps), s))
    mask = packed_causal_mask(torch.tensor([0, 2, 4]), 4, torch.device("cpu"))
    assert mask.tolist() == [[True, False, False, False], [True, True, False, False],
                             [False, False, True, False], [False, False, True, True]]


@pytest.mark.parametrize("conv", ["none", "static", "dynamic"])
@pytest.mark.parametrize("case", [
    BadInput("x-2d", (torch.randn(5, 32),), names="x"),
    BadInput("x-width", (torch.randn(1, 5, 16),), names="x"),
    BadInput("x-int", (torch.zeros(1, 5, 32, dtype=torch.long),), names="x"),
    BadInput("x-list", ([[0.0] * 32],), names="x"),
    BadInput("cu-seqlens-B2", (torch.randn(2, 5, 32),), {"cu_seqlens": torch.tensor([0, 5])}, names="cu_seqlens"),
], ids=lambda c: c.id)
def test_conv_attention_forward_refuses_and_keeps_weights(conv, case):
    torch.manual_seed(0)
    layer = ConvAugmentedAttention(32, 4, conv=conv, backend="torch")
    check_bad_inputs(layer, case, target=layer)


@pytest.mark.parametrize("case", [
    BadInput("cond-1d", (torch.randn(6),), names="cond_t"),
    BadInput("cond-width", (torch.randn(2, 5),), names="cond_t"),
    BadInput("cond-nan", (torch.full((2, 6), NAN),), names="cond_t"),
    BadInput("cond-list", ([[0.0] * 6],), names="cond_t"),
], ids=lambda c: c.id)
def test_taps_at_refuses(case):
    layer = DynamicShortConv(6, backend="torch")
    check_bad_inputs(layer.taps_at, case, target=layer)


@pytest.mark.parametrize("make", [lambda: DynamicShortConv(6, backend="torch"), lambda: StaticShortConv(6)],
                         ids=["dynamic", "static"])
def test_init_state_and_static_step_refuse(make):
    layer = make()
    for case in [BadInput("batch-0", (0,), names="batch_size"), BadInput("batch-float", (2.0,), names="batch_size")]:
        check_bad_inputs(layer.init_state, case, target=layer)
    if isinstance(layer, StaticShortConv):
        for case in [BadInput("x-width", (torch.randn(2, 5), torch.zeros(2, 3, 6)), names="x_t"),
                     BadInput("state-shape", (torch.randn(2, 6), torch.zeros(2, 2, 6)), names="state")]:
            check_bad_inputs(layer.step, case, target=layer)


def test_from_conv1d_refuses_non_causal_convs():
    conv = torch.nn.Conv1d(6, 6, 4, groups=6, padding=1, bias=False)
    check_bad_inputs(StaticShortConv.from_conv1d, BadInput("padding", (conv,), names="padding"))
    check_bad_inputs(StaticShortConv.from_conv1d, BadInput("type", (torch.nn.Linear(6, 6),), names="conv"))


@pytest.mark.parametrize("task", [mqar, compositional_mqar, gap_mqar])
@pytest.mark.parametrize("case", [
    BadInput("seed-str", (64, 4, 32, 4), {"seed": "0"}, names="seed"),
    BadInput("seed-negative", (64, 4, 32, 4), {"seed": -1}, names="seed"),
    BadInput("power-bool", (64, 4, 32, 4), {"power_a": True}, names="power_a"),
], ids=lambda c: c.id)
def test_task_seeds_refused(task, case):
    check_bad_inputs(task, case)


def test_gap_prob_refused():
    check_bad_inputs(compositional_mqar, BadInput("gap-nan", (64, 4, 40, 4), {"gap_prob": NAN}, names="gap_prob"))
    check_bad_inputs(gap_mqar, BadInput("gap-0", (64, 4, 40, 4), {"gap_prob": 0.0}, names="gap_prob"))
    check_bad_inputs(gap_mqar, BadInput("gap-bool", (64, 4, 40, 4), {"gap_prob": True}, names="gap_prob"))


@pytest.mark.parametrize("case", [
    BadInput("kernel-0", ("dynamic",), {"kernel_size": 0}, names="kernel_size"),
    BadInput("rank-float", ("dynamic",), {"rank": 2.5}, names="rank"),
    BadInput("backend", ("static",), {"backend": "gpu"}, names="backend"),
], ids=lambda c: c.id)
def test_conv_attention_factory_checks_at_call_time(case):
    check_bad_inputs(conv_attention_factory, case)  # the factory was built and failed only inside Llama before
