"""The lm-eval-harness-shaped hook against a direct log-probability computation."""

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from neurips26.fwdsvd import ForwardOnlyRankSearch, HarnessLM, multiple_choice_eval_fn
from neurips26.nn import Llama, LlamaConfig


class _Tok:
    def encode(self, text):
        return [int(w) for w in text.split()]


def _model():
    torch.manual_seed(0)
    return Llama(LlamaConfig(vocab_size=30, d_model=16, n_layers=2, n_heads=2, d_ff=32, max_seq_len=64)).double().eval()


def _direct(model, ctx, cont):
    ids = torch.tensor([ctx + cont])
    with torch.no_grad():
        logp = F.log_softmax(model(ids).double(), -1)[0]
    return sum(float(logp[len(ctx) + j - 1, t]) for j, t in enumerate(cont))


def test_loglikelihood_matches_the_direct_sum_and_accepts_instances():
    model, tok = _model(), _Tok()
    reqs = [("1 2 3", " 4 5"), SimpleNamespace(args=("7 8", " 9")), ("3", " 1 1 1 1")]
    got = HarnessLM(model, tok, batch_size=2).loglikelihood(reqs)
    for (score, greedy), (ctx, cont) in zip(got, [("1 2 3", " 4 5"), ("7 8", " 9"), ("3", " 1 1 1 1")]):
        assert score == pytest.approx(_direct(model, tok.encode(ctx), tok.encode(cont)), abs=1e-9)
        assert isinstance(greedy, bool)
    rolling = HarnessLM(model, tok).loglikelihood_rolling(["5 6 7 8"])
    assert rolling[0] == pytest.approx(_direct(model, [5], [6, 7, 8]), abs=1e-9)
    with pytest.raises(TypeError, match="context, continuation"):
        HarnessLM(model, tok).loglikelihood(["just a string"])


def test_multiple_choice_eval_fn_drives_a_search():
    model, tok = _model(), _Tok()
    docs = [{"q": f"{i} {i + 1}", "choices": [f"{i + 2}", f"{(i + 7) % 30}"], "gold": 0} for i in range(6)]
    eval_fn = multiple_choice_eval_fn(docs, tok, doc_to_text=lambda d: d["q"], doc_to_choice=lambda d: d["choices"],
                                      doc_to_target=lambda d: d["gold"])
    acc = eval_fn(model)
    assert 0.0 <= acc <= 1.0
    prompts = torch.tensor([[i, i + 1] for i in range(6)])
    search = ForwardOnlyRankSearch("mlp", positions="last", rho_grid=(0.5,)).fit(model, [prompts], eval_fn)
    assert search.result_.base_score == acc
