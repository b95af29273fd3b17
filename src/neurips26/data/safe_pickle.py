"""Read the pickles of canonical sources without running arbitrary code.

A pickle is a program: ``GLOBAL``/``STACK_GLOBAL`` import any callable and ``REDUCE`` calls it, so
``pickle.load`` on an untrusted file can run ``os.system``. :class:`RestrictedUnpickler` admits only the
globals needed to rebuild numpy arrays, scipy CSR matrices and plain containers (Planetoid's ``ind.*``
files: ``csr_matrix``, ``ndarray``, ``defaultdict(list)``); every other global raises
:class:`UnsafePickleError` before anything is called. Python-2 names (``copy_reg``, ``__builtin__``)
are mapped explicitly, as Python 3's own ``fix_imports`` would.

:func:`load_joblib_array_file` reads an uncompressed ``joblib.dump`` file the same way: joblib writes a
``NumpyArrayWrapper`` record into the pickle and the raw array bytes right after its ``BUILD`` opcode;
the reader accepts only non-object dtypes (an object array would be a nested, unrestricted pickle).
"""

from __future__ import annotations

import copyreg
import io
import pickle
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from .errors import UnsafePickleError


def _numpy_attr(module_names: tuple[str, ...], name: str):
    import importlib

    for module in module_names:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"none of {module_names} has {name}")


def _latin1_encode(text: str, encoding: str = "latin1") -> bytes:
    """Python 3 pickles (protocol < 3) rebuild ``bytes`` as ``_codecs.encode(str, "latin1")``."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise UnsafePickleError(f"_codecs.encode with encoding {encoding!r} refused")
    return text.encode("latin1")


@lru_cache(maxsize=1)
def _allowed_globals() -> dict[tuple[str, str], Any]:
    multiarray = ("numpy._core.multiarray", "numpy.core.multiarray")
    numeric = ("numpy._core.numeric", "numpy.core.numeric")
    reconstruct = _numpy_attr(multiarray, "_reconstruct")
    scalar = _numpy_attr(multiarray, "scalar")
    frombuffer = _numpy_attr(numeric, "_frombuffer")
    table: dict[tuple[str, str], Any] = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("collections", "defaultdict"): defaultdict,
        ("copyreg", "_reconstructor"): copyreg._reconstructor,
        ("copy_reg", "_reconstructor"): copyreg._reconstructor,
        ("builtins", "object"): object, ("__builtin__", "object"): object,
        ("builtins", "list"): list, ("__builtin__", "list"): list,
        ("builtins", "dict"): dict, ("__builtin__", "dict"): dict,
        ("_codecs", "encode"): _latin1_encode,
    }
    for module in multiarray:
        table[(module, "_reconstruct")] = reconstruct
        table[(module, "scalar")] = scalar
    for module in numeric:
        table[(module, "_frombuffer")] = frombuffer
    for module in ("scipy.sparse.csr", "scipy.sparse._csr"):
        table[(module, "csr_matrix")] = scipy.sparse.csr_matrix
    return table


def find_allowed(module: str, name: str) -> Any:
    """The admitted global ``module.name``, or :class:`UnsafePickleError` (nothing is imported for it)."""
    allowed = _allowed_globals()
    if (module, name) in allowed:
        return allowed[(module, name)]
    raise UnsafePickleError(f"refused to load global {module}.{name}: only numpy/scipy array "
                            "reconstruction is admitted")


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler whose ``find_class`` admits only numpy/scipy array reconstruction (see module doc)."""

    def find_class(self, module: str, name: str) -> Any:
        return find_allowed(module, name)


def restricted_loads(data: bytes, *, encoding: str = "latin1") -> Any:
    """``pickle.loads`` with :class:`RestrictedUnpickler` (``latin1`` decodes Python-2 ``str`` buffers)."""
    try:
        return RestrictedUnpickler(io.BytesIO(data), encoding=encoding).load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise UnsafePickleError(f"not a readable array pickle: {exc!r}") from exc


def restricted_load(path: str | Path, *, encoding: str = "latin1") -> Any:
    return restricted_loads(Path(path).read_bytes(), encoding=encoding)


def rebuild_csr(obj: Any, what: str) -> scipy.sparse.csr_matrix:
    """A fresh, validated ``csr_matrix`` from an unpickled one (its fields, not its pickled state)."""
    if not isinstance(obj, scipy.sparse.csr_matrix):
        raise UnsafePickleError(f"{what}: expected a scipy csr_matrix, got {type(obj).__name__}")
    state = obj.__dict__
    try:
        data, indices, indptr = (np.asarray(state[k]) for k in ("data", "indices", "indptr"))
        shape = tuple(int(s) for s in state.get("_shape", state.get("shape")))
    except (KeyError, TypeError, ValueError) as exc:
        raise UnsafePickleError(f"{what}: csr_matrix state lacks data/indices/indptr/shape ({exc})") from exc
    if any(a.dtype.hasobject for a in (data, indices, indptr)) or len(shape) != 2:
        raise UnsafePickleError(f"{what}: csr_matrix with object arrays or shape {shape}")
    matrix = scipy.sparse.csr_matrix((data, indices, indptr), shape=shape)
    matrix.check_format(full_check=True)
    return matrix


# ---------------------------------------------------------------------------------------------------
# joblib


class _JoblibArray:
    """Stand-in for ``joblib.numpy_pickle.NumpyArrayWrapper``: holds the wrapper's state only."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.state: dict[str, Any] = {}


class _JoblibUnpickler(pickle._Unpickler):  # the pure-Python unpickler: its opcodes can be overridden
    dispatch = dict(pickle._Unpickler.dispatch)

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("joblib.numpy_pickle", "NumpyArrayWrapper"):
            return _JoblibArray
        return find_allowed(module, name)

    def load_build(self) -> None:
        stack = self.stack
        state = stack[-1]
        target = stack[-2] if len(stack) >= 2 else None
        if isinstance(target, _JoblibArray):
            stack.pop()
            if not isinstance(state, dict):
                raise UnsafePickleError("joblib array record without a state dict")
            stack[-1] = self._read_array(state)
            return
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build

    def _read_array(self, state: dict[str, Any]) -> np.ndarray:
        dtype, shape, order = state.get("dtype"), state.get("shape"), state.get("order", "C")
        if not isinstance(dtype, np.dtype) or dtype.hasobject:
            raise UnsafePickleError(f"joblib array with dtype {dtype!r} refused (object arrays are nested pickles)")
        if not isinstance(shape, tuple) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise UnsafePickleError(f"joblib array with shape {shape!r}")
        if state.get("numpy_array_alignment_bytes") is not None:
            padding = self.read(1)
            if padding:
                self.read(int.from_bytes(padding, "little"))
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = count * dtype.itemsize
        raw = self.read(nbytes)
        if len(raw) != nbytes:
            raise UnsafePickleError(f"joblib array truncated: {len(raw)} of {nbytes} bytes")
        array = np.frombuffer(raw, dtype=dtype, count=count).copy()
        array = array.reshape(shape[::-1]).T if order == "F" else array.reshape(shape)
        return np.ascontiguousarray(array)


def load_joblib_array_file(path: str | Path) -> Any:
    """Read an uncompressed ``joblib.dump`` file holding arrays, lists, dicts and strings only."""
    data = Path(path).read_bytes()
    if not data.startswith(b"\x80"):
        raise UnsafePickleError(f"{path}: not an uncompressed joblib pickle (compressed files are not supported)")
    try:
        return _JoblibUnpickler(io.BytesIO(data), encoding="latin1").load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise UnsafePickleError(f"{path}: not a readable joblib array file: {exc!r}") from exc
