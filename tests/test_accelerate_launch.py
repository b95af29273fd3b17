"""The Hugging Face trainers under ``accelerate launch`` with 2 CPU processes (gloo).

``accelerate launch --multi_gpu --num_processes 2`` is accelerate's torch.distributed launcher (its ``--cpu``
path starts one process, or goes through mpirun); on a machine without CUDA the trainers (``use_cpu=True``,
``ddp_backend="gloo"``) run data-parallel on CPU processes.

* ``TSTHFTrainer``: each rank reads its lanes of the row stream; 2 processes with 2 rows each end with the
  weights and per-objective losses of 1 process reading all 4 rows a step.
* ``DualKVGRPOTrainer``: TRL's sampler gives each rank its own prompt groups; with the same seed the packed
  trainer ends with the weights of stock ``trl.GRPOTrainer`` under the same launch, identical on both ranks.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("accelerate")
pytest.importorskip("transformers")

from _flower_deployment import free_port  # noqa: E402

TESTS = Path(__file__).parent
ACCELERATE = Path(sys.executable).parent / "accelerate"


def _launch(script: Path, *args: str, tmp_path: Path, timeout: float = 300) -> None:
    if not ACCELERATE.exists():
        pytest.skip("the accelerate command is not installed beside this interpreter")
    # a private HF_HOME: no user accelerate config (default_config.yaml) changes the launch
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HOME=str(tmp_path / "hf_home"), HF_HUB_OFFLINE="1")
    cmd = [str(ACCELERATE), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "--num_cpu_threads_per_process", "1",
           "--main_process_port", str(free_port()), str(script), *args]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.mark.timeout(420)
def test_tst_hf_trainer_under_accelerate_launch_equals_one_process(tmp_path):
    sys.path.insert(0, str(TESTS / "tst"))
    from tst_hf_ddp_worker import hf_run

    single = hf_run(str(tmp_path / "one"))
    out = tmp_path / "two.json"
    _launch(TESTS / "tst" / "tst_hf_ddp_worker.py", str(tmp_path / "two"), str(out), tmp_path=tmp_path)
    two = json.loads(out.read_text())
    assert two["world_size"] == 2 and single["world_size"] == 1
    assert [x is not None for x in two["mce_loss"]] == [True] * 3 + [False] * 3
    assert two["mce_loss"][:3] == pytest.approx(single["mce_loss"][:3], rel=1e-5)
    assert two["ntp_loss"][3:] == pytest.approx(single["ntp_loss"][3:], rel=1e-5)
    assert two["param_abs"] == pytest.approx(single["param_abs"], rel=1e-5)
    for name, values in single["params"].items():
        assert two["params"][name] == pytest.approx(values, rel=1e-4, abs=1e-5), name


@pytest.mark.timeout(420)
def test_dualkv_grpo_trainer_under_accelerate_launch_equals_stock_grpo(tmp_path):
    pytest.importorskip("trl")
    pytest.importorskip("datasets")
    _launch(TESTS / "_accelerate_grpo_worker.py", str(tmp_path), tmp_path=tmp_path)
    ranks = [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in (0, 1)]
    from _accelerate_grpo_worker import PROMPTS
    from _tiny_grpo import tiny_qwen3

    init = {k: v.double().flatten().numpy() for k, v in tiny_qwen3().state_dict().items()}
    for rank, run in enumerate(ranks):
        for name in ("stock", "dualkv"):
            assert (run[name]["world_size"], run[name]["rank"], run[name]["steps"]) == (2, rank, 2)
        # the same prompt groups for both trainers on this rank: 2 steps x 1 group of num_generations=4 rows
        assert run["dualkv"]["prompts"] == run["stock"]["prompts"]
        assert all(len(set(batch)) == 1 and len(batch) == 4 for batch in run["stock"]["prompts"])
    # sharded by rank: together the two ranks saw every prompt once, each its own
    seen = [batch[0] for run in ranks for batch in run["stock"]["prompts"]]
    assert sorted(seen) == sorted(PROMPTS)
    moved = 0.0
    for key, start in init.items():
        stock0 = np.asarray(ranks[0]["stock"]["params"][key])
        for run in ranks:  # DDP: both ranks hold the same weights
            np.testing.assert_array_equal(np.asarray(run["stock"]["params"][key]), stock0)
            np.testing.assert_allclose(np.asarray(run["dualkv"]["params"][key]), stock0, rtol=1e-4, atol=2e-5)
        moved = max(moved, float(np.abs(stock0 - start).max()))
    assert moved > 1e-3  # the two steps trained the model
