"""Composable decision rules: a criterion is written once, as code that also renders its own sentence.

A rule is a callable ``rule(evidence) -> Verdict`` with a ``criterion`` attribute, the sentence a report
shows. Rules read :class:`~neurips26.claims.spec.Evidence`: its ``values`` (one number per seed or per
cell), or, through :func:`on`, one entry of its ``details``. Every rule refuses to decide on too few
values (``min_n``) and says so.

    rule = all_of(threshold(">=", 2.0, min_n=3),                    # mean speed-up >= 2 over >= 3 seeds
                  on("slope", threshold("<=", 0.2, stat="max")))   # and every fitted slope <= 0.2
    rule.criterion   # "mean >= 2 (n >= 3); and slope: max <= 0.2"
    rule(evidence)   # Verdict("supported", "mean 2.31 >= 2; slope: max 0.17 <= 0.2")

Outcomes: ``supported``, ``not supported`` (the criterion's refutation holds) or ``inconclusive``
(too little evidence, or a result between support and refutation).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import stats
from .spec import Evidence, Verdict

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_STATS: dict[str, Callable[[np.ndarray], float]] = {
    "mean": lambda v: float(np.mean(v)), "median": lambda v: float(np.median(v)),
    "min": lambda v: float(np.min(v)), "max": lambda v: float(np.max(v))}
#: "all"/"any" test every value against the bound instead of one statistic.
_QUANTIFIERS = ("all", "any")
#: "value": the evidence is one number (a count, a maximum n); rendered by its name under :func:`on`.
_STATS["value"] = _STATS["mean"]


class Rule:
    """Base class: ``criterion`` (a sentence) and ``__call__(evidence) -> Verdict``."""

    criterion: str = ""

    def __call__(self, evidence: Evidence) -> Verdict:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.criterion!r})"


def _check_op(op: str) -> str:
    if op not in _OPS:
        raise ValueError(f"op must be one of {sorted(_OPS)}, got {op!r}")
    return op


def _check_bound(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


class _Required:
    """Marks an argument every rule must be given explicitly (``min_n``, ``margin``)."""

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


def _check_min_n(min_n: int, rule: str = "a rule") -> int:
    if min_n is REQUIRED:
        raise TypeError(f"{rule}: min_n is required: every rule states how many values it needs to decide "
                        "(e.g. min_n=3 for three seeds)")
    if isinstance(min_n, bool) or not isinstance(min_n, int | np.integer) or min_n < 1:
        raise ValueError(f"{rule}: min_n must be a positive integer, got {min_n!r}")
    return int(min_n)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _finite(values: Sequence[float]) -> np.ndarray:
    """The values a rule decides on: missing (None/NaN, only where Evidence allows them) are dropped."""
    arr = np.array([np.nan if v is None else v for v in values], dtype=float)
    return arr[np.isfinite(arr)]


def _too_few(n: int, min_n: int) -> Verdict | None:
    if n < min_n:
        return Verdict("inconclusive", f"only {n} value(s), the criterion needs at least {min_n}")
    return None


@dataclass(frozen=True, repr=False)
class _Threshold(Rule):
    op: str
    value: float
    stat: str
    min_n: int
    refute: tuple[str, float] | None
    otherwise: str = "not supported"

    @property
    def criterion(self) -> str:  # type: ignore[override]
        text = f"{self._subject()} {self.op} {_fmt(self.value)}"
        if self.min_n > 1:
            text += f" (n >= {self.min_n})"
        if self.refute is not None:
            text += f"; refuted if {self._subject()} {self.refute[0]} {_fmt(self.refute[1])}"
        elif self.otherwise == "inconclusive":
            text += " (else inconclusive)"
        return text

    def _subject(self) -> str:
        return {"all": "every value", "any": "some value", "value": "value"}.get(self.stat, self.stat)

    def _holds(self, values: np.ndarray, op: str, bound: float) -> tuple[bool, str]:
        test = _OPS[op]
        if self.stat in _QUANTIFIERS:
            hits = [test(float(v), bound) for v in values]
            ok = all(hits) if self.stat == "all" else any(hits)
            return ok, f"{sum(hits)} of {len(hits)} values {op} {_fmt(bound)}"
        measured = _STATS[self.stat](values)
        return test(measured, bound), f"{self.stat} {_fmt(measured)}"

    def __call__(self, evidence: Evidence) -> Verdict:
        values = _finite(evidence.values)
        if (few := _too_few(len(values), self.min_n)) is not None:
            return few
        ok, said = self._holds(values, self.op, self.value)
        if ok:
            return Verdict("supported", f"{said}; needs {self.op} {_fmt(self.value)}")
        if self.refute is None:
            return Verdict(self.otherwise, f"{said}; needs {self.op} {_fmt(self.value)}")
        refuted, said_r = self._holds(values, *self.refute)
        if refuted:
            return Verdict("not supported", f"{said_r}; refuted when {self.refute[0]} {_fmt(self.refute[1])}")
        return Verdict("inconclusive", f"{said}: neither {self.op} {_fmt(self.value)} (supported) nor "
                                       f"{self.refute[0]} {_fmt(self.refute[1])} (refuted)")


def threshold(op: str, value: float, *, stat: str = "mean", min_n: int = REQUIRED,
              refute: tuple[str, float] | None = None, otherwise: str = "not supported") -> Rule:
    """Supported when ``stat(values) op value``.

    Args:
        op: ``">"``, ``">="``, ``"<"`` or ``"<="``.
        value: the bound, in the evidence's unit.
        stat: ``"mean"``, ``"median"``, ``"min"``, ``"max"``, ``"all"``/``"any"`` (every / some value), or
            ``"value"`` for evidence that is one number (``on("games", threshold(">=", 1000, stat="value"))``
            reads "games >= 1000").
        min_n: fewer values than this make the claim inconclusive (required).
        refute: ``(op, value)``: when given, a failed threshold is ``not supported`` only if this
            condition holds (on the same statistic) and ``inconclusive`` otherwise.
        otherwise: the verdict when the threshold fails and no ``refute`` is given: ``"not supported"``
            (default) or ``"inconclusive"`` (a precondition such as "n reached 1e5", not a refutation).
    """
    if otherwise not in ("not supported", "inconclusive"):
        raise ValueError(f"otherwise must be 'not supported' or 'inconclusive', got {otherwise!r}")
    if refute is not None and otherwise != "not supported":
        raise ValueError("give refute= or otherwise=, not both")
    _check_op(op)
    if stat not in _STATS and stat not in _QUANTIFIERS:
        raise ValueError(f"stat must be one of {sorted(_STATS) + list(_QUANTIFIERS)}, got {stat!r}")
    if refute is not None:
        if not (isinstance(refute, tuple) and len(refute) == 2):
            raise ValueError(f"refute must be an (op, value) pair, got {refute!r}")
        refute = (_check_op(refute[0]), _check_bound("refute value", refute[1]))
        if refute[1] == float(value) and stat not in _QUANTIFIERS:
            raise ValueError(f"threshold: refute={refute} is at the supporting bound {value}: an exact-tie "
                             "decision; give the refutation its own bound (a band) or use rules.better with a margin")
    return _Threshold(op, _check_bound("value", value), stat, _check_min_n(min_n, "threshold"), refute, otherwise)


@dataclass(frozen=True, repr=False)
class _AtLeast(Rule):
    k: float
    op: str
    value: float
    min_n: int

    def _needed(self, n: int) -> int:
        return math.ceil(self.k * n - 1e-9) if isinstance(self.k, float) else int(self.k)

    @property
    def criterion(self) -> str:  # type: ignore[override]
        share = f"{self.k:.3g} of the" if isinstance(self.k, float) else f"{self.k} of the"
        text = f"at least {share} values {self.op} {_fmt(self.value)}"
        return text + (f" (n >= {self.min_n})" if self.min_n > 1 else "")

    def __call__(self, evidence: Evidence) -> Verdict:
        values = _finite(evidence.values)
        if (few := _too_few(len(values), self.min_n)) is not None:
            return few
        hits = int(sum(_OPS[self.op](float(v), self.value) for v in values))
        needed = self._needed(len(values))
        said = f"{hits} of {len(values)} values {self.op} {_fmt(self.value)} (needs {needed})"
        return Verdict("supported" if hits >= needed else "not supported", said)


def at_least(k: int | float, op: str, value: float, *, min_n: int = REQUIRED) -> Rule:
    """Supported when at least ``k`` values satisfy ``value_i op value``.

    ``k`` is a count (int) or a fraction of the values in (0, 1] (float, e.g. ``2/3``). A fraction needs
    ``min_n >= 3``: "2/3 of the seeds" decided on one seed is a coin toss.
    """
    _check_op(op)
    if isinstance(k, bool) or not isinstance(k, int | float):
        raise ValueError(f"k must be an int count or a float fraction, got {k!r}")
    if isinstance(k, int) and k < 1:
        raise ValueError(f"k as a count must be >= 1, got {k}")
    if isinstance(k, float) and not 0.0 < k <= 1.0:
        raise ValueError(f"k as a fraction must lie in (0, 1], got {k}")
    min_n = _check_min_n(min_n, "at_least")
    if isinstance(k, float) and min_n < 3:
        raise ValueError(f"at_least: a fraction of the values (k={k:.3g}) needs min_n >= 3, got min_n={min_n}")
    if isinstance(k, int):
        min_n = max(min_n, k)
    return _AtLeast(k, op, _check_bound("value", value), min_n)


@dataclass(frozen=True, repr=False)
class _BeyondSE(Rule):
    m: float
    direction: str
    reference: float
    min_n: int

    @property
    def criterion(self) -> str:  # type: ignore[override]
        sign = ">" if self.direction == "greater" else "<"
        ref = _fmt(self.reference)
        return (f"mean {sign} {ref} by more than {_fmt(self.m)} standard errors (n >= {self.min_n}); "
                f"refuted if beyond {_fmt(self.m)} SE the other way; inconclusive in between")

    def __call__(self, evidence: Evidence) -> Verdict:
        values = _finite(evidence.values)
        if (few := _too_few(len(values), self.min_n)) is not None:
            return few
        mean = float(np.mean(values))
        se = float(np.std(values, ddof=1) / math.sqrt(len(values)))
        delta = (mean - self.reference) * (1 if self.direction == "greater" else -1)
        if np.ptp(values) <= 1e-4 * abs(mean) + 1e-12:
            # Identical values (up to rounding: float32 operands leave a spread ~1e-5 of the mean) give no
            # standard error to measure the mean against. They come from a quantised metric (recall over 300
            # scenes moves in steps of 1/600) or from seeds that change nothing, and neither is evidence of an
            # effect: a deterministic quantity belongs under `threshold`.
            return Verdict("inconclusive", f"mean {_fmt(mean)} with zero spread over {len(values)} values: no "
                                           "standard error to decide against (use a threshold rule for an exact "
                                           "quantity)")
        said = f"mean {_fmt(mean)}, SE {_fmt(se)}: {_fmt(delta / se)} SE from {_fmt(self.reference)}"
        if delta > self.m * se:
            return Verdict("supported", said)
        if delta < -self.m * se:
            return Verdict("not supported", said)
        return Verdict("inconclusive", said + f" (within {_fmt(self.m)} SE)")


def beyond_se(m: float = 2.0, *, direction: str = "greater", reference: float = 0.0,
              min_n: int = REQUIRED) -> Rule:
    """A paired difference decided against its standard error.

    Values are per-seed differences (method minus baseline, in the direction the claim favours when
    ``direction="greater"``). Supported when the mean exceeds ``reference`` by more than ``m`` standard
    errors in ``direction``; not supported when it lies more than ``m`` SE the other way; else inconclusive.
    """
    if direction not in ("greater", "less"):
        raise ValueError(f"direction must be 'greater' or 'less', got {direction!r}")
    m = _check_bound("m", m)
    if m < 0:
        raise ValueError(f"m must be >= 0, got {m}")
    min_n = _check_min_n(min_n, "beyond_se")
    if min_n < 2:
        raise ValueError(f"min_n must be >= 2 for a standard error, got {min_n}")
    return _BeyondSE(m, direction, _check_bound("reference", reference), min_n)


def _arms(evidence: Evidence, metric: str | None, than: str | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The values a comparison reads: the evidence's own values (already per-unit differences or ratios),
    or the two per-item arrays ``details[metric]`` and ``details[than]``."""
    if metric is None:
        return _finite(evidence.values), None
    arrays = []
    for key in (metric, than):
        if key not in evidence.details:
            raise KeyError(f"evidence.details has no {key!r} (has {sorted(evidence.details)})")
        arrays.append(np.asarray(evidence.details[key], dtype=float).ravel())
    return arrays[0], arrays[1]


def _check_comparison(metric: str | None, than: str | None, paired: bool, test: str, alpha: float,
                      rule: str) -> None:
    if (metric is None) != (than is None):
        raise ValueError(f"{rule}: give both metric= and than= (names of per-item arrays in evidence.details), "
                         f"or neither (the evidence values are then the per-unit comparisons); got "
                         f"metric={metric!r}, than={than!r}")
    for name, key in (("metric", metric), ("than", than)):
        if key is not None and (not isinstance(key, str) or not key):
            raise ValueError(f"{rule}: {name} must be a non-empty string, got {key!r}")
    if not isinstance(paired, bool):
        raise TypeError(f"{rule}: paired must be a bool, got {paired!r}")
    if test not in stats.TESTS:
        raise ValueError(f"{rule}: test must be one of {stats.TESTS}, got {test!r}")
    if test == "mcnemar" and (metric is None or not paired):
        raise ValueError(f"{rule}: test='mcnemar' needs paired per-item 0/1 arrays named by metric= and than=")
    if metric is None and not paired:
        raise ValueError(f"{rule}: unpaired comparisons need the two samples: give metric= and than=")
    stats._check_alpha(alpha)


@dataclass(frozen=True, repr=False)
class _Better(Rule):
    metric: str | None
    than: str | None
    margin: float
    min_n: int
    higher_is_better: bool
    paired: bool
    test: str
    alpha: float
    seed: int
    label: str = ""

    def _what(self) -> str:
        if self.label:
            return self.label
        if self.metric is None:
            return "the per-unit difference (ours - baseline)"
        return f"{self.metric} - {self.than}"

    @property
    def criterion(self) -> str:  # type: ignore[override]
        way = "above" if self.higher_is_better else "below"
        bound = _fmt(self.margin if self.higher_is_better else -self.margin)
        level = f"{100 * (1 - self.alpha):.0f}%"
        pairing = "paired" if self.paired else "unpaired"
        return (f"the {level} {self.test} interval ({pairing}) of {self._what()} lies {way} {bound} "
                f"(n >= {self.min_n}); not supported when it lies wholly on the other side; inconclusive when "
                "it spans it")

    def __call__(self, evidence: Evidence) -> Verdict:
        a, b = _arms(evidence, self.metric, self.than)
        n = len(a) if b is None else min(len(a), len(b))
        if (few := _too_few(n, self.min_n)) is not None:
            return few
        if b is None:
            interval = stats.mean_interval(a, method=self.test, alpha=self.alpha, seed=self.seed)
        else:
            interval = stats.difference_interval(a, b, paired=self.paired, method=self.test, alpha=self.alpha,
                                                 seed=self.seed)
        sign = 1.0 if self.higher_is_better else -1.0
        low, high = sorted((sign * interval.low, sign * interval.high))
        said = f"{self._what()} = {interval.text()}"
        bound = _fmt(self.margin if self.higher_is_better else -self.margin)
        if low > self.margin:
            return Verdict("supported", f"{said}: beyond {bound}")
        if high < self.margin:
            return Verdict("not supported", f"{said}: wholly on the wrong side of {bound}")
        return Verdict("inconclusive", f"{said}: spans {bound}")


def better(metric: str | None = None, than: str | None = None, *, margin: float = REQUIRED,
           min_n: int = REQUIRED, higher_is_better: bool = True, paired: bool = True, test: str = "bootstrap",
           alpha: float = 0.05, seed: int = 0, label: str = "") -> Rule:
    """Ours better than a baseline, decided on the confidence interval of the difference.

    The oriented difference (ours - baseline when ``higher_is_better``, baseline - ours otherwise) must have its
    two-sided ``1 - alpha`` interval wholly above ``margin`` (supported); wholly below it is not supported;
    an interval that spans it is inconclusive. ``margin`` is required: a comparison without one decides
    exact ties. A negative margin states non-inferiority ("no worse than 0.02 below the baseline").

    Args:
        metric, than: names of per-item arrays in ``evidence.details`` (ours, the baseline); omit both when
            the evidence values are already the per-unit differences ours - baseline.
        test: ``"bootstrap"`` (percentile, seeded), ``"t"`` (paired t / Welch) or ``"mcnemar"`` (paired 0/1
            per-item correctness; exact). See :mod:`neurips26.claims.stats`.
        min_n: required; fewer units make the claim inconclusive.
        label: what the values are, for the criterion and reason sentences (default "the per-unit difference
            (ours - baseline)"), e.g. ``label="the per-seed slope b"`` when the values are not a difference.

    ``margin`` lives on the oriented scale: with ``higher_is_better=False`` the rule asks for
    ``-(value) > margin``, i.e. ``value < -margin`` — "b below -0.45" is ``margin=0.45``; the criterion sentence
    shows the bound on the values' own scale.
    """
    if margin is REQUIRED:
        raise TypeError("better: margin is required: say how much better counts (0.0 for 'any amount beyond "
                        "the interval', negative for non-inferiority)")
    _check_comparison(metric, than, paired, test, alpha, "better")
    if not isinstance(higher_is_better, bool):
        raise TypeError(f"better: higher_is_better must be a bool, got {higher_is_better!r}")
    if not isinstance(label, str):
        raise TypeError(f"better: label must be a string, got {label!r}")
    return _Better(metric, than, _check_bound("margin", margin), _check_min_n(min_n, "better"), higher_is_better,
                   paired, test, float(alpha), int(seed), label)


@dataclass(frozen=True, repr=False)
class _RatioAtLeast(Rule):
    ratio: float
    metric: str | None
    than: str | None
    min_n: int
    paired: bool
    test: str
    alpha: float
    seed: int
    label: str = ""

    def _what(self) -> str:
        if self.label:
            return self.label
        return "the ratio" if self.metric is None else f"{self.metric} / {self.than}"

    @property
    def criterion(self) -> str:  # type: ignore[override]
        level = f"{100 * (1 - self.alpha):.0f}%"
        return (f"the {level} {self.test} interval (log scale) of {self._what()} lies above {_fmt(self.ratio)} "
                f"(n >= {self.min_n}); not supported when it lies wholly below; inconclusive when it spans it")

    def __call__(self, evidence: Evidence) -> Verdict:
        a, b = _arms(evidence, self.metric, self.than)
        n = len(a) if b is None else min(len(a), len(b))
        if (few := _too_few(n, self.min_n)) is not None:
            return few
        interval = stats.log_ratio_interval(a, b, paired=self.paired, method=self.test, alpha=self.alpha,
                                            seed=self.seed)
        said = f"{self._what()} = {interval.text()}"
        if interval.low > self.ratio:
            return Verdict("supported", f"{said}: above {_fmt(self.ratio)}")
        if interval.high < self.ratio:
            return Verdict("not supported", f"{said}: wholly below {_fmt(self.ratio)}")
        return Verdict("inconclusive", f"{said}: spans {_fmt(self.ratio)}")


def ratio_at_least(ratio: float, metric: str | None = None, than: str | None = None, *, min_n: int = REQUIRED,
                   paired: bool = True, test: str = "bootstrap", alpha: float = 0.05, seed: int = 0,
                   label: str = "") -> Rule:
    """A positive ratio (a speed-up, a memory cut) at least ``ratio``, decided on its interval (log scale).

    With ``metric=None`` the evidence values are per-unit ratios (e.g. :func:`neurips26.claims.measure.timeit_pair`
    gives one per interleaved pair); otherwise ``details[metric] / details[than]`` per item (paired) or the ratio
    of the geometric means (unpaired).
    """
    _check_comparison(metric, than, paired, test, alpha, "ratio_at_least")
    if test == "mcnemar":
        raise ValueError("ratio_at_least: test must be 'bootstrap' or 't'")
    value = _check_bound("ratio", ratio)
    if value <= 0:
        raise ValueError(f"ratio_at_least: ratio must be positive, got {ratio!r}")
    if not isinstance(label, str):
        raise TypeError(f"ratio_at_least: label must be a string, got {label!r}")
    return _RatioAtLeast(value, metric, than, _check_min_n(min_n, "ratio_at_least"), paired, test, float(alpha),
                         int(seed), label)


def _every(labels: Sequence[str]) -> str:
    """The verdict of "all of these": supported if every part is, not supported if any part is not."""
    return ("supported" if all(x == "supported" for x in labels) else
            "not supported" if "not supported" in labels else "inconclusive")


def _combine(rules: Sequence[Rule], *, all_needed: bool, evidence: Evidence) -> Verdict:
    verdicts = [rule(evidence) for rule in rules]
    labels = [v.label for v in verdicts]
    reason = "; ".join(v.reason for v in verdicts)
    if all_needed:
        label = _every(labels)
    else:
        label = ("supported" if "supported" in labels else
                 "not supported" if all(x == "not supported" for x in labels) else "inconclusive")
    return Verdict(label, reason)


@dataclass(frozen=True, repr=False)
class _AllOf(Rule):
    rules: tuple[Rule, ...]

    @property
    def criterion(self) -> str:  # type: ignore[override]
        # an "or" inside an "and" gets brackets, so the sentence reads one way only
        return "; and ".join(f"({rule.criterion})" if isinstance(rule, _AnyOf | _Decisive) else rule.criterion
                             for rule in self.rules)

    def __call__(self, evidence: Evidence) -> Verdict:
        return _combine(self.rules, all_needed=True, evidence=evidence)


@dataclass(frozen=True, repr=False)
class _AnyOf(Rule):
    rules: tuple[Rule, ...]

    @property
    def criterion(self) -> str:  # type: ignore[override]
        return "; or ".join(f"({rule.criterion})" for rule in self.rules)

    def __call__(self, evidence: Evidence) -> Verdict:
        return _combine(self.rules, all_needed=False, evidence=evidence)


def _check_rules(rules: Sequence[Any]) -> tuple[Rule, ...]:
    if not rules:
        raise ValueError("needs at least one rule")
    for rule in rules:
        if not isinstance(rule, Rule):
            raise TypeError(f"expected rules from neurips26.claims.rules, got {type(rule).__name__}")
    return tuple(rules)


def all_of(*rules: Rule) -> Rule:
    """Supported iff every rule is; not supported if any is not; otherwise inconclusive."""
    return _AllOf(_check_rules(rules))


def any_of(*rules: Rule) -> Rule:
    """Supported if some rule is; not supported if every rule is not; otherwise inconclusive."""
    return _AnyOf(_check_rules(rules))


@dataclass(frozen=True, repr=False)
class _Decisive(Rule):
    support: Rule
    refute: Rule

    @property
    def criterion(self) -> str:  # type: ignore[override]
        return (f"supported if {self.support.criterion}; not supported if {self.refute.criterion}; "
                "otherwise inconclusive")

    def __call__(self, evidence: Evidence) -> Verdict:
        yes = self.support(evidence)
        if yes.label == "supported":
            return Verdict("supported", yes.reason)
        no = self.refute(evidence)
        if no.label == "supported":
            return Verdict("not supported", f"refuted: {no.reason}")
        return Verdict("inconclusive", f"neither: {yes.reason}; {no.reason}")


def decisive(support: Rule, refute: Rule) -> Rule:
    """Two criteria fixed in advance: supported when ``support`` holds, not supported when ``refute`` holds
    (and ``support`` does not), inconclusive in between — e.g. "better by 0.02 nats in 2/3 of the seeds" vs
    "no better in 2/3 of the seeds"."""
    support, refute = _check_rules([support, refute])
    return _Decisive(support, refute)


@dataclass(frozen=True, repr=False)
class _Provided(Rule):
    precondition: Rule
    rule: Rule

    @property
    def criterion(self) -> str:  # type: ignore[override]
        return f"provided {self.precondition.criterion} (else inconclusive): {self.rule.criterion}"

    def __call__(self, evidence: Evidence) -> Verdict:
        pre = self.precondition(evidence)
        if pre.label != "supported":
            return Verdict("inconclusive", f"precondition not met: {pre.reason}")
        verdict = self.rule(evidence)
        return Verdict(verdict.label, f"{pre.reason}; {verdict.reason}")


def provided(precondition: Rule, rule: Rule) -> Rule:
    """Decide by ``rule`` only where ``precondition`` holds (say, the largest n reached 2000); otherwise the
    claim is inconclusive, whatever ``rule`` would say."""
    precondition, rule = _check_rules([precondition, rule])
    return _Provided(precondition, rule)


@dataclass(frozen=True, repr=False)
class _On(Rule):
    key: str
    rule: Rule

    def _named(self, text: str) -> str:
        # "value >= 1000" of a single-number detail reads "games >= 1000"
        return self.key + text[len("value"):] if text.startswith("value ") else f"{self.key}: {text}"

    @property
    def criterion(self) -> str:  # type: ignore[override]
        return self._named(self.rule.criterion)

    def __call__(self, evidence: Evidence) -> Verdict:
        if self.key not in evidence.details:
            return Verdict("inconclusive", f"{self.key}: not measured")
        raw = evidence.details[self.key]
        values = list(raw) if isinstance(raw, list | tuple | np.ndarray) else [raw]
        sub = Evidence(values=values, unit=evidence.unit, allow_missing=True)
        verdict = self.rule(sub)
        return Verdict(verdict.label, self._named(verdict.reason))


def on(key: str, rule: Rule) -> Rule:
    """Apply ``rule`` to ``evidence.details[key]`` (a number or a list of numbers)."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty string, got {key!r}")
    return _On(key, _check_rules([rule])[0])


@dataclass(frozen=True, repr=False)
class _Slope(Rule):
    x: str
    y: str
    at_most: float | None
    at_least: float | None
    min_n: int
    log: bool
    alpha: float

    @property
    def criterion(self) -> str:  # type: ignore[override]
        what = f"the {'log-log ' if self.log else ''}slope of {self.y} in {self.x}"
        bounds = " and ".join(b for b in (f"below {_fmt(self.at_most)}" if self.at_most is not None else "",
                                          f"above {_fmt(self.at_least)}" if self.at_least is not None else "") if b)
        return (f"the {100 * (1 - self.alpha):.0f}% t interval of {what} lies {bounds} (points >= {self.min_n}); "
                "not supported when it lies wholly beyond a bound; inconclusive when it spans one")

    def __call__(self, evidence: Evidence) -> Verdict:
        for key in (self.x, self.y):
            if key not in evidence.details:
                return Verdict("inconclusive", f"{key}: not measured")
        x, y = (np.asarray(evidence.details[k], dtype=float).ravel() for k in (self.x, self.y))
        if (few := _too_few(min(len(x), len(y)), self.min_n)) is not None:
            return few
        interval = stats.slope_interval(x, y, log=self.log, alpha=self.alpha)
        said = f"slope = {interval.text()}"
        wrong = ((self.at_most is not None and interval.low > self.at_most)
                 or (self.at_least is not None and interval.high < self.at_least))
        if wrong:
            return Verdict("not supported", f"{said}: wholly beyond the bound")
        inside = ((self.at_most is None or interval.high < self.at_most)
                  and (self.at_least is None or interval.low > self.at_least))
        return Verdict("supported" if inside else "inconclusive", said + ("" if inside else ": spans a bound"))


def slope(x: str, y: str, *, at_most: float | None = None, at_least: float | None = None, min_n: int = REQUIRED,
          log: bool = True, alpha: float = 0.05) -> Rule:
    """A scaling exponent decided on its interval: the least-squares slope of ``details[y]`` on ``details[x]``
    (log-log by default) with its t interval must lie below ``at_most`` and/or above ``at_least`` (supported),
    is not supported when it lies wholly beyond a bound, inconclusive when it spans one
    (:func:`neurips26.claims.stats.slope_interval`)."""
    if at_most is None and at_least is None:
        raise ValueError("slope: give at_most= and/or at_least=")
    for name, key in (("x", x), ("y", y)):
        if not isinstance(key, str) or not key:
            raise ValueError(f"slope: {name} must name an entry of evidence.details, got {key!r}")
    min_n = _check_min_n(min_n, "slope")
    if min_n < 3:
        raise ValueError(f"slope: a slope interval needs min_n >= 3 points, got {min_n}")
    bounds = [None if b is None else _check_bound(n, b) for n, b in (("at_most", at_most), ("at_least", at_least))]
    stats._check_alpha(alpha)
    return _Slope(x, y, bounds[0], bounds[1], min_n, bool(log), float(alpha))


@dataclass(frozen=True, repr=False)
class _Each(Rule):
    key: str
    rule: Rule

    @property
    def criterion(self) -> str:  # type: ignore[override]
        return f"for every group of {self.key}: {self.rule.criterion}"

    def __call__(self, evidence: Evidence) -> Verdict:
        groups = evidence.details.get(self.key)
        if not isinstance(groups, dict) or not groups:
            return Verdict("inconclusive", f"{self.key}: no groups measured")
        verdicts = {}
        for name, raw in groups.items():
            values = list(raw) if isinstance(raw, list | tuple | np.ndarray) else [raw]
            verdicts[name] = self.rule(Evidence(values=values, unit=evidence.unit, allow_missing=True))
        reason = "; ".join(f"{self.key}[{name}]: {v.label}: {v.reason}" for name, v in verdicts.items())
        return Verdict(_every([v.label for v in verdicts.values()]), reason)


def each(key: str, rule: Rule) -> Rule:
    """Apply ``rule`` to every group of ``evidence.details[key]`` (a dict group -> number or list of numbers,
    e.g. one entry per dimension d): supported when every group is, not supported when any group is not,
    inconclusive otherwise; the reason lists every group's verdict."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty string, got {key!r}")
    return _Each(key, _check_rules([rule])[0])


@dataclass(frozen=True, repr=False)
class _Custom(Rule):
    text: str
    decide: Callable[[Evidence], Verdict]
    min_n: int

    @property
    def criterion(self) -> str:  # type: ignore[override]
        return self.text

    def __call__(self, evidence: Evidence) -> Verdict:
        if (few := _too_few(len(_finite(evidence.values)), self.min_n)) is not None:
            return few
        verdict = self.decide(evidence)
        if not isinstance(verdict, Verdict):
            raise TypeError(f"a custom rule must return a Verdict, got {type(verdict).__name__}")
        return verdict


def custom(criterion: str, decide: Callable[[Evidence], Verdict], *, min_n: int = REQUIRED) -> Rule:
    """A rule the others cannot express: ``criterion`` in words, ``decide`` implements exactly it."""
    if not isinstance(criterion, str) or not criterion.strip():
        raise ValueError("criterion must be a non-empty sentence")
    if not callable(decide):
        raise TypeError(f"decide must be callable, got {type(decide).__name__}")
    return _Custom(criterion, decide, _check_min_n(min_n, "custom"))


__all__ = ["REQUIRED", "Rule", "all_of", "any_of", "at_least", "better", "beyond_se", "custom", "decisive", "each",
           "on", "provided", "ratio_at_least", "slope", "threshold"]
