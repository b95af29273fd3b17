"""anongames error contract, part 2 (issue 16): every entry point of ``__all__`` against the same classes
of bad input (wrong type, wrong length, NaN/inf, out of range); the game is never changed by a failed call."""

import math
from fractions import Fraction

import pytest

from _badinput import BadInput, check_bad_inputs
from neurips26.anongames import (
    LinearAnonymousGame,
    as_fraction,
    as_profile,
    dumps_game,
    dumps_nfg,
    enumerate_equilibria,
    expected_payoffs,
    format_gambit_profile,
    load_game,
    load_nfg,
    loads_game,
    loads_nfg,
    minmax_curvature,
    parse_gambit_profile,
    path_dynamics,
    poisson_binomial,
    potential_hessian,
    sequential_best_response,
    solve_exact,
    verify_anonymous,
)
from neurips26.anongames.jsonio import GameFileError

NAN = math.nan
GAME = LinearAnonymousGame([2, -2, 1], [-1, 1, Fraction(-1, 2)])
U1 = [[0, 1, 2], [1, 1, 1], [0, 0, 0]]
U0 = [[0, 0, 0], [0, 0, 0], [1, 0, 1]]


@pytest.mark.parametrize("call, case", [
    (as_fraction, BadInput("nan", (NAN,), names="value")),
    (as_fraction, BadInput("inf", (math.inf,), names="value")),
    (as_fraction, BadInput("bool", (True,), names="value")),
    (as_fraction, BadInput("list", ([1],), names="value")),
    (as_fraction, BadInput("text", ("three",), names="value")),
    (as_fraction, BadInput("zero-denominator", ("1/0",), names="value")),
    (as_fraction, BadInput("float-refused", (0.5,), {"floats": "refuse"}, names="value")),
    (as_fraction, BadInput("policy", (1,), {"floats": "round"}, names="floats")),
    (as_profile, BadInput("length", ([0, 1], 3), names="p")),
    (as_profile, BadInput("above-1", ([0, 2, 0], 3), names="p[1]")),
    (as_profile, BadInput("negative", ([0, -0.5, 0], 3), names="p[1]")),
    (as_profile, BadInput("nan", ([0, NAN, 0], 3), names="p[1]")),
    (as_profile, BadInput("string", ("010", 3), names="p")),
    (poisson_binomial, BadInput("above-1", ([Fraction(3, 2)],), names="probs")),  # negative masses before
    (poisson_binomial, BadInput("negative", ([Fraction(-1, 2)],), names="probs")),
    (poisson_binomial, BadInput("nan", ([NAN],), names="probs")),
    (poisson_binomial, BadInput("string", ("01",), names="probs")),
    (expected_payoffs, BadInput("ragged", ([[0, 1], [1, 1, 1], [0, 0, 0]], U0, [0, 0, 0]), names="U1[0]")),
    (expected_payoffs, BadInput("rows", (U1, U0[:2], [0, 0, 0]), names="U0")),
    (expected_payoffs, BadInput("nan", ([[NAN, 1, 2]] + U1[1:], U0, [0, 0, 0]), names="U1[0][0]")),
    (expected_payoffs, BadInput("profile", (U1, U0, [0, 0]), names="p")),
    (verify_anonymous, BadInput("profile-range", (U1, U0, [0, 0, 3]), names="p[2]")),
    (verify_anonymous, BadInput("table-type", ("U1", U0, [0, 0, 0]), names="U1")),
    (dumps_game, BadInput("not-a-game", ({"a": [1]},), names="game")),
    (loads_game, BadInput("not-json", ("{a: 1}",), exc=GameFileError, names="<string>")),
    (loads_game, BadInput("nan-literal", ('{"a": [NaN], "b": [0]}',), exc=GameFileError, names="NaN")),
    (loads_game, BadInput("lengths", ('{"a": [1, 2], "b": [0]}',), exc=GameFileError, names="b")),
    (load_game, BadInput("missing-file", ("/nonexistent/game.json",), exc=GameFileError, names="no such file")),
    (dumps_nfg, BadInput("not-a-game", ({"a": [1]},), names="game")),
    (dumps_nfg, BadInput("title", (GAME,), {"title": 3}, names="title")),
    (loads_nfg, BadInput("json", ('{"a": [1]}',), exc=GameFileError, names="NFG")),
    (loads_nfg, BadInput("bytes", (b"NFG 1 R",), exc=TypeError, names="text")),
    (load_nfg, BadInput("missing-file", ("/nonexistent/game.nfg",), exc=GameFileError, names="no such file")),
    (format_gambit_profile, BadInput("above-1", ([0, 2],), names="profile[1]")),
    (format_gambit_profile, BadInput("string", ("01",), exc=TypeError, names="profile")),
    (parse_gambit_profile, BadInput("no-ne", ("1,0", 1), names="line")),
    (minmax_curvature, BadInput("not-a-game", ([1, -1],), exc=TypeError, names="game")),
    (potential_hessian, BadInput("not-a-game", (None,), exc=TypeError, names="game")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_functions_refuse(call, case):
    check_bad_inputs(call, case)


@pytest.mark.parametrize("method, case", [
    ("expected_gain", BadInput("length", ([0, 1],), names="p")),
    ("regrets", BadInput("nan", ([0, NAN, 1],), names="p[1]")),
    ("max_regret", BadInput("above-1", ([0, 1, 2],), names="p[2]")),
    ("normalized_regrets", BadInput("string", ("011",), names="p")),
    ("is_nash", BadInput("tol-negative", ([0, 1, 0],), {"tol": -1}, names="tol")),
    ("is_nash", BadInput("tol-nan", ([0, 1, 0],), {"tol": NAN}, names="tol")),
    ("expected_utility", BadInput("bool", ([True, 0, 0],), names="p[0]")),
    ("potential", BadInput("length", ([0.5],), names="p")),
], ids=lambda c: c.id if isinstance(c, BadInput) else c)
def test_game_methods_refuse_and_leave_the_game(method, case):
    game = LinearAnonymousGame([2, -2, 1], [-1, 1, Fraction(-1, 2)])
    check_bad_inputs(getattr(game, method), case, target=game)


@pytest.mark.parametrize("call, case", [
    (LinearAnonymousGame.from_affine, BadInput("lengths", ([1, 2], [0], [0, 0], [0, 0]), names="beta1")),
    (LinearAnonymousGame.from_affine, BadInput("nan", ([NAN], [0], [0], [0]), names="alpha1[0]")),
    (LinearAnonymousGame.from_affine, BadInput("empty", ([], [], [], []), names="alpha1")),
    (LinearAnonymousGame.from_tables, BadInput("not-affine", ([[0, 1, 3], [0, 0, 0], [0, 0, 0]], U0),
                                               names="U1[0]")),
    (LinearAnonymousGame.from_tables, BadInput("empty", ([], []), names="U1")),
    (LinearAnonymousGame.random, BadInput("n-0", (0,), names="n")),
    (LinearAnonymousGame.random, BadInput("n-float", (3.0,), names="n")),
    (LinearAnonymousGame.random, BadInput("kind", (3,), {"kind": "chaos"}, names="kind")),
    (LinearAnonymousGame.random, BadInput("seed-float", (3, 0.5), names="seed")),
    (LinearAnonymousGame, BadInput("a-string", ("12", [0, 0]), names="a")),
    (LinearAnonymousGame, BadInput("empty", ([], []), names="a")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_game_constructors_refuse(call, case):
    check_bad_inputs(call, case)


@pytest.mark.parametrize("call, case", [
    (solve_exact, BadInput("not-a-game", ([1, 2],), names="game")),
    (solve_exact, BadInput("backend", (GAME,), {"backend": "float"}, names="backend")),
    (enumerate_equilibria, BadInput("limit-negative", (GAME, -1), names="limit")),
    (enumerate_equilibria, BadInput("limit-float", (GAME, 1.5), names="limit")),
    (enumerate_equilibria, BadInput("max-players-str", (GAME,), {"max_players": "14"}, names="max_players")),
    (path_dynamics, BadInput("eps-0", (GAME, 0.0), names="eps")),
    (path_dynamics, BadInput("eps-nan", (GAME, NAN), names="eps")),
    (path_dynamics, BadInput("eps-str", (GAME, "0.1"), names="eps")),
    (path_dynamics, BadInput("step-str", (GAME, 0.1), {"step": "0.1"}, names="step")),
    (path_dynamics, BadInput("step-bool", (GAME, 0.1), {"step": True}, names="step")),
    (path_dynamics, BadInput("step-negative", (GAME, 0.1), {"step": -0.1}, names="step")),
    (path_dynamics, BadInput("max-steps-negative", (GAME, 0.1), {"max_steps": -1}, names="max_steps")),
    (path_dynamics, BadInput("max-steps-float", (GAME, 0.1), {"max_steps": 1e3}, names="max_steps")),
    (path_dynamics, BadInput("normalize-str", (GAME, 0.1), {"normalize": "yes"}, names="normalize")),
    (sequential_best_response, BadInput("eps-2", (GAME, 2.0), names="eps")),
    (sequential_best_response, BadInput("rule", (GAME, 0.1), {"rule": "random"}, names="rule")),
    (sequential_best_response, BadInput("start", (GAME, 0.1), {"start": "middle"}, names="start")),
    (sequential_best_response, BadInput("start-range", (GAME, 0.1), {"start": [0, 1, 2]}, names="start")),
    (sequential_best_response, BadInput("max-steps", (GAME, 0.1), {"max_steps": -1}, names="max_steps")),
    (sequential_best_response, BadInput("step-nan", (GAME, 0.1), {"step": NAN}, names="step")),
    (sequential_best_response, BadInput("step-str", (GAME, 0.1), {"step": "a"}, names="step")),
    (sequential_best_response, BadInput("normalize-int", (GAME, 0.1), {"normalize": 2}, names="normalize")),
    (sequential_best_response, BadInput("cycles-str", (GAME, 0.1), {"detect_cycles": "no"},
                                        names="detect_cycles")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_solvers_refuse_and_leave_the_game(call, case):
    before = GAME.to_dict()
    check_bad_inputs(call, case, target=GAME)
    assert GAME.to_dict() == before


def test_poisson_binomial_is_the_brute_force_law():
    """Independent reference: enumerate all 2^3 outcomes."""
    from itertools import product

    probs = [Fraction(1, 3), Fraction(1, 2), Fraction(3, 4)]
    law = [Fraction(0)] * 4
    for bits in product((0, 1), repeat=3):
        w = Fraction(1)
        for q, x in zip(probs, bits):
            w *= q if x else 1 - q
        law[sum(bits)] += w
    assert poisson_binomial(probs) == law


# ---------------------------------------------------------------------------------------- declared constraints
@pytest.mark.parametrize("func, valid", [
    (sequential_best_response, {"game": GAME, "eps": 0.1}),
    (path_dynamics, {"game": GAME, "eps": 0.1}),
    (dumps_nfg, {"game": GAME}),
    (parse_gambit_profile, {"line": "NE,1,0", "n": 1}),
    (minmax_curvature, {"game": GAME}),
    (potential_hessian, {"game": GAME}),
], ids=lambda x: getattr(x, "__name__", ""))
def test_declared_constraints_refuse_every_generated_bad_call(func, valid):
    """Each generated call replaces one declared argument by a refused value: the error names that argument."""
    import inspect

    from neurips26.constraints import bad_inputs

    defaults = {k: p.default for k, p in inspect.signature(func).parameters.items()
                if p.default is not inspect.Parameter.empty}
    base = defaults | valid
    cases = bad_inputs(func, **valid)
    assert cases
    before = GAME.to_dict()
    for kwargs, exc in cases:
        (changed,) = [k for k in func.__constraints__ if kwargs[k] is not base.get(k)]
        with pytest.raises(exc, match=changed):
            func(**kwargs)
    assert GAME.to_dict() == before
