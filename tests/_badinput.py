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

Snapshots copy numpy arrays, torch tensors, containers and plain attributes (``__dict__``) deeply; objects it
cannot copy are compared by identity. A module's snapshot holds, for the module and every submodule: its
train/eval mode, every buffer (running statistics, and non-persistent caches such as rotary tables), its
plain attributes (caches kept as attributes, counters), and the keys of its hooks; an optimizer's holds its
state and parameter groups.

Strict mode (``NEURIPS26_BADINPUT_STRICT=1``, or ``check_bad_inputs(..., strict=True)``) also requires the
global RNGs (torch, numpy's legacy generator, ``random``) and torch's global module hooks unchanged (a refused
call must not draw a random number) and every parameter's ``.grad`` as it was (present or absent, its shape).
It is opt-in while the calls it still flags are fixed by their papers (the list is in issue 34's notes).
"""

from __future__ import annotations

import copy
import os
import random
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
                {name: _module_own_state(sub, _depth + 1, seen) for name, sub in obj.named_modules()})
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return ("object", type(obj).__name__, snapshot(vars(obj), _depth + 1, seen))
    try:
        return ("copy", copy.deepcopy(obj))
    except Exception:
        return ("ref", id(obj))


def strict_default() -> bool:
    """Whether strict mode is on for this run (``NEURIPS26_BADINPUT_STRICT=1``)."""
    return os.environ.get("NEURIPS26_BADINPUT_STRICT", "").strip().lower() in ("1", "true", "yes", "on")


_STRICT = [strict_default()]  # snapshot() reads it; check_bad_inputs(strict=...) sets it for one call


#: torch's own bookkeeping in a module's ``__dict__``: read separately (tensors) or as hook keys
_MODULE_INTERNALS = ("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set")


def _module_own_state(module: Any, depth: int, seen: set[int]) -> Any:
    """One module without its children: mode, every buffer (persistent or not), hook keys, plain attributes."""
    attrs = vars(module)
    hooks = {k: list(v.keys()) for k, v in attrs.items() if "hook" in k and isinstance(v, dict)}
    plain = {k: v for k, v in attrs.items() if k not in _MODULE_INTERNALS and k not in hooks and k != "training"}
    buffers = {k: (None if v is None else _tensor_state(v)) for k, v in module._buffers.items()}
    grads = {k: (None if p is None or p.grad is None else ("grad", tuple(p.grad.shape)))
             for k, p in module._parameters.items()} if _STRICT[0] else {}
    return ("module-own", ("value", module.training), ("dict", {k: ("value", tuple(v)) for k, v in hooks.items()}),
            ("dict", buffers), ("dict", grads), snapshot(plain, depth, seen))


def global_state() -> Any:
    """The process-wide state a call must not touch: the RNGs and torch's global module hooks."""
    state: dict[str, Any] = {"random": ("copy", random.getstate()),
                             "numpy": ("copy", _np_legacy_state())}
    if torch is not None:
        from torch.nn.modules import module as _torch_module

        state["torch"] = _tensor_state(torch.get_rng_state())
        state["torch hooks"] = ("value", tuple(len(getattr(_torch_module, name, {})) for name in (
            "_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
            "_global_backward_pre_hooks", "_global_buffer_registration_hooks",
            "_global_module_registration_hooks", "_global_parameter_registration_hooks")))
    return ("dict", state)


def _np_legacy_state() -> tuple:
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return (name, keys.tobytes(), pos, has_gauss, gauss)


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
                     targets: Sequence[Any] = (), strict: bool | None = None) -> BaseException:
    """Call ``call(*case.args, **case.kwargs)`` and assert the error contract; returns the exception.

    ``strict``: also require the global RNGs, torch's global hooks and every ``.grad`` unchanged (default:
    ``NEURIPS26_BADINPUT_STRICT``; see the module docstring).
    """
    strict = strict_default() if strict is None else bool(strict)
    previous, _STRICT[0] = _STRICT[0], strict
    try:
        return _check(call, case, target=target, targets=targets, strict=strict)
    finally:
        _STRICT[0] = previous


def _check(call: Callable[..., Any], case: BadInput, *, target: Any, targets: Sequence[Any],
           strict: bool) -> BaseException:
    watched = [t for t in ([target] if target is not None else []) + list(targets)]
    before = [snapshot(t) for t in watched]
    globals_before = global_state() if strict else None
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
        if globals_before is not None:
            after = global_state()
            if not _equal(globals_before, after):
                raise AssertionError(f"[{case.id}] a failed call changed the process's global state: "
                                     f"{_diff(globals_before, after, 'global')}") from err
        return err
    except BaseException as err:
        raise AssertionError(f"[{case.id}] expected {case.exc}, got {type(err).__name__}: {err}") from err
    raise AssertionError(f"[{case.id}] expected {case.exc} but the call succeeded")
