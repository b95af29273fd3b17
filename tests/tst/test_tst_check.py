"""The tst claim check (protocol 2026-12-01): the switch diagnostic against naive references, the arm table,
and the pre-registered rules on hand-made evidence."""

import math

import pytest
import torch
import torch.nn.functional as F

from neurips26.claims import Evidence
from neurips26.tst import check
from neurips26.tst.check import CLAIMS, PAPER, SWEEP, _arms, evaluate_mce, unigram_mce

RULE = {c.id: c.rule for c in CLAIMS}


def test_sweep_is_the_issues_grid_and_full_runs_it():
    assert sorted(SWEEP) == sorted((s, r) for s in (2, 4) for r in (0.1, 0.2, 0.3))
    assert check._SETUPS["full"].cells == SWEEP
    assert [c.id for c in CLAIMS] == ["C1", "C2", "C3", "C4", "C5", "C6"] and PAPER.slug == "tst"


def test_recovery_arms_are_ntp_for_the_remaining_steps():
    setup = check._SETUPS["full"]
    arms = _arms(setup)
    T = setup.total_steps
    for r in (0.1, 0.2, 0.3):
        rec = arms[f"recovery_r{r:g}"]
        assert rec["kind"] == "ntp" and rec["steps"] == round((1 - r) * T)
    assert arms["ntp"]["steps"] == T and len([a for a in arms if a.startswith("tst_")]) == 6


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


def test_c1_and_c6_rules():
    assert RULE["C1"](Evidence(values=[-0.05, -0.03, 0.01])).label == "supported"  # 2/3 <= -0.02
    assert RULE["C1"](Evidence(values=[0.3, 0.2, -0.5])).label == "not supported"  # 2/3 >= 0
    assert RULE["C1"](Evidence(values=[-0.01, -0.01, -0.01])).label == "inconclusive"
    assert RULE["C6"](Evidence(values=[0.05, 0.03, -0.01])).label == "supported"  # 2/3 >= 0.02
    assert RULE["C6"](Evidence(values=[-0.1, 0.0, 0.5])).label == "not supported"  # 2/3 <= 0
    assert RULE["C6"](Evidence(values=[0.01, 0.01, 0.01])).label == "inconclusive"
    assert RULE["C6"](Evidence(values=[0.5, 0.5])).label == "inconclusive"  # fewer than 3 seeds
