"""Forward-only SVD rank search on a small Llama: score every candidate matrix from one hooked forward pass,
then keep the rank reduction the evaluation likes best.

    .venv/bin/python examples/fwdsvd.py           # ~10 s on a CPU; the claim check runs SmolLM2-135M
"""

import torch
import torch.nn.functional as F

from neurips26.fwdsvd import AngleConcentrationStats, ForwardOnlyRankSearch
from neurips26.nn import Llama, LlamaConfig
from neurips26.nn.train import seeded_batches, train_lm

torch.manual_seed(0)
V, T = 96, 24
tokens = torch.randint(0, V, (20_000,), generator=torch.Generator().manual_seed(0)) % 48   # half the vocab used
model = Llama(LlamaConfig(vocab_size=V, d_model=64, n_layers=2, n_heads=4, max_seq_len=T))
train_lm(model, seeded_batches(tokens, 16, T, seed=0), steps=60, lr=3e-3)                 # a little structure
prompts = {"input_ids": tokens[:16 * T].view(16, T), "attention_mask": torch.ones(16, T, dtype=torch.long)}
held_out = tokens[10_000:10_000 + 8 * (T + 1)].view(8, T + 1)


def neg_loss(m):  # the score the search maximises: minus the held-out next-token loss
    with torch.no_grad():
        logits = m(held_out[:, :-1])
    return -float(F.cross_entropy(logits.flatten(0, 1), held_out[:, 1:].flatten()))


stats = AngleConcentrationStats.attach(model, candidates="mlp")    # no-grad hooks, O(rank) sums per matrix
stats.observe(model, prompts)
stats.detach()
# D(W): the energy share of the SVD components whose outputs point in opposing directions (kappa <= 0); a
# barely trained toy model has almost none, so the kappa tail is printed beside it
tails = stats.dispersion("neg_kappa_tail")
for name, score in sorted(stats.dispersion().items()):
    print(f"{name:>24}: D(W) {score:.3g}, -sum of the kappa tail {tails[name]:+.3g}")
cands = [f"layers.{i}.mlp.{p}" for i in range(2) for p in ("gate_proj", "up_proj", "down_proj")]
search = ForwardOnlyRankSearch(candidates=cands, positions="last").fit(model, [prompts], eval_fn=neg_loss)
print(f"chosen edit: {search.result_.reduction} after {search.result_.passes_used} forward passes")

# a weight-only control for the same pick (no forward pass), several edits at once, and a save / load round trip
from neurips26.fwdsvd import WeightSpectrumSearch, compose_edits, load_pretrained, save_pretrained  # noqa: E402

control = WeightSpectrumSearch(candidates=cands, score="sigma_tail").fit(model, neg_loss)
print(f"sigma-tail control picks {control.module_}; its edit {control.result_.reduction}")
with compose_edits(model, [("layers.1.mlp.down_proj", 0.25), ("layers.0.mlp.up_proj", 0.5)], factorize=True):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        save_pretrained(model, tmp)                           # model.safetensors (HF Llama names) + config.json
        reloaded = load_pretrained(tmp)
        print(f"reloaded the factorised model: held-out loss {-neg_loss(reloaded):.4f} vs {-neg_loss(model):.4f}")
