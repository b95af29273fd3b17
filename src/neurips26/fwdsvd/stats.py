r"""Per-SVD-component angle concentration of a layer's outputs, streamed from forward passes.

For a layer $y = W x$ with thin SVD $W = \sum_i \sigma_i u_i v_i^\top$ and the tokens $x_1..x_T$ it sees,
the output's coefficients in the orthonormal basis $u_i$ are

$$c_{t,i} = \sigma_i\, v_i^\top x_t, \qquad W x_t = \sum_i c_{t,i} u_i, \qquad \|W x_t\|^2 = \sum_i c_{t,i}^2 .$$

With $\hat c_{t,i} = c_{t,i} / \|W x_t\|$, the **angle concentration** of the outputs (their mean pairwise
cosine) splits exactly into per-component terms (inferred formalisation of the paper's idea):

$$A(W) = \frac{1}{T(T-1)} \sum_{s \ne t} \cos(W x_s, W x_t) = \sum_i \kappa_i, \qquad
  \kappa_i = \frac{\big(\sum_t \hat c_{t,i}\big)^2 - \sum_t \hat c_{t,i}^2}{T(T-1)} .$$

Component $i$ is *concentrated* if $\kappa_i > 0$ (it pulls the token states towards one direction) and
*dispersed* if $\kappa_i \le 0$. Only $O(r)$ running sums per matrix are kept: $S1_i = \sum_t \hat c_{t,i}$,
$S2_i = \sum_t \hat c_{t,i}^2$, $E_i = \sum_t c_{t,i}^2$ and $T$. Flipping the sign of a pair $(u_i, v_i)$ flips
$\hat c_{\cdot,i}$ and leaves $\kappa_i$ unchanged.

Dispersion scores of a matrix, with the head $k_0 = \lceil \rho_{\min} r \rceil$ protected:

* ``"dispersion_energy"`` (default): $D = \sum_{i > k_0,\ \kappa_i \le 0} E_i / \sum_i E_i$, the share of output
  energy carried by dispersed higher-order components;
* ``"neg_kappa_tail"``: $-\sum_{i > k_0} \kappa_i$;
* ``"frac_dispersed"``: the fraction of components $i > k_0$ with $\kappa_i \le 0$.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from neurips26.constraints import AnyOf, ArrayLike, Choice, Instance, Optional, Real, Tensor, check_arguments, validate

from .svd import MODEL, candidate_linears, svd_factors

__all__ = ["POSITIONS", "SCORES", "AngleConcentrationStats", "kappa_from_coefficients", "mean_pairwise_cosine"]

SCORES = ("dispersion_energy", "neg_kappa_tail", "frac_dispersed")
POSITIONS = ("last", "all")
_EPS = 1e-12  # ‖W x‖ below this counts as zero: ĉ = 0 for that token


POSITION_RULES = Choice(*POSITIONS)
SCORE_RULES = Choice(*SCORES)
RHO_MIN = Real(0, 1, closed="left")  # the protected head share
# rows [T, r] of real numbers (float finite, or integer), as a tensor or anything np.asarray takes (nested lists)
ROWS = AnyOf(Tensor("T R", dtype="float"), Tensor("T R", dtype="integer"), ArrayLike("T R", dtype="float"),
             ArrayLike("T R", dtype="integer"))
_LAYER_INPUT = Tensor(ndim=(2, 3))       # what a hooked Linear sees: [N, n] or [B, T, n], finite
_SELECT = {"the token selection": Tensor("B T", finite=False), "the layer input": Tensor("B T _", finite=False)}
_SVD_CACHE = Optional(Instance(Mapping, "mapping module name -> (U, S, Vh)"))
_BATCH = {"input_ids": Tensor("B T", finite=False), "attention_mask": Tensor("B T", finite=False)}


def _rows(where: str, c: object, name: str = "c", *, min_rows: int = 2) -> torch.Tensor:
    """``c`` (already declared :data:`ROWS`) as a float64 tensor on its device, with ``T >= min_rows`` and
    ``r >= 1``."""
    t = torch.as_tensor(c).detach()
    if t.shape[0] < min_rows or t.shape[1] < 1:
        raise ValueError(f"{where}: {name} must be [T >= {min_rows}, r >= 1], got shape {tuple(t.shape)}")
    return t.to(dtype=torch.float64)


@validate(y=ROWS)
def mean_pairwise_cosine(y: torch.Tensor) -> float:
    r"""Brute force $\frac{1}{T(T-1)}\sum_{s \ne t} \cos(y_s, y_t)$ of rows ``y [T, m]`` (T >= 2), in float64.

    Every row must be non-zero (the cosine of a zero vector is undefined)."""
    y = _rows("mean_pairwise_cosine", y, "y").cpu()
    if bool((y.norm(dim=1) == 0).any()):
        raise ValueError(f"y has {int((y.norm(dim=1) == 0).sum())} all-zero rows: their cosine is undefined")
    rows = y.numpy()
    t = rows.shape[0]
    total = 0.0
    for s in range(t):  # the plain double loop: a reference, not a fast path
        for u in range(t):
            if s != u:
                total += float(rows[s] @ rows[u]) / math.sqrt(float(rows[s] @ rows[s]) * float(rows[u] @ rows[u]))
    return total / (t * (t - 1))


@validate(c=ROWS)
def kappa_from_coefficients(c: torch.Tensor) -> torch.Tensor:
    r"""$\kappa$ [r] from the whole coefficient block ``c [T, r]`` at once (the batch form of the streamed sums)."""
    c = _rows("kappa_from_coefficients", c, "c")
    t = c.shape[0]
    norm = c.norm(dim=1, keepdim=True)
    c_hat = torch.where(norm > _EPS, c / norm.clamp_min(_EPS), torch.zeros_like(c))
    return (c_hat.sum(0) ** 2 - (c_hat ** 2).sum(0)) / (t * (t - 1))


class _MatrixStats:
    """Running sums of one candidate matrix: ``V [n, r]`` and ``σ [r]`` from its SVD, S1, S2, E [r], T."""

    def __init__(self, weight: torch.Tensor, svd: tuple[torch.Tensor, ...] | None = None) -> None:
        _, s, vh = svd_factors(weight) if svd is None else svd
        self.sigma = s                                     # [r] float64
        self.v = vh.T.to(dtype=weight.dtype, device=weight.device)  # [n, r] in the layer's dtype
        self.sigma_dev = s.to(dtype=weight.dtype, device=weight.device)
        r = s.shape[0]
        self.s1 = torch.zeros(r, dtype=torch.float64)
        self.s2 = torch.zeros(r, dtype=torch.float64)
        self.energy = torch.zeros(r, dtype=torch.float64)
        self.tokens = 0
        self.pending: list | None = None  # sums of the forward in progress: [S1, S2, E, T]

    def update(self, x: torch.Tensor) -> None:
        """Add tokens ``x [T, n]`` to the *pending* sums (made visible by :meth:`commit`)."""
        if x.shape[0] == 0:
            return
        # c_{t,i} = σ_i v_iᵀ x_t   [T, r]
        c = ((x @ self.v) * self.sigma_dev).to(device="cpu", dtype=torch.float64)
        norm = c.norm(dim=1, keepdim=True)                 # ‖W x_t‖  [T, 1]
        c_hat = torch.where(norm > _EPS, c / norm.clamp_min(_EPS), torch.zeros_like(c))
        if self.pending is None:
            self.pending = [torch.zeros_like(self.s1), torch.zeros_like(self.s1), torch.zeros_like(self.s1), 0]
        self.pending[0] += c_hat.sum(0)
        self.pending[1] += (c_hat ** 2).sum(0)
        self.pending[2] += (c ** 2).sum(0)
        self.pending[3] += x.shape[0]

    def commit(self) -> None:
        """Fold the pending sums of a forward that finished into the statistics."""
        if self.pending is not None:
            self.s1 = self.s1 + self.pending[0]
            self.s2 = self.s2 + self.pending[1]
            self.energy = self.energy + self.pending[2]
            self.tokens += self.pending[3]
        self.pending = None

    def discard(self) -> None:
        """Drop the pending sums (the forward that produced them failed)."""
        self.pending = None

    def kappa(self) -> torch.Tensor:
        t = self.tokens
        # κ_i = (S1_i² − S2_i) / (T(T−1))
        return (self.s1 ** 2 - self.s2) / (t * (t - 1))


class AngleConcentrationStats:
    """No-grad forward hooks on candidate ``nn.Linear`` layers that stream the $\\kappa$ sums.

    Use :meth:`attach` (not the constructor). A plain ``model(x)`` with ``x [batch, seq, features]`` counts
    each row's last position (``positions="last"``) or every position but the first (``"all"``); 2-D inputs
    ``[N, features]`` count every row. :meth:`observe` runs the model on a right-padded batch and counts,
    per row, the last non-pad token of ``attention_mask`` (``"last"``) or every non-pad token but position 0.

    A forward counts only once it finishes: the hooks add to pending sums that a hook on the whole model
    commits at the end of its forward, so a forward that raises midway (a NaN at a later layer, an
    interrupt) leaves the statistics exactly as they were. :meth:`counting` does the same for code that runs
    the hooked layers without calling the model itself (e.g. a partial forward from cached hidden states).
    """

    def __init__(self, model: nn.Module, names: list[str], positions: str,
                 svd: Mapping[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None) -> None:
        self.model, self.names, self.positions = model, names, positions
        self._stats = {n: _MatrixStats(model.get_submodule(n).weight, (svd or {}).get(n)) for n in names}
        self._select: torch.Tensor | None = None  # [B, T] bool while observe() runs
        self._handles = [model.get_submodule(n).register_forward_hook(self._hook(n)) for n in names]
        # the whole model's forward: start (drop what a failed earlier forward left pending) and commit
        self._in_forward = False   # inside the attached model's forward or a counting() block
        self._handles.append(model.register_forward_pre_hook(lambda *_: self._begin()))
        self._handles.append(model.register_forward_hook(lambda *_: self._end()))
        self.forward_passes = 0

    @classmethod
    @validate(model=MODEL, positions=POSITION_RULES, svd=_SVD_CACHE)
    def attach(cls, model: nn.Module, candidates: str | Sequence[str] = "all", positions: str = "last", *,
               svd: Mapping[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None,
               ) -> AngleConcentrationStats:
        """Hook the candidates of ``model`` (see :func:`~neurips26.fwdsvd.svd.candidate_linears`).
        ``svd``: precomputed :func:`~neurips26.fwdsvd.svd.svd_factors` per module name (the rest are computed)."""
        return cls(model, candidate_linears(model, candidates), positions, svd)

    # ------------------------------------------------------------------------------------ hooks
    def _tokens(self, x: torch.Tensor, module: str) -> torch.Tensor:
        """The rows of ``x`` (the input of the hooked layer ``module``: finite, ``[N, n]`` or ``[B, T, n]``)
        that count, as ``[T, n]``."""
        name = f"the input of {module!r}"
        check_arguments("AngleConcentrationStats", {name: _LAYER_INPUT}, {name: x})
        if x.dim() == 2:
            return x
        if self._select is not None:
            check_arguments("AngleConcentrationStats", _SELECT, {"the token selection": self._select,
                                                                 "the layer input": x})
            return x[self._select.to(x.device)]
        return x[:, -1] if self.positions == "last" else x[:, 1:].reshape(-1, x.shape[-1])

    def _hook(self, name: str) -> Any:
        def hook(module: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
            with torch.no_grad():
                self._stats[name].update(self._tokens(inputs[0].detach(), name))
                if not self._in_forward:  # the layer ran on its own (outside the model): it counts at once
                    self._stats[name].commit()
        return hook

    def _commit(self) -> None:
        for st in self._stats.values():
            st.commit()

    def _discard(self) -> None:
        for st in self._stats.values():
            st.discard()

    def _begin(self) -> None:
        self._discard()
        self._in_forward = True

    def _end(self) -> None:
        self._commit()
        self._in_forward = False

    def _settle(self) -> None:
        """Drop what a forward that raised left pending (it never reached its end)."""
        if self._in_forward:
            self._discard()
            self._in_forward = False

    @contextmanager
    @validate(select=Optional(Tensor("B T", finite=False)))
    def counting(self, select: torch.Tensor | None = None) -> Iterator[None]:
        """Count the hooked layers' inputs of the code run inside the block (which need not call the model
        itself); ``select [B, T]`` bool picks the tokens of 3-D inputs (default: the class rule). The sums
        are committed when the block ends normally and dropped when it raises."""
        if not self._handles:
            raise RuntimeError("the statistics are detached")
        self._begin()
        self._select = None if select is None else select.bool()
        try:
            yield
        except BaseException:
            self._discard()
            raise
        else:
            self._commit()
        finally:
            self._select = None
            self._in_forward = False

    def observe(self, model: nn.Module, batch: Mapping[str, torch.Tensor] | torch.Tensor) -> None:
        """One no-grad forward of ``model`` on ``batch`` (``{"input_ids" [B, T], "attention_mask" [B, T]}``,
        right-padded, or a bare ``input_ids`` tensor), counting the positions described in the class doc.
        A forward that raises adds nothing."""
        if model is not self.model:
            raise ValueError("observe() must be given the model the statistics are attached to")
        ids, mask = _unpack(batch, "AngleConcentrationStats.observe")
        self._settle()  # (a detached statistics object is refused by counting(), before anything runs)
        with self.counting(_selection(mask, self.positions)), torch.no_grad():
            model(ids)
        self.forward_passes += 1

    def reset(self) -> None:
        """Zero every sum (the hooks stay attached)."""
        for st in self._stats.values():
            st.s1, st.s2, st.energy = (torch.zeros_like(st.s1) for _ in range(3))
            st.tokens, st.pending = 0, None

    def detach(self) -> None:
        """Remove the hooks (the sums stay readable)."""
        for h in self._handles:
            h.remove()
        self._handles = []
        self._settle()

    # ------------------------------------------------------------------------------------ read-out
    def tokens(self, module: str) -> int:
        return self._get(module).tokens

    def _get(self, module: str) -> _MatrixStats:
        self._settle()
        if module not in self._stats:
            more = "..." if len(self.names) > 6 else ""
            raise ValueError(f"module {module!r} is not hooked; hooked: {self.names[:6]}{more}")
        return self._stats[module]

    def kappa(self, module: str) -> torch.Tensor:
        """$\\kappa$ of ``module``: float64 ``[min(m, n)]``, in descending-$\\sigma$ order, summing to the mean
        pairwise cosine of the outputs $W x_t$ seen so far (needs at least 2 tokens)."""
        st = self._get(module)
        if st.tokens < 2:
            raise ValueError(f"kappa needs at least 2 observed tokens for {module!r}, got {st.tokens}")
        return st.kappa()

    def energy(self, module: str) -> torch.Tensor:
        """$E_i = \\sum_t c_{t,i}^2$, float64 ``[r]``."""
        return self._get(module).energy.clone()

    @validate(score=SCORE_RULES, rho_min=RHO_MIN)
    def dispersion(self, score: str = "dispersion_energy", rho_min: float = 0.01) -> dict[str, float]:
        """``{module: score}`` for every hooked matrix (higher = more dispersed; see the module doc)."""
        out = {}
        for name in self.names:
            kappa, st = self.kappa(name), self._stats[name]
            r = kappa.shape[0]
            k0 = math.ceil(rho_min * r - 1e-9)     # components 1..k0 (0-based :k0) are protected
            tail = kappa[k0:]
            if score == "dispersion_energy":
                total = float(st.energy.sum())
                # D = Σ_{i>k0, κ_i≤0} E_i / Σ_i E_i
                out[name] = float(st.energy[k0:][tail <= 0].sum()) / total if total > 0 else 0.0
            elif score == "neg_kappa_tail":
                out[name] = -float(tail.sum())
            else:
                out[name] = float((tail <= 0).double().mean()) if tail.numel() else 0.0
        return out

    def memory_bytes(self) -> int:
        """Bytes of the running sums (the $O(r)$ state; the cached $V$ and $\\sigma$ are not counted)."""
        return sum(3 * st.s1.numel() * 8 for st in self._stats.values())


def _selection(mask: torch.Tensor, positions: str) -> torch.Tensor:
    """Which tokens count ``[B, T]`` bool: each row's last real token, or every real token but position 0."""
    if positions == "last":
        sel = torch.zeros_like(mask, dtype=torch.bool)
        sel[torch.arange(mask.shape[0]), mask.sum(1) - 1] = True
        return sel
    sel = mask.bool().clone()
    sel[:, 0] = False
    return sel


def _unpack(batch: Mapping[str, torch.Tensor] | torch.Tensor, where: str = "") -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids [B, T], attention_mask [B, T])`` from a batch; checks right padding (``where``: the entry
    point, for the messages)."""
    if isinstance(batch, torch.Tensor):
        ids, mask = batch, torch.ones_like(batch)
    elif isinstance(batch, Mapping) and "input_ids" in batch:
        ids = batch["input_ids"]
        mask = batch.get("attention_mask", torch.ones_like(ids))
    else:
        raise TypeError(f"batch must be an input_ids tensor or a mapping with 'input_ids' "
                        f"(and 'attention_mask'), got {type(batch).__name__}")
    check_arguments(where, _BATCH, {"input_ids": ids, "attention_mask": mask})
    m = mask.long()
    if ((m != 0) & (m != 1)).any():
        raise ValueError("attention_mask must hold 0 and 1 only")
    lengths = m.sum(1)
    if (lengths < 1).any():
        raise ValueError("every row of attention_mask needs at least one real token")
    # right padding: row b is 1 exactly on positions < lengths[b]
    expected = torch.arange(m.shape[1])[None, :] < lengths[:, None]
    if not torch.equal(m.bool(), expected):
        raise ValueError("batches must be right-padded (attention_mask = 1...1 0...0 per row) for a causal model")
    return ids, m
