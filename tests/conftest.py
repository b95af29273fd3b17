"""Test-wide settings: a fixed, small torch thread count (2-core CI machines), the Agg backend, no hub
access, and Triton's CPU interpreter when there is no CUDA device (it must be chosen before the first
``import triton``, which is why it is set here, before any test module is imported)."""

import os
import sys
from pathlib import Path

# Shared test helpers (tests/_badinput.py) import as top-level modules under --import-mode=importlib.
sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# no usage reports from the Flower and Ray simulations the tests start
os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import torch  # noqa: E402

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))

# CI runs hypothesis derandomized (same examples every run, so a landing never hinges on luck);
# locally each run explores new examples. Select with HYPOTHESIS_PROFILE=ci. Neither profile has a deadline:
# hypothesis' default 200 ms per example is a wall-clock assertion, which fails on a loaded 2-core machine.
from hypothesis import settings  # noqa: E402

settings.register_profile("local", deadline=None)
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "local"))


# Tests that read real data skip when it is absent (neurips26.data.testing); `--require-data` or
# NEURIPS26_REQUIRE_DATA=1 (set by CI, which has ../shared) turns such a skip into a failure.
def pytest_addoption(parser):
    parser.addoption("--require-data", action="store_true",
                     help="fail, instead of skip, tests whose dataset is absent (NEURIPS26_REQUIRE_DATA=1)")


def pytest_configure(config):
    if config.getoption("--require-data", default=False):
        os.environ["NEURIPS26_REQUIRE_DATA"] = "1"
