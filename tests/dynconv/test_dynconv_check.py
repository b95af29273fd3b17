"""The pre-registered rules of the claim check (protocol 2026-12-02) on hand-made evidence, parameter matching
within 2 %, the LM loop on nn.train against a plain hand-written loop, and a missing corpus skipping only the
LM claims."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from neurips26.claims import CheckContext, Evidence, Paper, measure_claims
from neurips26.data import DatasetNotFoundError
from neurips26.dynconv import check
from neurips26.dynconv.check import C1_RULE, C2_RULE, C4_RULE, LM_ARMS, PAPER, SPEED_RULE, build_model, matched_config
from neurips26.nn import LlamaConfig


def _c1(variable, fixed):
    return C1_RULE(Evidence(values=[v - f for v, f in zip(variable, fixed)],
                            details={"gain_variable": variable, "gain_fixed": fixed})).label


def test_c1_rule_counts_only_the_margin_beyond_the_fixed_lag_control():
    assert _c1([20.0, 22.0, 21.0], [1.0, 0.5, 1.5]) == "supported"
    # the quick numbers: +61.5 on variable lag but +56.4 on the control -> the control explains it
    assert _c1([61.0, 62.0, 61.5], [57.0, 56.0, 56.2]) == "supported"  # still beyond, by its interval
    assert _c1([10.0, 30.0, 5.0], [12.0, 2.0, 9.0]) == "inconclusive"  # difference spans 0
    assert _c1([1.0, 1.5, 0.5], [8.0, 9.0, 10.0]) == "not supported"  # control margin larger
    assert _c1([20.0, 22.0], [1.0, 0.5]) == "inconclusive"  # 2 seeds < 3
    # dynamic worse than static on both: a positive difference alone does not support
    assert _c1([-5.0, -5.5, -4.5], [-20.0, -21.0, -19.0]) != "supported"


def test_c2_and_c4_rules():
    def c2(static_minus_dyn, none_minus_dyn):
        return C2_RULE(Evidence(values=static_minus_dyn, details={"none_minus_dynamic": none_minus_dyn})).label

    assert c2([0.02, 0.03, 0.025, 0.02, 0.03], [0.05] * 5) == "supported"
    assert c2([0.02, 0.03, 0.025, 0.02, 0.03], [0.05, -0.05, 0.01, 0.0, -0.02]) == "inconclusive"
    assert c2([-0.02, -0.03, -0.025, -0.02, -0.03], [0.05] * 5) == "not supported"
    assert c2([0.02, 0.03, 0.025, 0.02], [0.05] * 4) == "inconclusive"  # 4 seeds < 5
    assert C4_RULE(Evidence(values=[0.01, 0.012, 0.011, 0.009, 0.01])).label == "supported"
    assert C4_RULE(Evidence(values=[-0.01, -0.012, -0.011, -0.009, -0.01])).label == "not supported"


def test_speed_rule():
    def speed(x, vs_static):
        return SPEED_RULE(Evidence(values=[x], details={"fwd_bwd_vs_static": vs_static})).label

    assert speed(6.0, 2.0) == "supported"
    assert speed(4.9, 2.0) == "not supported" and speed(6.0, 3.1) == "not supported"


@pytest.mark.parametrize("shape", [dict(vocab_size=512, d_model=64, n_layers=1, n_heads=2),
                                   dict(vocab_size=80, d_model=64, n_layers=2, n_heads=2),
                                   dict(vocab_size=70, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2)])
def test_parameter_counts_matched_within_two_percent(shape):
    cfg = LlamaConfig(**shape)
    ref = build_model("dynamic", cfg).num_parameters()
    for arm in LM_ARMS:
        got = build_model(arm, matched_config(arm, cfg)).num_parameters()
        assert abs(got - ref) / ref <= 0.02, (arm, got, ref)
    # the dynamic arm keeps the default MLP: nothing of the method is shrunk to match
    assert matched_config("dynamic", cfg).d_ff == cfg.d_ff
    assert matched_config("none", cfg).d_ff > cfg.d_ff > matched_config("every_linear", cfg).d_ff


def test_claims_and_budget():
    assert PAPER.slug == "dynconv" and [c.id for c in PAPER.claims] == ["C1", "C2", "C3", "C4", "S1"]
    assert PAPER.full_budget_cpu_s <= 3000 and PAPER.full_budget_reason
    for c in PAPER.claims:
        if c.compares_trained:
            assert c.preconditions and c.tuning


def _plain_loop(arm, lr, seed, s, d):
    """The LM loop written out by hand (AdamW, warm-up x cosine, clip 1, seeded windows): the reference."""
    base = LlamaConfig(vocab_size=d["vocab"], d_model=s.d_model, n_layers=s.n_layers, n_heads=s.n_heads,
                       max_seq_len=s.seq_len)
    cfg = matched_config(arm, base)
    torch.manual_seed(seed)
    model = build_model(arm, cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(2000 + seed)
    train = d["train"]
    warmup = max(1, s.steps // 10)
    for step in range(s.steps):
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * step / s.steps))
        i = torch.randint(0, len(train) - s.seq_len - 1, (s.batch,), generator=gen)
        window = train[i[:, None] + torch.arange(s.seq_len + 1)]
        loss = F.cross_entropy(model(window[:, :-1]).flatten(0, 1), window[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    val = d["validation"]
    n = (len(val) - 1) // s.seq_len
    with torch.no_grad():
        logits = model(val[:n * s.seq_len].view(n, s.seq_len))
        return float(F.cross_entropy(logits.flatten(0, 1), val[1:n * s.seq_len + 1], reduction="sum")) / (n * s.seq_len)


def test_lm_on_nn_train_gives_the_plain_loops_numbers_on_the_whole_split():
    gen = torch.Generator().manual_seed(0)
    d = {"train": torch.randint(0, 20, (3000,), generator=gen), "tuning": torch.randint(0, 20, (400,), generator=gen),
         "validation": torch.randint(0, 20, (501,), generator=gen), "vocab": 20}
    s = check.LMSetup(n_layers=1, d_model=32, n_heads=2, seq_len=16, batch=4, steps=12, eval_every=4, curve_windows=4)
    for arm in ("none", "dynamic"):
        ours = check._train_char_lm(arm, 3e-3, 0, s, d)
        assert len(ours["curve"]) == 3
        assert ours["validation"] == pytest.approx(_plain_loop(arm, 3e-3, 0, s, d), rel=1e-6)


def test_missing_corpus_skips_the_lm_claims_only(monkeypatch, tmp_path):
    import neurips26.data

    def absent():
        raise DatasetNotFoundError("shakespeare", [tmp_path], "neurips26 data fetch shakespeare")

    monkeypatch.setattr(neurips26.data, "load_shakespeare_plays", absent)
    claims = {c.id: c for c in PAPER.claims}
    paper = Paper(id="P17", slug="dynconv", claims=(claims["C2"], claims["C3"], claims["C4"], claims["S1"]))
    ctx = CheckContext(scale="full", seeds=[0, 1, 2, 3, 4], device="cpu", out_dir=tmp_path, show_progress=False)
    verdicts = {r["id"]: r["verdict"] for r in measure_claims(paper, ctx)}
    assert verdicts == {"C2": "skipped", "C3": "inconclusive", "C4": "skipped", "S1": "supported"}


def test_char_data_splits_by_play_with_a_held_out_tuning_tail():
    from neurips26.data import load_shakespeare_plays, split_plays
    from neurips26.data.testing import require_dataset

    require_dataset("shakespeare")
    d = check._char_data("cpu")
    plays = load_shakespeare_plays()
    split = split_plays(plays, val_fraction=0.1, seed=0)
    val_text = split.val_text(plays)
    assert len(d["validation"]) == len(val_text)
    assert len(d["train"]) + len(d["tuning"]) == len(split.train_text(plays))
    chars = sorted(set(plays.text()))
    assert d["vocab"] == len(chars)
    assert "".join(chars[i] for i in d["validation"][:2000].tolist()) == val_text[:2000]
    assert set(split.val).isdisjoint(split.train)
    assert np.isfinite(check._unigram_loss(d["train"], d["validation"], d["vocab"]))
