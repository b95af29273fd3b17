"""Shared test helpers for dualkv: an independent dense-mask reference on the replicated layout."""

import pytest
import torch


def naive_replicated_attention(q, k, v, batch, scale=None):
    """Row t of the packed layout -> causal attention of that token inside its replicated sequence.

    Builds every sequence ``[prompt rows | response rows]`` explicitly, runs a dense softmax with a full
    lower-triangular mask in float64, and maps outputs back (prompt rows from the first copy).
    """
    d = q.shape[-1]
    scale = d ** -0.5 if scale is None else scale
    n_rep = q.shape[1] // k.shape[1]
    out = torch.zeros(q.shape, dtype=torch.float64)
    for off, p, slices in zip(batch.group_offsets, batch.prompt_lens, batch.response_slices):
        for i, sl in enumerate(slices):
            rows = list(range(off, off + p)) + list(range(sl.start, sl.stop))
            qs = q[rows].double().transpose(0, 1)
            ks = k[rows].double().repeat_interleave(n_rep, 1).transpose(0, 1)
            vs = v[rows].double().repeat_interleave(n_rep, 1).transpose(0, 1)
            n = len(rows)
            s = qs @ ks.transpose(-1, -2) * scale
            s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
            o = (torch.softmax(s, -1) @ vs).transpose(0, 1)
            if i == 0:
                out[off:off + p] = o[:p]
            out[sl] = o[p:]
    return out


@pytest.fixture(scope="session")
def naive_attention():
    """The dense float64 reference :func:`naive_replicated_attention`."""
    return naive_replicated_attention
