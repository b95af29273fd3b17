"""SmartRes on a Hugging Face vision tower built from a tiny config (no weights), the grounder, save/load."""

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from neurips26.smartres import MiniGroundingMLLM, MLLMConfig, ResolutionRouter  # noqa: E402
from neurips26.smartres.hf import HFVisionTower, SmartResGrounder, SmartResHF, parse_query  # noqa: E402
from neurips26.smartres.sequence import token_centres  # noqa: E402

TINY = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=64,
            patch_size=8)


def _tower(kind):
    torch.manual_seed(0)
    if kind == "siglip":
        model = transformers.SiglipVisionModel(transformers.SiglipVisionConfig(**TINY))
    else:
        model = transformers.CLIPVisionModel(transformers.CLIPVisionConfig(**TINY))
    return HFVisionTower(model.eval())


@pytest.mark.parametrize("kind", ["siglip", "clip"])
def test_native_full_frame_equals_the_tower(kind):
    tower = _tower(kind)
    images = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        ours = tower.encode(images, tower.full_frame_positions(64))
        ref = tower.model(pixel_values=images).last_hidden_state
    ref = ref[:, 1:] if kind == "clip" else ref
    torch.testing.assert_close(ours, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["siglip", "clip"])
def test_smartres_hf_sequence(kind):
    tower = _tower(kind)
    sr = SmartResHF(tower, image_size=128, region_px=32, query_dim=8, k_min=2, k_max=2).eval()
    images, q = torch.rand(2, 3, 128, 128), torch.randn(2, 8)
    with torch.no_grad():
        seq, thw = sr(images, q)
    n_low, n_r = (128 // 8 // 2) ** 2, (32 // 8) ** 2
    assert seq.tokens.shape == (2, n_low + 2 * n_r, 32)
    assert thw.tolist() == [[1, 8, 8], [1, 4, 4], [1, 4, 4]] * 2
    torch.testing.assert_close(seq.pos[0, :n_low], token_centres(8, 8, 16.0))
    # region tokens: the crop encoded with the sub-block of the full-resolution position grid
    rid = int(seq.region_ids[0, n_low])
    y0, x0 = (rid // 4) * 32, (rid % 4) * 32
    full = tower.full_frame_positions(128).reshape(16, 16, -1)
    pe = full[y0 // 8:y0 // 8 + 4, x0 // 8:x0 // 8 + 4].reshape(16, -1)
    with torch.no_grad():
        ref = tower.encode(images[0:1, :, y0:y0 + 32, x0:x0 + 32], pe)[0]
    torch.testing.assert_close(seq.tokens[0, n_low:n_low + n_r], ref)
    torch.testing.assert_close(seq.pos[0, n_low:n_low + n_r], token_centres(4, 4, 8.0, x0, y0))


@pytest.mark.parametrize("kind", ["siglip", "clip"])
def test_position_grid_at_native_size_is_the_table(kind):
    tower = _tower(kind)
    table = tower.model.embeddings.position_embedding.weight if hasattr(tower.model, "embeddings") \
        else tower.model.vision_model.embeddings.position_embedding.weight
    table = table[1:] if kind == "clip" else table
    torch.testing.assert_close(tower.position_grid(8, 8, 8, 8), table)


def test_parse_query():
    assert parse_query("red 7") == (7, 0)
    assert parse_query("7, yellow") == (7, 3)
    assert parse_query((3, 2)) == (3, 2)
    for bad in ("red", "red 7 8", (10, 0), (1, 9), 5, "purple 3"):
        with pytest.raises(ValueError):
            parse_query(bad)


def test_grounder_roundtrip(tmp_path):
    torch.manual_seed(0)
    c = MLLMConfig(image_size=64, patch=8, dim=32, heads=2, vit_blocks=1, lm_blocks=1, region_px=16)
    g = SmartResGrounder(MiniGroundingMLLM(c), ResolutionRouter(32, 64, hidden=16), k=2)
    image = (np.random.default_rng(0).random((96, 80, 3)) * 255).astype(np.uint8)
    out = g(image, "blue 4")
    assert len(out["box"]) == 4 and len(out["regions"]) == 2 and out["tokens"] == 16 + 2 * 4
    x1, y1, x2, y2 = out["box"]
    assert x2 >= x1 and y2 >= y1
    g.save_pretrained(str(tmp_path / "ckpt"))
    h = SmartResGrounder.from_pretrained(str(tmp_path / "ckpt"))
    assert h(image, "blue 4") == out
    with pytest.raises(TypeError):
        g([[0]], "blue 4")
