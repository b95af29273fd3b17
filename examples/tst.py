"""Token-Superposition Training against plain next-token prediction at the same FLOPs, on a toy stream.

    .venv/bin/python examples/tst.py              # ~20 s on a CPU

The stream is a seeded order-2 Markov chain over 64 tokens (no download); the claim check uses real text.
"""

import torch

from neurips26.nn import Llama, LlamaConfig, TokenWindows, eval_windows
from neurips26.tst import TSTSchedule, TSTTrainer, evaluate_ntp, ntp_baseline

V, L, STEPS = 64, 32, 120
g = torch.Generator().manual_seed(0)
table = torch.randint(0, V, (V, V, 3), generator=g)                     # each context has 3 likely successors
stream = [1, 2]
for _ in range(60_000):
    stream.append(int(table[stream[-2], stream[-1], torch.randint(0, 3, (1,), generator=g)]))
tokens = torch.tensor(stream)
train, val = tokens[:50_000], tokens[50_000:]


def fresh_model() -> Llama:
    torch.manual_seed(0)
    return Llama(LlamaConfig(vocab_size=V, d_model=64, n_layers=2, n_heads=4, max_seq_len=L))


results = {}
for name in ("TST (s=4, r=0.3)", "next-token baseline"):
    model = fresh_model()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    trainer = (TSTTrainer(model, opt, TSTSchedule(STEPS, bag_size=4, superposition_fraction=0.3), context_len=L)
               if name.startswith("TST") else ntp_baseline(model, opt, STEPS, context_len=L))
    trainer.fit(TokenWindows(train, batch_size=16, seed=0))
    results[name] = evaluate_ntp(model, eval_windows(val, context_len=L, max_windows=64))
for name, loss in results.items():
    print(f"{name:>20}: validation loss {loss:.3f} nats/token (same steps, same FLOPs per step)")
