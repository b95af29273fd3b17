"""The wlia claim check: pre-registered rules on hand-made evidence, and the dev-seed protocol (the estimator
and λ are chosen from the dev seed's runs only; test seeds are never read before the choice)."""

import numpy as np
import pytest

from neurips26.claims import CheckContext, Evidence
from neurips26.wlia import check
from neurips26.wlia.check import ATTACKS, CLAIMS, DEV_SEED, PAPER, Run, choose_lambdas

RULE = {c.id: c.rule for c in CLAIMS}


def test_paper_declares_claims_per_optimizer_and_the_rnr_claims():
    ids = [c.id for c in CLAIMS]
    assert ids == [f"C{i}-{o}" for o in ("sgd", "momentum", "adam") for i in (1, 2, 3)] + ["C4", "C5"]
    assert all(c.measure is not None and c.preconditions and c.compares_trained for c in CLAIMS)
    assert DEV_SEED not in range(PAPER.default_seeds["full"])


def test_c1_is_decided_on_the_interval_of_per_cell_ratios_not_on_one_cell():
    rule = RULE["C1-sgd"]
    assert rule(Evidence(values=[3.0, 4.0, 2.5, 3.5, 5.0, 0.95])).label == "supported"  # one weak cell: no veto
    assert rule(Evidence(values=[1.0, 1.1, 0.9, 1.05, 1.2, 0.95])).label == "not supported"
    assert rule(Evidence(values=[3.0] * 5)).label == "inconclusive"  # fewer than MIN_CELLS


def test_c2_c3_need_the_interval_above_the_margin():
    for cid in ("C2-adam", "C3-momentum"):
        assert RULE[cid](Evidence(values=[0.05, 0.06, 0.04, 0.05, 0.07, 0.06])).label == "supported"
        assert RULE[cid](Evidence(values=[-0.05, -0.06, -0.04, -0.05, -0.07, -0.06])).label == "not supported"
        assert RULE[cid](Evidence(values=[0.1, -0.1, 0.05, -0.04, 0.02, -0.03])).label == "inconclusive"


def test_c4_needs_every_attacker_and_the_accuracy_margin():
    good = {n: [3.0, 2.8, 3.3, 3.1] for n in ATTACKS}
    ok_acc = [-0.1, 0.1, -0.2, 0.0]
    assert RULE["C4"](Evidence(values=[3.0] * 4, details={"ratios": good, "acc_diff_pt": ok_acc})).label \
        == "supported"
    one_unmoved = {**good, "bias": [1.0, 0.95, 1.02, 0.98]}
    assert RULE["C4"](Evidence(values=[1.0] * 4, details={"ratios": one_unmoved, "acc_diff_pt": ok_acc})).label \
        == "not supported"
    costly = [-3.0, -3.2, -2.9, -3.1]
    assert RULE["C4"](Evidence(values=[3.0] * 4, details={"ratios": good, "acc_diff_pt": costly})).label \
        == "not supported"
    assert RULE["C5"](Evidence(values=[3.0] * 4, details={"ratio_wlia": good["wlia"], "acc_diff_pt": ok_acc})
                      ).label == "supported"


def test_choose_lambdas_rules():
    table = [{"lam": 0.2, "acc_drop_pt": 0.1, "ratio_wlia": 2.0, "ratio_rowsum": 1.2, "ratio_bias": 1.0,
              "ratio_tangential": 1.1},
             {"lam": 1.0, "acc_drop_pt": 0.5, "ratio_wlia": 6.0, "ratio_rowsum": 1.0, "ratio_bias": 0.9,
              "ratio_tangential": 1.0},
             {"lam": 5.0, "acc_drop_pt": 3.0, "ratio_wlia": 11.0, "ratio_rowsum": 3.0, "ratio_bias": 3.0,
              "ratio_tangential": 3.0}]
    assert choose_lambdas(table) == {"all": 0.2, "wlia": 1.0}  # λ = 5 costs 3 pt: not eligible
    assert choose_lambdas([{**table[2]}]) == {"all": 5.0, "wlia": 5.0}  # none eligible: the smallest λ


class _Fake:
    """An attack stand-in whose scores are fixed: JS then depends only on the estimator."""

    estimator, temperature = "linear", 1.0

    def __init__(self, scores):
        self._s = np.asarray(scores, float)
        self.clients = [0]

    def scores(self, k, rounds=None):
        return self._s


def _fake_run(good_config_is_softmax: bool, lam: float = 0.0, seed: int = 0) -> Run:
    # truth (0.6, 0.3, 0.1): linear maps (3, 2, 1) to (2/3, 1/3, 0); softmax at τ=2 to ~ (0.42, 0.33, 0.25)
    truth = {0: np.array([0.6, 0.3, 0.1])}
    s = [3.0, 2.0, 1.0] if good_config_is_softmax else [7.0, 4.0, 1.0]
    attacks = {n: _Fake(s) for n in (*ATTACKS, "uniform")}
    return Run(attacks=attacks, truth=truth, acc=0.9 - 0.001 * lam, majority_acc=0.2)


def test_tuning_reads_only_the_dev_seed(tmp_path, monkeypatch):
    ctx = CheckContext(scale="smoke", seeds=[0], device="cpu", out_dir=tmp_path, show_progress=False)
    seen = []

    def fake_run_cell(data, kind, alpha, seed, *, rounds, optimizer="sgd", lam=0.0, bias=True):
        seen.append(seed)
        return _fake_run(good_config_is_softmax=(seed == DEV_SEED))

    monkeypatch.setattr(check, "run_cell", fake_run_cell)
    monkeypatch.setattr(check, "_data", lambda name, ctx: None)
    runs = check._runs(ctx)
    assert DEV_SEED in seen and 0 in seen
    # poison the test seed's runs: if tuning read them, it would pick another estimator
    for (_cell, seed), run in runs.items():
        if seed != DEV_SEED:
            run.attacks = {n: _Fake([100.0, 0.0, 0.0]) for n in run.attacks}
    tuned = check._tuned(ctx)
    dev_best = {r["arm"]: r for r in ctx.tuning}
    expected = min(check.ESTIMATOR_GRID, key=lambda c: check.mean_js(_Fake([3.0, 2.0, 1.0]),
                                                                      {0: np.array([0.6, 0.3, 0.1])}, c))
    assert all(tuned[o][n] == expected for o in tuned for n in ATTACKS)
    assert len(dev_best) == 3 * len(ATTACKS)


def test_lambda_is_chosen_before_any_test_seed_runs_with_rnr(tmp_path, monkeypatch):
    ctx = CheckContext(scale="quick", seeds=[0, 1], device="cpu", out_dir=tmp_path, show_progress=False)
    calls = []
    # dev seed: λ = 0.2 is the best eligible; the test seeds would favour λ = 1 if they were read
    dev_js = {0.0: 0.02, 0.05: 0.02, 0.2: 0.08, 1.0: 0.04, 5.0: 0.2}
    dev_drop = {0.0: 0.0, 0.05: 0.0, 0.2: 0.0, 1.0: 0.0, 5.0: 0.05}

    def fake_run_cell(data, kind, alpha, seed, *, rounds, optimizer="sgd", lam=0.0, bias=True):
        calls.append((seed, lam))
        js = dev_js[lam] if seed == DEV_SEED else {0.0: 0.02, 0.2: 0.03, 1.0: 0.5}.get(lam, 0.02)
        truth = {0: np.array([0.6, 0.3, 0.1])}
        attacks = {n: _Fake([3.0, 2.0, 1.0]) for n in (*ATTACKS, "uniform")}
        run = Run(attacks=attacks, truth=truth, acc=0.9 - dev_drop.get(lam, 0.0), majority_acc=0.2)
        run.js = lambda name, config=None, js=js: 0.3 if name == "uniform" else js
        return run

    monkeypatch.setattr(check, "run_cell", fake_run_cell)
    monkeypatch.setattr(check, "_data", lambda name, ctx: None)
    monkeypatch.setattr(check, "_plot_rnr", lambda ctx, table: None)
    ctx._cache["tuned"] = ("ok", {"sgd": {n: check.ESTIMATOR_GRID[0] for n in ATTACKS}})
    sweep = check._rnr(ctx)
    assert sweep.chosen == {"all": 0.2, "wlia": 0.2}
    first_test = next(i for i, (seed, _) in enumerate(calls) if seed != DEV_SEED)
    assert all(seed == DEV_SEED for seed, _ in calls[:first_test])
    assert all(seed != DEV_SEED for seed, _ in calls[first_test:])
    assert {lam for seed, lam in calls if seed != DEV_SEED} == {0.0, 0.2}  # never λ = 1
    assert all(s != DEV_SEED for _, _, s in sweep.runs)


def test_dev_seed_cannot_be_a_test_seed(tmp_path):
    ctx = CheckContext(scale="smoke", seeds=[DEV_SEED], device="cpu", out_dir=tmp_path, show_progress=False)
    with pytest.raises(ValueError, match="dev seed"):
        check._test_seeds(ctx)
