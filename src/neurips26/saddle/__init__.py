"""Distributed saddle problems with a Decoupled Method (P13, NeurIPS 2026; arXiv 2605.18604).

Paper: Luo, Rodomanov, Stich, "Efficient Gradient Methods for Distributed Saddle Problems" (abstract only; no
code found). Player X owns x, player Y owns y of min_x max_y f(x, y); each sees the other only through
communication. Cost = rounds (simultaneous exchanges of vectors) and oracle calls (partial gradients) per agent.

Why: Extragradient pays max(L_xx, L_xy, L_yy)/μ rounds *and* calls; the paper claims a method whose rounds match
the gradient-span lower bound ~ L_xy/√(μ_x μ_y)·log(1/ε), independent of the local smoothness L_xx, L_yy, and whose
oracle cost strictly improves on Extragradient's.

How (our reconstruction, inferred from the abstract): forward–backward–forward (Tseng) splitting. Each player solves
its own proximal problem min_x f(x, y_k) + ‖x − x_k‖²/(2η_x) locally by Nesterov AGD (no communication,
O(√(L_xx/L_xy)) calls), the players exchange the half-iterates, correct with the difference of cross gradients,
and exchange again: 2 rounds per iteration, step θ/L_xy. :func:`decoupled_method` is the method;
:mod:`.baselines` has Extragradient, optimistic GDA, GDA, decoupled SGDA and an accelerated primal–dual method on the
same :class:`CostCounter`;
:mod:`.problems` the quadratic, bilinear, chain hard-instance, N-player and DRO-logistic problems;
:mod:`.distributed` runs the method as two ``torch.distributed`` (gloo) processes; :class:`.players.DecoupledPlayer` is
the method as a ``torch.optim`` optimizer for two ``nn.Module`` players.
"""

from .baselines import (
    accelerated_primal_dual,
    decoupled_sgda,
    extragradient,
    extragradient_vi,
    gda,
    jacobian_bound,
    optimistic_gda,
)
from .counter import CostCounter, SaddleResult
from .decoupled import (
    agd_prox,
    communication_lower_bound,
    decoupled_iteration,
    decoupled_method,
    decoupled_method_vi,
    default_steps,
    fit_lower_bound_constant,
)
from .players import DecoupledPlayer, estimate_constants
from .problems import (
    BilinearGame,
    ChainHardInstance,
    DROLogistic,
    MultiPlayerQuadraticGame,
    QuadraticGame,
    SaddleProblem,
    chain_matrix,
    project_simplex,
)

__all__ = [
    "BilinearGame",
    "ChainHardInstance",
    "CostCounter",
    "DROLogistic",
    "DecoupledPlayer",
    "MultiPlayerQuadraticGame",
    "QuadraticGame",
    "SaddleProblem",
    "SaddleResult",
    "accelerated_primal_dual",
    "agd_prox",
    "chain_matrix",
    "communication_lower_bound",
    "decoupled_iteration",
    "decoupled_method",
    "decoupled_method_vi",
    "decoupled_sgda",
    "default_steps",
    "estimate_constants",
    "extragradient",
    "extragradient_vi",
    "fit_lower_bound_constant",
    "gda",
    "jacobian_bound",
    "optimistic_gda",
    "project_simplex",
]
