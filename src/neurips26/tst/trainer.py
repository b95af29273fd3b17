"""The two-phase training loop for any causal LM that accepts ``inputs_embeds`` and ``position_ids``.

Phase 1 (steps ``< round(r·T)``), per row of ``s·(L+1)`` raw tokens:

    bags = ids.view(B, L+1, s)                         # fold_bags
    h0   = E[bags[:, :L]].mean(2)                       # superpose_embeddings, [B, L, D]
    z    = model(inputs_embeds=h0, position_ids=0..L-1) # unchanged decoder, [B, L, V]
    loss = mean_k CE(z, bags[:, 1:, k])                 # multi_hot_cross_entropy

Phase 2: plain next-token prediction on rows of ``L+1`` tokens, *same* model, optimizer and LR
schedule objects (embeddings, LM head and Adam moments carry over; no LR re-warm).
FLOPs per step are equal in both phases: the transformer always runs on ``B × L`` positions.

The trainer works with :class:`neurips26.nn.Llama`, with Hugging Face ``*ForCausalLM`` models (output
``.logits``) and with either wrapped in ``DistributedDataParallel`` (gradients are all-reduced by DDP;
this class only averages the logged loss over ranks).
"""

from __future__ import annotations

import inspect
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .schedule import TSTSchedule
from .superposition import fold_bags, multi_hot_cross_entropy, superpose_embeddings

_FORMAT = "neurips26.tst.TSTTrainer/1"


def unwrap_model(model: nn.Module) -> nn.Module:
    """The module inside ``DistributedDataParallel`` (or the model itself)."""
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def _forward_params(model: nn.Module) -> set[str]:
    return set(inspect.signature(unwrap_model(model).forward).parameters)


def _logits(output: Any) -> torch.Tensor:
    """Logits from our Llama (a tensor) or a Hugging Face output object (``.logits``)."""
    if isinstance(output, torch.Tensor):
        return output
    logits = getattr(output, "logits", None)
    if logits is None and isinstance(output, tuple | list):
        logits = output[0]
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"model output must be logits or have .logits, got {type(output).__name__}")
    return logits


def _world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@torch.no_grad()
def evaluate_ntp(model: nn.Module, windows: torch.Tensor, *, batch_size: int = 32) -> float:
    """Mean next-token cross-entropy (nats/token) of ``model`` on ``windows: int64 [n, L+1]``."""
    if not isinstance(windows, torch.Tensor) or windows.dim() != 2 or windows.shape[1] < 2:
        raise ValueError(f"windows must be int64 [n, L+1] with L >= 1, got {tuple(getattr(windows, 'shape', ()))}")
    base = unwrap_model(model)
    was_training = base.training
    base.eval()
    device = next(base.parameters()).device
    total, count = 0.0, 0
    kwargs = {"use_cache": False} if "use_cache" in _forward_params(base) else {}
    for start in range(0, len(windows), batch_size):
        rows = windows[start:start + batch_size].to(device)
        logits = _logits(base(input_ids=rows[:, :-1], **kwargs))
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), rows[:, 1:].reshape(-1),
                               reduction="sum")
        total += float(loss)
        count += rows[:, 1:].numel()
    base.train(was_training)
    return total / count


class TSTTrainer:
    """Token-Superposition Training around an existing model, optimizer and LR scheduler.

    Args:
        model: causal LM; ``forward(input_ids=..., inputs_embeds=..., position_ids=...)`` returning logits
            ``[B, L, V]`` or an object with ``.logits``; ``get_input_embeddings()`` returning the
            ``nn.Embedding``. May be wrapped in ``DistributedDataParallel``.
        optimizer: any ``torch.optim`` optimizer over the model's parameters (kept across the switch).
        schedule: :class:`TSTSchedule` (``superposition_fraction=0`` gives the NTP baseline).
        lr_scheduler: optional, stepped once per optimizer step (not restarted at the switch).
        context_len: L, positions the model sees per row; needed by :meth:`fit` and checked by
            :meth:`train_step` when given.
        superpose_inputs: phase-1 input is the mean embedding of each bag (``False``: ordinary tokens).
        multi_hot_targets: phase-1 target is the whole next bag, MCE (``False``: the next bag's first
            token, plain CE). Both ``True`` is TST; the ablations switch one off.
        reinit_embeddings_at_switch: ablation: re-initialise input embedding and LM head (and drop their
            optimizer state) at the first recovery step.
        grad_clip: max global gradient norm (``None``: no clipping).
        reinit_seed: seed of the re-initialisation (same on every rank and on resume).
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, schedule: TSTSchedule, *,
                 lr_scheduler: Any | None = None, context_len: int | None = None,
                 superpose_inputs: bool = True, multi_hot_targets: bool = True,
                 reinit_embeddings_at_switch: bool = False, grad_clip: float | None = 1.0,
                 reinit_seed: int = 0) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        if not isinstance(schedule, TSTSchedule):
            raise TypeError(f"schedule must be a TSTSchedule, got {type(schedule).__name__}")
        if context_len is not None and (not isinstance(context_len, int) or context_len < 1):
            raise ValueError(f"context_len must be a positive int, got {context_len!r}")
        if grad_clip is not None and not (grad_clip > 0):
            raise ValueError(f"grad_clip must be positive or None, got {grad_clip!r}")
        base = unwrap_model(model)
        get_emb = getattr(base, "get_input_embeddings", None)
        if not callable(get_emb) or not isinstance(get_emb(), nn.Embedding):
            raise TypeError("model must have get_input_embeddings() returning an nn.Embedding "
                            f"(got {type(base).__name__})")
        params = _forward_params(base)
        if "input_ids" not in params:
            raise TypeError(f"model.forward must accept input_ids=..., {type(base).__name__}.forward has "
                            f"{sorted(params)}")
        if superpose_inputs and schedule.switch_step > 0 and (
                "inputs_embeds" not in params or "position_ids" not in params):
            raise TypeError(f"model: TST feeds mean embeddings, so model.forward must accept inputs_embeds= and "
                            f"position_ids= (Hugging Face convention); {type(base).__name__}.forward has "
                            f"{sorted(params)}")
        self.model, self.optimizer, self.schedule = model, optimizer, schedule
        self.lr_scheduler, self.context_len, self.grad_clip = lr_scheduler, context_len, grad_clip
        self.superpose_inputs, self.multi_hot_targets = bool(superpose_inputs), bool(multi_hot_targets)
        self.reinit_embeddings_at_switch, self.reinit_seed = bool(reinit_embeddings_at_switch), reinit_seed
        self._extra_kwargs = {"use_cache": False} if "use_cache" in params else {}
        self.step = 0

    # ------------------------------------------------------------------ configuration
    def variant(self) -> dict[str, Any]:
        return {"superpose_inputs": self.superpose_inputs, "multi_hot_targets": self.multi_hot_targets,
                "reinit_embeddings_at_switch": self.reinit_embeddings_at_switch,
                "context_len": self.context_len}

    def row_len(self, step: int, context_len: int | None = None) -> int:
        """Raw tokens per row at ``step``: ``s·(L+1)`` (bag inputs), ``L+s`` (output-only), ``L+1`` (NTP)."""
        L = context_len if context_len is not None else self.context_len
        if L is None:
            raise ValueError("context_len is unknown: pass it to TSTTrainer(context_len=...) or here")
        s = self.schedule.bag_size
        if self.schedule.phase(step) == "recovery" or (not self.superpose_inputs and not self.multi_hot_targets):
            return L + 1
        return s * (L + 1) if self.superpose_inputs else L + s

    # ------------------------------------------------------------------ one step
    def _phase1_loss(self, ids: torch.Tensor) -> tuple[torch.Tensor, str]:
        s = self.schedule.bag_size
        base = unwrap_model(self.model)
        if self.superpose_inputs:
            inputs, targets = fold_bags(ids, s)  # [B, L, s] each
            b, L, _ = inputs.shape
            h0 = superpose_embeddings(inputs, base.get_input_embeddings())  # [B, L, D]
            # Bag j sits at position j (inferred; PatchTrain does the same): RoPE over 0..L-1.
            pos = torch.arange(L, device=ids.device).unsqueeze(0).expand(b, L)
            logits = _logits(self.model(inputs_embeds=h0, position_ids=pos, **self._extra_kwargs))
            if not self.multi_hot_targets:
                targets = targets[:, :, :1]  # input-only ablation: next bag's first token
        else:  # output-only ablation: ordinary tokens in, the next s tokens out (MCE)
            n = ids.shape[1]
            if n < s + 1:
                raise ValueError(f"batch_ids rows of length {n} are shorter than L + s with s={s}")
            L = n - s
            logits = _logits(self.model(input_ids=ids[:, :L], **self._extra_kwargs))
            # targets[b, j, k] = x_{j+1+k}: [B, L, s]
            targets = ids.unfold(1, s, 1)[:, 1:L + 1]
        return multi_hot_cross_entropy(logits, targets), ("mce" if targets.shape[-1] > 1 else "ce")

    def _ntp_loss(self, ids: torch.Tensor) -> torch.Tensor:
        logits = _logits(self.model(input_ids=ids[:, :-1], **self._extra_kwargs))
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))

    def _reinit_embeddings(self) -> None:
        """Ablation: fresh N(0, σ²) input/output embeddings (σ = the model's init std, default 0.02) and no
        optimizer state for them (inferred: the paper only says they are re-initialised)."""
        base = unwrap_model(self.model)
        cfg = getattr(base, "config", None)
        std = float(getattr(cfg, "init_std", getattr(cfg, "initializer_range", 0.02)))
        gen = torch.Generator().manual_seed(self.reinit_seed)
        weights = [base.get_input_embeddings().weight]
        get_out = getattr(base, "get_output_embeddings", None)
        out = get_out() if callable(get_out) else None
        if out is not None and out.weight is not weights[0]:
            weights.append(out.weight)
        with torch.no_grad():
            for w in weights:
                w.copy_(torch.randn(w.shape, generator=gen).mul_(std).to(w))
                self.optimizer.state.pop(w, None)

    def train_step(self, batch_ids: torch.Tensor, step: int | None = None) -> dict[str, Any]:
        """One optimizer step on ``batch_ids: int64 [B, row_len(step)]`` (this rank's rows).

        ``step`` defaults to the trainer's counter and, when given, must equal it (resume safety).
        Returns ``{"step", "loss", "objective" ("mce" | "ce"), "phase", "raw_tokens" (global, this step),
        "positions" (global B·L), "lr"}``; ``loss`` is the rank-averaged training loss (nats/token).
        """
        if step is None:
            step = self.step
        if step != self.step:
            raise ValueError(f"step={step} but the trainer is at step {self.step}; steps must be consecutive "
                             "(restore a checkpoint to jump)")
        if step >= self.schedule.total_steps:
            raise ValueError(f"step {step} is past the schedule's total_steps={self.schedule.total_steps}")
        if not isinstance(batch_ids, torch.Tensor) or batch_ids.dim() != 2:
            raise ValueError(f"batch_ids must be a 2-D int64 tensor [B, row_len], got "
                             f"{tuple(getattr(batch_ids, 'shape', ()))}")
        if batch_ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"batch_ids must be an integer tensor, got {batch_ids.dtype}")
        phase = self.schedule.phase(step)
        if self.context_len is not None and batch_ids.shape[1] != self.row_len(step):
            raise ValueError(f"batch_ids rows must hold {self.row_len(step)} raw tokens at step {step} "
                             f"({phase}, L={self.context_len}, s={self.schedule.bag_size}), got {batch_ids.shape[1]}")
        if phase == "recovery" and step == self.schedule.switch_step and self.reinit_embeddings_at_switch \
                and step > 0:
            self._reinit_embeddings()
        base = unwrap_model(self.model)
        ids = batch_ids.to(next(base.parameters()).device).long()
        self.model.train()
        if phase == "superposition" and (self.superpose_inputs or self.multi_hot_targets):
            loss, objective = self._phase1_loss(ids)
            positions = ids.shape[1] // self.schedule.bag_size - 1 if self.superpose_inputs \
                else ids.shape[1] - self.schedule.bag_size
        else:
            if ids.shape[1] < 2:
                raise ValueError(f"batch_ids rows need at least 2 tokens for next-token prediction, got {ids.shape[1]}")
            loss, objective, positions = self._ntp_loss(ids), "ce", ids.shape[1] - 1
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite loss {float(loss)} at step {step} ({phase})")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(base.parameters(), self.grad_clip)
        lr = float(self.optimizer.param_groups[0]["lr"])
        self.optimizer.step()
        if self.lr_scheduler is not None:
            self.lr_scheduler.step()
        self.step += 1
        _, world = _world()
        value = loss.detach().float()
        if world > 1:
            import torch.distributed as dist

            dist.all_reduce(value)
            value /= world
        return {"step": step, "loss": float(value), "objective": objective, "phase": phase,
                "raw_tokens": int(batch_ids.numel()) * world, "positions": int(positions * len(batch_ids)) * world,
                "lr": lr}

    def fit(self, data: Any, *, until_step: int | None = None,
            callback: Callable[[TSTTrainer, dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
        """Train from the current step to ``until_step`` (default: the end of the schedule), pulling rows of
        the right length each step with ``data.next_batch(row_len)`` (e.g. :class:`neurips26.nn.TokenWindows`).
        ``callback(trainer, step_record)`` runs after every step (evaluation, logging)."""
        if self.context_len is None:
            raise ValueError("fit needs context_len: pass TSTTrainer(context_len=L)")
        end = self.schedule.total_steps if until_step is None else until_step
        if not isinstance(end, int) or not self.step <= end <= self.schedule.total_steps:
            raise ValueError(f"until_step must be an int in [{self.step}, {self.schedule.total_steps}], got {end!r}")
        history = []
        while self.step < end:
            record = self.train_step(data.next_batch(self.row_len(self.step)))
            history.append(record)
            if callback is not None:
                callback(self, record)
        return history

    # ------------------------------------------------------------------ checkpoint / resume
    def state_dict(self, data: Any | None = None) -> dict[str, Any]:
        """Everything needed to resume exactly: step, schedule, variant, model, optimizer, LR scheduler,
        the data position (``data.state_dict()``) and torch's CPU RNG state."""
        return {"format": _FORMAT, "step": self.step, "schedule": self.schedule.to_dict(),
                "variant": self.variant(), "reinit_seed": self.reinit_seed,
                "model": unwrap_model(self.model).state_dict(), "optimizer": self.optimizer.state_dict(),
                "lr_scheduler": None if self.lr_scheduler is None else self.lr_scheduler.state_dict(),
                "data": None if data is None else data.state_dict(), "rng": torch.get_rng_state()}

    def load_state_dict(self, state: dict[str, Any], data: Any | None = None) -> None:
        """Restore a :meth:`state_dict`; refuses (``ValueError``) a different schedule or variant."""
        if state.get("format") != _FORMAT:
            raise ValueError(f"not a TSTTrainer checkpoint (format {state.get('format')!r})")
        if state["schedule"] != self.schedule.to_dict():
            raise ValueError(f"schedule: the checkpoint was written with {state['schedule']}, this trainer has "
                             f"{self.schedule.to_dict()}; refusing to resume with a different schedule")
        if state["variant"] != self.variant() or state.get("reinit_seed") != self.reinit_seed:
            raise ValueError(f"the checkpoint was written by a trainer with {state['variant']}, this one has "
                             f"{self.variant()}; refusing to resume")
        if (state["lr_scheduler"] is None) != (self.lr_scheduler is None):
            raise ValueError("lr_scheduler: the checkpoint and this trainer disagree on having one")
        if data is not None and state["data"] is None:
            raise ValueError("data: the checkpoint holds no data position")
        unwrap_model(self.model).load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.lr_scheduler is not None:
            self.lr_scheduler.load_state_dict(state["lr_scheduler"])
        if data is not None:
            data.load_state_dict(state["data"])
        torch.set_rng_state(state["rng"])
        self.step = int(state["step"])

    def save_checkpoint(self, path: str | os.PathLike, data: Any | None = None) -> Path:
        """Write :meth:`state_dict` atomically (temporary file + ``os.replace``); under DDP rank 0 writes."""
        path = Path(path)
        state = self.state_dict(data)
        rank, world = _world()
        if rank == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            os.close(fd)
            try:
                torch.save(state, tmp)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        if world > 1:
            import torch.distributed as dist

            dist.barrier()
        return path

    def load_checkpoint(self, path: str | os.PathLike, data: Any | None = None) -> None:
        state = torch.load(Path(path), map_location=next(unwrap_model(self.model).parameters()).device,
                           weights_only=False)
        self.load_state_dict(state, data)


def flops_per_step(model: nn.Module, *, rows: int, context_len: int) -> float:
    r"""Approximate training FLOPs of one step, $6 N \cdot B L$ plus attention $12\,n_\ell\, d\, B L^2 / 2$
    (causal). Equal in both TST phases: the model always runs on ``rows × context_len`` positions."""
    base = unwrap_model(model)
    n_params = sum(p.numel() for p in {id(p): p for p in base.parameters()}.values())
    n_params -= base.get_input_embeddings().weight.numel()  # the lookup is not a matmul
    get_out = getattr(base, "get_output_embeddings", None)
    if callable(get_out) and get_out() is not None and get_out().weight is base.get_input_embeddings().weight:
        n_params += get_out().weight.numel()  # the tied head still is one
    cfg = getattr(base, "config", None)
    n_layers = getattr(cfg, "n_layers", getattr(cfg, "num_hidden_layers", 0))
    d_model = getattr(cfg, "d_model", getattr(cfg, "hidden_size", 0))
    tokens = rows * context_len
    return 6.0 * n_params * tokens + 6.0 * n_layers * d_model * rows * context_len ** 2


def bits_per_byte(nats_per_token: float, bytes_per_token: float) -> float:
    """Convert nats/token to bits/byte given the average UTF-8 bytes per token."""
    return nats_per_token / (bytes_per_token * math.log(2))
