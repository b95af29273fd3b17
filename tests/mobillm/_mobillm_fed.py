"""A tiny heterogeneous federation on the planted task: 4 devices, a tiny Llama and a tiny BERT backbone."""

import torch
from _mobillm_models import tiny_bert, tiny_llama

from neurips26.mobillm import (
    DeviceClient,
    DeviceProfile,
    FeatureAligner,
    HiddenStates,
    SideNetwork,
    SideTuningServer,
    evaluate_side,
    planted_task,
    subset,
)

TYPES = {"llama": (HiddenStates(tiny_llama()), [1, 2, 3], 32), "bert": (HiddenStates(tiny_bert()), [0, 1, 2], 24)}
PROFILES = [DeviceProfile(2e8, 2e6, 4e6), DeviceProfile(1e8, 1e6, 2e6), DeviceProfile(3e8, 5e6, 1e7),
            DeviceProfile(1e7, 1e6, 2e6)]  # the last is a 10x straggler


def federation(seed: int = 0, n: int = 400, cache: bool = True, passes: int | None = 1, d_side: int = 16,
               window: int = 1, norm: str = "running"):
    data = planted_task(n, seed=seed)
    test = planted_task(200, seed=seed + 100)
    clients = []
    for j in range(4):
        btype = "llama" if j % 2 == 0 else "bert"
        bb, layers, _ = TYPES[btype]
        clients.append(DeviceClient(bb, layers, positions="mean", quant_bits=8, batch_size=16, backbone_type=btype,
                                    device_id=j, data=subset(data, torch.arange(j, n, 4)), passes=passes, seed=seed))
    torch.manual_seed(seed)
    aligners = {b: FeatureAligner(3, d, 3, d_side, window=window, norm=norm) for b, (_, _, d) in TYPES.items()}
    server = SideTuningServer(SideNetwork(d_side=d_side, n_layers=3), aligners, lr=3e-3, cache=cache, seed=seed)
    test_feats = {}
    for btype, (bb, layers, _) in TYPES.items():
        probe = DeviceClient(bb, layers, positions="mean", quant_bits=32, backbone_type=btype)
        test_feats[btype] = (probe.features(test), test["labels"])

    def eval_fn(srv):
        return evaluate_side(srv.aligners, srv.side, test_feats)

    return clients, server, eval_fn, test_feats
