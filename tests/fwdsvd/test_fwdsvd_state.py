"""State guarantees: failed forwards change no statistic, refused fits keep the previous fit, edits of one
matrix undo in any order, composed edits, and the safetensors save / load round trip."""

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.fwdsvd import (
    AngleConcentrationStats,
    ForwardOnlyRankSearch,
    GradientSVSearch,
    compose_edits,
    laser_reduce,
    load_pretrained,
    save_pretrained,
    svd_factors,
)
from neurips26.nn import Llama, LlamaConfig

NAME = "layers.1.mlp.up_proj"


def tiny_llama(seed=0, n_layers=2):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=40, d_model=16, n_layers=n_layers, n_heads=2, n_kv_heads=1, d_ff=32,
                      max_seq_len=64, init_std=0.2)
    return Llama(cfg).double().eval()


def _ids(seed, batch=4, seq=7):
    return torch.randint(0, 40, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _sums(stats):
    return {n: (stats.kappa(n).clone(), stats.energy(n), stats.tokens(n)) for n in stats.names}


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(x[0], y[0]) and torch.equal(x[1], y[1]) and x[2] == y[2]
                                        for x, y in zip(a.values(), b.values()))


class _Boom(RuntimeError):
    pass


def test_failed_plain_forward_and_failed_observe_leave_the_statistics():
    model = tiny_llama()
    stats = AngleConcentrationStats.attach(model, "mlp", positions="all")
    stats.observe(model, _ids(0))
    before = _sums(stats)
    # the last block's down projection raises after every earlier hooked layer has counted its tokens
    handle = model.get_submodule("layers.1.mlp.down_proj").register_forward_hook(
        lambda *_: (_ for _ in ()).throw(_Boom("late failure")))
    with pytest.raises(_Boom):
        with torch.no_grad():
            model(_ids(1))                      # a plain forward of the attached model
    assert _same(_sums(stats), before)
    with pytest.raises(_Boom):
        stats.observe(model, _ids(2))
    assert _same(_sums(stats), before)
    handle.remove()
    stats.observe(model, _ids(1))               # a forward that finishes counts again
    assert stats.tokens(NAME) == before[NAME][2] + 4 * 6
    with pytest.raises(_Boom), stats.counting():
        with torch.no_grad():
            model.layers[1].mlp(torch.randn(2, 3, 16, dtype=torch.float64))
        raise _Boom("after the layers ran")
    assert stats.tokens(NAME) == before[NAME][2] + 4 * 6
    stats.detach()


def _neg_loss(model):
    ids = _ids(5)
    with torch.no_grad():
        logits = model(ids)
    return -float(F.cross_entropy(logits[:, :-1].reshape(-1, 40), ids[:, 1:].reshape(-1)))


def test_refused_fit_on_another_model_keeps_the_previous_fit():
    model, other = tiny_llama(0), tiny_llama(1, n_layers=1)
    search = ForwardOnlyRankSearch([NAME], positions="all", rho_grid=(0.5,)).fit(model, [_ids(0)], _neg_loss)
    result, stats, scores = search.result_, search.stats_, dict(search.scores_)
    with pytest.raises(ValueError, match="not found"):
        search.fit(other, [_ids(0)], _neg_loss)           # `other` has no block 1
    with pytest.raises(ValueError, match="finite"):
        search.fit(model, [_ids(0)], lambda m: float("nan"))
    assert search.result_ is result and search.stats_ is stats and search.scores_ == scores
    loss = lambda m, b: F.cross_entropy(m(b)[:, :-1].reshape(-1, 40), b[:, 1:].reshape(-1))  # noqa: E731
    grad = GradientSVSearch(loss, [NAME], rho_grid=(0.5,)).fit(model, [_ids(0)])
    kept = (grad.result_, grad.tail_scores_, grad.sigmas_)
    with pytest.raises(ValueError, match="not found"):
        grad.fit(other, [_ids(0)])
    grad.sigma_gradients(model, [_ids(3)])                # the public helper changes no attribute
    assert (grad.result_, grad.tail_scores_, grad.sigmas_) == kept


@pytest.mark.parametrize("order", ["lifo", "fifo"])
def test_two_edits_of_one_matrix_restore_in_any_order(order):
    model = tiny_llama()
    w = model.get_submodule(NAME).weight
    original = w.detach().clone()
    U, S, Vh = svd_factors(original)
    first = laser_reduce(model, NAME, 0.5)     # rank 8
    second = laser_reduce(model, NAME, 0.25)   # rank 4 of the rank-8 weight = rank 4 of the original
    torch.testing.assert_close(w.detach(), (U[:, :4] * S[:4]) @ Vh[:4], rtol=0, atol=1e-12)
    if order == "lifo":
        second.restore()
        torch.testing.assert_close(w.detach(), (U[:, :8] * S[:8]) @ Vh[:8], rtol=0, atol=1e-12)
        first.restore()
    else:
        first.restore()                         # the rank-4 edit stays, now on the original weight
        torch.testing.assert_close(w.detach(), (U[:, :4] * S[:4]) @ Vh[:4], rtol=0, atol=1e-12)
        second.restore()
    assert torch.equal(w, original)


def test_compose_edits_and_a_refused_part_leaves_the_model():
    model = tiny_llama()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with compose_edits(model, [("layers.0.mlp.down_proj", 0.25), ("layers.1.mlp.gate_proj", 0.5)]) as edit:
        assert [r.rank for r in edit.reductions] == [4, 8]
        assert not torch.equal(model.layers[0].mlp.down_proj.weight, before["layers.0.mlp.down_proj.weight"])
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    with pytest.raises(ValueError, match="not found"):
        compose_edits(model, [("layers.0.mlp.down_proj", 0.25), ("layers.7.mlp.up_proj", 0.5)])
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_save_and_load_an_edited_and_factorised_model(tmp_path):
    model = tiny_llama()
    laser_reduce(model, "layers.0.mlp.down_proj", 0.25)                 # dense edit
    laser_reduce(model, NAME, 0.25, factorize=True)                      # two Linears 16 -> 4 -> 32
    ids = _ids(3)
    with torch.no_grad():
        want = model(ids)
    save_pretrained(model, tmp_path / "keep")
    from safetensors import safe_open

    with safe_open(str(tmp_path / "keep" / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert "model.layers.0.self_attn.q_proj.weight" in keys and "model.layers.0.input_layernorm.weight" in keys
    assert f"model.{NAME}.0.weight" in keys and "lm_head.weight" not in keys       # tied head stored once
    meta = json.loads((tmp_path / "keep" / "fwdsvd.json").read_text())
    assert meta["factorized"] == {NAME: {"rank": 4, "in": 16, "out": 32, "bias": 0}}
    loaded = load_pretrained(tmp_path / "keep")
    assert loaded.embed_tokens.weight.dtype == torch.float64
    assert isinstance(loaded.get_submodule(NAME), nn.Sequential)
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids), want, rtol=0, atol=1e-10)
    save_pretrained(model, tmp_path / "dense", factorized="dense")
    dense = load_pretrained(tmp_path / "dense", model=tiny_llama(7))   # a plain Llama of the same shape
    assert isinstance(dense.get_submodule(NAME), nn.Linear)
    with torch.no_grad():
        torch.testing.assert_close(dense(ids), want, rtol=0, atol=1e-10)
    config = json.loads((tmp_path / "dense" / "config.json").read_text())
    assert config["hidden_size"] == 16 and config["num_key_value_heads"] == 1 and config["tie_word_embeddings"]
    small = tiny_llama(0, n_layers=1)
    with pytest.raises(ValueError, match="does not have"):
        load_pretrained(tmp_path / "keep", model=small)
    other = tiny_llama(3)
    kept = {k: v.clone() for k, v in other.state_dict().items()}
    with pytest.raises(ValueError, match="does not match"):
        load_pretrained(tmp_path / "dense", model=nn.Sequential(other))   # other names: refused, untouched
    assert all(torch.equal(v, kept[k]) for k, v in other.state_dict().items())
