r"""What EC-MobiLLM is compared against, on the same virtual clock and data split.

* :class:`FedAvgLoRABaseline` — FedIT/FlowerTune-style: each round a sampled set of devices downloads the
  global LoRA adapters + head, trains them locally (forward *and* backward through the backbone), uploads;
  the server averages, weighted by samples. Synchronous: a round lasts as long as its slowest device,
  $t_r = \max_{j \in S_r} (\mathrm{down}_j + F_j / S_j + \mathrm{up}_j)$.
* :class:`FedAsyncLoRABaseline` — FedAsync (Xie et al. 2019): every device trains on the newest model it
  has and the server mixes each arrival at once, $w \leftarrow (1 - \alpha_\tau) w + \alpha_\tau w_j$,
  $\alpha_\tau = \alpha (1 + \tau)^{-1/2}$ with staleness $\tau$ (versions since the device's download).
* :class:`SyncSideTuningBaseline` — the same aligner + side network, but trained *on the devices* (backprop
  through the side network only; features computed once per sample and kept locally) and averaged in
  FedAvg rounds: isolates what the non-blocking server buys.
* :func:`local_only` — every device trains its own aligner + side network on its own data.
* The no-alignment and no-cache ablations are :class:`~.side.SideTuningServer` settings (see ``check.py``).

LoRA comes from PEFT (``peft.inject_adapter_in_model``) on the query/value projections.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.constraints import Choice, Int, Real, validate
from neurips26.nn.parallel import data_parallel

from .backbone import HiddenStates
from .device import DeviceClient, select_positions
from .side import FeatureAligner, SideNetwork, side_step_flops
from .simulate import DeviceProfile

__all__ = ["FedAsyncLoRABaseline", "FedAvgLoRABaseline", "LoRAClassifier", "SyncSideTuningBaseline",
           "device_features", "evaluate_side", "local_only", "lora_trainable_nbytes", "weighted_state_mean"]

_LORA_TARGETS = {"llama": ["q_proj", "v_proj"], "bert": ["query", "value"]}
#: ``distributed=`` of the baselines' local training: DDP under torchrun, not FSDP (a round exchanges and
#: averages full weight tensors: ``trainable_state``, ``load_trainable``, ``state_dict`` of deep copies)
DISTRIBUTED = ("auto", "off", "ddp")
_RUN = {"time_budget_s": Real(low=0.0, closed="neither", allow_inf=True), "lr": Real(low=0.0, closed="neither"),
        "distributed": Choice(*DISTRIBUTED)}


class LoRAClassifier(nn.Module):
    """A backbone with PEFT LoRA adapters (rank ``rank``) and a linear head on the pivot/mean of its last layer.

    Args:
        backbone: a ``neurips26.nn`` Llama, BertEncoder or MiniLM (deep-copied; the original is untouched).
        depth: keep only the first ``depth`` blocks.  positions: ``"pivot"`` or ``"mean"``.
        rank, alpha: LoRA rank and scaling.  n_classes: head outputs.  seed: head initialisation.
    """

    @validate(positions=Choice("pivot", "mean"), rank=Int(low=1))
    def __init__(self, backbone: nn.Module, *, depth: int | None = None, positions: str = "mean", rank: int = 8,
                 alpha: float = 16.0, n_classes: int = 2, seed: int = 0) -> None:
        super().__init__()
        from peft import LoraConfig, inject_adapter_in_model

        probe = HiddenStates(backbone, depth=depth)  # validates the model kind and depth
        inner = copy.deepcopy(getattr(backbone, "encoder", backbone))
        inner.requires_grad_(False)
        config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=_LORA_TARGETS[probe.kind])
        inner = inject_adapter_in_model(config, inner)
        g = torch.Generator().manual_seed(int(seed))
        for name, p in inner.named_parameters():  # LoRA A ~ seeded Kaiming-uniform, B = 0 (PEFT's init, reseeded)
            if "lora_A" in name:
                bound = 1.0 / math.sqrt(p.shape[1])
                with torch.no_grad():
                    p.copy_(torch.empty(p.shape).uniform_(-bound, bound, generator=g))  # CPU draw, any device
        self.backbone = HiddenStates(inner, depth=depth)
        self.positions = positions
        self.head = nn.Linear(self.backbone.d_model, n_classes)
        with torch.no_grad():
            self.head.weight.copy_(torch.randn(self.head.weight.shape, generator=g) * 0.02)
            self.head.bias.zero_()
        self.rank = rank
        self.to(next(inner.parameters()).device)  # head and adapters beside the backbone (CUDA at the gpu scale)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        where = self.head.weight.device
        input_ids, attention_mask = input_ids.to(where), attention_mask.to(where)
        states = self.backbone(input_ids, attention_mask).hidden_states
        feats = select_positions(states, [len(states) - 1], attention_mask, self.positions)[:, 0]
        return self.head(feats)

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """What a round exchanges: the LoRA matrices and the head."""
        return {n: p.detach().cpu().clone() for n, p in self.named_parameters() if p.requires_grad}

    def load_trainable(self, state: Mapping[str, torch.Tensor]) -> None:
        params = dict(self.named_parameters())
        with torch.no_grad():
            for n, v in state.items():
                params[n].copy_(v)

    def n_trainable(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def step_flops(self, n_samples: int, tokens: int) -> float:
        r"""One training pass over ``n_samples``: $2 F_{\mathrm{fwd}}$ (forward + activation gradients) plus
        $6 \cdot$ (trainable weights) per token for the adapters and head."""
        return n_samples * (2.0 * self.backbone.flops_per_sample(tokens) + 6.0 * self.n_trainable() * tokens)


def lora_trainable_nbytes(model: LoRAClassifier, bytes_per_param: int = 4) -> int:
    """Bytes of one exchange of the LoRA + head weights (float32 by default)."""
    return model.n_trainable() * bytes_per_param


def _check_clients_data(client_data: Sequence[Mapping[str, torch.Tensor]], profiles: Sequence[DeviceProfile]) -> None:
    if not client_data:
        raise ValueError("client_data must hold at least one device's data")
    if len(profiles) != len(client_data) or not all(isinstance(p, DeviceProfile) for p in profiles):
        raise ValueError(f"profiles must hold one DeviceProfile per device ({len(client_data)}), got {len(profiles)}")
    for i, d in enumerate(client_data):
        for key in ("input_ids", "attention_mask", "labels"):
            if key not in d:
                raise ValueError(f"client_data[{i}] lacks {key!r}")


def _batches(data: Mapping[str, torch.Tensor], batch_size: int, g: torch.Generator):
    n = int(data["labels"].shape[0])
    order = torch.randperm(n, generator=g)
    for i in range(0, n, batch_size):
        idx = order[i:i + batch_size]
        mask = data["attention_mask"][idx]
        w = int(mask.sum(1).max())
        yield data["input_ids"][idx, :w], mask[:, :w], data["labels"][idx]


@torch.no_grad()
def _accuracy(model: LoRAClassifier, data: Mapping[str, torch.Tensor], batch_size: int = 64) -> float:
    model.eval()
    right = 0
    n = int(data["labels"].shape[0])
    for i in range(0, n, batch_size):
        mask = data["attention_mask"][i:i + batch_size]
        w = int(mask.sum(1).max())
        logits = model(data["input_ids"][i:i + batch_size, :w], mask[:, :w])
        right += int((logits.argmax(-1).cpu() == data["labels"][i:i + batch_size]).sum())
    return right / max(n, 1)


def weighted_state_mean(states: Sequence[Mapping[str, torch.Tensor]],
                        weights: Sequence[float]) -> dict[str, torch.Tensor]:
    r"""FedAvg's aggregate $\sum_i \frac{w_i}{\sum_j w_j} \theta_i$ of state dicts with the same keys (``weights``:
    e.g. each client's sample count)."""
    total = float(sum(weights))
    return {k: sum(w / total * s[k] for s, w in zip(states, weights)) for k in states[0]}


class _LoRATrainer:
    """Shared local training of the two LoRA baselines: one model whose trainable part is swapped per device."""

    def __init__(self, backbone: nn.Module, *, depth, positions, rank, alpha, n_classes, lr, local_epochs,
                 batch_size, seed, distributed="auto") -> None:
        self.model = LoRAClassifier(backbone, depth=depth, positions=positions, rank=rank, alpha=alpha,
                                    n_classes=n_classes, seed=seed)
        self.lr, self.local_epochs, self.batch_size, self.seed = lr, local_epochs, batch_size, seed
        self.dp = data_parallel(self.model, _lora_loss, distributed=distributed)

    def train_local(self, state: Mapping[str, torch.Tensor], data: Mapping[str, torch.Tensor], key: int
                    ) -> tuple[dict[str, torch.Tensor], float]:
        """Local epochs from ``state`` on ``data``; returns the new trainable state and the FLOPs spent."""
        self.model.load_trainable(state)
        self.model.train()
        opt = torch.optim.AdamW([p for p in self.model.parameters() if p.requires_grad], lr=self.lr,
                                weight_decay=0.0)
        g = torch.Generator().manual_seed(int(self.seed) * 1_000_003 + key)
        flops = 0.0
        for _ in range(self.local_epochs):
            for ids, mask, y in _batches(data, self.batch_size, g):
                loss = self.dp(*self.dp.shard(ids, mask, y))  # this rank's rows; one process: the whole batch
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                flops += self.model.step_flops(ids.shape[0], ids.shape[1])
        return self.model.trainable_state(), flops


def _lora_loss(model: LoRAClassifier, ids: torch.Tensor, mask: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(ids, mask), y.to(model.head.weight.device))


class FedAvgLoRABaseline:
    """Synchronous FedAvg over LoRA adapters + head (the FlowerTune-style peer).

    Args:
        backbone: the shared backbone (every device runs it; deep-copied).
        client_data: per device ``{"input_ids", "attention_mask", "labels"}``.
        profiles: per device :class:`DeviceProfile`.
        eval_data: the test set, evaluated on the server after every round (not device cost).
        rounds: at most this many rounds; time_budget_s: or until the virtual clock passes this.
        fraction: devices sampled per round (at least one).  local_epochs, batch_size, lr: local training.
        rank, alpha: LoRA.  depth, positions: as :class:`LoRAClassifier`.  seed: sampling and training seed.
        eval_every: evaluate after every this many rounds (and after the last); rows are written only then.
        distributed: the local training under ``torchrun``: ``"auto"`` (DDP with more than one process, else one
            process, bit-identical), ``"off"`` or ``"ddp"`` (:func:`neurips26.nn.parallel.data_parallel`; not FSDP,
            rounds exchange full weights). Every rank runs the same rounds; each local batch's rows are split
            ``rank::world`` (``batch_size`` and every device's sample count must divide by the world size).
    """

    @validate(rounds=Int(low=1), eval_every=Int(low=1), fraction=Real(low=0.0, high=1.0, closed="right"), **_RUN)
    def __init__(self, backbone: nn.Module, client_data: Sequence[Mapping[str, torch.Tensor]],
                 profiles: Sequence[DeviceProfile], eval_data: Mapping[str, torch.Tensor], *, rounds: int = 5,
                 time_budget_s: float = math.inf, fraction: float = 0.5, local_epochs: int = 1, batch_size: int = 16,
                 lr: float = 1e-3, rank: int = 8, alpha: float = 16.0, depth: int | None = None,
                 positions: str = "mean", n_classes: int = 2, seed: int = 0,
                 progress: Callable | None = None, eval_every: int = 1, distributed: str = "auto") -> None:
        _check_clients_data(client_data, profiles)
        self.eval_every = eval_every
        self.trainer = _LoRATrainer(backbone, depth=depth, positions=positions, rank=rank, alpha=alpha,
                                    n_classes=n_classes, lr=lr, local_epochs=local_epochs, batch_size=batch_size,
                                    seed=seed, distributed=distributed)
        self.client_data, self.profiles, self.eval_data = list(client_data), list(profiles), eval_data
        self.rounds, self.time_budget_s, self.fraction, self.seed = rounds, float(time_budget_s), fraction, seed
        self.progress = progress or (lambda it, **_: it)
        self.participants: list[list[int]] = []

    @property
    def exchange_nbytes(self) -> int:
        return lora_trainable_nbytes(self.trainer.model)

    def run(self):
        """Returns a DataFrame, one row per round (round 0 = the start): ``time_s``, ``round``, ``accuracy``,
        ``bytes_up``, ``bytes_down``, ``device_flops``, ``round_s``."""
        import pandas as pd

        rng = np.random.default_rng(self.seed)
        m = len(self.client_data)
        k = max(1, int(round(self.fraction * m)))
        state = self.trainer.model.trainable_state()
        nbytes = self.exchange_nbytes
        t, up, down, flops = 0.0, 0, 0, 0.0  # each round's participants download the global model
        pending = None
        rows = [{"time_s": 0.0, "round": 0, "accuracy": _accuracy(self.trainer.model, self.eval_data),
                 "bytes_up": 0, "bytes_down": down, "device_flops": 0.0, "round_s": 0.0}]
        for r in self.progress(range(1, self.rounds + 1), desc="FedAvg-LoRA rounds"):
            chosen = sorted(rng.choice(m, size=k, replace=False).tolist())
            states, weights, times = [], [], []
            for j in chosen:
                new, f = self.trainer.train_local(state, self.client_data[j], key=r * 10_007 + j)
                p = self.profiles[j]
                times.append(p.down_s(nbytes) + p.compute_s(f) + p.up_s(nbytes))
                states.append(new)
                weights.append(int(self.client_data[j]["labels"].shape[0]))
                flops += f
            round_s = max(times)  # the barrier: the slowest sampled device
            if t + round_s > self.time_budget_s:
                break
            t += round_s
            state = weighted_state_mean(states, weights)
            self.trainer.model.load_trainable(state)
            up += k * nbytes
            down += k * nbytes
            self.participants.append(chosen)
            pending = {"time_s": t, "round": r, "bytes_up": up, "bytes_down": down, "device_flops": flops,
                       "round_s": round_s}
            if r % self.eval_every == 0 or r == self.rounds:
                rows.append({**pending, "accuracy": _accuracy(self.trainer.model, self.eval_data)})
                pending = None
        if pending is not None:  # stopped by the time budget between evaluations: evaluate where it stopped
            rows.append({**pending, "accuracy": _accuracy(self.trainer.model, self.eval_data)})
        return pd.DataFrame(rows)


class FedAsyncLoRABaseline:
    """FedAsync over LoRA + head: no rounds; each arrival is mixed in with a staleness-discounted weight.

    Args: as :class:`FedAvgLoRABaseline`, plus ``mix`` ($\\alpha$) and ``max_updates`` (server merges);
    ``eval_every``: merges between evaluations.
    """

    @validate(max_updates=Int(low=1), mix=Real(low=0.0, high=1.0, closed="right"), **_RUN)
    def __init__(self, backbone: nn.Module, client_data: Sequence[Mapping[str, torch.Tensor]],
                 profiles: Sequence[DeviceProfile], eval_data: Mapping[str, torch.Tensor], *, max_updates: int = 20,
                 time_budget_s: float = math.inf, mix: float = 0.6, local_epochs: int = 1, batch_size: int = 16,
                 lr: float = 1e-3, rank: int = 8, alpha: float = 16.0, depth: int | None = None,
                 positions: str = "mean", n_classes: int = 2, seed: int = 0, eval_every: int = 4,
                 progress: Callable | None = None, distributed: str = "auto") -> None:
        _check_clients_data(client_data, profiles)
        self.trainer = _LoRATrainer(backbone, depth=depth, positions=positions, rank=rank, alpha=alpha,
                                    n_classes=n_classes, lr=lr, local_epochs=local_epochs, batch_size=batch_size,
                                    seed=seed, distributed=distributed)
        self.client_data, self.profiles, self.eval_data = list(client_data), list(profiles), eval_data
        self.max_updates, self.time_budget_s = max_updates, float(time_budget_s)
        self.mix, self.eval_every = mix, eval_every
        self.progress = progress or (lambda it, **_: it)
        self.staleness: list[int] = []

    def run(self):
        """Returns a DataFrame, one row per evaluation: ``time_s``, ``updates``, ``accuracy``, ``bytes_up``,
        ``bytes_down``, ``device_flops``."""
        import pandas as pd

        nbytes = lora_trainable_nbytes(self.trainer.model)
        m = len(self.client_data)
        state = self.trainer.model.trainable_state()
        version, up, down, flops, jobs = 0, 0, 0, 0.0, 0
        heap: list[tuple[float, int, int, dict, int]] = []

        def start(j: int, t: float) -> None:
            nonlocal down, flops, jobs
            new, f = self.trainer.train_local(state, self.client_data[j], key=jobs * 10_007 + j)
            jobs += 1
            p = self.profiles[j]
            down += nbytes
            flops += f
            heapq.heappush(heap, (t + p.down_s(nbytes) + p.compute_s(f) + p.up_s(nbytes), j, jobs, new, version))

        self.trainer.model.load_trainable(state)
        rows = [{"time_s": 0.0, "updates": 0, "accuracy": _accuracy(self.trainer.model, self.eval_data),
                 "bytes_up": 0, "bytes_down": down, "device_flops": 0.0}]
        for j in range(m):
            start(j, 0.0)
        bar = iter(self.progress(range(self.max_updates), desc="FedAsync-LoRA merges"))
        while heap and version < self.max_updates:
            t, j, _, new, base = heapq.heappop(heap)
            if t > self.time_budget_s:
                break
            next(bar, None)
            tau = version - base
            a = self.mix * (1.0 + tau) ** -0.5  # alpha_tau = alpha (1 + tau)^(-1/2)
            state = {k: (1 - a) * state[k] + a * new[k] for k in state}
            version += 1
            up += nbytes
            self.staleness.append(tau)
            if version % self.eval_every == 0 or version == self.max_updates:
                self.trainer.model.load_trainable(state)
                rows.append({"time_s": t, "updates": version, "accuracy": _accuracy(self.trainer.model, self.eval_data),
                             "bytes_up": up, "bytes_down": down, "device_flops": flops})
            if version < self.max_updates:
                start(j, t)
        return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------- side-network baselines
def evaluate_side(aligners: Mapping[str, FeatureAligner], side: SideNetwork,
                  test: Mapping[str, tuple[torch.Tensor, torch.Tensor]], weights: Mapping[str, float] | None = None
                  ) -> float:
    """Accuracy of aligner + side network on test features ``{type: (features [N, K, d], labels [N])}``,
    averaged over types (weighted by ``weights``, e.g. devices per type; default equal)."""
    accs, ws = [], []
    with torch.no_grad():
        side.eval()
        for btype, (x, y) in sorted(test.items()):
            if btype not in aligners:
                continue
            aligners[btype].eval()
            accs.append(float((side(aligners[btype](x)).argmax(-1) == y).float().mean()))
            ws.append(1.0 if weights is None else float(weights.get(btype, 0.0)))
    if not accs or sum(ws) == 0:
        raise ValueError("no test features of a known backbone type")
    return float(np.average(accs, weights=ws))


def device_features(c: DeviceClient) -> tuple[torch.Tensor, torch.Tensor]:
    """All of a device's local features (one forward per sample, FLOPs counted on the device) and labels."""
    idx = torch.arange(c.n_samples)
    feats, labels = [], []
    for i in range(0, c.n_samples, c.batch_size):
        batch = c.batch_at(idx[i:i + c.batch_size])
        feats.append(c.features(batch))
        labels.append(batch["labels"])
        c.flops += c.forward_flops(batch["input_ids"].shape[0], batch["input_ids"].shape[1])
    return torch.cat(feats), torch.cat(labels)


class _SidePair(nn.Module):
    """A device's aligner + side network as one module (for DDP); ``forward(x) -> logits``."""

    def __init__(self, aligner: FeatureAligner, side: SideNetwork) -> None:
        super().__init__()
        self.aligner, self.side = aligner, side

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.side(self.aligner(x))


def _side_loss(pair: _SidePair, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(pair(x), y)


def _train_side_local(aligner: FeatureAligner, side: SideNetwork, x: torch.Tensor, y: torch.Tensor, *, epochs: int,
                      batch_size: int, lr: float, g: torch.Generator, distributed: str = "auto") -> float:
    dp = data_parallel(_SidePair(aligner, side), _side_loss, distributed=distributed)
    params = list(aligner.parameters()) + list(side.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    aligner.train()
    side.train()
    flops = 0.0
    for _ in range(epochs):
        order = torch.randperm(x.shape[0], generator=g)
        for i in range(0, x.shape[0], batch_size):
            idx = order[i:i + batch_size]
            loss = dp(*dp.shard(x[idx], y[idx]))  # this rank's rows; one process: the whole batch
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            flops += side_step_flops(side, aligner, len(idx))
    return flops


class SyncSideTuningBaseline:
    """FedAvg rounds of side networks trained on the devices (features computed once per sample, kept locally).

    Args:
        clients: :class:`DeviceClient` objects with ``data`` (their backbones make the features).
        profiles: per device.  side_fn, aligner_fn: ``side_fn() -> SideNetwork``, ``aligner_fn(type) ->
            FeatureAligner`` (the same initial weights every call).
        test: ``{type: (features, labels)}`` for :func:`evaluate_side`.
        rounds, time_budget_s, fraction, local_epochs, batch_size, lr, seed, distributed: as in FedAvg (the
            on-device side-network training is what runs data-parallel).
    """

    @validate(fraction=Real(low=0.0, high=1.0, closed="right"), **_RUN)
    def __init__(self, clients: Sequence[DeviceClient], profiles: Sequence[DeviceProfile],
                 side_fn: Callable[[], SideNetwork], aligner_fn: Callable[[str], FeatureAligner],
                 test: Mapping[str, tuple[torch.Tensor, torch.Tensor]], *, rounds: int = 10,
                 time_budget_s: float = math.inf, fraction: float = 0.5, local_epochs: int = 2, batch_size: int = 16,
                 lr: float = 3e-3, seed: int = 0, distributed: str = "auto") -> None:
        if not clients or not all(isinstance(c, DeviceClient) and c.data is not None for c in clients):
            raise TypeError("clients must be a non-empty list of DeviceClient with data")
        if len(profiles) != len(clients):
            raise ValueError(f"profiles must hold one DeviceProfile per client ({len(clients)}), got {len(profiles)}")
        self.clients, self.profiles, self.test = list(clients), list(profiles), test
        self.distributed = distributed
        self.side_fn, self.aligner_fn = side_fn, aligner_fn
        self.rounds, self.time_budget_s, self.fraction = rounds, float(time_budget_s), fraction
        self.local_epochs, self.batch_size, self.lr, self.seed = local_epochs, batch_size, lr, seed

    def run(self):
        """DataFrame per round: ``time_s``, ``round``, ``accuracy``, ``bytes_up``, ``bytes_down``, ``device_flops``."""
        import pandas as pd

        rng = np.random.default_rng(self.seed)
        side = self.side_fn()
        types = sorted({c.backbone_type for c in self.clients})
        aligners = {b: self.aligner_fn(b) for b in types}
        weights = {b: sum(c.backbone_type == b for c in self.clients) for b in types}

        def nbytes(b: str) -> int:
            return 4 * (sum(p.numel() for p in side.parameters()) + sum(p.numel() for p in aligners[b].parameters()))

        cached: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        m = len(self.clients)
        k = max(1, int(round(self.fraction * m)))
        t, up, flops_train = 0.0, 0, 0.0
        down = 0
        rows = [{"time_s": 0.0, "round": 0, "accuracy": evaluate_side(aligners, side, self.test, weights),
                 "bytes_up": 0, "bytes_down": down, "device_flops": 0.0}]
        for r in range(1, self.rounds + 1):
            chosen = sorted(rng.choice(m, size=k, replace=False).tolist())
            sides, aligns, ns, times = [], {b: [] for b in types}, [], []
            for j in chosen:
                c = self.clients[j]
                f0 = c.flops
                if j not in cached:
                    cached[j] = device_features(c)
                x, y = cached[j]
                s_local, a_local = copy.deepcopy(side), copy.deepcopy(aligners[c.backbone_type])
                g = torch.Generator().manual_seed(self.seed * 1_000_003 + r * 10_007 + j)
                f = _train_side_local(a_local, s_local, x, y, epochs=self.local_epochs, batch_size=self.batch_size,
                                      lr=self.lr, g=g, distributed=self.distributed)
                flops_train += f
                p, nb = self.profiles[j], nbytes(c.backbone_type)
                times.append(p.down_s(nb) + p.compute_s(f + c.flops - f0) + p.up_s(nb))
                sides.append(s_local.state_dict())
                aligns[c.backbone_type].append((a_local.state_dict(), x.shape[0]))
                ns.append(x.shape[0])
                up += nb
                down += nb
            round_s = max(times)
            if t + round_s > self.time_budget_s:
                break
            t += round_s
            side.load_state_dict(weighted_state_mean(sides, ns))
            for b, items in aligns.items():
                if items:
                    aligners[b].load_state_dict(weighted_state_mean([s for s, _ in items], [n for _, n in items]))
            rows.append({"time_s": t, "round": r, "accuracy": evaluate_side(aligners, side, self.test, weights),
                         "bytes_up": up, "bytes_down": down,
                         "device_flops": flops_train + sum(c.flops for c in self.clients)})
        return pd.DataFrame(rows)


@validate(distributed=Choice(*DISTRIBUTED))
def local_only(clients: Sequence[DeviceClient], side_fn: Callable[[], SideNetwork],
               aligner_fn: Callable[[str], FeatureAligner], test: Mapping[str, tuple[torch.Tensor, torch.Tensor]], *,
               epochs: int = 10, batch_size: int = 16, lr: float = 3e-3, seed: int = 0,
               distributed: str = "auto") -> dict[str, float]:
    """Each device trains its own aligner + side network on its own data only; returns the mean and min test
    accuracy over devices and the mean device FLOPs (no communication at all). ``distributed``: as
    :class:`SyncSideTuningBaseline`'s (each device's training runs data-parallel under torchrun)."""
    accs, flops = [], []
    for c in clients:
        c0 = c.flops
        x, y = device_features(c)
        side, aligner = side_fn(), aligner_fn(c.backbone_type)
        g = torch.Generator().manual_seed(seed * 1_000_003 + c.device_id)
        f = _train_side_local(aligner, side, x, y, epochs=epochs, batch_size=batch_size, lr=lr, g=g,
                              distributed=distributed)
        accs.append(evaluate_side({c.backbone_type: aligner}, side, {c.backbone_type: test[c.backbone_type]}))
        flops.append(f + c.flops - c0)
    return {"accuracy_mean": float(np.mean(accs)), "accuracy_min": float(np.min(accs)),
            "device_flops_mean": float(np.mean(flops))}
