"""SmartRes on a Hugging Face vision tower: a tiny SigLIP built from its config (no weights are downloaded),
a router over its low-resolution view, only the routed regions encoded at full resolution, positions in one
full-resolution frame and Qwen2-VL-style ``image_grid_thw`` rows. Then the image + query -> box entry point
on the mini grounding MLLM, saved and loaded.

    .venv/bin/python examples/smartres_hf.py        # a few seconds on a CPU; needs the `hf` extra
"""

import tempfile

import numpy as np
import torch
from transformers import SiglipVisionConfig, SiglipVisionModel

from neurips26.smartres import (
    HFVisionTower,
    MiniGroundingMLLM,
    MLLMConfig,
    ResolutionRouter,
    SmartResGrounder,
    SmartResHF,
)

torch.manual_seed(0)
tower = HFVisionTower(SiglipVisionModel(SiglipVisionConfig(
    hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, image_size=128,
    patch_size=16)).eval())
smartres = SmartResHF(tower, image_size=512, region_px=128, query_dim=32, k_min=2, k_max=2).eval()
with torch.no_grad():
    seq, grid_thw = smartres(torch.rand(1, 3, 512, 512), torch.randn(1, 32))   # a query embedding from any text model
print(f"visual tokens {seq.tokens.shape[1]} (full resolution: {(512 // 16) ** 2}); views (t, h, w): "
      f"{grid_thw.tolist()}")

# image + query -> box (an untrained model here: the API is real, the box is not yet)
grounder = SmartResGrounder(MiniGroundingMLLM(MLLMConfig()), ResolutionRouter(96, 192), k=2)
image = (np.random.default_rng(0).random((480, 640, 3)) * 255).astype(np.uint8)
print(grounder(image, "red 7"))
with tempfile.TemporaryDirectory() as d:
    grounder.save_pretrained(d)
    assert SmartResGrounder.from_pretrained(d)(image, "red 7") == grounder(image, "red 7")
