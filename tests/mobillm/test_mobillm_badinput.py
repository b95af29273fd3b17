"""Bad input on every public entry point: a clear error naming the argument, and nothing changed."""

import math

import pytest
import torch
from _mobillm_fed import PROFILES, federation
from _mobillm_models import tiny_llama

from _badinput import BadInput, check_bad_inputs
from neurips26.mobillm import (
    ActivationPayload,
    AsyncSimulator,
    DeviceClient,
    DeviceProfile,
    FeatureAligner,
    FedAvgLoRABaseline,
    HiddenStates,
    SideNetwork,
    SideTuningServer,
    dirichlet_partition,
    planted_task,
    quantize_absmax,
    subset,
)


def _client(llama):
    return DeviceClient(llama, [1, 3], quant_bits=8, backbone_type="l", device_id=1)


CTOR = [
    BadInput("layer-out-of-range", kwargs={"layers": [1, 4]}, names="layers"),
    BadInput("layer-negative", kwargs={"layers": [-1]}, names="layers"),
    BadInput("layers-empty", kwargs={"layers": []}, names="layers"),
    BadInput("layers-float", kwargs={"layers": [1.0]}, names="layers"),
    BadInput("positions", kwargs={"positions": "first"}, names="positions"),
    BadInput("quant-bits-3", kwargs={"quant_bits": 3}, names="quant_bits"),
    BadInput("quant-bits-bool", kwargs={"quant_bits": True}, names="quant_bits"),
    BadInput("batch-size-0", kwargs={"batch_size": 0}, names="batch_size"),
    BadInput("outliers-fp16", kwargs={"quant_bits": 16, "outliers": 2}, names="outliers"),
    BadInput("passes-0", kwargs={"passes": 0}, names="passes"),
    BadInput("backbone", kwargs={"backbone": "minilm"}, names="backbone"),
    BadInput("data-no-mask", kwargs={"data": {"input_ids": torch.ones(2, 3, dtype=torch.long),
                                              "labels": torch.zeros(2, dtype=torch.long)}}, names="attention_mask"),
]


@pytest.mark.parametrize("case", CTOR, ids=lambda c: c.id)
def test_device_client_refuses_bad_settings(case, llama):
    kwargs = {"backbone": llama, "layers": [1, 3], **case.kwargs}
    check_bad_inputs(lambda: DeviceClient(**kwargs), BadInput(case.id, names=case.names), target=llama)


def _batch(**change):
    b = {"input_ids": torch.randint(4, 60, (3, 5)), "attention_mask": torch.ones(3, 5, dtype=torch.long),
         "labels": torch.tensor([0, 1, 0])}
    b.update(change)
    return {k: v for k, v in b.items() if v is not None}


left = torch.ones(3, 5, dtype=torch.long)
left[0, 0] = 0
empty = torch.ones(3, 5, dtype=torch.long)
empty[1] = 0
STEP = [
    BadInput("no-attention-mask", args=(_batch(attention_mask=None),), names="attention_mask"),
    BadInput("not-a-dict", args=([1, 2, 3],), names="batch"),
    BadInput("no-labels", args=(_batch(labels=None),), names="labels"),
    BadInput("float-ids", args=(_batch(input_ids=torch.rand(3, 5)),), names="input_ids"),
    BadInput("mask-shape", args=(_batch(attention_mask=torch.ones(3, 4, dtype=torch.long)),), names="attention_mask"),
    BadInput("left-padded", args=(_batch(attention_mask=left),), names="attention_mask"),
    BadInput("empty-row", args=(_batch(attention_mask=empty),), names="attention_mask"),
    BadInput("labels-shape", args=(_batch(labels=torch.zeros(2, dtype=torch.long)),), names="labels"),
]


@pytest.mark.parametrize("case", STEP, ids=lambda c: c.id)
def test_device_step_refuses_bad_batches(case, llama):
    client = _client(llama)
    check_bad_inputs(client.step, case, target=client)


QUANT = [
    BadInput("bits-2", args=(torch.randn(2, 3), 2), names="quant_bits"),
    BadInput("nan", args=(torch.tensor([[1.0, math.nan]]), 8), names="finite values"),
    BadInput("inf", args=(torch.tensor([[1.0, math.inf]]), 4), names="finite values"),
    BadInput("int-tensor", args=(torch.ones(2, 3, dtype=torch.long), 8), names="x"),
]


@pytest.mark.parametrize("case", QUANT, ids=lambda c: c.id)
def test_quantize_refuses_bad_input(case):
    check_bad_inputs(quantize_absmax, case)


def _server():
    torch.manual_seed(0)
    return SideTuningServer(SideNetwork(d_side=8, n_layers=2), {"l": FeatureAligner(2, 32, 2, 8)})


def _payload(batch, llama, **change):
    p = _client(llama).step(batch)
    for k, v in change.items():
        setattr(p, k, v)
    return p


def test_server_receive_refuses_bad_payloads(batch, llama):
    nan = _client(llama)
    nan.quant_bits = 32
    p_nan = nan.step(batch)
    p_nan.parts["values"][0, 0, 0] = math.nan
    other = DeviceClient(HiddenStates(tiny_llama(d=16)), [1, 3], quant_bits=8, backbone_type="l").step(batch)
    cases = [
        BadInput("unknown-type", args=(_payload(batch, llama, backbone_type="bert"),), names="backbone_type"),
        BadInput("wrong-width", args=(other,), names="width"),
        BadInput("wrong-layers", args=(DeviceClient(llama, [1], backbone_type="l").step(batch),), names="layers"),
        BadInput("labels-out-of-range", args=(_payload(batch, llama, labels=torch.tensor([0, 1, 2, 0, 1])),),
                 names="labels"),
        BadInput("unknown-bits", args=(_payload(batch, llama, quant_bits=6),), names="quant_bits"),
        BadInput("not-a-payload", args=({"acts": 1},), names="ActivationPayload"),
        BadInput("non-finite", args=(p_nan,), names="finite values"),
    ]
    for case in cases:
        server = _server()
        check_bad_inputs(server.receive, case, target=server)


CONSTRUCT = [
    BadInput("aligner-norm", args=(lambda: FeatureAligner(2, 8, 2, 4, norm="batch"),), names="norm"),
    BadInput("aligner-window", args=(lambda: FeatureAligner(2, 8, 2, 4, window=-1),), names="window"),
    BadInput("aligner-d", args=(lambda: FeatureAligner(2, 0, 2, 4),), names="d_backbone"),
    BadInput("side-block", args=(lambda: SideNetwork(block="lstm"),), names="block"),
    BadInput("side-gate", args=(lambda: SideNetwork(gate_T=0.0),), names="gate_T"),
    BadInput("side-classes", args=(lambda: SideNetwork(n_classes=1),), names="n_classes"),
    BadInput("server-lr", args=(lambda: SideTuningServer(SideNetwork(d_side=8, n_layers=2),
                                                         {"l": FeatureAligner(2, 32, 2, 8)}, lr=-1),), names="lr"),
    BadInput("server-mismatch", args=(lambda: SideTuningServer(SideNetwork(d_side=8, n_layers=2),
                                                               {"l": FeatureAligner(2, 32, 3, 8)}),), names="aligners"),
    BadInput("server-side", args=(lambda: SideTuningServer("side", {"l": FeatureAligner(2, 32, 2, 8)}),),
             names="side"),
    BadInput("server-replay", args=(lambda: SideTuningServer(
        SideNetwork(d_side=8, n_layers=2), {"l": FeatureAligner(2, 32, 2, 8)}, replay_ratio=math.nan),),
        names="replay_ratio"),
    BadInput("profile-speed-0", args=(lambda: DeviceProfile(0.0, 1e6, 1e6),), names="flops_per_s"),
    BadInput("profile-up-negative", args=(lambda: DeviceProfile(1e9, -1.0, 1e6),), names="up_bps"),
    BadInput("profile-down-inf", args=(lambda: DeviceProfile(1e9, 1e6, math.inf),), names="down_bps"),
    BadInput("profile-nan", args=(lambda: DeviceProfile(math.nan, 1e6, 1e6),), names="flops_per_s"),
    BadInput("depth-0", args=(lambda: HiddenStates(tiny_llama(), depth=0),), names="depth"),
    BadInput("depth-too-deep", args=(lambda: HiddenStates(tiny_llama(), depth=4),), names="depth"),
    BadInput("hidden-unknown-model", args=(lambda: HiddenStates(torch.nn.Linear(2, 2)),), names="backbone"),
    BadInput("dirichlet-alpha", args=(lambda: dirichlet_partition([0, 1] * 20, 2, 0.0),), names="alpha"),
    BadInput("dirichlet-too-few", args=(lambda: dirichlet_partition([0, 1] * 4, 4, 0.5),), names="devices"),
]


@pytest.mark.parametrize("case", CONSTRUCT, ids=lambda c: c.id)
def test_constructors_refuse_bad_settings(case):
    check_bad_inputs(case.args[0], BadInput(case.id, names=case.names))


def test_aligner_and_side_forward_refuse_wrong_shapes():
    a, s = FeatureAligner(2, 8, 2, 4), SideNetwork(d_side=4, n_layers=2)
    check_bad_inputs(a, BadInput("aligner-shape", args=(torch.randn(3, 3, 8),), names="features"), target=a)
    check_bad_inputs(s, BadInput("side-shape", args=(torch.randn(3, 2, 5),), names="side inputs"), target=s)


def test_simulator_refuses_bad_settings():
    clients, server, eval_fn, _ = federation()
    good = {"server": server, "clients": clients, "profiles": PROFILES, "eval_fn": eval_fn, "time_budget_s": 10.0}
    dup = list(clients[:2]) + [clients[1]]
    cases = [
        ("budget-0", {"time_budget_s": 0.0}, "time_budget_s"),
        ("budget-nan", {"time_budget_s": math.nan}, "time_budget_s"),
        ("profiles-short", {"profiles": PROFILES[:3]}, "profiles"),
        ("duplicate-ids", {"clients": dup, "profiles": PROFILES[:3]}, "device_id"),
        ("eval-every-0", {"eval_every": 0}, "eval_every"),
        ("eval-fn", {"eval_fn": 3}, "eval_fn"),
        ("server", {"server": object()}, "server"),
    ]
    for cid, change, name in cases:
        kwargs = {**good, **change}
        check_bad_inputs(lambda kw=kwargs: AsyncSimulator(**kw), BadInput(cid, names=name), target=server)
    unknown = DeviceClient(clients[0].backbone, clients[0].layers, backbone_type="gpt", data=clients[0].data)
    check_bad_inputs(lambda: AsyncSimulator(server, [unknown], PROFILES[:1], eval_fn, 10.0),
                     BadInput("unknown-type", names="backbone types"), target=server)


def test_fedavg_refuses_bad_settings():
    pytest.importorskip("peft")
    data = planted_task(40)
    parts = [subset(data, torch.arange(j, 40, 4)) for j in range(4)]
    base = tiny_llama()
    cases = [("rounds-0", {"rounds": 0}, "rounds"), ("fraction-0", {"fraction": 0.0}, "fraction"),
             ("lr-nan", {"lr": math.nan}, "lr"), ("profiles", {"profiles": PROFILES[:2]}, "profiles"),
             ("rank-0", {"rank": 0}, "rank"), ("positions", {"positions": "all"}, "positions")]
    for cid, change, name in cases:
        kwargs = {"profiles": PROFILES, **change}
        check_bad_inputs(lambda kw=kwargs: FedAvgLoRABaseline(base, parts, eval_data=data, **kw),
                         BadInput(cid, names=name), target=base)


def test_payload_of_unknown_width_in_bits_cannot_be_dequantized(batch, llama):
    p = _client(llama).step(batch)
    bad = ActivationPayload(parts=p.parts, shape=p.shape, quant_bits=5, labels=p.labels, sample_ids=p.sample_ids,
                            backbone_type="l", device_id=0)
    check_bad_inputs(bad.dequantize, BadInput("bits-5", names="quant_bits"))
