"""Mini-batch inference (NeighborLoader / k-hop) against full-graph inference, the encoder wrapper for GNNs
without .embed, the Twitch stream loader on local files, and the issue-48 baselines (Tent on BatchNorm, T3A,
raw-embedding memory, GCAL on BatchNorm parameters)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCN

from neurips26.data import DatasetNotFoundError
from neurips26.emc import (
    EMC,
    GCAL,
    T3A,
    PenultimateEncoder,
    RawEmbeddingMemory,
    TentGraph,
    continual_eval,
    csbm_stream,
    embed_in_batches,
    neighbor_loader_available,
    train_source_gnn,
    twitch_stream,
)


@pytest.fixture(scope="module")
def setup():
    stream = csbm_stream(n_domains=3, n_nodes=240, n_classes=3, dim=8, seed=3)
    model = train_source_gnn(stream[0], hidden=16, epochs=30, batch_norm=True, seed=0)
    return stream, model


@pytest.mark.parametrize("batch_size", [1, 17, 64, 239])
def test_khop_batches_equal_full_graph_gcn(setup, batch_size):
    stream, model = setup
    g = stream[1]
    full = model.embed(g.x, g.edge_index)
    batched = embed_in_batches(model.embed, g.x, g.edge_index, batch_size=batch_size, num_hops=3, loader="khop")
    torch.testing.assert_close(batched, full, rtol=1e-5, atol=1e-5)


def test_two_hops_are_not_enough_for_gcn_degrees(setup):
    # GCN normalises by both endpoints' degrees: the outer hop's degrees need one hop more
    stream, model = setup
    g = stream[1]
    full = model.embed(g.x, g.edge_index)
    short = embed_in_batches(model.embed, g.x, g.edge_index, batch_size=16, num_hops=2, loader="khop")
    assert float((short - full).abs().max().detach()) > 1e-3


def test_sage_needs_only_n_layers_hops(setup):
    stream, _ = setup
    sage = train_source_gnn(stream[0], hidden=8, epochs=5, conv="sage", seed=0)
    g = stream[2]
    torch.testing.assert_close(embed_in_batches(sage.embed, g.x, g.edge_index, batch_size=30, num_hops=2,
                                                loader="khop"), sage.embed(g.x, g.edge_index), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not neighbor_loader_available(),
                    reason="PyG's NeighborLoader needs pyg-lib or torch-sparse, not installed here")
def test_neighbor_loader_equals_full_graph(setup):
    stream, model = setup
    g = stream[1]
    batched = embed_in_batches(model.embed, g.x, g.edge_index, batch_size=32, num_hops=3, loader="neighbor")
    torch.testing.assert_close(batched, model.embed(g.x, g.edge_index), rtol=1e-5, atol=1e-5)


def test_neighbor_loader_missing_backend_is_named():
    if neighbor_loader_available():
        pytest.skip("a sampling backend is installed")
    with pytest.raises(ImportError, match="pyg-lib or torch-sparse"):
        embed_in_batches(lambda x, ei: x, torch.zeros(3, 2), torch.zeros(2, 0, dtype=torch.long), batch_size=2,
                         num_hops=1, loader="neighbor")


def test_emc_in_batches_matches_one_pass(setup):
    stream, model = setup
    one = EMC(model, 3).fit_source(stream[0])
    many = EMC(model, 3, batch_size=50).fit_source(stream[0])
    for g in stream[1:]:
        assert torch.equal(one.adapt(g), many.adapt(g))
    with pytest.raises(ValueError, match="num_hops"):
        EMC(lambda x, ei: x, 3, batch_size=10).fit_source(stream[0])


def test_penultimate_encoder_wraps_a_gnn_without_embed(setup):
    stream, model = setup
    hooked = PenultimateEncoder(model, "head", capture="input")
    g = stream[1]
    torch.testing.assert_close(hooked(g.x, g.edge_index), model.embed(g.x, g.edge_index))
    gnn = GCN(in_channels=8, hidden_channels=16, num_layers=2, out_channels=3).eval()
    enc = PenultimateEncoder(gnn, "convs.1", capture="input")
    z = enc(g.x, g.edge_index)
    assert z.shape == (g.num_nodes, 16)
    preds = EMC(enc, 3).fit_source(stream[0]).adapt(g)
    assert preds.shape == (g.num_nodes,)
    with pytest.raises(ValueError, match="layer"):
        PenultimateEncoder(gnn, "nope")


def _fake_twitch(root, lang, n, rng):
    raw = root / lang / "raw"
    raw.mkdir(parents=True)
    edges = rng.integers(0, n, size=(3 * n, 2))
    np.savez(raw / f"{lang}.npz", features=rng.random((n, 128)).astype(np.float32),
             target=rng.integers(0, 2, size=n), edges=edges)


def test_twitch_stream_reads_local_files_and_never_downloads_silently(tmp_path):
    rng = np.random.default_rng(0)
    with pytest.raises(DatasetNotFoundError, match="twitch/DE"):
        twitch_stream(str(tmp_path), targets=("EN",))
    for lang, n in (("DE", 40), ("EN", 30)):
        _fake_twitch(tmp_path, lang, n, rng)
    stream = twitch_stream(str(tmp_path), targets=("EN",))
    assert [g.num_nodes for g in stream] == [40, 30] and stream[0].x.shape[1] == 128
    assert stream[0].train_mask.sum() == 20 and stream[1].language == "EN"
    with pytest.raises(ValueError, match="language"):
        twitch_stream(str(tmp_path), targets=("XX",))


def test_tent_norm_adapts_batchnorm_affine_with_batch_statistics(setup):
    stream, model = setup
    tent = TentGraph(model, steps=3, lr=1e-2)
    assert tent.params == "norm"
    head_before = tent.model.head.weight.clone()
    bn = tent.model.norms[0]
    affine_before = bn.weight.clone()
    tent.adapt(stream[1])
    assert torch.equal(tent.model.head.weight, head_before) and not torch.equal(bn.weight, affine_before)
    assert bn.running_mean is None  # normalises with the target graph's own statistics
    assert model.norms[0].running_mean is not None  # the source model is untouched


def test_t3a_prototypes_start_from_the_head_and_filter(setup):
    stream, model = setup
    t3a = T3A(model, filter_k=5)
    g = stream[0]
    z = model.embed(g.x, g.edge_index)
    # before adaptation, supports = normalised head rows: cosine to them without bias
    expected = (F.normalize(z, dim=1) @ F.normalize(model.head.weight, dim=1).T).argmax(1)
    assert torch.equal(t3a.predict(g), expected)
    t3a.adapt(stream[1])
    counts = torch.bincount(t3a.labels_, minlength=3)
    assert int(counts.max()) <= 5 and len(t3a.labels_) == len(t3a.entropy_)
    with pytest.raises(ValueError, match="filter_k"):
        T3A(model, filter_k=0)


def test_raw_memory_keeps_every_embedding_with_emc_crystal_weight(setup):
    stream, model = setup
    raw = RawEmbeddingMemory(model, 3, rank=4).fit_source(stream[0])
    n_source = int(stream[0].train_mask.sum())
    assert raw.memory_points == n_source
    raw.adapt(stream[1])
    new = [c for c in raw.bank_ if c.domain == 1]
    assert all(c.points.shape[0] == stream[1].num_nodes for c in new)
    for c in new:  # each (domain, class) weighs as much as one EMC crystal of 2r points
        torch.testing.assert_close(c.point_weights.sum(), torch.tensor(8.0))
    res = continual_eval(RawEmbeddingMemory(model, 3).fit_source(stream[0]), stream[1:], track_memory=False)
    assert 0.0 <= res.average_accuracy <= 1.0


def test_gcal_norm_adapts_only_batchnorm(setup):
    stream, model = setup
    gcal = GCAL(model, params="norm", epochs=6, syn_ratio=0.1)
    conv_before = [p.clone() for p in gcal.model.convs.parameters()]
    gcal.adapt(stream[1])
    for a, b in zip(conv_before, gcal.model.convs.parameters(), strict=True):
        torch.testing.assert_close(a, b)  # EMA of equal values: equal up to rounding
    assert len(gcal.memory_) == 1
    plain = train_source_gnn(stream[0], hidden=8, epochs=2, seed=0)
    with pytest.raises(ValueError, match="BatchNorm"):
        GCAL(plain, params="norm")


def test_declared_constraints_refuse_bad_arguments_by_name(setup):
    stream, model = setup
    g = stream[1]
    for kwargs, name in (({"batch_size": 0, "num_hops": 2}, "batch_size"),
                         ({"batch_size": 8, "num_hops": 0}, "num_hops"),
                         ({"batch_size": 8, "num_hops": 2, "loader": "magic"}, "loader")):
        with pytest.raises(ValueError, match=name):
            embed_in_batches(model.embed, g.x, g.edge_index, **kwargs)
    with pytest.raises(ValueError, match="edge_index"):
        embed_in_batches(model.embed, g.x, g.edge_index.float(), batch_size=8, num_hops=2)
    with pytest.raises(ValueError, match="capture"):
        PenultimateEncoder(model, "head", capture="middle")
    with pytest.raises(TypeError, match="download"):
        twitch_stream("/nonexistent", download="yes")
