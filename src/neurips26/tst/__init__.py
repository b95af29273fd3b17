"""Token-Superposition Training (TST) — Peng, Gigant, Quesnelle, "Efficient Pre-Training with Token
Superposition", arXiv 2605.06546 (2026).

**What.** A two-phase pre-training recipe for any causal LM. In the first ``r`` of the optimizer steps
the model reads *bags* of ``s`` contiguous tokens: its input at position ``j`` is the mean embedding of
bag ``j`` and its target is the whole next bag, scored with a multi-hot cross-entropy (the mean of ``s``
CE terms on the same logits). Then training switches back to ordinary next-token prediction with the
same weights (embeddings and LM head included), optimizer state and LR schedule.

**Why.** The transformer still runs on ``L`` positions per row, so FLOPs per step are unchanged, but each
step of phase 1 reads ``s×`` more text. The paper reports lower final loss than a FLOPs-matched baseline
(and up to 2.5× less wall-clock to equal loss at 10B-A1B scale).

**How.** ``TSTTrainer(model, optimizer, TSTSchedule(T, s, r), context_len=L).fit(TokenWindows(...))``;
the pieces (:func:`fold_bags`, :func:`superpose_embeddings`, :func:`multi_hot_cross_entropy`) are usable
on their own; ``neurips26.tst.hf.TSTHFTrainer`` runs both phases inside ``transformers.Trainer``.
Baselines/ablations: :mod:`neurips26.tst.baselines`. Claim check: ``neurips26 check tst``.
"""

from .baselines import (
    ARMS,
    embedding_reinit,
    input_superposition_only,
    make_trainer,
    ntp_baseline,
    output_mce_only,
    patch_level_training,
)
from .schedule import TSTSchedule, wsd_lr_lambda
from .superposition import (
    fold_bags,
    multi_hot_cross_entropy,
    multi_hot_cross_entropy_reference,
    superpose_embeddings,
)
from .trainer import (
    TSTTrainer,
    bits_per_byte,
    check_tst_model,
    evaluate_ntp,
    flops_per_step,
    ntp_loss,
    superposition_loss,
    tst_loss,
    tst_row_len,
    unwrap_model,
)

__all__ = [
    "ARMS", "TSTSchedule", "TSTTrainer", "bits_per_byte", "check_tst_model", "embedding_reinit", "evaluate_ntp",
    "flops_per_step",
    "fold_bags", "input_superposition_only", "make_trainer", "multi_hot_cross_entropy",
    "multi_hot_cross_entropy_reference", "ntp_baseline", "ntp_loss", "output_mce_only", "patch_level_training",
    "superpose_embeddings", "superposition_loss", "tst_loss", "tst_row_len", "unwrap_model", "wsd_lr_lambda",
]
