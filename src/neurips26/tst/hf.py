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
weights of ``TSTTrainer.fit`` (tested, gradient accumulation included). Limits: one process only (the row
stream is not sharded under ``accelerate``; for DDP use :class:`~neurips26.tst.TSTTrainer`), and the
embedding re-initialisation ablation is not offered here.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import IterableDataset

from neurips26._checks import check_int
from neurips26.nn import TokenWindows

from .schedule import TSTSchedule
from .trainer import check_tst_model, ntp_loss, tst_loss, tst_row_len

try:
    import transformers
except ImportError as err:  # pragma: no cover - exercised only without the hf extra
    raise ImportError("neurips26.tst.hf needs transformers: pip install 'neurips26[hf]'") from err

__all__ = ["TSTHFTrainer", "TSTRowStream"]


class TSTRowStream(IterableDataset):
    """Rows ``{"input_ids": int64 [row_len(step)]}`` for ``total_steps`` optimizer steps of ``rows_per_step``.

    Args:
        tokens: int64 ``[N]`` training token stream.
        schedule: the :class:`TSTSchedule` whose phases decide each step's row length.
        context_len: L, positions the model sees per row.
        rows_per_step: rows per optimizer step (``per_device_train_batch_size × gradient_accumulation_steps``).
        seed: seeds the start offset of each epoch after the first (see :class:`TokenWindows`).
        superpose_inputs, multi_hot_targets: the variant (both ``True``: TST), which sets phase-1 row length.

    Every iteration starts again from the stream's beginning, so the rows of step t are the same each time
    (that is what Trainer's resume relies on: it skips the batches already seen).
    """

    def __init__(self, tokens: torch.Tensor, schedule: TSTSchedule, *, context_len: int, rows_per_step: int,
                 seed: int = 0, superpose_inputs: bool = True, multi_hot_targets: bool = True) -> None:
        if not isinstance(schedule, TSTSchedule):
            raise TypeError(f"schedule must be a TSTSchedule, got {type(schedule).__name__}")
        check_int("context_len", context_len)
        check_int("rows_per_step", rows_per_step)
        # TokenWindows validates tokens and that one lane holds the longest row.
        longest = max(tst_row_len(schedule, 0, context_len, superpose_inputs=superpose_inputs,
                                  multi_hot_targets=multi_hot_targets), context_len + 1)
        probe = TokenWindows(tokens, batch_size=rows_per_step, seed=seed)
        if probe.lane_len < longest:
            raise ValueError(f"tokens: {len(tokens)} tokens give lanes of {probe.lane_len} tokens for "
                             f"rows_per_step={rows_per_step}, shorter than the longest row ({longest} tokens)")
        self.tokens, self.schedule, self.context_len = tokens, schedule, context_len
        self.rows_per_step, self.seed = rows_per_step, seed
        self.superpose_inputs, self.multi_hot_targets = bool(superpose_inputs), bool(multi_hot_targets)

    def row_len(self, step: int) -> int:
        return tst_row_len(self.schedule, step, self.context_len, superpose_inputs=self.superpose_inputs,
                           multi_hot_targets=self.multi_hot_targets)

    def __len__(self) -> int:
        return self.schedule.total_steps * self.rows_per_step

    def __iter__(self):
        windows = TokenWindows(self.tokens, batch_size=self.rows_per_step, seed=self.seed)
        for step in range(self.schedule.total_steps):
            for row in windows.next_batch(self.row_len(step)):
                yield {"input_ids": row}


class TSTHFTrainer(transformers.Trainer):
    """``transformers.Trainer`` that runs both TST phases in one ``train()``.

    Args (besides Trainer's own; ``train_dataset`` is built from ``train_tokens``):
        schedule: :class:`TSTSchedule`; ``args.max_steps`` must equal ``schedule.total_steps``.
        context_len: L, positions the model sees per row.
        train_tokens: int64 ``[N]`` training token stream (or give ``train_dataset=TSTRowStream(...)``).
        superpose_inputs, multi_hot_targets: the variant (both ``True``: TST; see :class:`TSTTrainer`).

    The model follows the Hugging Face convention: ``forward(input_ids=..., inputs_embeds=..., position_ids=...)``
    returning ``.logits`` (or a logits tensor) and ``get_input_embeddings()``.
    """

    def __init__(self, *args: Any, schedule: TSTSchedule, context_len: int,
                 train_tokens: torch.Tensor | None = None, superpose_inputs: bool = True,
                 multi_hot_targets: bool = True, stream_seed: int = 0, **kwargs: Any) -> None:
        if not isinstance(schedule, TSTSchedule):
            raise TypeError(f"schedule must be a TSTSchedule, got {type(schedule).__name__}")
        check_int("context_len", context_len)
        targs = kwargs.get("args", args[1] if len(args) > 1 else None)
        if targs is None:
            raise ValueError("args: TSTHFTrainer needs TrainingArguments with max_steps = schedule.total_steps")
        if targs.max_steps != schedule.total_steps:
            raise ValueError(f"args.max_steps must equal schedule.total_steps={schedule.total_steps} (the phases "
                             f"are counted in optimizer steps), got max_steps={targs.max_steps}")
        if targs.world_size > 1:
            raise NotImplementedError(f"TSTHFTrainer runs in one process (world_size={targs.world_size}); for "
                                      "DDP use neurips26.tst.TSTTrainer with TokenWindows(rank=, world_size=)")
        model = kwargs.get("model", args[0] if args else None)
        params = check_tst_model(model, schedule, superpose_inputs)
        rows_per_step = targs.per_device_train_batch_size * targs.gradient_accumulation_steps
        if train_tokens is not None:
            if kwargs.get("train_dataset") is not None:
                raise ValueError("give train_tokens or train_dataset, not both")
            kwargs["train_dataset"] = TSTRowStream(train_tokens, schedule, context_len=context_len,
                                                   rows_per_step=rows_per_step, seed=stream_seed,
                                                   superpose_inputs=superpose_inputs,
                                                   multi_hot_targets=multi_hot_targets)
        data = kwargs.get("train_dataset")
        if isinstance(data, TSTRowStream) and (data.rows_per_step != rows_per_step or data.schedule != schedule
                                               or data.context_len != context_len):
            raise ValueError(f"train_dataset: its rows_per_step={data.rows_per_step}, schedule and context_len "
                             f"must match the trainer's (rows_per_step={rows_per_step} = batch × accumulation, "
                             f"context_len={context_len})")
        super().__init__(*args, **kwargs)
        self.schedule, self.context_len = schedule, context_len
        self.superpose_inputs, self.multi_hot_targets = bool(superpose_inputs), bool(multi_hot_targets)
        self._extra_kwargs = {"use_cache": False} if "use_cache" in params else {}
        # Our losses are token means of one micro-batch: Trainer must divide by the accumulation steps.
        self.model_accepts_loss_kwargs = False
        self.loss_is_scaled_for_ga = False

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
        loss, _ = tst_loss(model, ids, self.schedule, step, superpose_inputs=self.superpose_inputs,
                           multi_hot_targets=self.multi_hot_targets, extra_kwargs=self._extra_kwargs)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite loss {float(loss)} at step {step} ({self.schedule.phase(step)})")
        return (loss, None) if return_outputs else loss

    def prediction_step(self, model: torch.nn.Module, inputs: dict[str, torch.Tensor], prediction_loss_only: bool,
                        ignore_keys: list[str] | None = None) -> tuple[torch.Tensor, None, None]:
        """Evaluation rows ``{"input_ids": [L+1]}`` (no ``labels`` needed) → the next-token loss only."""
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None
