"""claims v3: intervals against scipy, comparisons with margins, preconditions, kinds, missing cells, equal
tuning, paired timing, and the verdicts of record with their generated README tables."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from neurips26.claims import (
    Claim,
    Evidence,
    Paper,
    Precondition,
    measure,
    measure_claims,
    of_record,
    preconditions,
    rules,
    stats,
    tally,
    tune,
    tune_arms,
)
from neurips26.claims.spec import CheckContext


def _ctx(tmp_path, scale="quick"):
    return CheckContext(scale=scale, seeds=[0, 1, 2], device="cpu", out_dir=tmp_path, show_progress=False)


# ------------------------------------------------------------------------------------------ intervals
def test_t_interval_equals_scipy():
    d = np.array([0.3, -0.1, 0.5, 0.2, 0.4, 0.1])
    ours = stats.mean_interval(d, method="t")
    ref = sps.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high))


def test_welch_interval_equals_scipy():
    a, b = np.array([1.0, 2.0, 3.5, 2.2]), np.array([0.2, 0.9, 0.4, 1.5, 0.3])
    ours = stats.difference_interval(a, b, paired=False, method="t")
    ref = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high))


def test_bootstrap_interval_close_to_scipy_percentile():
    rng = np.random.default_rng(1)
    d = rng.normal(0.5, 1.0, size=60)
    ours = stats.mean_interval(d, method="bootstrap", seed=3)
    ref = sps.bootstrap((d,), np.mean, method="percentile", n_resamples=20000, random_state=4).confidence_interval
    spread = ref.high - ref.low
    assert abs(ours.low - ref.low) < 0.05 * spread and abs(ours.high - ref.high) < 0.05 * spread
    assert stats.mean_interval(d, method="bootstrap", seed=3) == ours  # seeded: deterministic


def test_mcnemar_interval_maps_the_exact_binomial_interval():
    a = np.array([1] * 30 + [0] * 10 + [1] * 50 + [0] * 10)   # 30 only-a, 10 only-b
    b = np.array([0] * 30 + [1] * 10 + [1] * 50 + [0] * 10)
    ours = stats.mcnemar_interval(a, b)
    ci = sps.binomtest(30, 40, 0.5).proportion_ci(0.95, method="exact")
    assert ours.estimate == pytest.approx(0.2)
    assert (ours.low, ours.high) == pytest.approx((0.4 * (2 * ci.low - 1), 0.4 * (2 * ci.high - 1)))
    same = stats.mcnemar_interval(a, a)
    assert (same.low, same.high) == (0.0, 0.0)
    with pytest.raises(ValueError, match="0/1"):
        stats.mcnemar_interval([0.5, 1], [1, 0])


def test_log_ratio_interval_is_the_exponentiated_mean_log_interval():
    r = np.array([1.8, 2.1, 2.0, 1.9, 2.2])
    ours = stats.log_ratio_interval(r, method="t")
    ref = sps.ttest_1samp(np.log(r), 0.0).confidence_interval(0.95)
    assert (ours.low, ours.high) == pytest.approx((np.exp(ref.low), np.exp(ref.high)))
    with pytest.raises(ValueError, match="positive"):
        stats.log_ratio_interval([1.0, -1.0])


# ------------------------------------------------------------------------------------------ better / ratio
def test_better_decides_on_the_interval_and_its_margin():
    clear = Evidence([0.30, 0.32, 0.29, 0.31, 0.33])
    assert rules.better(margin=0.0, min_n=3, test="t")(clear).label == "supported"
    assert rules.better(margin=0.5, min_n=3, test="t")(clear).label == "not supported"
    assert rules.better(margin=0.31, min_n=3, test="t")(clear).label == "inconclusive"
    noisy = Evidence([0.5, -0.4, 0.3, -0.2])
    assert rules.better(margin=0.0, min_n=3, test="t")(noisy).label == "inconclusive"
    assert rules.better(margin=0.0, min_n=10, test="t")(clear).label == "inconclusive"  # too few
    loss_drop = Evidence([-0.3, -0.32, -0.29])  # ours - baseline of a loss: negative is better
    assert rules.better(margin=0.0, min_n=3, higher_is_better=False, test="t")(loss_drop).label == "supported"


def test_better_on_named_per_item_arrays_with_mcnemar():
    rng = np.random.default_rng(0)
    truth_a, truth_b = rng.random(400) < 0.85, rng.random(400) < 0.6
    ev = Evidence([1.0], details={"ours": truth_a.astype(int).tolist(), "base": truth_b.astype(int).tolist()})
    assert rules.better("ours", "base", margin=0.0, min_n=100, test="mcnemar")(ev).label == "supported"
    assert rules.better("base", "ours", margin=0.0, min_n=100, test="mcnemar")(ev).label == "not supported"


def test_comparisons_need_a_margin_and_min_n_and_coherent_arguments():
    with pytest.raises(TypeError, match="margin is required"):
        rules.better(min_n=3)
    with pytest.raises(TypeError, match="min_n is required"):
        rules.better(margin=0.0)
    with pytest.raises(TypeError, match="min_n is required"):
        rules.threshold(">", 1.0)
    with pytest.raises(ValueError, match="metric= and than="):
        rules.better("ours", margin=0.0, min_n=3)
    with pytest.raises(ValueError, match="mcnemar"):
        rules.better(margin=0.0, min_n=3, test="mcnemar")
    with pytest.raises(ValueError, match="exact-tie"):
        rules.threshold(">", 0.0, refute=("<=", 0.0), min_n=3)
    with pytest.raises(ValueError, match="min_n >= 3"):
        rules.at_least(2 / 3, ">", 0.0, min_n=1)
    with pytest.raises(ValueError, match="positive"):
        rules.ratio_at_least(0.0, min_n=3)


def test_ratio_at_least_on_its_log_interval():
    ev = Evidence([1.9, 2.0, 2.1, 1.95, 2.05])
    assert rules.ratio_at_least(1.5, min_n=5, test="t")(ev).label == "supported"
    assert rules.ratio_at_least(3.0, min_n=5, test="t")(ev).label == "not supported"
    assert rules.ratio_at_least(2.0, min_n=5, test="t")(ev).label == "inconclusive"


# ------------------------------------------------------------------------------------------ claims v3
def _claim(**kw):
    base = dict(id="C1", statement="s", paper_value="p", metric="m", rule=rules.threshold(">", 0, min_n=1),
                measure=lambda ctx: Evidence([1.0]))
    base.update(kw)
    return Claim(**base)


def _paper(*claims):
    return Paper(id="P12", slug="effbench", claims=claims)


def test_an_unmet_precondition_makes_the_claim_inconclusive_and_is_recorded(tmp_path):
    weak = preconditions.beats_reference("model beats chance", lambda ctx: Evidence([0.01, -0.02, 0.0]),
                                         margin=0.05, min_n=3)
    strong = preconditions.beats_reference("model beats chance", lambda ctx: Evidence([0.2, 0.3, 0.25]),
                                           margin=0.05, min_n=3)
    out = measure_claims(_paper(_claim(preconditions=(weak,)), _claim(id="C2", preconditions=(strong,))),
                         _ctx(tmp_path))
    assert out[0]["verdict"] == "inconclusive"
    assert out[0]["reason"].startswith("precondition not met: model beats chance (")
    assert "the rule alone: supported" in out[0]["reason"]
    assert out[0]["preconditions"][0]["met"] is False and out[0]["preconditions"][0]["criterion"]
    assert out[1]["verdict"] == "supported" and out[1]["preconditions"][0]["met"] is True


def test_a_failing_precondition_measure_is_inconclusive_with_its_error(tmp_path):
    def broken(ctx):
        raise RuntimeError("probe crashed")

    pre = Precondition("probe", broken, rules.threshold(">", 0, min_n=1))
    out = measure_claims(_paper(_claim(preconditions=(pre,))), _ctx(tmp_path))
    assert out[0]["verdict"] == "inconclusive" and "probe crashed" in out[0]["preconditions"][0]["error"]


def test_converged_precondition_reads_the_curves():
    assert preconditions.relative_improvement([2.0, 1.5, 1.2, 1.19, 1.188], 2) == pytest.approx((1.2 - 1.188) / 1.2)
    assert preconditions.relative_improvement([0.5, 0.7, 0.71], 1, higher_is_better=True) == pytest.approx(0.01 / 0.7)
    flat = Evidence([1.0], details={"curves": [[3, 2, 1.0, 0.999, 0.998]] * 3})
    falling = Evidence([1.0], details={"curves": [[3, 2, 1.5, 1.2, 0.9]] * 3})
    pre = preconditions.converged("converged", lambda ctx: flat, delta=0.01, k=2, min_n=3)
    assert pre.rule(flat).label == "supported" and pre.rule(falling).label == "not supported"
    assert pre.rule(Evidence([1.0], details={"curves": [[3, 2, 1]]})).label == "inconclusive"


def test_missing_cells_make_a_claim_inconclusive_unless_registered_per_cell(tmp_path):
    partial = lambda ctx: Evidence([1.0, 2.0], missing=("cora", "citeseer"))  # noqa: E731
    out = measure_claims(_paper(_claim(measure=partial), _claim(id="C2", measure=partial, per_cell=True)),
                         _ctx(tmp_path))
    assert out[0]["verdict"] == "inconclusive" and "cora, citeseer" in out[0]["reason"]
    assert out[0]["missing"] == ["cora", "citeseer"]
    assert out[1]["verdict"] == "supported"


def test_trained_comparisons_need_preconditions_and_a_tuning_statement(tmp_path):
    pre = preconditions.headroom("probe learns", lambda ctx: Evidence([0.9]), at_least=0.7, min_n=1)
    with pytest.raises(ValueError, match="precondition"):
        _claim(compares_trained=True, tuning="equal")
    with pytest.raises(ValueError, match="tuning"):
        _claim(compares_trained=True, preconditions=(pre,))
    declared = _claim(compares_trained=True, preconditions=(pre,), tuning="equal")
    out = measure_claims(_paper(declared), _ctx(tmp_path))
    assert out[0]["verdict"] == "inconclusive" and "tuned arms" in out[0]["reason"]

    def tuned_measure(ctx):
        tune_arms({"ours": (lambda p, s: p["lr"], {"lr": [1, 2]}), "base": (lambda p, s: -p["lr"], {"lr": [1, 2]})},
                  ctx=ctx)
        return Evidence([1.0])

    out = measure_claims(_paper(_claim(compares_trained=True, preconditions=(pre,), tuning="equal",
                                       measure=tuned_measure)), _ctx(tmp_path))
    assert out[0]["verdict"] == "supported" and out[0]["tuning"] == "equal"


def test_kinds_are_checked_and_sanity_claims_are_not_counted(tmp_path):
    with pytest.raises(ValueError, match="kind"):
        _claim(kind="theorem")
    out = measure_claims(_paper(_claim(), _claim(id="C2", kind="sanity")), _ctx(tmp_path))
    counts = tally(out)
    assert counts["supported"] == 1 and counts["sanity"] == 1 and counts["sanity_passed"] == 1


# ------------------------------------------------------------------------------------------ tuning
def test_tune_picks_the_best_on_validation_and_refuses_the_test_split(tmp_path):
    seen = []

    def train_eval(params, split):
        seen.append(split)
        return -(params["lr"] - 0.01) ** 2

    ctx = _ctx(tmp_path)
    result = tune(train_eval, {"lr": [0.001, 0.01, 0.1]}, arm="ours", ctx=ctx)
    assert result.best == {"lr": 0.01} and set(seen) == {"validation"}
    assert ctx.tuning[0]["arm"] == "ours" and ctx.tuning[0]["size"] == 3
    with pytest.raises(ValueError, match="test"):
        tune(train_eval, {"lr": [0.1]}, arm="ours", split="test")
    with pytest.raises(ValueError, match="finite"):
        tune(lambda p, s: float("nan"), {"lr": [0.1]}, arm="ours")


def test_tune_arms_refuses_grids_of_different_sizes_before_training():
    calls = []
    fn = lambda p, s: calls.append(p) or 0.0  # noqa: E731
    with pytest.raises(ValueError, match="same number"):
        tune_arms({"ours": (fn, {"lr": [1, 2, 3]}), "base": (fn, {"lr": [1]})})
    assert calls == []
    out = tune_arms({"ours": (fn, {"lr": [1, 2, 3], "wd": [0, 1]}), "base": (fn, {"lr": [1, 2, 3, 4, 5, 6]})},
                    budget=4)
    assert len(out["ours"].grid) == len(out["base"].grid) == 4


# ------------------------------------------------------------------------------------------ timing
def test_timeit_pair_interleaves_and_reports_an_interval():
    order = []

    def a():
        order.append("a")
        sum(range(20_000))

    def b():
        order.append("b")
        sum(range(80_000))

    result = measure.timeit_pair(a, b, repeats=5, warmup=1)
    assert order == ["a", "b"] * 6
    assert result.ratio > 1.5 and result.lo <= result.ratio <= result.hi
    assert result.evidence().n == 5 and result.threads == 1
    with pytest.raises(ValueError, match="repeats"):
        measure.timeit_pair(a, b, repeats=1)


# ------------------------------------------------------------------------------------------ of record
def _record(slug="effbench", scale="quick", verdict="supported", digest=None):
    return {"schema": 3, "paper_id": "P12", "slug": slug, "scale": scale, "status": "ok",
            "start_time": "2026-12-01T10:00:00+00:00", "seeds": [0, 1, 2], "cpu_s": 12.5, "duration_s": 8.0,
            "budget_s": 240, "load": {"start": [0.5, 0.4, 0.3]}, "git": {"commit": "abc", "dirty": False},
            "source_sha256": digest or of_record.source_digest(slug), "plots": [],
            "claims": [{"id": "C1", "kind": "paper", "verdict": verdict, "reason": "r", "paper_value": "1",
                        "measured": {"summary": "1.5"}, "preconditions": []},
                       {"id": "C2", "kind": "sanity", "verdict": "supported", "reason": "r", "paper_value": "-",
                        "measured": {"summary": "1"}, "preconditions": []}]}


def test_save_and_load_a_record_of_record(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "effbench").mkdir(parents=True)
    (run_dir / "effbench" / "p.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    record = _record()
    record["plots"] = [{"path": "effbench/p.png", "caption": "c"}]
    path = of_record.save_of_record(record, run_dir, root=tmp_path / "results")
    assert path == tmp_path / "results" / "effbench" / "quick.json"
    loaded = of_record.load_of_record("effbench", "quick", root=tmp_path / "results")
    assert loaded["plots"][0]["path"] == "quick/p.png" and (path.parent / "quick" / "p.png").is_file()
    assert of_record.is_stale(loaded) is False
    assert of_record.is_stale({**loaded, "source_sha256": "0" * 64}) is True


def test_corrupt_or_foreign_records_are_refused_by_name(tmp_path):
    root = tmp_path / "results"
    (root / "effbench").mkdir(parents=True)
    (root / "effbench" / "quick.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        of_record.load_of_record("effbench", "quick", root=root)
    (root / "effbench" / "quick.json").write_text(json.dumps(_record(slug="tst")))
    with pytest.raises(ValueError, match="'slug'"):
        of_record.load_of_record("effbench", "quick", root=root)
    with pytest.raises(ValueError, match="scale of record"):
        of_record.record_path("effbench", "smoke", root=root)


def test_paper_table_is_deterministic_and_marks_sanity_and_staleness(tmp_path):
    root = tmp_path / "results"
    (root / "effbench").mkdir(parents=True)
    (root / "effbench" / "quick.json").write_text(json.dumps(_record(digest="f" * 64)))
    first = of_record.render_paper_table("effbench", root=root)
    assert first == of_record.render_paper_table("effbench", root=root)
    assert "| C2 | sanity | S |" in first and "stale" in first
    top = of_record.render_top_table(root=root)
    assert "S 1 · N 0 · I 0; sanity 1/1 (C1 S)" in top and "no verdict of record yet" in top


def test_replace_between_markers_and_refuses_a_half_pair():
    text = "a\n<!-- papers:start -->\nold\n<!-- papers:end -->\nb\n"
    assert of_record.replace_between(text, of_record.TOP_MARKERS, "new") == \
        "a\n<!-- papers:start -->\nnew\n<!-- papers:end -->\nb\n"
    with pytest.raises(ValueError, match="only one"):
        of_record.replace_between("<!-- papers:start -->", of_record.TOP_MARKERS, "x")
    assert of_record.replace_between("# t\n", of_record.PAPER_MARKERS, "x", append_heading="## V").endswith(
        "## V\n\n<!-- verdicts:start -->\nx\n<!-- verdicts:end -->\n")


# ------------------------------------------------------------------------------------------ registration
def test_a_paper_registers_itself_by_its_declaration(tmp_path):
    from neurips26.claims.catalog import CATALOG, read_declaration

    folder = tmp_path / "newpaper"
    folder.mkdir()
    (folder / "check.py").write_text('PAPER = Paper(id="P20", slug="newpaper", method="M", title="T", arxiv=None,\n'
                                     '              claims=CLAIMS)\n')
    entry = read_declaration(folder / "check.py")
    assert (entry.id, entry.slug, entry.method, entry.title, entry.arxiv) == ("P20", "newpaper", "M", "T", None)
    (folder / "check.py").write_text('PAPER = Paper(id="P20", slug="other", method="M", title="T", claims=C)\n')
    with pytest.raises(ValueError, match="not its folder"):
        read_declaration(folder / "check.py")
    (folder / "check.py").write_text('PAPER = Paper(id="P20", slug="newpaper", claims=C)\n')
    with pytest.raises(ValueError, match="method, title"):
        read_declaration(folder / "check.py")
    assert [e.id for e in CATALOG] == sorted(e.id for e in CATALOG)


def test_every_paper_folder_registers():
    from neurips26.claims.catalog import CATALOG, DISCOVERY_ERRORS

    assert DISCOVERY_ERRORS == {} and len(CATALOG) == 19


def test_better_label_names_the_values_and_margin_is_on_the_oriented_scale():
    rule = rules.better(margin=0.45, min_n=3, higher_is_better=False, test="t", label="the per-seed slope b")
    assert "the per-seed slope b lies below -0.45" in rule.criterion
    assert rule(Evidence([-0.50, -0.52, -0.51])).label == "supported"
    assert rule(Evidence([-0.30, -0.31, -0.32])).label == "not supported"


def test_each_decides_every_group_and_combines():
    rule = rules.each("per_d", rules.ratio_at_least(10.0, min_n=3, test="t"))
    good = Evidence([1.0], details={"per_d": {"2": [900, 950, 940], "8": [400, 460, 420]}})
    mixed = Evidence([1.0], details={"per_d": {"2": [900, 950, 940], "8": [2.0, 2.1, 1.9]}})
    assert rule(good).label == "supported" and "per_d[8]" in rule(good).reason
    assert rule(mixed).label == "not supported"
    assert rule(Evidence([1.0])).label == "inconclusive"
    assert rule.criterion.startswith("for every group of per_d:")


def test_slope_interval_equals_scipy_linregress_and_the_rule_decides_on_it():
    x = np.array([10, 100, 1000, 1e4])
    y = np.array([170.0, 300.0, 480.0, 560.0])
    ours = stats.slope_interval(x, y)
    fit = sps.linregress(np.log(x), np.log(y))
    half = sps.t.ppf(0.975, 2) * fit.stderr
    assert (ours.estimate, ours.low, ours.high) == pytest.approx((fit.slope, fit.slope - half, fit.slope + half))
    ev = Evidence([1.0], details={"L": x.tolist(), "rounds": y.tolist()})
    assert rules.slope("L", "rounds", at_most=1.0, min_n=3)(ev).label == "supported"
    assert rules.slope("L", "rounds", at_most=0.05, min_n=3)(ev).label == "not supported"
    assert rules.slope("L", "rounds", at_most=0.2, min_n=3)(ev).label == "inconclusive"
    with pytest.raises(ValueError, match="at_most"):
        rules.slope("L", "rounds", min_n=3)


def test_timeit_pair_limits_numpy_blas_threads_and_restores_them():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    seen = []

    def probe():
        seen.append(max((p["num_threads"] for p in threadpoolctl.threadpool_info()), default=1))

    before = [p["num_threads"] for p in threadpoolctl.threadpool_info()]
    measure.timeit_pair(probe, probe, repeats=2, warmup=0)
    assert set(seen) == {1}
    assert [p["num_threads"] for p in threadpoolctl.threadpool_info()] == before


def test_limited_threads_sets_and_restores_torch_and_blas_pools_even_on_error():
    import torch
    from threadpoolctl import threadpool_info

    from neurips26.claims import measure

    before = torch.get_num_threads()
    try:
        with measure.limited_threads(1):
            assert torch.get_num_threads() == 1
            assert all(pool["num_threads"] == 1 for pool in threadpool_info())
            raise KeyError("inside")
    except KeyError:
        pass
    assert torch.get_num_threads() == before
    with measure.limited_threads(None):  # None leaves them as they are
        assert torch.get_num_threads() == before
