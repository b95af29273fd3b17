"""fwdsvd's error contract (issue 16): every public entry point refuses bad input by name (NaN included),
never hangs, and a failed call leaves the model (weights, modules, hooks) and the search object as they were."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from _badinput import BadInput, check_bad_inputs
from neurips26.fwdsvd import (
    AngleConcentrationStats,
    ForwardOnlyRankSearch,
    GradientSVSearch,
    LaserExhaustiveSearch,
    RandomMatrixSearch,
    angle_concentration_by_rank,
    candidate_linears,
    kappa_from_coefficients,
    knee_index,
    laser_grid_passes,
    laser_reduce,
    mean_pairwise_cosine,
    rank_for_rho,
    svd_factors,
)
from neurips26.nn import Llama, LlamaConfig

pytestmark = pytest.mark.timeout(30)


def tiny(seed=0):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=40, d_model=16, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=32, max_seq_len=64,
                      init_std=0.2)
    return Llama(cfg).to(torch.float64).eval()


def _ids(seed=0, batch=4, seq=6):
    return torch.randint(0, 40, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _score(model):
    logits = model(_ids(0))
    return -float(F.cross_entropy(logits[:, :-1].reshape(-1, 40), _ids(0)[:, 1:].reshape(-1)))


def _hooks(model):
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


class LogNet(nn.Module):
    """a -> exp -> b: large inputs overflow exp and put inf into b (the second hooked layer) only."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(4, 4).double(), nn.Linear(4, 4).double()])

    def forward(self, x):
        return self.layers[1](torch.exp(self.layers[0](x)))


NAN_C = torch.randn(6, 4, dtype=torch.float64)
NAN_C[2, 1] = math.nan


# ------------------------------------------------------------------ numbers
@pytest.mark.parametrize("case", [
    BadInput("rho-0", (0.0, 10), names="rho"), BadInput("rho-nan", (math.nan, 10), names="rho"),
    BadInput("rho-2", (2.0, 10), names="rho"), BadInput("rho-str", ("0.5", 10), names="rho"),
    BadInput("r-0", (0.5, 0), names="r"), BadInput("r-float", (0.5, 10.0), names="r"),
], ids=lambda c: c.id)
def test_rank_for_rho_refuses(case):
    check_bad_inputs(rank_for_rho, case)


@pytest.mark.parametrize("case", [
    BadInput("neg", (-1, 6), names="n_candidates"), BadInput("float", (2.5, 6), names="n_candidates"),
    BadInput("rho-neg", (10, -6), names="n_rho"), BadInput("rho-str", (10, "6"), names="n_rho"),
], ids=lambda c: c.id)
def test_laser_grid_passes_refuses(case):
    check_bad_inputs(laser_grid_passes, case)


@pytest.mark.parametrize("case", [
    BadInput("1-d", (torch.ones(4),), names="weight"),
    BadInput("nan", (torch.full((3, 3), math.nan),), names="weight"),
    BadInput("list", ([[1.0]],), names="weight"),
    BadInput("int", (torch.ones(3, 3, dtype=torch.long),), names="weight"),
], ids=lambda c: c.id)
def test_svd_factors_refuses(case):
    check_bad_inputs(svd_factors, case)


@pytest.mark.parametrize("fn", [kappa_from_coefficients, angle_concentration_by_rank], ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", [
    BadInput("nan", (NAN_C,), names="c"),
    BadInput("inf", (torch.full((3, 2), math.inf),), names="c"),
    BadInput("1-d", (torch.ones(5),), names="c"),
    BadInput("one-token", (torch.ones(1, 3),), names="c"),
    BadInput("empty-r", (torch.ones(4, 0),), names="c"),
    BadInput("string", ("c",), names="c"),
], ids=lambda c: c.id)
def test_coefficient_functions_refuse(fn, case):
    check_bad_inputs(fn, case)


@pytest.mark.parametrize("case", [
    BadInput("nan", (NAN_C,), names="y"),
    BadInput("zero-row", (torch.tensor([[1.0, 0.0], [0.0, 0.0]]),), names="y"),
    BadInput("one-row", (torch.ones(1, 3),), names="y"),
    BadInput("1-d", (torch.ones(3),), names="y"),
    BadInput("string", ("y",), names="y"),
], ids=lambda c: c.id)
def test_mean_pairwise_cosine_refuses(case):
    check_bad_inputs(mean_pairwise_cosine, case)


@pytest.mark.parametrize("case", [
    BadInput("nan", (torch.tensor([0.0, math.nan, 1.0]),), names="curve"),
    BadInput("empty", (torch.zeros(0),), names="curve"),
    BadInput("2-d", (torch.zeros(3, 3),), names="curve"),
    BadInput("string", ("abc",), names="curve"),
], ids=lambda c: c.id)
def test_knee_index_refuses(case):
    check_bad_inputs(knee_index, case)


# ------------------------------------------------------------------ edits
@pytest.mark.parametrize("case", [
    BadInput("model", ("model", "layers.0.mlp.up_proj", 0.5), names="model"),
    BadInput("module-missing", (None, "layers.9.mlp.up_proj", 0.5), names="module"),
    BadInput("module-not-linear", (None, "layers.0.mlp", 0.5), names="module"),
    BadInput("module-int", (None, 3, 0.5), names="module"),
    BadInput("rho-nan", (None, "layers.0.mlp.up_proj", math.nan), names="rho"),
    BadInput("rho-0", (None, "layers.0.mlp.up_proj", 0.0), names="rho"),
    BadInput("factorize", (None, "layers.0.mlp.up_proj", 0.5, 1), names="factorize"),
    BadInput("svd-shape", (None, "layers.0.mlp.up_proj", 0.5), {"svd": svd_factors(torch.randn(3, 3))}, names="svd"),
    BadInput("svd-nan", (None, "layers.0.mlp.up_proj", 0.5),
             {"svd": (torch.full((32, 16), math.nan), torch.ones(16), torch.ones(16, 16))}, names="svd"),
    BadInput("svd-len", (None, "layers.0.mlp.up_proj", 0.5),
             {"svd": (torch.ones(32, 16), torch.ones(5), torch.ones(16, 16))}, names="svd"),
    BadInput("svd-type", (None, "layers.0.mlp.up_proj", 0.5), {"svd": "svd"}, names="svd"),
], ids=lambda c: c.id)
def test_laser_reduce_refuses_and_keeps_the_model(case):
    model = tiny()
    args = tuple(model if a is None else a for a in case.args)
    check_bad_inputs(laser_reduce, BadInput(case.id, args, case.kwargs, names=case.names),
                     **({"target": model} if case.id != "model" else {}))


def test_laser_reduce_refuses_tied_head_and_nan_weight():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=40, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=32, max_seq_len=64,
                      tie_embeddings=True)
    tied = Llama(cfg).double()
    assert tied.lm_head.weight is tied.embed_tokens.weight
    check_bad_inputs(laser_reduce, BadInput("tied-head", (tied, "lm_head", 0.5), names="lm_head"), target=tied)
    model = tiny()
    with torch.no_grad():
        model.get_submodule("layers.0.mlp.up_proj").weight[0, 0] = math.nan
    check_bad_inputs(laser_reduce, BadInput("nan-weight", (model, "layers.0.mlp.up_proj", 0.5), names="weight"),
                     target=model)


@pytest.mark.parametrize("case", [
    BadInput("model", ("model",), names="model"),
    BadInput("name", (None, "all_of_them"), names="candidates"),
    BadInput("int", (None, 3), names="candidates"),
    BadInput("missing", (None, ["layers.0.nope"]), names="module"),
    BadInput("empty", (None, []), names="candidates"),
    BadInput("mixed", (None, ["layers.0.mlp.up_proj", 3]), names="candidates"),
], ids=lambda c: c.id)
def test_candidate_linears_refuses(case):
    model = tiny()
    args = tuple(model if a is None else a for a in case.args)
    check_bad_inputs(candidate_linears, BadInput(case.id, args, names=case.names))


# ------------------------------------------------------------------ statistics
def test_stats_refuse_and_keep_state():
    model = tiny()
    stats = AngleConcentrationStats.attach(model, "mlp", "all")
    stats.observe(model, _ids(1))
    bad = [
        (stats.observe, BadInput("other-model", (tiny(1), _ids(1)), names="model")),
        (stats.observe, BadInput("1-d", (model, torch.arange(5)), names="input_ids")),
        (stats.observe, BadInput("mask-shape", (model, {"input_ids": _ids(1), "attention_mask": torch.ones(2, 2)}),
                                 names="attention_mask")),
        (stats.observe, BadInput("left-pad", (model, {"input_ids": _ids(1), "attention_mask":
                                                      torch.tensor([[0, 1, 1, 1, 1, 1]] * 4)}),
                                 names="attention_mask")),
        (stats.observe, BadInput("mask-2", (model, {"input_ids": _ids(1), "attention_mask":
                                                    torch.full((4, 6), 2)}), names="attention_mask")),
        (stats.observe, BadInput("batch-type", (model, [1, 2]), names="batch")),
        (stats.kappa, BadInput("kappa-missing", ("nope",), names="module")),
        (stats.energy, BadInput("energy-missing", ("nope",), names="module")),
        (stats.tokens, BadInput("tokens-missing", ("nope",), names="module")),
        (stats.dispersion, BadInput("score", ("entropy",), names="score")),
        (stats.dispersion, BadInput("rho_min-nan", ("dispersion_energy", math.nan), names="rho_min")),
        (stats.dispersion, BadInput("rho_min-1", ("dispersion_energy", 1.0), names="rho_min")),
    ]
    for call, case in bad:
        check_bad_inputs(call, case, target=stats)
    stats.detach()


def test_observe_that_fails_midway_changes_no_sum():
    model = LogNet()
    stats = AngleConcentrationStats.attach(model, "all", "all")
    stats.observe(model, torch.rand(3, 4, dtype=torch.float64))  # 2-D "ids": rows are tokens
    x = torch.full((3, 4), 1e4, dtype=torch.float64)  # layer 0 is fine, exp() gives inf into layer 1
    x[:, ::2] = -1e4
    check_bad_inputs(stats.observe, BadInput("nan-midway", (model, x), names="layers.1"), target=stats)


@pytest.mark.parametrize("case", [
    BadInput("positions", (None, "all", "first"), names="positions"),
    BadInput("candidates", (None, 7), names="candidates"),
    BadInput("model", ("model",), names="model"),
], ids=lambda c: c.id)
def test_attach_refuses_and_leaves_no_hook(case):
    model = tiny()
    args = tuple(model if a is None else a for a in case.args)
    check_bad_inputs(AngleConcentrationStats.attach, BadInput(case.id, args, names=case.names))
    assert _hooks(model) == 0


# ------------------------------------------------------------------ searches
@pytest.mark.parametrize("params,name", [
    ({"positions": "first"}, "positions"), ({"score": "entropy"}, "score"), ({"rank_rule": "elbow"}, "rank_rule"),
    ({"top_k": 0}, "top_k"), ({"top_k": 1.5}, "top_k"), ({"rho_min": math.nan}, "rho_min"),
    ({"rho_min": -0.1}, "rho_min"), ({"rho_grid": ()}, "rho_grid"), ({"rho_grid": (0.5, math.nan)}, "rho_grid"),
    ({"rho_grid": "0.5"}, "rho_grid"), ({"candidates": "heads"}, "candidates"),
], ids=lambda v: str(v))
def test_forward_search_refuses_bad_params(params, name):
    model = tiny()
    search = ForwardOnlyRankSearch(candidates="mlp", rho_grid=(0.5,))
    search.fit(model, [_ids(1)], _score)
    for k, v in params.items():
        setattr(search, k, v)
    check_bad_inputs(search.fit, BadInput(name, (model, [_ids(1)], _score), names=name), targets=[search, model])
    assert _hooks(model) == 0


@pytest.mark.parametrize("case", [
    BadInput("empty", ([],), names="cal_batches"),
    BadInput("not-iterable", (5,), names="cal_batches"),
    BadInput("nan", ([torch.full((2, 3), math.nan)],), names="calibration"),
    BadInput("no-eval", ([_ids(1)],), names="eval_fn"),
    BadInput("eval-not-callable", ([_ids(1)], "acc"), names="eval_fn"),
    BadInput("eval-nan", ([_ids(1)], lambda m: math.nan), names="eval_fn"),
    BadInput("eval-str", ([_ids(1)], lambda m: "high"), names="eval_fn"),
    BadInput("left-pad", ([{"input_ids": _ids(1), "attention_mask": torch.tensor([[0, 1, 1, 1, 1, 1]] * 4)}],),
             names="attention_mask"),
], ids=lambda c: c.id)
def test_forward_search_refuses_bad_data_and_keeps_state(case):
    model = tiny()
    search = ForwardOnlyRankSearch(candidates="mlp", rho_grid=(0.5,)).fit(model, [_ids(1)], _score)
    check_bad_inputs(lambda *a: search.fit(model, *a), case, targets=[search, model])
    assert _hooks(model) == 0


def test_apply_refuses_before_fit():
    check_bad_inputs(ForwardOnlyRankSearch().apply, BadInput("unfitted", (tiny(),), exc=RuntimeError, names="fit"))


@pytest.mark.parametrize("make", [LaserExhaustiveSearch, RandomMatrixSearch], ids=lambda m: m.__name__)
@pytest.mark.parametrize("case", [
    BadInput("eval-none", (None,), names="eval_fn"),
    BadInput("eval-nan", (lambda m: math.nan,), names="eval_fn"),
    BadInput("eval-tensor-inf", (lambda m: torch.tensor(math.inf),), names="eval_fn"),
], ids=lambda c: c.id)
def test_grid_searches_refuse_and_keep_the_model(make, case):
    model = tiny()
    search = make(candidates=["layers.1.mlp.up_proj"], rho_grid=(0.5,))
    check_bad_inputs(lambda *a: search.fit(model, *a), case, targets=[search, model])


@pytest.mark.parametrize("make,params,name", [
    (LaserExhaustiveSearch, {"rho_grid": (1.5,)}, "rho_grid"),
    (LaserExhaustiveSearch, {"candidates": ["nope"]}, "module"),
    (RandomMatrixSearch, {"seed": "s"}, "seed"),
    (RandomMatrixSearch, {"rho_grid": []}, "rho_grid"),
], ids=str)
def test_grid_searches_refuse_bad_params(make, params, name):
    model = tiny()
    search = make(**{"candidates": "mlp", "rho_grid": (0.5,), **params})
    check_bad_inputs(search.fit, BadInput(name, (model, _score), names=name), targets=[search, model])


def _loss(model, ids):
    logits = model(ids)
    return F.cross_entropy(logits[:, :-1].reshape(-1, 40), ids[:, 1:].reshape(-1))


@pytest.mark.parametrize("loss_fn,cal,name", [
    ("loss", [_ids(1)], "loss_fn"),
    (lambda m, b: torch.tensor(math.nan, requires_grad=True), [_ids(1)], "loss_fn"),
    (lambda m, b: torch.ones(3, requires_grad=True), [_ids(1)], "loss_fn"),
    (lambda m, b: 1.0, [_ids(1)], "loss_fn"),
    (_loss, [], "cal_batches"),
    (_loss, 5, "cal_batches"),
], ids=["not-callable", "nan", "vector", "float", "empty", "not-iterable"])
def test_gradient_search_refuses_and_restores_the_model(loss_fn, cal, name):
    model = tiny()
    flags = [p.requires_grad for p in model.parameters()]
    search = GradientSVSearch(loss_fn, candidates="mlp", rho_grid=(0.5,))
    check_bad_inputs(search.fit, BadInput(name, (model, cal), names=name), targets=[search, model])
    assert [p.requires_grad for p in model.parameters()] == flags


@pytest.mark.parametrize("params,name", [({"top_k": 0}, "top_k"), ({"rho_grid": (0.0,)}, "rho_grid"),
                                         ({"candidates": 3}, "candidates")], ids=str)
def test_gradient_search_refuses_bad_params(params, name):
    model = tiny()
    search = GradientSVSearch(_loss, **{"candidates": "mlp", "rho_grid": (0.5,), **params})
    check_bad_inputs(search.fit, BadInput(name, (model, [_ids(1)]), names=name), targets=[search, model])
    check_bad_inputs(GradientSVSearch(_loss, candidates="mlp").fit,
                     BadInput("eval", (model, [_ids(1)], "acc"), names="eval_fn"), target=model)


def test_rank_reduction_refuses():
    from neurips26.fwdsvd import RankReduction

    for args, name in [(("", 0.5, 3), "module"), ((3, 0.5, 3), "module"), (("a.b", 0.0, 3), "rho"),
                       (("a.b", math.nan, 3), "rho"), (("a.b", 0.5, 0), "rank"), (("a.b", 0.5, 2.0), "rank")]:
        check_bad_inputs(RankReduction, BadInput(name, args, names=name))
