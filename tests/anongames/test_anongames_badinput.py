"""anongames' error contract (issue 16): a 40-byte file with a huge exponent is refused at once, not hung on."""

import math
from fractions import Fraction

import pytest

from _badinput import BadInput, check_bad_inputs
from neurips26.anongames import LinearAnonymousGame, solve_exact
from neurips26.anongames.game import as_fraction
from neurips26.anongames.jsonio import GameFileError, parse_game_text


@pytest.mark.timeout(10)
@pytest.mark.parametrize("text", ['{"a": [1e999999999, 1], "b": [0, 1]}', '{"a": ["1e999999999", 1], "b": [0, 1]}',
                                  '{"a": ["1e-99999999999999", 1], "b": [0, 1]}'])
def test_huge_exponents_are_refused_quickly(text):
    with pytest.raises(GameFileError, match="exponent"):
        parse_game_text(text)


def test_ordinary_exponents_still_read_exactly():
    assert as_fraction("1e3") == 1000 and as_fraction("2.5e-2") == Fraction(1, 40)
    assert parse_game_text('{"a": [1e2, -1], "b": [0, 1]}')["a"][0] == 100


@pytest.mark.parametrize("case", [
    BadInput("nan a", kwargs={"a": [math.nan, 1], "b": [0, 1]}, names="a"),
    BadInput("inf b", kwargs={"a": [1, 1], "b": [math.inf, 1]}, names="b"),
    BadInput("lengths", kwargs={"a": [1, 1, 1], "b": [0, 1]}, names=("a", "b")),
    BadInput("bool", kwargs={"a": [True, 1], "b": [0, 1]}, names="a"),
], ids=lambda c: c.id)
def test_game_constructor_refuses_bad_payoffs(case):
    check_bad_inputs(LinearAnonymousGame, case)


def test_solve_exact_refuses_an_unknown_method_without_touching_the_game():
    game = LinearAnonymousGame([2, -2, 1], [-1, 1, Fraction(-1, 2)])
    check_bad_inputs(solve_exact, BadInput("method", args=(game,), kwargs={"method": "guess"}, names="method"),
                     target=game)
