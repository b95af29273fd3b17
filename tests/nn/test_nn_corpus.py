"""Contiguous-block split, resumable token windows (sharding, epochs), validation windows."""

import pytest
import torch

from neurips26.nn import TokenWindows, eval_windows, load_text_corpus, split_text

TEXT = "".join(f"line {i} of the play\n" for i in range(500))


@pytest.mark.parametrize("n_blocks", [1, 3, 7])
def test_split_is_a_partition_of_contiguous_blocks(n_blocks):
    train, val = split_text(TEXT, val_fraction=0.2, n_blocks=n_blocks)
    assert len(train) + len(val) == len(TEXT)
    assert sorted(train + val) == sorted(TEXT)
    assert abs(len(val) / len(TEXT) - 0.2) < 0.05
    assert val.endswith(TEXT[-30:])  # the tail of the last block is validation
    assert train.startswith(TEXT[:30])
    lines = set(TEXT.splitlines())
    assert all(line in lines for line in val.splitlines())  # cuts at line breaks


def test_split_bad_input():
    with pytest.raises(ValueError, match="val_fraction"):
        split_text(TEXT, val_fraction=1.0)
    with pytest.raises(ValueError, match="n_blocks"):
        split_text(TEXT, n_blocks=0)


def test_windows_are_contiguous_lanes_and_count_tokens():
    tokens = torch.arange(100)
    w = TokenWindows(tokens, batch_size=4)  # lanes of 25: [0..24], [25..49], ...
    a = w.next_batch(5)
    assert a.tolist()[1] == list(range(25, 30))
    b = w.next_batch(10)
    assert b.tolist()[0] == list(range(5, 15))
    assert w.tokens_read == 60 and w.epoch == 0
    c = w.next_batch(20)  # does not fit in the remaining 10 -> new epoch at a seeded offset
    assert w.epoch == 1 and c.shape == (4, 20)
    assert (c[:, 1:] - c[:, :-1] == 1).all()


def test_windows_state_roundtrip():
    tokens = torch.arange(1000)
    w = TokenWindows(tokens, batch_size=4, seed=3)
    for n in (30, 60, 90, 120):
        w.next_batch(n)
    state = w.state_dict()
    expect = [w.next_batch(n) for n in (100, 40, 200)]
    w2 = TokenWindows(tokens, batch_size=4, seed=3)
    w2.load_state_dict(state)
    for n, e in zip((100, 40, 200), expect):
        assert torch.equal(w2.next_batch(n), e)
    with pytest.raises(ValueError, match="seed"):
        TokenWindows(tokens, batch_size=4, seed=4).load_state_dict(state)


def test_rank_shards_union_equals_global_batch():
    tokens = torch.arange(400)
    full = TokenWindows(tokens, batch_size=4)
    shards = [TokenWindows(tokens, batch_size=4, rank=r, world_size=2) for r in range(2)]
    for n in (7, 13):
        assert torch.equal(torch.cat([s.next_batch(n) for s in shards]), full.next_batch(n))
    with pytest.raises(ValueError, match="world_size"):
        TokenWindows(tokens, batch_size=3, world_size=2)


def test_window_bad_input():
    with pytest.raises(ValueError, match="tokens"):
        TokenWindows(torch.arange(10.0), batch_size=2)
    w = TokenWindows(torch.arange(20), batch_size=2)
    with pytest.raises(ValueError, match="row_len"):
        w.next_batch(11)


def test_eval_windows():
    win = eval_windows(torch.arange(50), context_len=8)
    assert win.shape == (6, 9) and win[1, 0] == 8 and win[0, -1] == 8
    assert eval_windows(torch.arange(50), context_len=8, max_windows=3).shape == (3, 9)


def test_tinyshakespeare_corpus(tmp_path):
    from neurips26.data.testing import require_dataset

    require_dataset("tinyshakespeare")
    corpus = load_text_corpus(vocab_size=512, cache_dir=str(tmp_path))
    assert corpus.vocab_size == 512
    assert corpus.train_tokens.dtype == torch.int64 and int(corpus.train_tokens.max()) < 512
    assert 8 < len(corpus.train_tokens) / len(corpus.val_tokens) < 10
    text = corpus.tokenizer.decode(corpus.val_tokens[:200].tolist())
    assert len(text) > 200
    assert corpus.bits_per_byte(corpus.val_bytes_per_token * 0.6931471805599453) == pytest.approx(1.0)
