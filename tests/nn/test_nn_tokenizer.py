"""Byte-level BPE: exact round trip, on-disk cache keyed by corpus and vocab, atomic write, bad input."""

import os

import pytest

from neurips26.nn import BPETokenizer, train_bpe_tokenizer

TEXT = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n" * 40
        + "Ünïcödé — ok?\n")


def test_round_trip_and_vocab(tmp_path):
    tok = train_bpe_tokenizer(TEXT, 300, cache_dir=tmp_path)
    assert isinstance(tok, BPETokenizer)
    assert 256 < tok.vocab_size <= 300
    for s in (TEXT, "unseen wörds ✓ \t\n  spaces", ""):
        assert tok.decode(tok.encode(s)) == s
    ids = tok.encode(TEXT)
    assert len(ids) < len(TEXT.encode())  # merges compress
    assert list(tok.encode_to_array(TEXT, chunk_lines=7)) == ids


def test_cache_hit_and_keys(tmp_path):
    a = train_bpe_tokenizer(TEXT, 300, cache_dir=tmp_path)
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 1 and files[0].endswith(".json") and a.path.name == files[0]
    mtime = a.path.stat().st_mtime_ns
    b = train_bpe_tokenizer(TEXT, 300, cache_dir=tmp_path)
    assert b.path == a.path and b.path.stat().st_mtime_ns == mtime  # loaded, not retrained
    assert b.encode(TEXT) == a.encode(TEXT)
    train_bpe_tokenizer(TEXT, 320, cache_dir=tmp_path)  # other vocab -> other file
    train_bpe_tokenizer(TEXT + "x", 300, cache_dir=tmp_path)  # other corpus -> other file
    names = os.listdir(tmp_path)
    assert len(names) == 3 and not any(n.endswith(".tmp") for n in names)


def test_deterministic_training(tmp_path):
    a = train_bpe_tokenizer(TEXT, 300, use_cache=False)
    b = train_bpe_tokenizer(TEXT, 300, use_cache=False)
    assert a.encode(TEXT) == b.encode(TEXT)


def test_env_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NEURIPS26_CACHE", str(tmp_path))
    tok = train_bpe_tokenizer(TEXT, 290)
    assert tok.path.parent == tmp_path / "tokenizers"


@pytest.mark.parametrize("kwargs, exc", [({"vocab_size": 100}, ValueError), ({"min_frequency": 0}, ValueError)])
def test_bad_arguments(tmp_path, kwargs, exc):
    with pytest.raises(exc):
        train_bpe_tokenizer(TEXT, cache_dir=tmp_path, **kwargs)


def test_bad_corpus(tmp_path):
    with pytest.raises(TypeError):
        train_bpe_tokenizer([1, 2], 300, cache_dir=tmp_path)
    with pytest.raises(ValueError):
        train_bpe_tokenizer(["", ""], 300, cache_dir=tmp_path)
