"""The tst claim check (protocol 2026-12-02): the switch diagnostic against naive references, the arm table,
the preconditions and the pre-registered interval rules on hand-made evidence."""

import math

import pytest
import torch
import torch.nn.functional as F

from neurips26.claims import Evidence
from neurips26.tst import check
from neurips26.tst.check import CELL, CLAIMS, PAPER, _arms, evaluate_mce, split_dev, unigram_mce

RULE = {c.id: c.rule for c in CLAIMS}
CLAIM = {c.id: c for c in CLAIMS}


def test_claims_and_arms_of_each_scale():
    assert [c.id for c in CLAIMS] == ["C1", "C2", "C3", "C4", "C5", "C6"] and PAPER.slug == "tst"
    assert PAPER.full_budget_cpu_s <= 3000 and PAPER.full_budget_reason
    full, quick = _arms(check._SETUPS["full"]), _arms(check._SETUPS["quick"])
    assert set(full) == {"ntp", "tst", "recovery", "reinit"}
    assert set(quick) == set(full) | {"input_only", "output_only"}
    T, (s, r) = check._SETUPS["full"].total_steps, CELL
    assert full["recovery"] == {"kind": "ntp", "steps": round((1 - r) * T), "s": 1, "r": 0.0}
    assert full["tst"] == {"kind": "tst", "steps": T, "s": s, "r": r} and full["ntp"]["steps"] == T


def test_every_comparison_is_tuned_equally_and_guarded_by_preconditions():
    for cid in ("C1", "C2", "C3", "C4", "C6"):
        claim = CLAIM[cid]
        assert claim.compares_trained and claim.tuning.startswith("equal")
        names = [p.name for p in claim.preconditions]
        assert any("phase 1 learned" in n for n in names) and any("NTP left the unigram" in n for n in names)
    assert any("gain to erase" in p.name for p in CLAIM["C3"].preconditions)
    assert CLAIM["C5"].kind == "paper" and not CLAIM["C5"].compares_trained


def test_preconditions_refuse_a_phase_1_at_the_unigram_level():
    pre = {p.name: p for p in CLAIM["C1"].preconditions}
    learned = next(p for n, p in pre.items() if "phase 1 learned" in n)
    # the 2026-12-01 full run: switch MCE 6.14 vs unigram 6.09 -> not met
    assert learned.rule(Evidence(values=[6.09 - 6.14] * 3)).label != "supported"
    assert learned.rule(Evidence(values=[0.25, 0.3, 0.21])).label == "supported"
    assert learned.rule(Evidence(values=[0.25, 0.3, 0.19])).label != "supported"  # every seed


def test_dev_split_is_the_tail_of_the_train_stream():
    tokens = torch.arange(1000)
    train, dev = split_dev(tokens, 0.05)
    assert torch.equal(torch.cat([train, dev]), tokens) and len(dev) == 50


def test_unigram_mce_is_the_smoothed_frequency_cross_entropy():
    train = torch.tensor([0, 0, 0, 1, 2, 2])
    targets = torch.tensor([[0, 2], [1, 3]])
    V = 4
    counts = [3, 1, 2, 0]
    p = [(c + 1) / (6 + V) for c in counts]  # add-one
    expected = -sum(math.log(p[t]) for t in [0, 2, 1, 3]) / 4
    assert unigram_mce(train, targets, V) == pytest.approx(expected, rel=1e-12)


class _Tiny(torch.nn.Module):
    """Embedding + linear head, forward(inputs_embeds, position_ids) like the Llama of neurips26.nn."""

    def __init__(self, V=11, D=6):
        super().__init__()
        self.emb, self.head = torch.nn.Embedding(V, D), torch.nn.Linear(D, V)

    def get_input_embeddings(self):
        return self.emb

    def forward(self, input_ids=None, inputs_embeds=None, position_ids=None):
        h = self.emb(input_ids) if inputs_embeds is None else inputs_embeds
        return self.head(torch.tanh(h + 0.01 * position_ids.unsqueeze(-1)))


def test_evaluate_mce_matches_a_naive_loop_over_bags():
    torch.manual_seed(0)
    model, s, L = _Tiny(), 3, 4
    windows = torch.randint(0, 11, (5, s * (L + 1)))
    ours = evaluate_mce(model, windows, s)
    total, count = 0.0, 0
    with torch.no_grad():
        for row in windows:
            for j in range(L):
                bag = row[j * s:(j + 1) * s]
                h = model.emb(bag).mean(0)
                logp = F.log_softmax(model.head(torch.tanh(h + 0.01 * j)), -1)
                for t in row[(j + 1) * s:(j + 2) * s]:
                    total -= float(logp[t])
                    count += 1
    assert ours == pytest.approx(total / count, rel=1e-5)


def test_c1_c3_c6_rules_decide_on_intervals_with_a_margin():
    # TST − NTP per seed: consistently 0.1 below -> supported; consistently above -> not supported
    assert RULE["C1"](Evidence(values=[-0.10, -0.11, -0.12])).label == "supported"
    assert RULE["C1"](Evidence(values=[0.30, 0.31, 0.29])).label == "not supported"
    assert RULE["C1"](Evidence(values=[-0.05, 0.03, -0.01])).label == "inconclusive"  # spans the margin
    assert RULE["C1"](Evidence(values=[-0.1, -0.1])).label == "inconclusive"  # fewer than 3 seeds
    assert RULE["C6"](Evidence(values=[-0.10, -0.11, -0.12])).label == "supported"
    # C3: re-init − NTP; re-init clearly worse than NTP -> supported
    assert RULE["C3"](Evidence(values=[0.13, 0.12, 0.14])).label == "supported"
    assert RULE["C3"](Evidence(values=[-0.05, -0.06, -0.05])).label == "not supported"


def test_c4_needs_both_ablations_below_ntp():
    ntp = [5.0, 5.1, 5.2]
    both = Evidence(values=ntp, details={"ntp": ntp, "input_only": [4.9, 5.0, 5.1], "output_only": [4.9, 5.0, 5.1]})
    one = Evidence(values=ntp, details={"ntp": ntp, "input_only": [4.9, 5.0, 5.1], "output_only": [5.2, 5.3, 5.4]})
    assert RULE["C4"](both).label == "supported"
    assert RULE["C4"](one).label == "not supported"


def test_c5_is_decided_on_the_interval_of_the_time_ratio():
    assert RULE["C5"](Evidence(values=[0.95, 0.97, 0.93, 0.96, 0.94])).label == "supported"
    assert RULE["C5"](Evidence(values=[0.5, 0.52, 0.49, 0.51, 0.5])).label == "not supported"
