"""tst's small entry points refuse what used to divide by zero or return nonsense (issue 16)."""

import math

import pytest
import torch

from _badinput import BadInput, check_bad_inputs
from neurips26.nn import Llama, LlamaConfig
from neurips26.tst import bits_per_byte, evaluate_ntp, wsd_lr_lambda


@pytest.mark.parametrize("case", [
    BadInput("zero bytes (ZeroDivisionError)", args=(1.0, 0.0), names="bytes_per_token"),
    BadInput("negative bytes", args=(1.0, -2.0), names="bytes_per_token"),
    BadInput("nan nats", args=(math.nan, 2.0), names="nats_per_token"),
    BadInput("inf bytes", args=(1.0, math.inf), names="bytes_per_token"),
], ids=lambda c: c.id)
def test_bits_per_byte_refuses_bad_numbers(case):
    check_bad_inputs(bits_per_byte, case)


def test_bits_per_byte_matches_the_definition():
    assert bits_per_byte(math.log(2) * 3, 1.5) == pytest.approx(2.0)


def test_evaluate_ntp_refuses_empty_windows_and_bad_batch_size():
    model = Llama(LlamaConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2))
    check_bad_inputs(evaluate_ntp, BadInput("0 windows (ZeroDivisionError)",
                                            args=(model, torch.zeros((0, 5), dtype=torch.long)), names="windows"),
                     target=model)
    check_bad_inputs(evaluate_ntp, BadInput("batch 0", args=(model, torch.zeros((2, 5), dtype=torch.long)),
                                            kwargs={"batch_size": 0}, names="batch_size"), target=model)


def test_wsd_schedule_refuses_negative_steps():
    with pytest.raises(ValueError, match="step"):
        wsd_lr_lambda(10)(-5)
