"""The pre-registered rules of the claim check on hand-made evidence, the LM loop against a plain hand-written
loop, and a missing corpus skipping only the LM claim."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from neurips26.claims import CheckContext, Evidence, Paper, measure_claims
from neurips26.data import DatasetNotFoundError
from neurips26.dynconv import check
from neurips26.dynconv.check import LM_RULE, PAPER, RECALL_RULE, SPEED_RULE, matched_d_ff


def _recall(gains):
    return Evidence(values=gains["gap"], details={f"gain_{t}": g for t, g in gains.items()})


def test_recall_rule():
    ok = {"mqar": [-1.0, -1.5], "compositional": [2.0, 3.0], "gap": [6.0, 4.5]}
    assert RECALL_RULE(_recall(ok)).label == "supported"  # gap mean 5.25 >= 5, nothing below -2
    hurt = {"mqar": [-3.0, -2.5], "compositional": [2.0, 3.0], "gap": [20.0, 20.0]}
    assert RECALL_RULE(_recall(hurt)).label == "inconclusive"  # MQAR mean -2.75 < -2
    worse = {"mqar": [0.0, -1.0], "compositional": [-2.0, 0.0], "gap": [-5.0, 0.0]}
    assert RECALL_RULE(_recall(worse)).label == "not supported"
    one_seed = {"mqar": [0.0], "compositional": [9.0], "gap": [9.0]}
    assert RECALL_RULE(_recall(one_seed)).label == "inconclusive"
    short_task = {"mqar": [0.0, 0.0], "compositional": [9.0, 9.0], "gap": [-9.0]}
    assert RECALL_RULE(_recall(short_task)).label == "inconclusive"  # every task needs 2 seeds
    assert RECALL_RULE(_recall({"mqar": [-1.0, -1.0], "compositional": [-1.0, -1.0], "gap": [-1.0]})).label \
        == "inconclusive"  # refutation needs 2 seeds on every task


def test_lm_rule():
    def lm(values, none_minus_dynamic):
        return LM_RULE(Evidence(values=values, details={"none_minus_dynamic": none_minus_dynamic})).label

    assert lm([0.05, 0.06, 0.055], 0.01) == "supported"
    assert lm([0.05, 0.06, 0.055], -0.01) == "inconclusive"  # dynamic not below none
    assert lm([0.1, -0.05, 0.01], 0.01) == "inconclusive"  # mean 0.02 within 2 SE
    assert lm([-0.01, -0.02], 0.01) == "not supported"
    assert lm([0.5], 0.01) == "inconclusive"  # one seed


def test_speed_rule():
    def speed(x, vs_static):
        return SPEED_RULE(Evidence(values=[x], details={"fwd_bwd_vs_static": vs_static})).label

    assert speed(6.0, 2.0) == "supported"
    assert speed(4.9, 2.0) == "not supported" and speed(6.0, 3.1) == "not supported"


def test_matched_mlp_width_keeps_parameter_counts_equal():
    from neurips26.dynconv import conv_attention_factory
    from neurips26.nn import Llama, LlamaConfig

    counts = []
    for v in ("none", "static", "dynamic"):
        base = LlamaConfig(vocab_size=65, d_model=64, n_layers=2, n_heads=2)
        cfg = LlamaConfig(vocab_size=65, d_model=64, n_layers=2, n_heads=2, d_ff=matched_d_ff(v, 64, base.d_ff))
        counts.append(Llama(cfg, attention_factory=conv_attention_factory(v)).num_parameters())
    assert max(counts) - min(counts) <= 3 * 64 * 2  # within one MLP unit per layer
    assert PAPER.slug == "dynconv" and [c.id for c in PAPER.claims] == ["C1", "C2", "C3"]


def _plain_loop(variant, seed, s, train, val, vocab):
    """The LM loop written out by hand (AdamW, warm-up x cosine, clip 1, seeded windows): the reference."""
    import math

    from neurips26.dynconv import conv_attention_factory
    from neurips26.nn import Llama, LlamaConfig

    torch.manual_seed(seed)
    base = LlamaConfig(vocab_size=vocab, d_model=s.d_model, n_layers=s.n_layers, n_heads=s.n_heads,
                       max_seq_len=s.seq_len)
    cfg = LlamaConfig(vocab_size=vocab, d_model=s.d_model, n_layers=s.n_layers, n_heads=s.n_heads,
                      max_seq_len=s.seq_len, d_ff=matched_d_ff(variant, s.d_model, base.d_ff))
    model = Llama(cfg, attention_factory=conv_attention_factory(variant))
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=0.1, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(2000 + seed)

    def batch(src, g):
        i = torch.randint(0, len(src) - s.seq_len - 1, (s.batch,), generator=g)
        window = src[i[:, None] + torch.arange(s.seq_len + 1)]
        return window[:, :-1], window[:, 1:]

    warmup = max(1, s.steps // 10)
    for step in range(s.steps):
        for group in opt.param_groups:
            group["lr"] = s.lr * min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * step / s.steps))
        x, y = batch(train, gen)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    g_val = torch.Generator().manual_seed(99)
    with torch.no_grad():
        return float(np.mean([float(F.cross_entropy(model(x).flatten(0, 1), y.flatten()))
                              for x, y in (batch(val, g_val) for _ in range(s.eval_batches))]))


def test_lm_on_nn_train_gives_the_plain_loops_numbers():
    gen = torch.Generator().manual_seed(0)
    train, val = torch.randint(0, 20, (3000,), generator=gen), torch.randint(0, 20, (500,), generator=gen)
    s = check.LMSetup(n_layers=1, d_model=32, n_heads=2, seq_len=16, batch=4, steps=12, eval_batches=2)
    for variant in ("none", "dynamic"):
        ours = check._train_char_lm(variant, 0, s, train, val, 20, "cpu")[0]
        assert ours == _plain_loop(variant, 0, s, train, val, 20)  # bit for bit


def test_missing_corpus_skips_the_lm_claim_only(monkeypatch, tmp_path):
    import neurips26.data

    def absent():
        raise DatasetNotFoundError("shakespeare", [tmp_path], "neurips26 data fetch shakespeare")

    monkeypatch.setattr(neurips26.data, "load_shakespeare_plays", absent)
    c1, c2, c3 = PAPER.claims
    fake_c1 = type(c1)(id="C1", statement=c1.statement, paper_value=c1.paper_value, metric=c1.metric,
                       rule=c1.rule, scales=c1.scales,
                       measure=lambda ctx: Evidence(values=[6.0, 6.0], details={
                           "gain_mqar": [0.0, 0.0], "gain_compositional": [6.0, 6.0], "gain_gap": [0.0, 0.0]}))
    paper = Paper(id="P17", slug="dynconv", claims=(fake_c1, c2, c3))
    ctx = CheckContext(scale="full", seeds=[0, 1, 2], device="cpu", out_dir=tmp_path, show_progress=False)
    verdicts = {r["id"]: r["verdict"] for r in measure_claims(paper, ctx)}
    assert verdicts == {"C1": "supported", "C2": "skipped", "C3": "inconclusive"}


@pytest.mark.parametrize("name", ["measure_c1", "measure_c2", "measure_c3"])
def test_every_claim_has_its_measure(name):
    assert getattr(check, name) in [c.measure for c in PAPER.claims]


def test_char_data_splits_by_play_and_round_trips():
    """The C2 corpus (protocol 2026-12-01): held-out plays only in validation, encoding invertible."""
    from neurips26.data import load_shakespeare_plays, split_plays
    from neurips26.data.testing import require_dataset

    require_dataset("shakespeare")
    train, val, vocab = check._char_data("cpu")
    plays = load_shakespeare_plays()
    split = split_plays(plays, val_fraction=0.1, seed=0)
    val_text = split.val_text(plays)
    assert len(val) == len(val_text) and len(train) == len(split.train_text(plays))
    chars = sorted(set(plays.text()))
    assert vocab == len(chars) and int(train.min()) >= 0 and int(val.max()) < vocab
    assert "".join(chars[i] for i in val[:2000].tolist()) == val_text[:2000]
    assert set(split.val).isdisjoint(split.train)
