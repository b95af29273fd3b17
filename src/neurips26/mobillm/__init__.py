r"""EC-MobiLLM (= Fed MobiLLM, arXiv 2508.06765): federated LLM fine-tuning by server-assisted side-tuning.

Devices keep a **frozen** backbone and run **forward passes only**: for each minibatch they upload a few
quantised hidden states (the "pivot" last token, or the mean, of ``K`` chosen layers) with the labels and go on
with the next batch. The server trains one shared **ladder side network** on those activations,
**asynchronously** (one optimiser step per arrival, no rounds, no straggler barrier), and maps the
activations of *different* backbones into it with per-type **adaptive layer-wise feature alignment**
(soft depth mixing, a width projection and running per-type standardisation). Because the backbones are
frozen, an uploaded feature never goes stale; a server cache replays it, so each sample is forwarded once.

    client = DeviceClient(HiddenStates(backbone), layers=[2, 4, 6], positions="pivot", quant_bits=8,
                          backbone_type="minilm-6", device_id=3)
    server = SideTuningServer(SideNetwork(d_side=64, n_layers=3, n_classes=2),
                              {"minilm-6": FeatureAligner(3, 384, 3, 64)}, lr=1e-3, cache=True)
    metrics = server.receive(client.step(batch))          # one asynchronous update
    curve = AsyncSimulator(server, clients, profiles, eval_fn, time_budget_s=60).run()   # pandas DataFrame

Only the abstract of the paper is public (no code): the side network, the alignment, the cost model and
the federation are our reconstruction from MobiLLM, PAE-MobiLLM and LST (see README.md, "Inferred").
"""

from .backbone import BackboneOutput, HiddenStates, backbone_flops, block_parameters
from .baselines import (
    FedAsyncLoRABaseline,
    FedAvgLoRABaseline,
    LoRAClassifier,
    SyncSideTuningBaseline,
    device_features,
    evaluate_side,
    local_only,
    lora_trainable_nbytes,
)
from .config import SideTuningConfig, load_side_model, save_side_model
from .device import POSITIONS, DeviceClient, FeatureMemo, select_positions
from .payload import QUANT_BITS, ActivationPayload, dequantize_absmax, payload_nbytes, quantize_absmax
from .side import FeatureAligner, SideModel, SideNetwork, SideTuningServer, side_step_flops
from .simulate import AsyncSimulator, DeviceProfile, time_to_target
from .tasks import (
    comedy_tragedy_passages,
    dirichlet_partition,
    encode_texts,
    genre_passages,
    make_profiles,
    planted_task,
    shuffle_windows,
    subset,
    word_order_passages,
)

__all__ = [
    "POSITIONS", "QUANT_BITS", "ActivationPayload", "AsyncSimulator", "BackboneOutput", "DeviceClient",
    "DeviceProfile", "FeatureAligner", "FeatureMemo", "FedAsyncLoRABaseline", "FedAvgLoRABaseline", "HiddenStates",
    "LoRAClassifier", "SideModel", "SideNetwork", "SideTuningConfig", "SideTuningServer", "SyncSideTuningBaseline",
    "backbone_flops", "block_parameters", "comedy_tragedy_passages", "dequantize_absmax", "device_features",
    "dirichlet_partition", "encode_texts", "evaluate_side", "genre_passages", "load_side_model", "local_only",
    "lora_trainable_nbytes", "make_profiles", "payload_nbytes", "planted_task", "quantize_absmax", "save_side_model",
    "select_positions", "shuffle_windows", "side_step_flops", "subset", "time_to_target", "word_order_passages",
]
