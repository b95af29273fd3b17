"""The JSON reader and `neurips26 anongames ...`."""

import json
from fractions import Fraction

import pytest

from neurips26.anongames import GameFileError, LinearAnonymousGame, dumps_game, loads_game
from neurips26.anongames.cli import main
from neurips26.cli import main as top_main


def _write(tmp_path, text, name="g.json"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_round_trip_and_exact_decimals():
    game = LinearAnonymousGame.random(5, 2, "hard")
    assert loads_game(dumps_game(game)) == game
    assert loads_game(dumps_game(game, tables=True)) == game
    g = loads_game('{"a": [0.1, "1/3"], "b": [1, -2.5]}')
    assert g.a == (Fraction(1, 10), Fraction(1, 3)) and g.b == (1, Fraction(-5, 2))


def test_solve_prints_exact_equilibrium(tmp_path, capsys):
    path = _write(tmp_path, json.dumps({"a": [2, -2], "b": [-1, 1]}))
    assert main(["solve", path]) == 0
    out = capsys.readouterr().out
    assert "p[0] = 1/2" in out and "p[1] = 1/2" in out
    assert "max regret = 0 (first-moment" in out and "model-free" in out
    assert top_main(["anongames", "solve", path, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == ["1/2", "1/2"] and data["max_regret"] == "0"


def test_tables_file_and_verify(tmp_path, capsys):
    game = LinearAnonymousGame.random(4, 0, "hard")
    path = _write(tmp_path, dumps_game(game, tables=True))
    assert main(["solve", path]) == 0
    capsys.readouterr()
    assert main(["verify", path, "--profile", "0,0,0,0"]) == 0
    assert "not a Nash equilibrium" in capsys.readouterr().out
    assert main(["enumerate", path, "--limit", "2"]) == 0


@pytest.mark.parametrize("text, fragment", [
    ('{"a": [1, 2],\n "b": [1, 2, 3]}', ":2: field b: expected 2 entries"),
    ('{"kind": "tables",\n "U1": [[1, 2],\n [3]],\n "U0": [[0, 0], [0, 0]]}', ":3: field U1[1]: ragged table"),
    ('{"a": [1, 2,\n "b": [1]}', ":2: malformed JSON"),
    ('{"a": [1, NaN], "b": [1, 2]}', "non-finite"),
    ('{"a": [1, "x"],\n "b": [1, 2]}', ":1: field a[1]"),
    ('{"a": [1, true], "b": [1, 2]}', "field a[1]: expected a number"),
    ('{"a": [], "b": []}', "n >= 1"),
    ('[1, 2]', "expected a JSON object"),
    ('{"kind": "tables", "U1": [[0, 1, 3], [0, 1, 3], [0, 1, 3]], "U0": [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}',
     "not affine"),
    ('{"kind": "matrix"}', "field kind"),
])
def test_bad_files_exit_2_with_one_line(tmp_path, capsys, text, fragment):
    path = _write(tmp_path, text)
    assert main(["solve", path]) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1


def test_bad_usage_exit_2(tmp_path, capsys):
    assert main(["solve", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([]) == 2
    path = _write(tmp_path, '{"a": [1], "b": [1]}')
    assert main(["verify", path, "--profile", "2"]) == 2
    assert "[0, 1]" in capsys.readouterr().err
    with pytest.raises(GameFileError):
        loads_game("{")
