"""Device and server cost of async side-tuning beside the FedAvg-LoRA peer (not run in CI).

    .venv/bin/python benchmarks/mobillm_bench.py [--backbone minilm|tiny] [--batch 16] [--tokens 32] [--repeats 5]

Per device (one minibatch, same backbone, same tokens):
  peak memory   a fresh process's peak RSS (VmHWM): our no-grad forward + 8-bit upload / a PEFT LoRA train
                step (forward + backward + AdamW), 3 steps each; "above its load" subtracts the peak after
                loading (ours: the backbone; LoRA: the backbone copy with adapters, PEFT imported)
  time/sample   process CPU time of our forward + quantisation vs a LoRA train step (median of repeats)
  bytes/sample  our 8-bit payload (3 layers, mean position) vs the LoRA + head exchange (down + up, float32)
                per sample of one local epoch of 64 samples
Server: our updates/s (SideTuningServer.receive, replay ratio 1) vs FedAvg aggregations/s (weighted mean of 4
LoRA states). Ratios are ours / peer. Absolute numbers depend on the machine; the ratios are the result.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.nn.functional as F

from neurips26.claims import measure
from neurips26.mobillm import DeviceClient, FeatureAligner, LoRAClassifier, SideNetwork, SideTuningServer
from neurips26.mobillm.baselines import lora_trainable_nbytes, weighted_state_mean
from neurips26.mobillm.memory import make_backbone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backbone", default="minilm", choices=["minilm", "tiny"])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--local-samples", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    env = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    job = [args.backbone, str(args.batch), str(args.tokens), "3"]
    rss = {k: measure.peak_rss_subprocess("neurips26.mobillm.memory:device_job", k, *job, env=env)
           for k in ("load", "forward", "load-lora", "lora")}

    model, hidden, layers = make_backbone(args.backbone)
    vocab = 256 if args.backbone == "tiny" else 30522
    g = torch.Generator().manual_seed(0)
    batch = {"input_ids": torch.randint(5, vocab, (args.batch, args.tokens), generator=g),
             "attention_mask": torch.ones(args.batch, args.tokens, dtype=torch.long),
             "labels": torch.randint(2, (args.batch,), generator=g)}
    client = DeviceClient(hidden, layers, positions="mean", quant_bits=8, backbone_type="b")
    t_ours = measure.timeit(lambda: client.step(batch), repeats=args.repeats).median / args.batch
    clf = LoRAClassifier(model, positions="mean", rank=8)
    opt = torch.optim.AdamW([p for p in clf.parameters() if p.requires_grad], lr=1e-3)

    def lora_step() -> None:
        loss = F.cross_entropy(clf(batch["input_ids"], batch["attention_mask"]), batch["labels"])
        opt.zero_grad()
        loss.backward()
        opt.step()

    t_lora = measure.timeit(lora_step, repeats=args.repeats).median / args.batch
    bytes_ours = client.step(batch).nbytes / args.batch
    bytes_lora = 2 * lora_trainable_nbytes(clf) / args.local_samples

    payload_src = DeviceClient(hidden, layers, positions="mean", quant_bits=8, backbone_type="b")
    payloads = [payload_src.step(batch) for _ in range(args.repeats + 1)]
    server = SideTuningServer(SideNetwork(d_side=64, n_layers=3), {"b": FeatureAligner(3, hidden.d_model, 3, 64)})
    it = iter(payloads)
    t_server = measure.timeit(lambda: server.receive(next(it)), warmup=1, repeats=args.repeats, clock="wall").median
    states = [clf.trainable_state() for _ in range(4)]
    t_agg = measure.timeit(lambda: weighted_state_mean(states, [64, 64, 64, 64]), repeats=args.repeats,
                           clock="wall").median

    mib = 1 / 2 ** 20
    rows = [
        ("device peak RSS (MiB)", rss["forward"] * mib, rss["lora"] * mib),
        ("device peak RSS above its load (MiB)", (rss["forward"] - rss["load"]) * mib,
         (rss["lora"] - rss["load-lora"]) * mib),
        ("device CPU time / sample (ms)", 1e3 * t_ours, 1e3 * t_lora),
        ("bytes / sample (one local epoch)", bytes_ours, bytes_lora),
        ("server updates / s", 1 / t_server, 1 / t_agg),
    ]
    print(f"backbone {args.backbone}, batch {args.batch}, {args.tokens} tokens, "
          f"threads {torch.get_num_threads()}; peak RSS after loading: ours {rss['load'] * mib:.0f} MiB, "
          f"LoRA model (PEFT imported) {rss['load-lora'] * mib:.0f} MiB")
    print(f"{'':36s} {'ours':>12s} {'FedAvg-LoRA':>12s} {'ours / peer':>12s}")
    for name, ours, peer in rows:
        print(f"{name:36s} {ours:12.4g} {peer:12.4g} {ours / peer:12.3g}")


if __name__ == "__main__":
    main()
