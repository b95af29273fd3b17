"""Flower beyond simulation: the wlia and mobillm apps on Flower's deployment engine, one ``flower-superlink``
and two ``flower-supernode`` processes on 127.0.0.1 (insecure, free ports, bounded rounds), driven by
``flwr run``; each gives the same results as the simulation for the same seeds.

In flwr 1.42 every message a SuperNode receives starts a fresh ``flwr-clientapp`` process (it imports torch and
the app), so the runs are kept to a handful of messages: wlia 2 rounds x 2 nodes, mobillm 2 nodes x 2 minibatches.
"""

import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

# read when flwr is first imported (the simulation below runs in this process): no telemetry to flower.ai
os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
os.environ.setdefault("FLWR_DISABLE_UPDATE_CHECK", "1")
pytest.importorskip("flwr")

from _flower_deployment import BIN, Federation  # noqa: E402

APPS = Path(__file__).parent / "flower_apps"

pytestmark = pytest.mark.skipif(not (BIN / "flower-superlink").exists() or not (BIN / "flwr").exists(),
                                reason="flwr's command-line tools are not installed beside this interpreter")


@pytest.fixture(scope="module")
def federation(tmp_path_factory):
    with Federation(tmp_path_factory.mktemp("flower"), n_nodes=2) as fed:
        yield fed


def _app(name, tmp_path):
    """A copy of the test app (flwr packs the whole folder) and its module, imported here under its own name."""
    app_dir = shutil.copytree(APPS / name, tmp_path / name)
    spec = importlib.util.spec_from_file_location(f"{name}_app_under_test", app_dir / f"{name}_app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return app_dir, module


@pytest.mark.timeout(420)
def test_wlia_on_the_deployment_engine_matches_the_simulation(federation, tmp_path):
    pytest.importorskip("ray")
    from neurips26.wlia import WLIA
    from neurips26.wlia.flower import run_flower_simulation

    app_dir, app = _app("wlia_deploy", tmp_path)
    out = tmp_path / "wlia.json"
    federation.run(app_dir, {"num-server-rounds": 2, "out": str(out)})
    assert out.exists(), federation.tail()
    got = json.loads(out.read_text())

    attack = WLIA()
    with torch.inference_mode(False):
        strategy = run_flower_simulation(app.model_fn, app.X, app.Y, app.PARTS, rounds=2, attacks=[attack],
                                         penalty=app.penalty(), num_cpus=2, **app.TRAIN)
    assert got["observed"] == [list(o) for o in sorted(strategy.observed)] == [[r, k] for r in (1, 2) for k in (0, 1)]
    for k in (0, 1):
        for r, scores in attack.round_scores(k).items():
            np.testing.assert_allclose(got["scores"][str(k)][str(r)], scores, rtol=1e-5, atol=1e-7)
    final = strategy.result.arrays.to_torch_state_dict()
    assert sorted(got["weights"]) == sorted(final)
    for key, value in final.items():
        np.testing.assert_allclose(np.asarray(got["weights"][key]), value.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.timeout(420)
def test_mobillm_on_the_deployment_engine_matches_the_in_process_server(federation, tmp_path):
    """Asynchronous: the server trains on replies in the order they arrive, which the network decides. The
    deployment must deliver every minibatch of every device exactly once, and its side network must be what
    the same server gives in this process when fed the same payloads in that arrival order (the simulation
    engine differs only in the order)."""
    from neurips26.mobillm.flower import decode_payload, encode_payload

    app_dir, app = _app("mobillm_deploy", tmp_path)
    out = tmp_path / "mobillm.json"
    federation.run(app_dir, {"out": str(out)})
    assert out.exists(), federation.tail()
    got = json.loads(out.read_text())
    assert got["failures"] == []
    arrivals = [(row["device_id"], row["seq"]) for row in got["log"]]
    assert sorted(arrivals) == [(d, s) for d in (0, 1) for s in (0, 1)] == sorted(map(tuple, got["processed"]))
    assert len({row["node"] for row in got["log"]}) == 2  # two SuperNodes served them

    server = app.make_server()
    for (device_id, seq), row in zip(arrivals, got["log"], strict=True):
        client = app.client_fn(device_id)  # a fresh device per message, as each flwr-clientapp process is
        client.seq = seq
        payload = client.step(client.batch_at(client.batch_indices(seq)))
        loss = server.receive(decode_payload(encode_payload(payload)))["loss"]
        assert loss == pytest.approx(row["loss"], rel=1e-5, abs=1e-7)
    want = app.server_state(server)
    assert sorted(got["state"]) == sorted(want)
    for key, value in want.items():
        np.testing.assert_allclose(np.asarray(got["state"][key]), np.asarray(value), rtol=1e-5, atol=1e-7)
