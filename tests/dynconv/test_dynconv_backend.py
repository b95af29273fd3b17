"""Backend dispatch of the dynamic-conv ops, through nn.backend.resolve_backend (same behaviour as before)."""

from types import SimpleNamespace

import pytest
import torch

from neurips26.dynconv import ops


def _cuda_like():
    """A stand-in for a CUDA tensor (only ``is_cuda`` and ``device`` are read by the dispatch)."""
    return SimpleNamespace(is_cuda=True, device=torch.device("cuda"))


def test_auto_and_torch_on_cpu_are_the_reference():
    x = torch.randn(1, 4, 2)
    assert ops._resolve("auto", x) == "torch"
    assert ops._resolve("torch", x) == "torch"


def test_bad_backend_is_refused():
    with pytest.raises(ValueError, match="backend must be one of"):
        ops._resolve("cuda", torch.randn(1, 4, 2))


def test_forced_triton_without_triton_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(ops, "triton_available", lambda: False)
    monkeypatch.setattr("neurips26.nn.backend.triton_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs the triton package"):
        ops._resolve("triton", torch.randn(1, 4, 2))
    assert ops._resolve("auto", _cuda_like()) == "torch"  # auto falls back to the reference


@pytest.mark.skipif(not ops.triton_available(), reason="triton not installed")
def test_triton_rules_follow_the_kernels_interpreter_flag(monkeypatch):
    from neurips26.dynconv import kernels

    cpu = torch.randn(1, 4, 2)
    monkeypatch.setattr(kernels, "INTERPRET", True)
    assert ops._resolve("triton", cpu) == "triton"  # CPU tensors run in the interpreter
    assert ops._resolve("auto", _cuda_like()) == "torch"  # the interpreter is never the fast path
    with pytest.raises(RuntimeError, match="interpreter mode"):
        ops._resolve("triton", _cuda_like())
    monkeypatch.setattr(kernels, "INTERPRET", False)
    assert ops._resolve("auto", _cuda_like()) == "triton"
    assert ops._resolve("triton", _cuda_like()) == "triton"
    with pytest.raises(RuntimeError, match="needs a CUDA tensor"):
        ops._resolve("triton", cpu)
