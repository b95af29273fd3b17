"""The skip helper: absent data skips, or fails under NEURIPS26_REQUIRE_DATA=1."""

import pytest

from neurips26.data.testing import require_dataset, requires_dataset


def test_absent_dataset_skips_with_the_fix(isolated, monkeypatch):
    monkeypatch.delenv("NEURIPS26_REQUIRE_DATA", raising=False)
    with pytest.raises(pytest.skip.Exception, match="neurips26 data fetch planetoid/cora"):
        require_dataset("planetoid/cora")
    mark = requires_dataset("planetoid/cora", "tsplib_small")
    assert mark.args == (True,) and "planetoid/cora" in mark.kwargs["reason"]


def test_absent_dataset_fails_when_data_is_required(isolated, monkeypatch):
    monkeypatch.setenv("NEURIPS26_REQUIRE_DATA", "1")
    with pytest.raises(pytest.fail.Exception, match="NEURIPS26_REQUIRE_DATA=1 and dataset 'planetoid/cora' absent"):
        require_dataset("planetoid/cora")
    assert requires_dataset("planetoid/cora").args == (False,)  # runs, and fails on the loader's error


def test_unknown_name_is_an_error():
    with pytest.raises(ValueError, match="unknown dataset"):
        requires_dataset("mnist")
