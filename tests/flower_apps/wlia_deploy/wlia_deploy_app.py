"""Test app for Flower's deployment engine: FedAvg with the WLIA attack observing every update, clients with
the RNR penalty, on a small synthetic task that every process rebuilds from its seed. The ServerApp writes the
final global weights and the attack's per-round scores to ``run_config["out"]`` (JSON)."""

import json

import numpy as np
from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp

from neurips26.wlia import WLIA, RNRPenalty, dirichlet_partition, make_model
from neurips26.wlia.flower import WLIAFedAvg, make_client_app

N_NODES = 2
TRAIN = {"local_epochs": 1, "lr": 0.05, "batch_size": 16, "seed": 3}


def task():
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=2.0, size=(4, 16))
    y = rng.integers(0, 4, size=160)
    X = (centres[y] + rng.normal(size=(160, 16))).astype(np.float32)
    return X, y, dirichlet_partition(y, N_NODES, 0.5, seed=1, min_size=10)


def model_fn():
    return make_model("mlp-relu", 16, 4, hidden=8, seed=0)


def penalty():
    return RNRPenalty(lam=0.2, spread=0.5, seed=5)


X, Y, PARTS = task()
client_app = make_client_app(model_fn, X, Y, PARTS, penalty=penalty(), **TRAIN)
server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    attack = WLIA()
    strategy = WLIAFedAvg([attack], fraction_evaluate=0.0, min_train_nodes=N_NODES, min_available_nodes=N_NODES)
    result = strategy.start(grid=grid, initial_arrays=ArrayRecord(model_fn().state_dict()),
                            num_rounds=int(context.run_config["num-server-rounds"]))
    out = {"observed": sorted(strategy.observed),
           "weights": {k: v.tolist() for k, v in result.arrays.to_torch_state_dict().items()},
           "scores": {str(k): {str(r): np.asarray(s).tolist() for r, s in attack.round_scores(k).items()}
                      for k in attack.clients}}
    with open(str(context.run_config["out"]), "w", encoding="utf-8") as handle:
        json.dump(out, handle)
