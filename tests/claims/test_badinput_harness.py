"""The bad-input harness itself: it catches a mutated object, an unnamed argument and a silent success."""

import numpy as np
import pytest
import torch

from _badinput import BadInput, check_bad_inputs, snapshot


class Counter:
    def __init__(self):
        self.count = 0
        self.values = np.zeros(3)
        self.layer = torch.nn.Linear(2, 2)

    def add(self, x):
        if not np.isfinite(x):
            raise ValueError(f"x must be finite, got {x}")
        self.count += 1

    def careless_add(self, x):
        self.values[0] = 1.0  # mutates before it validates
        if not np.isfinite(x):
            raise ValueError(f"x must be finite, got {x}")

    def careless_module(self, x):
        with torch.no_grad():
            self.layer.weight[0, 0] = 7.0
        raise ValueError("x is bad")


def test_a_clean_refusal_passes():
    c = Counter()
    err = check_bad_inputs(c.add, BadInput("nan", args=(float("nan"),), names="x"), target=c)
    assert "finite" in str(err) and c.count == 0


@pytest.mark.parametrize("method", ["careless_add", "careless_module"])
def test_a_mutation_before_the_error_is_caught(method):
    c = Counter()
    with pytest.raises(AssertionError, match="changed"):
        check_bad_inputs(getattr(c, method), BadInput("nan", args=(float("nan"),), names="x"), target=c)


def test_unnamed_argument_wrong_type_and_success_are_caught():
    c = Counter()
    with pytest.raises(AssertionError, match="does not name"):
        check_bad_inputs(c.add, BadInput("nan", args=(float("nan"),), names="y"), target=c)
    with pytest.raises(AssertionError, match="expected"):
        check_bad_inputs(c.add, BadInput("nan", args=(float("nan"),), exc=TypeError, names="x"), target=c)
    with pytest.raises(AssertionError, match="succeeded"):
        check_bad_inputs(c.add, BadInput("ok", args=(1.0,), names="x"), target=c)


def test_snapshot_sees_nested_arrays_and_tensors():
    a, b = Counter(), Counter()
    b.layer.load_state_dict(a.layer.state_dict())
    from _badinput import _equal

    assert _equal(snapshot(a), snapshot(b))
    b.values[2] = np.nan
    assert not _equal(snapshot(a), snapshot(b))


def test_a_generator_is_compared_by_its_state():
    from _badinput import _equal

    a = np.random.default_rng(0)
    before = snapshot({"rng": a})
    assert _equal(before, snapshot({"rng": a}))
    a.random()
    assert not _equal(before, snapshot({"rng": a}))
