"""The backend resolver: every branch of the decision table, and errors that name the way out."""

import pytest
import torch

from neurips26.nn import backend as B
from neurips26.nn.backend import interpreter_active, resolve_backend, triton_available

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


def test_torch_is_always_torch():
    for device in (CPU, CUDA, "cpu"):
        for dtype in (None, torch.float64, torch.bfloat16):
            assert resolve_backend("torch", device=device, dtype=dtype) == "torch"


def test_bad_backend_name():
    with pytest.raises(ValueError, match=r"backend must be one of .*'cuda'"):
        resolve_backend("cuda", device=CPU)
    with pytest.raises(TypeError, match="device"):
        resolve_backend("auto", device=3)
    with pytest.raises(TypeError, match="dtype"):
        resolve_backend("auto", device=CPU, dtype="float32")


@pytest.mark.parametrize("available", [True, False])
@pytest.mark.parametrize("interpreted", [True, False])
def test_auto_picks_triton_only_on_cuda_compiled_with_a_supported_dtype(monkeypatch, available, interpreted):
    monkeypatch.setattr(B, "triton_available", lambda: available)
    assert resolve_backend("auto", device=CPU, interpreted=interpreted) == "torch"
    expect = "triton" if available and not interpreted else "torch"
    assert resolve_backend("auto", device=CUDA, dtype=torch.float16, interpreted=interpreted) == expect
    assert resolve_backend("auto", device=CUDA, dtype=torch.float64, interpreted=interpreted) == "torch"


def test_forced_triton_without_the_package(monkeypatch):
    monkeypatch.setattr(B, "triton_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"my_op: .*needs the triton package.*backend='torch'"):
        resolve_backend("triton", device=CUDA, what="my_op")


def test_forced_triton_errors(monkeypatch):
    monkeypatch.setattr(B, "triton_available", lambda: True)
    with pytest.raises(TypeError, match=r"float32, float16, bfloat16 tensors, got torch.float64; use backend='torch'"):
        resolve_backend("triton", device=CPU, dtype=torch.float64, interpreted=True)
    with pytest.raises(RuntimeError, match="needs a CUDA tensor"):
        resolve_backend("triton", device=CPU, interpreted=False)
    with pytest.raises(RuntimeError, match="interpreter mode"):
        resolve_backend("triton", device=CUDA, interpreted=True)
    assert resolve_backend("triton", device=CPU, interpreted=True) == "triton"
    assert resolve_backend("triton", device=CUDA, dtype=torch.bfloat16, interpreted=False) == "triton"
    assert resolve_backend("triton", device=CPU, dtype=torch.float64, interpreted=True,
                           triton_dtypes=(torch.float64,)) == "triton"


def test_interpreter_flag_follows_the_environment_before_triton_is_imported(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "triton", raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert interpreter_active()
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not interpreter_active()
    monkeypatch.delenv("TRITON_INTERPRET")
    assert not interpreter_active()


def test_triton_available_matches_find_spec():
    import importlib.util

    assert triton_available() == (importlib.util.find_spec("triton") is not None)
