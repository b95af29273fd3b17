"""EMC vs the GCAL port (our re-implementation of GCAL's generative memory: its code is not a package) on the
``neurips26.bench`` harness: the CPU time of one domain's adaptation early and late in a stream, the growth of
each method's per-domain cost with the domain index t, peak tensor memory and accuracy. Writes
results/emc/bench.json (1 thread, process clock, interleaved pairs, t-interval on the log ratio).

    .venv/bin/python benchmarks/emc_bench.py [--quick] [--dataset csbm|cora|citeseer] [--n-nodes 1000]
                                             [--domains 12] [--gcal-epochs 6] [--repeats 7]

One stream, both methods from the same source GCN. Both methods are stateful (each ``adapt`` adds to the memory),
so a timed pair adapts fresh copies of each method's state after domains 1..t-1 to domain t (the copies are made
before timing). EMC's cost should stay flat in t; GCAL replays every stored memory through its O(m^2) edge
generator, so its cost grows with t: the scaling rows fit the log-log slope of each method's per-domain CPU time
(from one pass over the stream) in t. No FLOP count: the cost is a few small dense products and the GNN
forward, not a kernel with a machine limit worth quoting.
"""

from __future__ import annotations

import argparse
import copy
import sys

import torch

from neurips26.bench import Bench
from neurips26.emc import (
    EMC,
    GCAL,
    UnlabeledGraph,
    continual_eval,
    csbm_stream,
    planetoid_shift_stream,
    train_source_gnn,
    unpack_graph,
)


def _view(graph) -> UnlabeledGraph:
    x, ei, w = unpack_graph(graph, name="graph", return_weight=True)
    return UnlabeledGraph(x, ei, w)


def _states_after(method, views: list[UnlabeledGraph], t: int, copies: int) -> list:
    """``copies`` independent copies of ``method`` after adapting to ``views[:t]``."""
    for view in views[:t]:
        method.adapt(view)
    return [copy.deepcopy(method) for _ in range(copies)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CSBM, 600 nodes, 8 domains")
    ap.add_argument("--dataset", choices=("csbm", "cora", "citeseer"), default="csbm")
    ap.add_argument("--n-nodes", type=int, default=1000, help="CSBM nodes per domain")
    ap.add_argument("--domains", type=int, default=12, help="stream length T (target domains)")
    ap.add_argument("--gcal-epochs", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args, _ = ap.parse_known_args()
    if args.quick:
        args.n_nodes, args.domains = 600, 8
    if args.domains < 2 or args.n_nodes < 10 or args.gcal_epochs < 1:
        raise SystemExit("emc_bench: --domains >= 2, --n-nodes >= 10 and --gcal-epochs >= 1 required")
    torch.manual_seed(args.seed)
    if args.dataset == "csbm":  # the source graph, then the target domains
        stream = csbm_stream(n_domains=args.domains, n_nodes=args.n_nodes, seed=args.seed)
    else:
        stream = planetoid_shift_stream(args.dataset, n_domains=args.domains, seed=args.seed)
    bench = Bench("emc", description=f"EMC vs GCAL (our port), {args.dataset}, {len(stream) - 1} target domains, "
                  f"GCAL {args.gcal_epochs} epochs/domain: per-domain adaptation CPU time, its growth in t, peak "
                  "memory, accuracy", argv=sys.argv[1:])
    n_classes = int(stream[0].y.max()) + 1
    model = train_source_gnn(stream[0], hidden=args.hidden, epochs=100, seed=args.seed)
    targets = stream[1:]
    views = [_view(g) for g in targets]

    def emc():
        return EMC(model, n_classes).fit_source(stream[0])

    def gcal():
        return GCAL(model, epochs=args.gcal_epochs, seed=args.seed)

    copies = bench.repeats + 1  # one warm-up call + the repeats
    for t in (0, len(views) - 1):
        ours, peer = _states_after(emc(), views, t, copies), _states_after(gcal(), views, t, copies)
        bench.compare(f"adapt to domain {t + 1} (after {t} domains)", ours=lambda o=ours, v=views[t]: o.pop().adapt(v),
                      peer=lambda p=peer, v=views[t]: p.pop().adapt(v), peer_name="GCAL port (VGAE + edge generator "
                      "replay)", peer_kind="ours")
    with bench.limit_threads():
        results = {"EMC": continual_eval(emc(), targets), "GCAL": continual_eval(gcal(), targets)}
    steps = list(range(1, len(targets) + 1))
    for name, res in results.items():
        bench.scaling(f"{name} per-domain adaptation CPU time in the domain index t", sizes=steps,
                      time_of=lambda t, r=res: r.cpu_time_s[int(t) - 1],
                      claimed="EMC: flat (slope 0); GCAL: grows with its replayed memories")
    emc_r, gcal_r = results["EMC"], results["GCAL"]
    bench.count(f"peak tensor bytes adapting to the last domain ({len(targets)})", ours=emc_r.peak_bytes[-1],
                peer=gcal_r.peak_bytes[-1], peer_name="GCAL port", peer_kind="ours", unit="bytes")
    bench.count("total adaptation CPU time over the stream (one pass, not interleaved)", ours=sum(emc_r.cpu_time_s),
                peer=sum(gcal_r.cpu_time_s), peer_name="GCAL port", peer_kind="ours", unit="CPU seconds")
    bench.count("average accuracy AP after the last domain", ours=emc_r.average_accuracy,
                peer=gcal_r.average_accuracy, peer_name="GCAL port", peer_kind="ours", unit="accuracy",
                lower_is_better=False)
    bench.count("average forgetting AF", ours=max(emc_r.forgetting, 0.0), peer=max(gcal_r.forgetting, 0.0),
                peer_name="GCAL port", peer_kind="ours", unit="accuracy points lost (negative forgetting shown as 0)")
    bench.write()


if __name__ == "__main__":
    main()
