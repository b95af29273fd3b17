"""WLIA + RNR: label-distribution leakage from classifier weight norms in federated learning (P04).

What: an honest-but-curious FedAvg server infers each client's label distribution from how the rows
of the classifier (last linear layer) change in norm between the global model it sends and the local
model it receives, over rounds (:class:`WLIA`); no auxiliary data, shadow models or meta-classifier.
RNR (:class:`RNRPenalty`) is the client-side defense: one penalty added to the cross-entropy that pulls
each class row's norm toward a random target, ``λ Σ_c (‖w_c‖ − m̄(1 + ε_c))²``.
Why: with cross-entropy, the row of a frequent class gets a larger "pull" update, so its norm grows
faster; this links label frequency to weight norm (Kang et al. 2020), which the attack reads.
How: ``attack.observe(client, round, global_state, local_state)`` per update, ``attack.infer(client)``
for ``p̂ [C]``. Baselines share that interface (:class:`LLGRowSum`, :class:`BiasAnalytic`,
:class:`UniformGuess`). Runs in-process (:func:`simulate_fedavg`) or on Flower (``neurips26.wlia.flower``:
``WLIAFedAvg``, ``make_client_app``, ``run_flower_simulation``; needs the ``fl`` extra).
The score formula, estimators and the RNR penalty form are inferred from the abstract (see README).
"""

from typing import Any

from .attack import WLIA, UpdateAttack, scores_to_distribution
from .baselines import BiasAnalytic, LLGRowSum, TangentialRowSum, UniformGuess
from .federated import (
    ClassifierNet,
    FedAvgHistory,
    client_seed,
    dirichlet_partition,
    evaluate_accuracy,
    fedavg_aggregate,
    label_distribution,
    label_distribution_metrics,
    local_train,
    make_model,
    simulate_fedavg,
)
from .rnr import RNRPenalty, rnr_penalty

_FLOWER = ("ClientFailureError", "WLIAFedAdam", "WLIAFedAvg", "WLIAFedProx", "make_client_app", "make_server_app",
           "run_flower_simulation", "with_attacks")

__all__ = [
    "WLIA", "UpdateAttack", "scores_to_distribution", "BiasAnalytic", "LLGRowSum", "TangentialRowSum", "UniformGuess",
    "RNRPenalty", "rnr_penalty", "ClassifierNet", "FedAvgHistory", "client_seed", "dirichlet_partition",
    "evaluate_accuracy", "fedavg_aggregate", "label_distribution", "label_distribution_metrics",
    "local_train", "make_model", "simulate_fedavg", *_FLOWER,
]


def __getattr__(name: str) -> Any:
    # Flower is an optional extra: import it only when its adapter is used.
    if name in _FLOWER:
        from . import flower

        return getattr(flower, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
