"""Flower (flwr >= 1.20, Message API) integration: the attack on the server, RNR on the clients.

* :class:`WLIAFedAvg` is Flower's ``FedAvg`` strategy that also hands every client reply of a training
  round, with the global model it was trained from, to label-distribution attacks (``attack.observe``).
  Aggregation itself is Flower's, unchanged: the honest-but-curious server.
* :func:`make_client_app` builds a ``ClientApp`` whose ``@train`` runs :func:`~.federated.local_train`
  (the same code as the in-process loop), optionally with an :class:`~.rnr.RNRPenalty`.
* :func:`make_server_app` and :func:`run_flower_simulation` wire them for Flower's simulation engine
  (Ray). For the deployment engine the same two apps are referenced from a Flower project
  (``pyproject.toml`` ``[tool.flwr.app.components]``) and started with ``flwr run``; see the README.

Client identity: the client puts its ``partition-id`` (from ``context.node_config``) into its reply
metrics, and the strategy keys the attack by it (``client_id_key``); without it the Flower node id is
used. Like any FedAvg client it also reports ``num-examples`` (the aggregation weight), which on its own
leaks the client's size, not its label distribution.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn

from neurips26.constraints import Callable as IsCallable
from neurips26.constraints import Choice, Instance, Int, Optional, Real, validate

from .attack import UpdateAttack
from .federated import LOCAL, SEED, _check_xy, client_seed, local_train
from .rnr import RNRPenalty

try:  # Flower is the optional `fl` extra
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import FedAdam, FedAvg, FedProx
except ImportError as _err:  # pragma: no cover - exercised only without flwr
    raise ImportError("neurips26.wlia.flower needs Flower: pip install 'neurips26[fl]' "
                      "(flwr[simulation] for the simulation engine)") from _err

__all__ = ["ClientFailureError", "WLIAFedAdam", "WLIAFedAvg", "WLIAFedProx", "make_client_app", "make_server_app",
           "run_flower_simulation", "with_attacks"]


class ClientFailureError(RuntimeError):
    """Raised when Flower clients replied with errors (instead of a run that ends with nothing observed)."""


class _AttackObserver:
    """Mixin for any Flower Message-API strategy: hands every training reply, with the global model it was
    trained from, to label-distribution attacks before the strategy aggregates (FedAvg, FedProx, FedAdam...).

    Args:
        attacks: objects with ``observe(client_id, round_idx, global_state, local_state)``
            (:class:`~.attack.WLIA`, :class:`~.baselines.LLGRowSum`, ...). ``round_idx`` is Flower's
            ``server_round`` (1, 2, ...); states are ``ArrayRecord``s keyed like the model's state dict.
        client_id_key: reply-metric key holding the client's id (default ``"partition-id"``); when a
            reply lacks it, the sending node's id is used.
        on_update: optional callback ``(round, client_id, global_arrays, local_arrays)``.
        fail_on_client_error: raise :class:`ClientFailureError` in the round where a client replied with an
            error (default); ``False`` records it in ``failures`` and lets the strategy go on.
        **strategy_kwargs: passed to the Flower strategy (``fraction_train``, ``proximal_mu``, ``eta`` ...).
    """

    def __init__(self, attacks: Sequence[UpdateAttack] = (), *, client_id_key: str = "partition-id",
                 on_update: Callable[[int, Any, ArrayRecord, ArrayRecord], None] | None = None,
                 fail_on_client_error: bool = True, **strategy_kwargs: Any) -> None:
        super().__init__(**strategy_kwargs)
        self.fail_on_client_error = bool(fail_on_client_error)
        self.failures: list[tuple[int, Any, str]] = []
        for attack in attacks:
            if not callable(getattr(attack, "observe", None)):
                raise TypeError(f"every attack needs an observe() method, got {type(attack).__name__}")
        self.attacks = list(attacks)
        self.client_id_key = client_id_key
        self.on_update = on_update
        self.observed: list[tuple[int, Any]] = []
        self._sent: dict[int, ArrayRecord] = {}
        self.result: Any = None

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
                        ) -> Iterable[Message]:
        # Remember W^{g,t}: the global model this round's clients start from.
        self._sent = {server_round: arrays.copy()}
        return super().configure_train(server_round, arrays, config, grid)

    def aggregate_train(self, server_round: int, replies: Iterable[Message]
                        ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        replies = list(replies)
        sent = self._sent.get(server_round)
        if sent is not None:
            for msg in replies:
                if msg.has_error():
                    error = msg.error
                    self.failures.append((server_round, msg.metadata.src_node_id,
                                          f"{getattr(error, 'code', '?')}: {getattr(error, 'reason', error)}"))
                    continue
                local = msg.content.array_records.get(self.arrayrecord_key)
                if local is None:
                    continue
                metrics = next(iter(msg.content.metric_records.values()), None)
                client = msg.metadata.src_node_id
                if metrics is not None and self.client_id_key in metrics:
                    client = int(metrics[self.client_id_key])
                for attack in self.attacks:
                    attack.observe(client, server_round, sent, local)
                if self.on_update is not None:
                    self.on_update(server_round, client, sent, local)
                self.observed.append((server_round, client))
        if self.fail_on_client_error and any(r == server_round for r, _, _ in self.failures):
            raise ClientFailureError(_failure_text(self.failures, server_round))
        return super().aggregate_train(server_round, replies)


def _failure_text(failures: list[tuple[int, Any, str]], server_round: int | None = None) -> str:
    shown = [f for f in failures if server_round is None or f[0] == server_round]
    lines = "; ".join(f"round {r}, node {n}: {why.splitlines()[0] if why else why}" for r, n, why in shown[:3])
    return f"{len(shown)} Flower client(s) failed ({lines})"


def with_attacks(strategy_cls: type) -> type:
    """``strategy_cls`` (a ``flwr.serverapp.strategy`` class) with the attack observer mixed in."""
    return type(f"WLIA{strategy_cls.__name__}", (_AttackObserver, strategy_cls),
                {"__doc__": f"Flower ``{strategy_cls.__name__}`` with label-distribution attacks observing every "
                            "training reply (see :class:`_AttackObserver`)."})


WLIAFedAvg = with_attacks(FedAvg)
WLIAFedProx = with_attacks(FedProx)  # clients read config["proximal-mu"] (make_client_app does)
WLIAFedAdam = with_attacks(FedAdam)


@validate(model_fn=IsCallable(), local_epochs=Int(low=1), lr=LOCAL["lr"], batch_size=LOCAL["batch_size"], seed=SEED,
          penalty=Optional(Instance(RNRPenalty, "RNRPenalty")), optimizer=LOCAL["optimizer"])
def make_client_app(model_fn: Callable[[], nn.Module], X: Any, y: Any,
                    parts: Sequence[np.ndarray] | Mapping[int, np.ndarray], *,
                    local_epochs: int = 2, lr: float = 0.05, batch_size: int = 32, seed: int = 0,
                    penalty: RNRPenalty | None = None, weight_key: str = "fc.weight",
                    optimizer: str = "sgd") -> ClientApp:
    """A Flower ``ClientApp`` whose ``train`` runs :func:`~.federated.local_train` on its partition.

    The node's partition is ``parts[context.node_config["partition-id"]]`` (set by the simulation
    engine; in deployment pass ``--node-config "partition-id=3"`` to ``flower-supernode`` and give that
    node ``parts={3: np.arange(len(y_local))}`` with its own ``X, y``). The local
    seed is ``client_seed(seed, server_round, partition_id)``, identical to the in-process loop.
    ``optimizer`` (``"sgd"``, ``"momentum"``, ``"adam"``) is the local optimizer; a server may override
    it per round with ``config["optimizer"]`` (and the step size with ``config["lr"]``).
    """
    # everything a client's train would refuse is checked here, before any node starts
    X_all = torch.as_tensor(np.asarray(X), dtype=torch.float32)
    y_all = torch.as_tensor(np.asarray(y), dtype=torch.int64)
    _check_xy(X_all, y_all, where="make_client_app")
    if isinstance(parts, str | bytes) or not hasattr(parts, "__len__") or len(parts) == 0:
        raise ValueError("parts must hold at least one client's indices")
    items = parts.items() if isinstance(parts, Mapping) else enumerate(parts)
    part_map = {}
    for k, p in items:
        arr = np.asarray(p)
        if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_ \
                or arr.min() < 0 or arr.max() >= len(y_all):
            raise ValueError(f"parts[{k!r}] must be a non-empty 1-D array of sample indices in [0, {len(y_all)})")
        part_map[int(k)] = arr.astype(np.int64)
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        pid = int(context.node_config["partition-id"])
        if pid not in part_map:
            raise ValueError(f"partition-id {pid} has no partition here (have {sorted(part_map)[:10]})")
        config = msg.content["config"]
        server_round = int(config["server-round"])
        mu = float(config["proximal-mu"]) if "proximal-mu" in config else 0.0  # FedProx sends it
        opt_name = str(config["optimizer"]) if "optimizer" in config else optimizer
        step = float(config["lr"]) if "lr" in config else lr
        model = model_fn()
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        idx = torch.as_tensor(part_map[pid])
        metrics = local_train(model, X_all[idx], y_all[idx], epochs=local_epochs, lr=step, batch_size=batch_size,
                              seed=client_seed(seed, server_round, pid), penalty=penalty,
                              penalty_key=(pid, server_round), weight_key=weight_key, proximal_mu=mu,
                              optimizer=opt_name)
        content = RecordDict({
            "arrays": ArrayRecord(model.state_dict()),
            "metrics": MetricRecord({"num-examples": metrics["num-examples"], "train-loss": metrics["train-loss"],
                                     "partition-id": pid}),
        })
        return Message(content=content, reply_to=msg)

    return app


@validate(rounds=Int(low=1))
def make_server_app(strategy: Any, model_fn: Callable[[], nn.Module], *, rounds: int) -> ServerApp:
    """A Flower ``ServerApp`` running ``strategy`` for ``rounds`` from ``model_fn()``'s weights.

    The ``Result`` of ``strategy.start`` is stored in ``strategy.result``.
    """
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        initial = ArrayRecord(model_fn().state_dict())
        strategy.result = strategy.start(grid=grid, initial_arrays=initial, num_rounds=rounds)

    return app


@contextmanager
def _flower_log_level(level: int):
    logger = logging.getLogger("flwr")
    old = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(old)


@validate(strategy=Choice("fedadam", "fedavg", "fedprox"), rounds=Int(low=1),
          fraction=Real(low=0.0, high=1.0, closed="right"), num_cpus=Int(low=1),
          client_cpus=Real(low=0.0, closed="neither"), strategy_kwargs=Optional(Instance(Mapping, "mapping")))
def run_flower_simulation(model_fn: Callable[[], nn.Module], X: Any, y: Any, parts: Sequence[np.ndarray], *,
                          rounds: int = 3, attacks: Sequence[UpdateAttack] = (), local_epochs: int = 2,
                          lr: float = 0.05, batch_size: int = 32, seed: int = 0, fraction: float = 1.0,
                          penalty: RNRPenalty | None = None, weight_key: str = "fc.weight",
                          num_cpus: int = 2, client_cpus: float = 1.0, quiet: bool = True,
                          on_update: Callable[[int, Any, ArrayRecord, ArrayRecord], None] | None = None,
                          strategy: str = "fedavg", strategy_kwargs: Mapping[str, Any] | None = None,
                          optimizer: str = "sgd") -> Any:
    """Run FedAvg + attacks on Flower's simulation engine (Ray); returns the strategy (``.result``,
    ``.observed``; the attacks hold their observations). Same arguments as
    :func:`~.federated.simulate_fedavg` plus Ray's CPU budget. Client sampling with ``fraction < 1``
    is Flower's own (so it differs from the in-process loop's sampling). ``strategy``: ``"fedavg"``,
    ``"fedprox"`` or ``"fedadam"`` (``strategy_kwargs`` e.g. ``{"proximal_mu": 0.1}`` or ``{"eta": 0.01}``).

    Uses ``flwr.simulation.run_simulation`` (flwr 1.42 logs it as deprecated in favour of ``flwr run``; the
    copyable ``flwr run`` app is ``examples/wlia_flower_app``). Raises :class:`ClientFailureError` when any
    client failed and ``RuntimeError`` when the run ended without a result or without observing a reply."""
    from flwr.simulation import run_simulation

    classes = {"fedavg": WLIAFedAvg, "fedprox": WLIAFedProx, "fedadam": WLIAFedAdam}
    if client_cpus > num_cpus:
        raise ValueError(f"client_cpus must be a number in (0, num_cpus={num_cpus}], got {client_cpus!r}")
    n_clients = len(parts)
    extra = dict(strategy_kwargs or {})
    if strategy == "fedprox":
        extra.setdefault("proximal_mu", 0.1)
    strat = classes[strategy](attacks, on_update=on_update, fail_on_client_error=False, fraction_train=float(fraction),
                              fraction_evaluate=0.0, min_train_nodes=max(1, int(round(fraction * n_clients))),
                              min_available_nodes=n_clients, **extra)
    client_app = make_client_app(model_fn, X, y, parts, local_epochs=local_epochs, lr=lr, batch_size=batch_size,
                                 seed=seed, penalty=penalty, weight_key=weight_key, optimizer=optimizer)
    server_app = make_server_app(strat, model_fn, rounds=rounds)
    backend_config = {"client_resources": {"num_cpus": client_cpus, "num_gpus": 0.0},
                      "init_args": {"num_cpus": num_cpus, "include_dashboard": False,
                                    "logging_level": "error", "log_to_driver": False}}
    with _flower_log_level(logging.WARNING if quiet else logging.INFO):
        run_simulation(server_app=server_app, client_app=client_app, num_supernodes=n_clients,
                       backend_config=backend_config)
    if strat.failures:
        raise ClientFailureError(_failure_text(strat.failures))
    if strat.result is None or not strat.observed:
        raise RuntimeError("the Flower simulation ended without a result or without any client reply "
                           "(see the Flower/Ray log above)")
    return strat
