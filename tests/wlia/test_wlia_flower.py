"""A real Flower simulation (Ray backend, 4 clients, 2 rounds) against the in-process FedAvg loop.

Ray's start-up costs ~5-10 s on 2 cores; the whole test takes ~15-30 s, so it runs by default.
"""

import numpy as np
import pytest
import torch

pytest.importorskip("flwr")
pytest.importorskip("ray")

from neurips26.wlia import WLIA, BiasAnalytic, RNRPenalty, dirichlet_partition, make_model, simulate_fedavg  # noqa: E402
from neurips26.wlia.flower import run_flower_simulation  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _model():
    return make_model("mlp-relu", 64, 10, hidden=32, seed=0)


@pytest.mark.timeout(240)
def test_flower_simulation_feeds_attack_the_same_updates_as_in_process_loop():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = (X[:600] / 16.0).astype(np.float32), y[:600]
    parts = dirichlet_partition(y, 4, 0.5, seed=1)
    kwargs = dict(rounds=2, local_epochs=1, lr=0.05, batch_size=32, seed=3)

    flower_attacks = [WLIA(), BiasAnalytic()]
    strategy = run_flower_simulation(_model, X, y, parts, attacks=flower_attacks,
                                     penalty=RNRPenalty(lam=0.2, spread=0.5, seed=5), **kwargs)
    local_attacks = [WLIA(), BiasAnalytic()]
    hist = simulate_fedavg(_model, X, y, parts, attacks=local_attacks,
                           penalty=RNRPenalty(lam=0.2, spread=0.5, seed=5), **kwargs)

    # the server saw every client in every round, keyed by partition id
    assert sorted(strategy.observed) == [(r, k) for r in (1, 2) for k in range(4)]
    for fa, la in zip(flower_attacks, local_attacks, strict=True):
        assert sorted(fa.clients) == sorted(la.clients) == [0, 1, 2, 3]
        for k in range(4):
            f_scores, l_scores = fa.round_scores(k), la.round_scores(k)
            assert sorted(f_scores) == sorted(l_scores) == [1, 2]
            for r in (1, 2):
                np.testing.assert_allclose(f_scores[r], l_scores[r], rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(fa.infer(k), la.infer(k), atol=1e-4)
    final = strategy.result.arrays.to_torch_state_dict()
    for key, value in hist.global_state.items():
        np.testing.assert_allclose(final[key].numpy(), value.numpy(), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------ fast variant: same Flower apps, no Ray
class _SequentialGrid:
    """A minimal Flower ``Grid`` that delivers each message to a ``ClientApp`` in this process, one after
    another (what Flower's simulation engine does through Ray actors). For tests only."""

    def __new__(cls, *args, **kwargs):
        from flwr.serverapp import Grid

        class _Impl(Grid):
            def __init__(self, client_app, n_nodes):
                self.client_app = client_app
                self.nodes = {1000 + k: k for k in range(n_nodes)}  # node id -> partition id
                self._run = None

            def set_run(self, run):
                self._run = run

            @property
            def run(self):
                return self._run

            def create_message(self, *args, **kwargs):  # pragma: no cover - not used by FedAvg
                raise NotImplementedError

            def get_node_ids(self):
                return list(self.nodes)

            def push_messages(self, messages):  # pragma: no cover
                raise NotImplementedError

            def pull_messages(self, message_ids):  # pragma: no cover
                raise NotImplementedError

            def send_and_receive(self, messages, *, timeout=None):
                from uuid import uuid4

                from flwr.app import Context, RecordDict

                replies = []
                for msg in messages:
                    msg.metadata.__dict__["_message_id"] = str(uuid4())
                    node = msg.metadata.dst_node_id
                    ctx = Context(run_id=0, node_id=node, state=RecordDict(), run_config={},
                                  node_config={"partition-id": self.nodes[node], "num-partitions": len(self.nodes)})
                    replies.append(self.client_app(msg, ctx))
                return replies

        return _Impl(*args, **kwargs)


@pytest.fixture
def _task_identity():
    """Flower's message constructors read a process-wide task identity that its runtimes set."""
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id)
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 0, 0
    yield
    TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = saved


def test_flower_strategy_and_client_app_without_ray_match_in_process_loop(_task_identity):
    from flwr.app import ArrayRecord

    from neurips26.wlia.flower import WLIAFedAvg, make_client_app

    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 64)).astype(np.float32)
    y = rng.integers(0, 10, size=240)
    parts = dirichlet_partition(y, 4, 0.5, seed=2, min_size=5)
    kwargs = dict(local_epochs=1, lr=0.05, batch_size=16, seed=4)
    flower_attack, local_attack = WLIA(), WLIA()
    strategy = WLIAFedAvg([flower_attack], fraction_evaluate=0.0, min_train_nodes=4, min_available_nodes=4)
    app = make_client_app(_model, X, y, parts, penalty=RNRPenalty(lam=0.5, seed=1), **kwargs)
    result = strategy.start(grid=_SequentialGrid(app, 4), initial_arrays=ArrayRecord(_model().state_dict()),
                            num_rounds=2)
    hist = simulate_fedavg(_model, X, y, parts, rounds=2, attacks=[local_attack],
                           penalty=RNRPenalty(lam=0.5, seed=1), **kwargs)
    assert sorted(strategy.observed) == [(r, k) for r in (1, 2) for k in range(4)]
    for k in range(4):
        for r in (1, 2):
            np.testing.assert_allclose(flower_attack.round_scores(k)[r], local_attack.round_scores(k)[r],
                                       rtol=1e-4, atol=1e-6)
    final = result.arrays.to_torch_state_dict()
    for key, value in hist.global_state.items():
        np.testing.assert_allclose(final[key].numpy(), value.numpy(), rtol=1e-4, atol=1e-6)


def test_strategy_rejects_non_attacks():
    from neurips26.wlia.flower import WLIAFedAvg

    with pytest.raises(TypeError, match="observe"):
        WLIAFedAvg([object()])


@pytest.mark.parametrize("optimizer, via_config", [("adam", False), ("momentum", True)])
def test_flower_client_uses_the_local_optimizer(_task_identity, optimizer, via_config):
    """The ClientApp's optimizer (its argument, or the server's ``config["optimizer"]``) reaches the update:
    the same scores as the in-process loop with that optimizer, and not those of plain SGD."""
    from flwr.app import ArrayRecord, ConfigRecord

    from neurips26.wlia.flower import WLIAFedAvg, make_client_app

    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 64)).astype(np.float32)
    y = rng.integers(0, 10, size=120)
    parts = dirichlet_partition(y, 3, 0.5, seed=2, min_size=5)
    kwargs = dict(local_epochs=1, lr=0.01, batch_size=16, seed=4)
    flower_attack = WLIA()
    strategy = WLIAFedAvg([flower_attack], fraction_evaluate=0.0, min_train_nodes=3, min_available_nodes=3)
    app = make_client_app(_model, X, y, parts, **kwargs, **({} if via_config else {"optimizer": optimizer}))
    strategy.start(grid=_SequentialGrid(app, 3), initial_arrays=ArrayRecord(_model().state_dict()), num_rounds=1,
                   **({"train_config": ConfigRecord({"optimizer": optimizer})} if via_config else {}))
    for opt in (optimizer, "sgd"):
        local_attack = WLIA()
        simulate_fedavg(_model, X, y, parts, rounds=1, attacks=[local_attack], optimizer=opt, **kwargs)
        same = all(np.allclose(flower_attack.round_scores(k)[1], local_attack.round_scores(k)[1], rtol=1e-4,
                               atol=1e-6) for k in range(3))
        assert same == (opt == optimizer)
