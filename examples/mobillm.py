"""Server-assisted side-tuning: frozen devices upload 8-bit hidden states, the server trains a side network.

    .venv/bin/python examples/mobillm.py          # ~10 s on a CPU; a small random-init Llama backbone stands in
                                                  # for the pretrained MiniLM the claim check uses
"""

import tempfile

import torch

from neurips26.mobillm import (
    DeviceClient,
    HiddenStates,
    SideTuningConfig,
    SideTuningServer,
    load_side_model,
    planted_task,
    save_side_model,
)
from neurips26.nn import Llama, LlamaConfig

torch.manual_seed(0)
backbone = Llama(LlamaConfig(vocab_size=64, d_model=64, n_layers=4, n_heads=4, max_seq_len=16)).eval()
train, test = planted_task(512, seed=0), planted_task(256, seed=1)     # class signal tokens at random positions
devices = [DeviceClient(HiddenStates(backbone), layers=[2, 3, 4], positions="mean", quant_bits=8,
                        backbone_type="llama-4", device_id=i, data={k: v[i::4] for k, v in train.items()},
                        passes=8, seed=i) for i in range(4)]
# a PEFT-shaped config names the side network and one aligner per backbone type (PCA init, running statistics)
config = SideTuningConfig(d_side=32, n_layers=2, n_classes=2, backbones={"llama-4": {"n_layers": 3, "d_model": 64}})
side, aligners = config.build()
server = SideTuningServer(side, aligners, lr=3e-3, cache=True, replay_ratio=1.0)
uploaded = 0
for _ in range(8):                                   # rounds; each device uploads once per round, no gradient
    for device in devices:
        payload = device.step(device.next_batch())
        uploaded += payload.nbytes
        server.receive(payload)
model = server.export("llama-4")                     # aligner + side network, for inference on the device
probe = DeviceClient(HiddenStates(backbone), layers=[2, 3, 4], positions="mean", quant_bits=8,
                     backbone_type="llama-4", device_id=99)
features = probe.step(test).dequantize()             # [256, 3, 64]: what a device computes, forward only
with torch.no_grad():
    accuracy = (model(features).argmax(-1) == test["labels"]).float().mean()
with tempfile.TemporaryDirectory() as d:           # side_config.json + side_model.safetensors
    save_side_model(d, server.side, server.aligners, config)
    side2, aligners2, _ = load_side_model(d)
    with torch.no_grad():
        assert torch.equal(side2(aligners2["llama-4"](features)).argmax(-1), model(features).argmax(-1))
print(f"uploaded {uploaded / 1e3:.1f} kB of 8-bit activations; held-out accuracy of the exported side model "
      f"{float(accuracy):.3f} (chance 0.5)")
