"""The pre-registered decision rules of the claim check, on hand-made evidence."""

from neurips26.claims import Evidence
from neurips26.dynconv.check import PAPER, _decide_lm, _decide_recall, matched_d_ff


def _recall(gains):
    return Evidence(values=gains["gap"], details={"gain_pp": gains})


def test_recall_rule():
    ok = {"mqar": [-1.0, -1.5], "compositional": [2.0, 3.0], "gap": [6.0, 4.5]}
    assert _decide_recall(_recall(ok)).label == "supported"  # gap mean 5.25 >= 5, nothing below -2
    hurt = {"mqar": [-3.0, -2.5], "compositional": [2.0, 3.0], "gap": [20.0, 20.0]}
    assert _decide_recall(_recall(hurt)).label == "inconclusive"  # MQAR mean -2.75 < -2
    worse = {"mqar": [0.0, -1.0], "compositional": [-2.0, 0.0], "gap": [-5.0, 0.0]}
    assert _decide_recall(_recall(worse)).label == "not supported"
    one_seed = {"mqar": [0.0], "compositional": [9.0], "gap": [9.0]}
    assert _decide_recall(_recall(one_seed)).label == "inconclusive"


def test_lm_rule():
    assert _decide_lm(Evidence(values=[0.05, 0.06, 0.055], details={"dynamic_below_none": True})).label == "supported"
    assert _decide_lm(Evidence(values=[0.05, 0.06, 0.055], details={"dynamic_below_none": False})).label \
        == "inconclusive"
    assert _decide_lm(Evidence(values=[0.1, -0.05, 0.01], details={"dynamic_below_none": True})).label \
        == "inconclusive"
    assert _decide_lm(Evidence(values=[-0.01, -0.02], details={"dynamic_below_none": True})).label == "not supported"
    assert _decide_lm(Evidence(values=[0.5], details={"dynamic_below_none": True})).label == "inconclusive"


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
