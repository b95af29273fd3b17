"""The choice evaluator against a naive full forward per sequence; item builders' properties; trial cache."""

import pytest
import torch
import torch.nn.functional as F

from neurips26.fwdsvd import LaserExhaustiveSearch, RandomMatrixSearch, laser_reduce
from neurips26.fwdsvd.tasks import ChoiceEvaluator, ChoiceItem, genre_items, next_line_items
from neurips26.nn import Llama, LlamaConfig


class IntTokenizer:
    def encode(self, text):
        return [int(w) for w in text.split()]


def tiny_llama(seed=0):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=40, d_model=16, n_layers=3, n_heads=2, n_kv_heads=1, d_ff=32, max_seq_len=64,
                      init_std=0.2)
    return Llama(cfg).double().eval()


def _items(seed, n=6):
    g = torch.Generator().manual_seed(seed)
    rand = lambda k: " ".join(str(int(v)) for v in torch.randint(0, 40, (k,), generator=g))  # noqa: E731
    return [ChoiceItem(rand(3 + i % 3), tuple(rand(1 + (i + j) % 3) for j in range(3)), i % 3) for i in range(n)]


def _naive_scores(model, items, tok):
    out = torch.zeros(len(items), 3, dtype=torch.float64)
    with torch.no_grad():
        for i, it in enumerate(items):
            p = tok.encode(it.prompt)
            for j, ch in enumerate(it.choices):
                c = tok.encode(ch)
                ids = torch.tensor([p + c])
                logp = F.log_softmax(model(ids)[0], dim=-1)
                out[i, j] = sum(float(logp[len(p) + t - 1, c[t]]) for t in range(len(c))) / len(c)
    return out


@pytest.mark.parametrize("start_layer", [0, 2, 3])
def test_evaluator_matches_naive_forward(start_layer):
    model, tok, items = tiny_llama(), IntTokenizer(), _items(0)
    ev = ChoiceEvaluator(model, tok, items, start_layer=start_layer, batch_size=5)
    torch.testing.assert_close(ev.choice_scores(), _naive_scores(model, items, tok), rtol=0, atol=1e-6)
    # an edit in a block >= start_layer is seen through the cache
    with laser_reduce(model, "layers.2.mlp.down_proj", 0.25):
        if start_layer <= 2:
            torch.testing.assert_close(ev.choice_scores(), _naive_scores(model, items, tok), rtol=0, atol=1e-6)
    naive = _naive_scores(model, items, tok)
    right = naive[torch.arange(6), ev.answers]
    others = naive.clone()
    others[torch.arange(6), ev.answers] = -float("inf")
    assert ev.accuracy() == float((right > others.max(1).values).double().mean())
    loss = ev.loss(model, [0, 1, 2])
    assert torch.isclose(loss, F.cross_entropy(naive[:3].float(), ev.answers[:3], reduction="sum").double(),
                         atol=1e-5)
    with pytest.raises(ValueError, match="below start_layer"):
        ChoiceEvaluator(model, tok, items, start_layer=3).check_candidates(["layers.1.mlp.up_proj"])


def test_trial_cache_gives_the_same_search():
    model, tok, items = tiny_llama(), IntTokenizer(), _items(1)
    ev = ChoiceEvaluator(model, tok, items)
    plain = LaserExhaustiveSearch("mlp", (0.25, 0.5)).fit(model, ev.accuracy).result_
    cache = {}
    RandomMatrixSearch("mlp", (0.25, 0.5), seed=0).fit(model, ev.accuracy, trial_cache=cache)
    cached = LaserExhaustiveSearch("mlp", (0.25, 0.5)).fit(model, ev.accuracy, trial_cache=cache).result_
    assert plain.trials == cached.trials and plain.reduction == cached.reduction
    assert plain.forward_passes == cached.forward_passes == 1 + 9 * 2


def test_item_builders():
    text = ("A:\none two three four\nfive six seven eight\nnine ten eleven twelve\n\n"
            "B:\nalpha beta gamma delta\nepsilon zeta eta theta\n\nC:\nred green blue white\n"
            "black grey pink brown\norange purple gold silver\n")
    items = next_line_items(text, 3, seed=0)
    lines = text.split("\n")
    for it in items:
        assert len(it.choices) == 4 and len(set(it.choices)) == 4
        context = it.prompt.split("\n")[1]
        assert lines[lines.index(context) + 1] == it.choices[it.answer]  # the true line follows the context
    assert items == next_line_items(text, 3, seed=0)
    with pytest.raises(ValueError, match="fewer than n_items"):
        next_line_items(text, 50, seed=0)
    plays = {"x": " ".join(f"w{i}" for i in range(400)), "y": " ".join(f"v{i}" for i in range(400))}
    genre = genre_items(plays, {"x": "comedy", "y": "tragedy"}, 6, seed=1, n_words=10)
    assert sorted(it.answer for it in genre) == [0, 0, 0, 1, 1, 1]
    for it in genre:
        assert it.prompt.startswith("w" if it.answer == 0 else "v") and it.choices == (" comedy", " tragedy")
