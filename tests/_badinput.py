"""Shared bad-input harness for every paper's public API (the error contract of the README).

For each bad call: the error has the expected type, its message names the offending argument, and the
object the call was made on is exactly as it was before (a failed call changes nothing).

    from _badinput import BadInput, check_bad_inputs

    CASES = [BadInput("nan-x", args=(np.array([np.nan]),), names="X"),
             BadInput("bins-0", kwargs={"bins": 0}, names="bins")]

    @pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
    def test_fit_refuses_bad_input(case):
        est = fitted_estimator()
        check_bad_inputs(est.fit, case, target=est)

Snapshots copy numpy arrays, torch tensors (parameters and buffers of modules included), containers and
plain attributes (``__dict__``) deeply; objects it cannot copy are compared by identity.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover - torch is a core dependency
    torch = None


@dataclass(frozen=True)
class BadInput:
    """One bad call: positional ``args`` and ``kwargs``, the exception type(s) expected and the argument name(s)
    the message must contain (a string, or several of which at least one must appear)."""

    id: str
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    exc: type[BaseException] | tuple[type[BaseException], ...] = (ValueError, TypeError)
    names: str | Sequence[str] = ()
    match: str | None = None  # an extra regex the message must match


def _tensor_state(value: Any) -> Any:
    return ("tensor", value.detach().clone(), value.dtype, tuple(value.shape), value.requires_grad)


def snapshot(obj: Any, _depth: int = 0, _seen: set[int] | None = None) -> Any:
    """A deep, comparable picture of ``obj``'s state."""
    seen = set() if _seen is None else _seen
    if _depth > 6 or id(obj) in seen:
        return ("ref", id(obj))
    if torch is not None and isinstance(obj, torch.Tensor):
        return _tensor_state(obj)
    if isinstance(obj, np.ndarray):
        return ("array", obj.copy(), obj.dtype)
    if isinstance(obj, np.random.Generator):  # compared by its state: a failed call must not draw from it
        return ("rng", copy.deepcopy(obj.bit_generator.state))
    if isinstance(obj, int | float | str | bytes | bool | type(None) | complex):
        return ("value", obj)
    seen = seen | {id(obj)}
    if isinstance(obj, dict):
        return ("dict", {k: snapshot(v, _depth + 1, seen) for k, v in obj.items()})
    if isinstance(obj, list | tuple | set | frozenset):
        items = sorted(obj, key=repr) if isinstance(obj, set | frozenset) else obj
        return (type(obj).__name__, [snapshot(v, _depth + 1, seen) for v in items])
    if torch is not None and isinstance(obj, torch.nn.Module):
        return ("module", {k: _tensor_state(v) for k, v in obj.state_dict(keep_vars=True).items()},
                snapshot({k: v for k, v in vars(obj).items()
                          if k not in ("_parameters", "_buffers", "_modules")}, _depth + 1, seen))
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return ("object", type(obj).__name__, snapshot(vars(obj), _depth + 1, seen))
    try:
        return ("copy", copy.deepcopy(obj))
    except Exception:
        return ("ref", id(obj))


def _equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple) and a and a[0] == "tensor":
        if (a[2], a[3], a[4]) != (b[2], b[3], b[4]):
            return False
        x, y = a[1], b[1]
        if x.is_floating_point() or x.is_complex():  # NaN == NaN for "unchanged"
            return bool(torch.equal(x.isnan(), y.isnan()) and torch.equal(x.nan_to_num(), y.nan_to_num()))
        return bool(torch.equal(x, y))
    if isinstance(a, tuple) and a and a[0] == "array":
        same_kind = a[2] == b[2] and a[1].shape == b[1].shape
        return same_kind and bool(np.array_equal(a[1], b[1], equal_nan=a[1].dtype.kind in "fc"))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _diff(a: Any, b: Any, path: str = "obj") -> str:
    """The first place where two snapshots differ, for the assertion message."""
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and a[:1] == b[:1]:
        for i, (x, y) in enumerate(zip(a, b)):
            if not _equal(x, y):
                return _diff(x, y, f"{path}[{i}]") if isinstance(x, tuple | list | dict) else path
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a.keys() | b.keys():
            if key not in a or key not in b or not _equal(a[key], b[key]):
                return _diff(a.get(key), b.get(key), f"{path}.{key}")
    return path


def assert_unchanged(before: Any, target: Any, what: str = "") -> None:
    after = snapshot(target)
    if not _equal(before, after):
        raise AssertionError(f"a failed call changed {what or type(target).__name__}: first difference at "
                             f"{_diff(before, after)}")


def check_bad_inputs(call: Callable[..., Any], case: BadInput, *, target: Any = None,
                     targets: Sequence[Any] = ()) -> BaseException:
    """Call ``call(*case.args, **case.kwargs)`` and assert the error contract; returns the exception."""
    watched = [t for t in ([target] if target is not None else []) + list(targets)]
    before = [snapshot(t) for t in watched]
    try:
        call(*case.args, **case.kwargs)
    except case.exc as err:
        message = str(err)
        names = [case.names] if isinstance(case.names, str) else list(case.names)
        if names and not any(name in message for name in names):
            raise AssertionError(f"[{case.id}] the message does not name {names}: {message!r}") from err
        if case.match is not None and not re.search(case.match, message):
            raise AssertionError(f"[{case.id}] the message does not match {case.match!r}: {message!r}") from err
        for t, b in zip(watched, before):
            assert_unchanged(b, t, f"{type(t).__name__} after [{case.id}]")
        return err
    except BaseException as err:
        raise AssertionError(f"[{case.id}] expected {case.exc}, got {type(err).__name__}: {err}") from err
    raise AssertionError(f"[{case.id}] expected {case.exc} but the call succeeded")
