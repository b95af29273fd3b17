"""neurips26.constraints against hand-written expectations: each constraint's accept/refuse table, the one rule
for numpy scalars, bools and 0-d tensors, named dimensions bound across arguments, trusted() skipping value
checks only, methods and defaults, and generated bad-input tables that all raise."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from neurips26 import _checks
from neurips26.constraints import (
    AnyOf,
    ArgumentTypeError,
    ArrayLike,
    Bool,
    Callable,
    Choice,
    Instance,
    Int,
    Optional,
    Real,
    SequenceOf,
    Tensor,
    bad_inputs,
    check_arguments,
    check_bool,
    check_int,
    is_trusted,
    trusted,
    validate,
)

NAN, INF = float("nan"), float("inf")


def _outcome(constraint, value):
    """None if accepted, else the exception class raised (TypeError before ValueError: ArgumentTypeError is
    both)."""
    try:
        constraint.check(value, "arg", "f", {})
    except TypeError:
        return TypeError
    except ValueError:
        return ValueError
    return None


# ------------------------------------------------------------------------------------------ scalar tables
@pytest.mark.parametrize("value, want", [
    (0, None), (5, None), (10, None), (np.int64(3), None), (np.int32(3), None), (torch.tensor(3), None),
    (np.array(4), None),
    (-1, ValueError), (11, ValueError), (np.int64(11), ValueError), (torch.tensor(-2), ValueError),
    (True, TypeError), (np.bool_(True), TypeError), (torch.tensor(True), TypeError), (3.0, TypeError),
    (np.float64(3.0), TypeError), (torch.tensor(3.0), TypeError), (torch.tensor([3]), TypeError), ("3", TypeError),
    (None, TypeError), (1 + 0j, TypeError),
])
def test_int_table(value, want):
    assert _outcome(Int(low=0, high=10), value) is want


@pytest.mark.parametrize("constraint, value, want", [
    (Real(0, 1), 0, None), (Real(0, 1), 1, None), (Real(0, 1), 0.5, None), (Real(0, 1), np.float32(0.5), None),
    (Real(0, 1), np.int64(1), None), (Real(0, 1), torch.tensor(0.25), None), (Real(0, 1), torch.tensor(1), None),
    (Real(0, 1), np.array(0.5), None),
    (Real(0, 1, closed="left"), 1.0, ValueError), (Real(0, 1, closed="left"), 0.0, None),
    (Real(0, 1, closed="right"), 0.0, ValueError), (Real(0, 1, closed="right"), 1.0, None),
    (Real(0, 1, closed="neither"), 0.0, ValueError), (Real(0, 1, closed="neither"), 1.0, ValueError),
    (Real(low=0, closed="neither"), 1e-300, None), (Real(high=0), 0.0, None), (Real(high=0, closed="left"), 0.0,
                                                                                ValueError),
    (Real(0, 1), -0.1, ValueError), (Real(0, 1), 1.1, ValueError),
    (Real(), NAN, ValueError), (Real(), INF, ValueError), (Real(), -INF, ValueError),
    (Real(), np.float32("nan"), ValueError), (Real(), torch.tensor(INF), ValueError),
    (Real(allow_nan=True), NAN, None), (Real(allow_inf=True), INF, None), (Real(allow_inf=True), NAN, ValueError),
    (Real(low=0, allow_inf=True), -INF, ValueError),
    (Real(), True, TypeError), (Real(), np.bool_(False), TypeError), (Real(), torch.tensor(False), TypeError),
    (Real(), "0.5", TypeError), (Real(), None, TypeError), (Real(), 1j, TypeError), (Real(), [0.5], TypeError),
    (Real(), torch.tensor([0.5]), TypeError), (Real(), torch.tensor(1j), TypeError),
])
def test_real_table(constraint, value, want):
    assert _outcome(constraint, value) is want


@pytest.mark.parametrize("constraint, value, want", [
    (Choice("a", "b"), "a", None), (Choice("a", "b"), "c", ValueError), (Choice(1, 2), 1, None),
    (Choice(1, 2), True, ValueError), (Choice(True, False), 1, ValueError), (Choice(True, False), True, None),
    (Choice(None, torch.float16), None, None), (Choice(None, torch.float16), torch.float16, None),
    (Choice(None, torch.float16), torch.float64, ValueError), (Choice("a"), np.array(["a", "a"]), ValueError),
    (Bool(), True, None), (Bool(), np.bool_(False), None), (Bool(), 1, TypeError), (Bool(), "yes", TypeError),
    (Bool(), None, TypeError),
    (Instance(torch.nn.Module), torch.nn.Linear(1, 1), None), (Instance(torch.nn.Module), "m", TypeError),
    (Instance((int, str)), "s", None),
    (Callable(), len, None), (Callable(), lambda: 0, None), (Callable(), int, None), (Callable(), 3, TypeError),
    (Optional(Int(low=1)), None, None), (Optional(Int(low=1)), 0, ValueError), (Optional(Int()), "1", TypeError),
    (AnyOf(Int(low=0), Choice("auto")), "auto", None), (AnyOf(Int(low=0), Choice("auto")), 3, None),
    (AnyOf(Int(low=0), Choice("auto")), -1, ValueError), (AnyOf(Int(low=0), Instance(str)), 1.5, TypeError),
])
def test_choice_bool_instance_callable_optional_table(constraint, value, want):
    assert _outcome(constraint, value) is want


def test_type_errors_are_also_value_errors_and_value_errors_are_not_type_errors():
    with pytest.raises(ArgumentTypeError) as err:
        Int().check("1", "n", "f")
    assert isinstance(err.value, TypeError) and isinstance(err.value, ValueError)
    with pytest.raises(ValueError) as err:
        Int(low=1).check(0, "n", "f")
    assert not isinstance(err.value, TypeError)


@given(low=st.floats(-1e6, 1e6), width=st.floats(0, 1e6), x=st.floats(allow_nan=False, allow_infinity=False))
def test_real_accepts_x_iff_it_lies_in_the_closed_interval(low, width, x):
    high = low + width
    assert (_outcome(Real(low, high), x) is None) == (low <= x <= high)


@given(low=st.integers(-100, 100), high=st.integers(-100, 100), x=st.integers(-200, 200))
def test_int_accepts_x_iff_low_le_x_le_high(low, high, x):
    assert (_outcome(Int(low, high), x) is None) == (low <= x <= high)
    assert (_outcome(Int(low, high), np.int64(x)) is None) == (low <= x <= high)


# ------------------------------------------------------------------------------------------ messages
def test_one_message_form():
    @validate(n=Int(low=1), p=Real(0, 1, closed="neither"), mode=Choice("x", "y"), model=Instance(torch.nn.Module))
    def fit(n, p=0.5, mode="x", model=None):
        return n

    cases = [(dict(n=0), "fit: n must be an int >= 1, got 0"),
             (dict(n=2, p=1.0), "fit: p must be a finite number in (0, 1), got 1.0"),
             (dict(n=2, mode="z"), "fit: mode must be one of ('x', 'y'), got 'z'"),
             (dict(n=2, model=3), "fit: model must be a Module, got 3")]
    for kwargs, message in cases:
        with pytest.raises(ValueError) as err:
            fit(**kwargs)
        assert str(err.value) == message


def test_tensor_messages_summarise_instead_of_dumping():
    with pytest.raises(ValueError) as err:
        Tensor("B D").check(torch.zeros(1000, 3, 2), "x", "f")
    assert str(err.value) == "f: x must be a tensor [B, D] of finite values, got a float32 tensor of shape [1000, 3, 2]"


# ------------------------------------------------------------------------------------------ arrays and tensors
@pytest.mark.parametrize("constraint, value, want", [
    (Tensor("B T D"), torch.zeros(2, 3, 4), None), (Tensor("B T D"), torch.zeros(2, 3), ValueError),
    (Tensor("B T D"), np.zeros((2, 3, 4)), TypeError), (Tensor("B T D"), [[[0.0]]], TypeError),
    (Tensor("B 3 H W"), torch.zeros(1, 3, 4, 4), None), (Tensor("B 3 H W"), torch.zeros(1, 4, 4, 4), ValueError),
    (Tensor("N N"), torch.zeros(3, 3), None), (Tensor("N N"), torch.zeros(3, 4), ValueError),
    (Tensor("_ D"), torch.zeros(7, 2), None), (Tensor("... D"), torch.zeros(2), None),
    (Tensor("... D"), torch.zeros(2, 3, 4, 5), None), (Tensor("... 2"), torch.zeros(4, 3), ValueError),
    (Tensor("B ... 2"), torch.zeros(0, 2), None), (Tensor("B ... 2"), torch.zeros(2), ValueError),
    (Tensor(dtype="float"), torch.zeros(2, dtype=torch.float64), None),
    (Tensor(dtype="float"), torch.zeros(2, dtype=torch.long), ValueError),
    (Tensor(dtype="integer"), torch.zeros(2, dtype=torch.int32), None),
    (Tensor(dtype="integer"), torch.zeros(2, dtype=torch.bool), ValueError),
    (Tensor(dtype="bool"), torch.zeros(2, dtype=torch.bool), None),
    (Tensor(dtype=(torch.int32, torch.int64)), torch.zeros(2, dtype=torch.int32), None),
    (Tensor(dtype=torch.float32), torch.zeros(2, dtype=torch.float64), ValueError),
    (Tensor("B"), torch.tensor([0.0, NAN]), ValueError), (Tensor("B"), torch.tensor([0.0, INF]), ValueError),
    (Tensor("B", finite=False), torch.tensor([NAN]), None), (Tensor(), torch.tensor(NAN), ValueError),
    (Tensor(ndim=(1, 2)), torch.zeros(2, 2), None), (Tensor(ndim=(1, 2)), torch.zeros(2, 2, 2), ValueError),
    (ArrayLike(ndim=2), [[1.0, 2.0]], None), (ArrayLike(ndim=2), np.zeros((2, 2)), None),
    (ArrayLike(ndim=2), torch.zeros(2, 2), None), (ArrayLike(ndim=2), [1.0], ValueError),
    (ArrayLike(), [1.0, NAN], ValueError), (ArrayLike(finite=False), [1.0, NAN], None),
    (ArrayLike(), "abc", TypeError), (ArrayLike(), None, TypeError), (ArrayLike(), [[1], [1, 2]], TypeError),
    (ArrayLike(), np.array(["a"]), TypeError), (ArrayLike(dtype="integer"), [1, 2], None),
    (ArrayLike(dtype="integer"), [1.0], ValueError), (ArrayLike(dtype=np.float32), np.zeros(2, np.float32), None),
    (ArrayLike(dtype=np.float32), np.zeros(2), ValueError), (ArrayLike(dtype="bool"), [True], None),
])
def test_shaped_table(constraint, value, want):
    assert _outcome(constraint, value) is want


def test_named_dimensions_bind_across_the_arguments_of_one_call():
    @validate(x=Tensor("B T D"), mask=Optional(Tensor("B T", dtype="bool")), w=Tensor("D E"))
    def f(x, mask=None, w=None):
        return "ran"

    x = torch.zeros(2, 5, 4)
    assert f(x, torch.ones(2, 5, dtype=torch.bool), torch.zeros(4, 3)) == "ran"
    assert f(x, None, torch.zeros(4, 7)) == "ran"
    with pytest.raises(ValueError, match=r"f: mask must be None or a bool tensor \[B, T\] with T = 5 \(from x\)"):
        f(x, torch.ones(2, 6, dtype=torch.bool), torch.zeros(4, 3))
    with pytest.raises(ValueError, match=r"w must be .* with D = 4 \(from x\), got a float32 tensor of shape \[3, 3\]"):
        f(x, None, torch.zeros(3, 3))
    # bindings do not leak from one call to the next
    assert f(torch.zeros(1, 1, 1), None, torch.zeros(1, 1)) == "ran"
    # a repeated name within one tensor
    with pytest.raises(ValueError, match="with N = 2"):
        Tensor("N N").check(torch.zeros(2, 3), "m", "g", {})


def test_arrays_name_their_dimensions_too():
    """ArrayLike("X X") / ("X Y"): the same binding as Tensor, on anything np.asarray reads, across arguments
    (mixed with tensors too)."""
    rules = {"A": ArrayLike("X X"), "B": ArrayLike("X Y", dtype="float"), "c": Optional(ArrayLike("Y")),
             "t": Tensor("Y")}
    check_arguments("game", rules, {"A": np.eye(3), "B": [[1.0, 2.0]] * 3, "c": None, "t": torch.zeros(2)})
    with pytest.raises(ValueError, match=r"game: A must be an array \[X, X\] of finite values with X = 2"):
        check_arguments("game", rules, {"A": np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"c must be None or an array \[Y\] .*with Y = 2 \(from B\)"):
        check_arguments("game", rules, {"A": np.eye(3), "B": np.zeros((3, 2)), "c": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"t must be .* Y = 2 \(from B\)"):
        check_arguments("game", rules, {"A": np.eye(3), "B": np.zeros((3, 2)), "t": torch.zeros(5)})
    with pytest.raises(ValueError, match="finite"):
        check_arguments("game", rules, {"A": np.full((2, 2), np.nan)})
    with pytest.raises(TypeError, match="spec must be a string"):
        ArrayLike(2)


def test_check_arguments_is_the_imperative_form():
    rules = {"a": Tensor("N"), "b": Tensor("N"), "k": Int(low=0)}
    check_arguments("h", rules, {"a": torch.zeros(3), "b": torch.zeros(3), "k": 0})
    with pytest.raises(ValueError, match=r"h: b must be .* N = 3 \(from a\)"):
        check_arguments("h", rules, {"a": torch.zeros(3), "b": torch.zeros(4)})


def test_trusted_skips_value_checks_but_not_shapes():
    c = Tensor("B D")
    assert not is_trusted()
    with trusted():
        assert is_trusted()
        assert _outcome(c, torch.full((2, 2), NAN)) is None
        assert _outcome(ArrayLike(), [NAN]) is None
        assert _outcome(c, torch.zeros(2)) is ValueError
        assert _outcome(Tensor(dtype="integer"), torch.zeros(2)) is ValueError
        assert _outcome(Real(), NAN) is ValueError  # scalars cost nothing to check: always checked
    assert not is_trusted()
    assert _outcome(c, torch.full((2, 2), NAN)) is ValueError


# ------------------------------------------------------------------------------------------ the decorator
def test_all_arguments_are_checked_before_the_body_and_defaults_too():
    ran = []

    @validate(a=Int(low=0), b=Real(low=0))
    def f(a, b=-1.0):  # a bad default: the first call that uses it says so
        ran.append(a)
        return a

    with pytest.raises(ValueError, match="f: b must be a finite number >= 0, got -1.0"):
        f(1)
    assert f(1, 2.0) == 1 and f(a=2, b=0) == 2 and ran == [1, 2]
    with pytest.raises(ValueError, match="f: a must be"):
        f(-1, 2.0)
    assert ran == [1, 2]
    with pytest.raises(TypeError):  # a missing argument is Python's own error
        f()


def test_methods_init_and_fit_and_the_declaration_is_kept():
    class Estimator:
        @validate(n_bins=Int(low=2), alpha=Real(low=0, closed="neither"))
        def __init__(self, n_bins=4, alpha=1.0):
            self.n_bins, self.alpha = n_bins, alpha

        @validate(X=ArrayLike(ndim=2), y=Optional(ArrayLike(ndim=1)))
        def fit(self, X, y=None):
            self.fitted_ = True
            return self

    assert Estimator(3).n_bins == 3
    with pytest.raises(ValueError, match=r"Estimator.__init__: n_bins must be an int >= 2, got 1"):
        Estimator(1)
    est = Estimator()
    with pytest.raises(ValueError, match="Estimator.fit: X must be an array with 2 dimensions"):
        est.fit([1.0, 2.0])
    assert not hasattr(est, "fitted_")
    assert est.fit([[1.0]], np.zeros(1)) is est
    assert set(Estimator.__init__.__constraints__) == {"n_bins", "alpha"}
    assert Estimator.fit.__name__ == "fit"


def test_decoration_refuses_unknown_names_and_star_args():
    with pytest.raises(TypeError, match="no parameter 'b'"):
        validate(b=Int())(lambda a: a)
    with pytest.raises(TypeError, match="cannot constrain"):
        validate(args=Int())(lambda *args: args)
    with pytest.raises(TypeError, match="must be a Constraint"):
        validate(a=int)


# ------------------------------------------------------------------------------------------ generated tables
@validate(x=Tensor("B T D"), mask=Optional(Tensor("B T", dtype="bool")), heads=Int(low=1, high=8),
          dropout=Real(0.0, 1.0, closed="left"), mode=Choice("causal", "full"), scale=Optional(Real(low=0)),
          causal=Bool(), fn=Optional(Callable()), table=ArrayLike(ndim=1), module=Optional(Instance(torch.nn.Module)))
def _sample(x, mask=None, *, heads=2, dropout=0.0, mode="causal", scale=None, causal=True, fn=None,
            table=(1.0, 2.0), module=None):
    return x.sum()


def test_generated_bad_inputs_all_raise_and_cover_every_declared_argument():
    valid = dict(x=torch.zeros(2, 3, 4), mask=torch.ones(2, 3, dtype=torch.bool))
    _sample(**valid)  # the base is accepted
    cases = bad_inputs(_sample, **valid)
    base = dict(heads=2, dropout=0.0, mode="causal", scale=None, causal=True, fn=None, table=(1.0, 2.0),
                module=None) | valid
    changed = {name for kwargs, _ in cases for name, value in kwargs.items() if value is not base[name]}
    assert changed == set(_sample.__constraints__)
    for kwargs, exc in cases:
        with pytest.raises(exc):
            _sample(**kwargs)
    # the generated table holds the cases a hand-written one would
    kinds = [(name, exc) for kwargs, exc in cases for name in ("heads",) if kwargs["heads"] != 2]
    assert (("heads", TypeError) in kinds) and (("heads", ValueError) in kinds)
    assert any(torch.is_tensor(k["mask"]) and k["mask"].shape == (3, 3) for k, _ in cases)  # B disagrees with x
    assert any(torch.is_tensor(k["x"]) and k["x"].isnan().any() for k, _ in cases)


def test_bad_inputs_needs_a_declaration():
    with pytest.raises(TypeError, match="no declared constraints"):
        bad_inputs(lambda a: a)


# ------------------------------------------------------------------------------------------ the older helpers
def test_old_helpers_keep_their_behaviour_and_old_imports_work():
    assert _checks.trusted is trusted and _checks.is_trusted is is_trusted and _checks.validate is validate
    assert check_bool("b", np.bool_(True)) is True
    with pytest.raises(TypeError, match="b must be a bool, got 1"):
        check_bool("b", 1)
    assert check_int("n", 3) == 3 and check_int("n", 0, 0) == 0
    for bad in (0, True, 2.0, np.int64(2)):  # check_int keeps its old rule (plain int only), ValueError
        with pytest.raises(ValueError, match="n must be an int >= 1"):
            check_int("n", bad)
    assert math.isnan(NAN)


# ------------------------------------------------------------------------------------------ sequences, fractions
@pytest.mark.parametrize("value", [[1, 2], (1,), range(3), np.arange(2), (x for x in "ab"), []])
def test_sequence_of_accepts_any_iterable_but_text_and_mappings(value):
    SequenceOf("numbers").check(value, "a", "f")


@pytest.mark.parametrize("value", ["12", b"12", {0: 1}, 3, None])
def test_sequence_of_refuses_text_mappings_and_scalars_as_a_type_error(value):
    with pytest.raises(ArgumentTypeError, match=r"^f: a must be a sequence of numbers, got "):
        SequenceOf("numbers").check(value, "a", "f")


def test_real_takes_a_fraction_only_when_rational_and_compares_it_exactly():
    from fractions import Fraction
    tiny = Fraction(1, 10 ** 400)  # > 0 exactly, 0.0 as a float
    Real(low=0, closed="neither", rational=True).check(tiny, "eps", "f")
    with pytest.raises(ValueError, match=r"eps must be a finite number \(or a Fraction\) > 0"):
        Real(low=0, closed="neither", rational=True).check(Fraction(0), "eps", "f")
    with pytest.raises(ArgumentTypeError):
        Real(low=0, closed="neither").check(Fraction(1, 2), "eps", "f")
    with pytest.raises(ValueError):
        Real(high=1, rational=True).check(Fraction(3, 2), "eps", "f")
