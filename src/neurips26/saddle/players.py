r"""The Decoupled Method as a ``torch.optim`` optimizer for two ``nn.Module`` players.

A two-player game min over θ_X, max over θ_Y of f(θ_X, θ_Y), where each player is a module (a generator and a
critic, a classifier and an adversarial reweighting, a policy and a value function) and ``closure()`` computes
the scalar f from the current parameters of both:

    opt = DecoupledPlayer(x_net.parameters(), y_net.parameters(), eta_x=0.1, eta_y=0.1, L_xx=10, L_yy=10)
    for _ in range(steps):
        info = opt.step(lambda: f(x_net, y_net))   # one iteration = 2 rounds; info["calls"], info["rounds"]

Each :meth:`DecoupledPlayer.step` is one iteration of :func:`~neurips26.saddle.decoupled.decoupled_method`
(same arithmetic, same :class:`~neurips26.saddle.counter.CostCounter`): both players solve their local prox
problems by AGD (player X: ∇_X f at fixed θ_Y^k, player Y: ∇_Y f at fixed θ_X^k), exchange half-iterates, apply
the Tseng correction and exchange again. A partial-gradient call writes the two flat vectors into the
parameters, runs ``closure()`` and differentiates with respect to one player's parameters only.

The steps are the param groups' ``lr`` (group 0: player X, η_x; group 1: player Y, η_y), so LR schedulers
apply; ``L`` and ``mu`` of each group are the local smoothness and strong-convexity (``mu = 0``: merely convex)
that the inner AGD needs. For nonconvex players these are assumptions the user sets, as for any prox method.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .counter import CostCounter
from .decoupled import INNER_RULES, _open_unit, decoupled_iteration
from .problems import _positive

__all__ = ["DecoupledPlayer"]


class _ModuleGame:
    """The game seen through flat parameter vectors: ``grad_x(x, y)`` = ∂f/∂θ_X at (x, y), ``grad_y`` = ∂f/∂θ_Y."""

    def __init__(self, x_params: list[torch.Tensor], y_params: list[torch.Tensor],
                 closure: Callable[[], torch.Tensor]) -> None:
        self.x_params, self.y_params, self.closure = x_params, y_params, closure

    def _grad(self, x: torch.Tensor, y: torch.Tensor, wrt: list[torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            vector_to_parameters(x, self.x_params)
            vector_to_parameters(y, self.y_params)
        with torch.enable_grad():
            loss = self.closure()
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ValueError(f"closure must return a scalar tensor f(x, y), got {type(loss).__name__} "
                                 f"of shape {tuple(getattr(loss, 'shape', ()))}")
            if not torch.isfinite(loss):
                raise FloatingPointError(f"closure returned a non-finite value {float(loss.detach())}")
            grads = torch.autograd.grad(loss.reshape(()), wrt, allow_unused=True)
        return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(wrt, grads)])

    def grad_x(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self._grad(x, y, self.x_params)

    def grad_y(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self._grad(x, y, self.y_params)


class DecoupledPlayer(torch.optim.Optimizer):
    """Decoupled Method for two ``nn.Module`` players (see the module docstring).

    Args:
        x_params, y_params: the minimising and the maximising player's parameters (disjoint).
        eta_x, eta_y: prox steps (the groups' ``lr``); the method's default is θ/L_xy (scaled by √(μ_y/μ_x),
            √(μ_x/μ_y) when both are strongly convex): see :func:`~neurips26.saddle.default_steps`.
        L_xx, L_yy: smoothness of f in each player's own parameters (the inner AGD's step 1/(L + 1/η)).
        mu_x, mu_y: strong convexity (X) / concavity (Y) moduli, ≥ 0 (the inner AGD's momentum).
        sigma: inner relative accuracy ∈ (0, 1); ``inner_rule``: ``"relative"`` or ``"hpe"``.

    ``rounds`` and ``calls`` (``{"x": …, "y": …}``) accumulate over steps.
    """

    def __init__(self, x_params: Iterable[torch.Tensor], y_params: Iterable[torch.Tensor], *, eta_x: float,
                 eta_y: float, L_xx: float, L_yy: float, mu_x: float = 0.0, mu_y: float = 0.0,
                 sigma: float = 0.05, inner_rule: str = "relative") -> None:
        xs, ys = list(x_params), list(y_params)
        for name, ps in (("x_params", xs), ("y_params", ys)):
            if not ps:
                raise ValueError(f"{name} is empty: each player needs at least one parameter")
            if not all(isinstance(p, torch.Tensor) for p in ps):
                raise TypeError(f"{name} must hold tensors, got {sorted({type(p).__name__ for p in ps})}")
            if any(not p.is_floating_point() for p in ps):
                raise TypeError(f"{name} must be floating-point tensors")
        if {id(p) for p in xs} & {id(p) for p in ys}:
            raise ValueError("x_params and y_params share a tensor: each parameter belongs to one player")
        if len({(p.dtype, p.device) for p in xs + ys}) != 1:
            raise ValueError("x_params and y_params must share one dtype and device, got "
                             f"{sorted({(str(p.dtype), str(p.device)) for p in xs + ys})}")
        eta_x, eta_y = _positive("eta_x", eta_x), _positive("eta_y", eta_y)
        L_xx, L_yy = _positive("L_xx", L_xx, allow_zero=True), _positive("L_yy", L_yy, allow_zero=True)
        mu_x, mu_y = _positive("mu_x", mu_x, allow_zero=True), _positive("mu_y", mu_y, allow_zero=True)
        for name, mu, L in (("mu_x", mu_x, L_xx), ("mu_y", mu_y, L_yy)):
            if mu > L:
                raise ValueError(f"{name}={mu} exceeds its smoothness constant {L}: need mu <= L")
        self.sigma = _open_unit("sigma", sigma)
        if inner_rule not in INNER_RULES:
            raise ValueError(f"inner_rule must be one of {INNER_RULES}, got {inner_rule!r}")
        self.inner_rule = inner_rule
        super().__init__([{"params": xs, "lr": eta_x, "L": L_xx, "mu": mu_x, "player": "x"},
                          {"params": ys, "lr": eta_y, "L": L_yy, "mu": mu_y, "player": "y"}], defaults={})
        self.rounds, self.calls = 0, {"x": 0, "y": 0}

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor]) -> dict[str, Any]:  # type: ignore[override]
        """One iteration (2 rounds). ``closure()`` returns f(θ_X, θ_Y) as a scalar tensor; it is called once per
        partial gradient (it must not call ``backward`` itself). Returns ``{"rounds": 2, "calls": {"x", "y"},
        "inner_calls": …, "f": f at the new point (one extra evaluation, not counted as a call)}``."""
        if not callable(closure):
            raise TypeError(f"closure must be callable, got {type(closure).__name__}")
        gx_, gy_ = self.param_groups
        xs, ys = gx_["params"], gy_["params"]
        eta_x, eta_y = _positive("lr of player x", gx_["lr"]), _positive("lr of player y", gy_["lr"])
        x0, y0 = parameters_to_vector(xs).detach().clone(), parameters_to_vector(ys).detach().clone()
        counter = CostCounter(_ModuleGame(xs, ys, closure))
        try:
            x, y, _, _, inner = decoupled_iteration(
                counter, x0, y0, eta_x, eta_y, sigma=self.sigma, inner_rule=self.inner_rule,
                local=(gx_["L"], gx_["mu"], gy_["L"], gy_["mu"]))
            if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
                raise FloatingPointError("the iteration produced non-finite parameters (steps too large?)")
        except BaseException:
            vector_to_parameters(x0, xs)  # a failed step leaves the players where they were
            vector_to_parameters(y0, ys)
            raise
        vector_to_parameters(x, xs)
        vector_to_parameters(y, ys)
        self.rounds += counter.rounds
        for k in self.calls:
            self.calls[k] += counter.calls[k]
        f = float(closure().detach())
        return {"rounds": counter.rounds, "calls": dict(counter.calls), "inner_calls": inner, "f": f}
