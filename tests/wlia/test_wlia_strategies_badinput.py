"""wlia on Flower strategies beyond FedAvg, client failures surfacing (issue 15), and the error contract
(issue 16). The strategies run through the in-process grid of test_wlia_flower (no Ray, a few seconds)."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("flwr")

from neurips26.wlia import WLIA, dirichlet_partition, fedavg_aggregate, local_train, make_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_wlia_flower import _SequentialGrid, _task_identity  # noqa: E402, F401

from _badinput import BadInput, check_bad_inputs  # noqa: E402


def _model():
    return make_model("mlp-relu", 16, 4, hidden=8, seed=0)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 16)).astype(np.float32)
    y = rng.integers(0, 4, size=120)
    return X, y, dirichlet_partition(y, 3, 0.5, seed=1, min_size=5)


@pytest.mark.parametrize("name,kwargs", [("WLIAFedAvg", {}), ("WLIAFedProx", {"proximal_mu": 0.5}),
                                         ("WLIAFedAdam", {"eta": 0.05})])
def test_attack_observes_every_reply_under_each_strategy(_task_identity, name, kwargs):  # noqa: F811
    from flwr.app import ArrayRecord

    from neurips26.wlia import flower

    X, y, parts = _data()
    attack = WLIA()
    strategy = getattr(flower, name)([attack], fraction_evaluate=0.0, min_train_nodes=3, min_available_nodes=3,
                                     **kwargs)
    app = flower.make_client_app(_model, X, y, parts, local_epochs=1, lr=0.1, batch_size=16, seed=0)
    strategy.start(grid=_SequentialGrid(app, 3), initial_arrays=ArrayRecord(_model().state_dict()), num_rounds=2)
    assert sorted(strategy.observed) == [(r, k) for r in (1, 2) for k in range(3)]
    # the attack's inference is a distribution for every client
    for k in range(3):
        p = attack.infer(k)
        assert p.shape == (4,) and np.isclose(p.sum(), 1.0)


def test_fedprox_client_applies_the_proximal_term():
    X, y, _ = _data()
    Xt, yt = torch.as_tensor(X[:40]), torch.as_tensor(y[:40])
    start = _model().state_dict()
    moved = {}
    for mu in (0.0, 10.0):
        m = _model()
        local_train(m, Xt, yt, epochs=2, lr=0.1, batch_size=8, seed=0, proximal_mu=mu)
        moved[mu] = sum(float(((m.state_dict()[k] - start[k]) ** 2).sum()) for k in start)
    assert moved[10.0] < moved[0.0]  # FedProx keeps the local model closer to the global one


def test_client_failures_surface_as_an_error(_task_identity):  # noqa: F811
    from flwr.app import ArrayRecord

    from neurips26.wlia.flower import ClientFailureError, WLIAFedAvg, make_client_app

    X, y, parts = _data()
    # partition ids 0..2 exist on the grid but this app only holds partition 7: every client raises
    app = make_client_app(_model, X, y, {7: parts[0]}, local_epochs=1)

    class _ErrorGrid(_SequentialGrid.__new__(_SequentialGrid, app, 3).__class__):
        def send_and_receive(self, messages, *, timeout=None):
            from flwr.app import Error, Message

            out = []
            for msg in messages:
                try:
                    out.extend(super().send_and_receive([msg], timeout=timeout))
                except Exception as err:  # what Flower's runtime turns a client exception into
                    out.append(Message(Error(code=0, reason=repr(err)), reply_to=msg))
            return out

    strategy = WLIAFedAvg([WLIA()], fraction_evaluate=0.0, min_train_nodes=3, min_available_nodes=3)
    with pytest.raises(ClientFailureError, match="partition-id"):
        strategy.start(grid=_ErrorGrid(app, 3), initial_arrays=ArrayRecord(_model().state_dict()), num_rounds=1)
    assert len(strategy.failures) == 3 and strategy.observed == []


STATE = {"w": torch.ones(2, 3), "b": torch.zeros(2)}


@pytest.mark.parametrize("case", [
    BadInput("length", ([STATE, STATE], [1.0]), names="weights"),  # torch/zip error before
    BadInput("zero-sum", ([STATE, STATE], [0.0, 0.0]), names="weights"),  # ZeroDivisionError before
    BadInput("nan-weight", ([STATE], [float("nan")]), names="weights"),
    BadInput("negative", ([STATE, STATE], [1.0, -1.0]), names="weights"),
    BadInput("empty", ([], []), names="states"),
    BadInput("keys", ([STATE, {"w": torch.ones(2, 3)}], [1.0, 1.0]), names="states"),
    BadInput("shape", ([STATE, {"w": torch.ones(3, 3), "b": torch.zeros(2)}], [1.0, 1.0]), names="states"),
    BadInput("nan-state", ([STATE, {"w": torch.full((2, 3), float("nan")), "b": torch.zeros(2)}], [1.0, 1.0]),
             names="states"),
], ids=lambda c: c.id)
def test_fedavg_aggregate_refuses(case):
    check_bad_inputs(fedavg_aggregate, case)


def _layer(seed):
    return {"fc.weight": torch.randn(4, 8, generator=torch.Generator().manual_seed(seed))}


@pytest.mark.parametrize("case", [
    BadInput("duplicate-round", (5, 1, _layer(0), _layer(1)), names="round"),  # registered client 5 before
    BadInput("nan", (6, 1, _layer(0), {"fc.weight": torch.full((4, 8), float("nan"))}), names="NaN"),
    BadInput("shape", (6, 1, _layer(0), {"fc.weight": torch.ones(3, 8)}), names="local_state"),
    BadInput("round-negative", (6, -1, _layer(0), _layer(1)), names="round_idx"),
    BadInput("round-bool", (6, True, _layer(0), _layer(1)), names="round_idx"),
    BadInput("unhashable", ([6], 1, _layer(0), _layer(1)), names="client_id"),
], ids=lambda c: c.id)
def test_observe_refuses_and_registers_nothing(case):
    attack = WLIA()
    attack.observe(0, 1, _layer(0), _layer(1))
    if case.id == "duplicate-round":
        attack.observe(5, 0, _layer(0), _layer(1))
        attack.observe(5, 1, _layer(0), _layer(1))
    check_bad_inputs(attack.observe, case, target=attack)
    assert 6 not in attack.clients


@pytest.mark.parametrize("case", [
    BadInput("length", (_model(), torch.ones(5, 16), torch.zeros(4, dtype=torch.long)), names="y"),
    BadInput("mu-negative", (_model(), torch.ones(5, 16), torch.zeros(5, dtype=torch.long)),
             {"proximal_mu": -1.0}, names="proximal_mu"),
], ids=lambda c: c.id)
def test_local_train_refuses(case):
    kwargs = {"epochs": 1, "lr": 0.1, "batch_size": 4, "seed": 0, **case.kwargs}
    check_bad_inputs(local_train, BadInput(case.id, case.args, kwargs, names=case.names), target=case.args[0])
