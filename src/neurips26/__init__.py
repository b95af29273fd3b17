"""neurips26: NeurIPS 2026 papers as tested APIs, with their baselines and honest claim checks.

Each paper lives in its own subpackage (``neurips26.effbench``, ...); :mod:`neurips26.claims` runs
their claim checks, :mod:`neurips26.data` resolves offline datasets, :mod:`neurips26.nn` holds
building blocks shared by several papers.
"""

__version__ = "0.1.0"
