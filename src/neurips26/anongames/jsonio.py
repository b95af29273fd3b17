"""A small JSON format for anonymous games, read exactly.

Two kinds (``"format"`` is optional, ``"kind"`` may be inferred from the fields):

    {"format": "anongames/v1", "kind": "linear", "a": [2, -1, "1/3"], "b": [-1, 1, 0]}
    {"format": "anongames/v1", "kind": "tables",
     "U1": [[u_0(1, m=0), u_0(1, m=1), ...], ...],  "U0": [[...], ...]}     # n rows of n entries

Numbers may be JSON integers, JSON decimals (read as exact decimals: ``0.1`` is 1/10, never a binary
float) or strings like ``"3/7"``. ``NaN``/``Infinity`` are refused. Errors are :class:`GameFileError`
(a ValueError) whose message names the file, the line and the field (``U1[2][3]``).
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

from neurips26.constraints import validate

from .exact import to_fraction
from .game import GAME, LinearAnonymousGame

FORMAT = "anongames/v1"


class GameFileError(ValueError):
    """A malformed game file; the message names the source, line and field."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not allowed")


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:  # json.loads would keep the last silently
            raise _DuplicateKey(f"duplicate field {key!r}")
        out[key] = value
    return out


def _line_of(text: str, key: str, indices: tuple[int, ...] = ()) -> int | None:
    """Best-effort line (1-based) of ``key`` and, inside its value, of ``[i][j]...``."""
    pos = text.find(f'"{key}"')
    if pos < 0:
        return None
    pos = text.find(":", pos) + 1
    for index in indices:
        # advance to the opening bracket of this level, then to the index-th element
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text) or text[pos] != "[":
            break
        pos += 1
        depth, count, in_str = 0, 0, False
        while pos < len(text) and count < index:
            ch = text[pos]
            if in_str:
                if ch == "\\":
                    pos += 1
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                count += 1
            pos += 1
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
    return text.count("\n", 0, max(pos, 0)) + 1


def _fail(source: str, text: str, message: str, key: str | None = None, indices: tuple[int, ...] = ()) -> NoReturn:
    line = _line_of(text, key, indices) if key else None
    where = f"{source}:{line}" if line else source
    raise GameFileError(f"{where}: {message}")


def _number(source: str, text: str, value: Any, key: str, indices: tuple[int, ...]) -> Fraction:
    field = key + "".join(f"[{i}]" for i in indices)
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str)):
        _fail(source, text, f"field {field}: expected a number or a string like '3/7', "
                            f"got {type(value).__name__} {value!r}", key, indices)
    try:
        return to_fraction(value, field)
    except (TypeError, ValueError) as err:
        _fail(source, text, f"field {err}", key, indices)


def _vector(source: str, text: str, data: dict[str, Any], key: str) -> list[Fraction]:
    if key not in data:
        _fail(source, text, f"missing field {key!r}")
    values = data[key]
    if not isinstance(values, list):
        _fail(source, text, f"field {key}: expected a list of numbers, got {type(values).__name__}", key)
    return [_number(source, text, v, key, (i,)) for i, v in enumerate(values)]


def _table(source: str, text: str, data: dict[str, Any], key: str, n: int | None) -> list[list[Fraction]]:
    if key not in data:
        _fail(source, text, f"missing field {key!r}")
    rows = data[key]
    if not isinstance(rows, list) or not rows:
        _fail(source, text, f"field {key}: expected a non-empty list of n rows", key)
    n = len(rows) if n is None else n
    if len(rows) != n:
        _fail(source, text, f"field {key}: expected {n} rows (one per player), got {len(rows)}", key)
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, list):
            _fail(source, text, f"field {key}[{i}]: expected a list of {n} payoffs, got {type(row).__name__}",
                  key, (i,))
        if len(row) != n:
            _fail(source, text, f"field {key}[{i}]: ragged table, expected {n} entries (m = 0..{n - 1}), "
                                f"got {len(row)}", key, (i,))
        out.append([_number(source, text, v, key, (i, m)) for m, v in enumerate(row)])
    return out


def _json_error(source: str, text: str, err: Exception) -> str:
    """The message of a JSON text ``json.loads`` refused: the source, the line where known, what is wrong."""
    if isinstance(err, json.JSONDecodeError):
        return f"{source}:{err.lineno}: malformed JSON: {err.msg} (column {err.colno})"
    if isinstance(err, RecursionError):
        return f"{source}: malformed game: JSON nested too deeply"
    line = None
    if isinstance(err, _DuplicateKey):
        key = str(err).split("'")[1] if "'" in str(err) else ""
        pos = text.find(f'"{key}"', text.find(f'"{key}"') + 1) if key else -1
        line = text.count("\n", 0, pos) + 1 if pos >= 0 else None
    else:  # NaN / Infinity
        token = str(err).split()[2] if len(str(err).split()) > 2 else ""
        line = text.count("\n", 0, max(text.find(token), 0)) + 1 if token else None
    return f"{source}{f':{line}' if line else ''}: {err}"


def parse_game_text(text: str, *, source: str = "<string>") -> dict[str, Any]:
    """Parse and validate; returns ``{"kind": "linear", "a", "b"}`` or ``{"kind": "tables", "U1", "U0"}``."""
    try:
        data = json.loads(text, parse_float=Decimal, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except (RecursionError, ValueError) as err:  # ValueError: malformed JSON, a duplicate field, NaN / Infinity
        raise GameFileError(_json_error(source, text, err)) from None
    if not isinstance(data, dict):
        raise GameFileError(f"{source}:1: expected a JSON object with fields 'a'/'b' or 'U1'/'U0', "
                            f"got {type(data).__name__}")
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        _fail(source, text, f"field format: expected {FORMAT!r}, got {fmt!r}", "format")
    kind = data.get("kind")
    if kind is None:
        kind = "linear" if "a" in data or "b" in data else "tables" if "U1" in data or "U0" in data else None
    if kind == "linear":
        a = _vector(source, text, data, "a")
        b = _vector(source, text, data, "b")
        if not a:
            _fail(source, text, "field a: expected n >= 1 players, got an empty list", "a")
        if len(a) != len(b):
            _fail(source, text, f"field b: expected {len(a)} entries (as many as a), got {len(b)}", "b")
        return {"kind": "linear", "a": a, "b": b}
    if kind == "tables":
        u1 = _table(source, text, data, "U1", None)
        u0 = _table(source, text, data, "U0", len(u1))
        return {"kind": "tables", "U1": u1, "U0": u0}
    _fail(source, text, f"field kind: expected 'linear' or 'tables' (or fields a/b or U1/U0), got {kind!r}",
          "kind" if "kind" in data else None)


def loads_game(text: str, *, source: str = "<string>") -> LinearAnonymousGame:
    """A :class:`LinearAnonymousGame` from JSON text (tables must be affine in ``m``)."""
    spec = parse_game_text(text, source=source)
    if spec["kind"] == "linear":
        return LinearAnonymousGame(spec["a"], spec["b"])
    return linear_game(spec["U1"], spec["U0"], source=source)


def linear_game(U1: list[list[Fraction]], U0: list[list[Fraction]], *, source: str) -> LinearAnonymousGame:
    """The linear game of payoff tables read from ``source`` (a :class:`GameFileError` if not affine in m)."""
    try:
        return LinearAnonymousGame.from_tables(U1, U0)
    except ValueError as err:
        raise GameFileError(f"{source}: {err}") from None


def read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = "no such file" if isinstance(err, FileNotFoundError) else f"cannot read: {err}"
        raise GameFileError(f"{path}: {reason}") from None


def load_game(path: str | Path) -> LinearAnonymousGame:
    """A :class:`LinearAnonymousGame` from a JSON file (see the module docstring for the format)."""
    return loads_game(read_text(path), source=str(path))


def load_tables(path: str | Path) -> tuple[list[list[Fraction]], list[list[Fraction]]]:
    """Payoff tables ``(U1, U0)`` of any two-action anonymous game in a JSON file (linear games expanded)."""
    spec = parse_game_text(read_text(path), source=str(path))
    if spec["kind"] == "tables":
        return spec["U1"], spec["U0"]
    return LinearAnonymousGame(spec["a"], spec["b"]).payoff_tables()


@validate(game=GAME)
def dumps_game(game: LinearAnonymousGame, *, tables: bool = False) -> str:
    """JSON text for ``game`` (numbers as exact strings); ``tables=True`` writes the payoff tables."""
    if not tables:
        return json.dumps(game.to_dict())
    u1, u0 = game.payoff_tables()
    return json.dumps({"format": FORMAT, "kind": "tables", "U1": [[str(v) for v in row] for row in u1],
                       "U0": [[str(v) for v in row] for row in u0]})
