"""Side by side: sampling time and FLOPs of SLE against our Sphere Encoder (and latent FM, latent CM), and our
Fréchet distance beside torchmetrics' ``FrechetInceptionDistance(feature=module)`` (value and time).

Protocol = the claim check's C2 (``compare_sampling_speed``): each peer's ``sample(batch, T)`` interleaved with
SLE's in one process, **1 thread, process CPU clock**, one warm-up each, ``--repeats`` pairs; the ratio is the
geometric mean of time(peer) / time(SLE) per pair with its 95 % t interval (log scale). Architectures from
``matched_generators``: ``--arch spec`` = the spec's (tokenizer width 28, d = 128, 4 blocks; what ``check --scale
full`` times), ``--arch quick`` = the quick check's (16, 64, 2). Untrained weights (speed does not depend on them).
Not run in CI; the FID part needs ``torchmetrics``.

    python benchmarks/spherelatent_bench.py [--arch spec] [--batch 256] [--repeats 7]
"""

from __future__ import annotations

import argparse
import time

import torch

from neurips26.spherelatent import (
    ClassifierFID,
    DigitsClassifier,
    FeatureView,
    compare_sampling_speed,
    matched_generators,
)

ARCHS = {"spec": (28, 128, 4), "quick": (16, 64, 2)}


def _params(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def speed(arch: str, batch: int, repeats: int) -> None:
    tw, dim, depth = ARCHS[arch]
    models = matched_generators(tokenizer_width=tw, dim=dim, depth=depth)
    for name, m in models.items():
        print(f"{name:4s} {_params(m):>9,d} parameters")
    print(f"\n{'peer':4s} {'T':>3s} {'time peer / SLE [95% CI]':>28s} {'SLE img/s':>10s} {'peer img/s':>10s} "
          f"{'FLOPs peer/SLE':>15s}")
    for peer, steps_list in (("se", (1, 2, 4)), ("fm", (4, 32)), ("cm", (4,))):
        for steps in steps_list:
            sle_steps = min(steps, 4)
            out = compare_sampling_speed(models["sle"], models[peer], steps=steps, batch=batch, repeats=repeats) \
                if sle_steps == steps else None
            if out is None:  # FM at T = 32 against SLE at T = 4 (C4's pairing): time both sides separately
                out = _against_sle_t4(models, peer, steps, batch, repeats)
            ci = f"{out['ratio']:.2f} [{out['lo']:.2f}, {out['hi']:.2f}]"
            print(f"{peer:4s} {steps:3d} {ci:>28s} {out['images_per_s_a']:10.0f} {out['images_per_s_b']:10.0f} "
                  f"{out['flops_ratio']:15.2f}")


def _against_sle_t4(models: dict, peer: str, steps: int, batch: int, repeats: int) -> dict:
    class Fixed(torch.nn.Module):  # SLE sampled at T = 4 whatever steps the comparison asks for
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def sample(self, n: int, steps: int = 4, **kw: object) -> torch.Tensor:
            return self.m.sample(n, steps=4, **kw)

    return compare_sampling_speed(Fixed(models["sle"]), models[peer], steps=steps, batch=batch, repeats=repeats)


def fid_side_by_side() -> None:
    from torchmetrics.image.fid import FrechetInceptionDistance

    torch.manual_seed(0)
    net = FeatureView(DigitsClassifier()).double()
    real = torch.rand(1797, 1, 16, 16, dtype=torch.float64)
    fake = torch.rand(1797, 1, 16, 16, dtype=torch.float64) ** 1.5
    t0 = time.process_time()
    ours = ClassifierFID(net)
    ours.update(real, real=True)
    ours.update(fake, real=False)
    v_ours, t_ours = ours.compute(), time.process_time() - t0
    t0 = time.process_time()
    tm = FrechetInceptionDistance(feature=net, normalize=True)
    tm.update(real, real=True)
    tm.update(fake, real=False)
    v_tm, t_tm = float(tm.compute()), time.process_time() - t0
    print(f"\nFID on 1797 vs 1797 images (64-d features): ours {v_ours:.6f} in {t_ours:.2f} CPU-s; "
          f"torchmetrics {v_tm:.6f} in {t_tm:.2f} CPU-s; |diff| {abs(v_ours - v_tm):.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=sorted(ARCHS), default="spec")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the timings themselves run at 1 thread (timeit_pair); so does the rest
    with torch.no_grad():
        speed(args.arch, args.batch, args.repeats)
        fid_side_by_side()


if __name__ == "__main__":
    main()
