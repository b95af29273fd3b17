"""Side by side: sampling speed and FLOPs of SLE, our Sphere Encoder and latent flow matching, as ratios to SE;
and our Fréchet distance beside torchmetrics' ``FrechetInceptionDistance(feature=module)`` (value and time).

Architectures as in the ``full`` claim check (16×16 digits: conv tokenizer width 28 → 4×4×8, denoiser d = 128,
4 blocks; SE widened to the same parameter count), untrained weights (speed does not depend on training).
Images/s: process CPU time, median of 5 after 2 warm-ups, 2 threads. Not run in CI; needs ``torchmetrics``.

    python benchmarks/spherelatent_bench.py [--batch 256] [--threads 2] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import torch

from neurips26.claims import measure
from neurips26.spherelatent import (
    ClassifierFID,
    ConvAutoencoder,
    DigitsClassifier,
    FeatureView,
    LatentFlowMatching,
    LatentTransformer,
    SphereEncoder,
    SphereLatentEncoder,
    count_flops,
)


def _params(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def build() -> dict[str, torch.nn.Module]:
    torch.manual_seed(0)
    tok = ConvAutoencoder(width=28)
    g = LatentTransformer(tok.latent_shape, dim=128, depth=4, mlp_ratio=2.0, num_classes=10)
    target = _params(tok) + _params(g)
    width = min(range(8, 200), key=lambda w: abs(_params(SphereEncoder(width=w, num_classes=10)) - target))
    v = LatentTransformer(tok.latent_shape, dim=128, depth=4, mlp_ratio=2.0, num_classes=10, time_input=True)
    models = {"SLE": SphereLatentEncoder(tok, g, num_classes=10), "SE": SphereEncoder(width=width, num_classes=10),
              "latent FM": LatentFlowMatching(tok, v, num_classes=10)}
    for name, m in models.items():
        print(f"{name:10s} {_params(m) if name != 'SLE' else target:>9,d} parameters")
    return {k: m.eval() for k, m in models.items()}


def speed(models: dict[str, torch.nn.Module], batch: int, repeats: int) -> None:
    y = torch.arange(batch) % 10
    rows = {}
    for name, model in models.items():
        for steps in ((1, 2, 4, 32) if name == "latent FM" else (1, 2, 4)):
            t = measure.timeit(lambda m=model, s=steps: m.sample(batch, steps=s, y=y), warmup=2, repeats=repeats)
            flops = count_flops(lambda m=model, s=steps: m.sample(16, steps=s, y=y[:16])) / 16
            rows[(name, steps)] = (batch / t.median, flops)
    print(f"\n{'method':10s} {'T':>3s} {'images/s':>10s} {'x SE':>6s} {'MFLOP/img':>10s} {'SE/ours':>8s}")
    for (name, steps), (ips, flops) in rows.items():
        se = rows.get(("SE", steps))
        ratio = f"{ips / se[0]:6.2f}" if se else "     -"
        fratio = f"{se[1] / flops:8.2f}" if se else "       -"
        print(f"{name:10s} {steps:3d} {ips:10.0f} {ratio} {flops / 1e6:10.2f} {fratio}")


def fid_side_by_side() -> None:
    from torchmetrics.image.fid import FrechetInceptionDistance

    torch.manual_seed(0)
    net = FeatureView(DigitsClassifier()).double()
    real = torch.rand(1797, 1, 16, 16, dtype=torch.float64)
    fake = torch.rand(1797, 1, 16, 16, dtype=torch.float64) ** 1.5
    t0 = time.perf_counter()
    ours = ClassifierFID(net)
    ours.update(real, real=True)
    ours.update(fake, real=False)
    v_ours, t_ours = ours.compute(), time.perf_counter() - t0
    t0 = time.perf_counter()
    tm = FrechetInceptionDistance(feature=net, normalize=True)
    tm.update(real, real=True)
    tm.update(fake, real=False)
    v_tm, t_tm = float(tm.compute()), time.perf_counter() - t0
    print(f"\nFID on 1797 vs 1797 images (64-d features): ours {v_ours:.6f} in {t_ours:.2f} s; "
          f"torchmetrics {v_tm:.6f} in {t_tm:.2f} s; |diff| {abs(v_ours - v_tm):.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with torch.no_grad():
        speed(build(), args.batch, args.repeats)
        fid_side_by_side()


if __name__ == "__main__":
    main()
