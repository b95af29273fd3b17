"""Train a small delayed SNN on the synthetic speech-BCI generator, then decode a sentence causally, one
20-ms bin at a time, with the streaming API (a few seconds on one CPU thread).

    python examples/snndelay.py
"""

import torch

from neurips26.snndelay import (
    ResidualDelaySNN,
    ctc_greedy_decode,
    evaluate,
    make_batch,
    synthetic_speech_bci,
    train_ctc,
)

torch.manual_seed(0)
data = synthetic_speech_bci(n_sentences=120, n_channels=16, sigma=2.0, lead=3, n_days=2, seed=0)
train, test = data.split(20)
model = ResidualDelaySNN(train.n_features, hidden=32, n_layers=2, max_delay=4, n_days=2)
train_ctc(model, train, steps=30, batch_size=8, lr=1e-2)
print(f"test PER after 30 steps: {evaluate(model, test).per:.3f}")

b = make_batch(test, [0])
state = model.init_state(batch_size=1)
logits = []
for t in range(b.x.shape[1]):  # causal decoding: bin t needs only the state and x_t
    logit_t, state = model.step(b.x[:, t], b.day, state)
    logits.append(logit_t)
streamed = torch.stack(logits, 1)
with torch.no_grad():
    whole = model(b.x, b.day)
print("streamed == whole-sequence (round-off):", torch.allclose(streamed, whole, atol=1e-5))
print("decoded:", ctc_greedy_decode(streamed, b.lengths)[0], "target:", b.targets[0])
