"""Gambit's strategic-form file format (``.nfg``), read and written exactly, without pygambit.

A ``.nfg`` file lists every pure profile of an ``n``-player game; Gambit, its command-line tools and
many course materials use it. Two layouts exist, and both are read:

* payoff version::

      NFG 1 R "title" { "Player 1" "Player 2" } { 2 2 }
      "optional comment"
      u1(s) u2(s)  u1(s') u2(s')  ...          # one block of n payoffs per profile

* outcome version (what ``pygambit.Game.to_nfg()`` writes)::

      NFG 1 R "title" { "Player 1" "Player 2" }
      { { "s1" "s2" } { "s1" "s2" } }
      ""
      { { "outcome name" u1, u2 } ... }         # the outcomes
      1 2 0 ...                                  # one outcome index per profile (0 = all payoffs 0)

Profiles run with the *first* player's strategy changing fastest. Numbers are integers, decimals
(read as exact decimals) or rationals ``p/q``; ``R`` (rational) and ``D`` (decimal) headers are both
accepted. Here every player must have exactly two strategies: strategy 1 is action 0 and strategy 2 is
action 1 (the order :meth:`LinearAnonymousGame.to_gambit` uses), and the game must be *anonymous*: a
player's payoff may depend only on its own action and on how many others chose action 1; the reader
names the first profile where that fails. The writer writes the payoff version (``n <= 16``:
``n 2^n`` numbers).

An equilibrium is exported in the line format of Gambit's command-line solvers,
``NE,p_0(s1),p_0(s2),p_1(s1),...`` (:func:`format_gambit_profile`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

from neurips26.constraints import Instance, Int, validate

from .exact import NUMBERS, check_lengths, to_fraction
from .game import GAME, LinearAnonymousGame, as_profile, check_size
from .jsonio import GameFileError, linear_game, read_text

MAX_WRITE_PLAYERS = 16
#: players accepted by the reader (a 2-strategy file with n players has n 2^n payoffs)
MAX_READ_PLAYERS = 20

_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<brace>[{}])|(?P<comma>,)|(?P<word>[^\s{},"]+))')


def _tokens(text: str, source: str) -> list[tuple[str, str, int]]:
    """``(kind, value, line)`` tokens; kinds ``str``, ``{``, ``}``, ``word`` (commas are separators)."""
    out = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            line = text.count("\n", 0, pos) + 1
            raise GameFileError(f"{source}:{line}: unexpected character {text[pos]!r}")
        line = text.count("\n", 0, match.start(match.lastgroup)) + 1
        kind = match.lastgroup
        if kind == "str":
            out.append(("str", match.group("str")[1:-1].replace('\\"', '"'), line))
        elif kind == "brace":
            out.append((match.group("brace"), match.group("brace"), line))
        elif kind == "word":
            out.append(("word", match.group("word"), line))
        pos = match.end()
    return out


class _Reader:
    def __init__(self, tokens: list[tuple[str, str, int]], source: str) -> None:
        self.tokens, self.pos, self.source = tokens, 0, source

    def fail(self, message: str) -> NoReturn:
        line = self.tokens[min(self.pos, len(self.tokens) - 1)][2] if self.tokens else 1
        raise GameFileError(f"{self.source}:{line}: {message}")

    def peek(self) -> str | None:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def take(self, kind: str, what: str) -> str:
        if self.peek() != kind:
            got = "the end of the file" if self.peek() is None else repr(self.tokens[self.pos][1])
            self.fail(f"expected {what}, got {got}")
        value = self.tokens[self.pos][1]
        self.pos += 1
        return value

    def strings(self, what: str) -> list[str]:
        self.take("{", f"'{{' opening the {what}")
        out = []
        while self.peek() == "str":
            out.append(self.take("str", what))
        self.take("}", f"'}}' closing the {what}")
        return out

    def number(self, what: str) -> Fraction:
        word = self.take("word", what)
        try:
            return to_fraction(word, what)
        except (TypeError, ValueError) as err:
            self.pos -= 1
            self.fail(str(err))

    def integer(self, what: str) -> int:
        word = self.take("word", what)
        if not re.fullmatch(r"\d+", word):
            self.pos -= 1
            self.fail(f"{what}: expected a non-negative integer, got {word!r}")
        return int(word)


@validate(text=Instance(str), source=Instance(str))
def parse_nfg(text: str, *, source: str = "<string>") -> tuple[str, list[str], list[list[Fraction]]]:
    """Parse a 2-strategy ``.nfg`` file: ``(title, player names, payoffs)``.

    ``payoffs[k][i]`` is player ``i``'s payoff at the ``k``-th profile (first player's strategy fastest;
    bit ``i`` of ``k`` is player ``i``'s action).
    """
    reader = _Reader(_tokens(text, source), source)
    if reader.take("word", "the header 'NFG'") != "NFG":
        reader.pos -= 1
        reader.fail("expected the header 'NFG 1 R \"title\" { players }'")
    version = reader.take("word", "the format version 1")
    if version != "1":
        reader.pos -= 1
        reader.fail(f"format version: expected 1, got {version!r}")
    if reader.take("word", "R or D") not in ("R", "D"):
        reader.pos -= 1
        reader.fail("number field: expected R (rational) or D (decimal)")
    title = reader.take("str", "the title string")
    players = reader.strings("list of player names")
    n = len(players)
    if n < 1:
        reader.fail("expected at least one player")
    if n > MAX_READ_PLAYERS:
        reader.fail(f"expected at most {MAX_READ_PLAYERS} players (n 2^n payoffs), got {n}")
    reader.take("{", "'{' opening the strategy counts or the strategy lists")
    outcome_version = reader.peek() == "{"
    if outcome_version:
        counts = []
        while reader.peek() == "{":
            counts.append(len(reader.strings("strategy names")))
        reader.take("}", "'}' closing the strategy lists")
    else:
        counts = []
        while reader.peek() == "word":
            counts.append(reader.integer("strategy count"))
        reader.take("}", "'}' closing the strategy counts")
    if len(counts) != n:
        reader.fail(f"expected strategies for {n} players, got {len(counts)}")
    for i, c in enumerate(counts):
        if c != 2:
            reader.fail(f"player {i + 1} ({players[i]!r}) has {c} strategies; a two-action anonymous game "
                        "needs exactly 2 for every player")
    if reader.peek() == "str":  # the optional comment
        reader.take("str", "comment")
    profiles = 1 << n
    if not outcome_version:
        payoffs = [[reader.number(f"payoff of player {i + 1} at profile {k + 1}") for i in range(n)]
                   for k in range(profiles)]
    else:
        reader.take("{", "'{' opening the outcome list")
        outcomes: list[list[Fraction]] = []
        while reader.peek() == "{":
            reader.take("{", "'{' opening an outcome")
            reader.take("str", "the outcome's name")
            outcomes.append([reader.number(f"payoff of player {i + 1} in outcome {len(outcomes) + 1}")
                             for i in range(n)])
            reader.take("}", f"'}}' closing outcome {len(outcomes)} ({n} payoffs)")
        reader.take("}", "'}' closing the outcome list")
        payoffs = []
        for k in range(profiles):
            index = reader.integer(f"outcome index of profile {k + 1}")
            if index > len(outcomes):
                reader.pos -= 1
                reader.fail(f"profile {k + 1}: outcome {index} does not exist ({len(outcomes)} outcomes)")
            payoffs.append(outcomes[index - 1] if index else [Fraction(0)] * n)
    if reader.peek() is not None:
        reader.fail(f"unexpected {reader.tokens[reader.pos][1]!r} after the {profiles} profiles")
    return title, players, payoffs


def anonymous_tables(payoffs: Sequence[Sequence[Fraction]], *, source: str = "<string>"
                     ) -> tuple[list[list[Fraction]], list[list[Fraction]]]:
    """``(U1, U0)`` from the full payoff list of a 2-strategy game, checking anonymity on every profile.

    ``U_a[i][m]`` is read at the first profile where player ``i`` plays ``a`` and ``m`` others play 1;
    every other profile with the same ``(i, a, m)`` must agree, else :class:`GameFileError` names it.
    """
    n = len(payoffs[0])
    tables: list[list[list[Fraction | None]]] = [[[None] * n for _ in range(n)] for _ in range(2)]
    for k, row in enumerate(payoffs):
        ones = bin(k).count("1")
        for i in range(n):
            action = (k >> i) & 1
            m = ones - action
            seen = tables[action][i][m]
            if seen is None:
                tables[action][i][m] = row[i]
            elif seen != row[i]:
                actions = "".join(str((k >> j) & 1) for j in range(n))
                raise GameFileError(f"{source}: not an anonymous game: player {i + 1} playing action {action} "
                                    f"with {m} other(s) at action 1 gets {seen} at one profile and {row[i]} at "
                                    f"profile {k + 1} (actions {actions})")
    u0, u1 = tables
    return u1, u0  # type: ignore[return-value]


def loads_nfg_tables(text: str, *, source: str = "<string>") -> tuple[list[list[Fraction]], list[list[Fraction]]]:
    """Payoff tables ``(U1, U0)`` of the anonymous game in ``.nfg`` text (any anonymous game)."""
    _, _, payoffs = parse_nfg(text, source=source)
    return anonymous_tables(payoffs, source=source)


def loads_nfg(text: str, *, source: str = "<string>") -> LinearAnonymousGame:
    """A :class:`LinearAnonymousGame` from ``.nfg`` text (anonymous, and affine in the count of others)."""
    return linear_game(*loads_nfg_tables(text, source=source), source=source)


def load_nfg(path: str | Path) -> LinearAnonymousGame:
    """A :class:`LinearAnonymousGame` from a ``.nfg`` file."""
    return loads_nfg(read_text(path), source=str(path))


def _quote(text: str) -> str:
    return '"' + text.replace('"', '\\"') + '"'


@validate(game=GAME, title=Instance(str))
def dumps_nfg(game: LinearAnonymousGame, *, title: str = "linear anonymous game") -> str:
    """The payoff-version ``.nfg`` text of ``game`` (exact rationals; ``n <= 16``).

    Strategy 1 of every player is action 0, strategy 2 is action 1, as in :meth:`~LinearAnonymousGame.to_gambit`.
    """
    n = game.n
    check_size("dumps_nfg", n, MAX_WRITE_PLAYERS, "the file lists n*2^n payoffs")
    u1, u0 = game.payoff_tables()
    head = (f"NFG 1 R {_quote(title)} {{ " + " ".join(_quote(str(i + 1)) for i in range(n)) + " } { "
            + " ".join("2" for _ in range(n)) + " }\n\n")
    lines = []
    for k in range(1 << n):
        ones = bin(k).count("1")
        row = []
        for i in range(n):
            action = (k >> i) & 1
            row.append(str((u1 if action else u0)[i][ones - action]))
        lines.append(" ".join(row))
    return head + "\n".join(lines) + "\n"


@validate(profile=NUMBERS)
def format_gambit_profile(profile: Sequence[Any]) -> str:
    """``NE,1-p_0,p_0,1-p_1,p_1,...``: a mixed profile (``p_i`` = Pr[player i plays 1]) in the line format
    of Gambit's command-line solvers, exact rationals."""
    items = list(profile)
    prof = as_profile(items, len(items), name="profile")
    check_lengths([("profile", prof)], "probabilities")
    return "NE," + ",".join(f"{1 - p},{p}" for p in prof)


@validate(line=Instance(str), n=Int(low=1))
def parse_gambit_profile(line: str, n: int) -> list[Fraction]:
    """The inverse of :func:`format_gambit_profile`: ``p_i`` = Pr[player i plays its second strategy]."""
    parts = [x.strip() for x in line.strip().split(",")]
    if parts[0] != "NE" or len(parts) != 1 + 2 * n:
        raise ValueError(f"line: expected 'NE,' followed by {2 * n} probabilities (2 per player, n={n}), got "
                         f"{line[:40]!r}")
    values = [to_fraction(x, f"line[{j + 1}]") for j, x in enumerate(parts[1:])]
    for i in range(n):
        if values[2 * i] + values[2 * i + 1] != 1:
            raise ValueError(f"line: player {i + 1}'s probabilities sum to {values[2 * i] + values[2 * i + 1]}, "
                             "expected 1")
    return as_profile(values[1::2], n, name="line")
