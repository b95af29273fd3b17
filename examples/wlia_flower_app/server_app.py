"""ServerApp: FedAvg / FedProx / FedAdam with the WLIA attack observing every training reply of every round.

At the end it prints each client's inferred label distribution beside the true one (the server knows the
true ones here only because the task is synthetic and shared; a real attacker does not)."""

from __future__ import annotations

from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp
from task import N_CLASSES, make_task, model_fn

from neurips26.wlia import WLIA, label_distribution, label_distribution_metrics
from neurips26.wlia.flower import WLIAFedAdam, WLIAFedAvg, WLIAFedProx

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    n_nodes = len(list(grid.get_node_ids()))
    name = str(cfg["strategy"])
    classes = {"fedavg": (WLIAFedAvg, {}), "fedprox": (WLIAFedProx, {"proximal_mu": float(cfg["proximal-mu"])}),
               "fedadam": (WLIAFedAdam, {"eta": float(cfg["server-lr"])})}
    if name not in classes:
        raise ValueError(f"strategy must be one of {sorted(classes)}, got {name!r}")
    cls, extra = classes[name]
    attack = WLIA()
    strategy = cls([attack], fraction_evaluate=0.0, min_train_nodes=n_nodes, min_available_nodes=n_nodes,
                   **extra)  # fail_on_client_error=True: a client exception stops the run with its reason
    strategy.start(grid=grid, initial_arrays=ArrayRecord(model_fn().state_dict()),
                   num_rounds=int(cfg["num-server-rounds"]))
    _, y, parts = make_task(n_nodes, float(cfg["dirichlet-alpha"]), int(cfg["seed"]))
    print(f"[wlia] {name}: observed {len(strategy.observed)} client updates over {cfg['num-server-rounds']} rounds")
    for client in sorted(attack.clients):
        true = label_distribution(y[parts[client]], N_CLASSES)
        m = label_distribution_metrics(true, attack.infer(client))
        print(f"[wlia] client {client}: JS = {m['js']:.3f}, L1 = {m['l1']:.3f}, cosine = {m['cos']:.3f}")
