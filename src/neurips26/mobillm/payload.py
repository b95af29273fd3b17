r"""What a device uploads: selected hidden states, quantised per vector, with labels and ids.

Symmetric absmax quantisation, one scale per vector $h \in \mathbb{R}^d$ (round to nearest):

$$q_{\max} = 2^{b-1} - 1, \qquad s = \frac{\max_i |h_i|}{q_{\max}}, \qquad c_i = \mathrm{round}(h_i / s) \in
[-q_{\max}, q_{\max}], \qquad \hat h_i = s\,c_i, \qquad |h_i - \hat h_i| \le s/2 .$$

4-bit codes are packed two per byte. 16 bits send fp16 values, 32 bits float32 (no codes, no scales).
Outliers (opt-in, ``outliers=k``): the $k$ largest $|h_i|$ of every vector travel exactly as
(int16 index, fp16 value) and are zeroed before the scale is taken, so one massive channel (SmolLM2
has some) no longer sets the step for the other $d - k$.

Bytes on the wire (:attr:`ActivationPayload.nbytes`), with $V$ vectors of width $d$, $B$ samples:

$$\underbrace{\lceil V d\, b / 8 \rceil}_{\text{codes}} + \underbrace{4V}_{\text{scales}}
+ \underbrace{V k (2 + 2)}_{\text{outliers}} + \underbrace{8B}_{\text{labels}} + \underbrace{8B}_{\text{ids}}
\;(+\; \lceil B T / 8 \rceil \text{ mask bits for } \texttt{positions="all"}).$$
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from neurips26.constraints import Choice, Tensor, validate

__all__ = ["QUANT_BITS", "ActivationPayload", "dequantize_absmax", "payload_nbytes", "quantize_absmax"]

QUANT_BITS = (4, 8, 16, 32)
LABEL_BYTES = 8  # int64
ID_BYTES = 8  # int64
SCALE_BYTES = 4  # float32, one per vector
OUTLIER_BYTES = 4  # int16 index + fp16 value


_BITS = Choice(*QUANT_BITS)  # a bool is never a width (True is not 1)


def _check_bits(quant_bits: object, where: str = "") -> int:
    _BITS.check(quant_bits, "quant_bits", where)
    return quant_bits


def _pack4(codes: torch.Tensor) -> torch.Tensor:
    """int8 codes in [-7, 7] (any shape, flattened) -> uint8, two nibbles per byte (low nibble first)."""
    flat = (codes.reshape(-1).to(torch.int16) + 8).to(torch.uint8)  # offset to [1, 15]
    if flat.numel() % 2:
        flat = torch.cat([flat, flat.new_zeros(1)])
    return flat[0::2] | (flat[1::2] << 4)


def _unpack4(packed: torch.Tensor, n: int) -> torch.Tensor:
    low, high = packed & 0x0F, packed >> 4
    flat = torch.stack([low, high], dim=-1).reshape(-1)[:n]
    return flat.to(torch.int16).sub(8).to(torch.int8)


@validate(x=Tensor(dtype="float"))
def quantize_absmax(x: torch.Tensor, bits: int, *, outliers: int = 0) -> dict[str, torch.Tensor]:
    r"""Quantise the last dimension of ``x [..., d]`` per vector.

    Returns a dict: ``codes`` (int8 ``[..., d]``, or packed uint8 for 4 bits), ``scales`` (float32 ``[...]``),
    and for ``outliers=k > 0`` also ``outlier_idx`` (int16 ``[..., k]``) and ``outlier_val`` (fp16 ``[..., k]``).
    For 16/32 bits: ``values`` in fp16/float32 only.
    """
    bits = _check_bits(bits, "quantize_absmax")
    if bits == 16:
        return {"values": x.detach().to(torch.float16)}
    if bits == 32:
        return {"values": x.detach().to(torch.float32)}
    x = x.detach().to(torch.float32)
    out: dict[str, torch.Tensor] = {}
    if outliers:
        # the k largest |h_i| travel exactly (fp16) and leave the absmax scale to the rest
        idx = x.abs().topk(outliers, dim=-1).indices
        out["outlier_idx"] = idx.to(torch.int16)
        out["outlier_val"] = x.gather(-1, idx).to(torch.float16)
        x = x.scatter(-1, idx, 0.0)
    q_max = 2 ** (bits - 1) - 1
    # s = max_i |h_i| / q_max (a zero vector keeps s = 0 and codes 0)
    scales = x.abs().amax(dim=-1) / q_max
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))
    codes = torch.round(x / safe[..., None]).clamp_(-q_max, q_max).to(torch.int8)
    out["scales"] = scales
    out["codes"] = _pack4(codes) if bits == 4 else codes
    return out


def dequantize_absmax(parts: dict[str, torch.Tensor], bits: int, shape: tuple[int, ...]) -> torch.Tensor:
    r"""Inverse of :func:`quantize_absmax`: $\hat h = s\,c$ (plus the exact outliers), float32 ``shape``."""
    bits = _check_bits(bits, "dequantize_absmax")
    if bits in (16, 32):
        return parts["values"].to(torch.float32).reshape(shape)
    n = math.prod(shape)
    codes = _unpack4(parts["codes"], n) if bits == 4 else parts["codes"]
    x = codes.reshape(shape).to(torch.float32) * parts["scales"][..., None]
    if "outlier_idx" in parts:
        x = x.scatter(-1, parts["outlier_idx"].long(), parts["outlier_val"].to(torch.float32))
    return x


def payload_nbytes(n_samples: int, n_vectors: int, width: int, bits: int, *, outliers: int = 0,
                   mask_tokens: int = 0) -> int:
    """Bytes of a payload from the formula in the module docstring (``n_vectors`` = all vectors sent)."""
    bits = _check_bits(bits, "payload_nbytes")
    total = math.ceil(n_vectors * width * bits / 8)
    if bits in (4, 8):
        total += SCALE_BYTES * n_vectors + OUTLIER_BYTES * n_vectors * outliers
    total += (LABEL_BYTES + ID_BYTES) * n_samples
    return total + math.ceil(mask_tokens / 8)


@dataclass
class ActivationPayload:
    """One upload from a device: quantised hidden states of ``len(layers)`` layers for ``B`` samples.

    Attributes:
        parts: the tensors on the wire (see :func:`quantize_absmax`).
        shape: the shape of the dequantised features: ``(B, K, d)`` for ``"pivot"``/``"mean"``,
            ``(B, K, T, d)`` for ``"all"``.
        quant_bits: 4, 8, 16 or 32.
        labels: ``int64 [B]``.  sample_ids: ``int64 [B]`` (ids in the device's dataset).
        backbone_type: the name of the device's backbone (keys the server's aligners).
        device_id: which device sent it.  seq: the device's running payload number (0, 1, ...).
        positions: how tokens were selected.  token_mask: ``bool [B, T]`` for ``"all"``, else ``None``.
        outliers: exact outlier channels per vector.
    """

    parts: dict[str, torch.Tensor]
    shape: tuple[int, ...]
    quant_bits: int
    labels: torch.Tensor
    sample_ids: torch.Tensor
    backbone_type: str
    device_id: int
    seq: int = 0
    positions: str = "pivot"
    token_mask: torch.Tensor | None = None
    outliers: int = 0
    meta: dict = field(default_factory=dict)

    @property
    def batch_size(self) -> int:
        return int(self.shape[0])

    @property
    def n_layers(self) -> int:
        return int(self.shape[1])

    @property
    def width(self) -> int:
        return int(self.shape[-1])

    def dequantize(self) -> torch.Tensor:
        """Features ``float32 [B, K, d]`` (``[B, K, T, d]`` for ``positions="all"``)."""
        return dequantize_absmax(self.parts, self.quant_bits, self.shape)

    @property
    def n_vectors(self) -> int:
        return math.prod(self.shape[:-1])

    @property
    def nbytes(self) -> int:
        """Bytes on the wire: codes (or fp16/fp32 values), scales, outliers, labels, ids (and the mask)."""
        mask = 0 if self.token_mask is None else self.token_mask.numel()
        return payload_nbytes(self.batch_size, self.n_vectors, self.width, self.quant_bits, outliers=self.outliers,
                              mask_tokens=mask)

    def tensor_nbytes(self) -> int:
        """The same count read off the stored tensors (labels and ids as int64); equals :attr:`nbytes`."""
        total = sum(t.numel() * t.element_size() for t in self.parts.values())
        total += self.labels.numel() * LABEL_BYTES + self.sample_ids.numel() * ID_BYTES
        if self.token_mask is not None:
            total += math.ceil(self.token_mask.numel() / 8)
        return int(total)
