"""The searches: the planted noisy-tail matrix is found; weights restored after failed trials; the gradient
score against finite differences; LASER's grid against a brute-force loop; A(W_k) against brute force."""

import math

import pytest
import torch
import torch.nn.functional as F

from neurips26.fwdsvd import (
    ForwardOnlyRankSearch,
    GradientSVSearch,
    LaserExhaustiveSearch,
    RandomMatrixSearch,
    angle_concentration_by_rank,
    candidate_linears,
    knee_index,
    laser_reduce,
    mean_pairwise_cosine,
)
from neurips26.nn import Llama, LlamaConfig


def tiny_llama(seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=40, d_model=16, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=32, max_seq_len=64,
                      init_std=0.2)
    return Llama(cfg).to(dtype).eval()


def _ids(seed, batch=8, seq=8):
    return torch.randint(0, 40, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _lm_loss(model, ids):
    logits = model(ids)
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def _planted(seed=0):
    """Every MLP matrix made rank 2 (no tail), then dense noise added to one: the planted noisy tail."""
    model = tiny_llama(seed)
    names = candidate_linears(model, "mlp")
    for n in names:
        laser_reduce(model, n, 2 / 16 if "down" in n else 2 / 16)  # kept: rank 2, never restored
    target = "layers.1.mlp.up_proj"
    w = model.get_submodule(target).weight
    with torch.no_grad():
        w.add_(0.3 * torch.randn(w.shape, generator=torch.Generator().manual_seed(9), dtype=w.dtype))
    return model, names, target


@pytest.mark.parametrize("score", ["dispersion_energy"])  # the unweighted scores do not (see README)
def test_search_picks_the_planted_noisy_tail_matrix(score):
    model, names, target = _planted()
    before = {n: model.get_submodule(n).weight.detach().clone() for n in names}
    cal = [_ids(s) for s in range(3)]
    search = ForwardOnlyRankSearch(candidates="mlp", positions="all", score=score, rho_grid=(0.125, 0.5),
                                   rho_min=0.125)
    search.fit(model, cal, eval_fn=lambda m: -float(_lm_loss(m, cal[0]).detach()))
    scores = search.result_.scores
    assert max(scores, key=scores.get) == target
    assert search.result_.forward_passes == 1 + 1 + 2 and search.result_.passes_used == 4
    assert [t[0] for t in search.result_.trials] == [target, target]
    for n in names:  # fit leaves the model unmodified
        assert torch.equal(model.get_submodule(n).weight, before[n])


def test_weights_restored_after_failed_trial():
    model = tiny_llama()
    names = candidate_linears(model)
    before = {n: model.get_submodule(n).weight.detach().clone() for n in names}
    calls = []

    def eval_fn(m):
        calls.append(1)
        return float("nan") if len(calls) == 2 else 0.5

    with pytest.raises(ValueError, match=r"eval_fn\(model\) must be a finite number"):
        ForwardOnlyRankSearch(candidates="all").fit(model, [_ids(0)], eval_fn=eval_fn)
    with pytest.raises(RuntimeError, match="boom"):
        LaserExhaustiveSearch(candidates="mlp", rho_grid=(0.5,)).fit(
            model, lambda m: (_ for _ in ()).throw(RuntimeError("boom")) if len(calls) > 3 else calls.append(1) or 0.0)
    for n in names:
        assert torch.equal(model.get_submodule(n).weight, before[n])


def test_laser_grid_equals_brute_force_loop():
    model = tiny_llama()
    cal = _ids(4)
    grid = (0.0625, 0.25)

    def score(m):
        with torch.no_grad():
            return -float(_lm_loss(m, cal))

    laser = LaserExhaustiveSearch(candidates="mlp", rho_grid=grid).fit(model, score)
    res = laser.result_
    brute = {}
    for n in candidate_linears(model, "mlp"):
        for rho in grid:
            with laser_reduce(model, n, rho):
                brute[(n, rho)] = score(model)
    best = max(brute, key=brute.get)
    assert res.forward_passes == 1 + len(brute) and res.base_score == score(model)
    if brute[best] > res.base_score:
        assert (res.reduction.module, res.reduction.rho) == best
        assert math.isclose(res.best_score, brute[best], rel_tol=0, abs_tol=1e-12)
    else:
        assert res.reduction is None


def test_gradient_score_matches_finite_differences():
    model = tiny_llama()
    cal = [_ids(5), _ids(6)]
    search = GradientSVSearch(lambda m, b: _lm_loss(m, b), candidates=["layers.0.mlp.down_proj",
                                                                       "layers.1.attn.v_proj"])
    grads = search.sigma_gradients(model, cal)
    assert all(p.requires_grad for p in model.parameters())  # flags restored
    for name, g in grads.items():
        w = model.get_submodule(name).weight
        u, s, vh = torch.linalg.svd(w.detach(), full_matrices=False)
        for i in (0, 3, len(s) - 1):
            eps = 1e-3  # the Llama's RoPE tables are float32: smaller steps drown in rounding
            bump = eps * torch.outer(u[:, i], vh[i])
            with torch.no_grad():
                w.add_(bump)
                up = sum(float(_lm_loss(model, b)) for b in cal)
                w.sub_(2 * bump)
                down = sum(float(_lm_loss(model, b)) for b in cal)
                w.add_(bump)
            fd = (up - down) / (2 * eps)  # ∂L/∂σ_i = u_iᵀ (∂L/∂W) v_i
            assert abs(float(g[i]) - fd) < 2e-5 + 1e-3 * abs(fd), (name, i, float(g[i]), fd)
    res = search.fit(model, cal).result_
    assert res.backward_passes == 1 and res.passes_used == 3 and res.reduction is not None
    tail = search.tail_scores_[res.reduction.module]
    assert tail[res.reduction.rho] == min(min(t.values()) for t in search.tail_scores_.values())


def test_random_control_draws_a_candidate():
    model = tiny_llama()
    picks = {RandomMatrixSearch("mlp", (0.5,), seed=s).fit(model, lambda m: 0.0).module_ for s in range(8)}
    assert len(picks) > 1 and picks <= set(candidate_linears(model, "mlp"))


def test_angle_concentration_by_rank_against_brute_force_and_auto_rule():
    g = torch.Generator().manual_seed(2)
    c = torch.randn(7, 5, generator=g, dtype=torch.float64) + torch.tensor([2.0, 1.0, 0.0, 0.0, 0.0],
                                                                            dtype=torch.float64)
    curve = angle_concentration_by_rank(c)
    for k in range(1, 6):
        assert abs(float(curve[k - 1]) - mean_pairwise_cosine(c[:, :k])) < 1e-12
    assert knee_index(torch.tensor([0.0, 0.8, 0.9, 0.95, 1.0])) == 1
    model, names, target = _planted()
    res = ForwardOnlyRankSearch(candidates="mlp", positions="all", rank_rule="auto", rho_min=0.125).fit(
        model, [_ids(0), _ids(1)]).result_
    assert res.reduction.module == target and 0 < res.reduction.rho <= 1 and res.forward_passes == 2


def test_search_bad_input():
    model = tiny_llama()
    cal = [_ids(0)]
    ok = lambda m: 0.0  # noqa: E731
    for kwargs, msg in [({"score": "x"}, "score must be one of"), ({"positions": "x"}, "positions must be one of"),
                        ({"rank_rule": "x"}, "rank_rule must be one of"),
                        ({"rho_grid": (0.0,)}, r"rho_grid\[0\] must be a finite number in \(0, 1\]"),
                        ({"rho_grid": ()}, "rho_grid must be a non-empty"), ({"top_k": 0}, "top_k must be"),
                        ({"candidates": ["embed_tokens"]}, "must be an nn.Linear")]:
        with pytest.raises((ValueError, TypeError), match=msg):
            ForwardOnlyRankSearch(**kwargs).fit(model, cal, eval_fn=ok)
    with pytest.raises(ValueError, match="needs calibration data"):
        ForwardOnlyRankSearch().fit(model, [], eval_fn=ok)
    with pytest.raises(ValueError, match="needs eval_fn"):
        ForwardOnlyRankSearch().fit(model, cal)
    with pytest.raises(RuntimeError, match="call fit"):
        ForwardOnlyRankSearch().apply(model)
    with pytest.raises(ValueError, match=r"loss_fn\(model, batch\) must be a tensor with 0 dimensions of finite"):
        GradientSVSearch(lambda m, b: torch.tensor(float("inf"), requires_grad=True), "mlp").fit(model, cal)
    assert all(p.requires_grad for p in model.parameters())
