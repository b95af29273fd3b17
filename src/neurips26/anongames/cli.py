"""``neurips26 anongames ...``: solve, verify and enumerate games given as JSON or Gambit ``.nfg`` files.

    neurips26 anongames solve GAME [--output text|json|gambit] [--model-free | --no-model-free]
    neurips26 anongames verify GAME --profile "1/2,0,1"
    neurips26 anongames enumerate GAME [--limit N]
    neurips26 anongames random N [--seed S] [--kind hard] [--format json|tables|nfg]
    neurips26 anongames convert GAME --to json|tables|nfg

GAME is a JSON file of this package (see ``jsonio``) or a Gambit strategic-form ``.nfg`` file with two
strategies per player (recognised by its ``NFG`` header, whatever the file name). ``--output gambit``
prints the equilibrium as Gambit's solvers do: ``NE,p_0(s1),p_0(s2),...``.

Exit codes: 0 success, 2 bad input (one line naming the file, line and field), 1 internal failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from .game import GAME_KINDS, LinearAnonymousGame, as_profile
from .jsonio import GameFileError, dumps_game, loads_game, parse_game_text, read_text
from .nfg import dumps_nfg, format_gambit_profile, loads_nfg, loads_nfg_tables
from .solve import enumerate_equilibria, solve_exact
from .verify import verify_anonymous

MODEL_FREE_MAX_N = 60  # the O(n^3) Poisson-binomial check runs by default up to this many players


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise GameFileError(f"neurips26 anongames: {message}")


@contextmanager
def _refused(command: str, *errors: type[Exception]) -> Iterator[None]:
    """Report ``errors`` raised inside as one line (a :class:`GameFileError`) naming the command."""
    try:
        yield
    except errors as err:
        raise GameFileError(f"neurips26 anongames{' ' + command if command else ''}: {err}") from None


def _is_nfg(text: str) -> bool:
    return text.lstrip().startswith("NFG")


def _load_game(path: str) -> LinearAnonymousGame:
    """A linear game from a JSON or ``.nfg`` file (tables must be affine in the count of others)."""
    text = read_text(path)
    return loads_nfg(text, source=path) if _is_nfg(text) else loads_game(text, source=path)


def _load_tables(path: str) -> tuple[list, list]:
    """Payoff tables ``(U1, U0)`` of any two-action anonymous game in a JSON or ``.nfg`` file."""
    text = read_text(path)
    if _is_nfg(text):
        return loads_nfg_tables(text, source=path)
    spec = parse_game_text(text, source=path)
    if spec["kind"] == "tables":
        return spec["U1"], spec["U0"]
    return LinearAnonymousGame(spec["a"], spec["b"]).payoff_tables()


def _dump(game: LinearAnonymousGame, fmt: str) -> str:
    if fmt == "nfg":
        with _refused("", ValueError):
            return dumps_nfg(game).rstrip("\n")
    return dumps_game(game, tables=fmt == "tables")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="neurips26 anongames", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    solve = sub.add_parser("solve", help="one exact Nash equilibrium, verified")
    solve.add_argument("file")
    solve.add_argument("--output", choices=("text", "json", "gambit"), default="text",
                       help="text (default), json, or gambit: one line 'NE,...' as Gambit's solvers print")
    solve.add_argument("--json", action="store_const", const="json", dest="output", help="same as --output json")
    mf = solve.add_mutually_exclusive_group()
    mf.add_argument("--model-free", dest="model_free", action="store_true", default=None,
                    help=f"also run the O(n^3) table-based check (default: on when n <= {MODEL_FREE_MAX_N})")
    mf.add_argument("--no-model-free", dest="model_free", action="store_false")
    verify = sub.add_parser("verify", help="exact regrets of a profile (any anonymous game, from tables)")
    verify.add_argument("file")
    verify.add_argument("--profile", required=True, help="comma-separated probabilities, e.g. '1/2,0,1'")
    enum = sub.add_parser("enumerate", help="all equilibria by support pattern (n <= 14)")
    enum.add_argument("file")
    enum.add_argument("--limit", type=int, default=None)
    rnd = sub.add_parser("random", help="print a random game as JSON")
    rnd.add_argument("n", type=int)
    rnd.add_argument("--seed", type=int, default=0)
    rnd.add_argument("--kind", default="random", choices=GAME_KINDS)
    rnd.add_argument("--format", choices=("json", "tables", "nfg"), default="json",
                     help="json (a/b), tables (JSON payoff tables) or nfg (Gambit strategic form, n <= 16)")
    rnd.add_argument("--tables", action="store_const", const="tables", dest="format",
                     help="same as --format tables")
    conv = sub.add_parser("convert", help="write a game file in another format")
    conv.add_argument("file")
    conv.add_argument("--to", required=True, choices=("json", "tables", "nfg"))
    return parser


def _describe(game: LinearAnonymousGame) -> str:
    classes = game.classes
    return f"n={game.n} (complements C={classes.count('C')}, substitutes U={classes.count('U')}, " \
           f"constant D={classes.count('D')})"


def _cmd_solve(args: argparse.Namespace) -> int:
    game = _load_game(args.file)
    model_free = game.n <= MODEL_FREE_MAX_N if args.model_free is None else args.model_free
    result = solve_exact(game, model_free=model_free)
    if args.output == "gambit":
        print(format_gambit_profile(result.profile))
        return 0
    if args.output == "json":
        print(json.dumps({"profile": [str(v) for v in result.profile], "S": str(result.total),
                          "piece": result.piece, "max_regret": str(result.max_regret),
                          "certificate": result.certificate}))
        return 0
    print(f"game: {args.file}, {_describe(game)}")
    print("Nash equilibrium (exact; p[i] = probability that player i plays 1):")
    width = len(str(game.n - 1))
    for i, v in enumerate(result.profile):
        print(f"  p[{i:>{width}}] = {v}")
    print(f"expected number of players at 1: S = {result.total}")
    print(f"found on path piece {result.piece}; {len(result.mixers)} mixing player(s)")
    print(f"verification: max regret = {result.certificate['max_regret']} (first-moment formula, exact)")
    if model_free:
        print(f"verification: max regret = {result.certificate['model_free_max_regret']} "
              "(model-free Poisson-binomial check on the payoff tables, exact)")
    print("result: exact Nash equilibrium (every regret is exactly 0)")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    u1, u0 = _load_tables(args.file)
    parts = [x.strip() for x in args.profile.split(",")]
    with _refused("verify", TypeError, ValueError):
        prof = as_profile(parts, len(u1), name="--profile")
    regrets = verify_anonymous(u1, u0, prof)
    for i, r in enumerate(regrets):
        print(f"  regret[{i}] = {r}")
    worst = max(regrets)
    print(f"max regret = {worst} (model-free, exact): "
          + ("an exact Nash equilibrium" if worst == 0 else "not a Nash equilibrium"))
    return 0


def _cmd_enumerate(args: argparse.Namespace) -> int:
    game = _load_game(args.file)
    if args.limit is not None and args.limit < 0:
        raise GameFileError(f"neurips26 anongames enumerate: --limit must be >= 0, got {args.limit}")
    count = 0
    with _refused("enumerate", ValueError):
        for prof in enumerate_equilibria(game, args.limit):
            count += 1
            print("  [" + ", ".join(str(v) for v in prof) + "]")
    print(f"{count} equilibrium pattern(s)")
    return 0


def _cmd_random(args: argparse.Namespace) -> int:
    with _refused("random", ValueError):
        game = LinearAnonymousGame.random(args.n, args.seed, args.kind)
    print(_dump(game, args.format))
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    print(_dump(_load_game(args.file), args.to))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
        return {"solve": _cmd_solve, "verify": _cmd_verify, "enumerate": _cmd_enumerate,
                "random": _cmd_random, "convert": _cmd_convert}[args.command](args)
    except GameFileError as err:
        print(str(err).splitlines()[0], file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)


if __name__ == "__main__":
    sys.exit(main())
