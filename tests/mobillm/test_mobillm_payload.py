"""Quantisation against its definition (error <= half a step, exact packing) and byte counts vs the formula."""

import math

import pytest
import torch

from neurips26.mobillm import ActivationPayload, dequantize_absmax, payload_nbytes, quantize_absmax


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("shape", [(3, 2, 7), (1, 1, 1), (5, 3, 64), (2, 4, 3, 33)])
def test_quantisation_error_is_at_most_half_a_step(bits, shape):
    torch.manual_seed(bits + len(shape))
    x = torch.randn(shape) * torch.rand(shape[:-1] + (1,)) * 10
    parts = quantize_absmax(x, bits)
    xh = dequantize_absmax(parts, bits, shape)
    q_max = 2 ** (bits - 1) - 1
    step = x.abs().amax(-1, keepdim=True) / q_max  # s = max|h| / q_max, per vector
    assert torch.all((x - xh).abs() <= step / 2 + 1e-6 * step.clamp(min=1))
    # the absmax element of each vector is exact (it maps to +-q_max)
    i = x.abs().argmax(-1, keepdim=True)
    torch.testing.assert_close(xh.gather(-1, i), x.gather(-1, i), rtol=1e-6, atol=1e-6)


def test_codes_by_hand():
    x = torch.tensor([[1.0, -0.6, 0.24, 0.0]])
    parts = quantize_absmax(x, 8)
    # s = 1/127; codes = round(127 * x) = round([127, -76.2, 30.48, 0]) = [127, -76, 30, 0]
    assert parts["scales"].tolist() == pytest.approx([1 / 127])
    assert parts["codes"].tolist() == [[127, -76, 30, 0]]
    parts4 = quantize_absmax(x, 4)
    # s = 1/7; codes = round([7, -4.2, 1.68, 0]) = [7, -4, 2, 0] -> +8 -> [15, 4, 10, 8] -> 15|4<<4, 10|8<<4
    assert parts4["codes"].tolist() == [15 | (4 << 4), 10 | (8 << 4)]
    assert dequantize_absmax(parts4, 4, (1, 4))[0].tolist() == pytest.approx([1.0, -4 / 7, 2 / 7, 0.0])


def test_zero_vector_and_fp_widths():
    x = torch.zeros(2, 5)
    assert torch.equal(dequantize_absmax(quantize_absmax(x, 8), 8, (2, 5)), x)
    y = torch.randn(3, 6)
    assert quantize_absmax(y, 16)["values"].dtype == torch.float16
    torch.testing.assert_close(dequantize_absmax(quantize_absmax(y, 32), 32, (3, 6)), y, rtol=0, atol=0)
    torch.testing.assert_close(dequantize_absmax(quantize_absmax(y, 16), 16, (3, 6)), y, rtol=1e-3, atol=1e-3)


def test_outliers_travel_exactly_and_shrink_the_step():
    torch.manual_seed(0)
    x = torch.randn(4, 32)
    x[:, 7] = 400.0  # a massive channel (as SmolLM2 has)
    plain = dequantize_absmax(quantize_absmax(x, 8), 8, x.shape)
    kept = dequantize_absmax(quantize_absmax(x, 8, outliers=1), 8, x.shape)
    torch.testing.assert_close(kept[:, 7], x[:, 7], rtol=1e-3, atol=0)  # fp16
    rest = [i for i in range(32) if i != 7]
    assert (kept[:, rest] - x[:, rest]).abs().max() < (plain[:, rest] - x[:, rest]).abs().max() / 10


def _payload(bits, shape=(4, 3, 10), outliers=0, mask=None):
    x = torch.randn(shape)
    return ActivationPayload(parts=quantize_absmax(x, bits, outliers=outliers), shape=shape, quant_bits=bits,
                             labels=torch.zeros(shape[0], dtype=torch.long), sample_ids=torch.arange(shape[0]),
                             backbone_type="t", device_id=0, outliers=outliers, token_mask=mask)


@pytest.mark.parametrize("bits,expected", [
    # B=4 samples, V=12 vectors of d=10: codes + 4 B scales per vector + 8 B label + 8 B id per sample
    (8, 12 * 10 + 12 * 4 + 4 * 16),
    (4, 12 * 10 // 2 + 12 * 4 + 4 * 16),
    (16, 12 * 10 * 2 + 4 * 16),
    (32, 12 * 10 * 4 + 4 * 16),
])
def test_nbytes_by_hand(bits, expected):
    p = _payload(bits)
    assert p.nbytes == expected == p.tensor_nbytes()


def test_nbytes_odd_4bit_outliers_and_mask():
    p = _payload(4, shape=(3, 1, 5), outliers=1)  # 15 codes -> 8 bytes; scales 3*4; outliers 3*(2+2)
    assert p.nbytes == 8 + 12 + 12 + 3 * 16 == p.tensor_nbytes()
    mask = torch.ones(2, 9, dtype=torch.bool)
    q = _payload(8, shape=(2, 3, 9, 4), mask=mask)  # 54 vectors of 4; mask 18 bits -> 3 bytes
    assert q.nbytes == 54 * 4 + 54 * 4 + 2 * 16 + 3 == q.tensor_nbytes()
    assert payload_nbytes(2, 54, 4, 8, mask_tokens=18) == q.nbytes
    assert math.ceil(18 / 8) == 3
