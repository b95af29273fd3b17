r"""Confidence intervals for the comparisons claims are decided on (:func:`~neurips26.claims.rules.better`).

Every interval is two-sided at level $1-\alpha$ and returned as an :class:`Interval` (estimate, low, high).

* **t** (paired): $\bar d \pm t_{1-\alpha/2,\,n-1}\, s_d/\sqrt n$ on the per-unit differences $d_i = a_i - b_i$.
  Unpaired: Welch's interval for $\bar a - \bar b$ with the Welch–Satterthwaite degrees of freedom.
* **bootstrap**: the percentile bootstrap of the mean difference, $B$ seeded resamples of the units (paired:
  the pairs; unpaired: each sample on its own). Deterministic for a given ``seed``.
* **mcnemar** (paired 0/1 outcomes, e.g. per-item correctness of two classifiers on one test set): with
  $n_{10}$ items only A gets right and $n_{01}$ only B, the accuracy difference is
  $\Delta = (n_{10} - n_{01})/n$. Conditional on the $m = n_{10} + n_{01}$ discordant items, $n_{10} \sim
  \mathrm{Bin}(m, p)$ and $\Delta = (m/n)(2p - 1)$, so the exact Clopper–Pearson interval of $p$ maps to an
  interval of $\Delta$ (the exact McNemar test is the binomial test of $p = 1/2$).

Ratios are compared on the log scale: the interval of $\overline{\log(a/b)}$ (paired) or of
$\overline{\log a} - \overline{\log b}$ (unpaired), exponentiated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TESTS: tuple[str, ...] = ("bootstrap", "t", "mcnemar")
#: Bootstrap resamples; 10,000 puts the Monte-Carlo error of a 95 % percentile bound near 0.5 % of its spread.
N_BOOT = 10_000
_CHUNK = 1_000  # resamples drawn at once (bounds memory at 1,000 x n indices)


@dataclass(frozen=True)
class Interval:
    """An estimate with its two-sided ``level`` confidence interval ``[low, high]``."""

    estimate: float
    low: float
    high: float
    level: float
    method: str
    n: int

    def text(self, fmt: str = ".4g") -> str:
        return (f"{self.estimate:{fmt}} [{self.low:{fmt}}, {self.high:{fmt}}] "
                f"({100 * self.level:.0f}% {self.method}, n={self.n})")


def _as_1d(name: str, values: object) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one value, got none")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr[~np.isfinite(arr)][:3].tolist()}")
    return arr


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    return float(alpha)


def _bootstrap_means(samples: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    n = samples.size
    means = np.empty(n_boot)
    for start in range(0, n_boot, _CHUNK):
        stop = min(start + _CHUNK, n_boot)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = samples[idx].mean(axis=1)
    return means


def mean_interval(values: object, *, method: str = "bootstrap", alpha: float = 0.05, n_boot: int = N_BOOT,
                  seed: int = 0) -> Interval:
    """Interval of the mean of ``values`` (e.g. paired differences) by ``method`` ``"t"`` or ``"bootstrap"``.

    One value, or values without spread, give the degenerate interval ``[mean, mean]``.
    """
    d = _as_1d("values", values)
    alpha = _check_alpha(alpha)
    mean = float(d.mean())
    if d.size == 1 or float(np.ptp(d)) == 0.0:
        return Interval(mean, mean, mean, 1 - alpha, method, int(d.size))
    if method == "t":
        from scipy import stats

        half = float(stats.t.ppf(1 - alpha / 2, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
        return Interval(mean, mean - half, mean + half, 1 - alpha, "t", int(d.size))
    if method == "bootstrap":
        means = _bootstrap_means(d, n_boot, np.random.default_rng(seed))
        low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
        return Interval(mean, float(low), float(high), 1 - alpha, "bootstrap", int(d.size))
    raise ValueError(f"method must be 't' or 'bootstrap' for a mean, got {method!r}")


def difference_interval(a: object, b: object, *, paired: bool = True, method: str = "bootstrap",
                        alpha: float = 0.05, n_boot: int = N_BOOT, seed: int = 0) -> Interval:
    """Interval of ``mean(a) - mean(b)``.

    Args:
        a, b: per-unit values of the two arms. ``paired``: the same units (seeds, items) in the same order,
            so equal lengths; the interval is that of the mean per-unit difference.
        method: ``"t"``, ``"bootstrap"`` or ``"mcnemar"`` (paired 0/1 outcomes only).
    """
    xa, xb = _as_1d("a", a), _as_1d("b", b)
    alpha = _check_alpha(alpha)
    if method not in TESTS:
        raise ValueError(f"method must be one of {TESTS}, got {method!r}")
    if paired and xa.size != xb.size:
        raise ValueError(f"paired comparison needs equal lengths, got {xa.size} and {xb.size}")
    if method == "mcnemar":
        if not paired:
            raise ValueError("method='mcnemar' needs paired outcomes (the same items for both arms)")
        return mcnemar_interval(xa, xb, alpha=alpha)
    if paired:
        return mean_interval(xa - xb, method=method, alpha=alpha, n_boot=n_boot, seed=seed)
    estimate = float(xa.mean() - xb.mean())
    if method == "t":
        from scipy import stats

        va, vb = (xa.var(ddof=1) / xa.size if xa.size > 1 else 0.0), (xb.var(ddof=1) / xb.size if xb.size > 1 else 0.0)
        se = math.sqrt(va + vb)
        if se == 0.0:
            return Interval(estimate, estimate, estimate, 1 - alpha, "t (Welch)", int(min(xa.size, xb.size)))
        df = (va + vb) ** 2 / ((va ** 2 / (xa.size - 1) if xa.size > 1 else 0.0)
                               + (vb ** 2 / (xb.size - 1) if xb.size > 1 else 0.0))
        half = float(stats.t.ppf(1 - alpha / 2, df) * se)
        return Interval(estimate, estimate - half, estimate + half, 1 - alpha, "t (Welch)",
                        int(min(xa.size, xb.size)))
    rng = np.random.default_rng(seed)
    diffs = _bootstrap_means(xa, n_boot, rng) - _bootstrap_means(xb, n_boot, rng)
    low, high = np.quantile(diffs, [alpha / 2, 1 - alpha / 2])
    return Interval(estimate, float(low), float(high), 1 - alpha, "bootstrap (unpaired)", int(min(xa.size, xb.size)))


def mcnemar_interval(a: object, b: object, *, alpha: float = 0.05) -> Interval:
    """Exact interval of the paired accuracy difference ``mean(a) - mean(b)`` for 0/1 outcomes (module doc)."""
    from scipy import stats

    xa, xb = _as_1d("a", a), _as_1d("b", b)
    alpha = _check_alpha(alpha)
    if xa.size != xb.size:
        raise ValueError(f"mcnemar needs the same items for both arms, got {xa.size} and {xb.size}")
    for name, arr in (("a", xa), ("b", xb)):
        if not np.all((arr == 0) | (arr == 1)):
            raise ValueError(f"mcnemar needs 0/1 outcomes per item, {name} has {sorted(set(arr.tolist()))[:5]}")
    n = xa.size
    only_a = int(np.sum((xa == 1) & (xb == 0)))
    only_b = int(np.sum((xa == 0) & (xb == 1)))
    discordant = only_a + only_b
    estimate = (only_a - only_b) / n
    if discordant == 0:
        return Interval(0.0, 0.0, 0.0, 1 - alpha, "McNemar exact", n)
    ci = stats.binomtest(only_a, discordant, 0.5).proportion_ci(confidence_level=1 - alpha, method="exact")
    scale = discordant / n
    return Interval(estimate, scale * (2 * ci.low - 1), scale * (2 * ci.high - 1), 1 - alpha, "McNemar exact", n)


def log_ratio_interval(a: object, b: object | None = None, *, paired: bool = True, method: str = "bootstrap",
                       alpha: float = 0.05, n_boot: int = N_BOOT, seed: int = 0) -> Interval:
    """Interval of a ratio on the log scale, returned exponentiated (a ratio and its bounds).

    With ``b=None``, ``a`` are per-unit ratios (the geometric mean and its interval). Otherwise the ratio of
    ``a`` to ``b``: paired per-unit ``a_i / b_i``, unpaired the ratio of geometric means.
    """
    xa = _as_1d("a", a)
    if np.any(xa <= 0):
        raise ValueError(f"a ratio needs positive values, got {xa[xa <= 0][:3].tolist()}")
    if b is None:
        inner = mean_interval(np.log(xa), method=method, alpha=alpha, n_boot=n_boot, seed=seed)
    else:
        xb = _as_1d("b", b)
        if np.any(xb <= 0):
            raise ValueError(f"a ratio needs positive values, got {xb[xb <= 0][:3].tolist()}")
        if method == "mcnemar":
            raise ValueError("method='mcnemar' compares 0/1 outcomes, not ratios")
        inner = difference_interval(np.log(xa), np.log(xb), paired=paired, method=method, alpha=alpha,
                                    n_boot=n_boot, seed=seed)
    return Interval(math.exp(inner.estimate), math.exp(inner.low), math.exp(inner.high), inner.level,
                    f"{inner.method}, log scale", inner.n)


def slope_interval(x: object, y: object, *, log: bool = True, alpha: float = 0.05) -> Interval:
    r"""Least-squares slope of ``y`` on ``x`` (of $\log y$ on $\log x$ with ``log=True``: a scaling exponent) and
    its t interval $\hat b \pm t_{1-\alpha/2,\,n-2}\,\mathrm{se}(\hat b)$, $n \ge 3$ points."""
    xa, ya = _as_1d("x", x), _as_1d("y", y)
    alpha = _check_alpha(alpha)
    if xa.size != ya.size:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    if xa.size < 3:
        raise ValueError(f"a slope interval needs at least 3 points, got {xa.size}")
    if log:
        if np.any(xa <= 0) or np.any(ya <= 0):
            raise ValueError("a log-log slope needs positive x and y")
        xa, ya = np.log(xa), np.log(ya)
    if float(np.ptp(xa)) == 0.0:
        raise ValueError("x must take at least two distinct values")
    from scipy import stats

    fit = stats.linregress(xa, ya)
    half = float(stats.t.ppf(1 - alpha / 2, xa.size - 2) * fit.stderr)
    return Interval(float(fit.slope), float(fit.slope) - half, float(fit.slope) + half, 1 - alpha,
                    "t (OLS slope" + (", log-log)" if log else ")"), int(xa.size))


__all__ = ["Interval", "N_BOOT", "TESTS", "difference_interval", "log_ratio_interval", "mcnemar_interval",
           "mean_interval", "slope_interval"]
