"""Statistics of the stream generators against their definitions."""

import numpy as np
import pytest
import torch

from neurips26.emc import csbm_stream, planetoid_shift_stream


@pytest.fixture(scope="module")
def csbm():
    return csbm_stream(n_domains=4, n_nodes=2000, n_classes=4, dim=16, drift=0.6, rotation_rate=0.15,
                       p_in=0.02, p_out=0.004, seed=3)


def test_csbm_shapes_balance_and_determinism(csbm):
    assert len(csbm) == 5
    for g in csbm:
        assert g.x.shape == (2000, 16) and g.x.dtype == torch.float32
        assert torch.bincount(g.y).tolist() == [500] * 4
    again = csbm_stream(n_domains=4, n_nodes=2000, n_classes=4, dim=16, seed=3)
    for a, b in zip(csbm, again, strict=True):
        assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
    other = csbm_stream(n_domains=4, n_nodes=2000, n_classes=4, dim=16, seed=4)
    assert not torch.equal(csbm[1].x, other[1].x)
    assert int(csbm[0].train_mask.sum()) == 1000 and not bool((csbm[0].train_mask & csbm[0].test_mask).any())


def test_csbm_edge_statistics(csbm):
    n, c = 2000, 4
    per = n // c
    exp_in = 0.02 * per * (per - 1) / 2 * c
    exp_out = 0.004 * per * per * c * (c - 1) / 2
    for g in csbm:
        ei = g.edge_index
        # undirected, no self loops, no duplicates
        pairs = set(map(tuple, ei.T.tolist()))
        assert all((b, a) in pairs for a, b in pairs)
        assert not bool((ei[0] == ei[1]).any())
        assert len(pairs) == ei.shape[1]
        und = ei[:, ei[0] < ei[1]]
        same = (g.y[und[0]] == g.y[und[1]]).sum().item()
        diff = und.shape[1] - same
        # counts within 5 binomial standard deviations of the SBM expectation
        assert abs(same - exp_in) < 5 * np.sqrt(exp_in)
        assert abs(diff - exp_out) < 5 * np.sqrt(exp_out)


def test_csbm_features_follow_rotated_means_plus_offset(csbm):
    for g in csbm:
        for k in range(4):
            emp = g.x[g.y == k].mean(0)
            expected = g.rotation @ g.class_means[k] + g.offset
            # 500 samples of N(0, I): mean error ~ 1/sqrt(500) per coordinate
            assert float((emp - expected).abs().max()) < 5 / np.sqrt(500)
        resid = g.x - (g.class_means[g.y] @ g.rotation.T + g.offset)
        assert float(resid.var()) == pytest.approx(1.0, abs=0.05)
    # rotations are orthogonal; offsets follow a random walk with step norm ~ drift * separation
    for g in csbm:
        torch.testing.assert_close(g.rotation @ g.rotation.T, torch.eye(16), atol=1e-5, rtol=0)
    assert float(csbm[0].offset.norm()) == 0.0
    steps = [float((b.offset - a.offset).norm()) for a, b in zip(csbm[:-1], csbm[1:], strict=True)]
    assert all(0.3 < s < 2.5 for s in steps)  # E ~ 0.6 * 2.0 = 1.2


def test_csbm_structure_drift_lowers_homophily():
    s = csbm_stream(n_domains=3, n_nodes=1200, n_classes=3, dim=4, structure_drift=0.3, seed=0)
    homophily = [float((g.y[g.edge_index[0]] == g.y[g.edge_index[1]]).float().mean()) for g in s]
    assert homophily[0] > homophily[-1] + 0.2


@pytest.mark.parametrize("kwargs,match", [({"n_domains": 0}, "n_domains"), ({"p_in": 1.5}, "p_in"),
                                          ({"n_nodes": 3, "n_classes": 4}, "n_nodes"),
                                          ({"train_fraction": 1.0}, "train_fraction")])
def test_csbm_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        csbm_stream(**kwargs)


def test_planetoid_stream_statistics():
    from neurips26.data.testing import require_dataset

    require_dataset("planetoid/cora")
    s = planetoid_shift_stream("cora", n_domains=4, max_dropout=0.5, drift=0.5, drift_dims=32, seed=0)
    assert len(s) == 5
    assert sum(g.num_nodes for g in s) == 2708
    for t, g in enumerate(s):
        assert g.x.shape[1] == 1433
        assert int(g.edge_index.max()) < g.num_nodes
        assert g.dropout_rate == pytest.approx(0.5 * t / 4)
    # BFS blocks keep far more edges than a random split into 5 blocks would (~20% of 10,556)
    assert sum(g.edge_index.shape[1] for g in s) > 0.4 * 10556
    # source features are untouched binary bag-of-words; later domains are shifted on a subspace
    assert set(torch.unique(s[0].x).tolist()) <= {0.0, 1.0}
    shifted = [(g.x != torch.round(g.x)).any(0) for g in s[1:]]
    for cols in shifted:
        assert int(cols.sum()) == 32
    # dropout: the mean number of active words per node decreases along the stream
    words = [float((g.x == 1).sum(1).float().mean()) for g in s]
    assert words[0] > words[-1]
    assert planetoid_shift_stream("cora", n_domains=4, seed=0)[2].x.equal(
        planetoid_shift_stream("cora", n_domains=4, seed=0)[2].x)


def test_planetoid_stream_bad_arguments():
    with pytest.raises(ValueError, match="planetoid name"):
        planetoid_shift_stream("pubmed")
    with pytest.raises(ValueError, match="max_dropout"):
        planetoid_shift_stream("cora", max_dropout=1.0)


@pytest.mark.parametrize("name, n_domains", [("citeseer", 6), ("cora", 8)])
def test_planetoid_source_has_a_labeled_node_of_every_class(name, n_domains):
    from neurips26.data.testing import require_dataset

    require_dataset(f"planetoid/{name}")
    # regression: a BFS block of CiteSeer once missed class 4, and EMC's fit_source (rightly) refused it

    for seed in range(5):
        source = planetoid_shift_stream(name, n_domains=n_domains, seed=seed)[0]
        labeled = np.unique(source.y[source.train_mask].numpy())
        assert len(labeled) == (6 if name == "citeseer" else 7), (seed, labeled)
