"""Dynamic short convolutions on Q, K, V: the layer, its decoding step, cached generation, and a Llama trained on
associative recall.

    .venv/bin/python examples/dynconv.py          # ~20 s on a CPU
"""

import torch
import torch.nn.functional as F

from neurips26.dynconv import DynamicShortConv, compositional_mqar, conv_attention_factory, generate
from neurips26.nn import Llama, LlamaConfig
from neurips26.nn.train import train_lm

torch.manual_seed(0)
# the layer alone: whole-sequence forward, then one decoding step from the carried state
conv = DynamicShortConv(64, kernel_size=4, rank=8, cond_dim=32)
x, c = torch.randn(2, 50, 64), torch.randn(2, 50, 32)
y, state = conv(x[:, :49], c[:, :49], return_final_state=True)          # state: the last W-1 inputs
y_step, _ = conv.step(x[:, 49], c[:, 49], state)
print(f"step equals the full forward at t=49: {torch.allclose(y_step, conv(x, c)[:, 49], atol=1e-5)}")

# two-token-key recall: a dynamic-conv Llama against the same Llama without convs, same steps
inputs, labels = compositional_mqar(128, 2000, 48, num_kv_pairs=6, seed=0)
for variant in ("dynamic", "none"):
    torch.manual_seed(0)
    model = Llama(LlamaConfig(vocab_size=128, d_model=64, n_layers=2, n_heads=2, max_seq_len=48),
                  attention_factory=conv_attention_factory(variant))
    batches = lambda k: (inputs[k * 32 % 1600:][:32], labels[k * 32 % 1600:][:32])  # noqa: E731

    def recall_loss(m, xb, yb):
        return F.cross_entropy(m(xb).flatten(0, 1), yb.flatten(), ignore_index=-100)

    train_lm(model, batches, steps=150, lr=3e-3, warmup_steps=10, loss_fn=recall_loss)
    with torch.no_grad():
        pred = model(inputs[1600:]).argmax(-1)
    mask = labels[1600:] != -100
    print(f"conv {variant:>7}: held-out recall accuracy {(pred[mask] == labels[1600:][mask]).float().mean():.3f}")

# KV-cached greedy decoding carries every conv's last W-1 inputs: the same tokens as re-running the full forward
prompt = inputs[1600:1602, :20]
same = torch.equal(generate(model, prompt, 8), generate(model, prompt, 8, use_cache=False))
print(f"cached generate = full forward: {same}")
