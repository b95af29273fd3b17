"""fwdsvd on the ``neurips26.bench`` harness: CPU time, passes and peak memory of the forward-only rank search against
the C2I-style gradient search and LASER's exhaustive grid, on SmolLM2-135M with task (A) of the claim check
(next-line choice). Writes results/fwdsvd/bench.json (1 thread, process clock, interleaved pairs, t-interval).

    .venv/bin/python benchmarks/fwdsvd_bench.py [--items 16] [--last 4] [--laser-rhos 0.01 0.1] [--split 0]
                                                [--repeats 3] [--tiny]

Peers, all our re-implementations on our model: LASER's code hard-codes Hugging Face downloads, so its search is
``LaserExhaustiveSearch``; the gradient search follows C2I. The forward-only search is timed against the gradient
search in interleaved pairs (each call a whole ``fit``; use few ``--repeats``). LASER runs restricted ({up, down} of
the last ``--last`` blocks x ``--laser-rhos``) once and is extrapolated to its full grid (every one of the 210
matrices x 6 rho = 1,260 cells) from its measured time per cell: a lower bound, since cells in early blocks run
more blocks than the prefix-cached late-block cells timed here. Passes (a backward counts 2 forwards) are
deterministic counts; peak memory is a fresh process's peak RSS (``neurips26.fwdsvd.experiment:memory_probe``, one
run each). No FLOP limit: a search is hundreds of small forwards, not one kernel.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from neurips26.bench import Bench
from neurips26.claims import measure
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


def _peaks(scale: str, split: int, threads: int) -> dict[str, float]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for method in ("forward", "gradient"):
            path = Path(tmp) / f"{method}.json"
            measure.peak_rss_subprocess("neurips26.fwdsvd.experiment:memory_probe", method, scale, str(split),
                                        str(path), env={"OMP_NUM_THREADS": str(threads)}, timeout_s=900)
            rec = read_probe(path)
            out[method] = max(rec["selection_peak"], rec["eval_peak"]) / 2**20
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=16, help="calibration items")
    ap.add_argument("--last", type=int, default=4, help="candidate blocks: the last N")
    ap.add_argument("--laser-rhos", type=float, nargs="+", default=[0.01, 0.1])
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--tiny", action="store_true", help="tiny random Llama and synthetic items (a dry run)")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-RSS subprocesses")
    args, _ = ap.parse_known_args()
    argv = sys.argv[1:] if "--repeats" in sys.argv else [*sys.argv[1:], "--repeats", "3"]
    bench = Bench("fwdsvd", description="forward-only rank search vs the gradient search (C2I-style) and LASER's grid "
                  f"(ours), SmolLM2-135M, task A, {args.items} calibration items, last {args.last} blocks' MLP",
                  argv=argv)
    scale = "smoke" if args.tiny else "quick"
    cfg = dict(SETTINGS[scale], n_cal=args.items, n_last=args.last)
    model, tok = load_model(scale)
    names, start = candidates(model, cfg)
    laser_names = [n for n in names if n.endswith(("up_proj", "down_proj"))]
    ev_cal, _ = calibration_evaluators(model, tok, cfg, cfg["tasks"][0], args.split, start, test=False)
    grid = cfg["rho_grid"]
    fits = {}

    def forward_only() -> None:
        fits["fo"] = ForwardOnlyRankSearch(names, "last", "dispersion_energy", grid).fit(
            model, ev_cal.prompt_batches(), ev_cal.accuracy).result_

    def gradient() -> None:
        fits["grad"] = GradientSVSearch(ev_cal.loss, names, 1, grid).fit(
            model, index_batches(len(ev_cal.items), cfg["grad_batch"]), ev_cal.accuracy).result_

    bench.compare(f"rank search over {len(names)} candidates x {len(grid)} rho: forward-only vs gradient",
                  ours=forward_only, peer=gradient, peer_name="C2I-style gradient search", peer_kind="ours")
    with bench.limit_threads():
        laser = LaserExhaustiveSearch(laser_names, tuple(args.laser_rhos)).fit(model, ev_cal.accuracy).result_
    fo, grad = fits["fo"], fits["grad"]
    full_cells = laser_grid_passes(len(candidate_linears(model, "all")), len(DEFAULT_RHO_GRID))
    laser_full_s = laser.cpu_s / laser.forward_passes * (full_cells + 1)
    bench.count("calibration passes of one search: forward-only vs gradient", ours=fo.passes_used,
                peer=grad.passes_used, peer_name="C2I-style gradient search", peer_kind="ours",
                unit="pass-equivalents (a backward = 2 forwards)")
    bench.count(f"calibration passes: forward-only vs LASER's full grid ({full_cells} cells)", ours=fo.passes_used,
                peer=full_cells + 1, peer_name="LASER exhaustive grid", peer_kind="ours", unit="pass-equivalents")
    bench.count(f"CPU seconds: forward-only vs LASER's full grid (extrapolated from {laser.forward_passes - 1} "
                "restricted cells; a lower bound)", ours=fo.cpu_s, peer=laser_full_s, peer_name="LASER exhaustive grid",
                peer_kind="ours", unit="CPU seconds, one run")
    bench.count("calibration accuracy of the chosen edit", ours=fo.best_score, peer=grad.best_score,
                peer_name="C2I-style gradient search", peer_kind="ours", unit="accuracy", lower_is_better=False,
                note=f"unedited model {fo.base_score:.3f}; LASER restricted {laser.best_score:.3f}")
    if not args.no_memory:
        peaks = _peaks(scale, args.split, bench.threads)
        bench.count("peak RSS of a fresh process (selection and evaluation)", ours=peaks["forward"],
                    peer=peaks["gradient"], peer_name="C2I-style gradient search", peer_kind="ours",
                    unit="MiB (VmHWM, one run)")
    bench.write()


if __name__ == "__main__":
    main()
