"""Synthetic recall tasks: disjoint key/value pools, labels exactly at query keys, seeding."""

import pytest
import torch

from neurips26.dynconv import IGNORE_INDEX, compositional_mqar, gap_mqar, mqar


@pytest.mark.parametrize("gen,kwargs,key_len,n", [
    (mqar, dict(num_kv_pairs=8), 1, 8),
    (compositional_mqar, dict(num_kv_pairs=9), 2, 9),
    (gap_mqar, dict(num_kv_pairs=9), 2, 9),
])
def test_task_properties(gen, kwargs, key_len, n):
    v, t, half = 512, 64, 256
    inputs, labels = gen(v, 50, t, seed=3, **kwargs)
    assert inputs.shape == labels.shape == (50, t) and inputs.dtype == labels.dtype == torch.int64
    assert inputs.min() >= 0 and inputs.max() < v
    assert (labels[labels != IGNORE_INDEX] >= half).all()  # labels are values (upper half)
    assert ((labels != IGNORE_INDEX).sum(1) == n).all()  # every pair queried once (it fits here)
    for i in range(50):
        seq, lab = inputs[i].tolist(), labels[i].tolist()
        queries = [q for q in range(t) if lab[q] != IGNORE_INDEX]
        if gen is gap_mqar:  # context layout varies; the query's key tokens still precede a label
            assert all(seq[q] < half for q in queries)
            continue
        # context: n groups of (key tokens..., value); keys in the lower half, values in the upper
        ctx = [seq[g * (key_len + 1):(g + 1) * (key_len + 1)] for g in range(n)]
        table = {tuple(c[:-1]): c[-1] for c in ctx}
        assert len(table) == n  # distinct keys
        assert all(all(k < half for k in key) and 1 <= min(key) and val >= half for key, val in table.items())
        assert min(queries) >= n * (key_len + 1)  # queries come after the context
        key_tokens = {k for key in table for k in key}
        fillers = [seq[j] for j in range(n * (key_len + 1), t)
                   if all(j not in range(q - key_len + 1, q + 1) for q in queries)]
        assert not key_tokens & set(fillers)  # filler never fakes a key token
        for q in queries:
            assert table[tuple(seq[q - key_len + 1:q + 1])] == lab[q]  # label at the key's last token
        if key_len == 2:  # composition: no single key token identifies the value
            assert all(sum(k[0] == f for k in table) > 1 for f in {k[0] for k in table})
            assert all(sum(k[1] == f for k in table) > 1 for f in {k[1] for k in table})


def test_gap_variant_with_certain_gap_puts_a_filler_between_key_tokens():
    inputs, labels = gap_mqar(512, 30, 64, 9, seed=0, gap_prob=1.0)
    for seq, lab in zip(inputs.tolist(), labels.tolist()):
        table = {(seq[4 * g], seq[4 * g + 2]): seq[4 * g + 3] for g in range(9)}  # a f b v
        assert len(table) == 9
        queries = [q for q in range(64) if lab[q] != IGNORE_INDEX]
        assert queries and all(table[(seq[q - 2], seq[q])] == lab[q] for q in queries)  # a f b -> v
        assert all((seq[q - 1], seq[q]) not in table for q in queries)


def test_seeded_and_distinct():
    a = mqar(128, 10, 32, 4, seed=1)
    b = mqar(128, 10, 32, 4, seed=1)
    c = mqar(128, 10, 32, 4, seed=2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and not torch.equal(a[0], c[0])


@pytest.mark.parametrize("call,match", [
    (lambda: mqar(64, 10, 64, 4), "must exceed seq_len"),
    (lambda: mqar(512, 10, 64, 40), "seq_len"),
    (lambda: mqar(512, 0, 64, 4), "num_examples"),
    (lambda: mqar(512, 10, 64, 4, power_a=0.0), "power_a"),
    (lambda: compositional_mqar(512, 10, 20, 9), "too short"),
    (lambda: gap_mqar(512, 10, 64, 9, gap_prob=0.0), "gap_prob"),
    (lambda: compositional_mqar(512, 10, 64, 9, gap_prob=1.5), "gap_prob"),
])
def test_task_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
