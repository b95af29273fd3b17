"""Side by side on the shared harness: SLE's sampling time against our Sphere Encoder, latent flow matching and a
latent consistency model, with FLOPs and ours / machine limit; our Fréchet distance beside torchmetrics'.

Protocol = the claim check's C2: each peer's ``sample(batch, T, y)`` interleaved with SLE's in one process
(:class:`neurips26.bench.Bench`: 1 thread, process CPU clock, one warm-up, ``--repeats`` pairs, the speed-up
peer / ours with its 95 % interval). FM at T = 32 is timed against SLE at T = 4 (C4's pairing). Architectures
from ``matched_generators``: ``--arch spec`` (tokenizer width 28, d = 128, 4 blocks; what ``check --scale full``
times, the default) or ``--arch quick`` (16, 64, 2). Untrained weights: sampling cost does not depend on them.
Writes ``results/spherelatent/bench.json``; the README's performance table is generated from it. The FID rows
need ``torchmetrics`` (in ``dev``).

    python benchmarks/spherelatent_bench.py [--arch spec|quick] [--batch 256] [--repeats 5] [--no-write]
"""

from __future__ import annotations

import argparse
import sys

import torch

from neurips26.bench import Bench
from neurips26.spherelatent import ClassifierFID, DigitsClassifier, FeatureView, count_flops, matched_generators

ARCHS = {"spec": (28, 128, 4), "quick": (16, 64, 2)}
PEERS = (("se", "Sphere Encoder", (1, 2, 4)), ("fm", "latent flow matching", (4, 32)),
         ("cm", "latent consistency model", (4,)))


def sampler(model: torch.nn.Module, batch: int, steps: int):
    """One ``sample`` call of ``batch`` class-conditional images at ``steps`` steps (seeded, no graph)."""
    labels = torch.arange(batch) % 10
    gen = torch.Generator().manual_seed(0)

    def call() -> None:
        with torch.no_grad():
            model.sample(batch, steps=steps, y=labels, generator=gen)
    return call


def flops_per_image(model: torch.nn.Module, steps: int, n: int = 16) -> float:
    with torch.no_grad():
        return count_flops(lambda: model.sample(n, steps=steps, y=torch.arange(n) % 10)) / n


def sampling(bench: Bench, arch: str, batch: int) -> None:
    tw, dim, depth = ARCHS[arch]
    models = matched_generators(tokenizer_width=tw, dim=dim, depth=depth)
    for key, peer_name, steps_list in PEERS:
        for steps in steps_list:
            sle_steps = min(steps, 4)  # FM at T = 32 against SLE at T = 4
            ours_flops = flops_per_image(models["sle"], sle_steps) * batch
            bench.compare(f"sample {batch} images: SLE T = {sle_steps} vs {key.upper()} T = {steps} ({arch} arch)",
                          ours=sampler(models["sle"], batch, sle_steps), peer=sampler(models[key], batch, steps),
                          peer_name=f"{peer_name} (T = {steps})", peer_kind="ours", flops=ours_flops)
            bench.count(f"FLOPs per image: SLE T = {sle_steps} vs {key.upper()} T = {steps}",
                        ours=ours_flops / batch, peer=flops_per_image(models[key], steps), peer_name=peer_name,
                        peer_kind="ours", unit="FLOPs per image")
    sle = models["sle"]
    bench.scaling(f"SLE sampling time vs steps T (batch {batch})", sizes=[1, 2, 4, 8],
                  time_of=lambda t: bench.time(sampler(sle, batch, int(t)), repeats=3),
                  claimed="one denoiser pass per step plus one decode: slope just under 1")


def fid_side_by_side(bench: Bench) -> None:
    from torchmetrics.image.fid import FrechetInceptionDistance

    torch.manual_seed(0)
    net = FeatureView(DigitsClassifier()).double()
    real = torch.rand(1797, 1, 16, 16, dtype=torch.float64)
    fake = torch.rand(1797, 1, 16, 16, dtype=torch.float64) ** 1.5
    values = {}

    def ours() -> None:
        fid = ClassifierFID(net)
        fid.update(real, real=True)
        fid.update(fake, real=False)
        values["ours"] = float(fid.compute())

    def peer() -> None:
        fid = FrechetInceptionDistance(feature=net, normalize=True)
        fid.update(real, real=True)
        fid.update(fake, real=False)
        values["peer"] = float(fid.compute())

    bench.compare("FID of 1797 vs 1797 images (64-d features)", ours=ours, peer=peer,
                  peer_name="torchmetrics FrechetInceptionDistance", peer_kind="real")
    bench.count("FID value on the same features", ours=values["ours"], peer=values["peer"],
                peer_name="torchmetrics FrechetInceptionDistance", peer_kind="real", unit="FID (equal is right)",
                note=f"|ours - torchmetrics| = {abs(values['ours'] - values['peer']):.1e}")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=sorted(ARCHS), default="spec")
    parser.add_argument("--batch", type=int, default=256)
    args, _ = parser.parse_known_args(argv)
    bench = Bench("spherelatent", argv=["--repeats", "5", *argv],
                  description=f"SLE vs SE / latent FM / latent CM sampling at the {args.arch} architectures "
                              f"(batch {args.batch}, untrained weights), and FID vs torchmetrics")
    sampling(bench, args.arch, args.batch)
    fid_side_by_side(bench)
    bench.write()


if __name__ == "__main__":
    main()
