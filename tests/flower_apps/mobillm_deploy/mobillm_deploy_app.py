"""Test app for Flower's deployment engine: asynchronous side-tuning. Each SuperNode is one device (node 0 a
tiny Llama, node 1 a tiny BERT, both random and seeded) that answers ``query`` messages with the quantised
activations of the minibatch asked for; the ServerApp pushes one query per node and trains the side network on
each reply as it arrives (no rounds). It writes the arrival log and the final side network and aligners to
``run_config["out"]`` (JSON)."""

import json

import torch
from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from neurips26.mobillm import (
    DeviceClient,
    FeatureAligner,
    HiddenStates,
    SideNetwork,
    SideTuningServer,
    planted_task,
    subset,
)
from neurips26.mobillm.flower import make_client_app, make_server_app
from neurips26.nn import Llama, LlamaConfig
from neurips26.nn.minilm import BertConfig, BertEncoder

N_NODES, N_SAMPLES, D_SIDE = 2, 64, 16
TYPES = {"llama": ([1, 2, 3], 32), "bert": ([0, 1, 2], 24)}  # layers read, width


def backbone(btype: str) -> torch.nn.Module:
    torch.manual_seed(0 if btype == "llama" else 1)
    if btype == "llama":
        return Llama(LlamaConfig(vocab_size=64, d_model=32, n_layers=3, n_heads=4, max_seq_len=64)).eval()
    return BertEncoder(BertConfig(vocab_size=64, hidden_size=24, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=48, max_position_embeddings=64)).eval()


def client_fn(pid: int) -> DeviceClient:
    """Device ``pid``: its backbone type and its shard of the planted task (the same in every process)."""
    btype = "llama" if pid % 2 == 0 else "bert"
    data = subset(planted_task(N_SAMPLES, seed=0), torch.arange(pid, N_SAMPLES, N_NODES))
    return DeviceClient(HiddenStates(backbone(btype)), TYPES[btype][0], positions="mean", quant_bits=8,
                        batch_size=16, backbone_type=btype, device_id=pid, data=data, passes=1, seed=0)


def make_server() -> SideTuningServer:
    torch.manual_seed(0)
    aligners = {b: FeatureAligner(3, d, 3, D_SIDE) for b, (_, d) in TYPES.items()}
    return SideTuningServer(SideNetwork(d_side=D_SIDE, n_layers=3), aligners, lr=3e-3, cache=True, seed=0)


def server_state(server: SideTuningServer) -> dict[str, list]:
    return {k: v.tolist() for k, v in server.trainable.state_dict().items()}


client_app = make_client_app(client_fn)
server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    server = make_server()
    make_server_app(server, min_nodes=N_NODES, poll_s=0.05)(grid, context)
    out = {"log": server.flower_log, "failures": [list(map(str, f)) for f in server.flower_failures],
           "processed": [list(p) for p in server.processed], "state": server_state(server)}
    with open(str(context.run_config["out"]), "w", encoding="utf-8") as handle:
        json.dump(out, handle)
