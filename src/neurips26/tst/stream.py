"""Seeded data order for TST runs: the seed moves the windows and the order of the text, from the first epoch on.

:class:`neurips26.nn.TokenWindows` reads one fixed stream in parallel lanes and seeds only the start offset of
the epochs *after* the first, so two seeds that read less than one epoch see the very same rows. Replicating a
comparison over seeds then varies only the initial weights. :class:`ShuffledTokenWindows` first rearranges
the stream, as a pure function of the seed (:func:`shuffle_blocks`):

    offset  ~ U{0, …, block_len − 1}                 # rng = numpy default_rng([seed, 0x75])
    blocks  = roll(tokens, −offset)[: n·block_len].view(n, block_len)
    stream  = blocks[permutation_rng(n)].flatten()   # n = N // block_len, the tail is dropped

then lays the stream out in lanes exactly as ``TokenWindows`` does (rank sharding, resumable state, the
seeded offsets of later epochs). So a seed changes which text every step reads (the block order) *and*
where each window starts (the offset); every arm of one seed reads the same stream. A block is
``block_len`` contiguous tokens (default 2048, about a scene of a play); a row that crosses a block
boundary joins two unrelated passages, as a row crossing a document boundary does in any packed corpus.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neurips26.constraints import Int, Tensor, validate
from neurips26.nn import TokenWindows

__all__ = ["ShuffledTokenWindows", "shuffle_blocks"]

_STREAM_SALT = 0x75  # separates this generator from TokenWindows' per-epoch one ([seed, epoch])


@validate(tokens=Tensor("N", dtype=torch.int64), seed=Int(low=0), block_len=Int(low=1))
def shuffle_blocks(tokens: torch.Tensor, *, seed: int, block_len: int = 2048) -> torch.Tensor:
    """The stream ``tokens: int64 [N]`` rolled by a seeded offset and cut into ``N // block_len`` blocks of
    ``block_len`` tokens in a seeded order → ``int64 [(N // block_len)·block_len]`` (a new tensor; the tail of
    fewer than ``block_len`` tokens after the roll is dropped). Same seed, same stream."""
    n = len(tokens) // block_len
    if n < 1:
        raise ValueError(f"shuffle_blocks: tokens must hold at least block_len={block_len} tokens, got {len(tokens)}")
    rng = np.random.default_rng([seed, _STREAM_SALT])
    offset = int(rng.integers(0, block_len))
    rolled = torch.roll(tokens, -offset)[: n * block_len]
    order = torch.from_numpy(rng.permutation(n))
    return rolled.view(n, block_len)[order].reshape(-1).clone()


class ShuffledTokenWindows(TokenWindows):
    """:class:`~neurips26.nn.TokenWindows` over :func:`shuffle_blocks` ``(tokens, seed=seed, block_len=...)``.

    Args:
        tokens: int64 ``[N]`` token stream.
        batch_size: global rows per step (lanes), divisible by ``world_size``.
        seed: the data order: block order and window offset from the first epoch on, and (as in
            ``TokenWindows``) the offsets of later epochs.
        block_len: tokens per shuffled block.
        rank, world_size: this process's share of the lanes, as in ``TokenWindows``.
    """

    @validate(tokens=Tensor("N", dtype=torch.int64), batch_size=Int(low=1), seed=Int(low=0), block_len=Int(low=1),
              rank=Int(low=0), world_size=Int(low=1))
    def __init__(self, tokens: torch.Tensor, *, batch_size: int, seed: int = 0, block_len: int = 2048,
                 rank: int = 0, world_size: int = 1) -> None:
        super().__init__(shuffle_blocks(tokens, seed=seed, block_len=block_len), batch_size=batch_size, seed=seed,
                         rank=rank, world_size=world_size)
        self.block_len = block_len

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "block_len": self.block_len}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("block_len") != self.block_len:
            raise ValueError(f"data state has block_len={state.get('block_len')!r}, this stream has "
                             f"{self.block_len!r}: not the same data order")
        super().load_state_dict(state)
