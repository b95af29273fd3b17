"""Validation pieces shared by every paper's public entry points (the error contract of the README).

The implementation lives in :mod:`neurips26.constraints` (declared constraints and the ``@validate``
decorator); this module re-exports it so that older imports keep working.

``trusted()``: a public entry point that has already validated its tensors runs its inner modules inside
``with trusted():``, and those modules then skip their *value* checks (``isfinite``, label ranges: a host sync
each on a GPU) while still checking shapes; module hooks see every call. One context variable serves all
papers: it only ever says "these inputs were checked by the caller".
"""

from __future__ import annotations

from .constraints import (  # noqa: F401  (re-exported)
    AnyOf,
    ArgumentTypeError,
    ArrayLike,
    Bool,
    Callable,
    Choice,
    Constraint,
    Instance,
    Int,
    Optional,
    Real,
    Tensor,
    bad_inputs,
    check_arguments,
    check_bool,
    check_int,
    is_trusted,
    trusted,
    validate,
)
