"""Side by side: exact NE of linear anonymous games, ours vs peers (not run in CI).

    .venv/bin/python benchmarks/anongames_bench.py [--ns 2 4 6 8 10 100 1000 10000] [--kind hard] [--timeout 30]

Methods (each on the same seeded game per n; every returned profile is checked with exact regrets):
  sweep      solve_exact, O(n log n) (ours)
  scan       the naive per-piece scan (same path, every point evaluated from scratch)
  enum       support enumeration over 3^n patterns (all NE; n <= 10)
  gambit-*   pygambit solvers on the n*2^n normal form, subprocess + timeout (only if pygambit is installed)
  nashpy     support enumeration for n = 2 (only if nashpy is installed)
Times are wall clock on whatever machine runs this; the ratio column (time / time of ours at that n)
is the comparable number. Shared machines make absolute times noisy.
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

from neurips26.anongames import LinearAnonymousGame, enumerate_equilibria, solve_exact
from neurips26.anongames.baselines import gambit_available, gambit_solve, nashpy_equilibria


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[2, 4, 6, 8, 10, 100, 1000, 10_000])
    parser.add_argument("--kind", default="hard")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per Gambit solver call")
    parser.add_argument("--gambit", nargs="*", default=["enumpure", "enumpoly", "simpdiv", "logit", "gnm"])
    args = parser.parse_args()

    try:
        import nashpy  # noqa: F401
        have_nashpy = True
    except ImportError:
        have_nashpy = False
    rows = []
    for n in args.ns:
        game = LinearAnonymousGame.random(n, args.seed, args.kind)
        res, t_ours = _timed(lambda g=game: solve_exact(LinearAnonymousGame(g.a, g.b)))
        rows.append((n, "sweep (ours)", t_ours, "exact, regret " + str(game.max_regret(res.profile))))
        if n <= 3000:
            scan, t = _timed(lambda g=game: solve_exact(g, method="scan"))
            rows.append((n, "naive scan", t, "exact, regret " + str(game.max_regret(scan.profile))))
        if n <= 10:
            eqs, t = _timed(lambda g=game: list(enumerate_equilibria(g)))
            ok = all(game.max_regret(e) == 0 for e in eqs)
            rows.append((n, "support enum (all NE)", t, f"{len(eqs)} patterns, all exact: {ok}"))
        if have_nashpy and n == 2:
            eqs, t = _timed(lambda g=game: nashpy_equilibria(g))
            worst = max((float(game.max_regret([Fraction(x) for x in e])) for e in eqs), default=None)
            rows.append((n, "nashpy support_enumeration", t, f"{len(eqs)} NE, max regret {worst:.2g}"))
        if gambit_available() and n <= 16:
            for solver in args.gambit:
                out = gambit_solve(game, solver, timeout_s=args.timeout)
                note = out["status"]
                if out["status"] == "ok":
                    note = f"{len(out['equilibria'])} NE, our exact regret {out.get('max_regret_exact')}"
                rows.append((n, f"gambit {solver}", out["seconds"], note))
    if not gambit_available():
        print("(pygambit not installed: Gambit rows skipped; pip install pygambit to add them)")
    if not have_nashpy:
        print("(nashpy not installed: nashpy row skipped)")
    ours = {n: t for n, m, t, _ in rows if m == "sweep (ours)"}
    print(f"{'n':>6}  {'method':<28} {'time (s)':>10} {'ratio':>10}  result")
    for n, method, t, note in rows:
        ts = f"{t:.4g}" if t is not None else "-"
        ratio = f"{t / ours[n]:.3g}x" if t is not None and ours.get(n) else "-"
        print(f"{n:>6}  {method:<28} {ts:>10} {ratio:>10}  {note}")


if __name__ == "__main__":
    main()
