"""wlia error contract, part 2 (issue 16): RNR, the attacks' constructors and queries, the metrics, the
partition, the models and the in-process FedAvg loop refuse bad input by name and change nothing."""

import math

import numpy as np
import pytest
import torch

from _badinput import BadInput, check_bad_inputs
from neurips26.wlia import (
    WLIA,
    BiasAnalytic,
    ClassifierNet,
    LLGRowSum,
    RNRPenalty,
    UniformGuess,
    client_seed,
    dirichlet_partition,
    evaluate_accuracy,
    label_distribution,
    label_distribution_metrics,
    local_train,
    make_model,
    rnr_penalty,
    scores_to_distribution,
    simulate_fedavg,
)

NAN = math.nan
W = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("case", [
    BadInput("weight-1d", (torch.ones(4), torch.ones(4), 0.1), names="weight"),
    BadInput("weight-int", (torch.ones(4, 8, dtype=torch.long), torch.ones(4), 0.1), names="weight"),
    BadInput("weight-nan", (torch.full((4, 8), NAN), torch.ones(4), 0.1), names="weight"),
    BadInput("targets-list", (W, [1.0] * 4, 0.1), names="targets"),
    BadInput("targets-shape", (W, torch.ones(3), 0.1), names="targets"),
    BadInput("targets-nan", (W, torch.full((4,), NAN), 0.1), names="targets"),
    BadInput("targets-negative", (W, -torch.ones(4), 0.1), names="targets"),
    BadInput("lam-nan", (W, torch.ones(4), NAN), names="lam"),
    BadInput("lam-negative", (W, torch.ones(4), -1.0), names="lam"),
    BadInput("lam-str", (W, torch.ones(4), "0.1"), names="lam"),
], ids=lambda c: c.id)
def test_rnr_penalty_refuses(case):
    check_bad_inputs(rnr_penalty, case)


def test_rnr_penalty_matches_its_formula():
    r = torch.tensor([1.0, 2.0, 0.5, 1.5])
    expected = 0.3 * sum((float(W[c].norm()) - float(r[c])) ** 2 for c in range(4))
    assert float(rnr_penalty(W, r, 0.3)) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("case", [
    BadInput("lam-nan", kwargs={"lam": NAN}, names="lam"),
    BadInput("lam-bool", kwargs={"lam": True}, names="lam"),
    BadInput("spread-1", kwargs={"spread": 1.0}, names="spread"),
    BadInput("spread-nan", kwargs={"spread": NAN}, names="spread"),
    BadInput("resample", kwargs={"resample": "batch"}, names="resample"),
    BadInput("seed-negative", kwargs={"seed": -1}, names="seed"),
], ids=lambda c: c.id)
def test_rnr_module_constructor_refuses(case):
    check_bad_inputs(RNRPenalty, case)


def _started(resample="epoch"):
    pen = RNRPenalty(lam=0.2, resample=resample, seed=3)
    pen.start_round(W, key=(1, 2))
    return pen


@pytest.mark.parametrize("method, case", [
    ("start_round", BadInput("weight-str", ("abc",), names="global_weight")),
    ("start_round", BadInput("weight-1d", (torch.ones(4),), names="global_weight")),
    ("start_round", BadInput("weight-nan", (torch.full((4, 8), NAN),), names="global_weight")),
    ("start_round", BadInput("key-str-entry", (W,), {"key": ("a", 1)}, names="key")),  # moved the state before
    ("start_round", BadInput("key-negative", (W,), {"key": (1, -2)}, names="key")),
    ("start_round", BadInput("key-scalar", (W,), {"key": 5}, names="key")),
    ("start_epoch", BadInput("epoch-negative", (-1,), names="epoch")),
    ("start_epoch", BadInput("epoch-float", (1.5,), names="epoch")),
    ("forward", BadInput("weight-list", ([[0.0]],), names="weight")),
    ("forward", BadInput("weight-rows", (torch.ones(3, 8),), names="weight")),
    ("forward", BadInput("weight-nan", (torch.full((4, 8), NAN),), names="weight")),
], ids=lambda c: c.id if isinstance(c, BadInput) else c)
def test_rnr_module_methods_refuse_and_keep_state(method, case):
    pen = _started()
    check_bad_inputs(getattr(pen, method), case, target=pen)


@pytest.mark.parametrize("make", [WLIA, UniformGuess, LLGRowSum], ids=lambda c: c.__name__)
@pytest.mark.parametrize("case", [
    BadInput("key-empty", kwargs={"weight_key": ""}, names="weight_key"),
    BadInput("key-int", kwargs={"weight_key": 3}, names="weight_key"),
    BadInput("estimator", kwargs={"estimator": "max"}, names="estimator"),
    BadInput("weighting", kwargs={"round_weighting": "sqrt"}, names="round_weighting"),
    BadInput("temperature-0", kwargs={"temperature": 0.0}, names="temperature"),
    BadInput("temperature-nan", kwargs={"temperature": NAN}, names="temperature"),
    BadInput("temperature-bool", kwargs={"temperature": True}, names="temperature"),
], ids=lambda c: c.id)
def test_attack_constructors_refuse(make, case):
    check_bad_inputs(make, case)


def test_wlia_and_bias_specific_options_refused():
    check_bad_inputs(WLIA, BadInput("relative", kwargs={"relative": "yes"}, names="relative"))
    check_bad_inputs(BiasAnalytic, BadInput("weight-key", kwargs={"weight_key": "fc.weight"}, names="bias_key"))
    check_bad_inputs(BiasAnalytic, BadInput("bias-key", kwargs={"bias_key": ""}, names="weight_key"))


def _observed():
    attack = WLIA()
    g = torch.Generator().manual_seed(1)
    for r in (1, 2):
        attack.observe(0, r, {"fc.weight": W}, {"fc.weight": W + 0.1 * torch.randn(4, 8, generator=g)})
    return attack


@pytest.mark.parametrize("method, case", [
    ("scores", BadInput("unknown-client", (9,), names="client")),
    ("scores", BadInput("rounds-scalar", (0,), {"rounds": 5}, names="rounds")),
    ("scores", BadInput("rounds-str", (0,), {"rounds": "12"}, names="rounds")),
    ("scores", BadInput("rounds-float", (0,), {"rounds": [1.5]}, names="rounds")),
    ("scores", BadInput("rounds-none-observed", (0,), {"rounds": [7]}, names="round")),
    ("infer", BadInput("rounds-negative", (0,), {"rounds": [-1]}, names="rounds")),
    ("infer_all", BadInput("rounds-scalar", (), {"rounds": 5}, names="rounds")),
    ("rounds_of", BadInput("unknown-client", (9,), names="client")),
    ("round_scores", BadInput("unknown-client", ("x",), names="client")),
], ids=lambda c: c.id if isinstance(c, BadInput) else c)
def test_attack_queries_refuse_and_keep_state(method, case):
    attack = _observed()
    check_bad_inputs(getattr(attack, method), case, target=attack)


@pytest.mark.parametrize("case", [
    BadInput("nan", (np.array([0.1, NAN]),), names="scores"),
    BadInput("2d", (np.ones((2, 2)),), names="scores"),
    BadInput("empty", (np.ones(0),), names="scores"),
    BadInput("estimator", (np.ones(3), "max"), names="estimator"),
    BadInput("temperature-nan", (np.array([1.0, 2.0]), "softmax", NAN), names="temperature"),  # NaN output before
    BadInput("temperature-0", (np.array([1.0, 2.0]), "softmax", 0.0), names="temperature"),
], ids=lambda c: c.id)
def test_scores_to_distribution_refuses(case):
    check_bad_inputs(scores_to_distribution, case)


@pytest.mark.parametrize("call, case", [
    (label_distribution, BadInput("float-labels", (np.array([0.5, 1.0]), 3), names="y")),  # truncated before
    (label_distribution, BadInput("out-of-range", (np.array([0, 3]), 3), names="labels")),
    (label_distribution, BadInput("2d", (np.zeros((2, 2), dtype=int), 3), names="y")),
    (label_distribution, BadInput("classes-0", (np.array([0]), 0), names="n_classes")),
    (label_distribution, BadInput("classes-float", (np.array([0]), 2.5), names="n_classes")),
    (label_distribution_metrics, BadInput("nan", ([0.5, NAN], [0.5, 0.5]), names="true")),
    (label_distribution_metrics, BadInput("negative", ([0.5, 0.5], [1.5, -0.5]), names="pred")),
    (label_distribution_metrics, BadInput("zero-sum", ([0.0, 0.0], [0.5, 0.5]), names="true")),
    (label_distribution_metrics, BadInput("length", ([0.5, 0.5], [1.0, 0.0, 0.0]), names="pred")),
    (dirichlet_partition, BadInput("alpha-0", (np.arange(20) % 2, 2, 0.0), names="alpha")),
    (dirichlet_partition, BadInput("alpha-nan", (np.arange(20) % 2, 2, NAN), names="alpha")),
    (dirichlet_partition, BadInput("clients-bool", (np.arange(20) % 2, True, 0.5), names="n_clients")),
    (dirichlet_partition, BadInput("clients>n", (np.arange(20) % 2, 30, 0.5), names="n_clients")),
    (dirichlet_partition, BadInput("y-float", (np.linspace(0, 1, 20), 2, 0.5), names="y")),
    (dirichlet_partition, BadInput("min-size", (np.arange(20) % 2, 2, 0.5), {"min_size": 11}, names="min_size")),
    (dirichlet_partition, BadInput("tries-0", (np.arange(20) % 2, 2, 0.5), {"max_tries": 0}, names="max_tries")),
    (dirichlet_partition, BadInput("seed-str", (np.arange(20) % 2, 2, 0.5), {"seed": "0"}, names="seed")),
    (client_seed, BadInput("seed-negative", (-1, 1, 0), names="seed")),
    (client_seed, BadInput("round-float", (0, 1.5, 0), names="round_idx")),  # truncated before
    (client_seed, BadInput("client-str", (0, 1, "a"), names="client_id")),
    (make_model, BadInput("kind", ("rnn", 4, 2), names="kind")),
    (make_model, BadInput("classes-1", ("mlp-relu", 4, 1), names="n_classes")),
    (make_model, BadInput("classes-str", ("mlp-relu", 4, "2"), names="n_classes")),
    (make_model, BadInput("in-0", ("mlp-relu", 0, 2), names="in_features")),
    (make_model, BadInput("hidden-0", ("mlp-relu", 4, 2), {"hidden": 0}, names="hidden")),
    (make_model, BadInput("cnn-size", ("cnn", 10, 2), names="784")),
    (make_model, BadInput("seed-float", ("mlp-relu", 4, 2), {"seed": 0.5}, names="seed")),
    (ClassifierNet, BadInput("bias-str", (4, 2), {"bias": "no"}, names="bias")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_functions_refuse(call, case):
    check_bad_inputs(call, case)


def _model():
    return make_model("mlp-relu", 6, 3, hidden=5, seed=0)


X = torch.randn(12, 6, generator=torch.Generator().manual_seed(2))
Y = torch.arange(12) % 3
TRAIN = {"epochs": 1, "lr": 0.1, "batch_size": 4, "seed": 0}


@pytest.mark.parametrize("case", [
    BadInput("model", ("net", X, Y), names="model"),
    BadInput("X-numpy", (None, X.numpy(), Y), names="X"),
    BadInput("X-nan", (None, torch.full((12, 6), NAN), Y), names="X"),  # trained to NaN weights before
    BadInput("y-float", (None, X, Y.float()), names="y"),
    BadInput("y-out-of-range", (None, X, Y + 5), names="y"),
    BadInput("epochs-0", (None, X, Y), {"epochs": 0}, names="epochs"),
    BadInput("lr-nan", (None, X, Y), {"lr": NAN}, names="lr"),  # trained to NaN weights before
    BadInput("lr-negative", (None, X, Y), {"lr": -0.1}, names="lr"),
    BadInput("batch-0", (None, X, Y), {"batch_size": 0}, names="batch_size"),
    BadInput("seed-float", (None, X, Y), {"seed": 0.5}, names="seed"),
    BadInput("penalty-type", (None, X, Y), {"penalty": "rnr"}, names="penalty"),
    BadInput("penalty-key", (None, X, Y), {"penalty": None, "weight_key": "head"}, names="weight_key"),
    BadInput("penalty-bad-key", (None, X, Y), {"penalty": None, "penalty_key": ("a",)}, names="key"),
], ids=lambda c: c.id)
def test_local_train_refuses_and_leaves_model_and_penalty(case):
    model = _model()
    pen = RNRPenalty(lam=0.1, seed=0)
    kwargs = {**TRAIN, **case.kwargs}
    if kwargs.get("penalty", 0) is None:
        kwargs["penalty"] = pen
    args = (model if case.args[0] is None else case.args[0], *case.args[1:])
    check_bad_inputs(local_train, BadInput(case.id, args, kwargs, names=case.names), targets=[model, pen])


@pytest.mark.parametrize("case", [
    BadInput("model", ("net", X, Y), names="model"),
    BadInput("length", (None, X, Y[:1]), names="y"),  # broadcast a 1-label y before
    BadInput("X-nan", (None, torch.full((12, 6), NAN), Y), names="X"),
    BadInput("empty", (None, X[:0], Y[:0]), names="X and y"),
], ids=lambda c: c.id)
def test_evaluate_accuracy_refuses(case):
    model = _model()
    args = (model if case.args[0] is None else case.args[0], *case.args[1:])
    check_bad_inputs(evaluate_accuracy, BadInput(case.id, args, names=case.names), target=model)


PARTS = [np.arange(0, 6), np.arange(6, 12)]


@pytest.mark.parametrize("case", [
    BadInput("X-nan", (np.full((12, 6), NAN), Y.numpy(), PARTS), names="X"),
    BadInput("length", (X.numpy(), Y.numpy()[:5], PARTS), names="y"),
    BadInput("labels", (X.numpy(), Y.numpy() + 3, PARTS), names="y"),
    BadInput("parts-empty", (X.numpy(), Y.numpy(), []), names="parts"),
    BadInput("parts-float", (X.numpy(), Y.numpy(), [np.array([0.5, 1.0])]), names="parts"),
    BadInput("parts-range", (X.numpy(), Y.numpy(), [np.array([0, 99])]), names="parts"),
    BadInput("rounds-0", (X.numpy(), Y.numpy(), PARTS), {"rounds": 0}, names="rounds"),
    BadInput("fraction-bool", (X.numpy(), Y.numpy(), PARTS), {"fraction": True}, names="fraction"),
    BadInput("fraction-nan", (X.numpy(), Y.numpy(), PARTS), {"fraction": NAN}, names="fraction"),
    BadInput("lr-nan", (X.numpy(), Y.numpy(), PARTS), {"lr": NAN}, names="lr"),
    BadInput("batch-0", (X.numpy(), Y.numpy(), PARTS), {"batch_size": 0}, names="batch_size"),
    BadInput("epochs-0", (X.numpy(), Y.numpy(), PARTS), {"local_epochs": 0}, names="epochs"),
    BadInput("attack-type", (X.numpy(), Y.numpy(), PARTS), {"attacks": ["wlia"]}, names="attacks"),
    BadInput("on-update", (X.numpy(), Y.numpy(), PARTS), {"on_update": 3}, names="on_update"),
    BadInput("weight-key", (X.numpy(), Y.numpy(), PARTS), {"weight_key": "head"}, names="weight_key"),
    BadInput("test-nan", (X.numpy(), Y.numpy(), PARTS), {"X_test": np.full((3, 6), NAN),
                                                          "y_test": np.zeros(3, dtype=int)}, names="X"),
], ids=lambda c: c.id)
def test_simulate_fedavg_refuses_before_any_attack_observes(case):
    attack = WLIA()
    kwargs = {"rounds": 1, "local_epochs": 1, "batch_size": 4, "attacks": [attack], **case.kwargs}
    check_bad_inputs(lambda *a, **k: simulate_fedavg(_model, *a, **k), BadInput(case.id, case.args, kwargs,
                                                                               names=case.names), target=attack)
    assert attack.clients == []
