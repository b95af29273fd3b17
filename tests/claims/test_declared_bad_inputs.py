"""Bad-input tables generated from the declarations, for every registered paper (no per-paper code).

Every public function and method a paper decorates with ``@validate`` carries its declaration
(``__constraints__``). For each one this test builds a valid value of every declared argument (its default
where it has one, else a value made from the constraint: the lower bound of an ``Int``, the first option of a
``Choice``, a zero tensor whose named dimensions all have size 2, ...), then asks
:func:`neurips26.constraints.bad_inputs` for the table of calls that replace one argument by a value its
constraint refuses (a wrong type, a crossed bound, NaN, a wrong rank, a dimension that disagrees with an
earlier argument's). Each call must be refused by the declaration itself, before the body runs: the
exception has the expected type and its message is ``"<function>: <argument> must be ..."``.

Two properties hold for every paper without exception:

* the default of every declared argument passes its own declaration (else every call that leaves it out
  would be refused);
* every generated bad call is refused with the shared message.

A callable whose valid values cannot be made from the declaration alone (an ``Instance`` of a class with
required constructor arguments, say) is left to the paper's hand-written tables; the count of covered ones
is part of the assertion message.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import numpy as np
import pytest
import torch

from neurips26 import constraints as C
from neurips26.claims import CATALOG

_EMPTY = inspect.Parameter.empty
_NONE = object()  # "no example can be made"
_SIZE = 2  # every named dimension of a generated tensor


class _Unused:
    """Stands for an argument the declaration does not cover: the refused call never reaches the body."""


def _shape(c: C._Shaped) -> tuple[int, ...]:
    if c.dims is None:
        return (_SIZE,) * (c.ndim[0] if c.ndim else 1)
    return tuple(d if isinstance(d, int) else _SIZE for d in c.dims if d != "...")


def _torch_dtype(dtype: Any) -> torch.dtype:
    if isinstance(dtype, tuple):
        dtype = dtype[0]
    if isinstance(dtype, torch.dtype):
        return dtype
    return {None: torch.float32, "float": torch.float32, "floating": torch.float32, "numeric": torch.float32,
            "integer": torch.int64, "int": torch.int64, "bool": torch.bool, "complex": torch.complex64}[dtype]


def _numpy_dtype(dtype: Any) -> np.dtype:
    if isinstance(dtype, tuple):
        dtype = dtype[0]
    if isinstance(dtype, np.dtype):
        return dtype
    return np.dtype({None: "float64", "float": "float64", "floating": "float64", "numeric": "float64",
                     "integer": "int64", "int": "int64", "bool": "bool", "complex": "complex128"}[dtype])


def example(c: C.Constraint) -> Any:
    """A value ``c`` accepts, made from the constraint alone, or ``_NONE``."""
    if isinstance(c, C.Optional):
        return None
    if isinstance(c, C.AnyOf):
        for inner in c.constraints:
            value = example(inner)
            if value is not _NONE:
                return value
        return _NONE
    if isinstance(c, C.Int):
        return c.low if c.low is not None else (c.high if c.high is not None else 1)
    if isinstance(c, C.Real):
        if c.low is not None and c.high is not None:
            return (float(c.low) + float(c.high)) / 2
        if c.low is not None:
            return float(c.low) + 1.0
        return float(c.high) - 1.0 if c.high is not None else 0.5
    if isinstance(c, C.Choice):
        return c.options[0]
    if isinstance(c, C.Bool):
        return False
    if isinstance(c, C.Callable):
        return lambda *args, **kwargs: None
    if isinstance(c, C.SequenceOf):
        return []
    if isinstance(c, C.Tensor):
        return torch.zeros(_shape(c), dtype=_torch_dtype(c.dtype))
    if isinstance(c, C.ArrayLike):
        return np.zeros(_shape(c), dtype=_numpy_dtype(c.dtype))
    if isinstance(c, C.Instance):
        for kind in c.types if isinstance(c.types, tuple) else (c.types,):
            try:
                return kind()
            except Exception:
                continue
    return _NONE


def declared_callables(slug: str) -> list[tuple[str, Any, bool]]:
    """``(where, function, is_method)`` for every ``@validate``-decorated function and method defined in the
    paper's modules (its claim check and command line left out: they are experiments, not the API)."""
    package = importlib.import_module(f"neurips26.{slug}")
    found, seen = [], set()
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in ("check", "cli"):
            continue
        try:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
        except ImportError:  # an optional dependency (diffusers, rl4co, ...) is absent
            continue
        for obj in vars(module).values():
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                members = [(obj, False)]
            elif inspect.isclass(obj):
                members = [(m, True) for m in vars(obj).values() if inspect.isfunction(m)]
            else:
                continue
            for func, is_method in members:
                if hasattr(func, "__constraints__") and id(func) not in seen:
                    seen.add(id(func))
                    found.append((func.__qualname__.rpartition("<locals>.")[2], func, is_method))
    return found


def _call(func: Any, is_method: bool, kwargs: dict[str, Any]) -> None:
    params = inspect.signature(func).parameters
    args = []
    for name, p in params.items():
        if is_method and not args and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            args.append(_Unused())  # self: never touched by a refused call
        elif name not in kwargs and p.default is _EMPTY and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            kwargs = kwargs | {name: _Unused()}
    func(*args, **kwargs)


SLUGS = [entry.slug for entry in CATALOG]


@pytest.mark.parametrize("slug", SLUGS)
def test_declared_defaults_pass_their_own_declaration(slug):
    bad = []
    for where, func, _ in declared_callables(slug):
        params = inspect.signature(func).parameters
        for name, constraint in func.__constraints__.items():
            default = params[name].default
            if default is _EMPTY:
                continue
            try:
                constraint.check(default, name, where)
            except (TypeError, ValueError) as err:
                bad.append(f"{where}({name}={default!r}): {err}")
    assert not bad, "defaults refused by their own declaration:\n" + "\n".join(bad)


@pytest.mark.parametrize("slug", SLUGS)
def test_generated_bad_calls_are_refused_by_the_declaration(slug):
    callables = declared_callables(slug)
    if not callables:
        pytest.skip(f"{slug} declares no @validate entry point")
    covered, cases, failures = 0, 0, []
    for where, func, is_method in callables:
        declared = func.__constraints__
        params = inspect.signature(func).parameters
        valid = {}
        for name, constraint in declared.items():
            if params[name].default is _EMPTY:
                valid[name] = example(constraint)
        if any(v is _NONE for v in valid.values()):
            continue
        base = {n: p.default for n, p in params.items() if p.default is not _EMPTY and n in declared} | valid
        try:  # the generated values must be accepted together (named dimensions bind across them)
            C.check_arguments(where, declared, base)
        except (TypeError, ValueError):
            continue
        covered += 1
        for kwargs, exc in C.bad_inputs(func, **valid):
            changed = next(n for n in declared if n in kwargs and kwargs[n] is not base.get(n, _EMPTY))
            cases += 1
            try:
                _call(func, is_method, kwargs)
            except exc as err:
                if not str(err).startswith(f"{where}: {changed} must be"):
                    failures.append(f"{where}({changed}={kwargs[changed]!r}): message {str(err)[:160]!r}")
            except Exception as err:  # noqa: BLE001 - any other error means the body ran or the type is wrong
                failures.append(f"{where}({changed}={kwargs[changed]!r}): {type(err).__name__}, expected "
                                f"{exc.__name__}: {str(err)[:160]}")
            else:
                failures.append(f"{where}({changed}={kwargs[changed]!r}): accepted, expected {exc.__name__}")
    assert covered, f"{slug}: none of its {len(callables)} declared entry points could be given valid values"
    assert not failures, (f"{slug}: {len(failures)} of {cases} generated bad calls over {covered} of "
                          f"{len(callables)} declared entry points:\n" + "\n".join(failures[:30]))
