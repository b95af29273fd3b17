"""``neurips26 routing ...``: tours for your own TSPLIB files with the classical constructions.

    neurips26 routing tour FILE.tsp [--method farthest_insertion_2opt|farthest_insertion|nearest_neighbour]
                                    [--opt-tour FILE.opt.tour] [--json]

Reads a TSPLIB ``EUC_2D`` file (``vrplib``, the ``routing`` extra), builds a tour, and prints its length in the
file's own (nint) metric, the gap to ``--opt-tour`` when given, and the tour (1-based, as TSPLIB writes it).
A trained model is a Python object, not a file format: for one, use :func:`neurips26.routing.read_tsp` and
:func:`neurips26.routing.multi_start_construct` (see the README).

Exit codes: 0 success, 2 bad input (one line naming the file and what is wrong).
"""

from __future__ import annotations

import argparse
import json
import sys

from .baselines import farthest_insertion_tours, nearest_neighbour_tours, two_opt
from .tsp import optimality_gap, tour_length
from .tsplib import read_tour, read_tsp

METHODS = ("farthest_insertion_2opt", "farthest_insertion", "nearest_neighbour")


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise _UsageError(f"neurips26 routing: {' '.join(message.split())} (see --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="neurips26 routing", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    tour = sub.add_parser("tour", help="a classical tour for a TSPLIB file, its length and gap")
    tour.add_argument("file")
    tour.add_argument("--method", choices=METHODS, default="farthest_insertion_2opt")
    tour.add_argument("--opt-tour", default=None, help="a TSPLIB .tour file to measure the gap against")
    tour.add_argument("--json", action="store_true", help="one JSON object instead of text")
    return parser


def _tour(X, method: str):
    if method == "nearest_neighbour":
        return nearest_neighbour_tours(X)
    tours = farthest_insertion_tours(X)
    return two_opt(X, tours) if method == "farthest_insertion_2opt" else tours


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
        inst = read_tsp(args.file)
        opt = read_tour(args.opt_tour, n=inst.n) if args.opt_tour else None
    except _UsageError as err:
        print(str(err), file=sys.stderr)
        return 2
    except (OSError, ValueError, TypeError, ImportError) as err:
        print(f"neurips26 routing: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    tours = _tour(inst.X, args.method)
    length = float(tour_length(inst.X, tours, rounding=inst.rounding)[0])
    out = {"name": inst.name, "n": inst.n, "method": args.method, "length": length,
           "tour": [int(i) + 1 for i in tours[0]]}
    if opt is not None:
        best = float(tour_length(inst.X, opt, rounding=inst.rounding)[0])
        out.update(opt_length=best, gap_percent=float(optimality_gap(length, best)))
    if args.json:
        print(json.dumps(out))
    else:
        gap = f", gap {out['gap_percent']:.2f} % to {out['opt_length']:g}" if opt is not None else ""
        print(f"{inst.name} (n = {inst.n}, {inst.edge_weight_type}): {args.method} length {length:g}{gap}")
        print("tour: " + " ".join(str(i) for i in out["tour"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
