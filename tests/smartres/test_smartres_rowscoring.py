"""FastV / SparseVLM score from the text-token rows of the attention only; that must select exactly the tokens
the full recomputed [T, T] matrix selects (softmax is row-wise), and give the same boxes."""

import pytest
import torch

from neurips26.smartres import MiniGroundingMLLM, MLLMConfig, run_fastv, run_sparsevlm
from neurips26.smartres.baselines import _lm_hook
from neurips26.smartres.model import attention_probs, attention_rows

CFG = MLLMConfig(image_size=64, patch=8, dim=32, heads=2, vit_blocks=1, lm_blocks=3, region_px=16)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return MiniGroundingMLLM(CFG).eval()


def _inputs(b=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    images = torch.rand(b, 3, 64, 64, generator=g)
    query = torch.stack([torch.randint(10, (b,), generator=g), torch.randint(4, (b,), generator=g)], 1)
    return images, query


@pytest.mark.parametrize("rows", [slice(1, 2), slice(0, 2), slice(0, 7)])
def test_attention_rows_equal_full_matrix_rows(model, rows):
    x = torch.randn(2, 40, 32, dtype=torch.float64)
    blk = model.lm.blocks[1].double()
    try:
        full = attention_probs(blk, x)[:, :, rows]
        part = attention_rows(blk, x, rows)
    finally:
        blk.float()
    assert part.shape == full.shape
    torch.testing.assert_close(part, full, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind,keep,recycle", [("fastv", 24, 0), ("fastv", 7, 0), ("sparsevlm", 20, 4)])
def test_row_scoring_selects_the_full_matrix_tokens(model, kind, keep, recycle):
    torch.manual_seed(3)
    q, v = torch.randn(4, 2, 32), torch.randn(4, 64, 32)
    meta = torch.cat([torch.rand(4, 64, 2) * 64, torch.full((4, 64, 1), 8.0)], -1)
    valid = torch.ones(4, 64, dtype=torch.bool)
    blk = model.lm.blocks[1]
    with torch.no_grad():
        v_r, m_r, _ = _lm_hook(kind, keep, recycle, "rows")(blk, q, v, meta, valid)
        v_f, m_f, _ = _lm_hook(kind, keep, recycle, "full")(blk, q, v, meta, valid)
    assert torch.equal(m_r[:, :keep], m_f[:, :keep])          # the same tokens, in the same (raster) order
    torch.testing.assert_close(v_r, v_f)


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_run_fastv_rows_equals_full(model, layer):
    images, query = _inputs()
    with torch.no_grad():
        a = run_fastv(model, images, query, keep=12, layer=layer, scoring="rows")
        b = run_fastv(model, images, query, keep=12, layer=layer, scoring="full")
    torch.testing.assert_close(a.boxes, b.boxes)
    assert (a.vit_tokens, a.llm_tokens, a.llm_tokens_max) == (b.vit_tokens, b.llm_tokens, b.llm_tokens_max)


def test_run_sparsevlm_rows_equals_full(model):
    images, query = _inputs()
    with torch.no_grad():
        a = run_sparsevlm(model, images, query, keep=10, recycle=2, layer=1, scoring="rows")
        b = run_sparsevlm(model, images, query, keep=10, recycle=2, layer=1, scoring="full")
    torch.testing.assert_close(a.boxes, b.boxes)


def test_scoring_refuses_unknown(model):
    images, query = _inputs()
    with pytest.raises(ValueError, match="scoring"):
        run_fastv(model, images, query, keep=12, scoring="columns")
