"""ClientApp: local SGD on this node's partition, optionally with the RNR penalty (``rnr-lambda > 0``).

Simulation: the node's ``partition-id`` / ``num-partitions`` come from the simulation engine. Deployment:
start each SuperNode with ``--node-config "partition-id=K num-partitions=N"``.
"""

from __future__ import annotations

from flwr.app import Context, Message
from flwr.clientapp import ClientApp
from task import make_task, model_fn

from neurips26.wlia import RNRPenalty
from neurips26.wlia.flower import make_client_app

app = ClientApp()
_built: dict[tuple, ClientApp] = {}


@app.train()
def train(msg: Message, context: Context) -> Message:
    cfg, node = context.run_config, context.node_config
    key = (int(node["num-partitions"]), float(cfg["dirichlet-alpha"]), int(cfg["seed"]), float(cfg["rnr-lambda"]),
           int(cfg["local-epochs"]), float(cfg["lr"]))
    if key not in _built:  # one inner app per configuration (the data are built once per process)
        n, alpha, seed, lam, epochs, lr = key
        X, y, parts = make_task(n, alpha, seed)
        penalty = RNRPenalty(lam=lam, seed=seed) if lam > 0 else None
        _built[key] = make_client_app(model_fn, X, y, parts, local_epochs=epochs, lr=lr, seed=seed, penalty=penalty)
    return _built[key](msg, context)
