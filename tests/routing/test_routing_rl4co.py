"""RL4CO peer adapter (skipped where rl4co is not installed): our instances in its TensorDict, its POMO
trained by its own loss, and its tours measured by our tour_length."""

import numpy as np
import pytest
import torch

pytest.importorskip("rl4co")

from neurips26.routing import make_tsp_instances, tour_length  # noqa: E402
from neurips26.routing.rl4co_peer import RL4COPOMO, rl4co_available, to_rl4co_tensordict  # noqa: E402


def test_tensordict_holds_our_instances():
    assert rl4co_available()
    X = make_tsp_instances(3, 6, seed=0)
    td = to_rl4co_tensordict(X)
    assert tuple(td.batch_size) == (3,)
    np.testing.assert_allclose(td["locs"].numpy(), X, rtol=0, atol=0)
    assert td["action_mask"].all()  # nothing visited yet


def test_pomo_tiny_trains_and_its_tours_are_ours_to_measure():
    X = make_tsp_instances(4, 6, seed=1)
    peer = RL4COPOMO(6, embed_dim=16, num_encoder_layers=1, num_heads=2, seed=0)
    assert peer.num_params() > 0
    res = peer.train(steps=2, batch_size=8, lr=1e-3, seed=0)
    assert res.steps == 2 and np.isfinite(res.losses).all()
    tours, lengths = peer.solve(X)  # multi-start x8
    assert tours.shape == (4, 6) and (np.sort(tours, 1) == np.arange(6)).all()
    np.testing.assert_allclose(lengths, tour_length(X, tours), rtol=1e-12)
    one, one_len = peer.solve(X, multi_start=False, augment=False)
    assert (lengths <= one_len + 1e-6).all()  # the best of 48 rollouts is never worse than one
    td = to_rl4co_tensordict(X, peer.env)
    with torch.no_grad():
        out = peer.policy(td, peer.env, phase="test", decode_type="greedy", return_actions=True)
    np.testing.assert_allclose(-out["reward"].numpy(), tour_length(X, out["actions"].numpy()), rtol=1e-5)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="n_nodes"):
        RL4COPOMO(2)
    with pytest.raises(ValueError, match="embed_dim must be divisible"):
        RL4COPOMO(6, embed_dim=10, num_heads=4)
    peer = RL4COPOMO(6, embed_dim=16, num_encoder_layers=1, num_heads=2)
    with pytest.raises(ValueError, match="built for 6"):
        peer.solve(make_tsp_instances(2, 7, seed=0))
    with pytest.raises(ValueError, match="lr"):
        peer.train(steps=1, batch_size=2, lr=0.0)
