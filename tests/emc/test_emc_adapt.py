"""EMC and the baselines: label-free adaptation, input handling, memory bank, evaluation metrics."""

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from neurips26.emc import (
    EMC,
    GCAL,
    DirectClosedForm,
    LabelAccessError,
    SourceGNN,
    SourceOnly,
    TensorMemoryTracker,
    TentGraph,
    UnlabeledGraph,
    continual_eval,
    csbm_stream,
    train_source_gnn,
)


@pytest.fixture(scope="module")
def setup():
    stream = csbm_stream(n_domains=3, n_nodes=160, n_classes=3, dim=8, p_in=0.08, p_out=0.01, seed=0)
    model = train_source_gnn(stream[0], hidden=16, epochs=40, seed=0)
    return stream, model


class _TrapGraph:
    """A target graph whose labels raise on any access."""

    def __init__(self, g: Data) -> None:
        self.x, self.edge_index = g.x, g.edge_index

    @property
    def y(self):
        raise AssertionError("labels were read during adaptation")

    @property
    def train_mask(self):
        raise AssertionError("masks were read during adaptation")


def _all_methods(model, source):
    return {"emc": EMC(model, 3, rank=2).fit_source(source),
            "direct": DirectClosedForm(model, 3, rank=2).fit_source(source),
            "source": SourceOnly(model), "tent": TentGraph(model, steps=2),
            "gcal": GCAL(model, epochs=7, warmup_epochs=5, syn_ratio=0.1)}


def test_adaptation_never_reads_target_labels(setup):
    stream, model = setup
    for name, method in _all_methods(model, stream[0]).items():
        for g in stream[1:]:
            pred = method.adapt(_TrapGraph(g))
            assert pred.shape == (g.num_nodes,), name
            assert pred.dtype == torch.int64 and int(pred.min()) >= 0 and int(pred.max()) < 3


def test_unlabeled_graph_raises_on_label_access():
    g = UnlabeledGraph(torch.zeros(3, 2), torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(LabelAccessError, match="'y'"):
        _ = g.y
    assert g.num_nodes == 3


def test_continual_eval_passes_only_unlabeled_views(setup):
    stream, _ = setup
    seen = []

    class Spy:
        def adapt(self, graph):
            seen.append(type(graph))
            with pytest.raises(LabelAccessError):
                _ = graph.y
            return torch.zeros(graph.num_nodes, dtype=torch.long)

        def predict(self, graph):
            with pytest.raises(LabelAccessError):
                _ = graph.y
            return torch.zeros(graph.num_nodes, dtype=torch.long)

    continual_eval(Spy(), stream[1:], track_memory=False)
    assert seen == [UnlabeledGraph] * 3


def test_continual_eval_metrics_match_hand_computation():
    # domain j's predictions are correct on a fraction table[t][j] of its nodes after step t
    table = np.array([[0.5, 0, 0], [0.25, 0.75, 0], [0.5, 0.5, 1.0]])
    graphs = [Data(x=torch.full((4, 1), float(j)), edge_index=torch.zeros(2, 0, dtype=torch.long),
                   y=torch.ones(4, dtype=torch.long)) for j in range(3)]

    class Scripted:
        step = -1

        def adapt(self, graph):
            self.step += 1
            return self.predict(graph)

        def predict(self, graph):
            j = int(graph.x[0, 0])
            k = int(round(table[self.step][j] * 4))
            return torch.tensor([1] * k + [0] * (4 - k))

    res = continual_eval(Scripted(), graphs, track_memory=False)
    expected = np.where(np.tril(np.ones((3, 3))) > 0, table, np.nan)
    np.testing.assert_allclose(res.accuracy, expected)
    assert res.average_accuracy == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    # forgetting: domain 0 best 0.5 final 0.5 -> 0; domain 1 best 0.75 final 0.5 -> 0.25
    assert res.forgetting == pytest.approx(0.125)
    assert res.adapt_accuracy == pytest.approx((0.5 + 0.75 + 1.0) / 3)
    assert len(res.time_s) == 3 and all(t >= 0 for t in res.time_s)


def test_data_and_tensor_inputs_agree_and_sparse_adjacency_is_accepted(setup):
    stream, model = setup
    g = stream[1]
    a = EMC(model, 3, rank=2).fit_source(stream[0])
    b = EMC(model, 3, rank=2).fit_source(stream[0].x, stream[0].edge_index, y=stream[0].y,
                                         mask=stream[0].train_mask)
    assert torch.equal(a.adapt(g), b.adapt(g.x, g.edge_index))
    adj = torch.sparse_coo_tensor(g.edge_index, torch.ones(g.edge_index.shape[1]), (g.num_nodes, g.num_nodes))
    assert torch.equal(a.predict(g), b.predict(g.x, adj))


def test_emc_beats_chance_and_keeps_budget(setup):
    stream, model = setup
    emc = EMC(model, 3, rank=2, memory_budget=3 * 4 * 2).fit_source(stream[0])
    for g in stream[1:]:
        emc.adapt(g)
        assert emc.memory_points <= 24
    acc = float((emc.predict(stream[1]) == stream[1].y).float().mean())
    assert acc > 0.5  # chance is 1/3


def test_budget_merge_preserves_mixture_mean(setup):
    stream, model = setup
    emc = EMC(model, 3, rank=2, memory_budget=10_000).fit_source(stream[0])
    for g in stream[1:]:
        emc.adapt(g)
    crystals = [c for c in emc.bank_ if c.label == 0 and c.domain > 0]
    assert len(crystals) >= 2
    a, b = crystals[:2]
    emc.memory_budget = emc.memory_points - 1
    emc._merge_to_budget()
    merged = [c for c in emc.bank_ if c.label == 0 and c.domain > 0][0]
    torch.testing.assert_close(merged.mean, (a.mean + b.mean) / 2)
    assert merged.weight == 2.0
    torch.testing.assert_close(merged.points.mean(0), merged.mean)


def test_gcal_stores_memory_only_after_warmup(setup):
    stream, model = setup
    short = GCAL(model, epochs=3, warmup_epochs=5)
    short.adapt(stream[1])
    assert short.memory_ == []  # GCAL's public defaults never train or store a memory
    full = GCAL(model, epochs=7, warmup_epochs=5, syn_ratio=0.1)
    full.adapt(stream[1])
    full.adapt(stream[2])
    assert len(full.memory_) == 2
    mu, logvar = full.memory_[0]
    assert mu.shape == (int(np.ceil(0.1 * 160)), 8) and logvar.shape == mu.shape
    assert full.memory_bytes > 0


def test_source_model_is_not_modified_by_baselines(setup):
    stream, model = setup
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for method in _all_methods(model, stream[0]).values():
        method.adapt(stream[1])
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])


def test_tensor_memory_tracker_counts_known_allocations():
    tracker = TensorMemoryTracker()
    with tracker:
        a = torch.ones(1000, 250)           # 1 MB
        b = a * 2                           # 1 MB more at peak
        del a
        c = b.sum()                         # 4 bytes
    assert tracker.peak_bytes == pytest.approx(2_000_004, abs=8)
    assert tracker.current_bytes <= 1_000_004 + 8
    del b, c


def test_memory_tracking_does_not_change_results(setup):
    stream, model = setup
    r1 = continual_eval(GCAL(model, epochs=6, syn_ratio=0.1, seed=1), stream[1:], track_memory=True)
    r2 = continual_eval(GCAL(model, epochs=6, syn_ratio=0.1, seed=1), stream[1:], track_memory=False)
    np.testing.assert_array_equal(r1.accuracy, r2.accuracy)
    assert all(p > 0 for p in r1.peak_bytes) and all(np.isnan(r2.peak_bytes))


def test_other_pyg_encoders_work(setup):
    stream, _ = setup
    for conv in ("sage", "gat", "gin"):
        model = train_source_gnn(stream[0], hidden=8, epochs=5, conv=conv, seed=0)
        pred = EMC(model, 3, rank=2).fit_source(stream[0]).adapt(stream[1])
        assert pred.shape == (160,)
    plain = SourceGNN(8, 3, hidden=8).embed  # a bare callable works as the encoder too
    assert EMC(lambda x, ei: plain(x, ei), 3, rank=2).fit_source(stream[0]).adapt(stream[1]).shape == (160,)


# ------------------------------------------------------------------------------------ bad inputs
def test_feature_dimension_mismatch(setup):
    stream, model = setup
    emc = EMC(model, 3, rank=2).fit_source(stream[0])
    bad = Data(x=torch.randn(10, 9), edge_index=torch.zeros(2, 0, dtype=torch.long))
    for method in (emc, SourceOnly(model), TentGraph(model), GCAL(model)):
        with pytest.raises(ValueError, match=r"graph.x must be a tensor \[N, 8\] .*shape \[10, 9\]"):
            method.adapt(bad)


def test_empty_graph(setup):
    stream, model = setup
    emc = EMC(model, 3, rank=2).fit_source(stream[0])
    with pytest.raises(ValueError, match="x must be a non-empty tensor"):
        emc.adapt(torch.zeros(0, 8), torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="x must be a non-empty tensor"):
        GCAL(model).adapt(Data(x=torch.zeros(0, 8), edge_index=torch.zeros(2, 0, dtype=torch.long)))


@pytest.mark.parametrize("edge_index,match", [
    (torch.tensor([[0, 1], [1, 10]]), r"node indices must lie in \[0, 10\), got range \[0, 10\]"),
    (torch.tensor([[-1, 1], [1, 2]]), r"got range \[-1, 2\]"),
    (torch.tensor([[0, 1, 2]]), r"integer tensor \[2, E\]"),
    (torch.tensor([[0.0, 1.0], [1.0, 2.0]]), "integer"),
])
def test_edge_index_out_of_range_or_malformed(setup, edge_index, match):
    stream, model = setup
    emc = EMC(model, 3, rank=2).fit_source(stream[0])
    with pytest.raises((ValueError, TypeError), match=match):
        emc.adapt(torch.randn(10, 8), edge_index)


def test_class_count_mismatch(setup):
    stream, model = setup
    with pytest.raises(ValueError, match="source model predicts 3 classes, EMC was given 4"):
        EMC(model, 4, rank=2).fit_source(stream[0])
    with pytest.raises(ValueError, match="class count mismatch"):
        EMC(lambda x, ei: model.embed(x, ei), 2, rank=2).fit_source(stream[0])
    with pytest.raises(ValueError, match="class count mismatch"):
        continual_eval(SourceOnly(model), stream[1:], n_classes=2, track_memory=False)


def test_other_bad_inputs(setup):
    stream, model = setup
    with pytest.raises(RuntimeError, match="fit_source"):
        EMC(model, 3).adapt(stream[1])
    with pytest.raises(ValueError, match="gamma"):
        EMC(model, 3, gamma=0.0).fit_source(stream[0])
    with pytest.raises(ValueError, match="memory_budget"):
        EMC(model, 3, rank=2, memory_budget=5).fit_source(stream[0])
    with pytest.raises(ValueError, match="x must be a tensor .* of finite values"):
        EMC(model, 3, rank=2).fit_source(stream[0]).adapt(torch.full((3, 8), float("nan")),
                                                          torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(TypeError, match="encoder"):
        EMC(42, 3, rank=2).fit_source(stream[0])
    with pytest.raises(TypeError, match="edge_index"):
        EMC(model, 3, rank=2).fit_source(stream[0]).adapt(torch.randn(3, 8))
    with pytest.raises(ValueError, match="stream"):
        continual_eval(SourceOnly(model), [])
    with pytest.raises(TypeError, match="model"):
        GCAL(torch.nn.Linear(3, 3))
    with pytest.raises(ValueError, match="epochs"):
        GCAL(model, epochs=0)
