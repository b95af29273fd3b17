"""Saddle problems min_x max_y f(x, y) and an N-player monotone game, as the solvers see them.

Every problem exposes only partial gradients, the way a distributed player does:

* ``grad_x(x, y)`` = ∇_x f(x, y)  (player X descends it);
* ``grad_y(x, y)`` = ∇_y f(x, y)  (player Y *ascends* it);
* ``constants``: ``L_xx, L_xy, L_yy, mu_x, mu_y`` (Lipschitz constants of the blocks of the Jacobian and the
  strong convexity / concavity moduli); solvers derive their default steps from it;
* optionally ``solution()`` -> ``(x*, y*)`` and ``project_x`` / ``project_y`` (Euclidean projections onto
  constraint sets; identity when absent).

Quadratic games are

    f(x, y) = ½ xᵀA x + xᵀB y − ½ yᵀC y + aᵀx − cᵀy,

so ∇_x f = A x + B y + a and ∇_y f = Bᵀx − C y − c; the saddle point solves the linear system
F(z) = (∇_x f, −∇_y f) = 0, i.e. ``[[A, B], [−Bᵀ, C]] z = −(a, c)``.
Arrays are numpy float64 unless a game is built with ``backend="torch"`` (then torch float64 tensors on the
requested device; used by the ``gpu`` scale).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from neurips26.constraints import ArrayLike, Choice, Instance, Int, Optional, check_arguments, validate

from .counter import NONNEG, ROUNDOFF, STEP

CONSTANT_NAMES = ("L_xx", "L_xy", "L_yy", "mu_x", "mu_y")


@runtime_checkable
class SaddleProblem(Protocol):
    """What a solver needs from a convex–concave problem (see the module docstring)."""

    constants: dict

    def grad_x(self, x: Any, y: Any) -> Any:
        """∇_x f(x, y), shape [d_x]."""

    def grad_y(self, x: Any, y: Any) -> Any:
        """∇_y f(x, y), shape [d_y]: the *ascent* direction of player Y."""


def validate_constants(constants: dict, *, where: str = "constants") -> dict[str, float]:
    """Check that every present constant is a finite real >= 0; return them as floats."""
    check_arguments("", {where: Instance(dict, "dict")}, {where: constants})
    named = {f"{where}[{key!r}]": value for key, value in constants.items()}
    check_arguments("", dict.fromkeys(named, NONNEG), named)
    return {key: float(value) for key, value in constants.items()}


def _modulus(eig_min: float, scale: float) -> float:
    """Strong-convexity modulus from the smallest eigenvalue: 0 when it is at round-off level (≤ ROUNDOFF·scale)."""
    return eig_min if eig_min > ROUNDOFF * scale else 0.0


DIM = Int(low=1)


def random_orthogonal(d: int, rng: np.random.Generator) -> np.ndarray:
    """Haar-random orthogonal matrix [d, d]: QR of a Gaussian matrix with the sign of diag(R) fixed."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def _spd(eigs: np.ndarray, q: np.ndarray) -> np.ndarray:
    # A = Q diag(λ) Qᵀ, symmetrised against round-off
    m = (q * eigs) @ q.T
    return (m + m.T) / 2


class QuadraticGame:
    """f(x, y) = ½ xᵀA x + xᵀB y − ½ yᵀC y + aᵀx − cᵀy with A ⪰ μ_x I, C ⪰ μ_y I.

    A [d_x, d_x] and C [d_y, d_y] symmetric, B [d_x, d_y], a [d_x], c [d_y].
    ``constants`` are computed from the matrices (eigenvalues, largest singular value) unless given.
    """

    def __init__(self, A: Any, B: Any, C: Any, a: Any = None, c: Any = None, *, constants: dict | None = None):
        self.backend = "torch" if type(A).__module__.startswith("torch") else "numpy"
        if self.backend == "numpy":
            A, B, C = (np.asarray(m, dtype=np.float64) for m in (A, B, C))
            a = None if a is None else np.asarray(a, dtype=np.float64)
            c = None if c is None else np.asarray(c, dtype=np.float64)
            check_arguments("QuadraticGame", {"A": ArrayLike("X X"), "C": ArrayLike("Y Y"), "B": ArrayLike("X Y"),
                                              "a": Optional(ArrayLike("X")), "c": Optional(ArrayLike("Y"))},
                            {"A": A, "C": C, "B": B, "a": a, "c": c})
            a = np.zeros(A.shape[0]) if a is None else a
            c = np.zeros(C.shape[0]) if c is None else c
        else:
            import torch

            a = torch.zeros(A.shape[0], dtype=A.dtype, device=A.device) if a is None else a
            c = torch.zeros(C.shape[0], dtype=C.dtype, device=C.device) if c is None else c
        self.A, self.B, self.C, self.a, self.c = A, B, C, a, c
        self.d_x, self.d_y = int(A.shape[0]), int(C.shape[0])
        if constants is None:
            if self.backend != "numpy":
                raise ValueError("constants must be given for a torch QuadraticGame (no eigen-solve on device)")
            ea, ec = np.linalg.eigvalsh(A), np.linalg.eigvalsh(C)
            L_xy = float(np.linalg.norm(B, 2)) if B.size else 0.0
            # an eigenvalue within round-off of 0 (relative to the largest constant) is a zero modulus, not a
            # tiny positive one: μ = 5.9e-17 would make the SCSC step √(μ_y/μ_x)/L_xy explode
            scale = max(abs(float(ea[-1])), abs(float(ec[-1])), L_xy)
            constants = {"L_xx": max(float(ea[-1]), 0.0), "mu_x": _modulus(float(ea[0]), scale),
                         "L_yy": max(float(ec[-1]), 0.0), "mu_y": _modulus(float(ec[0]), scale), "L_xy": L_xy}
        self.constants = validate_constants(dict(constants))
        self._solution: tuple[Any, Any] | None = None

    # ∇_x f = A x + B y + a   [d_x]
    def grad_x(self, x: Any, y: Any) -> Any:
        return self.A @ x + self.B @ y + self.a

    # ∇_y f = Bᵀx − C y − c   [d_y]  (ascent direction)
    def grad_y(self, x: Any, y: Any) -> Any:
        return self.B.T @ x - self.C @ y - self.c

    def operator_matrix(self) -> Any:
        """M = [[A, B], [−Bᵀ, C]], so that F(z) = M z + (a, c)."""
        if self.backend == "numpy":
            return np.block([[self.A, self.B], [-self.B.T, self.C]])
        import torch

        return torch.cat([torch.cat([self.A, self.B], 1), torch.cat([-self.B.T, self.C], 1)], 0)

    def solution(self) -> tuple[Any, Any]:
        """(x*, y*) from one dense linear solve of M z = −(a, c) (cached)."""
        if self._solution is None:
            if self.backend == "numpy":
                z = np.linalg.solve(self.operator_matrix(), -np.concatenate([self.a, self.c]))
            else:
                import torch

                z = torch.linalg.solve(self.operator_matrix(), -torch.cat([self.a, self.c]))
            self._solution = (z[: self.d_x], z[self.d_x:])
        return self._solution

    def local_prox_x(self, y_hat: Any, x_center: Any, eta: float) -> Any:
        """Exact argmin_x f(x, ŷ) + ‖x − x_c‖²/(2η): (A + I/η) x = x_c/η − Bŷ − a (ablation only)."""
        if self.backend == "numpy":
            return np.linalg.solve(self.A + np.eye(self.d_x) / eta, x_center / eta - self.B @ y_hat - self.a)
        import torch

        eye = torch.eye(self.d_x, dtype=self.A.dtype, device=self.A.device)
        return torch.linalg.solve(self.A + eye / eta, x_center / eta - self.B @ y_hat - self.a)

    def local_prox_y(self, x_hat: Any, y_center: Any, eta: float) -> Any:
        """Exact argmax_y f(x̂, y) − ‖y − y_c‖²/(2η): (C + I/η) y = y_c/η + Bᵀx̂ − c (ablation only)."""
        if self.backend == "numpy":
            return np.linalg.solve(self.C + np.eye(self.d_y) / eta, y_center / eta + self.B.T @ x_hat - self.c)
        import torch

        eye = torch.eye(self.d_y, dtype=self.C.dtype, device=self.C.device)
        return torch.linalg.solve(self.C + eye / eta, y_center / eta + self.B.T @ x_hat - self.c)

    @classmethod
    @validate(d=DIM, mu_x=NONNEG, L_xx=STEP, mu_y=NONNEG, L_yy=STEP, L_xy=STEP, d_y=Optional(DIM),
              backend=Choice("numpy", "torch"))
    def random(cls, d: int, mu_x: float, L_xx: float, mu_y: float, L_yy: float, L_xy: float, seed: int = 0, *,
               d_y: int | None = None, backend: str = "numpy", device: str = "cpu") -> QuadraticGame:
        """Seeded SCSC quadratic game (the spec's problem Q).

        A = Q diag(linspace(μ_x, L_xx)) Qᵀ, C likewise, B = U diag(linspace(0.1·L_xy, L_xy)) Vᵀ with Haar-random
        orthogonal Q, U, V; a, c ~ N(0, I). With ``backend="torch"`` the same matrices are built in torch float64
        on ``device`` and the constants are the prescribed spectrum ends (no eigen-solve).
        """
        d = int(d)
        d_y = d if d_y is None else int(d_y)
        mu_x, mu_y, L_xx, L_yy, L_xy = (float(v) for v in (mu_x, mu_y, L_xx, L_yy, L_xy))
        if mu_x > L_xx or mu_y > L_yy:
            raise ValueError(f"need mu_x <= L_xx and mu_y <= L_yy, got mu_x={mu_x}, L_xx={L_xx}, "
                             f"mu_y={mu_y}, L_yy={L_yy}")
        if backend == "torch":
            return cls._random_torch(d, d_y, mu_x, L_xx, mu_y, L_yy, L_xy, int(seed), device)
        rng = np.random.default_rng(seed)
        A = _spd(np.linspace(mu_x, L_xx, d), random_orthogonal(d, rng))
        C = _spd(np.linspace(mu_y, L_yy, d_y), random_orthogonal(d_y, rng))
        k = min(d, d_y)
        u, v = random_orthogonal(d, rng)[:, :k], random_orthogonal(d_y, rng)[:, :k]
        B = (u * np.linspace(0.1 * L_xy, L_xy, k)) @ v.T
        return cls(A, B, C, rng.standard_normal(d), rng.standard_normal(d_y))

    @classmethod
    def _random_torch(cls, d, d_y, mu_x, L_xx, mu_y, L_yy, L_xy, seed, device):
        import torch

        g = torch.Generator(device="cpu").manual_seed(seed)
        kw = {"dtype": torch.float64}

        def orth(n):
            q, r = torch.linalg.qr(torch.randn(n, n, generator=g, **kw).to(device))
            return q * torch.sign(torch.diagonal(r))

        def spd(lo, hi, n):
            q = orth(n)
            m = (q * torch.linspace(lo, hi, n, **kw, device=device)) @ q.T
            return (m + m.T) / 2

        A, C = spd(mu_x, L_xx, d), spd(mu_y, L_yy, d_y)
        k = min(d, d_y)
        u, v = orth(d)[:, :k], orth(d_y)[:, :k]
        B = (u * torch.linspace(0.1 * L_xy, L_xy, k, **kw, device=device)) @ v.T
        a = torch.randn(d, generator=g, **kw).to(device)
        c = torch.randn(d_y, generator=g, **kw).to(device)
        consts = {"L_xx": L_xx if d > 1 else mu_x, "mu_x": mu_x, "L_yy": L_yy if d_y > 1 else mu_y, "mu_y": mu_y,
                  "L_xy": L_xy}
        return cls(A, B, C, a, c, constants=consts)


class BilinearGame(QuadraticGame):
    """f = (μ/2)‖x‖² + xᵀB y − (μ/2)‖y‖² + aᵀx − cᵀy: bilinear plus a small regulariser (problem Bi).

    μ = 0 gives the pure bilinear game (convex–concave, not strongly).
    """

    @validate(mu=NONNEG)
    def __init__(self, B: Any, mu: float, a: Any = None, c: Any = None):
        B = np.asarray(B, dtype=np.float64)
        check_arguments("BilinearGame", {"B": ArrayLike("X Y")}, {"B": B})
        mu = float(mu)
        self.mu = mu
        d_x, d_y = B.shape
        L_xy = float(np.linalg.norm(B, 2)) if B.size else 0.0
        super().__init__(mu * np.eye(d_x), B, mu * np.eye(d_y), a, c,
                         constants={"L_xx": mu, "mu_x": mu, "L_yy": mu, "mu_y": mu, "L_xy": L_xy})

    @classmethod
    @validate(d=DIM, L_xy=STEP)
    def random(cls, d: int, L_xy: float = 1.0, mu: float = 0.1, seed: int = 0) -> BilinearGame:  # type: ignore[override]
        """B = U diag(linspace(0.1·L_xy, L_xy)) Vᵀ, a, c ~ N(0, I)."""
        d, L_xy = int(d), float(L_xy)
        rng = np.random.default_rng(seed)
        u, v = random_orthogonal(d, rng), random_orthogonal(d, rng)
        return cls((u * np.linspace(0.1 * L_xy, L_xy, d)) @ v.T, mu, rng.standard_normal(d), rng.standard_normal(d))


def chain_matrix(d: int) -> np.ndarray:
    """Lower-bidiagonal A_chain [d, d] with ones on the diagonal and the sub-diagonal."""
    return np.eye(d) + np.eye(d, k=-1)


class ChainHardInstance(QuadraticGame):
    """The span lower-bound instance (problem H; its form is inferred, see the spec):

        f = (μ/2)‖x‖² + (L_xy/2)·xᵀA_chain y − (μ/2)‖y‖² − ⟨e₁, x⟩.

    From (x, y) = (0, 0), ∇_x f adds to x only coordinates already in y plus one (A_chain y shifts down) and
    ∇_y f ∝ A_chainᵀx adds to y only coordinates already in x: each exchange of vectors can activate at most one
    new coordinate. ``L_xy`` is the nominal coupling; ``constants['L_xy']`` is the exact ‖(L_xy/2)·A_chain‖₂ ≤ L_xy.
    """

    @validate(d=DIM, L_xy=STEP, mu=STEP)
    def __init__(self, d: int = 200, L_xy: float = 1.0, mu: float = 0.1):
        d = int(d)
        self.L_xy_nominal = float(L_xy)
        self.mu = float(mu)
        B = (self.L_xy_nominal / 2) * chain_matrix(d)
        a = np.zeros(d)
        a[0] = -1.0
        super().__init__(self.mu * np.eye(d), B, self.mu * np.eye(d), a, np.zeros(d),
                         constants={"L_xx": self.mu, "mu_x": self.mu, "L_yy": self.mu, "mu_y": self.mu,
                                    "L_xy": float(np.linalg.norm(B, 2))})

    @validate(eps=STEP)
    def span_lower_bound_rounds(self, eps: float) -> int:
        """Fewest rounds r for which *some* point supported on coordinates {0..r} (in both x and y) lies within
        ε‖z0 − z*‖ of z* (z0 = 0): a lower bound for any algorithm whose coordinate k is untouched before round k.

            r_lb(ε) = min{ r : Σ_{j>r} (x*_j² + y*_j²) ≤ ε²‖z*‖² }
        """
        eps = float(eps)
        xs, ys = self.solution()
        tail2 = (xs ** 2 + ys ** 2)[::-1].cumsum()[::-1]  # tail2[j] = Σ_{i>=j}
        total = tail2[0]
        for r in range(self.d_x):
            rest = tail2[r + 1] if r + 1 < self.d_x else 0.0
            if rest <= eps ** 2 * total:
                return r
        return self.d_x


class MultiPlayerQuadraticGame:
    """N-player monotone quadratic game (problem V): player i minimises

        f_i(x_i, x_{−i}) = ½ x_iᵀA_i x_i + x_iᵀ Σ_{j≠i} B_ij x_j + a_iᵀx_i,

    so the pseudo-gradient is F_i(x) = A_i x_i + Σ_{j≠i} B_ij x_j + a_i, i.e. F(x) = M x + a with diagonal blocks A_i
    and off-diagonal blocks B_ij. ``random`` makes B = S + P with S block-antisymmetric (the zero-sum part) and P a
    block-symmetric general-sum part with ‖P‖₂ = μ/2, so sym(M) ⪰ (μ − μ/2) I: F is strongly monotone.

    ``constants``: ``L_local`` (max_i ‖A_i‖), ``L_cross`` (‖M − blockdiag(A_i)‖₂, the coupling Lipschitz constant),
    ``mu`` (λ_min(sym M)), ``mu_local`` (min_i λ_min(A_i)).
    """

    def __init__(self, M: np.ndarray, a: np.ndarray, dims: tuple[int, ...]):
        M, a = np.asarray(M, dtype=np.float64), np.asarray(a, dtype=np.float64)
        check_arguments("MultiPlayerQuadraticGame", {f"dims[{i}]": DIM for i in range(len(dims))},
                        {f"dims[{i}]": d for i, d in enumerate(dims)})
        dims = tuple(int(d) for d in dims)
        n = sum(dims)
        if M.shape != (n, n) or a.shape != (n,):
            raise ValueError(f"M must be [{n}, {n}] and a [{n}] for dims {dims}, got {M.shape} and {a.shape}")
        if len(dims) < 2:
            raise ValueError(f"a game needs at least 2 players, got dims {dims}")
        self.M, self.a, self.dims = M, a, dims
        self.n_players = len(dims)
        self.offsets = np.concatenate([[0], np.cumsum(dims)]).astype(int)
        blocks = [M[self._sl(i), self._sl(i)] for i in range(self.n_players)]
        local = np.zeros_like(M)
        for i, b in enumerate(blocks):
            local[self._sl(i), self._sl(i)] = b
        eig_local = [np.linalg.eigvalsh((b + b.T) / 2) for b in blocks]
        self.constants = validate_constants({
            "L_local": max(float(np.linalg.norm(b, 2)) for b in blocks),
            "mu_local": max(min(float(e[0]) for e in eig_local), 0.0),
            "L_cross": float(np.linalg.norm(M - local, 2)),
            "mu": max(float(np.linalg.eigvalsh((M + M.T) / 2)[0]), 0.0),
        })

    def _sl(self, i: int) -> slice:
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def grad(self, i: int, xs: Any) -> np.ndarray:
        """F_i(x) = ∇_{x_i} f_i(x_i, x_{−i}), shape [dims[i]]; ``xs`` is a sequence of the players' vectors."""
        rows = self.M[self._sl(i)]
        return rows @ np.concatenate(list(xs)) + self.a[self._sl(i)]

    def solution(self) -> tuple[np.ndarray, ...]:
        z = np.linalg.solve(self.M, -self.a)
        return tuple(z[self._sl(i)] for i in range(self.n_players))

    @classmethod
    @validate(n_players=Int(low=2), d=DIM, mu=STEP, L_local=STEP, L_cross=STEP)
    def random(cls, n_players: int = 3, d: int = 20, *, mu: float = 0.1, L_local: float = 100.0,
               L_cross: float = 1.0, seed: int = 0) -> MultiPlayerQuadraticGame:
        """Seeded strongly monotone game; ``L_cross`` scales the antisymmetric coupling (the exact coupling norm
        is in ``constants``)."""
        n_players, d = int(n_players), int(d)
        mu, L_local, L_cross = float(mu), float(L_local), float(L_cross)
        rng = np.random.default_rng(seed)
        n = n_players * d
        M = np.zeros((n, n))
        for i in range(n_players):
            s = slice(i * d, (i + 1) * d)
            M[s, s] = _spd(np.linspace(mu, L_local, d), random_orthogonal(d, rng))
        G = rng.standard_normal((n, n))
        mask = np.kron(1 - np.eye(n_players), np.ones((d, d)))
        S = (G - G.T) * mask
        S *= L_cross / np.linalg.norm(S, 2)
        P = rng.standard_normal((n, n))
        P = (P + P.T) * mask
        P *= (mu / 2) / np.linalg.norm(P, 2)
        return cls(M + S + P, rng.standard_normal(n), (d,) * n_players)


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex Δ_n (sorting-based, O(n log n)).

    With u = sort(v) descending, ρ = max{j : u_j − (Σ_{i≤j} u_i − 1)/j > 0} and τ = (Σ_{i≤ρ} u_i − 1)/ρ,
    the projection is max(v − τ, 0).
    """
    v = np.asarray(v, dtype=np.float64)
    check_arguments("project_simplex", {"v": ArrayLike(ndim=1)}, {"v": v})
    if v.size == 0:
        raise ValueError("project_simplex: v must be a non-empty vector, got shape (0,)")
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    j = np.arange(1, v.size + 1)
    rho = int(np.nonzero(u - css / j > 0)[0][-1]) + 1
    return np.maximum(v - css[rho - 1] / rho, 0.0)


class DROLogistic:
    """Distributionally robust logistic regression (the spec's optional non-quadratic problem):

        min_w max_{q ∈ Δ_n}  Σ_i q_i ℓ_i(w) + (μ/2)‖w‖² − (ρn/2)‖q − 1/n‖²,   ℓ_i(w) = log(1 + exp(−t_i x_iᵀw)),

    with labels t_i ∈ {−1, +1}. Player X owns w [d], player Y owns q [n] (projected onto the simplex).
    Constants: L_xx = max_i ‖x_i‖²/4 + μ (q ∈ Δ), μ_x = μ, L_xy = ‖X‖₂ (|ℓ_i'| ≤ 1), L_yy = μ_y = ρn.
    No closed-form solution: solvers stop on the relative residual.
    """

    @validate(mu=STEP, rho=STEP)
    def __init__(self, X: Any, t: Any, mu: float = 0.1, rho: float = 1.0):
        X = np.asarray(X, dtype=np.float64)
        t = np.asarray(t, dtype=np.float64)
        check_arguments("DROLogistic", {"X": ArrayLike("N D"), "t": ArrayLike("N")}, {"X": X, "t": t})
        if not np.isin(t, (-1.0, 1.0)).all():
            raise ValueError(f"t must hold labels in {{-1, +1}}, got values {np.unique(t)[:5]}")
        self.mu, self.rho = float(mu), float(rho)
        self.X, self.t = X, t
        n = X.shape[0]
        self.d_x, self.d_y = X.shape[1], n
        self.constants = validate_constants({
            "L_xx": float((X ** 2).sum(1).max() / 4 + self.mu), "mu_x": self.mu,
            "L_xy": float(np.linalg.norm(X, 2)), "L_yy": self.rho * n, "mu_y": self.rho * n})

    def _margins(self, w: np.ndarray) -> np.ndarray:
        return self.t * (self.X @ w)

    def losses(self, w: np.ndarray) -> np.ndarray:
        """ℓ_i(w) = log(1 + e^{−m_i}), m_i = t_i x_iᵀw, computed stably; shape [n]."""
        return np.logaddexp(0.0, -self._margins(w))

    # ∇_w = Σ q_i ℓ_i'(w) + μ w,  ℓ_i' = −t_i σ(−m_i) x_i
    def grad_x(self, w: np.ndarray, q: np.ndarray) -> np.ndarray:
        s = 0.5 * (1 - np.tanh(self._margins(w) / 2))  # σ(−m), stable
        return self.X.T @ (-q * self.t * s) + self.mu * w

    # ∇_q = ℓ(w) − ρn (q − 1/n)   (ascent direction)
    def grad_y(self, w: np.ndarray, q: np.ndarray) -> np.ndarray:
        n = self.d_y
        return self.losses(w) - self.rho * n * (q - 1.0 / n)

    def project_y(self, q: np.ndarray) -> np.ndarray:
        return project_simplex(q)

    def initial_point(self) -> tuple[np.ndarray, np.ndarray]:
        """w = 0, q = uniform."""
        return np.zeros(self.d_x), np.full(self.d_y, 1.0 / self.d_y)

    @classmethod
    def breast_cancer(cls, mu: float = 0.1, rho: float = 1.0) -> DROLogistic:
        """scikit-learn's bundled breast_cancer (569 × 30), standardised, labels in {−1, +1}."""
        from sklearn.datasets import load_breast_cancer

        X, t = load_breast_cancer(return_X_y=True)
        X = (X - X.mean(0)) / X.std(0)
        return cls(X, 2.0 * t - 1.0, mu, rho)

    @classmethod
    def digits(cls, mu: float = 0.1, rho: float = 1.0) -> DROLogistic:
        """Digits (1797 × 64) from ``neurips26.data.load_digits``, standardised, even (+1) vs odd (−1)."""
        from neurips26.data import load_digits

        X, y = load_digits()
        X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        sd = X.std(0)
        X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
        return cls(X, np.where(np.asarray(y) % 2 == 0, 1.0, -1.0), mu, rho)
