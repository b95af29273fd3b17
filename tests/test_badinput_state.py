"""The bad-input harness sees every kind of state a failed call may leave changed: train/eval mode of any
submodule, caches (non-persistent buffers, plain attributes of submodules), running statistics, hooks and
optimizer state; in strict mode also gradients and the global RNGs; and it still passes a clean refusal."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from _badinput import BadInput, _equal, check_bad_inputs, global_state, snapshot


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Dropout(0.1))
        self.register_buffer("rope_cache", torch.zeros(2), persistent=False)
        self.block[0].kv_cache = None


def _refusing(mutate):
    def call(x):
        mutate()
        raise ValueError(f"x must be finite, got {x}")
    return call


def _net_and_optimizer():
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=0.1)
    return net, opt


def _step(net, opt):
    net.train()
    loss = net.block(torch.randn(5, 3)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


MUTATIONS = {
    "submodule mode": lambda net, opt: net.block[2].eval(),
    "running statistics": lambda net, opt: net.block[1].running_mean.add_(1.0),
    "batches tracked": lambda net, opt: net.block[1].num_batches_tracked.add_(1),
    "non-persistent cache": lambda net, opt: net.rope_cache.fill_(3.0),
    "attribute cache of a submodule": lambda net, opt: setattr(net.block[0], "kv_cache", torch.ones(2)),
    "forward hook": lambda net, opt: net.block[0].register_forward_hook(lambda *a: None),
    "pre hook on the top module": lambda net, opt: net.register_forward_pre_hook(lambda *a: None),
    "optimizer state": lambda net, opt: _step(net, opt),
}


@pytest.mark.parametrize("what", sorted(MUTATIONS))
def test_the_harness_catches_a_change_of(what):
    net, opt = _net_and_optimizer()
    _step(net, opt)  # optimizer state exists
    net.train()
    call = _refusing(lambda: MUTATIONS[what](net, opt))
    with pytest.raises(AssertionError, match="changed"):
        check_bad_inputs(call, BadInput(what, args=(float("nan"),), names="x"), targets=[net, opt], strict=False)


def test_strict_mode_also_catches_a_gradient_left_behind():
    net, opt = _net_and_optimizer()
    call = _refusing(lambda: net.block[0](torch.ones(1, 3)).sum().backward())
    check_bad_inputs(call, BadInput("grad", args=(float("nan"),), names="x"), target=net, strict=False)
    net.zero_grad(set_to_none=True)
    with pytest.raises(AssertionError, match="changed"):
        check_bad_inputs(call, BadInput("grad", args=(float("nan"),), names="x"), target=net, strict=True)


@pytest.mark.parametrize("draw", [lambda: torch.rand(1), lambda: np.random.rand(), lambda: random.random(),
                                  lambda: torch.nn.modules.module.register_module_forward_hook(lambda *a: None)])
def test_the_harness_catches_a_draw_from_a_global_rng_or_a_global_hook(draw):
    handles = []

    def mutate():
        result = draw()
        if hasattr(result, "remove"):
            handles.append(result)

    try:
        with pytest.raises(AssertionError, match="global state"):
            check_bad_inputs(_refusing(mutate), BadInput("rng", args=(float("nan"),), names="x"), strict=True)
        check_bad_inputs(_refusing(mutate), BadInput("rng", args=(float("nan"),), names="x"), strict=False)
    finally:
        for handle in handles:
            handle.remove()


def test_a_clean_refusal_of_a_module_and_its_optimizer_passes():
    net, opt = _net_and_optimizer()
    _step(net, opt)
    err = check_bad_inputs(_refusing(lambda: None), BadInput("ok", args=(float("nan"),), names="x"),
                           targets=[net, opt], strict=True)
    assert "finite" in str(err)
    assert _equal(snapshot(net), snapshot(net)) and _equal(global_state(), global_state())
