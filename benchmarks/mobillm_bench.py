"""Device and server cost of async side-tuning beside the FedAvg-LoRA peer (PEFT LoRA adapters, the real package) on
the ``neurips26.bench`` harness. Writes results/mobillm/bench.json (1 thread, process clock, interleaved pairs,
t-interval on the log ratio).

    .venv/bin/python benchmarks/mobillm_bench.py [--backbone minilm|tiny] [--batch 16] [--tokens 32] [--repeats 7]

Rows, per device minibatch (same backbone, same tokens):
  device step      our no-grad forward + 8-bit quantised upload vs a PEFT LoRA train step (forward + backward +
                   AdamW); ours / limit from the backbone's forward FLOPs (2 P T + 4 L T^2 d per sample)
  server           our ``SideTuningServer.receive`` (one update, replay ratio 1) vs one FedAvg aggregation
                   (weighted mean of 4 LoRA states; ours)
  counts           bytes per sample of one local epoch (our 8-bit payload, 3 layers, mean position, vs the LoRA +
                   head exchange down + up, float32); peak RSS of a fresh process (one run each, VmHWM) in all and
                   above its own load (ours: the backbone; LoRA: the backbone copy with adapters, PEFT imported):
                   the "in all" ratio is mostly library import, the "above load" one is the device's compute memory.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F

from neurips26.bench import Bench
from neurips26.claims import measure
from neurips26.mobillm import (
    DeviceClient,
    FeatureAligner,
    LoRAClassifier,
    SideNetwork,
    SideTuningServer,
    lora_trainable_nbytes,
)
from neurips26.mobillm.baselines import weighted_state_mean
from neurips26.mobillm.memory import make_backbone


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backbone", default="minilm", choices=["minilm", "tiny"])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--local-samples", type=int, default=64)
    args, _ = ap.parse_known_args()
    bench = Bench("mobillm", description=f"async side-tuning device and server cost vs FedAvg with PEFT LoRA, backbone "
                  f"{args.backbone}, batch {args.batch} x {args.tokens} tokens", argv=sys.argv[1:])
    model, hidden, layers = make_backbone(args.backbone)
    vocab = 256 if args.backbone == "tiny" else 30522
    g = torch.Generator().manual_seed(0)
    batch = {"input_ids": torch.randint(5, vocab, (args.batch, args.tokens), generator=g),
             "attention_mask": torch.ones(args.batch, args.tokens, dtype=torch.long),
             "labels": torch.randint(2, (args.batch,), generator=g)}
    client = DeviceClient(hidden, layers, positions="mean", quant_bits=8, backbone_type="b")
    clf = LoRAClassifier(model, positions="mean", rank=8)
    opt = torch.optim.AdamW([p for p in clf.parameters() if p.requires_grad], lr=1e-3)

    def lora_step() -> None:
        loss = F.cross_entropy(clf(batch["input_ids"], batch["attention_mask"]), batch["labels"])
        opt.zero_grad()
        loss.backward()
        opt.step()

    flops = hidden.flops_per_sample(args.tokens) * args.batch
    bench.compare(f"device step, {args.batch} x {args.tokens} tokens: no-grad forward + 8-bit upload vs LoRA train "
                  "step", ours=lambda: client.step(batch), peer=lora_step,
                  peer_name="PEFT LoRA r=8 train step (fwd + bwd + AdamW)", peer_kind="real", flops=flops)

    source = DeviceClient(hidden, layers, positions="mean", quant_bits=8, backbone_type="b")
    payloads = [source.step(batch) for _ in range(bench.repeats + 1)]  # one device, successive sequence numbers
    server = SideTuningServer(SideNetwork(d_side=64, n_layers=3), {"b": FeatureAligner(3, hidden.d_model, 3, 64)})
    it = iter(payloads)
    states = [clf.trainable_state() for _ in range(4)]
    bench.compare("server: one side-network update vs one FedAvg aggregation of 4 LoRA states",
                  ours=lambda: server.receive(next(it)), peer=lambda: weighted_state_mean(states, [64] * 4),
                  peer_name="FedAvg weighted mean of LoRA + head states", peer_kind="ours",
                  note="speed-up < 1: a side-network update costs more than an average; it replaces the devices' "
                       "backward passes")

    bench.count("bytes per sample of one local epoch", ours=client.step(batch).nbytes / args.batch,
                peer=2 * lora_trainable_nbytes(clf) / args.local_samples, peer_name="FedAvg-LoRA exchange (down + up)",
                peer_kind="real", unit=f"bytes per sample ({args.local_samples}-sample epoch)")
    env = {"OMP_NUM_THREADS": str(bench.threads)}
    job = [args.backbone, str(args.batch), str(args.tokens), "3"]
    rss = {k: measure.peak_rss_subprocess("neurips26.mobillm.memory:device_job", k, *job, env=env)
           for k in ("load", "forward", "load-lora", "lora")}
    mib = 2.0 ** -20
    bench.count("device peak RSS of a fresh process, in all", ours=rss["forward"] * mib, peer=rss["lora"] * mib,
                peer_name="PEFT LoRA train steps", peer_kind="real", unit="MiB (VmHWM, one run)",
                note=f"after loading: ours {rss['load'] * mib:.0f} MiB, LoRA (PEFT imported) "
                     f"{rss['load-lora'] * mib:.0f} MiB")
    above = rss["forward"] - rss["load"]
    floor = 1024.0  # VmHWM is reported in kB: growth below 1 kB reads as 0
    bench.count("device peak RSS above its own load", ours=max(above, floor) * mib,
                peer=max(rss["lora"] - rss["load-lora"], floor) * mib, peer_name="PEFT LoRA train steps",
                peer_kind="real", unit="MiB (VmHWM, one run)",
                note="ours grew by less than VmHWM's 1 kB resolution: floored at 1 kB, the ratio is a lower bound"
                     if above < floor else "")
    bench.write()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
