"""Side by side: time, passes and peak memory of the forward-only search, LASER's grid (the peer: its code
hard-codes Hugging Face downloads, so its search is re-implemented on our model as ``LaserExhaustiveSearch``)
and the C2I-style gradient search, on SmolLM2-135M with task (A) of the claim check (next-line choice).

LASER runs restricted ({up, down} of the last ``--last`` blocks x ``--laser-rhos``) and is extrapolated to its
full grid (every one of the 210 matrices x 6 rho = 1,260 cells) from its measured time per cell (a lower
bound: cells in early blocks run more blocks than the prefix-cached late-block cells timed here). Peak memory:
fresh processes (``claims.measure.peak_rss_subprocess`` on ``neurips26.fwdsvd.experiment:memory_probe``), quick-scale
items. Single-threaded; times are process CPU seconds. Not run in CI.

    python benchmarks/fwdsvd_bench.py [--items 24] [--last 8] [--laser-rhos 0.01 0.1] [--split 0] [--tiny]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from neurips26.claims import measure, torch_threads
from neurips26.fwdsvd import (
    DEFAULT_RHO_GRID,
    ForwardOnlyRankSearch,
    GradientSVSearch,
    LaserExhaustiveSearch,
    candidate_linears,
    laser_grid_passes,
)
from neurips26.fwdsvd.experiment import (
    SETTINGS,
    calibration_evaluators,
    candidates,
    index_batches,
    load_model,
    read_probe,
)


def _peaks(scale: str, split: int) -> dict[str, float]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for method in ("forward", "gradient"):
            path = Path(tmp) / f"{method}.json"
            measure.peak_rss_subprocess("neurips26.fwdsvd.experiment:memory_probe", method, scale, str(split),
                                        str(path), env={"OMP_NUM_THREADS": "1"}, timeout_s=900)
            rec = read_probe(path)
            out[method] = max(rec["selection_peak"], rec["eval_peak"]) / 2**20
            out[f"{method}_selection"] = rec["selection_peak"] / 2**20
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=24, help="calibration items")
    ap.add_argument("--last", type=int, default=4, help="candidate blocks: the last N")
    ap.add_argument("--laser-rhos", type=float, nargs="+", default=[0.01, 0.1])
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--tiny", action="store_true", help="tiny random Llama and synthetic items (a dry run)")
    args = ap.parse_args()
    scale = "smoke" if args.tiny else "quick"
    cfg = dict(SETTINGS[scale], n_cal=args.items, n_last=args.last)
    with torch_threads(1):
        model, tok = load_model(scale)
        names, start = candidates(model, cfg)
        laser_names = [n for n in names if n.endswith(("up_proj", "down_proj"))]
        ev_cal, _ = calibration_evaluators(model, tok, cfg, cfg["tasks"][0], args.split, start, test=False)
        grid = cfg["rho_grid"]
        t0 = time.process_time()
        fo = ForwardOnlyRankSearch(names, "last", "dispersion_energy", grid).fit(
            model, ev_cal.prompt_batches(), ev_cal.accuracy).result_
        grad = GradientSVSearch(ev_cal.loss, names, 1, grid).fit(
            model, index_batches(len(ev_cal.items), cfg["grad_batch"]), ev_cal.accuracy).result_
        laser = LaserExhaustiveSearch(laser_names, tuple(args.laser_rhos)).fit(model, ev_cal.accuracy).result_
        total = time.process_time() - t0
    full_cells = laser_grid_passes(len(candidate_linears(model, "all")), len(DEFAULT_RHO_GRID))
    per_cell = laser.cpu_s / laser.forward_passes
    laser_full_s = per_cell * (full_cells + 1)
    peaks = _peaks(scale, args.split)
    print(f"fwdsvd bench: {len(ev_cal.items)} calibration items, {len(names)} candidates (last {args.last} "
          f"blocks' MLP), rho grid {grid}; 1 thread; {total:.0f} s CPU in all\n")
    rows = [("forward-only", fo.cpu_s, fo.passes_used, peaks["forward"], fo.reduction),
            ("gradient (C2I-style)", grad.cpu_s, grad.passes_used, peaks["gradient"], grad.reduction),
            (f"LASER restricted ({laser.forward_passes - 1} cells)", laser.cpu_s, laser.passes_used, float("nan"),
             laser.reduction),
            (f"LASER full grid ({full_cells} cells, extrapolated)", laser_full_s, full_cells + 1, float("nan"), None)]
    print(f"{'method':44s} {'CPU s':>8s} {'passes':>7s} {'peak MiB':>9s} {'x time vs fo':>12s}  pick")
    for name, cpu, passes, peak, red in rows:
        pick = "-" if red is None and "extrapolated" in name else ("base" if red is None else
                                                                    f"{red.module}@{red.rho:g}")
        print(f"{name:44s} {cpu:8.1f} {passes:7.0f} {peak:9.0f} {cpu / fo.cpu_s:12.2f}  {pick}")
    print(f"\nratios: gradient/forward-only time {grad.cpu_s / fo.cpu_s:.2f}x, peak memory "
          f"{peaks['gradient'] / peaks['forward']:.3f}x (selection phase {peaks['gradient_selection']:.0f} vs "
          f"{peaks['forward_selection']:.0f} MiB); LASER full grid/forward-only time {laser_full_s / fo.cpu_s:.1f}x, "
          f"passes {(full_cells + 1) / fo.passes_used:.1f}x")
    print(f"calibration accuracy: base {fo.base_score:.3f}, forward-only {fo.best_score:.3f}, gradient "
          f"{grad.best_score:.3f}, LASER restricted {laser.best_score:.3f}")


if __name__ == "__main__":
    main()
