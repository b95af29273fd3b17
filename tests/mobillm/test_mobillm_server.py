"""Aligner, ladder side network and the asynchronous server against their equations, computed by hand."""

import math

import pytest
import torch
import torch.nn.functional as F

from neurips26.mobillm import DeviceClient, FeatureAligner, SideNetwork, SideTuningServer


def test_aligner_window_and_peaked_init():
    a = FeatureAligner(6, 10, 3, 4, window=1)
    # c_l = round(l K / L_s) = 2, 4, 6 (1-based) -> 1, 3, 5
    assert a.centers == [1, 3, 5]
    w = a.mixing_weights()
    assert torch.allclose(w.sum(-1), torch.ones(3))
    e2 = math.exp(2.0)
    assert w[0, 1].item() == pytest.approx(e2 / (e2 + 2))  # peaked at the centre, two neighbours at beta = 0
    assert w[0, 0].item() == pytest.approx(1 / (e2 + 2)) and w[0, 3].item() == 0.0
    assert w[2, 5].item() == pytest.approx(e2 / (e2 + 1))  # the window is cut at the last layer
    b = FeatureAligner(3, 10, 3, 4, window=0)
    assert torch.equal(b.mixing_weights(), torch.eye(3))


def test_aligner_forward_by_hand():
    torch.manual_seed(0)
    a = FeatureAligner(3, 5, 2, 4, window=1, norm="running").train()
    h = torch.randn(8, 3, 5) * 3 + 1
    z = a(h)
    mu, var = h.mean(0), h.var(0, unbiased=False)  # first batch: the running stats are this batch's
    torch.testing.assert_close(a.running_mean, mu)
    torch.testing.assert_close(a.running_var, var)
    hn = (h - mu) / torch.sqrt(var + 1e-5)
    w = a.mixing_weights()
    for l in range(2):
        want = sum(w[l, k] * (hn[:, k] @ a.proj[l].weight.T + a.proj[l].bias) for k in range(3))
        torch.testing.assert_close(z[:, l], want, rtol=1e-5, atol=1e-5)
    a.eval()
    a(torch.randn(4, 3, 5))
    torch.testing.assert_close(a.running_mean, mu)  # frozen in eval mode


def test_side_network_ladder_by_hand():
    torch.manual_seed(1)
    side = SideNetwork(d_side=8, n_layers=3, n_classes=2, block="mlp")
    with torch.no_grad():
        side.alpha.copy_(torch.tensor([0.0, 0.05, -0.1]))
    z = torch.randn(4, 3, 8)
    mu = torch.sigmoid(side.alpha / 0.1)
    s = z[:, 0]
    for l, blk in enumerate(side.blocks):
        f = s + blk.mlp(blk.norm(s))  # f(s) = s + MLP(LN(s))
        s = mu[l] * z[:, l] + (1 - mu[l]) * f
    want = side.head(side.head_norm(s))
    torch.testing.assert_close(side(z), want)
    assert SideNetwork().gates().tolist() == [0.5, 0.5, 0.5]


def test_transformer_block_masks_padding():
    torch.manual_seed(2)
    side = SideNetwork(d_side=8, n_layers=2, block="transformer", n_heads=2).eval()
    z = torch.randn(2, 2, 5, 8)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    out = side(z, mask)
    z2 = z.clone()
    z2[0, :, 3:] = 100.0  # what sits under the padding cannot matter
    torch.testing.assert_close(side(z2, mask), out)


def _server(**kw):
    torch.manual_seed(0)
    side = SideNetwork(d_side=8, n_layers=2)
    return SideTuningServer(side, {"l": FeatureAligner(2, 32, 2, 8)}, **kw)


def test_receive_is_one_adam_step_on_the_arrival(batch, llama):
    srv = _server(cache=False, lr=1e-2)
    payload = DeviceClient(llama, layers=[1, 3], quant_bits=8, backbone_type="l").step(batch)
    import copy

    ref_side, ref_align = copy.deepcopy(srv.side), copy.deepcopy(srv.aligners["l"])
    assert ref_align.pca_init_(payload.dequantize()) > 0  # the first arrival of a type sets its width maps
    params = list(ref_side.parameters()) + list(ref_align.parameters())
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.0)
    loss = F.cross_entropy(ref_side(ref_align.train()(payload.dequantize())), batch["labels"])
    want = loss.item()
    opt.zero_grad()
    loss.backward()
    opt.step()
    m = srv.receive(payload)
    assert m["loss"] == pytest.approx(want) and m["replay_steps"] == 0
    for a, b in zip(srv.side.parameters(), ref_side.parameters()):
        torch.testing.assert_close(a, b)
    assert srv.processed == [(0, 0)] and srv.steps == 1


def test_replay_ratio_credit_and_cache(batch, llama):
    srv = _server(cache=True, replay_ratio=0.5)
    client = DeviceClient(llama, layers=[1, 3], quant_bits=8, backbone_type="l")
    steps = [srv.receive(client.step(batch))["replay_steps"] for _ in range(4)]
    assert steps == [0.0, 1.0, 0.0, 1.0] and srv.steps == 6 and srv.cached_samples == 20


def test_a_payload_is_processed_once(batch, llama):
    srv = _server()
    p = DeviceClient(llama, layers=[1, 3], quant_bits=8, backbone_type="l").step(batch)
    srv.receive(p)
    with pytest.raises(ValueError, match="already processed"):
        srv.receive(p)


def test_export_predicts_like_the_server(batch, llama):
    srv = _server()
    client = DeviceClient(llama, layers=[1, 3], quant_bits=8, backbone_type="l")
    for _ in range(3):
        srv.receive(client.step(batch))
    x = client.features(batch)
    model = srv.export("l")
    torch.testing.assert_close(model(x), srv.predict_logits(x, "l"))
    assert srv.download_nbytes("l") == 4 * sum(p.numel() for p in model.parameters())
