"""Exact Nash equilibria of a 100,000-player anonymous game, a best-response dynamic, and a Gambit .nfg file."""

from fractions import Fraction

from neurips26.anongames import (
    LinearAnonymousGame,
    dumps_nfg,
    format_gambit_profile,
    loads_nfg,
    minmax_curvature,
    sequential_best_response,
    solve_exact,
    verify_anonymous,
)

# player i gains a_i * m + b_i from playing 1, m = number of *other* players at 1
game = LinearAnonymousGame(a=[2, -2, 1, -1], b=[-1, 1, Fraction(-1, 2), 2])
res = solve_exact(game)                                   # O(n log n), exact rationals, verified
print("NE:", res.profile, "max regret", res.max_regret)
assert max(verify_anonymous(*game.payoff_tables(), res.profile)) == 0   # model-free check

big = LinearAnonymousGame.random(100_000, seed=0, kind="hard")         # no pure NE: players must mix
print("n = 100000:", len(solve_exact(big).mixers), "mixing players, exact")

# players revise one at a time toward their best responses until nobody regrets more than eps
dyn = sequential_best_response(game, 0.01, rule="substitutes_first")
print(f"best response: {dyn.steps} revisions, eps-NE reached: {dyn.converged}")

# the min-max view: complements maximise Phi, substitutes minimise it; curvature of each block
curv = minmax_curvature(game)
print("Phi non-concave in the max block:", curv.non_concave_in_max, "non-convex in the min block:",
      curv.non_convex_in_min)

# Gambit's strategic form, written and read back without pygambit, and the NE as Gambit prints it
text = dumps_nfg(game)
assert loads_nfg(text) == game
print(format_gambit_profile(res.profile))
