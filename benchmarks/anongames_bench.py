"""Side by side: exact NE of linear anonymous games, ours vs Gambit, nashpy and support enumeration (not run in CI).

    .venv/bin/python benchmarks/anongames_bench.py [--repeats 7] [--no-write]

On the shared harness (:mod:`neurips26.bench`: 1 thread, process clock, interleaved pairs, ratio intervals);
writes ``results/anongames/bench.json``. Every comparison is on the same seeded hard game (no pure NE):

* Gambit (pygambit, the real package), in this process on the ``n 2^n`` normal form, at the sizes where its
  solvers finish in seconds (the claim check's C2 runs every solver in a subprocess with a timeout up to
  n = 12); ``enumpoly`` (exact, all NE), ``logit`` (numerical path following) and ``gnm``.
* nashpy's support enumeration at n = 2 (the real package).
* our support enumeration over 3^n patterns (all NE; independent of the path), n = 8.
* the naive scan of the same path (checks the sweep's bookkeeping; not an independent method), n = 1000.

Beside each time, every row records what the peer returned: the number of equilibria, the largest exact
regret among them (our exact arithmetic on the peer's profiles) and whether ours is among them
(every coordinate within 1e-6). A scaling fit of our time over n = 10 .. 1e5 closes the table.
"""

from __future__ import annotations

import sys
from fractions import Fraction

from neurips26.anongames import LinearAnonymousGame, enumerate_equilibria, solve_exact
from neurips26.anongames.baselines import gambit_available, nashpy_equilibria
from neurips26.bench import Bench, timed

MATCH_TOL = 1e-6


def _fresh(game: LinearAnonymousGame) -> LinearAnonymousGame:
    """A copy without cached thresholds, so every timed solve does the whole work."""
    return LinearAnonymousGame(game.a, game.b)


def _agreement(game: LinearAnonymousGame, theirs: list[list[float]]) -> dict:
    mine = [float(x) for x in solve_exact(game).profile]
    clipped = [[min(max(float(x), 0.0), 1.0) for x in eq] for eq in theirs]
    return {"peer_equilibria": len(theirs),
            "peer_max_exact_regret": max((float(game.max_regret([Fraction(x) for x in eq])) for eq in clipped),
                                         default=None),
            "peer_contains_ours": any(max(abs(x - y) for x, y in zip(mine, eq)) <= MATCH_TOL for eq in clipped)}


def _gambit_profiles(result, g) -> list[list[float]]:
    players = list(g.players)
    return [[float(eq[list(p.strategies)[1]]) for p in players] for eq in result.equilibria]


def main() -> None:
    bench = Bench("anongames", description="exact NE of hard linear anonymous games (no pure NE): solve_exact "
                  "(O(n log n)) against Gambit on the normal form, nashpy, support enumeration and the naive scan",
                  argv=sys.argv[1:])
    if gambit_available():
        import pygambit

        solvers = {"enumpoly": ([4, 6], pygambit.nash.enumpoly_solve),
                   "logit": ([4, 6, 8], pygambit.nash.logit_solve), "gnm": ([4, 6], pygambit.nash.gnm_solve)}
        for solver, (ns, solve) in solvers.items():
            for n in ns:
                game = LinearAnonymousGame.random(n, 0, "hard")
                g = game.to_gambit()
                row = bench.compare(f"n = {n}, Gambit {solver}", ours=lambda gm=game: solve_exact(_fresh(gm)),
                                    peer=lambda gg=g, fn=solve: fn(gg), peer_name=f"pygambit {solver}_solve",
                                    peer_kind="real")
                row.update(_agreement(game, _gambit_profiles(solve(g), g)))
    else:
        print("(pygambit not installed: Gambit rows skipped; pip install pygambit to add them)")
    try:
        import nashpy  # noqa: F401
    except ImportError:
        print("(nashpy not installed: nashpy row skipped)")
    else:
        game = LinearAnonymousGame.random(2, 0, "hard")
        row = bench.compare("n = 2, nashpy", ours=lambda: solve_exact(_fresh(game)),
                            peer=lambda: nashpy_equilibria(game), peer_name="nashpy support_enumeration",
                            peer_kind="real")
        row.update(_agreement(game, nashpy_equilibria(game)))
    game = LinearAnonymousGame.random(8, 0, "hard")
    row = bench.compare("n = 8, all NE by support", ours=lambda: solve_exact(_fresh(game)),
                        peer=lambda: list(enumerate_equilibria(game)), peer_name="support enumeration (3^n)",
                        peer_kind="ours")
    row.update(_agreement(game, [[float(x) for x in eq] for eq in enumerate_equilibria(game)]))
    game = LinearAnonymousGame.random(1000, 0, "hard")
    row = bench.compare("n = 1000, same path", ours=lambda: solve_exact(_fresh(game)),
                        peer=lambda: solve_exact(_fresh(game), method="scan"), peer_name="naive scan",
                        peer_kind="ours")
    row.update(_agreement(game, [[float(x) for x in solve_exact(game, method="scan").profile]]))
    sizes = [10, 100, 1000, 10_000, 100_000]
    games = {n: LinearAnonymousGame.random(n, 0, "hard") for n in sizes}
    bench.scaling("solve_exact CPU time in n (hard games)", sizes=sizes,
                  time_of=lambda n: min(timed(lambda: solve_exact(_fresh(games[int(n)]))) for _ in range(3)),
                  claimed="polynomial in n (ours: O(n log n) -> slope about 1)")
    for r in bench.rows:
        print(f"  {r['name']}: peer returned {r.get('peer_equilibria')} NE, max exact regret "
              f"{r.get('peer_max_exact_regret')}, contains ours: {r.get('peer_contains_ours')}")
    bench.write()


if __name__ == "__main__":
    main()
