"""Train a small decoder-only TSP solver by imitation and compare it with the classical heuristics.

    .venv/bin/python examples/routing.py          # ~15 s on a CPU
"""

import torch

from neurips26.routing import (
    DecoderConfig,
    TSPDecoderOnly,
    farthest_insertion_tours,
    greedy_construct,
    make_tsp_instances,
    multi_start_construct,
    nearest_neighbour_tours,
    optimality_gap,
    solve_tsp_reference,
    tour_length,
    train_supervised,
)

torch.manual_seed(0)
X = make_tsp_instances(n_instances=512, n_nodes=10, seed=0)            # float32 [512, 10, 2] in [0, 1]
tours = solve_tsp_reference(X, backend="auto")                           # exact/LKH labels, from node 0
model = TSPDecoderOnly(DecoderConfig(d_model=32, n_layers=2))            # the heavy decoder, gated attention
train_supervised(model, X, tours, steps=150, batch_size=64, lr=1e-3, seed=0)

X_test = make_tsp_instances(128, 10, seed=1)
optimal = tour_length(X_test, solve_tsp_reference(X_test, backend="auto"))
_, learned = greedy_construct(model, X_test)    # 150 steps is a toy budget; the claim check trains for real
_, searched = multi_start_construct(model, X_test, augment=True)  # POMO-style: 8 images x every start node
for name, length in (("decoder (ours)", learned), ("decoder, x8 multi-start", searched),
                     ("nearest neighbour", tour_length(X_test, nearest_neighbour_tours(X_test))),
                     ("farthest insertion", tour_length(X_test, farthest_insertion_tours(X_test)))):
    print(f"{name:>23}: mean optimality gap {optimality_gap(length, optimal).mean():5.1f} %")
