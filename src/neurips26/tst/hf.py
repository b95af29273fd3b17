"""Token-Superposition Training from Hugging Face's ``transformers.Trainer``.

    from neurips26.tst import TSTSchedule
    from neurips26.tst.hf import TSTHFTrainer

    args = TrainingArguments("out", max_steps=1000, per_device_train_batch_size=16, learning_rate=3e-4,
                             lr_scheduler_type="cosine", warmup_steps=50, use_cpu=True, report_to=[])
    trainer = TSTHFTrainer(model=model, args=args, train_tokens=token_stream,      # int64 [N]
                           schedule=TSTSchedule(1000, bag_size=4, superposition_fraction=0.3), context_len=256)
    trainer.train()                   # steps 0..299 on bags, 300..999 next-token prediction, one LR schedule

Two things make a two-phase recipe fit a trainer that knows one loss and one dataset:

* **Rows of the phase's length.** A phase-1 row holds ``s·(L+1)`` raw tokens, a recovery row ``L+1``. The
  training data is a stream of token ids, served by :class:`TSTRowStream`: the first ``switch_step`` optimizer
  steps read rows of phase-1 length, the rest rows of ``L+1``, in the order
  :meth:`neurips26.tst.TSTTrainer.fit` reads them (same :class:`~neurips26.nn.TokenWindows`). The dataset
  itself knows which step a row belongs to, so prefetching and the resume-time skip of Trainer cannot put a
  row in the wrong phase.
* **A loss that looks at the step.** :meth:`TSTHFTrainer.compute_loss` reads ``state.global_step`` (the optimizer
  step being computed), checks the row length against it and computes the same losses as
  :class:`~neurips26.tst.TSTTrainer` (``superposition_loss`` / ``ntp_loss``). Evaluation (``model.eval()``)
  is always next-token prediction on ``L+1`` rows.

With the same model, optimizer, LR scheduler, clipping and rows, one ``TSTHFTrainer.train()`` gives the
weights of ``TSTTrainer.fit`` (tested, gradient accumulation included).

**Logs.** The training loss of phase 1 (a multi-hot CE over bags) is not a next-token loss, so the trainer
never logs the two under one key: each training log holds ``mce_loss`` (phase-1 steps of the window; the
input-only ablation's phase-1 CE is ``bag_ce_loss``) and/or ``ntp_loss`` (recovery steps), each the mean of its
own micro-batch losses over ranks; Trainer's mixed ``loss`` key is dropped from training logs.

**Several processes** (``torchrun`` / ``accelerate launch``, DDP through Trainer's accelerate): the row stream is
sharded by rank, as :class:`~neurips26.tst.TSTTrainer` under DDP is: rank ``k`` of ``W`` reads lanes
``k·B/W .. (k+1)·B/W`` of the global batch ``B = per_device_train_batch_size × gradient_accumulation_steps × W``
(``TokenWindows(rank=, world_size=)``), and the dataloader is not re-sharded by accelerate. The union over ranks
is the rows one process with the same global batch reads (tested with 2 gloo processes: same weights).
The embedding re-initialisation ablation is not offered here.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import DataLoader, IterableDataset

from neurips26.constraints import Instance, Int, Optional, check_arguments, validate
from neurips26.nn import TokenWindows
from neurips26.nn.train import NonFiniteLossError

from .schedule import CONTEXT, TSTSchedule
from .stream import ShuffledTokenWindows
from .trainer import check_tst_model, ntp_loss, tst_loss, tst_row_len, uses_superposition

try:
    import transformers
except ImportError as err:  # pragma: no cover - exercised only without the hf extra
    raise ImportError("neurips26.tst.hf needs transformers: pip install 'neurips26[hf]'") from err

__all__ = ["TSTHFTrainer", "TSTRowStream"]

_SCHEDULE = Instance(TSTSchedule)
_ARGS = Instance(transformers.TrainingArguments, "transformers.TrainingArguments")


class TSTRowStream(IterableDataset):
    """Rows ``{"input_ids": int64 [row_len(step)]}`` for ``total_steps`` optimizer steps of ``rows_per_step``.

    Args:
        tokens: int64 ``[N]`` training token stream.
        schedule: the :class:`TSTSchedule` whose phases decide each step's row length.
        context_len: L, positions the model sees per row.
        rows_per_step: *global* rows per optimizer step (``per_device_train_batch_size ×
            gradient_accumulation_steps × world_size``).
        seed: the data order (see :class:`TokenWindows`; with ``block_len`` also the block order and window
            offset of the first epoch, :class:`~neurips26.tst.stream.ShuffledTokenWindows`).
        block_len: ``None`` reads the stream in order (``TokenWindows``); an int shuffles blocks of that many
            tokens by ``seed`` first.
        rank, world_size: this process's share: ``rows_per_step / world_size`` rows (its lanes) per step.
        superpose_inputs, multi_hot_targets: the variant (both ``True``: TST), which sets phase-1 row length.

    Every iteration starts again from the stream's beginning, so the rows of step t are the same each time
    (that is what Trainer's resume relies on: it skips the batches already seen).
    """

    @validate(schedule=_SCHEDULE, context_len=CONTEXT, rows_per_step=Int(low=1), world_size=Int(low=1),
              rank=Int(low=0), block_len=Optional(Int(low=1)))
    def __init__(self, tokens: torch.Tensor, schedule: TSTSchedule, *, context_len: int, rows_per_step: int,
                 seed: int = 0, superpose_inputs: bool = True, multi_hot_targets: bool = True,
                 block_len: int | None = None, rank: int = 0, world_size: int = 1) -> None:
        if rows_per_step % world_size or rank >= world_size:
            raise ValueError(f"rows_per_step={rows_per_step} must be divisible by world_size={world_size} and "
                             f"rank={rank} below it")
        self.tokens, self.schedule, self.context_len = tokens, schedule, context_len
        self.rows_per_step, self.seed, self.block_len = rows_per_step, seed, block_len
        self.rank, self.world_size = rank, world_size
        self.superpose_inputs, self.multi_hot_targets = bool(superpose_inputs), bool(multi_hot_targets)
        # the windows validate tokens; one lane must hold the longest row
        longest = max(self.row_len(0), context_len + 1)
        probe = self._windows()
        if probe.lane_len < longest:
            raise ValueError(f"tokens: {len(tokens)} tokens give lanes of {probe.lane_len} tokens for "
                             f"rows_per_step={rows_per_step}, shorter than the longest row ({longest} tokens)")

    def _windows(self) -> TokenWindows:
        if self.block_len is None:
            return TokenWindows(self.tokens, batch_size=self.rows_per_step, seed=self.seed, rank=self.rank,
                                world_size=self.world_size)
        return ShuffledTokenWindows(self.tokens, batch_size=self.rows_per_step, seed=self.seed,
                                    block_len=self.block_len, rank=self.rank, world_size=self.world_size)

    def row_len(self, step: int) -> int:
        return tst_row_len(self.schedule, step, self.context_len, superpose_inputs=self.superpose_inputs,
                           multi_hot_targets=self.multi_hot_targets)

    def __len__(self) -> int:
        return self.schedule.total_steps * self.rows_per_step // self.world_size

    def __iter__(self):
        windows = self._windows()
        for step in range(self.schedule.total_steps):
            for row in windows.next_batch(self.row_len(step)):
                yield {"input_ids": row}


def _loss_key(objective: str, phase1: bool) -> str:
    """The log key of one micro-batch loss: ``mce_loss`` (bags), ``bag_ce_loss`` (input-only phase 1),
    ``ntp_loss`` (next-token prediction)."""
    if not phase1:
        return "ntp_loss"
    return "mce_loss" if objective == "mce" else "bag_ce_loss"


_LOSS_KEYS = ("mce_loss", "bag_ce_loss", "ntp_loss")


class TSTHFTrainer(transformers.Trainer):
    """``transformers.Trainer`` that runs both TST phases in one ``train()``.

    Args (besides Trainer's own; ``train_dataset`` is built from ``train_tokens``):
        schedule: :class:`TSTSchedule`; ``args.max_steps`` must equal ``schedule.total_steps``.
        context_len: L, positions the model sees per row.
        train_tokens: int64 ``[N]`` training token stream (or give ``train_dataset=TSTRowStream(...)``).
        superpose_inputs, multi_hot_targets: the variant (both ``True``: TST; see :class:`TSTTrainer`).
        stream_seed, stream_block_len: the row stream's data order (see :class:`TSTRowStream`).

    The model follows the Hugging Face convention: ``forward(input_ids=..., inputs_embeds=..., position_ids=...)``
    returning ``.logits`` (or a logits tensor) and ``get_input_embeddings()``. Under several processes each
    rank reads its own lanes of the global batch (module docstring).
    """

    @validate(schedule=_SCHEDULE, context_len=CONTEXT)
    def __init__(self, *args: Any, schedule: TSTSchedule, context_len: int,
                 train_tokens: torch.Tensor | None = None, superpose_inputs: bool = True,
                 multi_hot_targets: bool = True, stream_seed: int = 0, stream_block_len: int | None = None,
                 **kwargs: Any) -> None:
        targs = kwargs.get("args", args[1] if len(args) > 1 else None)  # needed: max_steps = schedule.total_steps
        check_arguments("TSTHFTrainer", {"args": _ARGS}, {"args": targs})
        if targs.max_steps != schedule.total_steps:
            raise ValueError(f"args.max_steps must equal schedule.total_steps={schedule.total_steps} (the phases "
                             f"are counted in optimizer steps), got max_steps={targs.max_steps}")
        model = kwargs.get("model", args[0] if args else None)
        params = check_tst_model(model, schedule, superpose_inputs)
        rank, world = int(targs.process_index), int(targs.world_size)
        rows_per_step = targs.per_device_train_batch_size * targs.gradient_accumulation_steps * world
        if train_tokens is not None:
            if kwargs.get("train_dataset") is not None:
                raise ValueError("give train_tokens or train_dataset, not both")
            kwargs["train_dataset"] = TSTRowStream(train_tokens, schedule, context_len=context_len,
                                                   rows_per_step=rows_per_step, seed=stream_seed,
                                                   block_len=stream_block_len, rank=rank, world_size=world,
                                                   superpose_inputs=superpose_inputs,
                                                   multi_hot_targets=multi_hot_targets)
        data = kwargs.get("train_dataset")
        if isinstance(data, TSTRowStream) and (data.rows_per_step != rows_per_step or data.schedule != schedule
                                               or data.context_len != context_len or data.rank != rank
                                               or data.world_size != world):
            raise ValueError(f"train_dataset: its rows_per_step={data.rows_per_step}, schedule, context_len, rank "
                             f"and world_size must match the trainer's (rows_per_step={rows_per_step} = batch × "
                             f"accumulation × world size, context_len={context_len}, rank={rank}, "
                             f"world_size={world})")
        super().__init__(*args, **kwargs)
        self.schedule, self.context_len = schedule, context_len
        self.superpose_inputs, self.multi_hot_targets = bool(superpose_inputs), bool(multi_hot_targets)
        self._extra_kwargs = {"use_cache": False} if "use_cache" in params else {}
        # Our losses are token means of one micro-batch: Trainer must divide by the accumulation steps.
        self.model_accepts_loss_kwargs = False
        self.loss_is_scaled_for_ga = False
        self._loss_sums = {key: 0.0 for key in _LOSS_KEYS}
        self._loss_counts = {key: 0 for key in _LOSS_KEYS}

    def get_train_dataloader(self) -> DataLoader:
        """Under several processes a :class:`TSTRowStream` is already this rank's share: a plain DataLoader
        (accelerate would shard the rows a second time); one process: Trainer's own."""
        if isinstance(self.train_dataset, TSTRowStream) and self.train_dataset.world_size > 1:
            return DataLoader(self.train_dataset, batch_size=self._train_batch_size, collate_fn=self.data_collator,
                              num_workers=0)
        return super().get_train_dataloader()

    def compute_loss(self, model: torch.nn.Module, inputs: dict[str, torch.Tensor], return_outputs: bool = False,
                     num_items_in_batch: Any = None) -> torch.Tensor | tuple[torch.Tensor, None]:
        ids = inputs["input_ids"]
        if not model.training:  # evaluation: next-token prediction whatever the step
            loss = ntp_loss(model, ids, extra_kwargs=self._extra_kwargs)
            return (loss, None) if return_outputs else loss
        step = self.state.global_step
        expected = tst_row_len(self.schedule, step, self.context_len, superpose_inputs=self.superpose_inputs,
                               multi_hot_targets=self.multi_hot_targets)
        if ids.dim() != 2 or ids.shape[1] != expected:
            raise ValueError(f"input_ids rows must hold {expected} tokens at step {step} "
                             f"({self.schedule.phase(step)}), got shape {tuple(ids.shape)}: serve the training "
                             "data through TSTRowStream (train_tokens=...)")
        loss, objective = tst_loss(model, ids, self.schedule, step, superpose_inputs=self.superpose_inputs,
                                   multi_hot_targets=self.multi_hot_targets, extra_kwargs=self._extra_kwargs)
        if not torch.isfinite(loss):
            raise NonFiniteLossError(f"TSTHFTrainer: the training loss is non-finite ({float(loss)}) at step "
                                     f"{step} ({self.schedule.phase(step)}); lower the learning rate or check "
                                     "the data")
        phase1 = uses_superposition(self.schedule, step, superpose_inputs=self.superpose_inputs,
                                    multi_hot_targets=self.multi_hot_targets)
        key = _loss_key(objective, phase1)
        self._loss_sums[key] += float(loss.detach())
        self._loss_counts[key] += 1
        return (loss, None) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Training logs: the per-objective means since the last log replace Trainer's mixed ``loss``."""
        if "loss" in logs and not any(k.startswith("eval_") for k in logs):
            sums = torch.tensor([self._loss_sums[k] for k in _LOSS_KEYS] + [float(self._loss_counts[k])
                                                                              for k in _LOSS_KEYS],
                                dtype=torch.float64)
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
                dist.all_reduce(sums)  # every rank logs together (Trainer's own gather of the loss is collective)
            n = len(_LOSS_KEYS)
            logs = {k: v for k, v in logs.items() if k != "loss"}
            for i, key in enumerate(_LOSS_KEYS):
                if sums[n + i] > 0:
                    logs[key] = float(sums[i] / sums[n + i])
            self._loss_sums = {key: 0.0 for key in _LOSS_KEYS}
            self._loss_counts = {key: 0 for key in _LOSS_KEYS}
        super().log(logs, start_time)

    def prediction_step(self, model: torch.nn.Module, inputs: dict[str, torch.Tensor], prediction_loss_only: bool,
                        ignore_keys: list[str] | None = None) -> tuple[torch.Tensor, None, None]:
        """Evaluation rows ``{"input_ids": [L+1]}`` (no ``labels`` needed) → the next-token loss only."""
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None
