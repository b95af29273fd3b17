"""GroupPartition / Primitive: construction, validation, meet, and the split/merge decomposition round-trip."""

import numpy as np
import pytest

from neurips26.groupshift import GroupPartition, Primitive, apply_primitives


def _random_partition(rng, d, k):
    return GroupPartition.from_labels(rng.integers(0, k, size=d))


def test_from_labels_and_lists_agree():
    a = GroupPartition.from_labels([2, 2, 0, 1, 0])
    b = GroupPartition.from_lists([[3], [4, 2], [0, 1]], 5)
    assert a == b
    assert [g.tolist() for g in a.groups] == [[0, 1], [2, 4], [3]]
    assert a.labels_.tolist() == [0, 0, 1, 2, 1]
    with pytest.raises(AttributeError):
        a.groups = []


@pytest.mark.parametrize("groups, match", [
    ([[0, 1], [1, 2]], "overlap"),
    ([[0, 1]], "do not cover"),
    ([[0, 1, 2], []], "empty"),
    ([[0, 1, 5], [2]], "outside"),
])
def test_from_lists_rejects_bad_partitions(groups, match):
    with pytest.raises(ValueError, match=match):
        GroupPartition.from_lists(groups, 3)


def test_meet_is_common_refinement():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = _random_partition(rng, 30, 5), _random_partition(rng, 30, 4)
        m = a.meet(b)
        for g in m.groups:  # every meet block lies inside one group of each
            assert np.unique(a.labels_[g]).size == 1 and np.unique(b.labels_[g]).size == 1
        # coarsest: features with the same (a, b) labels share a block
        pairs = {(int(x), int(y)) for x, y in zip(a.labels_, b.labels_)}
        assert m.n_groups == len(pairs)
        assert a.meet(a) == a


def test_transition_round_trips_and_is_bounded():
    rng = np.random.default_rng(1)
    for _ in range(40):
        d = int(rng.integers(1, 25))
        a, b = _random_partition(rng, d, int(rng.integers(1, 6))), _random_partition(rng, d, int(rng.integers(1, 6)))
        prims = a.transition_to(b)
        assert apply_primitives(a, prims) == b
        assert len(prims) <= 2 * a.meet(b).n_groups
        kinds = [p.kind for p in prims]
        assert kinds == sorted(kinds, key=lambda k: k != "split")  # all splits before all merges
    assert a.transition_to(a) == []


def test_breast_cancer_style_transition_counts():
    a = GroupPartition.from_lists([[j, 10 + j, 20 + j] for j in range(10)], 30)
    b = GroupPartition.from_lists([list(range(0, 10)), list(range(10, 20)), list(range(20, 30))], 30)
    prims = a.transition_to(b)
    assert sum(p.kind == "split" for p in prims) == 20 and sum(p.kind == "merge" for p in prims) == 27
    assert apply_primitives(a, prims) == b


def test_primitive_validation_and_move():
    with pytest.raises(ValueError, match="cover exactly"):
        Primitive("split", ((0, 1, 2),), ((0,), (1,)))
    with pytest.raises(ValueError, match="kind"):
        Primitive("swap", ((0,),), ((0,),))
    part = GroupPartition.contiguous(3, 7)
    moved = part.moved(0, 1)
    assert moved.labels_[0] == moved.labels_[3]
    assert apply_primitives(part, part.transition_to(moved)) == moved
    with pytest.raises(ValueError, match="not a group"):
        Primitive("merge", ((0,), (1,)), ((0, 1),)).apply(part)
