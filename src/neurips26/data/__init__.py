"""Offline dataset registry: a name resolves to local files, never to a download.

Search order for a registered dataset's files:

1. the folder in the environment variable ``NEURIPS26_DATA``;
2. ``../shared/data`` beside the repository (development and CI), found from this file and from the
   current directory;
3. the user cache ``~/.cache/neurips26/data`` (or ``$XDG_CACHE_HOME/neurips26/data``).

A miss raises :class:`DatasetNotFoundError` naming the dataset, every place searched and where the
data comes from. Data that a PyPI package ships (scikit-learn's digits) is read from that package.
"""

from .registry import (
    DATASETS,
    Dataset,
    DatasetNotFoundError,
    dataset_path,
    effbench_names,
    load_cvrplib_x_small,
    load_digits,
    load_effbench,
    load_planetoid,
    load_tinyshakespeare,
    load_tsplib_small,
    search_dirs,
)

__all__ = [
    "DATASETS", "Dataset", "DatasetNotFoundError", "dataset_path", "effbench_names", "load_cvrplib_x_small",
    "load_digits",
    "load_effbench", "load_planetoid", "load_tinyshakespeare", "load_tsplib_small", "search_dirs",
]
