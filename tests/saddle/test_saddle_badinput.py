"""The error contract for saddle's public API, on the shared harness: every solver and problem constructor
refuses bad input with an error naming the argument, and the caller's start vectors are never modified."""

from __future__ import annotations

import numpy as np
import pytest

from _badinput import BadInput, check_bad_inputs  # tests/ is on sys.path (conftest)
from neurips26.saddle import (
    BilinearGame,
    ChainHardInstance,
    CostCounter,
    DROLogistic,
    MultiPlayerQuadraticGame,
    QuadraticGame,
    agd_prox,
    communication_lower_bound,
    decoupled_method,
    decoupled_method_vi,
    decoupled_sgda,
    extragradient,
    extragradient_vi,
    gda,
    optimistic_gda,
    project_simplex,
)

NAN, INF = float("nan"), float("inf")
GAME = QuadraticGame.random(4, 0.1, 2.0, 0.1, 2.0, 1.0, seed=0)
SOLVERS = [decoupled_method, extragradient, optimistic_gda, gda, decoupled_sgda]


def _start_cases():
    z = np.zeros(4)
    return [
        BadInput("x0-short", args=(GAME, np.zeros(3), z), names="x0"),
        BadInput("y0-long", args=(GAME, z, np.zeros(5)), names="y0"),
        BadInput("x0-nan", args=(GAME, np.array([0, NAN, 0, 0]), z), names="x0"),
        BadInput("y0-inf", args=(GAME, z, np.array([0, 0, INF, 0])), names="y0"),
        BadInput("x0-matrix", args=(GAME, np.zeros((2, 2)), z), names="x0"),
        BadInput("x0-text", args=(GAME, "0000", z), names="x0"),
        BadInput("tol-0", args=(GAME, z, z), kwargs={"tol": 0.0}, names="tol"),
        BadInput("tol-nan", args=(GAME, z, z), kwargs={"tol": NAN}, names="tol"),
        BadInput("max-rounds-0", args=(GAME, z, z), kwargs={"max_rounds": 0}, names="max_rounds"),
        BadInput("max-rounds-float", args=(GAME, z, z), kwargs={"max_rounds": 10.5}, names="max_rounds"),
    ]


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", _start_cases(), ids=lambda c: c.id)
def test_solvers_refuse_bad_starts_and_settings(solver, case):
    check_bad_inputs(solver, case)


@pytest.mark.parametrize("solver", [extragradient, optimistic_gda, gda, decoupled_sgda], ids=lambda f: f.__name__)
@pytest.mark.parametrize("lr", [0.0, -1.0, NAN, INF])
def test_baselines_refuse_bad_steps(solver, lr):
    check_bad_inputs(solver, BadInput(f"lr={lr}", args=(GAME, np.zeros(4), np.zeros(4)), kwargs={"lr": lr},
                                      names="lr"))


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda f: f.__name__)
def test_solvers_do_not_modify_the_start_vectors(solver):
    x0, y0 = np.ones(4), -np.ones(4)
    solver(GAME, x0, y0, tol=1e-3, max_rounds=200)
    assert np.array_equal(x0, np.ones(4)) and np.array_equal(y0, -np.ones(4))


def test_gradient_of_the_wrong_shape_is_named():
    class Bad:
        constants = GAME.constants
        d_x = d_y = 4

        def grad_x(self, x, y):
            return np.zeros(3)

        def grad_y(self, x, y):
            return np.zeros(4)

    check_bad_inputs(decoupled_method, BadInput("grad-shape", args=(Bad(), np.zeros(4), np.zeros(4)),
                                                names="grad_x"))
    check_bad_inputs(CostCounter(Bad()).grad_x, BadInput("counter", args=(np.zeros(4), np.zeros(4)),
                                                         names="grad_x"))


PROBLEM_CASES = [
    (QuadraticGame, BadInput("A-not-square", args=(np.eye(4)[:3], np.eye(4), np.eye(4)), names="A")),
    (QuadraticGame, BadInput("A-nan", args=(np.full((4, 4), NAN), np.eye(4), np.eye(4)), names="A")),
    (QuadraticGame, BadInput("B-shape", args=(np.eye(4), np.eye(3), np.eye(4)), names="B")),
    (QuadraticGame, BadInput("a-length", args=(np.eye(4), np.eye(4), np.eye(4), np.zeros(3)), names="a")),
    (QuadraticGame.random, BadInput("d-0", args=(0, 0.1, 1.0, 0.1, 1.0, 1.0), names="d")),
    (QuadraticGame.random, BadInput("mu-above-L", args=(4, 2.0, 1.0, 0.1, 1.0, 1.0), names="mu_x")),
    (QuadraticGame.random, BadInput("L-nan", args=(4, 0.1, NAN, 0.1, 1.0, 1.0), names="L_xx")),
    (BilinearGame, BadInput("B-vector", args=(np.ones(4), 0.1), names="B")),
    (BilinearGame, BadInput("mu-negative", args=(np.eye(4), -0.1), names="mu")),
    (BilinearGame, BadInput("B-nan", args=(np.full((2, 2), NAN), 0.1), names="B")),
    (ChainHardInstance, BadInput("d-0", args=(0,), names="d")),
    (ChainHardInstance, BadInput("mu-0", args=(10, 1.0, 0.0), names="mu")),
    (MultiPlayerQuadraticGame.random, BadInput("players-1", args=(1, 4), names="n_players")),
    (MultiPlayerQuadraticGame.random, BadInput("L-cross-nan", args=(3, 4), kwargs={"L_cross": NAN},
                                               names="L_cross")),
    (DROLogistic, BadInput("X-nan", args=(np.full((5, 2), NAN), np.ones(5)), names="X")),
    (DROLogistic, BadInput("t-length", args=(np.ones((5, 2)), np.ones(4)), names="t")),
    (DROLogistic, BadInput("t-labels", args=(np.ones((5, 2)), np.arange(5.0)), names="t")),
    (DROLogistic, BadInput("rho-0", args=(np.ones((5, 2)), np.ones(5)), kwargs={"rho": 0.0}, names="rho")),
    (project_simplex, BadInput("nan", args=(np.array([0.5, NAN]),), names="v")),
    (communication_lower_bound, BadInput("eps-1", args=(1.0, 0.1, 0.1, 1.0), names="eps")),
    (communication_lower_bound, BadInput("mu-nan", args=(1.0, NAN, 0.1, 0.1), names="mu_x")),
    (agd_prox, BadInput("eta-0", args=(lambda v: v, np.zeros(2), 0.0, 1.0, 0.1), names="eta")),
    (agd_prox, BadInput("sigma-1", args=(lambda v: v, np.zeros(2), 1.0, 1.0, 0.1), kwargs={"sigma": 1.0},
                        names="sigma")),
    (agd_prox, BadInput("rule", args=(lambda v: v, np.zeros(2), 1.0, 1.0, 0.1), kwargs={"rule": "abs"},
                        names="rule")),
]


@pytest.mark.parametrize("fn, case", PROBLEM_CASES, ids=lambda v: getattr(v, "id", getattr(v, "__qualname__", "")))
def test_problems_and_helpers_refuse_bad_input(fn, case):
    check_bad_inputs(fn, case)


def test_multi_player_solvers_refuse_bad_starts():
    game = MultiPlayerQuadraticGame.random(3, 4, seed=0)
    good = [np.zeros(4)] * 3
    for solver in (decoupled_method_vi, extragradient_vi):
        for case in [BadInput("not-a-list", args=(game, np.zeros(12)), names="x0s"),
                     BadInput("two-players", args=(game, good[:2]), names="x0s"),
                     BadInput("nan", args=(game, [np.zeros(4), np.full(4, NAN), np.zeros(4)]), names="x0s"),
                     BadInput("short", args=(game, [np.zeros(4), np.zeros(3), np.zeros(4)]), names="x0s"),
                     BadInput("tol", args=(game, good), kwargs={"tol": -1.0}, names="tol")]:
            check_bad_inputs(solver, case)
