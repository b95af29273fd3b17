r"""Shared-prompt packing: lay out N responses to one prompt as ``[prompt | r_1 | … | r_N]``.

In GRPO/DAPO a micro-batch holds $N$ responses of lengths $R_i$ to one prompt of length $P$. The
standard ("replicated") layout feeds $N$ sequences ``[prompt | r_i]``: $T_{std} = NP + \sum_i R_i$ tokens.
Under causal masking the prompt's hidden states are the same in every copy, so DualKV packs

    x = [p_0 … p_{P-1} | r^{(1)}_0 … r^{(1)}_{R_1-1} | … | r^{(N)}_0 … r^{(N)}_{R_N-1}]

with $T_{dk} = P + \sum_i R_i$ tokens. Every per-token op (norm, projections, RoPE, MLP) runs on $T_{dk}$
tokens; attention must then let response $i$ read the prompt and only its own earlier tokens
(:mod:`.attention`). Several prompt groups are laid out one after another.

Position ids restart at $P$ for every response: token $r$ of response $i$ sits at logical position
$P + r$, exactly as in its replicated copy (otherwise RoPE breaks the equivalence).

Log-probs (inferred from the packing): response token $0$ is predicted by the *shared last prompt
position* $P-1$, token $k > 0$ by response position $k-1$ of the same response.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from neurips26.constraints import AnyOf, Instance, Int, Optional, Real, Tensor, check_arguments, validate

__all__ = [
    "SharedPromptBatch",
    "pack_shared_prompt",
    "pack_replicated",
    "groups_from_rollouts",
    "token_reduction_ratio",
    "attention_speedup_estimate",
    "response_logprobs",
    "replicated_response_logprobs",
    "token_mean_policy_loss",
]

Group = tuple[torch.Tensor, Sequence[torch.Tensor]]


_IDS = Tensor("N", dtype=(torch.int64, torch.int32))  # token ids [N]
# [T, V] or [1, T, V] (packed runs use B=1); NaN is caught in the log-probs it would produce
_LOGITS = AnyOf(Tensor("T V", dtype="float", finite=False), Tensor("1 T V", dtype="float", finite=False))


def _check_ids(name: str, ids: object) -> torch.Tensor:
    check_arguments("", {name: _IDS}, {name: ids})
    if ids.numel() == 0:
        raise ValueError(f"{name} is empty (length 0); DualKV needs P >= 1 and every R_i >= 1 — drop empty "
                         "responses before packing (they contribute no tokens to the loss)")
    return ids.long()


def _check_groups(groups: object) -> list[tuple[torch.Tensor, list[torch.Tensor]]]:
    if not isinstance(groups, Sequence) or isinstance(groups, torch.Tensor) or len(groups) == 0:
        raise ValueError("groups must be a non-empty list of (prompt_ids [P], [response_ids [R_i], ...]) "
                         f"pairs, got {type(groups).__name__}"
                         + (" of length 0" if isinstance(groups, Sequence) else ""))
    out = []
    for g, group in enumerate(groups):
        if not isinstance(group, tuple | list) or len(group) != 2:
            raise ValueError(f"groups[{g}] must be a pair (prompt_ids, responses), got {type(group).__name__}")
        prompt, responses = group
        prompt = _check_ids(f"groups[{g}] prompt", prompt)
        if isinstance(responses, torch.Tensor) or not isinstance(responses, Sequence) or len(responses) == 0:
            raise ValueError(f"groups[{g}] responses must be a non-empty list of 1-D id tensors, got "
                             f"{type(responses).__name__}")
        resp = [_check_ids(f"groups[{g}] response {i}", r) for i, r in enumerate(responses)]
        out.append((prompt, resp))
    return out


@dataclass
class SharedPromptBatch:
    """A packed micro-batch of prompt groups, as :func:`pack_shared_prompt` builds it.

    Layout: for each group ``g``, ``P_g`` prompt tokens then its responses back to back; groups follow
    one another. All index tensors live on ``device`` (CPU after packing; see :meth:`to`).

    Attributes:
        input_ids: ``[T]`` token ids, ``T = Σ_g (P_g + Σ_i R_{g,i})``.
        position_ids: ``[T]`` logical positions (``0..P-1`` for a prompt, ``P..P+R_i-1`` for a response).
        prompt_lens: ``P_g`` per group.
        group_offsets: start row of every group in the packed layout, plus ``T`` at the end (``G+1``).
        cu_seqlens_dec: per group, ``[N_g + 1]`` cumulative response lengths *within* the group's
            decoded region (FA2 ``cu_seqlens`` convention, starting at 0).
        response_slices: per group, the packed rows of each response (``slice`` objects).
        response_lens: every response length, flat over groups (``Σ_g N_g`` entries).
    """

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    prompt_lens: list[int]
    group_offsets: list[int]
    cu_seqlens_dec: list[torch.Tensor]
    response_slices: list[list[slice]]
    response_lens: list[int]
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # ---------------------------------------------------------------- sizes
    @property
    def num_tokens(self) -> int:
        """``T_dk = Σ_g (P_g + Σ_i R_{g,i})``, tokens of the packed layout."""
        return int(self.input_ids.numel())

    @property
    def num_replicated_tokens(self) -> int:
        """``T_std = Σ_g Σ_i (P_g + R_{g,i})``, tokens of the replicated layout."""
        return sum(p * len(s) + sum(sl.stop - sl.start for sl in s)
                   for p, s in zip(self.prompt_lens, self.response_slices))

    @property
    def num_groups(self) -> int:
        return len(self.prompt_lens)

    @property
    def num_responses(self) -> int:
        return len(self.response_lens)

    @property
    def token_reduction(self) -> float:
        """Measured ρ of this batch: ``T_std / T_dk``."""
        return self.num_replicated_tokens / self.num_tokens

    @property
    def device(self) -> torch.device:
        return self.input_ids.device

    def to(self, device: torch.device | str) -> SharedPromptBatch:
        """A copy whose tensors live on ``device`` (slices and lengths are plain ints)."""
        return SharedPromptBatch(
            input_ids=self.input_ids.to(device), position_ids=self.position_ids.to(device),
            prompt_lens=list(self.prompt_lens), group_offsets=list(self.group_offsets),
            cu_seqlens_dec=[c.to(device) for c in self.cu_seqlens_dec],
            response_slices=[list(s) for s in self.response_slices], response_lens=list(self.response_lens))

    def __reduce__(self):
        # Pickle through a registered rebuild function (plain tensors, ints and (start, stop) pairs), so a saved
        # batch loads with torch.load(..., weights_only=True); the derived-index cache is not saved.
        return (_rebuild_shared_prompt_batch, _batch_fields(self))

    # ------------------------------------------------------- derived indices
    def sequence_table(self, device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
        """Per-response metadata for the kernel, int32 ``[S]`` each, ``S`` = number of responses.

        ``q_start`` (first packed row of the response), ``ctx_start`` (first packed row of its prompt),
        ``seq_len`` (``R_i``), ``ctx_len`` (``P_g``).
        """
        device = torch.device(device) if device is not None else self.device
        key = ("table", str(device))
        if key not in self._cache:
            q_start, ctx_start, seq_len, ctx_len = [], [], [], []
            for off, p, slices in zip(self.group_offsets, self.prompt_lens, self.response_slices):
                for sl in slices:
                    q_start.append(sl.start)
                    ctx_start.append(off)
                    seq_len.append(sl.stop - sl.start)
                    ctx_len.append(p)
            self._cache[key] = {name: torch.tensor(vals, dtype=torch.int32, device=device) for name, vals in
                                (("q_start", q_start), ("ctx_start", ctx_start), ("seq_len", seq_len),
                                 ("ctx_len", ctx_len))}
        return self._cache[key]

    def logprob_index(self, device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(pred_rows, targets)``, both ``[Σ R]`` int64: the packed row whose logits predict each response
        token, and that token's id. Row of token 0 of a response is the last prompt row of its group."""
        device = torch.device(device) if device is not None else self.device
        key = ("logprob", str(device))
        if key not in self._cache:
            rows = []
            for off, p, slices in zip(self.group_offsets, self.prompt_lens, self.response_slices):
                for sl in slices:
                    # token 0 <- shared last prompt position; token k > 0 <- response position k - 1
                    rows.append(torch.tensor([off + p - 1]))
                    rows.append(torch.arange(sl.start, sl.stop - 1))
            pred = torch.cat(rows).to(device)
            targets = torch.cat([self.input_ids[sl] for s in self.response_slices for sl in s]).to(device)
            self._cache[key] = (pred, targets)
        return self._cache[key]


def _batch_fields(b: SharedPromptBatch) -> tuple:
    return (b.input_ids, b.position_ids, list(b.prompt_lens), list(b.group_offsets), list(b.cu_seqlens_dec),
            [[(sl.start, sl.stop) for sl in s] for s in b.response_slices], list(b.response_lens))


def _rebuild_shared_prompt_batch(input_ids, position_ids, prompt_lens, group_offsets, cu_seqlens_dec,
                                 response_slices, response_lens) -> SharedPromptBatch:
    """Inverse of :func:`_batch_fields` (unpickling and pytree unflattening); checks that the pieces agree."""
    slices = [[slice(int(a), int(b)) for a, b in s] for s in response_slices]
    n_groups = len(prompt_lens)
    if not (isinstance(input_ids, torch.Tensor) and isinstance(position_ids, torch.Tensor)) \
            or len(group_offsets) != n_groups + 1 or len(cu_seqlens_dec) != n_groups or len(slices) != n_groups \
            or [sl.stop - sl.start for s in slices for sl in s] != list(response_lens) \
            or input_ids.shape != position_ids.shape:
        raise ValueError("SharedPromptBatch: the saved fields are inconsistent (not written by this library?)")
    return SharedPromptBatch(input_ids=input_ids, position_ids=position_ids, prompt_lens=list(prompt_lens),
                             group_offsets=list(group_offsets), cu_seqlens_dec=list(cu_seqlens_dec),
                             response_slices=slices, response_lens=list(response_lens))


def _flatten_batch(b: SharedPromptBatch) -> tuple[list[torch.Tensor], tuple]:
    """Pytree: the tensors are leaves; the layout (ints, slice bounds) is the hashable context."""
    _, _, prompt_lens, offsets, cu, slices, lens = _batch_fields(b)
    context = (tuple(prompt_lens), tuple(offsets), tuple(tuple(s) for s in slices), tuple(lens))
    return [b.input_ids, b.position_ids, *cu], context


def _unflatten_batch(leaves, context) -> SharedPromptBatch:
    prompt_lens, offsets, slices, lens = context
    leaves = list(leaves)
    return _rebuild_shared_prompt_batch(leaves[0], leaves[1], list(prompt_lens), list(offsets), leaves[2:],
                                        [list(s) for s in slices], list(lens))


def _register_batch_type() -> None:
    from torch.utils import _pytree

    _pytree.register_pytree_node(
        SharedPromptBatch, _flatten_batch, _unflatten_batch,
        serialized_type_name="neurips26.dualkv.packing.SharedPromptBatch",
        flatten_with_keys_fn=lambda b: ([(_pytree.GetAttrKey(k), leaf) for k, leaf in zip(
            ["input_ids", "position_ids"] + [f"cu_seqlens_dec_{i}" for i in range(b.num_groups)],
            _flatten_batch(b)[0])], _flatten_batch(b)[1]))
    torch.serialization.add_safe_globals([_rebuild_shared_prompt_batch])


_register_batch_type()


def pack_shared_prompt(groups: Sequence[Group]) -> SharedPromptBatch:
    """Pack prompt groups into the DualKV layout ``[P | R_1 | … | R_N]`` per group, groups back to back.

    Args:
        groups: list of ``(prompt_ids [P], [response_ids [R_1], …, [R_N]])``, 1-D integer tensors without
            padding (strip left-padded prompts / right-padded responses first, e.g. with
            :func:`groups_from_rollouts`). ``P >= 1`` and every ``R_i >= 1``.

    Returns:
        :class:`SharedPromptBatch` with ``input_ids [T]``, ``position_ids [T]`` and per-group offsets.
    """
    checked = _check_groups(groups)
    ids, pos, offsets, cu_list, slices, lens = [], [], [], [], [], []
    cursor = 0
    for prompt, responses in checked:
        p = prompt.numel()
        offsets.append(cursor)
        ids.append(prompt)
        pos.append(torch.arange(p))
        cursor += p
        group_slices, cu = [], [0]
        for r in responses:
            n = r.numel()
            ids.append(r)
            # positions restart at P for every response: token r of response i is at P + r
            pos.append(torch.arange(p, p + n))
            group_slices.append(slice(cursor, cursor + n))
            cursor += n
            cu.append(cu[-1] + n)
            lens.append(n)
        slices.append(group_slices)
        cu_list.append(torch.tensor(cu, dtype=torch.int32))
    offsets.append(cursor)
    return SharedPromptBatch(input_ids=torch.cat(ids), position_ids=torch.cat(pos),
                             prompt_lens=[p.numel() for p, _ in checked], group_offsets=offsets,
                             cu_seqlens_dec=cu_list, response_slices=slices, response_lens=lens)


def pack_replicated(groups: Sequence[Group]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The baseline layout: every response gets its own copy of the prompt, sequences back to back.

    Returns:
        ``(input_ids [T_std], position_ids [T_std], cu_seqlens [S + 1] int32)`` with ``S`` = number of
        responses (flat over groups, same order as :func:`pack_shared_prompt`) and
        ``T_std = Σ (P_g + R_i)``; positions restart at 0 for every sequence.
    """
    checked = _check_groups(groups)
    ids, pos, cu = [], [], [0]
    for prompt, responses in checked:
        for r in responses:
            seq = torch.cat([prompt, r])
            ids.append(seq)
            pos.append(torch.arange(seq.numel()))
            cu.append(cu[-1] + seq.numel())
    return torch.cat(ids), torch.cat(pos), torch.tensor(cu, dtype=torch.int32)


@validate(prompt_ids=Tensor("B Lp", dtype="integer"), response_ids=Tensor("B Lr", dtype="integer"),
          prompt_mask=Optional(Tensor("B Lp", finite=False)), response_mask=Optional(Tensor("B Lr", finite=False)))
def groups_from_rollouts(prompt_ids: torch.Tensor, response_ids: torch.Tensor, group_index: Sequence[int], *,
                         prompt_mask: torch.Tensor | None = None,
                         response_mask: torch.Tensor | None = None) -> list[Group]:
    """Turn a padded rollout batch (veRL/TRL style) into ``groups`` for :func:`pack_shared_prompt`.

    Args:
        prompt_ids: ``[B, Lp]`` prompts, left-padded.
        response_ids: ``[B, Lr]`` responses, right-padded.
        group_index: ``B`` ints, the prompt group of each row (rows of one group must hold one prompt).
        prompt_mask, response_mask: ``[B, Lp]`` / ``[B, Lr]`` with 1 for real tokens (default: all real).

    Returns:
        One ``(prompt [P], [responses])`` pair per distinct group index, in order of first appearance.

    Raises:
        ValueError: if rows of one group do not share one prompt, or a row has an empty prompt/response.
    """
    if isinstance(group_index, str | bytes) or not hasattr(group_index, "__len__"):
        raise TypeError(f"group_index must be a sequence of B ints, got {type(group_index).__name__}")
    group_index = [g.item() if isinstance(g, torch.Tensor) and g.numel() == 1 else g for g in group_index]
    ids = {f"group_index[{row}]": g for row, g in enumerate(group_index)}  # int group ids
    check_arguments("groups_from_rollouts", dict.fromkeys(ids, Int()), ids)
    b = prompt_ids.shape[0]  # prompt_ids, response_ids and the masks agree on B (declared)
    if len(group_index) != b:
        raise ValueError(f"group_index must have one entry per row of prompt_ids (B={b}), got {len(group_index)}")
    pm = torch.ones_like(prompt_ids, dtype=torch.bool) if prompt_mask is None else prompt_mask.bool()
    rm = torch.ones_like(response_ids, dtype=torch.bool) if response_mask is None else response_mask.bool()
    prompts: dict[int, torch.Tensor] = {}
    first_row: dict[int, int] = {}
    responses: dict[int, list[torch.Tensor]] = {}
    for row in range(b):
        g = int(group_index[row])
        prompt = prompt_ids[row][pm[row]]
        resp = response_ids[row][rm[row]]
        if prompt.numel() == 0 or resp.numel() == 0:
            raise ValueError(f"row {row} has an empty {'prompt' if prompt.numel() == 0 else 'response'}; "
                             "drop it before packing")
        if g not in prompts:
            prompts[g], first_row[g], responses[g] = prompt, row, []
        elif not torch.equal(prompts[g], prompt):
            raise ValueError(f"responses of group {g} do not share one prompt: row {row} differs from row "
                             f"{first_row[g]}")
        responses[g].append(resp)
    return [(prompts[g], responses[g]) for g in prompts]


_SIZES = {"N": Int(low=1), "P": Int(low=1), "R": Real(0, closed="neither")}  # R: mean response length in tokens


@validate(**_SIZES)
def token_reduction_ratio(N: int, P: int, R: float) -> float:
    r"""$\rho = N(P+R) / (P + NR)$: tokens of the replicated layout over tokens of the packed one.

    $\rho \to N$ as $P/R \to \infty$ and $\rho \to 1 + P/R$ as $N \to \infty$.

    Args:
        N: responses per prompt (>= 1). P: prompt length in tokens (>= 1). R: mean response length (> 0).
    """
    return N * (P + R) / (P + N * R)


@validate(**_SIZES)
def attention_speedup_estimate(N: int, P: int, R: float) -> float:
    r"""Causal-attention FLOP ratio replicated/DualKV, $\approx N(P+R)^2 / (P^2 + NR(2P+R))$.

    Replicated: $N$ causal squares of side $P+R$, $\tfrac12 N(P+R)^2$. DualKV: the prompt once
    ($\tfrac12 P^2$) plus each response reading $P$ context keys and its own causal keys
    ($NRP + \tfrac12 NR^2$). (The paper writes the denominator $P^2 + NR(P+R)$, counting the full
    rectangle; both give the same limits.)
    """
    return N * (P + R) ** 2 / (P ** 2 + N * R * (2 * P + R))


# --------------------------------------------------------------------------------------- log-probs
def _check_logprobs(lp: torch.Tensor) -> None:
    """NaN log-probs come from NaN (or +inf) logits in the scored rows; -inf is a legitimately masked token."""
    if not torch.compiler.is_compiling() and bool(torch.isnan(lp).any()):
        raise ValueError("logits hold NaN (or +inf) values in the rows that score the responses")


@validate(logits=_LOGITS, batch=Instance(SharedPromptBatch, "SharedPromptBatch"))
def response_logprobs(logits: torch.Tensor, batch: SharedPromptBatch, *,
                      check_finite: bool = True) -> list[torch.Tensor]:
    """Per-token log-probs of every response from logits over the packed layout.

    Args:
        logits: ``[T, V]`` or ``[1, T, V]`` (any float dtype; log-softmax runs in fp32).
        batch: the :class:`SharedPromptBatch` the logits were computed on.
        check_finite: refuse NaN log-probs (NaN / +inf logits in the scored rows; one small reduction).

    Returns:
        One fp32 tensor ``[R_i]`` per response (flat over groups, packing order). Token 0 of a response
        is scored by the logits of its group's last prompt row, token ``k > 0`` by response row ``k-1``.
    """
    logits = logits[0] if logits.dim() == 3 else logits
    if logits.shape[0] != batch.num_tokens:
        raise ValueError(f"logits must be [T={batch.num_tokens}, V] or [1, T, V] (T = batch.num_tokens), got "
                         f"{tuple(logits.shape)}")
    pred, targets = batch.logprob_index(logits.device)
    # log p(x_t | x_<t) = z[t-1, x_t] - logsumexp(z[t-1]); rows gathered first so we never normalise
    # rows that predict nothing (the prompt rows other than the last one).
    z = logits.index_select(0, pred).float()
    lp = z.gather(1, targets[:, None]).squeeze(1) - torch.logsumexp(z, dim=-1)
    if check_finite:
        _check_logprobs(lp)
    return list(lp.split(batch.response_lens))


@validate(logits=_LOGITS, cu_seqlens=Tensor("S1", dtype="integer"), input_ids=Tensor("T", dtype="integer"))
def replicated_response_logprobs(logits: torch.Tensor, cu_seqlens: torch.Tensor, input_ids: torch.Tensor,
                                 prompt_lens_per_seq: Sequence[int], *,
                                 check_finite: bool = True) -> list[torch.Tensor]:
    """The same log-probs from the replicated layout of :func:`pack_replicated` (baseline).

    Args:
        logits: ``[T_std, V]`` or ``[1, T_std, V]``. cu_seqlens: ``[S+1]``. input_ids: ``[T_std]``.
        prompt_lens_per_seq: ``P`` of each of the ``S`` sequences.
    """
    logits = logits[0] if logits.dim() == 3 else logits  # its T rows = the input_ids (declared)
    cu = [int(c) for c in cu_seqlens]
    if len(cu) < 2 or cu[0] != 0 or cu[-1] != logits.shape[0] or any(b <= a for a, b in zip(cu, cu[1:])):
        raise ValueError(f"cu_seqlens must be [S+1] offsets that start at 0, end at T={logits.shape[0]} (the logits "
                         f"rows) and strictly increase, got {cu}")
    if isinstance(prompt_lens_per_seq, str | bytes) or not hasattr(prompt_lens_per_seq, "__len__"):
        raise TypeError(f"prompt_lens_per_seq must be a sequence of ints, got {type(prompt_lens_per_seq).__name__}")
    if len(prompt_lens_per_seq) != len(cu) - 1:
        raise ValueError(f"prompt_lens_per_seq must have {len(cu) - 1} entries, got {len(prompt_lens_per_seq)}")
    # each sequence holds a prompt and at least one response token
    lens = {f"prompt_lens_per_seq[{s}]": p for s, p in enumerate(prompt_lens_per_seq)}
    check_arguments("replicated_response_logprobs",
                    {name: Int(low=1, high=cu[s + 1] - cu[s] - 1) for s, name in enumerate(lens)}, lens)
    rows, lens = [], []
    for s, p in enumerate(prompt_lens_per_seq):
        rows.append(torch.arange(cu[s] + p - 1, cu[s + 1] - 1))
        lens.append(cu[s + 1] - cu[s] - p)
    pred = torch.cat(rows).to(logits.device)
    targets = input_ids.to(logits.device)[pred + 1]
    z = logits.index_select(0, pred).float()
    lp = z.gather(1, targets[:, None]).squeeze(1) - torch.logsumexp(z, dim=-1)
    if check_finite:
        _check_logprobs(lp)
    return list(lp.split(lens))


@validate(advantages=Tensor("S"), clip_low=Real(0, 1, closed="left"), clip_high=Real(low=0))
def token_mean_policy_loss(logprobs: Sequence[torch.Tensor], advantages: torch.Tensor, *,
                           old_logprobs: Sequence[torch.Tensor] | None = None,
                           clip_low: float = 0.2, clip_high: float = 0.28) -> torch.Tensor:
    r"""DAPO-style clipped surrogate, averaged over *all response tokens* of the micro-batch.

    $\mathcal{L} = -\frac{1}{\sum_i R_i}\sum_i\sum_t \min(r_{i,t} A_i,\ \mathrm{clip}(r_{i,t}, 1-\epsilon_l,
    1+\epsilon_h) A_i)$ with $r_{i,t} = \exp(\log\pi - \log\pi_{old})$. DualKV changes the layout, not the
    estimator: use the same aggregation as in the replicated run.

    Args:
        logprobs: one ``[R_i]`` tensor per response. advantages: ``[S]`` one per response.
        old_logprobs: behaviour-policy log-probs (default: ``logprobs`` detached, i.e. on-policy).
    """
    if isinstance(logprobs, torch.Tensor) or not isinstance(logprobs, Sequence) or len(logprobs) == 0 \
            or not all(isinstance(t, torch.Tensor) and t.dim() == 1 and t.is_floating_point() for t in logprobs):
        raise ValueError("logprobs must be a non-empty list of 1-D float tensors [R_i] (one per response)")
    if advantages.numel() != len(logprobs):
        raise ValueError(f"advantages must be a tensor [S={len(logprobs)}] (one per response), got "
                         f"{tuple(advantages.shape)}")
    if old_logprobs is not None:
        if isinstance(old_logprobs, torch.Tensor) or not isinstance(old_logprobs, Sequence) \
                or len(old_logprobs) != len(logprobs):
            raise ValueError(f"old_logprobs must be a list of {len(logprobs)} tensors with the shapes of logprobs")
        old = {f"old_logprobs[{i}]": o for i, o in enumerate(old_logprobs)}  # finite, [R_i] as logprobs[i]
        check_arguments("token_mean_policy_loss", {name: Tensor(str(t.numel())) for name, t in zip(old, logprobs)},
                        old)
    lp = torch.cat(list(logprobs))
    old = lp.detach() if old_logprobs is None else torch.cat(list(old_logprobs)).to(lp)
    adv = torch.repeat_interleave(advantages.to(lp), torch.tensor([t.numel() for t in logprobs],
                                                                   device=lp.device))
    ratio = torch.exp(lp - old)
    surrogate = torch.minimum(ratio * adv, ratio.clamp(1 - clip_low, 1 + clip_high) * adv)
    return -surrogate.mean()
