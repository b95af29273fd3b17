"""The device: hidden states vs a hand-run of the blocks, positions vs a naive loop, no gradients, FLOPs vs
torch's FLOP counter."""

import pytest
import torch
from _mobillm_models import tiny_bert, tiny_llama
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from neurips26.mobillm import DeviceClient, FeatureMemo, HiddenStates
from neurips26.nn.llama import rope_cos_sin


def _llama_by_hand(model, ids):
    """h_0 = E[ids]; h_l = block_l(h_{l-1}); the last one through the final RMSNorm (as HF Llama)."""
    x = model.embed_tokens(ids)
    cos, sin = rope_cos_sin(torch.arange(ids.shape[1])[None].expand(ids.shape[0], -1), model.config.head_dim,
                            model.config.rope_theta, x.dtype)
    out = [x]
    for blk in model.layers:
        x = blk(x, cos, sin)
        out.append(x)
    out[-1] = model.norm(out[-1])
    return out


def _bert_by_hand(enc, ids, mask):
    pos = torch.arange(ids.shape[1])
    x = enc.embed_norm(enc.word_embeddings(ids) + enc.position_embeddings(pos)
                       + enc.token_type_embeddings(torch.zeros_like(ids)))
    out = [x]
    for layer in enc.layers:
        x = layer(x, mask.bool()[:, None, None, :])
        out.append(x)
    return out


@torch.no_grad()
def test_llama_hidden_states_match_a_hand_run(batch):
    model = tiny_llama()
    got = HiddenStates(model)(batch["input_ids"], batch["attention_mask"]).hidden_states
    want = _llama_by_hand(model, batch["input_ids"])
    assert len(got) == 4
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@torch.no_grad()
def test_bert_hidden_states_match_a_hand_run(batch):
    enc = tiny_bert()
    got = HiddenStates(enc)(batch["input_ids"], batch["attention_mask"]).hidden_states
    want = _bert_by_hand(enc, batch["input_ids"], batch["attention_mask"])
    assert len(got) == 3
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@torch.no_grad()
def test_truncation_shares_weights_and_drops_the_final_norm(batch):
    model = tiny_llama()
    full = _llama_by_hand(model, batch["input_ids"])
    trunc = HiddenStates(model, depth=2)
    got = trunc(batch["input_ids"], batch["attention_mask"]).hidden_states
    assert len(got) == 3 and trunc.n_layers == 2 and len(model.layers) == 3  # the original is untouched
    for g, w in zip(got, full[:3]):  # raw block outputs, no final norm
        torch.testing.assert_close(g, w)
    assert trunc.model.layers[0] is model.layers[0]
    enc = tiny_bert(layers=3)
    b_full = _bert_by_hand(enc, batch["input_ids"], batch["attention_mask"])
    b_got = HiddenStates(enc, depth=1)(batch["input_ids"], batch["attention_mask"]).hidden_states
    torch.testing.assert_close(b_got[1], b_full[1])


@pytest.mark.parametrize("positions", ["pivot", "mean", "all"])
def test_payload_features_match_a_naive_loop(batch, positions, bert):
    client = DeviceClient(bert, layers=[0, 2], positions=positions, quant_bits=32, backbone_type="b", device_id=4)
    payload = client.step(batch)
    with torch.no_grad():
        states = bert(batch["input_ids"], batch["attention_mask"]).hidden_states
    got = payload.dequantize()
    lengths = batch["attention_mask"].sum(1).tolist()
    for i, n in enumerate(lengths):
        for k, layer in enumerate([0, 2]):
            h = states[layer][i]
            if positions == "pivot":
                want = h[n - 1]
            elif positions == "mean":
                want = sum(h[t] for t in range(n)) / n
            else:
                want = torch.cat([h[:n], torch.zeros(h.shape[0] - n, h.shape[1])])
            torch.testing.assert_close(got[i, k], want, rtol=1e-5, atol=1e-5)
    assert payload.device_id == 4 and payload.backbone_type == "b" and payload.labels.tolist() == [0, 1, 1, 0, 1]
    assert payload.sample_ids.tolist() == list(range(10, 15))
    expected_shape = (5, 2, 9, 24) if positions == "all" else (5, 2, 24)
    assert payload.shape == expected_shape


def test_the_device_builds_no_autograd_graph(batch, llama):
    for p in llama.parameters():
        p.requires_grad_(True)  # the client must freeze them itself
    client = DeviceClient(llama, layers=[1, 3], positions="pivot", quant_bits=8, backbone_type="l")
    payload = client.step(batch)
    assert all(not p.requires_grad for p in llama.parameters())
    assert all(p.grad is None for p in llama.parameters())
    x = payload.dequantize()
    assert not x.requires_grad and x.grad_fn is None
    for t in payload.parts.values():
        assert not t.requires_grad


def test_counters_and_memo(batch, llama):
    memo = FeatureMemo()
    a = DeviceClient(llama, layers=[1, 2, 3], quant_bits=8, backbone_type="l", memo=memo)
    b = DeviceClient(llama, layers=[1, 2, 3], quant_bits=8, backbone_type="l", memo=memo)
    pa, pb = a.step(batch), b.step(batch)
    assert len(memo) == 5
    torch.testing.assert_close(pa.dequantize(), pb.dequantize(), rtol=0, atol=0)
    assert a.flops == b.flops == 5 * llama.flops_per_sample(9)  # the memo saves wall time, not counted FLOPs
    assert a.bytes_up == pa.nbytes and a.seq == 1 and a.samples_seen == 5


@pytest.mark.parametrize("make", [tiny_llama, tiny_bert])
@pytest.mark.parametrize("tokens", [8, 17])
def test_forward_flops_formula_matches_torch_flop_counter(make, tokens):
    hs = HiddenStates(make())
    ids = torch.randint(4, 64, (3, tokens))
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), counter:  # the math kernel's matmuls are counted
        hs(ids, torch.ones_like(ids))
    counted = counter.get_total_flops() / 3
    assert hs.flops_per_sample(tokens) == pytest.approx(counted, rel=1e-6)


def test_walking_local_data_covers_each_sample_once_per_pass(llama):
    g = torch.Generator().manual_seed(0)
    data = {"input_ids": torch.randint(4, 64, (23, 6), generator=g),
            "attention_mask": torch.ones(23, 6, dtype=torch.long), "labels": torch.randint(2, (23,), generator=g)}
    c = DeviceClient(llama, layers=[3], batch_size=5, data=data, passes=2, seed=3)
    seen = []
    while (b := c.next_batch()) is not None:
        seen += b["sample_ids"].tolist()
    assert sorted(seen[:23]) == list(range(23)) and sorted(seen[23:]) == list(range(23))
