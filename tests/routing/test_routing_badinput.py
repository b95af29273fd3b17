"""routing's error contract (issue 16): every public entry point refuses bad input by name (NaN included),
never hangs, and a failed call leaves the policy, sampler or model exactly as it was."""

import math

import numpy as np
import pytest
import torch

from _badinput import BadInput, check_bad_inputs
from neurips26.routing import (
    DecoderBlock,
    DecoderConfig,
    POMOLightDecoder,
    SubpathSampler,
    TSPDecoderOnly,
    as_instances,
    backend_available,
    check_tours,
    count_params,
    decoder_step_flops,
    distance_matrix,
    equal_param_pairs,
    farthest_insertion_tours,
    greedy_construct,
    held_karp,
    make_tsp_instances,
    nearest_neighbour_tours,
    optimality_gap,
    random_tours,
    resolve_tsp_backend,
    scaling_grid,
    solve_cvrp_pyvrp,
    solve_tsp_reference,
    subpath_loss,
    tour_flops,
    tour_length,
    train_step_flops,
    train_supervised,
)

pytestmark = pytest.mark.timeout(30)

X = make_tsp_instances(3, 6, 0)
TOURS = np.tile(np.arange(6), (3, 1))
XNAN = X.copy()
XNAN[0, 1, 0] = np.nan
XINF = X.astype(np.float64)
XINF[2, 0, 1] = np.inf

X_CASES = [
    BadInput("nan", (XNAN,), names="X"),
    BadInput("inf", (XINF,), names="X"),
    BadInput("2-d", (X[0],), names="X"),
    BadInput("xyz", (np.zeros((2, 5, 3)),), names="X"),
    BadInput("n<3", (X[:, :2],), names="X"),
    BadInput("empty", (X[:0],), names="X"),
    BadInput("string", ("cities",), names="X"),
    BadInput("bool", (np.ones((2, 5, 2), dtype=bool),), names="X"),
    BadInput("ragged", ([[[0, 0], [1, 1], [2, 2]], [[0, 0]]],), names="X"),
]


@pytest.mark.parametrize("fn", [as_instances, nearest_neighbour_tours, farthest_insertion_tours,
                                lambda X: two_opt_(X), lambda X: tour_length(X, TOURS),
                                lambda X: solve_tsp_reference(X, "exact")],
                         ids=["as_instances", "nn", "fi", "two_opt", "tour_length", "solve"])
@pytest.mark.parametrize("case", X_CASES, ids=lambda c: c.id)
def test_instances_refused_everywhere(fn, case):
    check_bad_inputs(fn, case)


def two_opt_(X):
    from neurips26.routing.baselines import two_opt
    return two_opt(X, TOURS)


TOUR_CASES = [
    BadInput("repeat", (X, np.array([[0, 0, 1, 2, 3, 4]] * 3)), names="tours"),
    BadInput("range", (X, np.array([[0, 1, 2, 3, 4, 6]] * 3)), names="tours"),
    BadInput("float", (X, TOURS.astype(float)), names="tours"),
    BadInput("shape", (X, TOURS[:2]), names="tours"),
    BadInput("string", (X, "012345"), names="tours"),
]


@pytest.mark.parametrize("case", TOUR_CASES, ids=lambda c: c.id)
def test_tours_refused(case):
    from neurips26.routing.baselines import two_opt
    check_bad_inputs(tour_length, case)
    check_bad_inputs(two_opt, case)
    check_bad_inputs(SubpathSampler, case)
    check_bad_inputs(lambda X, t: check_tours(t, 3, 6), case)


@pytest.mark.parametrize("case", [
    BadInput("iters-neg", (X, TOURS, -1), names="max_iterations"),
    BadInput("iters-float", (X, TOURS, 2.5), names="max_iterations"),
    BadInput("iters-nan", (X, TOURS, math.nan), names="max_iterations"),
], ids=lambda c: c.id)
def test_two_opt_refuses(case):
    from neurips26.routing.baselines import two_opt
    tours = TOURS.copy()
    check_bad_inputs(two_opt, case, targets=[tours])


@pytest.mark.parametrize("case", [
    BadInput("rounding", (X,), {"rounding": "round"}, names="rounding"),
], ids=lambda c: c.id)
def test_rounding_refused(case):
    check_bad_inputs(distance_matrix, case)
    check_bad_inputs(tour_length, BadInput(case.id, (X, TOURS), case.kwargs, names="rounding"))
    check_bad_inputs(solve_tsp_reference, BadInput(case.id, (X, "exact"), case.kwargs, names="rounding"))


@pytest.mark.parametrize("case", [
    BadInput("start-out", (X, 6), names="start"), BadInput("start-neg", (X, -1), names="start"),
    BadInput("start-float", (X, 1.0), names="start"), BadInput("start-bool", (X, True), names="start"),
], ids=lambda c: c.id)
def test_start_refused(case):
    check_bad_inputs(nearest_neighbour_tours, case)


@pytest.mark.parametrize("case", [
    BadInput("batch-0", (0, 5, 0), names="batch"), BadInput("n-0", (3, 0, 0), names="n"),
    BadInput("n-float", (3, 5.0, 0), names="n"), BadInput("seed-neg", (3, 5, -1), names="seed"),
    BadInput("seed-str", (3, 5, "s"), names="seed"),
], ids=lambda c: c.id)
def test_random_tours_refuses(case):
    check_bad_inputs(random_tours, case)


@pytest.mark.parametrize("case", [
    BadInput("n-2", (3, 2, 0), names="n_nodes"), BadInput("inst-0", (0, 5, 0), names="n_instances"),
    BadInput("seed-neg", (3, 5, -1), names="seed"), BadInput("seed-float", (3, 5, 0.5), names="seed"),
], ids=lambda c: c.id)
def test_make_tsp_instances_refuses(case):
    check_bad_inputs(make_tsp_instances, case)


@pytest.mark.parametrize("case", [
    BadInput("ref-0", (np.ones(3), np.zeros(3)), names="ref"),
    BadInput("nan", (np.array([np.nan, 1, 1]), np.ones(3)), names="length"),
    BadInput("shape", (np.ones(3), np.ones(2)), names="length"),
    BadInput("string", ("long", np.ones(3)), names="length"),
    BadInput("ref-string", (np.ones(3), "short"), names="ref"),
], ids=lambda c: c.id)
def test_optimality_gap_refuses(case):
    check_bad_inputs(optimality_gap, case)


# ------------------------------------------------------------------ solvers
@pytest.mark.parametrize("case", [
    BadInput("2-d", (np.zeros((4, 4)),), names="D"),
    BadInput("non-square", (np.zeros((1, 4, 3)),), names="D"),
    BadInput("nan", (np.full((1, 4, 4), np.nan),), names="D"),
    BadInput("too-big", (np.zeros((1, 30, 30)),), names="D"),  # 2^29 x 29 floats: refused, not attempted
    BadInput("n-1", (np.zeros((1, 1, 1)),), names="D"),
    BadInput("string", ("D",), names="D"),
], ids=lambda c: c.id)
def test_held_karp_refuses(case):
    check_bad_inputs(held_karp, case)


@pytest.mark.parametrize("case", [
    BadInput("backend", (X, "concorde"), names="backend"),
    BadInput("exact-too-big", (make_tsp_instances(1, 13, 0), "exact"), names="exact"),
    BadInput("runs-0", (X, "exact"), {"runs": 0}, names="runs"),
    BadInput("time-nan", (X, "exact"), {"time_s": math.nan}, names="time_s"),
    BadInput("time-neg", (X, "exact"), {"time_s": -1.0}, names="time_s"),
    BadInput("iters-0", (X, "exact"), {"max_iterations": 0}, names="max_iterations"),
    BadInput("seed-str", (X, "exact"), {"seed": "s"}, names="seed"),
], ids=lambda c: c.id)
def test_solve_tsp_reference_refuses(case):
    check_bad_inputs(solve_tsp_reference, case)


def test_backend_helpers_refuse():
    check_bad_inputs(backend_available, BadInput("name", ("concorde",), names="backend"))
    check_bad_inputs(backend_available, BadInput("type", (3,), names="backend"))
    check_bad_inputs(resolve_tsp_backend, BadInput("name", ("lkh3", 10), names="backend"))
    for n in (2, -1, 5.0, "10", True):
        check_bad_inputs(resolve_tsp_backend, BadInput(f"n={n!r}", ("exact", n), names="n_nodes"))


def test_solve_cvrp_refuses(tmp_path):
    check_bad_inputs(solve_cvrp_pyvrp, BadInput("missing", (tmp_path / "none.vrp",), names="path"))
    f = tmp_path / "x.vrp"
    f.write_text("NAME : x\n")
    check_bad_inputs(solve_cvrp_pyvrp, BadInput("iters", (f,), {"max_iterations": 0}, names="max_iterations"))
    check_bad_inputs(solve_cvrp_pyvrp, BadInput("seed", (f,), {"seed": -1}, names="seed"))
    check_bad_inputs(solve_cvrp_pyvrp, BadInput("round", (f,), {"round_func": "ceil-ish"}, names="round_func"))


# ------------------------------------------------------------------ configs, FLOPs, grids
@pytest.mark.parametrize("kw,name", [
    ({"d_model": 0, "n_layers": 1}, "d_model"), ({"d_model": 32, "n_layers": 1.0}, "n_layers"),
    ({"d_model": 30, "n_layers": 1}, "d_model"), ({"d_model": 32, "n_layers": 1, "ff_mult": 0}, "ff_mult"),
    ({"d_model": 32, "n_layers": 1, "gated_attention": 1}, "gated_attention"),
], ids=str)
def test_decoder_config_refuses(kw, name):
    check_bad_inputs(DecoderConfig, BadInput(name, (), kw, names=name))


CFG = DecoderConfig(d_model=32, n_layers=2)


@pytest.mark.parametrize("fn,arg", [(decoder_step_flops, "n_remaining"), (train_step_flops, "n_remaining"),
                                    (tour_flops, "n_nodes")], ids=lambda v: getattr(v, "__name__", v))
def test_flops_refuse(fn, arg):
    for bad in (-1, 2.5, "5", None, True):
        check_bad_inputs(fn, BadInput(f"{arg}={bad!r}", (CFG, bad), names=arg))
    check_bad_inputs(fn, BadInput("cfg", ({"d_model": 32}, 5), names="cfg"))
    check_bad_inputs(count_params, BadInput("cfg", ("32x2",), names="cfg"))


@pytest.mark.parametrize("case", [
    BadInput("widths-empty", ([], [1]), names="widths"),
    BadInput("widths-int", (32, [1]), names="widths"),
    BadInput("depths-str", ([32], "12"), names="depths"),
    BadInput("n-2", ([32], [1]), {"n_nodes": 2}, names="n_nodes"),
    BadInput("width-bad", ([30], [1]), names="d_model"),
    BadInput("config", ([32], [1]), {"flags": True}, names="flags"),
], ids=lambda c: c.id)
def test_scaling_grid_refuses(case):
    check_bad_inputs(scaling_grid, case)


def test_equal_param_pairs_refuses():
    grid = scaling_grid([32, 64], [1, 4], n_nodes=10)
    for tol in (-0.1, math.nan, "0.1", math.inf):
        check_bad_inputs(equal_param_pairs, BadInput(f"tol={tol!r}", (grid, tol), names="tolerance"))
    check_bad_inputs(equal_param_pairs, BadInput("grid", ([1, 2],), names="grid"))


# ------------------------------------------------------------------ policies
def _policies():
    torch.manual_seed(0)
    return {"decoder": TSPDecoderOnly(CFG).double(), "pomo": POMOLightDecoder(d_model=32, n_layers=1).double()}


XT = torch.as_tensor(X, dtype=torch.float64)
REM = torch.tensor([[1, 2, 3, 4]] * 3)
FIRST = torch.zeros(3, dtype=torch.long)
LAST = torch.full((3,), 5)


@pytest.mark.parametrize("kind", ["decoder", "pomo"])
@pytest.mark.parametrize("case", [
    BadInput("X-nan", (torch.as_tensor(XNAN, dtype=torch.float64), FIRST, LAST, REM), names="X"),
    BadInput("X-2d", (XT[0], FIRST, LAST, REM), names="X"),
    BadInput("X-xyz", (torch.zeros(3, 6, 3, dtype=torch.float64), FIRST, LAST, REM), names="X"),
    BadInput("X-numpy", (X, FIRST, LAST, REM), names="X"),
    BadInput("X-long", (XT.long(), FIRST, LAST, REM), names="X"),
    BadInput("first-out", (XT, torch.full((3,), 6), LAST, REM), names="first"),
    BadInput("first-shape", (XT, FIRST[:2], LAST, REM), names="first"),
    BadInput("first-float", (XT, FIRST.double(), LAST, REM), names="first"),
    BadInput("last-neg", (XT, FIRST, torch.full((3,), -1), REM), names="last"),
    BadInput("remaining-out", (XT, FIRST, LAST, REM + 5), names="remaining"),
    BadInput("remaining-1d", (XT, FIRST, LAST, REM[0]), names="remaining"),
    BadInput("remaining-rows", (XT, FIRST, LAST, REM[:1]), names="remaining"),
    BadInput("remaining-float", (XT, FIRST, LAST, REM.double()), names="remaining"),
], ids=lambda c: c.id)
def test_policy_forward_refuses_and_keeps_state(kind, case):
    model = _policies()[kind]
    check_bad_inputs(model, case, target=model)
    emb = model.encode(XT)
    check_bad_inputs(model.score, BadInput(case.id, (emb,) + case.args[1:], names=case.names), target=model) \
        if not case.id.startswith("X") else check_bad_inputs(model.encode, BadInput(case.id, case.args[:1],
                                                                                  names=case.names), target=model)


@pytest.mark.parametrize("kind", ["decoder", "pomo"])
def test_policy_score_refuses_bad_embeddings(kind):
    model = _policies()[kind]
    emb = model.encode(XT)
    bad = emb.clone()
    bad[0, 0, 0] = math.nan
    for case in [BadInput("emb-nan", (bad, FIRST, LAST, REM), names="emb"),
                 BadInput("emb-width", (emb[..., :5], FIRST, LAST, REM), names="emb"),
                 BadInput("emb-2d", (emb[0], FIRST, LAST, REM), names="emb")]:
        check_bad_inputs(model.score, case, target=model)


def test_decoder_block_refuses():
    block = DecoderBlock(CFG).double()
    for case in [BadInput("2-d", (torch.zeros(4, 32, dtype=torch.float64),), names="x"),
                 BadInput("width", (torch.zeros(1, 4, 16, dtype=torch.float64),), names="x"),
                 BadInput("nan", (torch.full((1, 4, 32), math.nan, dtype=torch.float64),), names="x")]:
        check_bad_inputs(block, case, target=block)
    check_bad_inputs(TSPDecoderOnly, BadInput("cfg", ({"d_model": 32},), names="cfg"))


@pytest.mark.parametrize("kw,name", [({"d_model": 30}, "d_model"), ({"d_model": 0}, "d_model"),
                                     ({"n_layers": 0}, "n_layers"), ({"head_dim": 0}, "head_dim"),
                                     ({"ff_mult": 1.5}, "ff_mult"), ({"clip": math.nan}, "clip"),
                                     ({"clip": -1.0}, "clip")], ids=str)
def test_pomo_constructor_refuses(kw, name):
    check_bad_inputs(POMOLightDecoder, BadInput(name, (), kw, names=name))


@pytest.mark.parametrize("case", [
    BadInput("model", ("policy", X), names="model"),
    BadInput("X-nan", (None, XNAN), names="X"),
    BadInput("start", (None, X, 9), names="start"),
    BadInput("rounding", (None, X), {"rounding": "ceil"}, names="rounding"),
], ids=lambda c: c.id)
def test_greedy_construct_refuses_and_keeps_mode(case):
    model = _policies()["decoder"].train()
    args = tuple(model if a is None else a for a in case.args)
    check_bad_inputs(greedy_construct, BadInput(case.id, args, case.kwargs, names=case.names), target=model)
    assert model.training


# ------------------------------------------------------------------ training
def test_sampler_refuses_and_keeps_rng():
    s = SubpathSampler(X, TOURS, seed=0)
    for b in (0, -3, 2.5, True):
        check_bad_inputs(s.sample, BadInput(f"batch={b!r}", (b,), names="batch_size"), target=s)
    for seed in (-1, "s", 1.5):
        check_bad_inputs(SubpathSampler, BadInput(f"seed={seed!r}", (X, TOURS), {"seed": seed}, names="seed"))
    batch = s.sample(8)
    for rank, world in ((0, 0), (2, 2), (-1, 2), (0, 1.0), (0, 16)):
        check_bad_inputs(batch.shard, BadInput(f"shard({rank},{world})", (rank, world), names=("rank", "world")),
                         target=batch)


TRAIN_KW = {"steps": 2, "batch_size": 4, "lr": 1e-3}


@pytest.mark.parametrize("case", [
    BadInput("steps-0", (), {"steps": 0}, names="steps"),
    BadInput("batch-float", (), {"batch_size": 4.0}, names="batch_size"),
    BadInput("lr-nan", (), {"lr": math.nan}, names="lr"),
    BadInput("clip-0", (), {"grad_clip": 0.0}, names="grad_clip"),
    BadInput("warmup-neg", (), {"warmup_steps": -1}, names="warmup_steps"),
    BadInput("warmup-float", (), {"warmup_steps": 2.5}, names="warmup_steps"),
    BadInput("seed", (), {"seed": "s"}, names="seed"),
    BadInput("progress", (), {"progress": 3}, names="progress"),
    BadInput("X-nan", (), {"X": XNAN}, names="X"),
    BadInput("tours", (), {"tours": TOURS[:, ::-1][:, :5]}, names="tours"),
], ids=lambda c: c.id)
def test_train_supervised_refuses_and_keeps_the_model(case):
    model = _policies()["decoder"].eval()
    kw = {"X": X, "tours": TOURS, **TRAIN_KW, **case.kwargs}
    Xa, ta = kw.pop("X"), kw.pop("tours")
    check_bad_inputs(lambda: train_supervised(model, Xa, ta, **kw), BadInput(case.id, names=case.names),
                     target=model)
    assert not model.training


def test_train_supervised_rolls_back_when_the_loss_turns_non_finite():
    model = _policies()["decoder"]

    def progress(steps):  # one good step, then the scores blow up: the first step's update must be undone too
        for step in steps:
            if step == 1:
                with torch.no_grad():
                    model.scorer.weight.fill_(1e308)
            yield step

    check_bad_inputs(lambda: train_supervised(model, X, TOURS, progress=progress, **TRAIN_KW),
                     BadInput("inf-loss", names="loss"), target=model)


def test_train_supervised_refuses_a_model_without_policy_methods():
    linear = torch.nn.Linear(2, 2)  # built outside the call: building draws from torch's RNG
    check_bad_inputs(lambda: train_supervised(linear, X, TOURS, **TRAIN_KW), BadInput("linear", names="model"),
                     target=linear)
    check_bad_inputs(lambda: train_supervised("model", X, TOURS, **TRAIN_KW), BadInput("str", names="model"))


@pytest.mark.parametrize("case", [
    BadInput("batches-0", (), {"n_batches": 0}, names="n_batches"),  # was ZeroDivisionError
    BadInput("batch-size-0", (), {"batch_size": 0}, names="batch_size"),
    BadInput("seed", (), {"seed": -1}, names="seed"),
    BadInput("X-inf", (), {"X": XINF}, names="X"),
], ids=lambda c: c.id)
def test_subpath_loss_refuses_and_keeps_mode(case):
    model = _policies()["decoder"].train()
    kw = {"X": X, "tours": TOURS, **case.kwargs}
    Xa, ta = kw.pop("X"), kw.pop("tours")
    check_bad_inputs(lambda: subpath_loss(model, Xa, ta, **kw), BadInput(case.id, names=case.names), target=model)
    assert model.training


def test_missing_backend_names_the_extra(monkeypatch):
    from neurips26.routing import solvers

    monkeypatch.setattr(solvers, "backend_available", lambda backend: backend == "exact")
    check_bad_inputs(resolve_tsp_backend, BadInput("elkai", ("elkai", 20), exc=ImportError, names="neurips26[lkh]"))
    check_bad_inputs(resolve_tsp_backend, BadInput("fast_tsp", ("fast_tsp", 20), exc=ImportError,
                                                   names="neurips26[routing]"))
    check_bad_inputs(resolve_tsp_backend, BadInput("auto-n13", ("auto", 13), exc=ImportError, names="neurips26["))
