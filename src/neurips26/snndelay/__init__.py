"""Residual spiking phoneme decoder with fixed per-connection synaptic delays, trained with CTC (P11, NeurIPS 2026).

What: a decoder for attempted-speech intracortical recordings (20-ms bins of threshold crossings and
spike-band power) that outputs phoneme posteriors per bin and is trained only from sentence-level phoneme
sequences with CTC. It is a residual spiking network (SEW-ADD blocks ``h_l = h_{l-1} + LIF(LN(W h_{l-1}))``)
in which every directed connection i -> j carries one fixed integer delay ``d_ji`` drawn once at
construction: ``I_j(t) = b_j + Σ_i W_ji · h_i(t − d_ji)``.
Why: a neuron then sees recent presynaptic spikes without recurrence, dense temporal convolution, or any
trainable delay parameter (the trainable parameters equal those of the D = 0 network), and the network
stays event-driven, so its operation-level energy stays low. The paper (abstract only; title, arXiv id and
code not found) reports lower PER from delays at 500k/2M/5M core parameters with gains saturating once the
delay range covers the task's temporal horizon, lower CTC uncertainty at phoneme boundaries, best PER vs
recurrent/convolutional/feed-forward baselines at 500k and 2M, and ~2–4x lower estimated energy.
How: :class:`DelayedLinear` (causal conv1d / one-GEMM gather fast paths beside a reference), :class:`LIF`
(hand-written BPTT beside an autograd reference; the same spikes as snnTorch's ``Leaky``),
:class:`ResidualDelaySNN`, the baselines (:class:`GRUDecoder`, :class:`TCNDecoder`, :class:`FrameStackMLP`),
CTC tools (:func:`ctc_greedy_decode`, :func:`phoneme_error_rate`, :func:`ctc_forced_align`,
:func:`boundary_uncertainty`), :func:`estimate_energy`, and data (:func:`synthetic_speech_bci`, our seeded
generator with a tunable temporal horizon; :func:`load_willett2023` for the real ``.mat`` files).
Inferred (not in the abstract): layer layout, norms, training recipe, energy convention, the generator.
"""

from .baselines import FrameStackMLP, GRUDecoder, TCNDecoder, build_decoder, matched_width
from .ctc import (
    BoundaryUncertainty,
    boundary_uncertainty,
    ctc_forced_align,
    ctc_greedy_decode,
    ctc_loss,
    ctc_min_length,
    edit_distance,
    phoneme_error_rate,
    true_boundaries,
)
from .data import PHONEMES, SIL, Batch, SpeechBCIData, load_willett2023, make_batch, synthetic_speech_bci
from .delays import DelayedLinear, delayed_linear_reference, draw_delays
from .energy import estimate_energy
from .layers import CausalGaussianSmoothing, DayInputLayer
from .model import N_CLASSES, ResidualDelaySNN, count_core_params
from .neurons import LIF, lif, lif_reference
from .train import EvalResult, TrainResult, evaluate, train_ctc

__all__ = [
    "N_CLASSES", "PHONEMES", "SIL",
    "DelayedLinear", "delayed_linear_reference", "draw_delays",
    "LIF", "lif", "lif_reference",
    "ResidualDelaySNN", "count_core_params", "DayInputLayer", "CausalGaussianSmoothing",
    "GRUDecoder", "TCNDecoder", "FrameStackMLP", "build_decoder", "matched_width",
    "SpeechBCIData", "Batch", "make_batch", "synthetic_speech_bci", "load_willett2023",
    "ctc_loss", "ctc_min_length", "ctc_greedy_decode", "edit_distance", "phoneme_error_rate",
    "ctc_forced_align", "boundary_uncertainty", "BoundaryUncertainty", "true_boundaries",
    "estimate_energy",
    "train_ctc", "evaluate", "TrainResult", "EvalResult",
]
