"""Dynamic convs after every linear layer: the wrapped layer against a per-token, per-lag loop (values and
gradients), the placement in a Llama (seven linears per block, shapes), and parameter counts."""

import pytest
import torch
from torch import nn

from neurips26.dynconv import ConvLinear, add_convs_after_linears, every_linear_llama
from neurips26.nn import LlamaConfig


def _naive(u, weight, proj_in, U, S, width):
    """y_t = sum_w (K_{t,w} + S_w) * h_{t-w} + h_t, h = u A^T, K_t = reshape((W_in u_t) U, (W, D)): loops."""
    b, t, _ = u.shape
    d = weight.shape[0]
    rows = []
    for bi in range(b):
        out = []
        for ti in range(t):
            k = ((proj_in @ u[bi, ti]) @ U).view(width, d)
            y = weight @ u[bi, ti]  # the residual h_t
            for w in range(width):
                if ti - w >= 0:
                    y = y + (k[w] + S[w]) * (weight @ u[bi, ti - w])
            out.append(y)
        rows.append(torch.stack(out))
    return torch.stack(rows)


@pytest.mark.parametrize("d_in,d_out,width,rank,t", [(5, 7, 4, 3, 9), (8, 3, 2, 1, 4), (6, 6, 3, 15, 2)])
def test_conv_linear_equals_naive_loop_values_and_gradients(d_in, d_out, width, rank, t):
    torch.manual_seed(0)
    layer = ConvLinear(nn.Linear(d_in, d_out, bias=False), kernel_size=width, rank=rank).double()
    nn.init.normal_(layer.conv.U, 0.0, 0.5)
    u = torch.randn(2, t, d_in, dtype=torch.float64, requires_grad=True)
    y = layer(u)
    assert y.shape == (2, t, d_out)
    params = [layer.linear.weight, layer.conv.proj_in.weight, layer.conv.U, layer.conv.static_weight]
    ref = _naive(u, *params, width)
    torch.testing.assert_close(y, ref, atol=1e-12, rtol=1e-12)
    g = torch.randn_like(y)
    ours = torch.autograd.grad(y, [u, *params], g)
    theirs = torch.autograd.grad(ref, [u, *params], g)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=1e-11)


def test_every_linear_llama_wraps_seven_linears_per_block_and_trains():
    cfg = LlamaConfig(vocab_size=30, d_model=16, n_layers=2, n_heads=2, d_ff=24)
    model = every_linear_llama(cfg)
    wrapped = [n for n, m in model.named_modules() if isinstance(m, ConvLinear)]
    assert len(wrapped) == 7 * cfg.n_layers
    assert {n.split(".")[-1] for n in wrapped} == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                   "down_proj"}
    down = model.layers[0].mlp.down_proj
    assert down.conv.cond_dim == 24 and down.conv.dim == 16  # conditioned on the linear's own input
    ids = torch.randint(0, 30, (2, 9))
    logits = model(ids)
    assert logits.shape == (2, 9, 30)
    logits.logsumexp(-1).mean().backward()
    assert all(p.grad is not None for p in model.parameters())
    # U starts at zero: the proj_in gradient is zero at init (as with LoRA), U's is not
    assert float(down.conv.U.grad.abs().sum()) > 0


def test_every_linear_is_causal():
    torch.manual_seed(3)
    model = every_linear_llama(LlamaConfig(vocab_size=30, d_model=16, n_layers=1, n_heads=2)).double()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("U"):
                p.normal_(0.0, 0.5)
    ids = torch.randint(0, 30, (1, 10))
    changed = ids.clone()
    changed[0, 6] = (ids[0, 6] + 1) % 30
    torch.testing.assert_close(model(ids)[:, :6], model(changed)[:, :6], atol=1e-12, rtol=0)


def test_bad_input():
    with pytest.raises(TypeError, match="nn.Linear"):
        ConvLinear(nn.Conv1d(3, 3, 1))
    with pytest.raises(ValueError, match="conv"):
        ConvLinear(nn.Linear(3, 3), conv="fancy")
    with pytest.raises(TypeError, match="layers"):
        add_convs_after_linears(nn.Linear(3, 3))
    with pytest.raises(ValueError):
        every_linear_llama(LlamaConfig(vocab_size=10, d_model=8, n_layers=1, n_heads=2), rank=0)
