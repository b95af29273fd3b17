"""emc inside PyG (issue 15: edge_weight, adj_t, state_dict, devices) and its error contract (issue 16)."""

import sys
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

from neurips26.emc import EMC, SourceGNN, csbm_stream, ridge_fit, train_source_gnn, unpack_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _badinput import BadInput, check_bad_inputs  # noqa: E402


@pytest.fixture(scope="module")
def setup():
    stream = csbm_stream(n_domains=3, n_nodes=120, n_classes=3, dim=8, p_in=0.08, p_out=0.01, seed=0)
    model = train_source_gnn(stream[0], hidden=16, epochs=30, seed=0)
    return stream, model


def _weighted(g, seed=0):
    w = torch.rand(g.edge_index.shape[1], generator=torch.Generator().manual_seed(seed)) + 0.1
    return Data(x=g.x, edge_index=g.edge_index, edge_weight=w, y=g.y)


def test_edge_weight_reaches_the_encoder(setup):
    stream, model = setup
    gw = _weighted(stream[1])
    emc = EMC(model, 3, rank=2).fit_source(stream[0])
    # independent reference: the GCN called directly with the weights, aligned and scored by hand
    with torch.no_grad():
        model.eval()
        z_w = model.embed(gw.x, gw.edge_index, gw.edge_weight)
        z_u = model.embed(gw.x, gw.edge_index)
    assert not torch.allclose(z_w, z_u)  # the weights matter for this graph
    from neurips26.emc import ridge_predict
    expected = ridge_predict(z_w - z_w.mean(0) + emc.state_, emc.classifier_)
    torch.testing.assert_close(emc.decision_function(gw), expected)
    # a scalar edge_attr [E, 1] is read as the weight too
    ga = Data(x=gw.x, edge_index=gw.edge_index, edge_attr=gw.edge_weight[:, None])
    torch.testing.assert_close(emc.decision_function(ga), expected)


def test_weights_refused_by_name_where_they_cannot_be_used(setup):
    stream, model = setup
    gw = _weighted(stream[1])
    plain = EMC(lambda x, ei: model.embed(x, ei), 3, rank=2).fit_source(stream[0])
    with pytest.raises(ValueError, match="edge_weight"):
        plain.adapt(gw)
    multi = Data(x=gw.x, edge_index=gw.edge_index, edge_attr=torch.ones(gw.edge_index.shape[1], 4))
    with pytest.raises(ValueError, match="edge_attr"):
        unpack_graph(multi, return_weight=True)
    with pytest.raises(ValueError, match="edge_weight"):
        unpack_graph(gw)  # a caller that cannot use weights refuses them instead of dropping them


def test_adj_t_is_accepted(setup):
    torch_sparse = pytest.importorskip("torch_sparse", reason="SparseTensor adj_t needs torch_sparse")
    stream, model = setup
    g = stream[1]
    adj_t = torch_sparse.SparseTensor(row=g.edge_index[1], col=g.edge_index[0], sparse_sizes=(g.num_nodes,) * 2)
    emc = EMC(model, 3, rank=2).fit_source(stream[0])
    torch.testing.assert_close(emc.decision_function(Data(x=g.x, adj_t=adj_t)), emc.decision_function(g))


def test_adj_t_as_torch_sparse_is_accepted(setup):
    stream, model = setup
    g = stream[1]
    n = g.num_nodes
    # ToSparseTensor's layout: adj_t[target, source]
    adj_t = torch.sparse_coo_tensor(g.edge_index.flip(0), torch.ones(g.edge_index.shape[1]), (n, n)).coalesce()
    x, ei = unpack_graph(Data(x=g.x, adj_t=adj_t))
    as_set = {tuple(e) for e in ei.T.tolist()}
    assert as_set == {tuple(e) for e in g.edge_index.T.tolist()}


def test_state_dict_roundtrip_and_to(setup, tmp_path):
    stream, model = setup
    emc = EMC(model, 3, rank=2).fit_source(stream[0])
    emc.adapt(stream[1])
    torch.save(emc.state_dict(), tmp_path / "emc.pt")
    other = EMC(model, 3, rank=2).load_state_dict(torch.load(tmp_path / "emc.pt", weights_only=True))
    torch.testing.assert_close(other.predict(stream[2]), emc.predict(stream[2]))
    assert other.memory_points == emc.memory_points and other.n_domains_ == 1
    torch.testing.assert_close(other.adapt(stream[2]), emc.adapt(stream[2]))
    assert emc.to("cpu") is emc and emc.device == torch.device("cpu")
    with pytest.raises(ValueError, match="n_classes"):
        EMC(model, 4, rank=2).load_state_dict(emc.state_dict())
    with pytest.raises(ValueError, match="state"):
        EMC(model, 3, rank=2).load_state_dict({"format": 99})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU was lent for this task")
def test_to_cuda(setup):  # pragma: no cover - needs a GPU
    stream, model = setup
    emc = EMC(SourceGNN(8, 3, hidden=16), 3, rank=2).fit_source(stream[0]).to("cuda")
    g = stream[1].to("cuda")
    assert emc.adapt(g).device.type == "cuda"


def _fitted(model, stream):
    emc = EMC(model, 3, rank=2).fit_source(stream[0])
    emc.adapt(stream[1])
    return emc


def test_adapt_on_huge_features_changes_nothing(setup):
    stream, model = setup
    emc = _fitted(model, stream)
    before = emc.predict(stream[2])
    huge = Data(x=stream[2].x * 1e30, edge_index=stream[2].edge_index)
    check_bad_inputs(emc.adapt, BadInput("x1e30", (huge,), names="x"), target=emc)
    torch.testing.assert_close(emc.predict(stream[2]), before)  # agreed on 34% of nodes before the fix


@pytest.mark.parametrize("case", [
    BadInput("wrong-dim", kwargs={"graph": Data(x=torch.randn(10, 5), edge_index=torch.zeros(2, 0, dtype=torch.long),
                                                y=torch.arange(10) % 3)}, names="x"),
    BadInput("missing-class", kwargs={"graph": Data(x=torch.randn(10, 8),
                                                    edge_index=torch.zeros(2, 0, dtype=torch.long),
                                                    y=torch.zeros(10, dtype=torch.long))}, names="y"),
    BadInput("nan-x", kwargs={"graph": Data(x=torch.full((10, 8), float("nan")),
                                            edge_index=torch.zeros(2, 0, dtype=torch.long), y=torch.arange(10) % 3)},
             names="x"),
    BadInput("float-y", kwargs={"graph": Data(x=torch.randn(10, 8), edge_index=torch.zeros(2, 0, dtype=torch.long),
                                              y=torch.rand(10))}, names="y"),
    BadInput("mask-shape", kwargs={"graph": Data(x=torch.randn(10, 8), edge_index=torch.zeros(2, 0, dtype=torch.long),
                                                 y=torch.arange(10) % 3), "mask": torch.ones(3, dtype=torch.bool)},
             names="mask"),
], ids=lambda c: c.id)
def test_fit_source_refuses_and_keeps_state(setup, case):
    stream, model = setup
    emc = _fitted(model, stream)
    check_bad_inputs(emc.fit_source, case, target=emc)


@pytest.mark.parametrize("case", [
    BadInput("wrong-dim", (Data(x=torch.randn(10, 5), edge_index=torch.zeros(2, 0, dtype=torch.long)),),
             names="x"),
    BadInput("nan", (Data(x=torch.full((10, 8), float("nan")), edge_index=torch.zeros(2, 0, dtype=torch.long)),),
             names="x"),
    BadInput("edge-range", (Data(x=torch.randn(10, 8), edge_index=torch.tensor([[0], [12]])),), names="edge_index"),
    BadInput("empty", (Data(x=torch.randn(0, 8), edge_index=torch.zeros(2, 0, dtype=torch.long)),), names="empty"),
    BadInput("not-a-graph", ("graph",), names="graph"),
], ids=lambda c: c.id)
def test_adapt_refuses_and_keeps_state(setup, case):
    stream, model = setup
    emc = _fitted(model, stream)
    check_bad_inputs(emc.adapt, case, target=emc)


@pytest.mark.parametrize("case", [
    BadInput("length", (torch.randn(10, 3), torch.randn(7, 2), 0.3), names="targets"),  # torch broadcast error before
    BadInput("nan-z", (torch.full((10, 3), float("nan")), torch.randn(10, 2), 0.3), names="z"),
    BadInput("inf-targets", (torch.randn(10, 3), torch.full((10, 2), float("inf")), 0.3), names="targets"),
    BadInput("weights-length", (torch.randn(10, 3), torch.randn(10, 2), 0.3, torch.ones(4)), names="weights"),
    BadInput("ridge-nan", (torch.randn(10, 3), torch.randn(10, 2), float("nan")), names="ridge"),
    BadInput("ridge-0", (torch.randn(10, 3), torch.randn(10, 2), 0.0), names="ridge"),
], ids=lambda c: c.id)
def test_ridge_fit_refuses(case):
    check_bad_inputs(ridge_fit, case)
