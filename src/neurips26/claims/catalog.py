"""The catalog of the 19 papers: static facts that hold whether or not a paper is implemented.

A paper counts as *implemented* when its package provides ``neurips26.<slug>.check`` with a
``PAPER`` object (see :mod:`neurips26.claims.registry`). The framework never imports a paper package
by name in code; it looks the slug up here and imports the check module dynamically.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CatalogEntry:
    """One paper of the project: id ``P01``..``P19``, package slug, method name, title, arXiv id."""

    id: str
    slug: str
    method: str
    title: str
    arxiv: str | None = None


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry("P01", "tst", "Token-Superposition Training",
                 "Efficient Pre-Training with Token Superposition", "2605.06546"),
    CatalogEntry("P02", "emc", "Efficient Memory Crystallization",
                 "EMC: training-free test-time continual graph adaptation (title not found)"),
    CatalogEntry("P03", "truncbool", "Truncated pseudo-likelihood GD",
                 "TruncPL-GD for truncated Boolean product distributions (title not found)"),
    CatalogEntry("P04", "wlia", "WLIA attack + RNR defense",
                 "Weight-norm label distribution inference attack and RNR (title not found)"),
    CatalogEntry("P05", "fwdsvd", "Forward-only SVD rank search",
                 "FwdSVD: forward-only LLM adaptation in inference serving (title not found)"),
    CatalogEntry("P06", "spherelatent", "Sphere Latent Encoder",
                 "Efficient Image Synthesis with Sphere Latent Encoder", "2602.15030"),
    CatalogEntry("P07", "groupshift", "GroupShift re-partitioning",
                 "Warm-started re-partitioning of group l_{p,1} models (title not found)"),
    CatalogEntry("P08", "routing", "Depth-first decoder scaling",
                 "Efficient Decoder Scaling Strategy for Neural Routing Solvers"),
    CatalogEntry("P09", "anongames", "Linear anonymous games NE",
                 "Exact equilibria of two-action linear anonymous games (title not found)"),
    CatalogEntry("P10", "mobillm", "EC-MobiLLM side-tuning",
                 "Fed MobiLLM: server-assisted side-tuning on mobile devices", "2508.06765"),
    CatalogEntry("P11", "snndelay", "Residual SNN with synaptic delays",
                 "Residual SNN with synaptic delays for phoneme decoding (title not found)"),
    CatalogEntry("P12", "effbench", "mRMR + kernel ridge",
                 "Efficient Benchmarking Is Just Feature Selection and Multiple Regression", "2605.25773"),
    CatalogEntry("P13", "saddle", "Decoupled distributed saddle method",
                 "Efficient Gradient Methods for Distributed Saddle Problems", "2605.18604"),
    CatalogEntry("P14", "wmatch", "Dynamic Wasserstein matching",
                 "Fully dynamic approximate W_p bipartite matching (title not found)"),
    CatalogEntry("P15", "dasa", "Dynamics-Aware Sparse Attention",
                 "DASA: Dynamics-Aware Sparse Attention for autoregressive video diffusion"),
    CatalogEntry("P16", "smartres", "SmartRes resolution routing",
                 "SmartRes: dynamic resolution routing for egocentric visual grounding"),
    CatalogEntry("P17", "dynconv", "Dynamic short convolutions",
                 "Dynamic Short Convolutions Improve Transformers", "2606.03825"),
    CatalogEntry("P18", "dyra", "DyRA residual low-rank correction",
                 "DyRA: input-adaptive dynamic residual low-rank correction (title not found)"),
    CatalogEntry("P19", "dualkv", "DualKV shared-prompt attention",
                 "DualKV: Shared-Prompt Flash Attention for Efficient RL Training", "2605.15422"),
)

_BY_SLUG = {entry.slug: entry for entry in CATALOG}
_BY_ID = {entry.id: entry for entry in CATALOG}


def lookup(name: str) -> CatalogEntry:
    """Find a paper by slug (``effbench``) or id (``P12``, case-insensitive)."""
    if name in _BY_SLUG:
        return _BY_SLUG[name]
    if name.upper() in _BY_ID:
        return _BY_ID[name.upper()]
    known = ", ".join(entry.slug for entry in CATALOG)
    raise ValueError(f"unknown paper {name!r}: expected a slug or an id P01..P19 (slugs: {known})")
