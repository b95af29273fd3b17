"""Claim check for P06 spherelatent: SLE vs the Sphere Encoder (and latent flow matching) on digits.

Data: scikit-learn's 1797 digits (``neurips26.data.load_digits``), 8×8 bilinearly upsampled to 16×16 (smoke: 8×8;
gpu: 32×32), in [-1, 1], class-conditional. Per seed: a conv tokenizer is trained, then frozen; SLE's denoiser,
the Sphere Encoder (SE; same conv design, width chosen so E + D has the parameters of tokenizer + denoiser) and
latent flow matching (FM; the denoiser's transformer with a time input, same frozen latent) are trained.
Equal budgets: tokenizer + denoiser CPU seconds = SE CPU seconds (process time on one thread, robust to the
shared machine's load; gpu: wall seconds); every generator is evaluated with its EMA weights.
Digits-FID: Fréchet distance of the 64-d penultimate features of a small CNN (trained once on an 80 % split,
held-out accuracy >= 95 % required, never in a loss), all real images vs as many class-balanced samples (gpu: 10k
samples). Speed: images per CPU-second at batch 256 (gpu: 1024, bf16, CUDA clock), median of 5 after 2 warm-ups,
2 threads, plus FLOPs per image from ``torch.utils.flop_counter``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from neurips26.claims import CheckContext, Claim, Evidence, Paper, measure, rules, torch_threads

from .baselines import LatentFlowMatching, SphereEncoder
from .denoiser import LatentTransformer
from .metrics import FeatureView, count_flops, frechet_distance, knn_precision_recall, psnr
from .sle import SphereLatentEncoder, to_unit_interval
from .tokenizer import ConvAutoencoder, latent_statistics
from .training import digits_images, fit, train_classifier, train_tokenizer

# ------------------------------------------------------------------ criteria (fixed before running)
CLASSIFIER_ACC_MIN = 0.95    # digits-FID network: held-out accuracy (precondition of C1 and C4)
SEED_SHARE = 2 / 3           # C1: SLE better in >= 2 of 3 seeds (and on the mean) at T = 2 and at T = 4
SPEEDUP_MIN = 1.5            # C2: SLE images/s >= 1.5 x SE at T = 4 ...
FLOPS_RATIO_MIN = 1.0        # ... backed by fewer FLOPs per image (SE/SLE > 1)
PSNR_GAP_MIN_DB = 0.5        # C3: frozen tokenizer PSNR - SE reconstruction PSNR >= 0.5 dB (<= 0: refuted)
FM_RATIO_MAX, FM_RATIO_REFUTE = 1.5, 3.0   # C4: FID(SLE, T=4) / FID(FM, T=32) <= 1.5; > 3 refutes

_ACC = rules.on("classifier_acc", rules.threshold(">=", CLASSIFIER_ACC_MIN, stat="value", min_n=1))
RULE_C1 = rules.provided(_ACC, rules.decisive(
    rules.all_of(rules.on("gain_T2", rules.threshold(">", 0.0, min_n=1)),
                 rules.on("gain_T2", rules.at_least(SEED_SHARE, ">", 0.0, min_n=3)),
                 rules.on("gain_T4", rules.threshold(">", 0.0, min_n=1)),
                 rules.on("gain_T4", rules.at_least(SEED_SHARE, ">", 0.0, min_n=3))),
    rules.any_of(rules.on("mean_gain_every_T", rules.threshold("<", 0.0, stat="all", min_n=1)),
                 rules.on("mean_gain_T_ge_2", rules.threshold("<=", 0.0, stat="all", min_n=1)))))
RULE_C2 = rules.decisive(
    rules.all_of(rules.threshold(">=", SPEEDUP_MIN, min_n=1), rules.on("flops_ratio_T4", rules.threshold(">", FLOPS_RATIO_MIN,
                                                                                                 stat="value", min_n=1))),
    rules.on("speedup_T2_T4", rules.threshold("<=", 1.0, stat="all", min_n=1)))
RULE_C3 = rules.threshold(">=", PSNR_GAP_MIN_DB, refute=("<=", 0.0), min_n=1)
RULE_C4 = rules.provided(_ACC, rules.threshold("<=", FM_RATIO_MAX, refute=(">", FM_RATIO_REFUTE), min_n=1))


@dataclass(frozen=True)
class Setup:
    """Sizes and budgets of one scale (budgets in CPU seconds; gpu: wall seconds)."""

    size: int
    downsample: int
    tok_width: int
    dim: int
    depth: int
    batch: int
    budget_tok: float
    budget_g: float
    budget_fm: float
    classifier_steps: int
    n_eval: int | None      # None: as many samples as real images
    steps: tuple[int, ...]
    fm_steps: tuple[int, ...]
    speed_batch: int
    speed_repeats: int


SETUPS = {
    "smoke": Setup(8, 1, 8, 32, 1, 32, 0.4, 0.8, 0.6, 30, 256, (1, 2), (1, 2), 64, 1),
    "quick": Setup(16, 2, 16, 64, 2, 64, 8.0, 20.0, 20.0, 250, None, (1, 2, 4), (1, 2, 4, 32), 256, 5),
    "full": Setup(16, 2, 28, 128, 4, 128, 24.0, 60.0, 60.0, 400, None, (1, 2, 4), (1, 2, 4, 32), 256, 5),
    "gpu": Setup(32, 2, 64, 384, 6, 256, 30.0, 75.0, 75.0, 1500, 10_000, (1, 2, 4), (1, 2, 4, 32), 1024, 5),
}


def _setup(ctx: CheckContext) -> Setup:
    return ctx.pick(SETUPS)


def _arms(s: Setup) -> list[tuple[str, int]]:
    """(method, T) pairs evaluated: SLE and SE at ``steps``, latent FM at ``fm_steps``."""
    return [("sle", t) for t in s.steps] + [("se", t) for t in s.steps] + [("fm", t) for t in s.fm_steps]


def _params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _se_width(target: int, s: Setup) -> int:
    """The SE conv width whose parameter count is closest to ``target`` (tokenizer + denoiser)."""
    def count(w: int) -> int:
        return _params(SphereEncoder(image_size=s.size, downsample=s.downsample, width=w, num_classes=10))

    lo, hi = 2, 512  # the count grows with the width: bisect, then take the closer neighbour
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if count(mid) <= target else (lo, mid)
    return min((lo, hi), key=lambda w: abs(count(w) - target))


# ------------------------------------------------------------------ data and the FID network
def _data(ctx: CheckContext) -> dict[str, Any]:
    s = _setup(ctx)
    x, y = (t.to(ctx.device) for t in digits_images(s.size))
    classifier, acc = train_classifier(to_unit_interval(x), y, image_size=s.size, steps=s.classifier_steps, seed=0)
    ctx.log(f"digits-FID network: held-out accuracy {acc:.3f}")
    features = FeatureView(classifier)
    with torch.no_grad():
        real = features(to_unit_interval(x)).double().cpu().numpy()
    half = np.random.default_rng(0).permutation(len(real))
    floor = frechet_distance(real[half[: len(real) // 2]], real[half[len(real) // 2:]])
    return {"x": x, "y": y, "classifier": classifier, "features": features, "acc": acc, "real": real, "floor": floor}


# ------------------------------------------------------------------ training every arm of one seed
def _train_seed(ctx: CheckContext, data: dict[str, Any], seed: int) -> dict[str, Any]:
    s, x, y, dev = _setup(ctx), data["x"], data["y"], ctx.device
    progress, clock = ctx.progress, "wall" if ctx.scale == "gpu" else "process"
    torch.manual_seed(seed)
    tok = ConvAutoencoder(image_size=s.size, downsample=s.downsample, width=s.tok_width).to(dev)
    tok_fit = train_tokenizer(tok, x, budget_s=s.budget_tok, batch_size=s.batch, seed=seed, progress=progress,
                              clock=clock)
    stats = latent_statistics(tok, x)
    g = LatentTransformer(tok.latent_shape, dim=s.dim, depth=s.depth, heads=4 if s.dim >= 64 else 2, mlp_ratio=2.0,
                          num_classes=10)
    sle = SphereLatentEncoder(tok, g, latent_stats=stats, num_classes=10).to(dev)
    loss = lambda m, xb, yb: m.loss(xb, yb)[0]  # noqa: E731
    sle_fit = fit(sle, x, y, loss_fn=loss, budget_s=s.budget_g, batch_size=s.batch, seed=seed, progress=progress,
                  desc="SLE denoiser", clock=clock)
    width = _se_width(_params(tok) + _params(g), s)
    se = SphereEncoder(image_size=s.size, downsample=s.downsample, width=width, num_classes=10).to(dev)
    se_fit = fit(se, x, y, loss_fn=loss, budget_s=s.budget_tok + s.budget_g, batch_size=s.batch, seed=seed,
                 progress=progress, desc="Sphere Encoder", clock=clock)
    v = LatentTransformer(tok.latent_shape, dim=s.dim, depth=s.depth, heads=4 if s.dim >= 64 else 2, mlp_ratio=2.0,
                          num_classes=10, time_input=True)
    fm = LatentFlowMatching(tok, v, latent_stats=stats, num_classes=10).to(dev)
    fm_fit = fit(fm, x, y, loss_fn=loss, budget_s=s.budget_fm, batch_size=s.batch, seed=seed, progress=progress,
                 desc="latent FM", clock=clock)
    info = {"params_sle": _params(tok) + _params(g), "params_tokenizer": _params(tok), "params_se": _params(se),
            "params_fm_velocity": _params(v), "se_width": width}
    for name, f in (("tokenizer", tok_fit), ("sle", sle_fit), ("se", se_fit), ("fm", fm_fit)):
        info[f"steps_{name}"], info[f"cpu_s_{name}"] = f.steps, round(f.cpu_seconds, 2)
        info[f"final_loss_{name}"] = float(np.mean(f.losses[-10:]))
    ctx.log(f"seed {seed}: " + ", ".join(f"{k}={v}" for k, v in info.items() if k.startswith(("steps", "params"))))
    return {"tok": tok, "sle": sle_fit.ema.module, "se": se_fit.ema.module, "fm": fm_fit.ema.module, "info": info}


# ------------------------------------------------------------------ evaluation
def _quality(data: dict[str, Any], model: Any, steps: int, n: int, seed: int) -> dict[str, float]:
    dev = data["x"].device
    labels = torch.arange(n, device=dev) % 10
    gen = torch.Generator(device=dev).manual_seed(10_000 + seed)
    with torch.no_grad():
        images = torch.cat([model.sample(len(chunk), steps=steps, y=chunk, generator=gen)
                            for chunk in labels.split(512)])
        feats = data["features"](images).double().cpu().numpy()
        acc = float((data["classifier"](images).argmax(1) == labels).float().mean())
    precision, recall = knn_precision_recall(data["real"], feats, k=3)
    return {"fid": frechet_distance(data["real"], feats), "class_acc": acc, "precision": precision, "recall": recall}


def _reconstruction(data: dict[str, Any], arms: dict[str, Any]) -> dict[str, float]:
    x, y, tok, sle, se = data["x"], data["y"], arms["tok"], arms["sle"], arms["se"]
    with torch.no_grad():
        plain = tok.decode(tok.encode(x))
        sphere_path = sle.decode(sle.encode(x))
        se_rec = se.reconstruct(x, y)
        fid = {name: frechet_distance(data["real"], data["features"](to_unit_interval(r)).double().cpu().numpy())
               for name, r in (("rfid_tokenizer", plain), ("rfid_tokenizer_sphere", sphere_path), ("rfid_se", se_rec))}
    return {"psnr_tokenizer": psnr(plain.clamp(-1, 1), x), "psnr_tokenizer_sphere": psnr(sphere_path.clamp(-1, 1), x),
            "psnr_se": psnr(se_rec.clamp(-1, 1), x), **fid}


def _evaluate_seed(ctx: CheckContext, data: dict[str, Any], arms: dict[str, Any], seed: int) -> dict[str, Any]:
    s = _setup(ctx)
    n = s.n_eval or len(data["x"])
    rows: dict[str, dict[str, float]] = {}
    for name, steps in _arms(s):
        rows[f"{name}_T{steps}"] = _quality(data, arms[name], steps, n, seed)
    ctx.log(f"seed {seed} FID: " + ", ".join(f"{k} {v['fid']:.2f}" for k, v in rows.items()))
    return {"quality": rows, "recon": _reconstruction(data, arms), "info": arms["info"]}


def _runs(ctx: CheckContext) -> dict[str, Any]:
    """Train and evaluate every arm for every seed (shared by all claims)."""
    with torch_threads(1):
        data = ctx.cache("data", lambda: _data(ctx))
    out, models = {}, None
    for seed in ctx.progress(ctx.seeds, desc="spherelatent seeds"):
        # one thread: CPU-second budgets then count work, not the spinning of a second OpenMP thread on a
        # loaded machine (which inflated the CPU time per step several-fold in a first quick run)
        with torch_threads(1):
            arms = _train_seed(ctx, data, seed)
            out[seed] = _evaluate_seed(ctx, data, arms, seed)
        models = models or arms
    ctx.metrics["per_seed"] = {str(k): v for k, v in out.items()}
    ctx.metrics["digits_fid_floor_real_halves"] = data["floor"]
    ctx.metrics["classifier_heldout_acc"] = data["acc"]
    _plot_fid(ctx, out)
    return {"runs": out, "models": models, "data": data}


def _fid(runs: dict[int, Any], key: str) -> list[float]:
    return [r["quality"][key]["fid"] for r in runs.values()]


def _plot_fid(ctx: CheckContext, runs: dict[int, Any]) -> None:
    s = _setup(ctx)
    fig, ax = ctx.figure(figsize=(5.5, 3.6))
    for name, label, steps in (("sle", "SLE (ours)", s.steps), ("se", "Sphere Encoder", s.steps),
                               ("fm", "latent flow matching", s.fm_steps)):
        fids = np.array([_fid(runs, f"{name}_T{t}") for t in steps])
        err = fids.std(axis=1, ddof=1) if fids.shape[1] > 1 else None
        ax.errorbar(steps, fids.mean(axis=1), yerr=err, marker="o", capsize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sampling steps T")
    ax.set_ylabel("digits-FID (lower is better)")
    ax.legend(fontsize=8)
    ax.set_title(f"digits {s.size}x{s.size}, {len(runs)} seed(s), mean ± std")
    ctx.save_figure(fig, "fid_vs_steps.png", caption="digits-FID vs sampling steps for SLE, SE and latent FM")


# ------------------------------------------------------------------ claims
def measure_c1(ctx: CheckContext) -> Evidence:
    shared = ctx.cache("runs", lambda: _runs(ctx))
    runs, steps = shared["runs"], _setup(ctx).steps
    gains = {t: [se - sle for se, sle in zip(_fid(runs, f"se_T{t}"), _fid(runs, f"sle_T{t}"))] for t in steps}
    details: dict[str, Any] = {f"gain_T{t}": g for t, g in gains.items()}
    details["mean_gain_every_T"] = [float(np.mean(g)) for g in gains.values()]
    details["mean_gain_T_ge_2"] = [float(np.mean(g)) for t, g in gains.items() if t >= 2]
    details["classifier_acc"] = shared["data"]["acc"]
    details["fid_floor"] = shared["data"]["floor"]
    for t in steps:
        details[f"fid_sle_T{t}"], details[f"fid_se_T{t}"] = _fid(runs, f"sle_T{t}"), _fid(runs, f"se_T{t}")
    last = max(steps)
    return Evidence(values=gains[last], unit=f"digits-FID(SE) - digits-FID(SLE) at T={last}, per seed", details=details)


def _throughput(model: Any, steps: int, batch: int, repeats: int, device: str) -> tuple[float, float]:
    """(images per second, FLOPs per image) of ``model.sample(batch, steps)``."""
    labels = torch.arange(batch, device=device) % 10
    gen = torch.Generator(device=device).manual_seed(0)

    def run() -> None:
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            model.sample(batch, steps=steps, y=labels, generator=gen)

    clock = "cuda" if device == "cuda" else "process"
    timing = measure.timeit(run, warmup=2, repeats=repeats, clock=clock)
    small = torch.arange(16) % 10
    flops = count_flops(lambda: model.sample(16, steps=steps, y=small.to(device))) / 16
    return batch / timing.median, flops


def _speed(ctx: CheckContext) -> dict[str, dict[str, float]]:
    shared = ctx.cache("runs", lambda: _runs(ctx))
    s, models = _setup(ctx), shared["models"]
    table: dict[str, dict[str, float]] = {}
    device = "cuda" if ctx.scale == "gpu" else "cpu"
    with torch_threads(2):
        for name, steps in _arms(s):
            model = models[name].to(device)
            ips, flops = _throughput(model, steps, s.speed_batch, s.speed_repeats, device)
            table[f"{name}_T{steps}"] = {"images_per_s": ips, "flops_per_image": flops}
            ctx.log(f"{name} T={steps}: {ips:.0f} images/s, {flops / 1e6:.1f} MFLOP/image")
    ctx.metrics["speed"] = table
    return table


def measure_c2(ctx: CheckContext) -> Evidence:
    table = ctx.cache("speed", lambda: _speed(ctx))
    steps = _setup(ctx).steps
    ratio = {t: table[f"sle_T{t}"]["images_per_s"] / table[f"se_T{t}"]["images_per_s"] for t in steps}
    flops = {t: table[f"se_T{t}"]["flops_per_image"] / table[f"sle_T{t}"]["flops_per_image"] for t in steps}
    last = max(steps)
    return Evidence(values=[ratio[last]], unit=f"images/s SLE / SE at T={last} (batch {_setup(ctx).speed_batch})",
                    details={f"flops_ratio_T{last}": flops[last], "flops_ratio_T4": flops[last],
                             "speedup_T2_T4": [ratio[t] for t in steps if t >= 2],
                             "speedup_by_T": {str(t): ratio[t] for t in steps},
                             "flops_ratio_by_T": {str(t): flops[t] for t in steps}})


def measure_c3(ctx: CheckContext) -> Evidence:
    runs = ctx.cache("runs", lambda: _runs(ctx))["runs"]
    recon = [r["recon"] for r in runs.values()]
    return Evidence(values=[r["psnr_tokenizer"] - r["psnr_se"] for r in recon],
                    unit="dB: PSNR(frozen tokenizer D(E(x))) - PSNR(SE D(f(E(x))) at r = 0), per seed",
                    details={"psnr_tokenizer": [r["psnr_tokenizer"] for r in recon],
                             "psnr_tokenizer_sphere_path": [r["psnr_tokenizer_sphere"] for r in recon],
                             "psnr_se": [r["psnr_se"] for r in recon],
                             "rfid_tokenizer": [r["rfid_tokenizer"] for r in recon],
                             "rfid_se": [r["rfid_se"] for r in recon]})


def measure_c4(ctx: CheckContext) -> Evidence:
    shared = ctx.cache("runs", lambda: _runs(ctx))
    runs, s = shared["runs"], _setup(ctx)
    t_sle, t_fm = max(s.steps), max(s.fm_steps)
    sle, fm = _fid(runs, f"sle_T{t_sle}"), _fid(runs, f"fm_T{t_fm}")
    return Evidence(values=[a / b for a, b in zip(sle, fm)],
                    unit=f"digits-FID(SLE, T={t_sle}) / digits-FID(latent FM, T={t_fm}), per seed",
                    details={"classifier_acc": shared["data"]["acc"], "fid_sle": sle, "fid_fm": fm,
                             **{f"fid_fm_T{t}": _fid(runs, f"fm_T{t}") for t in s.fm_steps}})


CLAIMS = (
    Claim(id="C1", statement="SLE beats the Sphere Encoder in generation quality (gFID) in few steps.",
          paper_value="SLE < SE gFID on AF, OF, ImageNet 256² (SLE's numbers not found; SE ImageNet-L 4.78 at 4 steps)",
          metric="digits-FID(SE) − digits-FID(SLE) at T = 2 and 4 per seed (equal params and CPU budget, EMA weights)",
          rule=RULE_C1, measure=measure_c1, scales=("quick", "full", "gpu")),
    Claim(id="C2", statement="SLE is faster at inference than the Sphere Encoder (it loops in latent space and "
                             "decodes once; SE decodes T and encodes T − 1 times).",
          paper_value="faster than SE (abstract; no number found)",
          metric="images/s SLE / SE at T = 4 (batch 256, 2 threads, median of 5) and FLOPs/image SE / SLE",
          rule=RULE_C2, measure=measure_c2, scales=("quick", "full", "gpu")),
    Claim(id="C3", statement="Decoupling removes the conflict between reconstruction and generation: the frozen "
                             "tokenizer's reconstruction is not traded away.",
          paper_value="(implicit; no number)",
          metric="PSNR of the frozen tokenizer minus PSNR of SE's own reconstruction (r = 0), dB per seed",
          rule=RULE_C3, measure=measure_c3, scales=("quick", "full", "gpu")),
    Claim(id="C4", statement="SLE is competitive with multi-step baselines (flow matching in the same latent).",
          paper_value="competitive with few- and multi-step baselines (abstract; RAE DiT-DH 1.51 FID)",
          metric="digits-FID(SLE, T = 4) / digits-FID(latent FM, Euler T = 32), per seed",
          rule=RULE_C4, measure=measure_c4, scales=("quick", "full", "gpu")),
)

PAPER = Paper(id="P06", slug="spherelatent",
              method="Sphere Latent Encoder",
              title="Efficient Image Synthesis with Sphere Latent Encoder", arxiv="2602.15030",
              claims=CLAIMS, default_seeds={"smoke": 1, "quick": 1, "full": 3, "gpu": 3})
