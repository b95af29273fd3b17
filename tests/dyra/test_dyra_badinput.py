"""dyra's error contract (issue 16): every public entry point refuses bad input by name (NaN included), never
hangs, and a failed call leaves the layer, module or model exactly as it was (no half-swapped model)."""

import math

import pytest
import torch
from torch import nn

from _badinput import BadInput, check_bad_inputs
from neurips26.dyra import (
    DyRALinear,
    StaticResidualCorrection,
    StructuredLinear,
    apply_dyra,
    budget_rank,
    clustered_layer,
    collect_linear_inputs,
    damped_cholesky,
    dense_flops,
    dyra_budget_rank,
    dyra_extra_flops,
    dyra_matmul,
    flops_per_token,
    gram,
    qr_flops,
    replace_linears,
    small_svd_flops,
    static_budget_rank,
    static_extra_flops,
    svd_rank,
)

pytestmark = pytest.mark.timeout(30)
N_IN, N_OUT = 24, 16


def _lin(seed=0):
    torch.manual_seed(seed)
    return nn.Linear(N_IN, N_OUT).double()


def _x(*lead, seed=1):
    return torch.randn(*lead, N_IN, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _gram():
    x = _x(64)
    return x.T @ x


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.up = nn.Linear(N_IN, 32)
        self.down = nn.Linear(32, N_IN)

    def forward(self, x, attention_mask=None):
        return self.down(torch.relu(self.up(x)))


NAN_LIN = _lin()
with torch.no_grad():
    NAN_LIN.weight[0, 0] = float("nan")
XNAN = _x(5)
XNAN[0, 0] = float("nan")

# ------------------------------------------------------------------ FLOP formulas and budgets
INT_BAD = [-1, 0, 2.5, "8", True, float("nan"), None]


@pytest.mark.parametrize("fn,args,pos,name", [
    (qr_flops, (8, 4), 0, "m"), (qr_flops, (8, 4), 1, "l"),
    (small_svd_flops, (4,), 0, "l"),
    (static_extra_flops, (16, 24, 4), 0, "m"), (static_extra_flops, (16, 24, 4), 1, "n"),
    (static_extra_flops, (16, 24, 4), 2, "rank"),
    (dense_flops, (16, 24), 0, "m"), (dense_flops, (16, 24), 1, "n"),
    (dyra_extra_flops, (16, 24, 4, 8, 0, 64), 0, "m"), (dyra_extra_flops, (16, 24, 4, 8, 0, 64), 2, "rank"),
    (dyra_extra_flops, (16, 24, 4, 8, 0, 64), 5, "n_tokens"),
    (svd_rank, (16, 24, 0.25), 0, "m"), (svd_rank, (16, 24, 0.25), 1, "n"),
    (budget_rank, (16, 24, 0.5), 0, "m"), (budget_rank, (16, 24, 0.5), 1, "n"),
    (dyra_budget_rank, (16, 24, 0.5, 4), 3, "correction_rank"),
    (static_budget_rank, (16, 24, 0.5, 4), 3, "correction_rank"),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_flop_formulas_refuse_bad_sizes(fn, args, pos, name):
    for bad in INT_BAD:
        if bad == 0 and name in ("oversample", "power_iters"):
            continue
        a = list(args)
        a[pos] = bad
        check_bad_inputs(fn, BadInput(f"{name}={bad!r}", tuple(a), names=name))


@pytest.mark.parametrize("case", [
    BadInput("oversample<0", (16, 24, 4, -1, 0, 64), names="oversample"),
    BadInput("power_iters<0", (16, 24, 4, 8, -2, 64), names="power_iters"),
    BadInput("sketch", (16, 24, 4, 8, 0, 64), {"sketch": "sobol"}, names="sketch"),
], ids=lambda c: c.id)
def test_dyra_extra_flops_refuses(case):
    check_bad_inputs(dyra_extra_flops, case)


@pytest.mark.parametrize("fn", [budget_rank, lambda m, n, b, **k: dyra_budget_rank(m, n, b, 4, **k),
                                lambda m, n, b, **k: static_budget_rank(m, n, b, 4, **k)],
                         ids=["budget", "dyra", "static"])
@pytest.mark.parametrize("case", [
    BadInput("budget-nan", (16, 24, float("nan")), names="flop_budget"),
    BadInput("budget-1.5", (16, 24, 1.5), names="flop_budget"),
    BadInput("structure", (16, 24, 0.5), {"structure": "toeplitz"}, names="structure"),
    BadInput("blocks-0", (16, 24, 0.5), {"structure": "monarch", "blocks": 0}, names="blocks"),
], ids=lambda c: c.id)
def test_budget_ranks_refuse(fn, case):
    check_bad_inputs(fn, case)


def test_svd_rank_and_dense_flops_refuse():
    for r in (0.0, 1.0, float("nan"), "0.5"):
        check_bad_inputs(svd_rank, BadInput(f"ratio={r}", (16, 24, r), names="rank_ratio"))
    check_bad_inputs(dense_flops, BadInput("bias", (16, 24, "yes"), names="bias"))


# ------------------------------------------------------------------ reference product
@pytest.mark.parametrize("case", [
    BadInput("X-nan", (XNAN, lambda x: x[:, :N_OUT], torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2),
             names="X"),
    BadInput("X-int", (torch.ones(5, N_IN, dtype=torch.long), lambda x: x, torch.zeros(N_OUT, N_IN), 2), names="X"),
    BadInput("X-3d", (_x(2, 5), lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2), names="X"),
    BadInput("X-width", (_x(5)[:, :3], lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2), names="X"),
    BadInput("E-nan", (_x(5), lambda x: x, torch.full((N_OUT, N_IN), math.nan, dtype=torch.float64), 2),
             names="E"),
    BadInput("E-list", (_x(5), lambda x: x, [[0.0] * N_IN] * N_OUT, 2), names="E"),
    BadInput("Ws", (_x(5), "apply", torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2), names="Ws_apply"),
    BadInput("k-0", (_x(5), lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), 0), names="k"),
    BadInput("k-big", (_x(5), lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), N_OUT), names="k"),
    BadInput("p<0", (_x(5), lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2), {"p": -1}, names="p"),
    BadInput("q-float", (_x(5), lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2), {"q": 1.0},
             names="q"),
    BadInput("omega-shape", (_x(5), lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2),
             {"omega": torch.zeros(5, 3)}, names="omega"),
    BadInput("omega-nan", (_x(5), lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2),
             {"p": 0, "omega": torch.full((5, 2), math.nan)}, names="omega"),
    BadInput("omega-list", (_x(5), lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2),
             {"p": 0, "omega": [[0.0, 1.0]] * 5}, names="omega"),
    BadInput("generator", (_x(5), lambda x: x, torch.zeros(N_OUT, N_IN, dtype=torch.float64), 2),
             {"generator": 0}, names="generator"),
], ids=lambda c: c.id)
def test_dyra_matmul_refuses(case):
    check_bad_inputs(dyra_matmul, case)


# ------------------------------------------------------------------ structured layers
@pytest.mark.parametrize("case", [
    BadInput("lin-nan", (NAN_LIN,), names="lin"),
    BadInput("lin-conv", (nn.Conv1d(2, 2, 1),), names="lin"),
    BadInput("structure", (_lin(), "toeplitz"), names="structure"),
    BadInput("ratio-0", (_lin(), "svd", 0.0), names="rank_ratio"),
    BadInput("ratio-nan", (_lin(), "svd", math.nan), names="rank_ratio"),
    BadInput("blocks-3", (_lin(), "blockdiag", 0.25, 3), names="blocks"),
    BadInput("blocks-0", (_lin(), "monarch", 0.25, 0), names="blocks"),
    BadInput("whitened-no-gram", (_lin(), "whitened_svd"), names="calib_gram"),
    BadInput("gram-shape", (_lin(), "whitened_svd", 0.25, 4, torch.eye(3)), names="calib_gram"),
    BadInput("gram-nan", (_lin(), "whitened_svd", 0.25, 4, torch.full((N_IN, N_IN), math.nan)), names="calib_gram"),
    BadInput("gram-asym", (_lin(), "whitened_svd", 0.25, 4, torch.triu(torch.ones(N_IN, N_IN))),
             names="calib_gram"),
    BadInput("rank-0", (_lin(), "svd"), {"rank": 0}, names="rank"),
    BadInput("rank-big", (_lin(), "svd"), {"rank": N_OUT}, names="rank"),
    BadInput("svd_method", (_lin(), "svd"), {"svd_method": "qr"}, names="svd_method"),
], ids=lambda c: c.id)
def test_structured_from_linear_refuses_and_keeps_the_layer(case):
    check_bad_inputs(StructuredLinear.from_linear, case, targets=[case.args[0]])


@pytest.mark.parametrize("case", [
    BadInput("A-nan", (torch.full((N_OUT, 3), math.nan), torch.zeros(3, N_IN)), names="A"),
    BadInput("B-inf", (torch.zeros(N_OUT, 3), torch.full((3, N_IN), math.inf)), names="B"),
    BadInput("shared-r", (torch.zeros(N_OUT, 3), torch.zeros(4, N_IN)), names="A"),
    BadInput("A-list", ([[0.0]], torch.zeros(1, N_IN)), names="A"),
    BadInput("A-int", (torch.zeros(N_OUT, 3, dtype=torch.long), torch.zeros(3, N_IN)), names="A"),
    BadInput("bias-shape", (torch.zeros(N_OUT, 3), torch.zeros(3, N_IN), torch.zeros(2)), names="bias"),
    BadInput("bias-nan", (torch.zeros(N_OUT, 3), torch.zeros(3, N_IN), torch.full((N_OUT,), math.nan)),
             names="bias"),
    BadInput("structure", (torch.zeros(N_OUT, 3), torch.zeros(3, N_IN)), {"structure": "monarch"},
             names="structure"),
], ids=lambda c: c.id)
def test_low_rank_refuses(case):
    check_bad_inputs(StructuredLinear.low_rank, case)


def test_zeros_refuses():
    check_bad_inputs(StructuredLinear.zeros, BadInput("nan", (NAN_LIN,), names="lin"))
    check_bad_inputs(StructuredLinear.zeros, BadInput("type", ("lin",), names="lin"))


X_CASES = [
    BadInput("nan", (XNAN,), names="x"),
    BadInput("inf", (torch.full((2, N_IN), math.inf, dtype=torch.float64),), names="x"),
    BadInput("width", (_x(5)[:, :7],), names="x"),
    BadInput("int", (torch.ones(2, N_IN, dtype=torch.long),), names="x"),
    BadInput("list", ([[0.0] * N_IN],), names="x"),
    BadInput("0-d", (torch.tensor(1.0),), names="x"),
]


def _modules():
    lin = _lin()
    s = StructuredLinear.from_linear(lin, "svd", 0.25)
    static = StaticResidualCorrection(lin, s, 3, _gram())
    dy = DyRALinear(lin, s, rank=3, oversample=2, residual_dtype=torch.float64, fallback=static)
    mon = StructuredLinear.from_linear(lin, "monarch", 0.25, blocks=4)
    return {"structured": s, "monarch": mon, "static": static, "dyra": dy}


@pytest.mark.parametrize("kind", ["structured", "monarch", "static", "dyra"])
@pytest.mark.parametrize("method", ["forward", "correction"])
@pytest.mark.parametrize("case", X_CASES, ids=lambda c: c.id)
def test_module_calls_refuse_and_keep_state(kind, method, case):
    mod = _modules()[kind]
    if method == "correction" and not hasattr(mod, "correction"):
        pytest.skip("no correction method")
    mod(_x(2, 8))  # warm caches first: a failed call must not touch them either
    check_bad_inputs(getattr(mod, method), case, target=mod)


@pytest.mark.parametrize("case", [
    BadInput("mask-shape", (_x(2, 8), torch.ones(2, 7, dtype=torch.bool)), names="mask"),
    BadInput("mask-float", (_x(2, 8), torch.full((2, 8), 0.5)), names="mask"),
    BadInput("mask-values", (_x(2, 8), torch.full((2, 8), 3)), names="mask"),
    BadInput("mask-list", (_x(2, 8), [[True] * 8] * 2), names="mask"),
], ids=lambda c: c.id)
@pytest.mark.parametrize("method", ["forward", "correction"])
def test_dyra_mask_refused_and_state_kept(method, case):
    mod = _modules()["dyra"]
    mod(_x(2, 8))
    check_bad_inputs(getattr(mod, method), case, target=mod)


@pytest.mark.parametrize("case", [
    BadInput("n_tokens-0", (0,), names="n_tokens"),
    BadInput("n_tokens-float", (8.0,), names="n_tokens"),
    BadInput("n_tokens-none", (None,), names="n_tokens"),
], ids=lambda c: c.id)
def test_flops_per_token_refuses(case):
    dy = _modules()["dyra"]
    check_bad_inputs(dy.flops_per_token, case, target=dy)
    check_bad_inputs(lambda *a: flops_per_token(dy, *a), case, target=dy)
    check_bad_inputs(flops_per_token, BadInput("module", (nn.ReLU(),), names="module"))


@pytest.mark.parametrize("kw,name", [
    ({"rank": 0}, "rank"), ({"rank": N_OUT}, "rank"), ({"rank": 2.0}, "rank"), ({"oversample": -1}, "oversample"),
    ({"power_iters": -1}, "power_iters"), ({"group": "token"}, "group"), ({"sketch": "sobol"}, "sketch"),
    ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"), ({"residual_dtype": torch.long}, "residual_dtype"),
    ({"residual_dtype": "bf16"}, "residual_dtype"), ({"fallback": "static"}, "fallback"),
], ids=lambda v: str(v))
def test_dyra_constructor_refuses(kw, name):
    lin = _lin()
    s = StructuredLinear.from_linear(lin, "svd", 0.25)
    check_bad_inputs(DyRALinear, BadInput(name, (lin, s), {"rank": 3, **kw}, names=name), targets=[lin, s])


@pytest.mark.parametrize("case", [
    BadInput("dense-nan", (NAN_LIN, StructuredLinear.from_linear(_lin(), "svd", 0.25), 2), names="dense"),
    BadInput("structured-type", (_lin(), _lin(), 2), names="structured"),
    BadInput("shape", (nn.Linear(N_OUT, N_IN), StructuredLinear.from_linear(_lin(), "svd", 0.25), 2),
             names="structured"),
    BadInput("rank-0", (_lin(), StructuredLinear.from_linear(_lin(), "svd", 0.25), 0), names="rank"),
    BadInput("gram-nan", (_lin(), StructuredLinear.from_linear(_lin(), "svd", 0.25), 2,
                          torch.full((N_IN, N_IN), math.nan)), names="calib_gram"),
    BadInput("gram-none", (_lin(), StructuredLinear.from_linear(_lin(), "svd", 0.25), 2, None), names="calib_gram"),
], ids=lambda c: c.id)
def test_static_constructor_refuses(case):
    args = case.args if len(case.args) == 4 else case.args + (_gram(),)
    check_bad_inputs(StaticResidualCorrection, BadInput(case.id, args, names=case.names), targets=list(args[:2]))


@pytest.mark.parametrize("case", [
    BadInput("nan", (torch.full((3, 3), math.nan),), names="gram"),
    BadInput("1-d", (torch.ones(3),), names="gram"),
    BadInput("non-square", (torch.ones(3, 2),), names="gram"),
    BadInput("list", ([[1.0]],), names="gram"),
    BadInput("damping-neg", (torch.eye(3),), {"damping": -1.0}, names="damping"),
    BadInput("damping-nan", (torch.eye(3),), {"damping": math.nan}, names="damping"),
    BadInput("damping-str", (torch.eye(3),), {"damping": "0.01"}, names="damping"),
], ids=lambda c: c.id)
def test_damped_cholesky_refuses(case):
    check_bad_inputs(damped_cholesky, case)


@pytest.mark.parametrize("case", [
    BadInput("nan", (XNAN,), names="x"),
    BadInput("1-d", (torch.ones(3),), names="x"),
    BadInput("list", ([[1.0, 2.0]],), names="x"),
    BadInput("int", (torch.ones(3, 2, dtype=torch.long),), names="x"),
], ids=lambda c: c.id)
def test_gram_refuses(case):
    check_bad_inputs(gram, case)


@pytest.mark.parametrize("case", [
    BadInput("n-0", (), {"n": 0}, names="n"),
    BadInput("alpha-nan", (), {"alpha": math.nan}, names="alpha"),
    BadInput("noise-neg", (), {"noise": -1.0}, names="noise"),
    BadInput("noise-inf", (), {"noise": math.inf}, names="noise"),
    BadInput("seed-float", (), {"seed": 1.5}, names="seed"),
    BadInput("dtype", (), {"dtype": torch.long}, names="dtype"),
    BadInput("dim-big", (), {"n": 8, "m": 8, "dim": 9}, names="dim"),
], ids=lambda c: c.id)
def test_clustered_layer_refuses(case):
    check_bad_inputs(clustered_layer, case)


# ------------------------------------------------------------------ whole-model helpers
def test_replace_linears_never_half_swaps():
    model = Tiny()
    calls = []

    def make(name, lin):  # the second replacement is not a module: nothing may be swapped
        calls.append(name)
        return StructuredLinear.from_linear(lin, "svd", 0.25) if len(calls) == 1 else "oops"

    check_bad_inputs(replace_linears, BadInput("not-module", (model, make), names="make"), target=model)
    check_bad_inputs(replace_linears, BadInput("make", (model, "svd"), names="make"), target=model)
    check_bad_inputs(replace_linears, BadInput("model", ("model", make), names="model"))
    check_bad_inputs(replace_linears, BadInput("filter", (model, make, "up"), names="filter"), target=model)
    check_bad_inputs(replace_linears, BadInput("none", (model, make, lambda n, m: False), names="filter"),
                     target=model)


@pytest.mark.parametrize("case", [
    BadInput("budget", (), {"flop_budget": 1.0}, names="flop_budget"),
    BadInput("structure", (), {"structure": "blockdiag"}, names="structure"),
    BadInput("k-0", (), {"correction_rank": 0}, names="correction_rank"),
    BadInput("oversample", (), {"oversample": -1}, names="oversample"),
    BadInput("power", (), {"power_iters": 1.5}, names="power_iters"),
    BadInput("n_tokens", (), {"n_tokens": 0}, names="n_tokens"),
    BadInput("blocks", (), {"structure": "monarch", "blocks": 0}, names="blocks"),
    BadInput("calib-missing", (), {"structure": "whitened_svd"}, names="calib_inputs"),
    BadInput("calib-type", (), {"static_fallback": True, "calib_inputs": [1, 2]}, names="calib_inputs"),
    BadInput("calib-nan", (), {"static_fallback": True,
                               "calib_inputs": {"up": XNAN, "down": torch.randn(8, 32)}}, names="calib"),
    BadInput("calib-layer", (), {"static_fallback": True, "calib_inputs": {"up": _x(40)}}, names="calib_inputs"),
    BadInput("mask_arg", (), {"mask_arg": 3}, names="mask_arg"),
    BadInput("mask_position", (), {"mask_position": -1}, names="mask_position"),
    BadInput("kw-group", (), {"group": "token"}, names="group"),
    BadInput("kw-unknown", (), {"rank_ratio": 0.3}, names="rank_ratio"),
    BadInput("filter", (), {"filter": "up"}, names="filter"),
    BadInput("budget-too-small", (), {"flop_budget": 0.01}, names="flop_budget"),
], ids=lambda c: c.id)
def test_apply_dyra_refuses_and_leaves_the_model(case):
    model = Tiny()
    before_hooks = (dict(model._forward_pre_hooks), dict(model._forward_hooks))
    check_bad_inputs(apply_dyra, BadInput(case.id, (model,), {"correction_rank": 2, "n_tokens": 1024, **case.kwargs},
                                          names=case.names), target=model)
    assert (dict(model._forward_pre_hooks), dict(model._forward_hooks)) == before_hooks
    assert isinstance(model.up, nn.Linear) and isinstance(model.down, nn.Linear)


def test_apply_dyra_refuses_a_non_module():
    check_bad_inputs(apply_dyra, BadInput("model", ("model",), names="model"))


@pytest.mark.parametrize("case", [
    BadInput("model", ("model", [_x(2, 3).float()]), names="model"),
    BadInput("batches", (Tiny(), 5), names="batches"),
    BadInput("max_tokens", (Tiny(), [_x(2, 3).float()]), {"max_tokens": 0}, names="max_tokens"),
    BadInput("filter", (Tiny(), [_x(2, 3).float()]), {"filter": "up"}, names="filter"),
    BadInput("mask_arg", (Tiny(), [_x(2, 3).float()]), {"mask_arg": 1}, names="mask_arg"),
    BadInput("no-layer", (Tiny(), [_x(2, 3).float()]), {"filter": lambda n, m: False}, names="filter"),
], ids=lambda c: c.id)
def test_collect_linear_inputs_refuses_and_leaves_no_hook(case):
    model = case.args[0]
    check_bad_inputs(collect_linear_inputs, case, **({"target": model} if isinstance(model, nn.Module) else {}))
    if isinstance(model, nn.Module):
        assert all(not m._forward_pre_hooks for m in model.modules())


@pytest.mark.parametrize("args,kw,name", [
    (("toeplitz", N_IN, N_OUT, {}, None), {}, "structure"),
    (("svd", 0, N_OUT, {}, None), {}, "in_features"),
    (("svd", N_IN, N_OUT, {"A": "a"}, None), {}, "factors"),
    (("svd", N_IN, N_OUT, {"A": torch.full((N_OUT, 2), math.nan)}, None), {}, "factors"),
    (("svd", N_IN, N_OUT, {}, torch.zeros(3)), {}, "bias"),
    (("monarch", N_IN, N_OUT, {}, None), {"blocks": 0}, "blocks"),
], ids=lambda v: str(v)[:30])
def test_structured_constructor_refuses(args, kw, name):
    check_bad_inputs(StructuredLinear, BadInput(name, args, kw, names=name))
