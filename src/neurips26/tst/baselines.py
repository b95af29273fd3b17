"""What TST is compared with: plain next-token training and the paper's ablations, as ready trainers.

Every arm trains the same model with the same optimizer, LR schedule and number of optimizer steps, on
``B × L`` positions per step (equal FLOPs per step); they differ only in the first ``round(r·T)`` steps:

=================  ==============================  ==================================  =================
arm                phase-1 input                   phase-1 target                      raw tokens / row
=================  ==============================  ==================================  =================
``ntp``            tokens (no phase 1, r = 0)      next token (CE)                     L + 1
``tst``            mean embedding of each bag      next bag, multi-hot CE              s·(L + 1)
``input_only``     mean embedding of each bag      first token of next bag, CE (inf.)  s·(L + 1)
``output_only``    tokens                          next s tokens, multi-hot CE         L + s
``reinit``         as ``tst``; embeddings + head re-initialised at the switch          s·(L + 1)
``patch_level``    as ``tst`` with K = s = 4 and r = 1/3 (2/3 of the data in patch mode, PatchTrain)
=================  ==============================  ==================================  =================
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from neurips26.constraints import Choice, validate

from .schedule import TSTSchedule
from .trainer import TSTTrainer

ARMS: tuple[str, ...] = ("ntp", "tst", "input_only", "output_only", "reinit", "patch_level")


@validate(arm=Choice(*ARMS))
def make_trainer(arm: str, model: nn.Module, optimizer: torch.optim.Optimizer, *, total_steps: int,
                 bag_size: int = 4, superposition_fraction: float = 0.3, **trainer_kwargs: Any) -> TSTTrainer:
    """A :class:`TSTTrainer` configured as one of :data:`ARMS` (``trainer_kwargs`` go to the trainer:
    ``lr_scheduler``, ``context_len``, ``grad_clip``, ...)."""
    if arm == "ntp":
        schedule = TSTSchedule(total_steps, bag_size, 0.0)
    elif arm == "patch_level":
        schedule = TSTSchedule.patch_level(total_steps, K=bag_size)
    else:
        schedule = TSTSchedule(total_steps, bag_size, superposition_fraction)
    flags = {"input_only": {"multi_hot_targets": False}, "output_only": {"superpose_inputs": False},
             "reinit": {"reinit_embeddings_at_switch": True}}.get(arm, {})
    return TSTTrainer(model, optimizer, schedule, **flags, **trainer_kwargs)


def ntp_baseline(model: nn.Module, optimizer: torch.optim.Optimizer, total_steps: int,
                 **trainer_kwargs: Any) -> TSTTrainer:
    """Plain next-token prediction for ``total_steps`` steps (the paper's baseline)."""
    return make_trainer("ntp", model, optimizer, total_steps=total_steps, **trainer_kwargs)


def input_superposition_only(model: nn.Module, optimizer: torch.optim.Optimizer, total_steps: int, *,
                             bag_size: int = 4, superposition_fraction: float = 0.3,
                             **trainer_kwargs: Any) -> TSTTrainer:
    """Ablation: bag-mean inputs, ordinary CE on the first token of the next bag (inferred form)."""
    return make_trainer("input_only", model, optimizer, total_steps=total_steps, bag_size=bag_size,
                        superposition_fraction=superposition_fraction, **trainer_kwargs)


def output_mce_only(model: nn.Module, optimizer: torch.optim.Optimizer, total_steps: int, *,
                    bag_size: int = 4, superposition_fraction: float = 0.3,
                    **trainer_kwargs: Any) -> TSTTrainer:
    """Ablation: ordinary token inputs, multi-hot CE over the next ``bag_size`` tokens."""
    return make_trainer("output_only", model, optimizer, total_steps=total_steps, bag_size=bag_size,
                        superposition_fraction=superposition_fraction, **trainer_kwargs)


def embedding_reinit(model: nn.Module, optimizer: torch.optim.Optimizer, total_steps: int, *,
                     bag_size: int = 4, superposition_fraction: float = 0.3,
                     **trainer_kwargs: Any) -> TSTTrainer:
    """Ablation: TST, but input embeddings and LM head are re-initialised at the phase switch."""
    return make_trainer("reinit", model, optimizer, total_steps=total_steps, bag_size=bag_size,
                        superposition_fraction=superposition_fraction, **trainer_kwargs)


def patch_level_training(model: nn.Module, optimizer: torch.optim.Optimizer, total_steps: int, *,
                         patch_size: int = 4, **trainer_kwargs: Any) -> TSTTrainer:
    """Patch-Level Training preset (Shao et al. 2024): K = ``patch_size``, 2/3 of the tokens in patch mode."""
    return make_trainer("patch_level", model, optimizer, total_steps=total_steps, bag_size=patch_size,
                        **trainer_kwargs)
