"""Shortest complete program for neurips26.saddle: the Decoupled Method against Extragradient on a quadratic game
where local smoothness (L_xx = L_yy = 100) dominates the coupling (L_xy = 1)."""

import numpy as np

from neurips26.saddle import QuadraticGame, decoupled_method, extragradient

game = QuadraticGame.random(30, mu_x=0.1, L_xx=100.0, mu_y=0.1, L_yy=100.0, L_xy=1.0, seed=0)
z0 = np.zeros(30)
ours = decoupled_method(game, z0, z0, tol=1e-6)  # default steps from game.constants, HPE inner rule
eg = extragradient(game, z0, z0, tol=1e-6)
print(f"Decoupled: {ours.rounds} rounds, {ours.max_calls} calls (busiest agent), {ours.reason}")
print(f"Extragradient: {eg.rounds} rounds, {eg.max_calls} calls, {eg.reason}")
