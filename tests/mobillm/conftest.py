"""Fixtures of the mobillm tests; the tiny backbones live in _mobillm_models (importable from the tests)."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _mobillm_models import tiny_bert, tiny_llama  # noqa: E402

from neurips26.mobillm import HiddenStates  # noqa: E402


@pytest.fixture
def llama():
    return HiddenStates(tiny_llama())


@pytest.fixture
def bert():
    return HiddenStates(tiny_bert())


@pytest.fixture
def batch():
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(4, 64, (5, 9), generator=g)
    mask = torch.ones(5, 9, dtype=torch.long)
    for i, length in enumerate([9, 7, 4, 1, 8]):
        mask[i, length:] = 0
        ids[i, length:] = 0
    return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([0, 1, 1, 0, 1]),
            "sample_ids": torch.arange(10, 15)}
