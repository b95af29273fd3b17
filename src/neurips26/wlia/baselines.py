"""The attacks WLIA is compared with, all reading the same FedAvg updates through the same interface.

* :class:`UniformGuess`: predicts 1/C for every class (the no-information floor).
* :class:`LLGRowSum`: LLG (Wainakh et al., PETS 2022), adapted to multi-step FedAvg updates: the row sum
  of the classifier update, ``s_c = Σ_j (W^k − W^g)_cj``. Works when features are non-negative (ReLU):
  then −g_c summed over j is ∝ Σ_i (y_ic − p_ic) Σ_j h_ij, larger for frequent classes; with signed
  features (Tanh, standardised inputs) the sign of Σ_j h_ij is arbitrary and the signal is lost.
* :class:`BiasAnalytic`: the bias update (Geng et al. 2021, iLRG idea): for one SGD step of size η on a
  batch of S samples, ``Δb_c = −η Σ_i (p_ic − y_ic) = −η S (p̄_c − π_c)``, so ``π_c − p̄_c ∝ Δb_c``; with
  p̄ unknown, ``p̂ ∝ max(Δb − min Δb, 0)``. Needs a classifier bias.

* :class:`TangentialRowSum`: an adaptive, RNR-aware attacker. RNR's penalty ``λ Σ_c (‖w_c‖ − r_c)²`` has
  the gradient ``2λ(‖w_c‖ − r_c) w_c/‖w_c‖``, which points along the row itself (radial). Dropping the
  radial part of each row's update, ``u_c = Δw_c − (Δw_c·ŵ_c) ŵ_c`` with ``ŵ_c = w^g_c/‖w^g_c‖``, removes
  what RNR adds (to first order in the step) and keeps the cross-entropy's tangential pull; the score is
  the row sum of that part, ``s_c = Σ_j u_cj`` (our design, the attacker the issue asks for).

All four share :class:`~neurips26.wlia.attack.UpdateAttack`'s round averaging and estimators, so the
comparison with WLIA isolates the per-round score.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .attack import UpdateAttack

__all__ = ["UniformGuess", "LLGRowSum", "BiasAnalytic", "TangentialRowSum"]


class UniformGuess(UpdateAttack):
    """Predicts the uniform distribution for every observed client (reads only the number of classes)."""

    def _round_scores(self, w_global: np.ndarray, w_local: np.ndarray) -> np.ndarray:
        return np.zeros(w_global.shape[0])


class LLGRowSum(UpdateAttack):
    r"""Row-sum attack: ``s^t_c = Σ_j (W^{k,t} − W^{g,t})_{cj}`` on the classifier weight ``[C, H]``."""

    def _round_scores(self, w_global: np.ndarray, w_local: np.ndarray) -> np.ndarray:
        # Σ_j ΔW_cj: [C, H] -> [C]
        return (w_local - w_global).sum(axis=1)


class BiasAnalytic(UpdateAttack):
    r"""Bias-update attack: ``s^t_c = Δb_c = b^{k,t}_c − b^{g,t}_c`` on the classifier bias ``[C]``.

    Args:
        bias_key: state-dict key of the classifier bias (default ``"fc.bias"``).
        estimator, round_weighting, temperature: see :class:`UpdateAttack`.
    """

    _ndim = 1

    def __init__(self, *, bias_key: str = "fc.bias", estimator: str = "linear",
                 round_weighting: str = "uniform", temperature: float = 1.0, **kwargs: Any) -> None:
        if "weight_key" in kwargs:
            raise TypeError("BiasAnalytic reads the bias: pass bias_key=..., not weight_key")
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        super().__init__(weight_key=bias_key, estimator=estimator, round_weighting=round_weighting,
                         temperature=temperature)

    @property
    def bias_key(self) -> str:
        return self.weight_key

    def _round_scores(self, w_global: np.ndarray, w_local: np.ndarray) -> np.ndarray:
        # Δb_c ∝ π_c − p̄_c
        return w_local - w_global


class TangentialRowSum(UpdateAttack):
    r"""RNR-aware attack: row sum of the tangential part of the update, ``s^t_c = Σ_j u_cj``,
    ``u_c = Δw_c − (Δw_c · ŵ_c) ŵ_c``, ``ŵ_c = w^{g,t}_c / ‖w^{g,t}_c‖`` (rows ``[C, H]``).

    A zero global row has no radial direction; its update is then kept whole.
    """

    def _round_scores(self, w_global: np.ndarray, w_local: np.ndarray) -> np.ndarray:
        delta = w_local - w_global                                   # Δw: [C, H]
        norms = np.linalg.norm(w_global, axis=1, keepdims=True)      # ‖w^g_c‖: [C, 1]
        unit = np.divide(w_global, norms, out=np.zeros_like(w_global), where=norms > 0)  # ŵ_c
        radial = (delta * unit).sum(axis=1, keepdims=True) * unit    # (Δw_c·ŵ_c) ŵ_c
        return (delta - radial).sum(axis=1)                          # Σ_j u_cj: [C]
