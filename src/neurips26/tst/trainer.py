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

import copy
import glob
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

from neurips26.constraints import Choice, Instance, Int, Optional, Real, Tensor, check_arguments, validate
from neurips26.nn.train import NonFiniteLossError, TrainingGuard

from .schedule import CONTEXT, TSTSchedule
from .superposition import TOKEN_IDS, fold_bags, multi_hot_cross_entropy, superpose_embeddings

_FORMAT = "neurips26.tst.TSTTrainer/1"

MODEL = Instance(nn.Module, "nn.Module")
COUNT = Int(low=1)


def unwrap_model(model: nn.Module) -> nn.Module:
    """The model inside its wrappers: ``torch.compile`` (``_orig_mod``), ``DistributedDataParallel`` /
    ``DataParallel`` (``.module``), nested in any order; the model itself when unwrapped."""
    for _ in range(8):
        if isinstance(model, nn.parallel.DistributedDataParallel | nn.DataParallel):
            model = model.module
        elif isinstance(getattr(model, "_orig_mod", None), nn.Module):  # torch._dynamo OptimizedModule
            model = model._orig_mod
        else:
            break
    return model


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
@validate(model=MODEL)
def check_tst_model(model: nn.Module, schedule: TSTSchedule, superpose_inputs: bool = True) -> set[str]:
    """Refuse a model TST cannot drive (wrapped models are unwrapped); returns its ``forward`` parameter names.

    TST needs ``get_input_embeddings()`` returning an ``nn.Embedding``, ``forward(input_ids=...)`` and, when the
    superposition phase feeds mean embeddings, ``inputs_embeds=`` and ``position_ids=`` (Hugging Face names).
    """
    base = unwrap_model(model)
    get_emb = getattr(base, "get_input_embeddings", None)
    if not callable(get_emb) or not isinstance(get_emb(), nn.Embedding):
        raise TypeError("model must have get_input_embeddings() returning an nn.Embedding "
                        f"(got {type(base).__name__})")
    # one non-finite row poisons every bag mean that contains its token, and with untied embeddings a row the
    # batches never touch would stay NaN unseen: refuse it by name, before any step
    _check_finite_embedding(get_emb().weight, "input")
    get_out = getattr(base, "get_output_embeddings", None)
    out = get_out() if callable(get_out) else None
    if isinstance(getattr(out, "weight", None), torch.Tensor) and out.weight is not get_emb().weight:
        _check_finite_embedding(out.weight, "output")
    params = _forward_params(base)
    # input_ids= always; inputs_embeds= and position_ids= when the superposition phase feeds mean embeddings
    needed = ["input_ids"] + (["inputs_embeds", "position_ids"] if superpose_inputs and schedule.switch_step > 0
                              else [])
    missing = [name for name in needed if name not in params]
    if missing:
        raise TypeError(f"model: TST calls model.forward with {'=, '.join(needed)}= (Hugging Face convention; "
                        f"inputs_embeds= carries the mean embeddings), {type(base).__name__}.forward lacks "
                        f"{missing}, has {sorted(params)}")
    return params


def _check_finite_embedding(weight: torch.Tensor, which: str) -> None:
    bad = ~torch.isfinite(weight.detach())
    if bad.any():
        token = int(bad.nonzero()[0, 0])
        raise ValueError(f"model: the {which} embedding weight holds {int(bad.sum())} NaN/inf value(s) (first in "
                         f"row {token}, token id {token}); TST averages embeddings over bags, so a non-finite row "
                         "poisons every bag holding that token: reload or re-initialise the model")


def tst_row_len(schedule: TSTSchedule, step: int, context_len: int, *, superpose_inputs: bool = True,
                multi_hot_targets: bool = True) -> int:
    """Raw tokens one row needs at ``step``: ``s·(L+1)`` with bag inputs, ``L+s`` for the output-only ablation,
    ``L+1`` for next-token prediction (the recovery phase, or both ablations off)."""
    s = schedule.bag_size
    if schedule.phase(step) == "recovery" or (not superpose_inputs and not multi_hot_targets):
        return context_len + 1
    return s * (context_len + 1) if superpose_inputs else context_len + s


def superposition_loss(model: nn.Module, ids: torch.Tensor, bag_size: int, *, superpose_inputs: bool = True,
                       multi_hot_targets: bool = True, extra_kwargs: dict[str, Any] | None = None,
                       ) -> tuple[torch.Tensor, str]:
    """Phase-1 loss of raw rows ``ids: int64 [B, row_len]`` → (scalar loss in nats/token, ``"mce"`` | ``"ce"``).

    Bag inputs: rows of ``s·(L+1)`` tokens fold into L input bags and L target bags; the model reads the mean
    embedding of bag j at position j and is scored on the whole bag j+1 (multi-hot CE). The ablations swap
    either side for ordinary tokens (see :class:`TSTTrainer`).
    """
    extra = extra_kwargs or {}
    s = bag_size
    if superpose_inputs:
        inputs, targets = fold_bags(ids, s)  # [B, L, s] each
        b, L, _ = inputs.shape
        h0 = superpose_embeddings(inputs, unwrap_model(model).get_input_embeddings())  # [B, L, D]
        # Bag j sits at position j (inferred; PatchTrain does the same): RoPE over 0..L-1.
        pos = torch.arange(L, device=ids.device).unsqueeze(0).expand(b, L)
        logits = _logits(model(inputs_embeds=h0, position_ids=pos, **extra))
        if not multi_hot_targets:
            targets = targets[:, :, :1]  # input-only ablation: next bag's first token
    else:  # output-only ablation: ordinary tokens in, the next s tokens out (MCE)
        n = ids.shape[1]
        if n < s + 1:
            raise ValueError(f"batch_ids rows of length {n} are shorter than L + s with s={s}")
        L = n - s
        logits = _logits(model(input_ids=ids[:, :L], **extra))
        # targets[b, j, k] = x_{j+1+k}: [B, L, s]
        targets = ids.unfold(1, s, 1)[:, 1:L + 1]
    return multi_hot_cross_entropy(logits, targets), ("mce" if targets.shape[-1] > 1 else "ce")


def ntp_loss(model: nn.Module, ids: torch.Tensor, *, extra_kwargs: dict[str, Any] | None = None) -> torch.Tensor:
    """Next-token cross-entropy (nats/token, float32) of rows ``ids: int64 [B, L+1]``."""
    logits = _logits(model(input_ids=ids[:, :-1], **(extra_kwargs or {})))
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def uses_superposition(schedule: TSTSchedule, step: int, *, superpose_inputs: bool = True,
                       multi_hot_targets: bool = True) -> bool:
    """Whether ``step`` trains on the phase-1 objective (the superposition phase of a variant that has one)."""
    return schedule.phase(step) == "superposition" and (superpose_inputs or multi_hot_targets)


def tst_loss(model: nn.Module, ids: torch.Tensor, schedule: TSTSchedule, step: int, *,
             superpose_inputs: bool = True, multi_hot_targets: bool = True,
             extra_kwargs: dict[str, Any] | None = None) -> tuple[torch.Tensor, str]:
    """The training loss of rows ``ids`` at optimizer ``step`` → (loss, ``"mce"`` | ``"ce"``): the phase-1
    objective in the superposition phase, next-token prediction otherwise."""
    if uses_superposition(schedule, step, superpose_inputs=superpose_inputs, multi_hot_targets=multi_hot_targets):
        return superposition_loss(model, ids, schedule.bag_size, superpose_inputs=superpose_inputs,
                                  multi_hot_targets=multi_hot_targets, extra_kwargs=extra_kwargs)
    return ntp_loss(model, ids, extra_kwargs=extra_kwargs), "ce"


@validate(windows=Tensor("N T", dtype=TOKEN_IDS), batch_size=COUNT)
def evaluate_ntp(model: nn.Module, windows: torch.Tensor, *, batch_size: int = 32) -> float:
    """Mean next-token cross-entropy (nats/token) of ``model`` on ``windows: int64 [n, L+1]``."""
    if windows.shape[0] == 0 or windows.shape[1] < 2:
        raise ValueError(f"evaluate_ntp: windows must hold at least one window of L+1 >= 2 tokens, got shape "
                         f"{tuple(windows.shape)}")
    base = unwrap_model(model)
    was_training = base.training
    base.eval()
    device = next(base.parameters()).device
    total, count = 0.0, 0
    kwargs = {"use_cache": False} if "use_cache" in _forward_params(base) else {}
    try:
        with torch.no_grad():  # an evaluation: no graph, no saved activations
            for start in range(0, len(windows), batch_size):
                rows = windows[start:start + batch_size].to(device)
                logits = _logits(base(input_ids=rows[:, :-1], **kwargs))
                loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), rows[:, 1:].reshape(-1),
                                       reduction="sum")
                total += float(loss)
                count += rows[:, 1:].numel()
    finally:
        base.train(was_training)  # also after a failed forward
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
        autocast_dtype: ``torch.bfloat16`` / ``torch.float16`` runs the forward under ``torch.autocast`` on the
            model's device (losses in fp32; fp16 has no loss scaler here, prefer bf16); ``None``: no autocast.
        grad_accum_steps: each :meth:`train_step` splits its rows into this many equal micro-batches (``B``
            must be divisible), back-propagates ``loss_i / k`` for each and steps the optimizer once, so the
            update equals the one-batch update (equal micro-batch sizes).

    Accepts ``torch.compile(model)`` and DDP-wrapped models (:func:`unwrap_model` finds the module).
    """

    @validate(model=MODEL, optimizer=Instance(torch.optim.Optimizer, "torch.optim.Optimizer"),
              schedule=Instance(TSTSchedule), context_len=Optional(CONTEXT),
              grad_clip=Optional(Real(0.0, closed="neither")),
              autocast_dtype=Choice(None, torch.bfloat16, torch.float16), grad_accum_steps=COUNT, reinit_seed=Int())
    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, schedule: TSTSchedule, *,
                 lr_scheduler: Any | None = None, context_len: int | None = None,
                 superpose_inputs: bool = True, multi_hot_targets: bool = True,
                 reinit_embeddings_at_switch: bool = False, grad_clip: float | None = 1.0,
                 reinit_seed: int = 0, autocast_dtype: torch.dtype | None = None,
                 grad_accum_steps: int = 1) -> None:
        params = check_tst_model(model, schedule, superpose_inputs)
        self.model, self.optimizer, self.schedule = model, optimizer, schedule
        self.lr_scheduler, self.context_len, self.grad_clip = lr_scheduler, context_len, grad_clip
        self.superpose_inputs, self.multi_hot_targets = bool(superpose_inputs), bool(multi_hot_targets)
        self.reinit_embeddings_at_switch, self.reinit_seed = bool(reinit_embeddings_at_switch), reinit_seed
        self.autocast_dtype, self.grad_accum_steps = autocast_dtype, grad_accum_steps
        self._extra_kwargs = {"use_cache": False} if "use_cache" in params else {}
        self.step = 0

    # ------------------------------------------------------------------ configuration
    def variant(self) -> dict[str, Any]:
        return {"superpose_inputs": self.superpose_inputs, "multi_hot_targets": self.multi_hot_targets,
                "reinit_embeddings_at_switch": self.reinit_embeddings_at_switch,
                "context_len": self.context_len}

    def _recipe(self) -> dict[str, Any]:
        """What a resume must keep besides the schedule and variant: grad clip, the optimizer's class and
        hyperparameters (``lr`` excluded: schedulers move it), the LR scheduler's class and its multipliers at
        16 probe steps (a different warmup or decay shows there)."""
        groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()
                   if k not in ("params", "lr", "initial_lr") and isinstance(v, int | float | bool | str | tuple
                                                                            | type(None))}
                  for g in self.optimizer.param_groups]
        sched = self.lr_scheduler
        probes = None
        lambdas = getattr(sched, "lr_lambdas", None)
        if lambdas is not None:
            total = self.schedule.total_steps
            points = sorted({round(i * max(total - 1, 0) / 15) for i in range(16)})
            probes = [[round(float(fn(p)), 9) for p in points] for fn in lambdas]
        return {"grad_clip": self.grad_clip, "optimizer": type(self.optimizer).__name__, "param_groups": groups,
                "lr_scheduler": None if sched is None else type(sched).__name__, "lr_probes": probes,
                "grad_accum_steps": self.grad_accum_steps,
                "autocast_dtype": None if self.autocast_dtype is None else str(self.autocast_dtype)}

    def row_len(self, step: int, context_len: int | None = None) -> int:
        """Raw tokens per row at ``step``: ``s·(L+1)`` (bag inputs), ``L+s`` (output-only), ``L+1`` (NTP)."""
        L = context_len if context_len is not None else self.context_len
        if L is None:
            raise ValueError("context_len is unknown: pass it to TSTTrainer(context_len=...) or here")
        return tst_row_len(self.schedule, step, L, superpose_inputs=self.superpose_inputs,
                           multi_hot_targets=self.multi_hot_targets)

    # ------------------------------------------------------------------ one step
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

    @validate(step=Optional(Int()))
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
        # rows of row_len(step) raw tokens when the context length is known: s·(L+1), L+s or L+1 (see row_len)
        row = "N" if self.context_len is None else str(self.row_len(step))
        check_arguments("TSTTrainer.train_step", {"batch_ids": Tensor(f"B {row}", dtype=TOKEN_IDS)},
                        {"batch_ids": batch_ids})
        phase = self.schedule.phase(step)
        vocab = unwrap_model(self.model).get_input_embeddings().num_embeddings
        if batch_ids.numel() == 0:
            raise ValueError(f"batch_ids is empty, got shape {tuple(batch_ids.shape)}")
        lo, hi = int(batch_ids.min()), int(batch_ids.max())
        if lo < 0 or hi >= vocab:
            raise ValueError(f"batch_ids must lie in [0, vocab_size={vocab}), got ids in [{lo}, {hi}]")
        k = self.grad_accum_steps
        if batch_ids.shape[0] % k:
            raise ValueError(f"batch_ids has {batch_ids.shape[0]} rows, not divisible by grad_accum_steps={k}")
        if phase == "recovery" and step == self.schedule.switch_step and self.reinit_embeddings_at_switch \
                and step > 0:
            self._reinit_embeddings()
        base = unwrap_model(self.model)
        device = next(base.parameters()).device
        ids = batch_ids.to(device).long()
        phase1 = uses_superposition(self.schedule, step, superpose_inputs=self.superpose_inputs,
                                    multi_hot_targets=self.multi_hot_targets)
        if not phase1 and ids.shape[1] < 2:
            raise ValueError(f"batch_ids rows need at least 2 tokens for next-token prediction, got {ids.shape[1]}")
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        total = torch.zeros((), device=device)
        for micro in ids.chunk(k, dim=0):
            with torch.autocast(device.type, dtype=self.autocast_dtype or torch.float32,
                                enabled=self.autocast_dtype is not None):
                loss, objective = tst_loss(self.model, micro, self.schedule, step,
                                           superpose_inputs=self.superpose_inputs,
                                           multi_hot_targets=self.multi_hot_targets, extra_kwargs=self._extra_kwargs)
            if not torch.isfinite(loss):
                self.optimizer.zero_grad(set_to_none=True)
                raise NonFiniteLossError(f"TSTTrainer: non-finite loss {float(loss)} at step {step} ({phase}); "
                                         "lower the learning rate or check the data")
            (loss / k).backward()
            total = total + loss.detach().float() / k
        loss = total
        if phase1:
            positions = ids.shape[1] // self.schedule.bag_size - 1 if self.superpose_inputs \
                else ids.shape[1] - self.schedule.bag_size
        else:
            positions = ids.shape[1] - 1
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
        check_arguments("TSTTrainer.fit", {"until_step": Int(low=self.step, high=self.schedule.total_steps)},
                        {"until_step": end})
        history = []
        # all or nothing: on a failure (non-finite loss, an error, an interrupt) the guard puts weights, optimizer
        # state and modes back as they were before the fit; the step counter, LR scheduler and data position
        # go back with them, so the trainer can resume from where the fit began
        start = (self.step, None if self.lr_scheduler is None else self.lr_scheduler.state_dict(),
                 data.state_dict() if hasattr(data, "state_dict") else None)
        try:
            with TrainingGuard(unwrap_model(self.model), self.optimizer, where="TSTTrainer.fit"):
                while self.step < end:
                    record = self.train_step(data.next_batch(self.row_len(self.step)))
                    history.append(record)
                    if callback is not None:
                        callback(self, record)
        except BaseException:
            self.step = start[0]
            if start[1] is not None:
                self.lr_scheduler.load_state_dict(start[1])
            if start[2] is not None and hasattr(data, "load_state_dict"):
                data.load_state_dict(start[2])
            raise
        return history

    # ------------------------------------------------------------------ checkpoint / resume
    def state_dict(self, data: Any | None = None) -> dict[str, Any]:
        """Everything needed to resume exactly: step, schedule, variant, model, optimizer, LR scheduler,
        the data position (``data.state_dict()``) and torch's CPU RNG state."""
        return {"format": _FORMAT, "step": self.step, "schedule": self.schedule.to_dict(),
                "variant": self.variant(), "reinit_seed": self.reinit_seed, "recipe": self._recipe(),
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
        recipe = state.get("recipe")
        if recipe is not None and recipe != self._recipe():
            mine = self._recipe()
            diff = sorted(k for k in mine if recipe.get(k) != mine[k])
            raise ValueError(f"the checkpoint was trained with another recipe ({', '.join(diff)}): checkpoint "
                             f"{ {k: recipe.get(k) for k in diff} }, this trainer { {k: mine[k] for k in diff} }; "
                             "refusing to resume")
        # validate everything before the first write (a failed load changes nothing)
        model = unwrap_model(self.model)
        own = model.state_dict()
        saved = state["model"]
        if own.keys() != saved.keys():
            missing, extra = sorted(own.keys() - saved.keys()), sorted(saved.keys() - own.keys())
            raise ValueError(f"model: the checkpoint's tensors differ from this model's (missing {missing[:5]}, "
                             f"unexpected {extra[:5]})")
        bad = [k for k in own if tuple(own[k].shape) != tuple(saved[k].shape)]
        if bad:
            raise ValueError(f"model: tensor shapes differ from the checkpoint's, e.g. {bad[0]}: "
                             f"{tuple(saved[bad[0]].shape)} in the checkpoint, {tuple(own[bad[0]].shape)} here")
        opt_groups = state["optimizer"].get("param_groups", [])
        if [len(g["params"]) for g in opt_groups] != [len(g["params"]) for g in self.optimizer.param_groups]:
            raise ValueError("optimizer: the checkpoint's parameter groups do not match this optimizer's")
        step = state["step"]  # the checkpoint's step counter
        check_arguments("TSTTrainer.load_state_dict", {"state['step']": Int(low=0, high=self.schedule.total_steps)},
                        {"state['step']": step})
        previous_data = data.state_dict() if data is not None else None
        if data is not None:
            data.load_state_dict(state["data"])  # may refuse another layout: nothing else was touched yet
        previous = {"model": {k: v.detach().clone() for k, v in own.items()},
                    "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                    "lr_scheduler": None if self.lr_scheduler is None else self.lr_scheduler.state_dict()}
        try:
            model.load_state_dict(saved)
            self.optimizer.load_state_dict(state["optimizer"])
            if self.lr_scheduler is not None:
                self.lr_scheduler.load_state_dict(state["lr_scheduler"])
            torch.set_rng_state(state["rng"])
        except Exception:
            model.load_state_dict(previous["model"])
            self.optimizer.load_state_dict(previous["optimizer"])
            if self.lr_scheduler is not None:
                self.lr_scheduler.load_state_dict(previous["lr_scheduler"])
            if data is not None:
                data.load_state_dict(previous_data)
            raise
        self.step = int(step)

    def save_checkpoint(self, path: str | os.PathLike, data: Any | None = None) -> Path:
        """Write :meth:`state_dict` atomically (temporary file + ``os.replace``); under DDP rank 0 writes.

        Temporary files a killed earlier save left beside ``path`` (``.<name>.*.tmp``) are removed first."""
        path = Path(path)
        state = self.state_dict(data)
        rank, world = _world()
        if rank == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_checkpoint_tmp(path)
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
        """Restore a :meth:`save_checkpoint` file (all of it is checked before anything is changed); stale
        temporary files of an interrupted save beside it are removed (by rank 0 under DDP)."""
        if _world()[0] == 0:
            remove_stale_checkpoint_tmp(Path(path))
        state = torch.load(Path(path), map_location=next(unwrap_model(self.model).parameters()).device,
                           weights_only=False)
        self.load_state_dict(state, data)


def remove_stale_checkpoint_tmp(path: str | os.PathLike) -> list[Path]:
    """Delete the ``.<name>.*.tmp`` siblings of checkpoint ``path``: what a save killed mid-write leaves
    (``save_checkpoint`` writes to such a file and renames it; SIGKILL skips its ``finally``).

    One checkpoint path has one writer (rank 0 of one run), so any such file found before a save or a load
    is a leftover. Returns the removed paths."""
    path = Path(path)
    removed = []
    if not path.parent.is_dir():
        return removed
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            if tmp.is_file() and not tmp.is_symlink():
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:  # another process removed it first
            pass
    return removed


@validate(model=MODEL, rows=COUNT, context_len=CONTEXT)
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


@validate(nats_per_token=Real(), bytes_per_token=Real(0.0, closed="neither"))
def bits_per_byte(nats_per_token: float, bytes_per_token: float) -> float:
    """Convert nats/token to bits/byte given the average UTF-8 bytes per token (> 0)."""
    return nats_per_token / (bytes_per_token * math.log(2))
