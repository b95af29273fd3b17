"""DyRA against its defining properties: exactness at rank ≤ k, rank ≤ k, Eckart–Young, projection,
batch invariance, masking, fallback, the reference, and the FLOP counter."""

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from neurips26.dyra import (
    DyRALinear,
    StaticResidualCorrection,
    StructuredLinear,
    clustered_layer,
    dyra_extra_flops,
    dyra_matmul,
    gram,
)
from neurips26.dyra.baselines import best_rank_k, output_low_rank, relative_output_error, weight_svd

F64 = torch.float64


def _setup(m=40, n=36, r=6, seed=0):
    torch.manual_seed(seed)
    lin = nn.Linear(n, m, dtype=F64)
    s = weight_svd(lin, r)
    return lin, s, lin.weight.detach() - s.weight()


def _low_rank_x(N, n, k, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(N, k, generator=g, dtype=F64) @ torch.randn(k, n, generator=g, dtype=F64)


@pytest.mark.parametrize("sketch", ["gaussian", "tokens"])
@pytest.mark.parametrize("group", ["batch", "sample"])
def test_exact_when_residual_output_has_rank_at_most_k(group, sketch):
    lin, s, E = _setup()
    x = _low_rank_x(50, 36, 5)  # rank X = 5 ⇒ rank R ≤ 5 ≤ k
    d = DyRALinear(lin, s, rank=5, oversample=3, group=group, sketch=sketch, residual_dtype=F64)
    torch.testing.assert_close(d(x[None])[0], lin(x), atol=1e-9, rtol=1e-9)
    ref = dyra_matmul(x, s, E, 5, p=3, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(ref, lin(x), atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("q", [0, 2])
def test_rank_projection_and_eckart_young(q):
    lin, s, E = _setup()
    x = torch.randn(80, 36, dtype=F64)
    R = x @ E.T
    for k in (1, 4, 10):
        out = dyra_matmul(x, s, E, k, p=4, q=q, generator=torch.Generator().manual_seed(k))
        corr = out - s(x)
        assert torch.linalg.matrix_rank(corr, rtol=1e-8) <= k
        err = (R - corr).norm()
        assert err >= (R - best_rank_k(R, k)).norm() - 1e-9  # never below the best rank-k output
        assert err <= R.norm() + 1e-9                         # never worse than no correction
        # orthogonal projection: the correction is orthogonal to what it leaves out
        assert abs(float(((R - corr) * corr).sum())) < 1e-8 * float(R.norm()) ** 2


def test_power_iterations_approach_the_best_rank_k():
    lin, s, E = _setup(m=64, n=64)
    x = torch.randn(200, 64, dtype=F64) * torch.logspace(0, -1.5, 64, dtype=F64)
    R = x @ E.T
    best = (R - best_rank_k(R, 6)).norm()
    errs = {}
    for q in (0, 3):
        errs[q] = sum(float((R - (dyra_matmul(x, s, E, 6, p=2, q=q, generator=torch.Generator().manual_seed(t))
                                    - s(x))).norm()) for t in range(5)) / 5
    assert errs[3] < errs[0]
    assert errs[3] < 1.02 * float(best)


@pytest.mark.parametrize("q, sketch", [(0, "gaussian"), (1, "gaussian"), (0, "tokens")])
def test_module_matches_reference_with_the_same_sketch(q, sketch):
    lin, s, E = _setup()
    x = torch.randn(30, 36, dtype=F64)
    d = DyRALinear(lin, s, rank=4, oversample=4, power_iters=q, sketch=sketch, residual_dtype=F64)
    _, table = d._omega_table(30, 8, x.device, F64)
    if sketch == "gaussian":
        omega = table[:30]
    else:  # token sampling = Ω with one 1 per column at the 8 smallest seeded scores
        idx = table[:30].topk(8, largest=False).indices
        omega = torch.zeros(30, 8, dtype=F64)
        omega[idx, torch.arange(8)] = 1.0
    torch.testing.assert_close(d(x), dyra_matmul(x, s, E, 4, p=4, q=q, omega=omega), atol=1e-10, rtol=1e-10)


def test_group_sample_is_batch_invariant_and_call_invariant():
    lin, s, _ = _setup()
    x = torch.randn(5, 20, 36, dtype=F64)
    d = DyRALinear(lin, s, rank=4, group="sample", residual_dtype=F64)
    full = d(x)
    for b in range(5):
        torch.testing.assert_close(d(x[b:b + 1])[0], full[b], atol=1e-12, rtol=0)
        torch.testing.assert_close(d(x[b]), full[b], atol=1e-12, rtol=0)  # 2-D input = one sample
    perm = torch.tensor([3, 1, 4, 0, 2])
    torch.testing.assert_close(d(x[perm]), full[perm], atol=1e-12, rtol=0)
    torch.testing.assert_close(d(x), full, atol=0, rtol=0)
    # group="batch" mixes the samples (the documented determinism hazard)
    db = DyRALinear(lin, s, rank=4, group="batch", residual_dtype=F64)
    assert not torch.allclose(db(x[:1])[0], db(x)[0])


@pytest.mark.parametrize("group", ["batch", "sample"])
def test_masked_pads_change_nothing(group):
    lin, s, _ = _setup()
    lengths = [20, 13, 17]
    real = [torch.randn(t, 36, dtype=F64) for t in lengths]
    x = torch.randn(3, 24, 36, dtype=F64) * 50  # garbage pads
    mask = torch.zeros(3, 24, dtype=torch.bool)
    for b, t in enumerate(lengths):
        x[b, :t] = real[b]
        mask[b, :t] = True
    d = DyRALinear(lin, s, rank=4, group=group, residual_dtype=F64)
    out = d(x, mask)
    if group == "sample":
        for b, t in enumerate(lengths):
            torch.testing.assert_close(out[b, :t], d(real[b][None])[0], atol=1e-10, rtol=0)
    else:
        flat = d(torch.cat(real))
        torch.testing.assert_close(out[mask], flat, atol=1e-10, rtol=0)
    # left padding gives the same outputs too (Ω follows each real token's rank, not its position)
    x2, mask2 = torch.flip(x, [1]), torch.flip(mask, [1])
    real_rev = [torch.flip(r, [0]) for r in real]
    x2[mask2] = torch.cat(real_rev) if group == "batch" else x2[mask2]
    if group == "sample":
        for b, t in enumerate(lengths):
            x2[b, 24 - t:] = real[b]
        out2 = d(x2, mask2)
        for b, t in enumerate(lengths):
            torch.testing.assert_close(out2[b, 24 - t:], out[b, :t], atol=1e-10, rtol=0)


def test_short_groups_fall_back_to_static_or_none():
    lin, s, _ = _setup()
    cal = torch.randn(100, 36, dtype=F64)
    static = StaticResidualCorrection(lin, s, 4, gram(cal))
    x = torch.randn(2, 16, 36, dtype=F64)
    mask = torch.ones(2, 16, dtype=torch.bool)
    mask[1, 5:] = False  # 5 real tokens < k + p = 12
    d = DyRALinear(lin, s, rank=4, group="sample", residual_dtype=F64, fallback=static)
    out = d(x, mask)
    torch.testing.assert_close(out[1], static(x[1]))
    none = DyRALinear(lin, s, rank=4, group="sample", residual_dtype=F64)(x, mask)
    torch.testing.assert_close(none[1], s(x[1]))
    # sample 0 has 16 >= 12 real tokens: dynamic in both, unaffected by sample 1's fallback
    torch.testing.assert_close(none[0], out[0])
    assert not torch.allclose(out[0], static(x[0]))


def test_static_is_top_k_of_calibration_residual_output():
    lin, s, E = _setup()
    cal = torch.randn(300, 36, dtype=F64) * torch.logspace(0, -1, 36, dtype=F64)
    st = StaticResidualCorrection(lin, s, 5, gram(cal))
    R = cal @ E.T
    # on the calibration data, static correction equals the best rank-5 output correction R V_k V_kᵀ
    Vk = torch.linalg.svd(R, full_matrices=False).Vh[:5].T
    torch.testing.assert_close(st(cal) - s(cal), R @ Vk @ Vk.T, atol=1e-9, rtol=1e-9)


def test_smoke_order_on_the_clustered_layer():
    lin, cal, test = clustered_layer(96, 96, clusters=4, dim=6, tokens=48, seed=0)
    X = test.reshape(-1, 96)
    Y = lin(X).detach()
    base = weight_svd(lin, 8)
    k = 8
    e_dyra = relative_output_error(DyRALinear(lin, base, rank=k, group="sample", residual_dtype=F64)(test)
                                   .reshape(-1, 96), Y)
    e_static = relative_output_error(StaticResidualCorrection(lin, base, k, gram(cal.reshape(-1, 96)))(X), Y)
    e_weight = relative_output_error(weight_svd(lin, 8 + k)(X), Y)
    assert e_dyra < e_static < e_weight
    # Eckart–Young: output low rank (W_s = 0) at rank k beats the rank-k weight, per sample
    e_out = relative_output_error(output_low_rank(lin, k, group="sample", residual_dtype=F64)(test)
                                  .reshape(-1, 96), Y)
    assert e_out < relative_output_error(weight_svd(lin, k)(X), Y)


def test_bf16_residual_close_to_fp32():
    torch.manual_seed(0)
    lin = nn.Linear(64, 64)
    s = weight_svd(lin, 8)
    x = torch.randn(4, 30, 64)
    e32 = relative_output_error(DyRALinear(lin, s, rank=8, residual_dtype=torch.float32)(x), lin(x))
    e16 = relative_output_error(DyRALinear(lin, s, rank=8)(x), lin(x))
    assert abs(e16 - e32) < 0.02


def test_flop_counter_matches_formula_and_torch_matmul_count():
    m, n, k, p, N = 48, 40, 6, 4, 30
    l = k + p
    # hand formula, written out: sketch + E·S + QR + small SVD + Q_Z U_k + Eᵀ Q (per group) / N + per token
    group = 2 * n * N * l + 2 * m * n * l + (2 * m * l * l - 2 * l ** 3 / 3) + 22 * l ** 3 + 2 * m * l * k \
        + 2 * m * n * k
    expect = group / N + 2 * n * k + 2 * k * m + m
    assert dyra_extra_flops(m, n, k, p, 0, N) == pytest.approx(expect)
    torch.manual_seed(0)
    lin = nn.Linear(n, m, bias=False)
    s = StructuredLinear.from_linear(lin, "svd", rank=5)
    d = DyRALinear(lin, s, rank=k, oversample=p, residual_dtype=torch.float32)
    assert d.flops_per_token(N) == pytest.approx(2 * 5 * (m + n) + expect)
    # torch counts the matmuls (not QR/SVD, not the add): compare the matmul part
    x = torch.randn(1, N, n)
    d(x)  # builds Ω outside the counter
    # the fused forward adds B Qᵀ in place (baddbmm_), which FlopCounterMode does not count (in-place ops are
    # not registered there): count the unfused path, which the fused one equals (test_fused_equals_unfused)
    with FlopCounterMode(display=False) as fc:
        d.structured(x) + d.correction(x)
    matmul = (2 * n * N * l + 2 * m * n * l + 2 * m * l * k + 2 * m * n * k + (2 * n * k + 2 * k * m) * N
              + 2 * 5 * (m + n) * N)
    assert fc.get_total_flops() == matmul


def test_bad_input():
    lin, s, E = _setup()
    for rank in (0, 36, 40):
        with pytest.raises(ValueError, match="rank"):
            DyRALinear(lin, s, rank=rank)
    with pytest.raises(ValueError, match="group"):
        DyRALinear(lin, s, rank=4, group="token")
    with pytest.raises(ValueError, match="sketch"):
        DyRALinear(lin, s, rank=4, sketch="srht")
    with pytest.raises(ValueError, match="shape"):
        DyRALinear(lin, weight_svd(nn.Linear(36, 41, dtype=F64), 3), rank=4)
    d = DyRALinear(lin, s, rank=4, residual_dtype=F64)
    with pytest.raises(ValueError, match=r"\[\.\.\., 36\]"):
        d(torch.randn(3, 35, dtype=F64))
    with pytest.raises(ValueError, match="finite"):
        d(torch.full((3, 36), float("nan"), dtype=F64))
    with pytest.raises(ValueError, match="mask"):
        d(torch.randn(2, 5, 36, dtype=F64), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="k"):
        dyra_matmul(torch.randn(5, 36, dtype=F64), s, E, 36)
    with pytest.raises(ValueError, match="omega"):
        dyra_matmul(torch.randn(5, 36, dtype=F64), s, E, 3, omega=torch.randn(5, 2, dtype=F64))


def test_modules_move_and_cast_with_to():
    lin, s, _ = _setup()
    d = DyRALinear(lin, s, rank=4, residual_dtype=F64)
    d.to(dtype=torch.float32)  # nn.Module.to must reach every buffer (E, factors, bias)
    assert d.E.dtype == torch.float32 and d.structured.A.dtype == torch.float32
    x = torch.randn(20, 36)
    torch.testing.assert_close(d(x), DyRALinear(lin, s, rank=4, residual_dtype=F64)(x.double()).float(),
                               atol=1e-4, rtol=1e-4)
