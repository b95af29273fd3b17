"""emc error contract, part 2 (issue 16): the streams, the baselines, the crystal functions, the source
GNN and the evaluation loop refuse bad input by name; failed calls leave objects unchanged."""

import math

import pytest
import torch
from torch_geometric.data import Data

from _badinput import BadInput, check_bad_inputs
from neurips26.emc import (
    EMC,
    GCAL,
    DirectClosedForm,
    SourceGNN,
    SourceOnly,
    TentGraph,
    continual_eval,
    crystal_objective,
    crystallize,
    csbm_stream,
    information_maximization_loss,
    planetoid_shift_stream,
    ridge_fit,
    ridge_predict,
    train_source_gnn,
    unpack_graph,
    weighted_moments,
)

NAN = math.nan


@pytest.fixture(scope="module")
def setup():
    stream = csbm_stream(n_domains=2, n_nodes=60, n_classes=3, dim=6, p_in=0.1, p_out=0.01, seed=0)
    model = train_source_gnn(stream[0], hidden=8, epochs=10, seed=0)
    return stream, model


@pytest.mark.parametrize("case", [
    BadInput("n-domains-0", kwargs={"n_domains": 0}, names="n_domains"),
    BadInput("n-nodes-bool", kwargs={"n_nodes": True}, names="n_nodes"),
    BadInput("n-classes-float", kwargs={"n_classes": 3.0}, names="n_classes"),
    BadInput("dim-1", kwargs={"dim": 1}, names="dim"),
    BadInput("nodes<classes", kwargs={"n_nodes": 3, "n_classes": 4}, names="n_nodes"),
    BadInput("p-in-nan", kwargs={"p_in": NAN}, names="p_in"),
    BadInput("p-out-2", kwargs={"p_out": 2.0}, names="p_out"),
    BadInput("drift-nan", kwargs={"drift": NAN}, names="drift"),  # flowed into NaN features before
    BadInput("drift-str", kwargs={"drift": "0.6"}, names="drift"),
    BadInput("rotation-inf", kwargs={"rotation_rate": math.inf}, names="rotation_rate"),
    BadInput("separation-nan", kwargs={"separation": NAN}, names="separation"),
    BadInput("separation-0", kwargs={"separation": 0.0}, names="separation"),
    BadInput("structure-drift-nan", kwargs={"structure_drift": NAN}, names="structure_drift"),
    BadInput("train-fraction-1", kwargs={"train_fraction": 1.0}, names="train_fraction"),
    BadInput("seed-str", kwargs={"seed": "0"}, names="seed"),
    BadInput("seed-negative", kwargs={"seed": -1}, names="seed"),
], ids=lambda c: c.id)
def test_csbm_stream_refuses(case):
    check_bad_inputs(csbm_stream, BadInput(case.id, kwargs={"n_domains": 1, "n_nodes": 20, **case.kwargs},
                                           names=case.names))


@pytest.mark.parametrize("case", [
    BadInput("name-int", kwargs={"name": 3}, names="name"),
    BadInput("n-domains-0", kwargs={"n_domains": 0}, names="n_domains"),
    BadInput("dropout-1", kwargs={"max_dropout": 1.0}, names="max_dropout"),
    BadInput("dropout-nan", kwargs={"max_dropout": NAN}, names="max_dropout"),
    BadInput("drift-nan", kwargs={"drift": NAN}, names="drift"),
    BadInput("drift-dims-float", kwargs={"drift_dims": 4.5}, names="drift_dims"),
    BadInput("drift-dims-0", kwargs={"drift_dims": 0}, names="drift_dims"),
    BadInput("train-fraction-0", kwargs={"train_fraction": 0.0}, names="train_fraction"),
    BadInput("seed-float", kwargs={"seed": 0.5}, names="seed"),
], ids=lambda c: c.id)
def test_planetoid_shift_stream_refuses_before_reading_data(case):
    check_bad_inputs(planetoid_shift_stream, case)  # refused by argument before any data is looked up


LOGITS = torch.randn(5, 3)


@pytest.mark.parametrize("case", [
    BadInput("logits-nan", (torch.full((5, 3), NAN),), names="logits"),
    BadInput("logits-1d", (torch.randn(5),), names="logits"),
    BadInput("logits-int", (torch.zeros(5, 3, dtype=torch.long),), names="logits"),
    BadInput("weight-nan", (LOGITS, NAN), names="diversity_weight"),
    BadInput("teacher-shape", (LOGITS, 0.0, torch.randn(4, 3)), names="teacher_logits"),
    BadInput("teacher-inf", (LOGITS, 0.0, torch.full((5, 3), math.inf)), names="teacher_logits"),
], ids=lambda c: c.id)
def test_information_maximization_loss_refuses(case):
    check_bad_inputs(information_maximization_loss, case)


def test_information_maximization_loss_matches_its_formula():
    p = LOGITS.softmax(1)
    entropy = -(p * p.log()).sum(1).mean()
    p_bar = p.mean(0)
    expected = entropy + 0.5 * (p_bar * torch.log(p_bar + 1e-12)).sum()
    torch.testing.assert_close(information_maximization_loss(LOGITS, 0.5), expected)


@pytest.mark.parametrize("case", [
    BadInput("model", ("gnn",), names="model"),
    BadInput("params", kwargs={"params": "bias"}, names="params"),
    BadInput("steps-0", kwargs={"steps": 0}, names="steps"),
    BadInput("steps-bool", kwargs={"steps": True}, names="steps"),
    BadInput("lr-nan", kwargs={"lr": NAN}, names="lr"),
    BadInput("lr-str", kwargs={"lr": "1e-3"}, names="lr"),
    BadInput("diversity-inf", kwargs={"diversity_weight": math.inf}, names="diversity_weight"),
    BadInput("norm-without-bn", kwargs={"params": "norm"}, names="params"),
], ids=lambda c: c.id)
def test_tent_constructor_refuses_and_leaves_the_model(setup, case):
    _, model = setup
    args = case.args or (model,)
    check_bad_inputs(TentGraph, BadInput(case.id, args, case.kwargs, names=case.names), target=model)


@pytest.mark.parametrize("case", [
    BadInput("model", (None,), names="model"),
    BadInput("epochs-0", kwargs={"epochs": 0}, names="epochs"),
    BadInput("warmup-negative", kwargs={"warmup_epochs": -1}, names="warmup_epochs"),
    BadInput("inner-float", kwargs={"inner_loop": 1.5}, names="inner_loop"),
    BadInput("lr-model-nan", kwargs={"lr_model": NAN}, names="lr_model"),
    BadInput("lr-mem-0", kwargs={"lr_mem": 0.0}, names="lr_mem"),
    BadInput("wd-negative", kwargs={"wd_model": -1.0}, names="wd_model"),
    BadInput("entropy-nan", kwargs={"entropy_weight": NAN}, names="entropy_weight"),
    BadInput("replay-inf", kwargs={"replay_weight": math.inf}, names="replay_weight"),
    BadInput("vae-str", kwargs={"vae_weight": "0.1"}, names="vae_weight"),
    BadInput("edge-negative", kwargs={"edge_weight": -0.1}, names="edge_weight"),
    BadInput("ema-1", kwargs={"ema": 1.0}, names="ema"),
    BadInput("syn-nan", kwargs={"syn_ratio": NAN}, names="syn_ratio"),
    BadInput("seed-str", kwargs={"seed": "0"}, names="seed"),
], ids=lambda c: c.id)
def test_gcal_constructor_refuses(setup, case):
    _, model = setup
    args = case.args or (model,)
    check_bad_inputs(GCAL, BadInput(case.id, args, case.kwargs, names=case.names), target=model)


BAD_GRAPHS = [
    BadInput("wrong-dim", (Data(x=torch.randn(10, 5), edge_index=torch.zeros(2, 0, dtype=torch.long)),), names="x"),
    BadInput("nan-x", (Data(x=torch.full((10, 6), NAN), edge_index=torch.zeros(2, 0, dtype=torch.long)),),
             names="x"),
    BadInput("edge-range", (Data(x=torch.randn(10, 6), edge_index=torch.tensor([[0], [12]])),), names="edge_index"),
    BadInput("not-a-graph", ("graph",), names="graph"),
]


@pytest.mark.parametrize("make", ["source", "tent", "gcal", "direct"])
@pytest.mark.parametrize("case", BAD_GRAPHS, ids=lambda c: c.id)
def test_baselines_adapt_and_predict_refuse_and_keep_state(setup, make, case):
    stream, model = setup
    method = {"source": lambda: SourceOnly(model), "tent": lambda: TentGraph(model, steps=2),
              "gcal": lambda: GCAL(model, epochs=2, warmup_epochs=1),
              "direct": lambda: DirectClosedForm(model, 3, rank=2).fit_source(stream[0])}[make]()
    method.adapt(stream[1])
    check_bad_inputs(method.adapt, case, targets=[method, model])
    check_bad_inputs(method.predict, case, targets=[method, model])


@pytest.mark.parametrize("attr, value", [("gamma", "0.5"), ("gamma", NAN), ("ridge", NAN), ("kappa", -1.0),
                                         ("rank", True), ("min_mass", NAN), ("keep_memory", "yes"),
                                         ("memory_budget", 10.0 ** 9)])
def test_emc_hyperparameters_refused_at_fit_and_adapt(setup, attr, value):
    stream, model = setup
    emc = EMC(model, 3, rank=2).fit_source(stream[0])
    setattr(emc, attr, value)
    check_bad_inputs(emc.fit_source, BadInput(attr, (stream[0],), names=attr), target=emc)
    check_bad_inputs(emc.adapt, BadInput(attr, (stream[1],), names=attr), target=emc)


Z = torch.randn(8, 3)


@pytest.mark.parametrize("call, case", [
    (weighted_moments, BadInput("z-nan", (torch.full((4, 2), NAN),), names="z")),
    (weighted_moments, BadInput("z-empty", (torch.zeros(0, 2),), names="z")),
    (weighted_moments, BadInput("weights-list", (Z, [1.0] * 8), names="weights")),
    (weighted_moments, BadInput("weights-length", (Z, torch.ones(3)), names="weights")),
    (weighted_moments, BadInput("weights-negative", (Z, -torch.ones(8)), names="weights")),
    (weighted_moments, BadInput("weights-zero", (Z, torch.zeros(8)), names="weights")),
    (crystallize, BadInput("mean-list", ([0.0, 0.0], torch.eye(2), 1), names="mean")),
    (crystallize, BadInput("mean-nan", (torch.full((2,), NAN), torch.eye(2), 1), names="mean")),
    (crystallize, BadInput("cov-inf", (torch.zeros(2), torch.full((2, 2), math.inf), 1), names="cov")),
    (crystallize, BadInput("cov-shape", (torch.zeros(2), torch.eye(3), 1), names="cov")),
    (crystallize, BadInput("rank-3", (torch.zeros(2), torch.eye(2), 3), names="rank")),
    (crystallize, BadInput("rank-bool", (torch.zeros(2), torch.eye(2), True), names="rank")),
    (crystal_objective, BadInput("points-nan", (torch.full((2, 2), NAN), torch.zeros(2), torch.eye(2)),
                                 names="points")),
    (crystal_objective, BadInput("mean-width", (torch.zeros(2, 2), torch.zeros(3), torch.eye(2)), names="mean")),
    (ridge_fit, BadInput("z-int", (torch.zeros(4, 2, dtype=torch.long), torch.zeros(4, 2), 0.3), names="z")),
    (ridge_fit, BadInput("ridge-str", (Z, torch.zeros(8, 2), "0.3"), names="ridge")),
    (ridge_fit, BadInput("weights-nan", (Z, torch.zeros(8, 2), 0.3, torch.full((8,), NAN)), names="weights")),
    (ridge_predict, BadInput("params", (Z, (1, 2)), names="params")),
    (ridge_predict, BadInput("z-width", (torch.randn(4, 5), ridge_fit(Z, torch.randn(8, 2), 0.3)), names="z")),
    (ridge_predict, BadInput("z-nan", (torch.full((4, 3), NAN), ridge_fit(Z, torch.randn(8, 2), 0.3)), names="z")),
    (unpack_graph, BadInput("x-without-edges", (torch.randn(3, 2),), names="graph")),
    (unpack_graph, BadInput("both", (Data(x=Z, edge_index=torch.zeros(2, 0, dtype=torch.long)),
                                     torch.zeros(2, 0, dtype=torch.long)), names="graph")),
    (unpack_graph, BadInput("in-dim", (Data(x=Z, edge_index=torch.zeros(2, 0, dtype=torch.long)),),
                            {"in_dim": 4}, names="x")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_functions_refuse(call, case):
    check_bad_inputs(call, case)


@pytest.mark.parametrize("case", [
    BadInput("in-dim-0", (0, 3), names="in_dim"),
    BadInput("classes-bool", (4, True), names="n_classes"),
    BadInput("hidden-float", (4, 3), {"hidden": 8.0}, names="hidden"),
    BadInput("layers-0", (4, 3), {"n_layers": 0}, names="n_layers"),
    BadInput("dropout-nan", (4, 3), {"dropout": NAN}, names="dropout"),
    BadInput("dropout-str", (4, 3), {"dropout": "0.2"}, names="dropout"),
    BadInput("conv", (4, 3), {"conv": "transformer"}, names="conv"),
], ids=lambda c: c.id)
def test_source_gnn_refuses(case):
    check_bad_inputs(SourceGNN, case)


@pytest.mark.parametrize("case", [
    BadInput("epochs-0", kwargs={"epochs": 0}, names="epochs"),
    BadInput("epochs-float", kwargs={"epochs": 2.5}, names="epochs"),
    BadInput("lr-nan", kwargs={"lr": NAN}, names="lr"),
    BadInput("lr-negative", kwargs={"lr": -0.1}, names="lr"),
    BadInput("wd-inf", kwargs={"weight_decay": math.inf}, names="weight_decay"),
    BadInput("classes-1", kwargs={"n_classes": 1}, names="n_classes"),
    BadInput("classes-too-few", kwargs={"n_classes": 2}, names="n_classes"),
    BadInput("mask-shape", kwargs={"train_mask": torch.ones(3, dtype=torch.bool)}, names="train_mask"),
    BadInput("mask-int", kwargs={"train_mask": torch.ones(60, dtype=torch.long)}, names="train_mask"),
    BadInput("seed-str", kwargs={"seed": "0"}, names="seed"),
], ids=lambda c: c.id)
def test_train_source_gnn_refuses(setup, case):
    stream, _ = setup
    state = torch.random.get_rng_state()
    check_bad_inputs(train_source_gnn, BadInput(case.id, (stream[0],), {"epochs": 1, **case.kwargs},
                                                names=case.names))
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is not drawn from


def test_train_source_gnn_refuses_float_labels(setup):
    stream, _ = setup
    g = Data(x=stream[0].x, edge_index=stream[0].edge_index, y=stream[0].y.float())
    check_bad_inputs(train_source_gnn, BadInput("y-float", (g,), names="y"))


@pytest.mark.parametrize("case", [
    BadInput("method", ("emc", None), names="method"),
    BadInput("stream-empty", (None, []), names="stream"),
    BadInput("stream-not-list", (None, "abc"), names="stream"),
    BadInput("metric", (None, None), {"metric": "f1"}, names="metric"),
    BadInput("memory-domains", (None, None), {"memory_domains": -1}, names="memory_domains"),
    BadInput("labels-missing", (None, [Data(x=torch.randn(4, 6), edge_index=torch.zeros(2, 0, dtype=torch.long))]),
             names="y"),
    BadInput("labels-over", (None, None), {"n_classes": 2}, names="n_classes"),
], ids=lambda c: c.id)
def test_continual_eval_refuses_and_leaves_the_method(setup, case):
    stream, model = setup
    method = SourceOnly(model)
    args = (method if case.args[0] is None else case.args[0], stream[1:] if case.args[1] is None else case.args[1])
    check_bad_inputs(continual_eval, BadInput(case.id, args, case.kwargs, names=case.names),
                     targets=[method, model])
