"""A byte-level BPE tokenizer trained with Hugging Face ``tokenizers`` on a corpus, cached on disk.

Byte-level BPE (GPT-2 style) starts from the 256 byte symbols, so every string round-trips exactly
(``decode(encode(text)) == text``) and there is no unknown token. Training a 2048-symbol vocabulary on
tiny shakespeare takes about a second; the result is still cached so that repeated runs and several
processes (DDP ranks, claim-check seeds) share one file:

    <cache_dir>/bpe-v<vocab_size>-<sha256(corpus)[:16]>-tok<tokenizers version>.json

with ``cache_dir`` defaulting to ``$NEURIPS26_CACHE/tokenizers`` or ``~/.cache/neurips26/tokenizers``
(``$XDG_CACHE_HOME`` respected). The file is written to a temporary name and moved into place with
``os.replace``, so a reader never sees half a file and concurrent writers cannot corrupt it; the temporary's
name carries the writer's pid, and a write finds and removes those of writers that were killed. A cached file
that does not load (damaged on disk) is trained again and replaced.

    tok = train_bpe_tokenizer(text, vocab_size=2048)
    ids = tok.encode("To be, or not to be")          # list[int]
    tok.decode(ids)                                   # "To be, or not to be"
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

_FORMAT = 1  # bump when the training recipe changes, so old cache files are not reused


def default_cache_dir() -> Path:
    """``$NEURIPS26_CACHE/tokenizers``, else ``$XDG_CACHE_HOME/neurips26/tokenizers`` (``~/.cache``)."""
    root = os.environ.get("NEURIPS26_CACHE")
    if root:
        return Path(root) / "tokenizers"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "neurips26" / "tokenizers"


class BPETokenizer:
    """A trained byte-level BPE vocabulary (thin wrapper over ``tokenizers.Tokenizer``).

    Build one with :func:`train_bpe_tokenizer` or :meth:`from_file`. Trained ones have no special tokens:
    ids are ``0 .. vocab_size - 1`` and the first 256 are the byte alphabet. A pretrained vocabulary (e.g.
    :func:`neurips26.nn.load_smollm2`) names its special ids in ``special_tokens`` (``{"eos": 2, ...}``).
    """

    def __init__(self, tokenizer: object, *, path: Path | None = None,
                 special_tokens: dict[str, int] | None = None) -> None:
        from tokenizers import Tokenizer

        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be a tokenizers.Tokenizer, got {type(tokenizer).__name__}")
        self._tok = tokenizer
        self.path = path
        self.special_tokens: dict[str, int] = dict(special_tokens or {})

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> BPETokenizer:
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(path)), path=Path(path))

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    @property
    def backend(self) -> object:
        """The underlying ``tokenizers.Tokenizer`` (for batch encoding, saving, HF wrappers)."""
        return self._tok

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens added)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._tok.encode(text, add_special_tokens=False).ids

    def encode_to_array(self, text: str, *, chunk_lines: int = 2000) -> np.ndarray:
        """Token ids of a long text as ``int64 [n_tokens]``, encoded in line chunks in parallel.

        Chunks end at line breaks; byte-level pre-tokenisation never merges across ``\\n`` followed by
        text, so the result equals ``encode(text)`` (tested).
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        lines = text.splitlines(keepends=True)
        chunks = ["".join(lines[i:i + chunk_lines]) for i in range(0, len(lines), chunk_lines)]
        encoded = self._tok.encode_batch(chunks, add_special_tokens=False)
        if not encoded:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.asarray(e.ids, dtype=np.int64) for e in encoded])

    def decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(list(map(int, ids)), skip_special_tokens=False)

    def __repr__(self) -> str:
        return f"BPETokenizer(vocab_size={self.vocab_size}, path={str(self.path) if self.path else None})"


def _corpus_digest(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def train_bpe_tokenizer(corpus: str | Sequence[str], vocab_size: int = 2048, *, min_frequency: int = 2,
                        cache_dir: str | os.PathLike | None = None, use_cache: bool = True) -> BPETokenizer:
    """Train (or load from the cache) a byte-level BPE tokenizer on ``corpus``.

    Args:
        corpus: one string or a sequence of strings (documents); the cache key hashes them in order.
        vocab_size: total vocabulary, at least 256 (the byte alphabet) + 1.
        min_frequency: pairs seen fewer times are never merged.
        cache_dir: folder of the cached JSON files (default :func:`default_cache_dir`).
        use_cache: ``False`` trains afresh and writes nothing.
    """
    import tokenizers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    texts = [corpus] if isinstance(corpus, str) else list(corpus)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise TypeError("corpus must be a non-empty str or a non-empty sequence of str")
    if not any(texts):
        raise ValueError("corpus must contain some text, got only empty strings")
    if not isinstance(vocab_size, int) or vocab_size < 257:
        raise ValueError(f"vocab_size must be an int >= 257 (256 bytes + merges), got {vocab_size!r}")
    if not isinstance(min_frequency, int) or min_frequency < 1:
        raise ValueError(f"min_frequency must be a positive int, got {min_frequency!r}")

    name = (f"bpe-f{_FORMAT}-v{vocab_size}-m{min_frequency}-{_corpus_digest(texts)[:16]}"
            f"-tok{tokenizers.__version__}.json")
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / name
    if use_cache and path.is_file():
        try:
            return BPETokenizer.from_file(path)
        except Exception:  # noqa: BLE001 - tokenizers raises a bare Exception for a damaged file: rebuild the cache
            pass

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(texts, trainer=trainer)
    if not use_cache:
        return BPETokenizer(tok)
    folder.mkdir(parents=True, exist_ok=True)
    from neurips26.data.integrity import clean_stale_temporaries, temp_prefix

    clean_stale_temporaries(folder)  # the temporaries of writers that were killed
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=temp_prefix(name), suffix=".part")
    os.close(fd)
    try:
        tok.save(tmp)
        os.replace(tmp, path)  # atomic on POSIX: readers see the old state or the whole new file
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return BPETokenizer(tok, path=path)
