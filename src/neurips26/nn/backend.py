"""One kernel-backend resolver for every op that has a plain PyTorch form and a Triton form.

Each such op takes ``backend="auto" | "torch" | "triton"`` and asks :func:`resolve_backend` which form to
run (the flash-linear-attention pattern: a reference and a kernel behind one function):

* ``"auto"`` picks Triton only where it is the *fast* path: a CUDA device, Triton installed, not in the
  CPU interpreter, and a dtype the kernel supports; otherwise the PyTorch reference.
* ``"torch"`` always runs the reference.
* ``"triton"`` forces the kernel, and says clearly why when it cannot run: Triton missing, a CPU tensor
  without ``TRITON_INTERPRET=1``, a CUDA tensor while the interpreter is on (it takes CPU tensors), or a
  dtype the kernel does not take (e.g. float64, which only the torch backend computes).

Triton decides at *its own import* whether kernels run compiled or in the numpy interpreter, from the
environment variable ``TRITON_INTERPRET``. So nothing here imports triton: :func:`triton_available` uses
``importlib.util.find_spec`` (importing triton before the variable is set would silently disable the
interpreter), and :func:`interpreter_active` reads the variable, or triton's own knob once triton is
imported. A kernel module that captured the flag at its import passes it as ``interpreted=``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable
from typing import Literal

import torch

__all__ = ["BACKENDS", "TRITON_DTYPES", "interpreter_active", "resolve_backend", "triton_available"]

Backend = Literal["torch", "triton"]

#: The values every ``backend=`` argument accepts.
BACKENDS: tuple[str, ...] = ("auto", "torch", "triton")

#: Dtypes the library's Triton kernels take by default (float64 is torch-only).
TRITON_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float16, torch.bfloat16)


def triton_available() -> bool:
    """Whether the ``triton`` package is installed (found, not imported: see the module docstring)."""
    return importlib.util.find_spec("triton") is not None


def interpreter_active() -> bool:
    """Whether Triton kernels run (or will run) in Triton's CPU interpreter (``TRITON_INTERPRET=1``).

    Once triton is imported its own ``knobs.runtime.interpret`` is the truth; before, the environment."""
    triton = sys.modules.get("triton")
    knobs = getattr(triton, "knobs", None) if triton is not None else None
    runtime = getattr(knobs, "runtime", None)
    if runtime is not None and hasattr(runtime, "interpret"):
        return bool(runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on", "yes")


def _as_device(device: torch.device | str) -> torch.device:
    if isinstance(device, torch.device):
        return device
    if isinstance(device, str):
        try:
            return torch.device(device)
        except RuntimeError as err:
            raise ValueError(f"device must be a torch.device or a device string like 'cpu' or 'cuda:0', "
                             f"got {device!r}") from err
    raise TypeError(f"device must be a torch.device or str, got {type(device).__name__}")


def resolve_backend(requested: str = "auto", *, device: torch.device | str, dtype: torch.dtype | None = None,
                    what: str = "this op", interpreted: bool | None = None,
                    triton_dtypes: Iterable[torch.dtype] = TRITON_DTYPES) -> Backend:
    """Choose the implementation of one op call: ``"torch"`` (reference) or ``"triton"`` (kernel).

    Args:
        requested: ``"auto"`` (fast path where it exists), ``"torch"`` or ``"triton"`` (forced).
        device: where the op's tensors live (``x.device``).
        dtype: their dtype; ``None`` skips the dtype check.
        what: the op's name for error messages (e.g. ``"dynamic_conv1d"``).
        interpreted: whether the kernels run in Triton's interpreter; ``None`` asks
            :func:`interpreter_active`. Kernel modules that fixed the flag at import pass theirs.
        triton_dtypes: the dtypes the kernel takes (default float32, float16, bfloat16).

    Returns:
        ``"torch"`` or ``"triton"``.

    Raises:
        ValueError: ``requested`` is not one of :data:`BACKENDS`.
        RuntimeError: ``"triton"`` forced where it cannot run (the message says what to do instead).
        TypeError: ``"triton"`` forced with a dtype the kernel does not take.
    """
    if not isinstance(requested, str) or requested not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {requested!r}")
    device = _as_device(device)
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype or None, got {type(dtype).__name__}")
    if requested == "torch":
        return "torch"
    supported = tuple(triton_dtypes)
    dtype_ok = dtype is None or dtype in supported
    if requested == "auto":
        if device.type != "cuda" or not dtype_ok or not triton_available():
            return "torch"
        interp = interpreter_active() if interpreted is None else bool(interpreted)
        return "torch" if interp else "triton"
    # forced triton: say exactly why it cannot run
    if not triton_available():
        raise RuntimeError(f"{what}: backend='triton' needs the triton package (pip install neurips26[kernels]); "
                           "use backend='torch' (the reference) or 'auto'")
    if not dtype_ok:
        names = ", ".join(str(d).replace("torch.", "") for d in supported)
        raise TypeError(f"{what}: the triton backend takes {names} tensors, got {dtype}; use backend='torch' "
                        f"for {str(dtype).replace('torch.', '')}")
    interp = interpreter_active() if interpreted is None else bool(interpreted)
    if device.type == "cuda" and interp:
        raise RuntimeError(f"{what}: backend='triton': triton runs in interpreter mode (TRITON_INTERPRET=1), "
                           f"which takes CPU tensors, but the tensors are on {device}; unset TRITON_INTERPRET "
                           "or use backend='torch'")
    if device.type != "cuda" and not interp:
        raise RuntimeError(f"{what}: backend='triton' needs a CUDA tensor, got tensors on {device}; on CPU set "
                           "TRITON_INTERPRET=1 before triton is first imported (slow, for tests) or use "
                           "backend='torch'/'auto'")
    return "triton"
