"""Flower (flwr >= 1.20, Message API) apps for asynchronous side-tuning: push/pull, never ``send_and_receive``.

* :func:`make_client_app` — a ``ClientApp`` whose ``query`` handler runs the node's frozen backbone on the
  minibatch the server asks for (``seq``) and replies with the quantised activations (an ``ArrayRecord``) and
  their description plus the device's virtual compute + upload time (a ``ConfigRecord``). The handler is
  stateless: minibatch ``seq`` is a pure function of the node's data, seed and ``seq``
  (:meth:`~.device.DeviceClient.batch_indices`), so any Ray actor can serve any message.
* :func:`make_server_app` — a ``ServerApp`` whose ``main`` pushes one query per node, then loops on
  ``grid.pull_messages``: every reply is handed to :meth:`~.side.SideTuningServer.receive` at once and that node
  gets its next query immediately. There is no round and no barrier; a slow node delays only itself.
* :func:`run_flower_simulation` — both on Flower's simulation engine (Ray; the ``fl`` extra).

Replies are processed in the order Flower delivers them (real concurrency), not in virtual time; for the
virtual clock use :class:`~.simulate.AsyncSimulator`, which runs the same ``DeviceClient``/``SideTuningServer``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import torch

from neurips26.constraints import Int, Optional, validate

from .device import DeviceClient
from .payload import ActivationPayload
from .side import SideTuningServer
from .simulate import DeviceProfile

try:  # Flower is the optional `fl` extra
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
except ImportError as _err:  # pragma: no cover - exercised only without flwr
    raise ImportError("neurips26.mobillm.flower needs Flower: pip install 'neurips26[fl]' "
                      "(flwr[simulation] for the simulation engine)") from _err

__all__ = ["decode_payload", "encode_payload", "make_client_app", "make_server_app", "run_flower_simulation"]

_TENSORS = ("codes", "scales", "values", "outlier_idx", "outlier_val")


def encode_payload(payload: ActivationPayload, *, virtual_s: float = 0.0) -> RecordDict:
    """An :class:`ActivationPayload` as Flower records: tensors in ``"acts"``, its description in ``"meta"``."""
    arrays = {k: v for k, v in payload.parts.items()}
    arrays["labels"], arrays["sample_ids"] = payload.labels, payload.sample_ids
    if payload.token_mask is not None:
        arrays["token_mask"] = payload.token_mask.to(torch.uint8)
    meta = ConfigRecord({"done": False, "backbone_type": payload.backbone_type, "device_id": payload.device_id,
                         "seq": payload.seq, "quant_bits": payload.quant_bits, "shape": list(payload.shape),
                         "positions": payload.positions, "outliers": payload.outliers,
                         "nbytes": payload.nbytes, "virtual_s": float(virtual_s)})
    return RecordDict({"acts": ArrayRecord(arrays), "meta": meta})


def decode_payload(content: RecordDict) -> ActivationPayload:
    """Inverse of :func:`encode_payload`."""
    meta = content["meta"]
    arrays = content["acts"].to_torch_state_dict()
    mask = arrays.get("token_mask")
    return ActivationPayload(parts={k: arrays[k] for k in _TENSORS if k in arrays}, shape=tuple(meta["shape"]),
                             quant_bits=int(meta["quant_bits"]), labels=arrays["labels"],
                             sample_ids=arrays["sample_ids"], backbone_type=str(meta["backbone_type"]),
                             device_id=int(meta["device_id"]), seq=int(meta["seq"]), positions=str(meta["positions"]),
                             token_mask=None if mask is None else mask.bool(), outliers=int(meta["outliers"]))


def make_client_app(client_fn: Callable[[int], DeviceClient],
                    profile_fn: Callable[[int], DeviceProfile] | None = None) -> ClientApp:
    """A ``ClientApp``: ``client_fn(partition_id) -> DeviceClient`` (with its ``data``) builds the node's device
    (once per process); each ``query`` message ``{"config": {"seq": k}}`` gets minibatch ``k``'s payload, or
    ``meta.done = True`` when the device has no batch ``k``."""
    app = ClientApp()
    devices: dict[int, DeviceClient] = {}

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        pid = int(context.node_config["partition-id"])
        if pid not in devices:
            devices[pid] = client_fn(pid)
        device = devices[pid]
        seq = int(msg.content["config"]["seq"])
        idx = device.batch_indices(seq)
        if idx is None:
            content = RecordDict({"meta": ConfigRecord({"done": True, "device_id": device.device_id, "seq": seq})})
            return Message(content=content, reply_to=msg)
        device.seq = seq
        before = device.flops
        payload = device.step(device.batch_at(idx))
        virtual = 0.0
        if profile_fn is not None:
            p = profile_fn(pid)
            virtual = p.compute_s(device.flops - before) + p.up_s(payload.nbytes)
        return Message(content=encode_payload(payload, virtual_s=virtual), reply_to=msg)

    return app


@validate(max_updates=Optional(Int(low=1)))
def make_server_app(server: SideTuningServer, *, max_updates: int | None = None, poll_s: float = 0.02,
                    min_nodes: int = 1, wait_s: float = 120.0,
                    on_update: Callable[[dict[str, Any]], None] | None = None) -> ServerApp:
    """A ``ServerApp`` driving ``server`` asynchronously over every connected node (see the module docstring).

    ``server.flower_log`` collects one dict per update (node, device, seq, loss, virtual_s); ``max_updates``
    stops early; ``on_update(row)`` is called after each update. The app first waits (up to ``wait_s``) until
    ``min_nodes`` nodes are connected; nodes that connect later are not queried.
    """
    app = ServerApp()
    server.flower_log = []
    server.flower_failures = []

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        deadline = time.monotonic() + wait_s
        nodes = sorted(grid.get_node_ids())
        while len(nodes) < min_nodes and time.monotonic() < deadline:
            time.sleep(max(poll_s, 0.05))
            nodes = sorted(grid.get_node_ids())
        if len(nodes) < min_nodes:
            raise RuntimeError(f"only {len(nodes)} Flower node(s) connected within {wait_s} s, min_nodes={min_nodes}")
        next_seq = {n: 0 for n in nodes}
        pending: dict[str, int] = {}

        def push(node: int) -> None:
            msg = Message(content=RecordDict({"config": ConfigRecord({"seq": next_seq[node]})}), dst_node_id=node,
                          message_type="query")
            for mid in grid.push_messages([msg]):
                pending[mid] = node

        for node in nodes:
            push(node)
        while pending and (max_updates is None or len(server.flower_log) < max_updates):
            replies = list(grid.pull_messages(list(pending)))
            if not replies:
                time.sleep(poll_s)
                continue
            for reply in replies:
                node = pending.pop(reply.metadata.reply_to_message_id)
                if reply.has_error():
                    server.flower_failures.append((node, str(reply.error)))
                    continue
                if reply.content["meta"]["done"]:
                    continue
                payload = decode_payload(reply.content)
                metrics = server.receive(payload)
                row = {"node": node, "device_id": payload.device_id, "seq": payload.seq, "loss": metrics["loss"],
                       "virtual_s": float(reply.content["meta"]["virtual_s"])}
                server.flower_log.append(row)
                if on_update is not None:
                    on_update(row)
                next_seq[node] += 1
                if max_updates is None or len(server.flower_log) < max_updates:
                    push(node)

    return app


@validate(n_devices=Int(low=1), max_updates=Optional(Int(low=1)))
def run_flower_simulation(server: SideTuningServer, client_fn: Callable[[int], DeviceClient], n_devices: int, *,
                          profile_fn: Callable[[int], DeviceProfile] | None = None, max_updates: int | None = None,
                          num_cpus: int = 2, client_cpus: float = 1.0, quiet: bool = True) -> SideTuningServer:
    """Run the two apps on Flower's simulation engine with ``n_devices`` supernodes; returns ``server`` (trained,
    with ``flower_log``). Raises ``RuntimeError`` if any node failed or nothing arrived."""
    from flwr.simulation import run_simulation

    backend_config = {"client_resources": {"num_cpus": client_cpus, "num_gpus": 0.0},
                      "init_args": {"num_cpus": num_cpus, "include_dashboard": False, "logging_level": "error",
                                    "log_to_driver": False}}
    logger = logging.getLogger("flwr")
    old = logger.level
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    try:
        run_simulation(server_app=make_server_app(server, max_updates=max_updates, min_nodes=n_devices),
                       client_app=make_client_app(client_fn, profile_fn), num_supernodes=n_devices,
                       backend_config=backend_config)
    finally:
        logger.setLevel(old)
    if server.flower_failures:
        raise RuntimeError(f"{len(server.flower_failures)} Flower node(s) failed: {server.flower_failures[:3]}")
    if not server.flower_log:
        raise RuntimeError("the Flower simulation ended without any update (see the Flower/Ray log)")
    return server
