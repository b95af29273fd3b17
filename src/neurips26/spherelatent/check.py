"""Claim check for P06 spherelatent (claims v3): SLE against the Sphere Encoder, latent flow matching and a latent
consistency model on digits.

Data: scikit-learn's 1797 digits (``neurips26.data.load_digits``), 8×8 bilinearly upsampled to 16×16 (smoke: 8×8;
gpu: 32×32), in [-1, 1], class-conditional. Per seed: a conv tokenizer is trained, then frozen; SLE's denoiser,
the Sphere Encoder (SE; conv E/D with FiLM classes and learned position maps, width chosen so E + D has the
parameters of tokenizer + denoiser), latent flow matching (FM; the denoiser's transformer with a time input, same
frozen latent) and a latent consistency model (CM, the few-step peer; same transformer, consistency training) are
trained. Budgets in process CPU seconds at one thread: tokenizer + denoiser = SE; FM and CM get the denoiser's.
Every generator is evaluated with its EMA weights, and its digits-FID (T = 4, fixed samples) is recorded at evenly
spaced points of its training: the FID-vs-CPU-seconds curves, and the convergence preconditions.

Digits-FID: Fréchet distance of the 64-d penultimate features of a small CNN (trained once on an 80 % split,
held-out accuracy >= 95 % required, never in a loss), all real images vs as many class-balanced samples; the
same CNN gives the class accuracy of conditional samples (SE must exceed 0.9 before C1, C3 and C4 are decided).
Speed (C2): SE and SLE ``sample()`` interleaved in one process at one thread on the process clock
(``measure.timeit_pair`` through :func:`compare_sampling_speed`, the benchmark's function), plus FLOPs per image.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from neurips26.claims import CheckContext, Claim, Evidence, Paper, Precondition, preconditions, rules, torch_threads

from .baselines import LatentConsistencyModel, LatentFlowMatching, SphereEncoder, matched_generators, se_width_for
from .denoiser import LatentTransformer
from .metrics import FeatureView, compare_sampling_speed, frechet_distance, knn_precision_recall, psnr
from .sle import SphereLatentEncoder, to_unit_interval
from .tokenizer import ConvAutoencoder, latent_statistics
from .training import digits_images, fit, train_classifier, train_tokenizer

# ------------------------------------------------------------------ criteria (fixed before running; 2026-12-02)
CLASSIFIER_ACC_MIN = 0.95    # digits-FID network: held-out accuracy (precondition of C1, C3, C4)
SE_CLASS_ACC_MIN = 0.9       # SE's conditional samples classified correctly > 0.9, every seed, T = 2 and 4
CONVERGED_DELTA, CONVERGED_K = 0.05, 2   # FID curve: best of the last 2 evaluations within 5 % of the best before
FID_MARGIN = 1.0             # C1: FID(SE) - FID(SLE) interval (t, seeds) above 1 digits-FID, at T = 2 and at T = 4
MIN_SEEDS = 3
SPEEDUP_MIN = 1.5            # C2: interval of time(SE) / time(SLE) at T = 4 above 1.5 ...
FLOPS_RATIO_MIN = 1.0        # ... and FLOPs(SE) / FLOPs(SLE) > 1
SPEED_PAIRS_MIN = 5
PSNR_GAP_MIN_DB = 0.5        # C3: interval of PSNR(tokenizer) - PSNR(SE at r = 0) above 0.5 dB
PEER_RATIO_MAX = 1.5         # C4: FID(SLE, T = 4) within 1.5x each peer's FID: interval of FID(peer)/FID(SLE) > 1/1.5
LR = 3e-3                    # every arm (a probe of SE only: 1e-3 left it at class accuracy 0.18-0.5 after 800 steps)
C4_PEERS = ("fm_T4", "fm_T32", "cm_T4")


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
    budget_g: float          # SLE's denoiser; FM and CM get the same
    classifier_steps: int
    n_eval: int | None       # None: as many samples as real images
    curve_n: int             # samples per point of the training curves
    curve_points: int
    steps: tuple[int, ...]   # SLE, SE, CM
    fm_steps: tuple[int, ...]
    speed_batch: int
    speed_repeats: int
    speed_arch: tuple[int, int, int]   # (tokenizer width, dim, depth) of the architectures timed in C2


SETUPS = {
    "smoke": Setup(8, 1, 8, 32, 1, 32, 0.4, 0.8, 30, 256, 128, 3, (1, 2, 4), (1, 4, 32), 32, 2, (8, 32, 1)),
    "quick": Setup(16, 2, 16, 64, 2, 64, 6.0, 16.0, 250, None, 600, 5, (1, 2, 4), (1, 2, 4, 32), 128, 5,
                   (16, 64, 2)),
    # full: 120 CPU-s per generator (60 in the first full record, 2026-12-02 03:13, where SE's and CM's FID curves
    # still fell 6-9 % per evaluation, so C1/C3/C4 were undecided by the convergence precondition)
    "full": Setup(16, 2, 16, 64, 2, 64, 10.0, 120.0, 300, None, 800, 6, (1, 2, 4), (1, 2, 4, 32), 256, 6,
                  (28, 128, 4)),
    "gpu": Setup(32, 2, 64, 384, 6, 256, 30.0, 75.0, 1500, 10_000, 2000, 6, (1, 2, 4), (1, 2, 4, 32), 1024, 5,
                 (64, 384, 6)),
}


def _setup(ctx: CheckContext) -> Setup:
    return ctx.pick(SETUPS)


def _arms(s: Setup) -> list[tuple[str, int]]:
    """(method, T) pairs evaluated: SLE, SE and CM at ``steps``, latent FM at ``fm_steps``."""
    return ([("sle", t) for t in s.steps] + [("se", t) for t in s.steps] + [("cm", t) for t in s.steps]
            + [("fm", t) for t in s.fm_steps])


def _params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _transformer(tok: ConvAutoencoder, dim: int, depth: int, *, time_input: bool) -> LatentTransformer:
    return LatentTransformer(tok.latent_shape, dim=dim, depth=depth, heads=4 if dim >= 64 else 2, mlp_ratio=2.0,
                             num_classes=10, time_input=time_input)


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


def _quality(data: dict[str, Any], model: Any, steps: int, n: int, seed: int, *, knn: bool = True) -> dict[str, float]:
    dev = data["x"].device
    labels = torch.arange(n, device=dev) % 10
    gen = torch.Generator(device=dev).manual_seed(10_000 + seed)
    with torch.no_grad():
        images = torch.cat([model.sample(len(chunk), steps=steps, y=chunk, generator=gen)
                            for chunk in labels.split(512)])
        feats = data["features"](images).double().cpu().numpy()
        acc = float((data["classifier"](images).argmax(1) == labels).float().mean())
    out = {"fid": frechet_distance(data["real"], feats), "class_acc": acc}
    if knn:
        out["precision"], out["recall"] = knn_precision_recall(data["real"], feats, k=3)
    return out


# ------------------------------------------------------------------ training every arm of one seed
def _train_seed(ctx: CheckContext, data: dict[str, Any], seed: int) -> dict[str, Any]:
    s, x, y, dev = _setup(ctx), data["x"], data["y"], ctx.device
    progress, clock = ctx.progress, "wall" if ctx.scale == "gpu" else "process"
    torch.manual_seed(seed)
    tok = ConvAutoencoder(image_size=s.size, downsample=s.downsample, width=s.tok_width).to(dev)
    tok_fit = train_tokenizer(tok, x, budget_s=s.budget_tok, batch_size=s.batch, seed=seed, progress=progress,
                              clock=clock)
    stats = latent_statistics(tok, x)

    def curve(model: Any) -> float:  # one point of the FID-vs-CPU-seconds curve: T = 4, fixed samples
        return _quality(data, model, 4, s.curve_n, seed, knn=False)["fid"]

    loss = lambda m, xb, yb: m.loss(xb, yb)[0]  # noqa: E731
    common = dict(loss_fn=loss, batch_size=s.batch, lr=LR, seed=seed, progress=progress, clock=clock,
                  eval_fn=curve, evals=s.curve_points)
    g = _transformer(tok, s.dim, s.depth, time_input=False)
    sle = SphereLatentEncoder(tok, g, latent_stats=stats, num_classes=10).to(dev)
    sle_fit = fit(sle, x, y, budget_s=s.budget_g, desc="SLE denoiser", **common)
    width = se_width_for(_params(tok) + _params(g), image_size=s.size, downsample=s.downsample)
    se = SphereEncoder(image_size=s.size, downsample=s.downsample, width=width, num_classes=10).to(dev)
    se_fit = fit(se, x, y, budget_s=s.budget_tok + s.budget_g, desc="Sphere Encoder", **common)
    fm = LatentFlowMatching(tok, _transformer(tok, s.dim, s.depth, time_input=True), latent_stats=stats,
                            num_classes=10).to(dev)
    fm_fit = fit(fm, x, y, budget_s=s.budget_g, desc="latent FM", **common)
    cm = LatentConsistencyModel(tok, _transformer(tok, s.dim, s.depth, time_input=True), latent_stats=stats,
                                num_classes=10).to(dev)
    cm_fit = fit(cm, x, y, budget_s=s.budget_g, desc="latent CM", on_step=lambda k, n: cm.set_progress(k / n),
                 **common)
    info: dict[str, Any] = {"params_sle": _params(tok) + _params(g), "params_tokenizer": _params(tok),
                            "params_se": _params(se), "params_fm_velocity": _params(fm.velocity),
                            "params_cm_net": _params(cm.net), "se_width": width}
    fits = {"tokenizer": tok_fit, "sle": sle_fit, "se": se_fit, "fm": fm_fit, "cm": cm_fit}
    for name, f in fits.items():
        info[f"steps_{name}"], info[f"cpu_s_{name}"] = f.steps, round(f.cpu_seconds, 2)
        info[f"final_loss_{name}"] = float(np.mean(f.losses[-10:]))
    curves = {name: [[step, cpu, fid] for step, cpu, fid in f.eval_history] for name, f in fits.items()
              if name != "tokenizer"}
    ctx.log(f"seed {seed}: " + ", ".join(f"{k}={v}" for k, v in info.items() if k.startswith(("steps", "params"))))
    return {"tok": tok, "sle": sle_fit.ema.module, "se": se_fit.ema.module, "fm": fm_fit.ema.module,
            "cm": cm_fit.ema.module, "info": info, "curves": curves}


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
    rows = {f"{name}_T{steps}": _quality(data, arms[name], steps, n, seed) for name, steps in _arms(s)}
    ctx.log(f"seed {seed} FID: " + ", ".join(f"{k} {v['fid']:.2f} (acc {v['class_acc']:.2f})" for k, v in rows.items()))
    return {"quality": rows, "recon": _reconstruction(data, arms), "info": arms["info"], "curves": arms["curves"]}


def _runs(ctx: CheckContext) -> dict[str, Any]:
    """Train and evaluate every arm for every seed (shared by all claims), at one thread."""
    with torch_threads(1):
        data = ctx.cache("data", lambda: _data(ctx))
    out = {}
    for seed in ctx.progress(ctx.seeds, desc="spherelatent seeds"):
        with torch_threads(1):
            arms = _train_seed(ctx, data, seed)
            out[seed] = _evaluate_seed(ctx, data, arms, seed)
    ctx.metrics["per_seed"] = {str(k): v for k, v in out.items()}
    ctx.metrics["digits_fid_floor_real_halves"] = data["floor"]
    ctx.metrics["classifier_heldout_acc"] = data["acc"]
    _plot_fid(ctx, out)
    _plot_curves(ctx, out)
    return {"runs": out, "data": data}


def _shared(ctx: CheckContext) -> dict[str, Any]:
    return ctx.cache("runs", lambda: _runs(ctx))


def _col(runs: dict[int, Any], key: str, field: str = "fid") -> list[float]:
    return [r["quality"][key][field] for r in runs.values()]


# ------------------------------------------------------------------ plots
_LABELS = {"sle": "SLE (ours)", "se": "Sphere Encoder", "fm": "latent flow matching", "cm": "latent consistency"}


def _plot_fid(ctx: CheckContext, runs: dict[int, Any]) -> None:
    s = _setup(ctx)
    fig, ax = ctx.figure(figsize=(5.5, 3.6))
    for name in ("sle", "se", "cm", "fm"):
        steps = s.fm_steps if name == "fm" else s.steps
        fids = np.array([_col(runs, f"{name}_T{t}") for t in steps])
        err = fids.std(axis=1, ddof=1) if fids.shape[1] > 1 else None
        ax.errorbar(steps, fids.mean(axis=1), yerr=err, marker="o", capsize=3, label=_LABELS[name])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sampling steps T")
    ax.set_ylabel("digits-FID (lower is better)")
    ax.legend(fontsize=8)
    ax.set_title(f"digits {s.size}x{s.size}, {len(runs)} seed(s), mean ± std")
    ctx.save_figure(fig, "fid_vs_steps.png", caption="digits-FID vs sampling steps for SLE, SE, latent CM and FM")


def _plot_curves(ctx: CheckContext, runs: dict[int, Any]) -> None:
    fig, ax = ctx.figure(figsize=(5.5, 3.6))
    colours = {"sle": "C0", "se": "C1", "cm": "C2", "fm": "C3"}
    for name in ("sle", "se", "cm", "fm"):
        for i, r in enumerate(runs.values()):
            pts = np.array(r["curves"][name])
            ax.plot(pts[:, 1], pts[:, 2], marker=".", color=colours[name], alpha=0.8,
                    label=_LABELS[name] if i == 0 else None)
    ax.set_yscale("log")
    ax.set_xlabel("training CPU seconds (one thread)")
    ax.set_ylabel("digits-FID at T = 4 (EMA weights)")
    ax.legend(fontsize=8)
    ax.set_title("training curves, one line per seed")
    ctx.save_figure(fig, "fid_vs_cpu_seconds.png",
                    caption="digits-FID (T = 4) against training CPU seconds: the convergence preconditions' curves")


# ------------------------------------------------------------------ preconditions
def measure_classifier(ctx: CheckContext) -> Evidence:
    return Evidence(values=[_shared(ctx)["data"]["acc"]], unit="held-out accuracy of the digits-FID network")


def measure_se_class_acc(ctx: CheckContext) -> Evidence:
    runs = _shared(ctx)["runs"]
    vals = _col(runs, "se_T2", "class_acc") + _col(runs, "se_T4", "class_acc")
    return Evidence(values=vals, unit="SE conditional-sample class accuracy (per seed at T = 2, then at T = 4)",
                    details={f"{name}_T{t}": _col(runs, f"{name}_T{t}", "class_acc")
                             for name in ("sle", "se", "cm") for t in (1, 2, 4)})


def _curves(ctx: CheckContext, arms: tuple[str, ...]) -> Evidence:
    runs = _shared(ctx)["runs"]
    curves = [[p[2] for p in r["curves"][arm]] for arm in arms for r in runs.values()]
    labels = [f"{arm} seed {seed}" for arm in arms for seed in runs]
    return Evidence(values=[c[-1] for c in curves], unit=f"final curve FID ({', '.join(arms)}, per seed)",
                    details={"curves": curves, "labels": labels,
                             "relative_gain_last_k": [preconditions.relative_improvement(c, CONVERGED_K)
                                                      for c in curves]})


def _converged(arms: tuple[str, ...]) -> Precondition:
    return preconditions.converged(f"{' and '.join(arms)} converged (digits-FID curve, T = 4)",
                                   lambda ctx: _curves(ctx, arms), delta=CONVERGED_DELTA, k=CONVERGED_K, min_n=1)


PRE_CLASSIFIER = preconditions.headroom("the digits-FID network classifies held-out digits", measure_classifier,
                                        at_least=CLASSIFIER_ACC_MIN, min_n=1)
PRE_SE = Precondition("the Sphere Encoder learned conditional generation (class accuracy of its samples)",
                      measure_se_class_acc, rules.threshold(">", SE_CLASS_ACC_MIN, stat="min", min_n=2))
TUNING = (f"not tuned per arm: one learning rate, {LR:g}, for every arm (chosen in a probe of SE alone, whose class "
          "accuracy stayed at 0.18-0.5 after 800 steps at 1e-3); AdamW, cosine, 5 % warm-up, batch and budget per "
          "scale as in the README; convergence is a precondition instead")


# ------------------------------------------------------------------ claims
def measure_c1(ctx: CheckContext) -> Evidence:
    shared = _shared(ctx)
    runs, s = shared["runs"], _setup(ctx)
    details: dict[str, Any] = {"fid_floor": shared["data"]["floor"]}
    for t in s.steps:
        for name in ("sle", "se", "cm"):
            details[f"fid_{name}_T{t}"] = _col(runs, f"{name}_T{t}")
    last = max(s.steps)
    gains = [se - sle for se, sle in zip(details[f"fid_se_T{last}"], details[f"fid_sle_T{last}"])]
    return Evidence(values=gains, unit=f"digits-FID(SE) - digits-FID(SLE) at T={last}, per seed", details=details)


def measure_c2(ctx: CheckContext) -> Evidence:
    """Untrained models of the ``speed_arch`` architectures (speed does not depend on the weights): the same
    builder and protocol as ``benchmarks/spherelatent_bench.py``."""
    s = _setup(ctx)
    table = {}
    with torch_threads(1):
        tw, dim, depth = s.speed_arch
        models = matched_generators(tokenizer_width=tw, dim=dim, depth=depth, image_size=s.size,
                                    downsample=s.downsample)
        sle, se = models["sle"], models["se"]
        for t in s.steps:
            table[t] = compare_sampling_speed(sle, se, steps=t, batch=s.speed_batch, repeats=s.speed_repeats)
            ctx.log(f"C2 T={t}: time SE / SLE {table[t]['ratio']:.2f} [{table[t]['lo']:.2f}, {table[t]['hi']:.2f}], "
                    f"FLOPs SE / SLE {table[t]['flops_ratio']:.2f}")
    last = max(s.steps)
    ctx.metrics["speed"] = {str(t): v for t, v in table.items()}
    return Evidence(values=table[last]["ratios"],
                    unit=f"time(SE) / time(SLE) per interleaved pair at T={last} (batch {s.speed_batch}, 1 thread)",
                    details={f"flops_ratio_T{last}": table[last]["flops_ratio"],
                             "speedup_by_T": {str(t): [v["ratio"], v["lo"], v["hi"]] for t, v in table.items()},
                             "flops_ratio_by_T": {str(t): v["flops_ratio"] for t, v in table.items()},
                             "images_per_s": {str(t): {"sle": v["images_per_s_a"], "se": v["images_per_s_b"]}
                                              for t, v in table.items()},
                             "arch": {"tokenizer_width": s.speed_arch[0], "dim": s.speed_arch[1],
                                      "depth": s.speed_arch[2]}})


def measure_c3(ctx: CheckContext) -> Evidence:
    recon = [r["recon"] for r in _shared(ctx)["runs"].values()]
    return Evidence(values=[r["psnr_tokenizer"] - r["psnr_se"] for r in recon],
                    unit="dB: PSNR(frozen tokenizer D(E(x))) - PSNR(SE D(f(E(x))) at r = 0), per seed",
                    details={k: [r[k] for r in recon] for k in recon[0]})


def measure_c4(ctx: CheckContext) -> Evidence:
    runs = _shared(ctx)["runs"]
    sle = _col(runs, "sle_T4")
    details: dict[str, Any] = {"fid_sle_T4": sle}
    present = next(iter(runs.values()))["quality"]
    for key in (k for k in ("sle_T4", "sle_T2", *C4_PEERS, "fm_T2", "cm_T2", "cm_T1", "fm_T1") if k in present):
        details[f"fid_{key}"] = _col(runs, key)
        details[f"precision_{key}"] = _col(runs, key, "precision")
        details[f"recall_{key}"] = _col(runs, key, "recall")
    worst = [min(details[f"fid_{p}"][i] / sle[i] for p in C4_PEERS) for i in range(len(sle))]
    return Evidence(values=worst, unit="min over peers of FID(peer) / FID(SLE, T = 4), per seed", details=details)


_C1_RULE = rules.all_of(*(rules.better(f"fid_sle_T{t}", f"fid_se_T{t}", margin=FID_MARGIN, higher_is_better=False,
                                       min_n=MIN_SEEDS, test="t") for t in (2, 4)))
_C2_RULE = rules.all_of(rules.ratio_at_least(SPEEDUP_MIN, min_n=SPEED_PAIRS_MIN, test="t"),
                        rules.on("flops_ratio_T4", rules.threshold(">", FLOPS_RATIO_MIN, stat="value", min_n=1)))
_C4_RULE = rules.all_of(*(rules.ratio_at_least(1 / PEER_RATIO_MAX, f"fid_{p}", "fid_sle_T4", min_n=MIN_SEEDS,
                                               test="t") for p in C4_PEERS))

CLAIMS = (
    Claim(id="C1", statement="SLE beats the Sphere Encoder in generation quality (gFID) in few steps.",
          paper_value="SLE < SE gFID on AF, OF, ImageNet 256² (SLE's numbers not found; SE ImageNet-L 4.78 at 4 steps)",
          metric="digits-FID(SLE) vs digits-FID(SE) at T = 2 and at T = 4 (paired over seeds; equal parameters and "
                 "CPU budget, EMA weights); latent CM beside it in the details",
          rule=_C1_RULE, measure=measure_c1, scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(PRE_CLASSIFIER, PRE_SE, _converged(("sle", "se")))),
    Claim(id="C2", statement="SLE is faster at inference than the Sphere Encoder (it loops in latent space and "
                             "decodes once; SE decodes T and encodes T − 1 times).",
          paper_value="faster than SE (abstract; no number found)",
          metric="time(SE) / time(SLE) of sample(batch) at T = 4, interleaved pairs at 1 thread (process clock), and "
                 "FLOPs/image SE / SLE; T = 1 and 2 reported",
          rule=_C2_RULE, measure=measure_c2, scales=("quick", "full", "gpu")),
    Claim(id="C3", statement="Decoupling removes the conflict between reconstruction and generation: the frozen "
                             "tokenizer's reconstruction is not traded away.",
          paper_value="(implicit; no number)",
          metric="PSNR of the frozen tokenizer minus PSNR of SE's own reconstruction (r = 0), dB per seed",
          rule=rules.better(margin=PSNR_GAP_MIN_DB, min_n=MIN_SEEDS, test="t",
                            label="the per-seed PSNR gap (tokenizer - SE)"),
          measure=measure_c3, scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(PRE_SE, _converged(("se",)))),
    Claim(id="C4", statement="SLE is competitive with few-step (consistency) and multi-step (flow matching) "
                             "baselines in the same latent.",
          paper_value="competitive with few- and multi-step baselines (abstract; RAE DiT-DH 1.51 FID)",
          metric="FID(peer) / FID(SLE, T = 4) per seed for latent FM at T = 4 (equal steps) and T = 32, and latent "
                 "CM at T = 4; k-NN precision/recall in the details",
          rule=_C4_RULE, measure=measure_c4, scales=("quick", "full", "gpu"), compares_trained=True, tuning=TUNING,
          preconditions=(PRE_CLASSIFIER, PRE_SE, _converged(("sle", "fm", "cm")))),
)

PAPER = Paper(id="P06", slug="spherelatent",
              method="Sphere Latent Encoder",
              title="Efficient Image Synthesis with Sphere Latent Encoder", arxiv="2605.15592",
              claims=CLAIMS, default_seeds={"smoke": 1, "quick": 1, "full": 3, "gpu": 3},
              full_budget_cpu_s=2400,
              full_budget_reason="3 seeds x 5 networks trained to a plateau at 1 thread: 120 CPU-s per generator "
                                 "(130 for SE, 10 for the tokenizer) is ~1,500 CPU-s of training, plus the FID "
                                 "curves (6 points x 4 generators x 800 samples per seed) and C2's timings")
