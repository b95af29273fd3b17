"""SmartRes: route a few image regions to full resolution for a visual-grounding query, and count the tokens.

    .venv/bin/python examples/smartres.py         # ~10 s on a CPU (an untrained model: the token budget and
                                                  # the pipeline are real, the boxes are not yet)
"""

import torch

from neurips26.smartres import (
    MiniGroundingMLLM,
    MLLMConfig,
    ResolutionRouter,
    SmartRes,
    SyntheticEgoGrounding,
    margin_routing_loss,
    region_labels,
    run_smartres,
)

torch.manual_seed(0)
data = SyntheticEgoGrounding(16, size=128, seed=0)            # seeded clutter scenes, query = (digit, colour)
batch = data.batch(range(4))
model = MiniGroundingMLLM(MLLMConfig()).eval()                # 128², patch 8, d 96 (train it before real use)
router = ResolutionRouter(feat_dim=96, query_dim=192, hidden=128)
smartres = SmartRes(model, router, lowres_scale=0.5, region_px=32, k_min=2, k_max=2)

with torch.no_grad():
    low_tokens, _ = model.encode_low(batch["image"])                                   # [4, 64, 96]
    logits = smartres.route(low_tokens, model.lm.query_embedding(batch["query"]))      # [4, 16] region scores
    loss = margin_routing_loss(logits, region_labels(batch["box"], 128, (4, 4)))       # the router's loss
    out = run_smartres(smartres, batch["image"], batch["query"])
full_res_tokens = (128 // 8) ** 2 * len(batch["image"])
print(f"router loss on the true regions: {float(loss):.3f}")
print(f"boxes {tuple(out.boxes.shape)}; visual tokens reaching the LM: {out.llm_tokens} for the batch "
      f"(full resolution: {full_res_tokens})")
