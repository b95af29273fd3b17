"""Group partitions of the feature set ``[d] = {0, .., d-1}`` and their split/merge decomposition.

A partition ``G`` of ``[d]`` is stored canonically: every group is a sorted ``int64`` array and the groups
are ordered by their smallest feature. Two partitions are equal when they hold the same groups.

The transition ``G -> G'`` goes through the *meet* ``M = {g ∩ g' != ∅ : g ∈ G, g' ∈ G'}`` (the coarsest
partition finer than both):

* phase S: every ``g ∈ G \\ G'`` is split into its M-pieces by binary splits, largest piece first;
* phase M: the M-pieces inside every ``g' ∈ G' \\ G`` are merged pairwise into ``g'``.

Groups in ``G ∩ G'`` are untouched. The number of primitives is ``Σ_g (#pieces(g) - 1) +
Σ_g' (#pieces(g') - 1) <= 2|M|``. (The split-then-merge order and "largest piece first" are inferred.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..constraints import Choice, Instance, Int, check_arguments, validate

Group = tuple[int, ...]


def _as_group_tuple(indices: Iterable[int]) -> Group:
    return tuple(sorted(int(i) for i in indices))


@dataclass(frozen=True)
class Primitive:
    """One elementary partition change.

    Attributes:
        kind: ``"split"`` (one source group -> two target groups) or ``"merge"`` (two sources -> one target).
        sources: the groups removed from the partition, each a sorted tuple of feature indices.
        targets: the groups added to the partition, each a sorted tuple of feature indices.
    """

    kind: Literal["split", "merge"]
    sources: tuple[Group, ...]
    targets: tuple[Group, ...]

    def __post_init__(self) -> None:
        for name in ("sources", "targets"):
            groups = getattr(self, name)
            if not isinstance(groups, tuple) or not all(
                    isinstance(g, tuple) and g and all(isinstance(i, int | np.integer) and not isinstance(i, bool)
                                                       for i in g) for g in groups):
                raise TypeError(f"Primitive.{name} must be a tuple of non-empty tuples of feature indices, got "
                                f"{groups!r}")
        check_arguments("Primitive", {"kind": Choice("split", "merge")}, {"kind": self.kind})
        want = (1, 2) if self.kind == "split" else (2, 1)
        if (len(self.sources), len(self.targets)) != want:
            raise ValueError(f"a {self.kind} has {want[0]} source(s) and {want[1]} target(s), got "
                             f"{len(self.sources)} and {len(self.targets)}")
        src = sorted(i for g in self.sources for i in g)
        tgt = sorted(i for g in self.targets for i in g)
        if src != tgt:
            raise ValueError("a primitive's targets must cover exactly the features of its sources")

    def apply(self, partition: GroupPartition) -> GroupPartition:
        """The partition after this primitive; ``ValueError`` if a source is not a group of ``partition``."""
        current = set(partition.keys())
        for src in self.sources:
            if src not in current:
                raise ValueError(f"{self.kind}: source group {src} is not a group of the partition")
            current.remove(src)
        current.update(self.targets)
        return GroupPartition.from_lists([list(g) for g in current], partition.n_features)


class GroupPartition:
    """An immutable partition of the features ``0..n_features-1`` into non-empty, disjoint groups.

    Build it with :meth:`from_labels` (one label per feature) or :meth:`from_lists` (a list of index lists).

    Attributes:
        groups: list of sorted ``int64`` index arrays, ordered by their smallest index.
        labels_: ``int64 [n_features]``, the position in ``groups`` of each feature's group.
        n_features: ``d``.
    """

    __slots__ = ("groups", "labels_", "n_features", "_keys", "_sizes")

    def __init__(self, groups: Sequence[np.ndarray], n_features: int):
        # Internal: callers use from_labels / from_lists, which validate.
        ordered = sorted((np.asarray(g, dtype=np.int64) for g in groups), key=lambda g: int(g[0]))
        labels = np.empty(n_features, dtype=np.int64)
        for k, g in enumerate(ordered):
            labels[g] = k
            g.setflags(write=False)
        labels.setflags(write=False)
        object.__setattr__(self, "groups", ordered)
        object.__setattr__(self, "labels_", labels)
        object.__setattr__(self, "n_features", int(n_features))
        object.__setattr__(self, "_keys", tuple(tuple(g.tolist()) for g in ordered))
        sizes = np.array([g.size for g in ordered], dtype=np.int64)
        sizes.setflags(write=False)
        object.__setattr__(self, "_sizes", sizes)

    def __setattr__(self, name, value):  # immutability
        raise AttributeError("GroupPartition is immutable")

    def __reduce__(self):  # pickling (slots + immutability)
        return (GroupPartition, ([np.array(g) for g in self.groups], self.n_features))

    def __deepcopy__(self, memo):
        return self

    # -- constructors ---------------------------------------------------------------------------------
    @classmethod
    def from_labels(cls, labels: Sequence | np.ndarray) -> GroupPartition:
        """Partition from one (hashable) label per feature: features with equal labels share a group."""
        arr = np.asarray(labels)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"labels must be a non-empty 1-D sequence (one label per feature), got shape "
                             f"{arr.shape}")
        _, inverse = np.unique(arr, return_inverse=True)
        order = np.argsort(inverse, kind="stable")  # features grouped by label, ascending within a group
        bounds = np.flatnonzero(np.diff(inverse[order])) + 1
        return cls(np.split(order, bounds), arr.size)

    @classmethod
    @validate(n_features=Int(low=1))
    def from_lists(cls, groups: Sequence[Sequence[int]], n_features: int) -> GroupPartition:
        """Partition from a list of groups (each a list of feature indices) of ``n_features`` features.

        Raises ``ValueError`` for an empty group, an index outside ``[0, n_features)``, a feature in two
        groups (overlap) or a feature in no group (not covering).
        """
        if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence | np.ndarray):
            raise TypeError(f"groups must be a list of index lists, got {type(groups).__name__}")
        count = np.zeros(int(n_features), dtype=np.int64)
        arrays = []
        for k, g in enumerate(groups):
            arr = np.asarray(g)
            if arr.ndim != 1 or arr.size == 0:
                raise ValueError(f"groups[{k}] is empty or not a 1-D index list (shape {arr.shape}); "
                                 "every group needs at least one feature")
            if not np.issubdtype(arr.dtype, np.integer):
                raise TypeError(f"groups[{k}] must hold integer feature indices, got dtype {arr.dtype}")
            if arr.min() < 0 or arr.max() >= n_features:
                raise ValueError(f"groups[{k}] has feature indices outside [0, {n_features}): "
                                 f"min {arr.min()}, max {arr.max()}")
            np.add.at(count, arr, 1)
            arrays.append(np.sort(arr.astype(np.int64)))
        overlap = np.flatnonzero(count > 1)
        if overlap.size:
            raise ValueError(f"groups overlap: features {overlap[:10].tolist()} are in more than one group")
        missing = np.flatnonzero(count == 0)
        if missing.size:
            raise ValueError(f"groups do not cover every feature: features {missing[:10].tolist()} "
                             f"(of {n_features}) are in no group")
        return cls(arrays, int(n_features))

    @classmethod
    @validate(size=Int(low=1), n_features=Int(low=1))
    def contiguous(cls, size: int, n_features: int) -> GroupPartition:
        """Contiguous blocks of ``size`` features (the last one may be smaller)."""
        return cls.from_labels(np.arange(n_features) // int(size))

    # -- basic protocol -------------------------------------------------------------------------------
    @property
    def n_groups(self) -> int:
        return len(self.groups)

    @property
    def sizes(self) -> np.ndarray:
        """``int64 [n_groups]``: the number of features of each group."""
        return self._sizes

    def keys(self) -> tuple[Group, ...]:
        """Each group as a sorted tuple of feature indices (hashable)."""
        return self._keys

    def __len__(self) -> int:
        return len(self.groups)

    def __iter__(self):
        return iter(self.groups)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GroupPartition):
            return NotImplemented
        return self.n_features == other.n_features and self._keys == other._keys

    def __hash__(self) -> int:
        return hash((self.n_features, self._keys))

    def __repr__(self) -> str:
        return f"GroupPartition(n_features={self.n_features}, n_groups={self.n_groups})"

    # -- lattice operations and transitions ---------------------------------------------------------------
    def _check_same_d(self, other: GroupPartition, where: str, name: str = "other") -> None:
        check_arguments(f"GroupPartition.{where}", {name: Instance(GroupPartition, "GroupPartition")}, {name: other})
        if other.n_features != self.n_features:
            raise ValueError(f"{name} partitions {other.n_features} features, this one {self.n_features}")

    def meet(self, other: GroupPartition) -> GroupPartition:
        """The coarsest common refinement ``{g ∩ g' != ∅}``."""
        self._check_same_d(other, "meet")
        pair = self.labels_ * other.n_groups + other.labels_
        return GroupPartition.from_labels(pair)

    def moved(self, feature: int, to_group: int) -> GroupPartition:
        """The partition with ``feature`` moved into the group at position ``to_group`` (a MOVE)."""
        check_arguments("GroupPartition.moved", {"feature": Int(low=0, high=self.n_features - 1),
                                                  "to_group": Int(low=0, high=self.n_groups - 1)},
                        {"feature": feature, "to_group": to_group})
        labels = self.labels_.copy()
        labels[feature] = to_group
        return GroupPartition.from_labels(labels)

    def transition_to(self, other: GroupPartition,
                      order: Literal["split_then_merge"] = "split_then_merge") -> list[Primitive]:
        """Primitives that turn this partition into ``other``: all splits first, then all merges.

        Applying them in order to ``self`` (see :func:`apply_primitives`) gives ``other`` exactly.
        """
        self._check_same_d(other, "transition_to")
        check_arguments("GroupPartition.transition_to", {"order": Choice("split_then_merge")}, {"order": order})
        meet = self.meet(other)
        old_keys, new_keys = set(self._keys), set(other._keys)
        prims: list[Primitive] = []
        # Phase S: g ∈ G \ G' -> its M-pieces, by binary splits taking off the largest piece first.
        for g, key in zip(self.groups, self._keys):
            if key in new_keys:
                continue
            pieces = [meet.groups[k] for k in np.unique(meet.labels_[g])]
            if len(pieces) < 2:
                continue
            pieces.sort(key=lambda a: (-a.size, int(a[0])))
            rest = key
            for piece in pieces[:-1]:
                piece_key = _as_group_tuple(piece)
                remainder = _as_group_tuple(sorted(set(rest) - set(piece_key)))
                prims.append(Primitive("split", (rest,), (piece_key, remainder)))
                rest = remainder
        # Phase M: M-pieces of g' ∈ G' \ G are merged pairwise (largest first) into g'.
        for g, key in zip(other.groups, other._keys):
            if key in old_keys:
                continue
            pieces = [meet.groups[k] for k in np.unique(meet.labels_[g])]
            if len(pieces) < 2:
                continue
            pieces.sort(key=lambda a: (-a.size, int(a[0])))
            acc = _as_group_tuple(pieces[0])
            for piece in pieces[1:]:
                piece_key = _as_group_tuple(piece)
                merged = _as_group_tuple(acc + piece_key)
                prims.append(Primitive("merge", (acc, piece_key), (merged,)))
                acc = merged
        return prims


@validate(partition=Instance(GroupPartition, "GroupPartition"))
def apply_primitives(partition: GroupPartition, primitives: Sequence[Primitive]) -> GroupPartition:
    """Apply ``primitives`` in order to ``partition`` and return the resulting partition."""
    primitives = list(primitives)
    for k, prim in enumerate(primitives):
        if not isinstance(prim, Primitive):
            raise TypeError(f"primitives[{k}] must be a Primitive, got {type(prim).__name__}")
    for prim in primitives:
        partition = prim.apply(partition)
    return partition


def as_partition(groups, n_features: int, name: str = "groups") -> GroupPartition:
    """Coerce ``groups`` (GroupPartition, int block size, list of index lists, or 1-D label array)."""
    if isinstance(groups, GroupPartition):
        if groups.n_features != n_features:
            raise ValueError(f"{name} partitions {groups.n_features} features but X has {n_features}")
        return groups
    if isinstance(groups, (int, np.integer)) and not isinstance(groups, bool):
        return GroupPartition.contiguous(int(groups), n_features)
    if isinstance(groups, bool) or groups is None or isinstance(groups, (str, bytes, dict)):
        raise TypeError(f"{name} must be a GroupPartition, an int block size, a list of index lists or "
                        f"one label per feature, got {type(groups).__name__}")
    seq = list(groups)
    if seq and all(np.ndim(g) == 0 for g in seq):  # one label per feature
        if len(seq) != n_features:
            raise ValueError(f"{name} as labels must have one label per feature ({n_features}), got {len(seq)}")
        return GroupPartition.from_labels(np.asarray(seq))
    return GroupPartition.from_lists(seq, n_features)
