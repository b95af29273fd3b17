"""Flower Message-API apps: push/pull without a barrier, payloads round-trip through Flower records.

The fast tests drive the real ServerApp/ClientApp functions through a minimal in-process Grid (no Ray); the
``slow`` test runs Flower's simulation engine."""

import pytest
import torch

pytest.importorskip("flwr")

from _mobillm_fed import PROFILES, federation  # noqa: E402

from neurips26.mobillm.flower import decode_payload, encode_payload, make_client_app, make_server_app  # noqa: E402


@pytest.fixture
def _task_identity():
    """Flower's message constructors read a process-wide task identity that its runtimes set."""
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id)
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 0, 0
    yield
    TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = saved


class _StaggeredGrid:
    """Delivers each node's reply only after ``delay[node]`` pulls: slow nodes answer late, as on a real
    network. ``send_and_receive`` (the barrier) raises."""

    def __new__(cls, *args, **kwargs):
        from flwr.serverapp import Grid

        class _Impl(Grid):
            def __init__(self, client_app, delays):
                self.client_app, self.delays = client_app, delays
                self.nodes = {100 + k: k for k in range(len(delays))}
                self.inbox, self.pulls, self._run = {}, 0, None

            def set_run(self, run):
                self._run = run

            @property
            def run(self):
                return self._run

            def create_message(self, *a, **k):  # pragma: no cover
                raise NotImplementedError

            def get_node_ids(self):
                return list(self.nodes)

            def push_messages(self, messages):
                from uuid import uuid4

                from flwr.app import Context, RecordDict

                ids = []
                for msg in messages:
                    mid = str(uuid4())
                    msg.metadata.__dict__["_message_id"] = mid
                    node = msg.metadata.dst_node_id
                    ctx = Context(run_id=0, node_id=node, state=RecordDict(), run_config={},
                                  node_config={"partition-id": self.nodes[node]})
                    reply = self.client_app(msg, ctx)
                    reply.metadata.__dict__["_reply_to_message_id"] = mid
                    self.inbox[mid] = (self.pulls + self.delays[self.nodes[node]], reply)
                    ids.append(mid)
                return ids

            def pull_messages(self, message_ids):
                self.pulls += 1
                ready = [m for m in message_ids if m in self.inbox and self.inbox[m][0] <= self.pulls]
                return [self.inbox.pop(m)[1] for m in ready]

            def send_and_receive(self, messages, *, timeout=None):
                raise AssertionError("send_and_receive is the barrier and must not be used")

        return _Impl(*args, **kwargs)


def test_payload_round_trips_through_flower_records(_task_identity, batch, llama):
    from neurips26.mobillm import DeviceClient

    for bits, positions in ((4, "pivot"), (8, "all"), (16, "mean")):
        client = DeviceClient(llama, [1, 3], positions=positions, quant_bits=bits, backbone_type="l", device_id=2)
        p = client.step(batch)
        q = decode_payload(encode_payload(p, virtual_s=1.5))
        torch.testing.assert_close(q.dequantize(), p.dequantize(), rtol=0, atol=0)
        assert (q.backbone_type, q.device_id, q.seq, q.shape, q.nbytes) == ("l", 2, 0, p.shape, p.nbytes)


def test_server_app_is_asynchronous_and_processes_each_payload_once(_task_identity):
    clients, server, eval_fn, _ = federation()
    by_pid = {c.device_id: c for c in clients}
    app = make_client_app(lambda pid: by_pid[pid], profile_fn=lambda pid: PROFILES[pid])
    grid = _StaggeredGrid(app, delays=[1, 1, 1, 6])  # node 3 answers six times slower
    from flwr.app import Context, RecordDict

    server_app = make_server_app(server, poll_s=0.0)
    server_app(grid, Context(run_id=0, node_id=0, state=RecordDict(), run_config={}, node_config={}))
    log = server.flower_log
    want = sorted((c.device_id, s) for c in clients for s in range(-(-c.n_samples // c.batch_size)))
    assert sorted((r["device_id"], r["seq"]) for r in log) == want == sorted(server.processed)
    order = [r["device_id"] for r in log]
    assert max(i for i, d in enumerate(order) if d == 0) < max(i for i, d in enumerate(order) if d == 3)
    assert sum(1 for d in order[: len(order) // 2] if d == 3) < order.count(3) / 2  # fast nodes are not held back
    assert all(r["virtual_s"] > 0 for r in log)
    assert eval_fn(server) > 0.7


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_flower_simulation_engine_runs_the_same_apps():
    pytest.importorskip("ray")
    from neurips26.mobillm.flower import run_flower_simulation

    clients, server, eval_fn, _ = federation()
    by_pid = {c.device_id: c for c in clients}
    run_flower_simulation(server, lambda pid: by_pid[pid], 4, profile_fn=lambda pid: PROFILES[pid], num_cpus=2)
    want = sorted((c.device_id, s) for c in clients for s in range(-(-c.n_samples // c.batch_size)))
    assert sorted((r["device_id"], r["seq"]) for r in server.flower_log) == want
    assert eval_fn(server) > 0.7
