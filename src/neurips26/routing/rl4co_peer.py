r"""RL4CO as a side-by-side peer (optional: the ``rl4co`` extra, ``pip install -e '.[rl4co]'``: rl4co 0.7.0).

Three things, each through RL4CO's own code:

* :func:`to_rl4co_tensordict` puts our instances ``[B, n, 2]`` into RL4CO's TSP environment state (its
  ``TSPEnv.reset`` of a TensorDict with ``locs``), so its policies decode exactly our instances.
* :class:`RL4COPOMO` builds RL4CO's ``POMO`` (its attention-model policy: a 6-layer encoder, 128 wide, and a
  light pointer decoder) and trains it with RL4CO's REINFORCE loss and POMO's shared baseline
  (``POMO.calculate_loss``: advantage = reward minus the mean reward over the $n$ start nodes) on fresh
  uniform instances from RL4CO's generator: POMO's protocol (no labels), unlike our supervised models.
  Only the optimiser loop is ours (Adam, a fixed number of steps, gradient clipping), so it runs without a
  Lightning trainer; ``torch.manual_seed(seed)`` fixes the instances and the sampling.
* :meth:`RL4COPOMO.solve` is POMO's inference: greedy rollouts from every start node and, with ``augment``,
  on RL4CO's 8 dihedral images (``StateAugmentation``); the best per instance. The returned tours are
  measured again by our :func:`~neurips26.routing.tour_length` (tested to agree with RL4CO's reward).
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..constraints import Bool, Int, Optional, Real, validate
from .tsp import as_instances, tour_length

__all__ = ["RL4COPOMO", "RL4COTrainResult", "rl4co_available", "to_rl4co_tensordict"]

_MISSING = "rl4co is not installed: pip install -e '.[rl4co]' (the rl4co extra: rl4co 0.7.0, beside torch 2.13)"


def rl4co_available() -> bool:
    """True when ``rl4co`` (and so ``tensordict``/``torchrl``) can be imported."""
    return importlib.util.find_spec("rl4co") is not None and importlib.util.find_spec("tensordict") is not None


def _require() -> None:
    if not rl4co_available():
        raise ImportError(_MISSING)


def _env(n_nodes: int) -> Any:
    from rl4co.envs import TSPEnv
    from rl4co.envs.routing import TSPGenerator

    return TSPEnv(generator=TSPGenerator(num_loc=n_nodes))


def to_rl4co_tensordict(X: Any, env: Any = None) -> Any:
    """RL4CO's TSP state for our instances ``X`` ``[B, n, 2]`` (float32 ``locs``; the tour starts undecided)."""
    _require()
    from tensordict import TensorDict

    Xn = as_instances(X)
    B, n, _ = Xn.shape
    env = _env(n) if env is None else env
    td = TensorDict({"locs": torch.as_tensor(Xn, dtype=torch.float32)}, batch_size=[B])
    return env.reset(td)


@dataclass
class RL4COTrainResult:
    """Per-step REINFORCE losses and mean tour lengths (sampled rollouts), steps and CPU/wall seconds."""

    losses: list[float] = field(default_factory=list)
    mean_length: list[float] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0


class RL4COPOMO:
    """RL4CO's POMO on TSP with ``n_nodes`` cities (``embed_dim``, ``num_encoder_layers``, ``num_heads`` go to
    RL4CO's ``AttentionModelPolicy``; RL4CO's defaults are 128, 6, 8: about 1.3M parameters)."""

    @validate(n_nodes=Int(low=3), embed_dim=Int(low=1), num_encoder_layers=Int(low=1), num_heads=Int(low=1),
              seed=Int(low=0))
    def __init__(self, n_nodes: int, *, embed_dim: int = 128, num_encoder_layers: int = 6, num_heads: int = 8,
                 seed: int = 0) -> None:
        _require()
        if embed_dim % num_heads:
            raise ValueError(f"RL4COPOMO: embed_dim must be divisible by num_heads, got {embed_dim} and {num_heads}")
        n_nodes, embed_dim, num_encoder_layers, num_heads = map(int, (n_nodes, embed_dim, num_encoder_layers,
                                                                      num_heads))
        import warnings

        from rl4co.models.zoo import POMO
        from rl4co.models.zoo.am import AttentionModelPolicy

        self.n_nodes = n_nodes
        self.env = _env(n_nodes)
        torch.manual_seed(int(seed))
        policy = AttentionModelPolicy(env_name="tsp", embed_dim=embed_dim, num_encoder_layers=num_encoder_layers,
                                      num_heads=num_heads)
        with warnings.catch_warnings():  # Lightning's save_hyperparameters notes about nn.Module attributes
            warnings.simplefilter("ignore")
            self.model = POMO(self.env, policy, num_augment=8)
        self.policy = self.model.policy

    def num_params(self) -> int:
        return sum(p.numel() for p in self.policy.parameters())

    @validate(steps=Int(low=1), batch_size=Int(low=1), lr=Real(low=0.0, closed="neither"), seed=Int(low=0),
              grad_clip=Real(low=0.0, closed="neither"), max_seconds=Optional(Real(low=0.0, closed="neither")))
    def train(self, *, steps: int, batch_size: int, lr: float = 1e-4, seed: int = 0,
              grad_clip: float = 1.0, max_seconds: float | None = None) -> RL4COTrainResult:
        """REINFORCE with POMO's shared baseline on ``batch_size`` fresh instances per step (``n_nodes`` rollouts
        each, one per start node); stops after ``steps`` or, if given, ``max_seconds`` of process CPU time."""
        from rl4co.utils.ops import unbatchify

        steps, batch_size = int(steps), int(batch_size)
        torch.manual_seed(int(seed))
        opt = torch.optim.Adam(self.policy.parameters(), lr=float(lr))
        self.policy.train()
        res = RL4COTrainResult()
        t0 = time.process_time()
        n = self.n_nodes
        for _ in range(steps):
            td = self.env.reset(self.env.generator(batch_size=[batch_size]))
            out = self.policy(td, self.env, phase="train", num_starts=n)  # multistart sampling (POMO)
            reward = unbatchify(out["reward"], (0, n))  # [B, n]
            ll = unbatchify(out["log_likelihood"], (0, n))
            out = self.model.calculate_loss(td, td, out, reward, ll)  # RL4CO's loss, shared baseline
            opt.zero_grad(set_to_none=True)
            out["loss"].backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), grad_clip)
            opt.step()
            res.losses.append(float(out["loss"].detach()))
            res.mean_length.append(float(-reward.mean()))
            res.steps += 1
            if max_seconds is not None and time.process_time() - t0 >= max_seconds:
                break
        res.seconds = time.process_time() - t0
        self.policy.eval()
        return res

    @torch.no_grad()
    @validate(multi_start=Bool(), augment=Bool())
    def solve(self, X: Any, *, multi_start: bool = True, augment: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """POMO inference on our instances: (int64 tours ``[B, n]``, float64 lengths ``[B]`` by our
        :func:`tour_length`). ``multi_start``: a greedy rollout from every node (else one, RL4CO's first-node
        choice); ``augment``: also on the 8 dihedral images."""
        from rl4co.data.transforms import StateAugmentation
        from rl4co.utils.ops import gather_by_index, unbatchify

        Xn = as_instances(X)
        B, n, _ = Xn.shape
        if n != self.n_nodes:
            raise ValueError(f"X has {n} cities, this POMO was built for {self.n_nodes}")
        td = to_rl4co_tensordict(Xn, self.env)
        n_aug = 8 if augment else 0
        if augment:
            td = StateAugmentation(num_augment=8)(td)
        n_start = n if multi_start else 0
        self.policy.eval()
        out = self.policy(td, self.env, phase="test", num_starts=n_start,
                          decode_type="multistart_greedy" if multi_start else "greedy", return_actions=True)
        reward = unbatchify(out["reward"], (n_aug, n_start)).reshape(B, -1)  # [B, rollouts]
        actions = unbatchify(out["actions"], (n_aug, n_start)).reshape(B, reward.shape[1], -1)
        best = reward.argmax(dim=1)
        tours = gather_by_index(actions, best, dim=1).numpy().astype(np.int64)  # [B, n]
        return tours, tour_length(Xn, tours)
