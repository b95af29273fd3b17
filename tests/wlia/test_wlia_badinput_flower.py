"""wlia's Flower adapter refuses bad settings when the apps are built, not inside a remote client (issue 16)."""

import math

import numpy as np
import pytest

pytest.importorskip("flwr")

from _badinput import BadInput, check_bad_inputs  # noqa: E402
from neurips26.wlia import WLIA, make_model  # noqa: E402
from neurips26.wlia.flower import make_client_app, run_flower_simulation  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 6)).astype(np.float32)
Y = RNG.integers(0, 3, size=40)
PARTS = [np.arange(0, 20), np.arange(20, 40)]


def _model():
    return make_model("mlp-relu", 6, 3, hidden=4, seed=0)


@pytest.mark.parametrize("case", [
    BadInput("model-fn", ("net", X, Y, PARTS), names="model_fn"),
    BadInput("X-nan", (_model, np.full((40, 6), math.nan), Y, PARTS), names="X"),
    BadInput("length", (_model, X, Y[:5], PARTS), names="y"),
    BadInput("parts-empty", (_model, X, Y, []), names="parts"),
    BadInput("parts-float", (_model, X, Y, [np.array([0.5, 1.0])]), names="parts"),
    BadInput("parts-range", (_model, X, Y, {3: np.array([0, 99])}), names="parts"),
    BadInput("epochs-0", (_model, X, Y, PARTS), {"local_epochs": 0}, names="epochs"),
    BadInput("lr-nan", (_model, X, Y, PARTS), {"lr": math.nan}, names="lr"),
    BadInput("batch-0", (_model, X, Y, PARTS), {"batch_size": 0}, names="batch_size"),
    BadInput("seed-float", (_model, X, Y, PARTS), {"seed": 0.5}, names="seed"),
    BadInput("penalty", (_model, X, Y, PARTS), {"penalty": "rnr"}, names="penalty"),
], ids=lambda c: c.id)
def test_client_app_refuses_at_build_time(case):
    check_bad_inputs(make_client_app, case)


@pytest.mark.parametrize("case", [
    BadInput("strategy", kwargs={"strategy": "fedsgd"}, names="strategy"),
    BadInput("rounds-0", kwargs={"rounds": 0}, names="rounds"),
    BadInput("fraction-nan", kwargs={"fraction": math.nan}, names="fraction"),
    BadInput("num-cpus-0", kwargs={"num_cpus": 0}, names="num_cpus"),
    BadInput("client-cpus", kwargs={"client_cpus": 4.0, "num_cpus": 2}, names="client_cpus"),
    BadInput("strategy-kwargs", kwargs={"strategy_kwargs": [("eta", 0.1)]}, names="strategy_kwargs"),
    BadInput("lr-nan", kwargs={"lr": math.nan}, names="lr"),
], ids=lambda c: c.id)
def test_simulation_refuses_before_starting_ray(case):
    attack = WLIA()
    check_bad_inputs(lambda **kw: run_flower_simulation(_model, X, Y, PARTS, attacks=[attack], **kw),
                     case, target=attack)
