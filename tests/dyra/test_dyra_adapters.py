"""Fused forward, state after failed calls, batch independence, merge/unmerge, save/load (PEFT-style)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from neurips26.dyra import (
    DyRAConfig,
    DyRALinear,
    StructuredLinear,
    apply_dyra,
    get_dyra_model,
    load_dyra,
    merge,
    merge_and_unload,
    save_dyra,
    unmerge,
)

F64 = torch.float64


class Tiny(nn.Module):
    """Two linears and a GELU; forward(x, attention_mask=None) like a transformers model."""

    def __init__(self, n: int = 24, h: int = 40, seed: int = 0, dtype: torch.dtype = F64) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.up, self.down = nn.Linear(n, h, dtype=dtype), nn.Linear(h, n, dtype=dtype)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.down(torch.nn.functional.gelu(self.up(x)))


def _dyra_model(**kw) -> tuple[Tiny, Tiny]:
    base, model = Tiny(), Tiny()
    apply_dyra(model, flop_budget=0.9, correction_rank=4, oversample=2, n_tokens=16,
               residual_dtype=kw.pop("residual_dtype", F64), **kw)
    return base, model


@pytest.mark.parametrize("group", ["batch", "sample"])
@pytest.mark.parametrize("dtype", [F64, torch.float32])
@pytest.mark.parametrize("masked", [False, True])
def test_fused_forward_equals_structured_plus_unfused_correction(group, dtype, masked):
    torch.manual_seed(1)
    lin = nn.Linear(36, 30, dtype=dtype)
    d = DyRALinear(lin, StructuredLinear.from_linear(lin, "svd", rank=6), rank=4, oversample=3, group=group,
                   residual_dtype=torch.bfloat16 if dtype == torch.float32 else F64)
    x = torch.randn(3, 20, 36, dtype=dtype)
    mask = torch.ones(3, 20, dtype=torch.bool)
    if masked:
        mask[1, 14:] = False
    mk = mask if masked else None
    tol = 1e-12 if dtype == F64 else 1e-5
    torch.testing.assert_close(d(x, mk), d.structured(x) + d.correction(x, mk), atol=tol, rtol=tol)


def test_forward_refuses_nan_anywhere_even_in_a_pad():
    lin = nn.Linear(12, 10, dtype=F64)
    d = DyRALinear(lin, StructuredLinear.from_linear(lin, "svd", rank=3), rank=2, oversample=2,
                   residual_dtype=F64)
    x = torch.randn(2, 9, 12, dtype=F64)
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[0, 7:] = False
    x[0, 8, 3] = float("nan")  # a masked pad
    with pytest.raises(ValueError, match="x must be .*finite"):
        d(x, mask)
    x[0, 8, 3] = float("inf")
    with pytest.raises(ValueError, match="x must be .*finite"):
        d(x)


def test_failed_model_call_leaves_no_stale_mask_and_later_calls_unchanged():
    _, model = _dyra_model()
    x = torch.randn(2, 10, 24, dtype=F64)
    mask = torch.ones(2, 10, dtype=torch.long)
    mask[1, 6:] = 0
    expect = model(x)                      # no mask: every token real
    bad = x.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        model(bad, attention_mask=mask)
    assert all(m.token_mask is None for m in model.modules() if isinstance(m, DyRALinear))
    torch.testing.assert_close(model(x), expect, atol=0, rtol=0)
    model.up(x)                            # a direct layer call sees no leftover mask either
    assert model.up.token_mask is None


def test_group_sample_output_of_a_sequence_does_not_depend_on_its_batch_mates():
    """group='sample' (documented: per-request determinism): a sequence alone or padded among others."""
    _, model = _dyra_model(group="sample")
    torch.manual_seed(3)
    seq = torch.randn(1, 11, 24, dtype=F64)
    alone = model(seq)
    for mates in (torch.randn(2, 14, 24, dtype=F64), 100 * torch.randn(3, 14, 24, dtype=F64)):
        batch = torch.cat([mates[:1], torch.cat([seq, torch.randn(1, 3, 24, dtype=F64)], 1), mates[1:]])
        mask = torch.ones(batch.shape[:2], dtype=torch.long)
        mask[1, 11:] = 0
        out = model(batch, attention_mask=mask)
        torch.testing.assert_close(out[1, :11], alone[0], atol=1e-10, rtol=1e-10)
    # group='batch' does depend on them (why 'sample' is the option for determinism)
    _, bmodel = _dyra_model(group="batch")
    a = bmodel(seq)
    b = bmodel(torch.cat([seq, 100 * torch.randn(1, 11, 24, dtype=F64)]))[:1]
    assert (a - b).abs().max() > 1e-6


def test_merge_unmerge_round_trip():
    base, model = _dyra_model()
    x = torch.randn(2, 10, 24, dtype=F64)
    dyra = model(x)
    merge(model)
    assert all(m.merged for m in model.modules() if isinstance(m, DyRALinear))
    torch.testing.assert_close(model(x), base(x), atol=1e-10, rtol=1e-10)   # W_s + E = W
    unmerge(model)
    assert torch.equal(model(x), dyra)                                       # bit-identical
    unload = merge_and_unload(model)
    assert isinstance(unload.up, nn.Linear) and not isinstance(unload.up, DyRALinear)
    torch.testing.assert_close(unload.up.weight, base.up.weight, atol=1e-12, rtol=0)
    torch.testing.assert_close(unload(x), base(x), atol=1e-10, rtol=1e-10)


def test_save_load_round_trip_on_a_fresh_base_model(tmp_path):
    _, model = _dyra_model(static_fallback=False)
    cfg = DyRAConfig(correction_rank=4, oversample=2, residual_dtype="float64")
    save_dyra(model, tmp_path / "dyra", cfg)
    x = torch.randn(2, 10, 24, dtype=F64)
    fresh = Tiny()
    mods = load_dyra(fresh, tmp_path / "dyra")
    assert set(mods) == {"up", "down"}
    # same factor values; the saved factors are contiguous where the fitted ones are SVD slices, and some BLAS
    # builds (AMD EPYC here) pick another kernel for each layout: equal to float64 round-off, not bit for bit
    torch.testing.assert_close(fresh(x), model(x), atol=1e-12, rtol=1e-12)


def test_load_refuses_another_model_and_leaves_it_unchanged(tmp_path):
    _, model = _dyra_model()
    save_dyra(model, tmp_path / "d")
    other = Tiny(n=24, h=48)
    before = {k: v.clone() for k, v in other.state_dict().items()}
    with pytest.raises(ValueError, match="layer 'up'"):
        load_dyra(other, tmp_path / "d")
    assert isinstance(other.up, nn.Linear) and not isinstance(other.up, DyRALinear)
    assert all(torch.equal(v, before[k]) for k, v in other.state_dict().items())
    with pytest.raises(FileNotFoundError, match="dyra_config.json"):
        load_dyra(other, tmp_path / "missing")


def test_peft_style_config_on_a_transformers_bert_built_from_config(tmp_path):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=32)
    torch.manual_seed(0)
    bert = transformers.BertModel(cfg).eval()
    base = transformers.BertModel(cfg).eval()
    base.load_state_dict(bert.state_dict())
    ids = torch.randint(0, 50, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[1, 8:] = 0
    config = DyRAConfig(target_modules=["query", "key", "value"], flop_budget=0.9, correction_rank=4,
                        oversample=2, n_tokens=12, group="sample")
    mods = get_dyra_model(bert, config)
    assert len(mods) == 6 and all(n.endswith(("query", "key", "value")) for n in mods)
    with torch.no_grad():
        out = bert(ids, attention_mask=mask).last_hidden_state
        ref = base(ids, attention_mask=mask).last_hidden_state
    assert out.shape == ref.shape and torch.isfinite(out).all()
    save_dyra(bert, tmp_path / "bert", config)
    loaded = transformers.BertModel(cfg).eval()
    loaded.load_state_dict(base.state_dict())
    load_dyra(loaded, tmp_path / "bert")
    with torch.no_grad():
        # same values, another memory layout of the factors (see the round-trip test): float32 round-off
        torch.testing.assert_close(loaded(ids, attention_mask=mask).last_hidden_state, out, atol=1e-6, rtol=1e-6)
        merge(bert)
        torch.testing.assert_close(bert(ids, attention_mask=mask).last_hidden_state, ref, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="already holds"):
        get_dyra_model(bert, config)
