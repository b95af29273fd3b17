"""claims v2: rules against hand-computed decisions, measure against closed forms, per-claim isolation,
strict JSON records, reports on --out folders and comparisons."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest
import torch

from neurips26.claims import CheckContext, Claim, Evidence, Paper, Verdict, measure, rules
from neurips26.claims import runner as runner_module
from neurips26.claims.catalog import lookup
from neurips26.claims.records import IN_PROGRESS, strict_json, write_json_atomic
from neurips26.claims.report import load_records, render_comparison, resolve_run_dir, write_report
from neurips26.data import DatasetNotFoundError


# ------------------------------------------------------------------------------------------ Evidence
def test_evidence_takes_numpy_and_any_sequence():
    ev = Evidence(values=np.array([1.0, 2.0]))
    assert ev.mean == 1.5 and ev.n == 2 and ev.values == [1.0, 2.0]
    assert Evidence(values=(np.float32(1), 3)).mean == 2.0
    assert Evidence(values=np.array([[1.0, 2.0], [3.0, 4.0]])).n == 4


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_evidence_refuses_non_finite_values_unless_missing_is_allowed(bad):
    with pytest.raises(ValueError, match=r"values\[1\].*allow_missing"):
        Evidence(values=[1.0, bad])
    ev = Evidence(values=[1.0, bad, 3.0], allow_missing=True)
    assert ev.values == [1.0, None, 3.0] and ev.n == 2 and ev.mean == 2.0 and "1 missing" in ev.summary()


@pytest.mark.parametrize("bad", ["abc", [1, "x"], [True], 3.0])
def test_evidence_refuses_non_numbers(bad):
    with pytest.raises(TypeError):
        Evidence(values=bad)


# ------------------------------------------------------------------------------------------ rules
def _ev(*values, **details):
    return Evidence(values=list(values), details=details)


@pytest.mark.parametrize("op,value,values,expected", [
    (">=", 2.0, (2.0, 2.0), "supported"),
    (">", 2.0, (2.0, 2.0), "not supported"),
    ("<", 0.5, (0.1, 0.2, 0.3), "supported"),
    ("<=", 0.1, (0.1, 0.2, 0.3), "not supported"),
])
def test_threshold_on_the_mean(op, value, values, expected):
    assert rules.threshold(op, value, min_n=1)(_ev(*values)).label == expected


def test_threshold_statistics_and_quantifiers_match_numpy():
    values = (1.0, 5.0, 2.0, 10.0)
    for stat, fn in (("median", np.median), ("min", np.min), ("max", np.max)):
        bound = float(fn(values))
        assert rules.threshold(">=", bound, stat=stat, min_n=1)(_ev(*values)).label == "supported"
        assert rules.threshold(">", bound, stat=stat, min_n=1)(_ev(*values)).label == "not supported"
    assert rules.threshold(">", 0.5, stat="all", min_n=1)(_ev(*values)).label == "supported"
    assert rules.threshold(">", 1.5, stat="all", min_n=1)(_ev(*values)).label == "not supported"
    assert rules.threshold(">", 9.0, stat="any", min_n=1)(_ev(*values)).label == "supported"


def test_threshold_refute_band_gives_inconclusive_between():
    rule = rules.threshold(">=", 2.0, refute=("<", 1.0), min_n=1)
    assert rule(_ev(2.5)).label == "supported"
    assert rule(_ev(1.5)).label == "inconclusive"
    assert rule(_ev(0.5)).label == "not supported"
    assert rule.criterion == "mean >= 2; refuted if mean < 1"


def test_threshold_otherwise_inconclusive_for_preconditions():
    rule = rules.on("n_max", rules.threshold(">=", 1e5, stat="value", otherwise="inconclusive", min_n=1))
    assert rule(_ev(1.0, n_max=1e4)).label == "inconclusive"
    verdict = rule(_ev(1.0, n_max=1e5))
    assert verdict.label == "supported" and verdict.reason == "n_max 1e+05; needs >= 1e+05"
    assert rule.criterion == "n_max >= 1e+05 (else inconclusive)"
    with pytest.raises(ValueError):
        rules.threshold(">", 0, otherwise="maybe", min_n=1)


def test_min_n_guard_makes_too_little_evidence_inconclusive():
    rule = rules.threshold(">", 0.0, min_n=3)
    verdict = rule(_ev(1.0, 2.0))
    assert verdict.label == "inconclusive" and "at least 3" in verdict.reason
    assert rule(_ev(1.0, 2.0, 3.0)).label == "supported"


def test_at_least_counts_and_fractions():
    assert rules.at_least(2, ">", 0, min_n=1)(_ev(1, -1, 2)).label == "supported"
    assert rules.at_least(3, ">", 0, min_n=1)(_ev(1, -1, 2)).label == "not supported"
    # ceil(2/3 * 3) = 2 of 3 needed, ceil(2/3 * 4) = 3 of 4 needed
    assert rules.at_least(2 / 3, ">", 0, min_n=3)(_ev(1, -1, 2)).label == "supported"
    assert rules.at_least(2 / 3, ">", 0, min_n=3)(_ev(1, -1, 2, -3)).label == "not supported"
    assert rules.at_least(3, ">", 0, min_n=1)(_ev(1, 2)).label == "inconclusive"  # fewer values than k


def test_beyond_se_against_a_hand_computed_standard_error():
    values = [0.3, 0.1, 0.2]
    se = np.std(values, ddof=1) / math.sqrt(3)  # 0.0577; mean 0.2 = 3.46 SE
    assert 3 < 0.2 / se < 4
    assert rules.beyond_se(3.0, min_n=2)(_ev(*values)).label == "supported"
    assert rules.beyond_se(4.0, min_n=2)(_ev(*values)).label == "inconclusive"
    assert rules.beyond_se(3.0, min_n=2)(_ev(*[-v for v in values])).label == "not supported"
    assert rules.beyond_se(2.0, direction="less", min_n=2)(_ev(*[-v for v in values])).label == "supported"
    assert rules.beyond_se(2.0, reference=0.5, min_n=2)(_ev(*values)).label == "not supported"
    assert rules.beyond_se(min_n=2)(_ev(1.0)).label == "inconclusive"
    # identical values (a quantised metric, seeds that change nothing) have no SE: never a decision
    zero_spread = rules.beyond_se(min_n=2)(_ev(1 / 600, 1 / 600, 1 / 600))
    rounded = rules.beyond_se(min_n=2)(_ev(0.7 - 0.7 + 1 / 600, 1 / 600, 0.3 + 1 / 600 - 0.3))  # SE ~1e-17, not 0
    assert rounded.label == "inconclusive" and "zero spread" in rounded.reason
    float32 = rules.beyond_se(min_n=2)(_ev(0.0016667, 0.00166668, 0.00166673))  # smartres C5 quick, 2026-12-02
    assert float32.label == "inconclusive"
    assert zero_spread.label == "inconclusive" and "zero spread" in zero_spread.reason


def test_combinators_follow_their_truth_tables():
    yes, no = rules.threshold(">", 0, min_n=1), rules.threshold("<", 0, min_n=1)
    maybe = rules.threshold(">", 10, refute=("<", -10), min_n=1)
    ev = _ev(1.0)
    assert rules.all_of(yes, yes)(ev).label == "supported"
    assert rules.all_of(yes, maybe)(ev).label == "inconclusive"
    assert rules.all_of(yes, maybe, no)(ev).label == "not supported"
    assert rules.any_of(no, yes)(ev).label == "supported"
    assert rules.any_of(no, maybe)(ev).label == "inconclusive"
    assert rules.any_of(no, no)(ev).label == "not supported"


def test_decisive_has_a_support_and_a_refutation_rule():
    rule = rules.decisive(rules.at_least(2 / 3, "<=", -0.02, min_n=3), rules.at_least(2 / 3, ">=", 0.0, min_n=3))
    assert rule(_ev(-0.1, -0.05, 0.3)).label == "supported"
    assert rule(_ev(0.1, 0.05, -0.3)).label == "not supported"
    assert rule(_ev(-0.01, -0.01, 0.3)).label == "inconclusive"
    assert rule.criterion.startswith("supported if at least 0.667 of the values <= -0.02 (n >= 3); not supported if")
    nested = rules.all_of(rules.any_of(rules.threshold(">", 0, min_n=1), rules.threshold("<", -5, min_n=1)), rules.threshold("<", 9, min_n=1))
    assert nested.criterion == "((mean > 0); or (mean < -5)); and mean < 9"


def test_provided_gates_on_a_precondition():
    rule = rules.provided(rules.on("n", rules.threshold(">=", 2000, stat="value", min_n=1)), rules.threshold(">=", 100, min_n=1))
    assert rule(_ev(50.0, n=200)).label == "inconclusive"  # not "not supported": n too small to say
    assert rule(_ev(50.0, n=2000)).label == "not supported"
    assert rule(_ev(150.0, n=2000)).label == "supported"
    assert rule.criterion == "provided n >= 2000 (else inconclusive): mean >= 100"


def test_on_reads_details_and_says_when_a_key_is_missing():
    rule = rules.on("slope", rules.threshold("<=", 0.2, stat="max", min_n=1))
    assert rule(_ev(1.0, slope=[0.1, 0.15])).label == "supported"
    assert rule(_ev(1.0, slope=0.3)).label == "not supported"
    assert rule(_ev(1.0)).label == "inconclusive"
    assert rule.criterion == "slope: max <= 0.2"


def test_custom_rule_and_criterion_rendering():
    rule = rules.custom("supported if the first value is odd",
                        lambda ev: Verdict("supported" if ev.values[0] % 2 else "not supported", "parity"), min_n=1)
    assert rule(_ev(3.0)).label == "supported" and rule.criterion == "supported if the first value is odd"
    with pytest.raises(TypeError):
        rules.custom("x", lambda ev: "supported", min_n=1)(_ev(1.0))


@pytest.mark.parametrize("make", [
    lambda: rules.threshold("=>", 1.0, min_n=1), lambda: rules.threshold(">", math.nan, min_n=1),
    lambda: rules.threshold(">", 1.0, stat="mode", min_n=1), lambda: rules.threshold(">", 1.0, min_n=0),
    lambda: rules.at_least(0, ">", 1.0, min_n=1), lambda: rules.at_least(1.5, ">", 1.0, min_n=3),
    lambda: rules.beyond_se(-1.0, min_n=2), lambda: rules.beyond_se(direction="up", min_n=2), lambda: rules.beyond_se(min_n=1),
    lambda: rules.all_of(), lambda: rules.on("", rules.threshold(">", 0, min_n=1)),
])
def test_bad_rule_parameters_are_refused(make):
    with pytest.raises((ValueError, TypeError)):
        make()


def test_claim_takes_its_criterion_from_the_rule_and_refuses_both_forms():
    rule = rules.threshold(">=", 2.0, min_n=3)
    claim = Claim("C1", "s", "2x", "m", rule=rule, context="on every stream:", measure=lambda ctx: None)
    assert claim.criterion == "on every stream: mean >= 2 (n >= 3)" and claim.decide is rule
    with pytest.raises(ValueError, match="come from rule"):
        Claim("C1", "s", "2x", "m", criterion="x", rule=rule, measure=lambda ctx: None)
    with pytest.raises(ValueError, match="needs rule"):
        Claim("C1", "s", "2x", "m")


# ------------------------------------------------------------------------------------------ measure
def test_loglog_slope_recovers_a_power_law_exactly():
    x = np.array([10, 100, 1000, 1e4])
    fit = measure.loglog_slope(x, 3.0 * x ** 1.5)
    assert fit.slope == pytest.approx(1.5) and fit.r2 == pytest.approx(1.0)
    assert math.exp(fit.intercept) == pytest.approx(3.0)
    assert fit.predict(1e5) == pytest.approx(3.0 * 1e5 ** 1.5)


@pytest.mark.parametrize("x,y", [([1, 2], [1]), ([1], [1]), ([1, 2], [0, 1]), ([1, 1], [1, 2]),
                                 ([1, math.nan], [1, 2])])
def test_loglog_slope_refuses_bad_input(x, y):
    with pytest.raises(ValueError):
        measure.loglog_slope(x, y)


def test_timeit_counts_calls_and_reports_robust_statistics():
    calls = []
    timing = measure.timeit(lambda: calls.append(time.sleep(0.002)), warmup=2, repeats=5, clock="wall")
    assert len(calls) == 7 and len(timing.values) == 5
    assert timing.median >= 0.002 and timing.min <= timing.median and timing.iqr >= 0
    with pytest.raises(ValueError):
        measure.timeit(lambda: None, clock="sundial")
    with pytest.raises(ValueError):
        measure.timeit(lambda: None, repeats=0)


def test_process_clock_does_not_count_sleeping():
    timing = measure.timeit(lambda: time.sleep(0.05), warmup=0, repeats=1, clock="process")
    assert timing.median < 0.02


def test_saved_tensor_bytes_equals_the_saved_activations():
    x = torch.randn(64, 32, requires_grad=True)
    w = torch.randn(32, 16, requires_grad=True)
    # x @ w saves x (64*32) and w (32*16) float32; exp saves its output (64*16).
    got = measure.saved_tensor_bytes(lambda: (x @ w).exp().sum())
    assert got == 4 * (64 * 32 + 32 * 16 + 64 * 16)
    assert measure.saved_tensor_bytes(lambda: (x.detach() @ w.detach()).exp()) == 0


def test_peak_rss_subprocess_sees_a_large_allocation():
    small = measure.peak_rss_subprocess("builtins:print", "hello")
    big = measure.peak_rss_subprocess("builtins:exec", "x = bytearray(200_000_000); x[::4096] = b'1' * len(x[::4096])")
    with pytest.raises(ValueError):
        measure.peak_rss_subprocess("no colon")
    with pytest.raises(RuntimeError, match="exit code"):
        measure.peak_rss_subprocess("math:no_such_function")
    assert 1e6 < small < 5e8
    assert big - small > 1.5e8


# ------------------------------------------------------------------------------------------ runner
def _run_with(monkeypatch, tmp_path, paper, scale="quick"):
    monkeypatch.setattr(runner_module, "load_paper", lambda name: paper)
    return runner_module.run_checks([lookup("effbench")], scale=scale, out_root=tmp_path, show_progress=False)


def _v2_paper(*claims):
    return Paper(id="P12", slug="effbench", claims=claims, default_seeds={"quick": 3, "smoke": 1})


def test_one_failing_claim_never_sinks_the_others(monkeypatch, tmp_path):
    def good(ctx):
        ctx.metrics["good"] = 1
        return Evidence([1.0 for _ in ctx.seeds])

    def broken(ctx):
        raise ZeroDivisionError("bad luck")

    def needs_data(ctx):
        raise DatasetNotFoundError("planetoid/cora", [], "neurips26 data fetch planetoid/cora")

    paper = _v2_paper(
        Claim("C1", "s", "p", "m", rule=rules.threshold(">", 0, min_n=3), measure=good),
        Claim("C2", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=broken),
        Claim("C3", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=needs_data),
        Claim("C4", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=pytest.fail, scales=("full",)))
    run_dir, runs = _run_with(monkeypatch, tmp_path, paper)
    record = json.loads((run_dir / "effbench.json").read_text())
    by_id = {claim["id"]: claim for claim in record["claims"]}
    assert by_id["C1"]["verdict"] == "supported" and record["metrics"] == {"good": 1}
    assert by_id["C2"]["verdict"] == "inconclusive" and "ZeroDivisionError: bad luck" in by_id["C2"]["error"]
    assert "Traceback" in by_id["C2"]["traceback"]
    assert by_id["C3"]["verdict"] == "skipped" and "error" not in by_id["C3"]
    assert by_id["C3"]["fix"] == "neurips26 data fetch planetoid/cora"
    assert by_id["C4"]["verdict"] == "inconclusive" and "not decided" in by_id["C4"]["reason"]
    assert runs[0].claim_errors == 1 and not (run_dir / IN_PROGRESS).exists()


def test_smoke_measures_every_claim_but_decides_only_where_declared(monkeypatch, tmp_path):
    seen = []

    def measure_it(ctx):
        seen.append(ctx.scale)
        return Evidence([1.0])

    paper = _v2_paper(Claim("C1", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=measure_it,
                            scales=("quick", "full")))
    _, runs = _run_with(monkeypatch, tmp_path, paper, scale="smoke")
    claim = runs[0].record["claims"][0]
    assert seen == ["smoke"] and claim["verdict"] == "inconclusive" and "exercise" in claim["reason"]
    assert claim["measured"]["values"] == [1.0]


def test_shared_computations_run_once_and_failures_are_shared(monkeypatch, tmp_path):
    counter = {"ok": 0, "bad": 0}

    def train(ctx):
        def compute():
            counter["ok"] += 1
            return 2.0
        return ctx.cache("train", compute)

    def bad(ctx):
        def compute():
            counter["bad"] += 1
            raise RuntimeError("diverged")
        return ctx.cache("bad", compute)

    paper = _v2_paper(
        Claim("C1", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=lambda ctx: Evidence([train(ctx)])),
        Claim("C2", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=lambda ctx: Evidence([train(ctx)])),
        Claim("C3", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=lambda ctx: Evidence([bad(ctx)])),
        Claim("C4", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1), measure=lambda ctx: Evidence([bad(ctx)])))
    _, runs = _run_with(monkeypatch, tmp_path, paper)
    assert counter == {"ok": 1, "bad": 1}
    assert [c["verdict"] for c in runs[0].record["claims"]] == ["supported", "supported", "inconclusive",
                                                                "inconclusive"]


def test_records_are_strict_json_with_non_finite_values_named(tmp_path):
    data = {"a": math.nan, "b": [1.0, math.inf], "c": {"d": np.float64(-np.inf)}, "e": np.arange(2)}
    clean, replaced = strict_json(data)
    assert clean == {"a": None, "b": [1.0, None], "c": {"d": None}, "e": [0, 1]}
    assert replaced == ["$.a = nan", "$.b[1] = inf", "$.c.d = -inf"]
    path = write_json_atomic(tmp_path / "r.json", data)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    loaded = json.loads(text, parse_constant=lambda name: pytest.fail(f"non-strict token {name}"))
    assert loaded["non_finite"] == replaced


def test_report_accepts_the_out_folder_and_compares_runs(monkeypatch, tmp_path):
    values = iter([[1.0], [-1.0]])
    paper = _v2_paper(Claim("C1", "s", "p", "m", rule=rules.threshold(">", 0, min_n=1),
                            measure=lambda ctx: Evidence(next(values))))
    first, _ = _run_with(monkeypatch, tmp_path, paper)
    time.sleep(1.1)  # run folders are named by the second; the newest must sort last
    second, _ = _run_with(monkeypatch, tmp_path, paper)
    assert resolve_run_dir(tmp_path) == second
    md, html = write_report(tmp_path)
    assert md.parent == second
    text = html.read_text()
    assert "<td class='v not-supported'" in text and "title='mean -1; needs &gt; 0'" in text
    diff = render_comparison(load_records(first), load_records(second), "old", "new")
    assert "1 claim(s) differ" in diff and "**supported** | **not supported**" in diff


def test_load_records_names_a_missing_field(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"paper_id": "P01", "slug": "tst"}))
    with pytest.raises(ValueError, match="missing scale, status"):
        load_records(tmp_path)


def test_context_collects_notes_and_captioned_plots(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ctx = CheckContext(scale="smoke", seeds=[0], device="cpu", out_dir=tmp_path / "p")
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    path = ctx.save_figure(fig, "a.png", caption="a line")
    ctx.note("hello")
    assert path.is_file() and ctx.plots == [{"path": str(path), "caption": "a line"}] and ctx.notes == ["hello"]
