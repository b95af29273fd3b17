"""fold_bags, superpose_embeddings and multi_hot_cross_entropy against naive/dense references."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.tst import (
    fold_bags,
    multi_hot_cross_entropy,
    multi_hot_cross_entropy_reference,
    superpose_embeddings,
)


@pytest.mark.parametrize("s, L", [(1, 5), (2, 3), (4, 7), (3, 1)])
def test_fold_bags_matches_naive_indexing(s, L):
    ids = torch.arange(2 * s * (L + 1)).view(2, s * (L + 1))
    inputs, targets = fold_bags(ids, s)
    assert inputs.shape == targets.shape == (2, L, s)
    for b in range(2):
        for j in range(L):
            assert inputs[b, j].tolist() == [ids[b, j * s + k].item() for k in range(s)]
            assert targets[b, j].tolist() == [ids[b, (j + 1) * s + k].item() for k in range(s)]


@pytest.mark.parametrize("ids, s, exc, match", [
    (torch.zeros(2, 12, dtype=torch.long), 0, ValueError, "s must be an int >= 1"),
    (torch.zeros(2, 12, dtype=torch.long), 2.0, TypeError, "s must be an int >= 1"),
    (torch.zeros(2, 12, dtype=torch.long), 5, ValueError, "divide"),
    (torch.zeros(2, 3, dtype=torch.long), 4, ValueError, "shorter than two bags"),
    (torch.zeros(2, 4, dtype=torch.long), 4, ValueError, "shorter than two bags"),
    (torch.zeros(12, dtype=torch.long), 2, ValueError, r"ids must be .*\[B, N\]"),
    (torch.zeros(2, 12), 2, ValueError, "ids must be an int64/int32 tensor"),  # a wrong dtype: a ValueError now
])
def test_fold_bags_bad_input(ids, s, exc, match):
    with pytest.raises(exc, match=match):
        fold_bags(ids, s)


def test_superpose_embeddings_is_the_mean_and_grads_split_evenly():
    torch.manual_seed(0)
    emb = nn.Embedding(11, 5)
    bags = torch.tensor([[[1, 2, 2], [3, 4, 5]]])  # [1, 2, 3], a repeated token in bag 0
    h = superpose_embeddings(bags, emb)
    want = torch.stack([torch.stack([emb.weight[list(b)].sum(0) / 3 for b in row]) for row in bags.tolist()])
    torch.testing.assert_close(h, want)
    h.sum().backward()
    # each occurrence contributes 1/3 per dimension; token 2 occurs twice
    assert torch.allclose(emb.weight.grad[2], torch.full((5,), 2 / 3))
    assert torch.allclose(emb.weight.grad[4], torch.full((5,), 1 / 3))
    assert torch.allclose(emb.weight.grad[0], torch.zeros(5))
    torch.testing.assert_close(superpose_embeddings(bags, emb.weight), h)
    with pytest.raises(ValueError):
        superpose_embeddings(bags[0], emb)


def _data(b=3, L=6, s=4, V=13, seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, L, V, generator=g) * 3
    targets = torch.randint(0, V, (b, L, s), generator=g)
    targets[0, 0] = torch.tensor([5, 5, 5, 2])[:s]  # repeated tokens in one bag
    targets[1, 2, :2] = 7
    return logits, targets


@pytest.mark.parametrize("s", [1, 2, 4])
def test_mce_equals_dense_multi_hot_reference_and_mean_of_s_ces(s):
    logits, targets = _data(s=s)
    logits.requires_grad_(True)
    got = multi_hot_cross_entropy(logits, targets)
    dense = multi_hot_cross_entropy_reference(logits, targets)
    mean_ce = torch.stack([F.cross_entropy(logits.reshape(-1, 13), targets[..., k].reshape(-1))
                           for k in range(s)]).mean()
    torch.testing.assert_close(got, dense)
    torch.testing.assert_close(got, mean_ce)
    (g1,) = torch.autograd.grad(got, logits)
    (g2,) = torch.autograd.grad(mean_ce, logits)
    torch.testing.assert_close(g1, g2)


def test_mce_reductions_and_ignore_index():
    logits, targets = _data()
    targets[2, 3, 1] = -100
    targets[1, 0] = -100
    none = multi_hot_cross_entropy(logits, targets, reduction="none")
    assert none.shape == targets.shape and (none[targets == -100] == 0).all()
    total = multi_hot_cross_entropy(logits, targets, reduction="sum")
    torch.testing.assert_close(total, none.sum())
    # mean over the non-ignored (position, k) pairs == CE over the flattened repeated logits with ignore
    rep = logits[:, :, None, :].expand(-1, -1, 4, -1).reshape(-1, 13)
    want = F.cross_entropy(rep, targets.reshape(-1), ignore_index=-100)
    torch.testing.assert_close(multi_hot_cross_entropy(logits, targets), want)


def test_mce_low_precision_logits_computed_in_fp32():
    logits, targets = _data()
    a = multi_hot_cross_entropy(logits.bfloat16(), targets)
    b = multi_hot_cross_entropy_reference(logits.bfloat16().float(), targets)
    assert a.dtype == torch.float32
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"reduction": "avg"}, ValueError, "reduction"),
    ({"targets": torch.zeros(3, 5, 4, dtype=torch.long)}, ValueError, r"targets must be .* L = 6 \(from logits\)"),
    ({"targets": torch.full((3, 6, 4), 13)}, ValueError, r"\[0, 13\)"),
    ({"targets": torch.zeros(3, 6, 4)}, ValueError, "targets must be an int64/int32 tensor"),  # ValueError now
    ({"logits": torch.zeros(3, 6, 13, dtype=torch.long)}, ValueError, "logits must be a float tensor"),
    ({"targets": torch.full((3, 6, 4), -100)}, ValueError, "ignore_index"),
])
def test_mce_bad_input(kwargs, exc, match):
    logits, targets = _data()
    args = {"logits": logits, "targets": targets}
    reduction = kwargs.pop("reduction", "mean")
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        multi_hot_cross_entropy(args["logits"], args["targets"], reduction=reduction)
