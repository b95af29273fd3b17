"""Sphere Latent Encoder (P06; Do, Nguyen, Li, "Efficient Image Synthesis with Sphere Latent Encoder",
arXiv 2605.15592).

What: a few-step image generator. Latents of a *frozen* pretrained tokenizer are put on a sphere by a global
RMS norm f; a separate transformer G learns to map spherically corrupted latents f(f(z) + r·tan(85°)·ε) back
to clean ones; sampling loops z ← G(f(f(z) + σε′)) T times in latent space and decodes once.

Why: its predecessor, the Sphere Encoder (SE, arXiv 2602.15030), trains encoder and decoder jointly for
reconstruction *and* generation and loops decode → encode → re-noise through pixel space: T decodes and
T − 1 encodes per sample. Decoupling removes that cost (T·G + D) and the objective conflict.

How here: :mod:`.sphere` (f, corruption, stratified radii), :mod:`.tokenizer` (protocol + conv autoencoder),
:mod:`.denoiser` (SiT-like adaLN transformer, no timestep), :mod:`.sle` (the method), :mod:`.baselines`
(SE with its pixel loop, latent flow matching, a latent consistency model), :mod:`.pipeline` (a
diffusers-shaped pipeline with save/load, a diffusers ``AutoencoderKL`` tokenizer adapter),
:mod:`.metrics` (Fréchet distance on a pluggable feature
network, k-NN precision/recall, FLOPs), :mod:`.training` (budgeted training, EMA, digits data);
``check.py`` is the digits experiment. SLE's code is not public: its latent losses, latent CFG and the
missing timestep input are inferred (marked in the code).
"""

from .baselines import LatentConsistencyModel, LatentFlowMatching, SphereEncoder, matched_generators, se_width_for
from .denoiser import LatentTransformer
from .metrics import (
    ClassifierFID,
    DigitsClassifier,
    FeatureView,
    compare_sampling_speed,
    count_flops,
    frechet_distance,
    knn_precision_recall,
    psnr,
)
from .pipeline import DiffusersVAETokenizer, ImagePipelineOutput, SphereLatentPipeline
from .sle import SphereLatentEncoder
from .sphere import angle_between, sigma_max, spherical_corrupt, spherify, stratified_radii
from .tokenizer import ConvAutoencoder, ConvDecoder, ConvEncoder, LatentTokenizer, latent_statistics
from .training import EMA, FitResult, digits_images, fit, train_classifier, train_tokenizer

__all__ = [
    "EMA",
    "ClassifierFID",
    "ConvAutoencoder",
    "ConvDecoder",
    "ConvEncoder",
    "DiffusersVAETokenizer",
    "DigitsClassifier",
    "FeatureView",
    "FitResult",
    "ImagePipelineOutput",
    "LatentConsistencyModel",
    "LatentFlowMatching",
    "LatentTokenizer",
    "LatentTransformer",
    "SphereEncoder",
    "SphereLatentEncoder",
    "SphereLatentPipeline",
    "angle_between",
    "compare_sampling_speed",
    "count_flops",
    "digits_images",
    "fit",
    "frechet_distance",
    "knn_precision_recall",
    "latent_statistics",
    "matched_generators",
    "psnr",
    "se_width_for",
    "sigma_max",
    "spherical_corrupt",
    "spherify",
    "stratified_radii",
    "train_classifier",
    "train_tokenizer",
]
