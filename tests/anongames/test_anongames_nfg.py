"""Gambit's .nfg format: our reader and writer against hand-written files and, where installed, pygambit."""

import itertools
import json
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _strategies import FAST
from neurips26.anongames import (
    GameFileError,
    LinearAnonymousGame,
    dumps_nfg,
    format_gambit_profile,
    loads_nfg,
    loads_nfg_tables,
    parse_gambit_profile,
    solve_exact,
)
from neurips26.anongames.cli import main
from neurips26.anongames.nfg import parse_nfg

# matching pennies with 2 players in the payoff version, written by hand: player 1 (index 0) wants to
# match, player 2 wants to mismatch. Profiles: (s1,s1), (s2,s1), (s1,s2), (s2,s2).
PENNIES = '''NFG 1 R "pennies" { "Ann" "Bob" } { 2 2 }
"a comment"
1 -1   -1 1   -1 1   1 -1
'''
# the same game in the outcome version
PENNIES_OUTCOMES = '''NFG 1 R "pennies" { "Ann" "Bob" }
{ { "H" "T" } { "H" "T" } }
""
{ { "match" 1, -1 } { "miss" -1, 1 } }
1 2 2 1
'''


def test_hand_written_payoff_and_outcome_versions():
    for text in (PENNIES, PENNIES_OUTCOMES):
        title, players, payoffs = parse_nfg(text)
        assert title == "pennies" and players == ["Ann", "Bob"]
        assert payoffs == [[1, -1], [-1, 1], [-1, 1], [1, -1]]
        u1, u0 = loads_nfg_tables(text)
        # Ann (i = 0) playing s2 ("1") with m others at 1: m = 0 -> -1, m = 1 -> 1
        assert u1[0] == [-1, 1] and u0[0] == [1, -1] and u1[1] == [1, -1] and u0[1] == [-1, 1]
        game = loads_nfg(text)
        assert solve_exact(game).profile == [Fraction(1, 2), Fraction(1, 2)]


@pytest.mark.parametrize("kind", ["random", "hard", "degenerate"])
def test_round_trip(kind):
    for n in (1, 2, 5):
        game = LinearAnonymousGame.random(n, 3, kind)
        back = loads_nfg(dumps_nfg(game))
        # with n = 1 nobody else exists, so the slope a is not in the file: compare the tables then
        assert back == game if n > 1 else back.payoff_tables() == game.payoff_tables()
        _, _, payoffs = parse_nfg(dumps_nfg(game))
        u1, u0 = game.payoff_tables()
        for k, row in enumerate(payoffs):   # independent expansion of the tables, profile by profile
            acts = [(k >> i) & 1 for i in range(n)]
            for i in range(n):
                m = sum(acts) - acts[i]
                assert row[i] == (u1 if acts[i] else u0)[i][m]


def test_numbers_decimals_and_rationals_are_exact():
    text = 'NFG 1 D "x" { "1" } { 2 }\n0.1 3/7\n'
    assert parse_nfg(text)[2] == [[Fraction(1, 10)], [Fraction(3, 7)]]


@pytest.mark.parametrize("text, match", [
    ('NFG 2 R "x" { "1" } { 2 }\n0 1', "version"),
    ('NFG 1 R "x" { "1" "2" } { 2 3 }\n' + "0 " * 12, "3 strategies"),
    ('NFG 1 R "x" { "1" } { 2 }\n0', "end of the file"),
    ('NFG 1 R "x" { "1" } { 2 }\n0 1 2', "after the 2 profiles"),
    ('NFG 1 R "x" { "1" } { 2 }\n0 nan', "payoff"),
    ('NFG 1 R "x" { "1" } { 2 }\n0 1/0', "payoff"),
    ('{"a": [1]}', "NFG"),
    ('NFG 1 R "x" { "1" "2" }\n{ { "a" "b" } { "a" "b" } }\n""\n{ { "" 1, 2 } }\n1 1 1 2', "outcome 2"),
])
def test_malformed_files_name_the_problem(text, match):
    with pytest.raises(GameFileError, match=match):
        loads_nfg_tables(text)


def test_non_anonymous_game_is_refused_naming_the_profile():
    # player 1's payoff at (s2, s1, s2) differs from (s2, s2, s1): it cares *who* plays 1
    payoffs = [[0, 0, 0]] * 8
    payoffs = [list(r) for r in payoffs]
    payoffs[5][0] = 1   # profile 6: actions 101
    text = 'NFG 1 R "x" { "1" "2" "3" } { 2 2 2 }\n' + "\n".join(" ".join(map(str, r)) for r in payoffs)
    with pytest.raises(GameFileError, match="not an anonymous game: player 1"):
        loads_nfg_tables(text)


def test_non_linear_anonymous_game_reads_as_tables_but_not_as_linear():
    # u_1(1, m) = m^2: anonymous but not affine in m
    game_rows = []
    for k in range(8):
        acts = [(k >> i) & 1 for i in range(3)]
        game_rows.append([(sum(acts) - 1) ** 2 if acts[0] else 0, 0, 0])
    text = 'NFG 1 R "x" { "1" "2" "3" } { 2 2 2 }\n' + "\n".join(" ".join(map(str, r)) for r in game_rows)
    u1, _ = loads_nfg_tables(text)
    assert u1[0] == [0, 1, 4]
    with pytest.raises(GameFileError, match="not affine"):
        loads_nfg(text)


def test_writer_refuses_large_games_and_non_games():
    with pytest.raises(ValueError, match="n <= 16"):
        dumps_nfg(LinearAnonymousGame([1] * 17, [0] * 17))
    with pytest.raises(TypeError, match="game"):
        dumps_nfg({"a": [1]})


def test_gambit_profile_line():
    prof = [Fraction(1, 2), Fraction(1), Fraction(0)]
    line = format_gambit_profile(prof)
    assert line == "NE,1/2,1/2,0,1,1,0"
    assert parse_gambit_profile(line, 3) == prof
    with pytest.raises(ValueError, match="sum to"):
        parse_gambit_profile("NE,1/2,1/3", 1)
    with pytest.raises(ValueError, match="2 probabilities"):
        parse_gambit_profile("NE,1,0,1", 1)
    with pytest.raises(ValueError, match=r"profile\[0\]"):
        format_gambit_profile([math.nan])


def test_cli_reads_nfg_and_prints_gambit_line(tmp_path, capsys):
    path = tmp_path / "pennies.nfg"
    path.write_text(PENNIES)
    assert main(["solve", str(path), "--output", "gambit"]) == 0
    assert capsys.readouterr().out.strip() == "NE,1/2,1/2,1/2,1/2"
    assert main(["verify", str(path), "--profile", "1,0"]) == 0
    assert "not a Nash equilibrium" in capsys.readouterr().out
    assert main(["convert", str(path), "--to", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["a"] == ["4", "-4"]   # D(m) = U1 - U0 = -2 + 4m
    assert main(["random", "3", "--kind", "hard", "--format", "nfg"]) == 0
    out = capsys.readouterr().out
    assert loads_nfg(out) == LinearAnonymousGame.random(3, 0, "hard")
    bad = tmp_path / "bad.nfg"
    bad.write_text('NFG 1 R "x" { "1" } { 2 }\n0')
    assert main(["solve", str(bad)]) == 2
    assert "bad.nfg:2" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------- against pygambit
def _gambit_payoffs(g):
    players = list(g.players)
    out = {}
    for acts in itertools.product((0, 1), repeat=len(players)):
        strategies = [list(p.strategies)[a] for p, a in zip(players, acts)]
        out[acts] = [Fraction(str(g[strategies][p])) for p in players]
    return out


@pytest.mark.parametrize("kind", ["random", "hard"])
def test_pygambit_reads_what_we_write(tmp_path, kind):
    pygambit = pytest.importorskip("pygambit")
    game = LinearAnonymousGame.random(4, 1, kind)
    path = tmp_path / "g.nfg"
    path.write_text(dumps_nfg(game))
    theirs = _gambit_payoffs(pygambit.read_nfg(str(path)))
    u1, u0 = game.payoff_tables()
    for acts, row in theirs.items():
        for i, v in enumerate(row):
            m = sum(acts) - acts[i]
            assert v == (u1 if acts[i] else u0)[i][m]


@pytest.mark.parametrize("kind", ["random", "hard"])
def test_we_read_what_pygambit_writes(kind):
    pytest.importorskip("pygambit")
    game = LinearAnonymousGame.random(4, 2, kind)
    g = game.to_gambit()           # per-player integer scaling: compare against Gambit's own numbers
    _, _, payoffs = parse_nfg(g.to_nfg())
    theirs = _gambit_payoffs(g)
    for k, row in enumerate(payoffs):
        acts = tuple((k >> i) & 1 for i in range(4))
        assert row == theirs[acts]
    # and the game read back is the same up to the positive per-player scaling: same thresholds and classes
    back = loads_nfg(g.to_nfg())
    assert back.thresholds == game.thresholds and back.classes == game.classes


def test_gambit_max_regret_of_our_equilibrium_is_zero():
    pytest.importorskip("pygambit")
    from neurips26.anongames.baselines import brute_force_pure, gambit_max_regret, gambit_pure_count

    for seed in range(3):
        game = LinearAnonymousGame.random(5, seed, "hard")
        assert gambit_max_regret(game, solve_exact(game).profile) == 0
        assert gambit_max_regret(game, [Fraction(0)] * 5) > 0
        g2 = LinearAnonymousGame.random(5, seed, "ties")
        assert gambit_pure_count(g2) == len(brute_force_pure(g2))


# ---------------------------------------------------------------------------------------- fuzz
_PIECES = st.sampled_from(['NFG', '1', 'R', 'D', '"t"', '{', '}', '"1"', '"2"', '2', '3', '0', '-1', '1/2', '0.5',
                           '1/0', 'nan', 'x', ',', '""', '\n', '"a\\"b"', '1e9999'])


@FAST
@given(st.lists(_PIECES, max_size=40).map(" ".join))
def test_fuzz_nfg_reader_fails_only_with_game_file_errors(text):
    try:
        u1, u0 = loads_nfg_tables(text)
    except GameFileError:
        return
    assert len(u1) == len(u0) >= 1


@FAST
@given(st.text(max_size=200))
def test_fuzz_nfg_reader_on_arbitrary_text(text):
    try:
        loads_nfg_tables("NFG 1 R " + text)
    except GameFileError:
        pass
