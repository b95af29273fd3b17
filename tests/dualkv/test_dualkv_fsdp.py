"""A 2-process FSDP2 (gloo, CPU) DualKV step equals the single-process step on the same data.

Slow (about 25 s on the shared 2-core machine, mostly starting two interpreters with torch and transformers):
``pytest -m slow tests/dualkv/test_dualkv_fsdp.py``."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")


@pytest.mark.slow
def test_fsdp_two_processes_equal_one_process(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from dualkv_fsdp_worker import single_process_step

    single = single_process_step()
    out = tmp_path / "fsdp.pt"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(Path(__file__).parent / "dualkv_fsdp_worker.py"), str(out)]
    proc = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    fsdp = torch.load(out, weights_only=True)
    assert fsdp["losses"] == pytest.approx(single["losses"], rel=1e-6)
    assert fsdp["params"].keys() == single["params"].keys()
    for name, ref in single["params"].items():
        torch.testing.assert_close(fsdp["params"][name], ref, rtol=1e-5, atol=1e-6, msg=name)
    # the step did something: compare against the initial weights
    from dualkv_fsdp_worker import make_model

    init = dict(make_model().named_parameters())
    moved = max(float((single["params"][n] - init[n]).abs().max()) for n in init)
    assert moved > 1e-3
