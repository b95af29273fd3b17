"""Silent non-finite values refused by name (issue 34): a NaN/inf embedding row handed to TST's trainer."""

from __future__ import annotations

import math

import pytest
import torch

from _badinput import BadInput, check_bad_inputs
from neurips26.nn import Llama, LlamaConfig
from neurips26.tst import TSTSchedule, TSTTrainer


def _model(tie: bool = True) -> Llama:
    torch.manual_seed(0)
    return Llama(LlamaConfig(vocab_size=23, d_model=16, n_layers=1, n_heads=2, max_seq_len=16, tie_embeddings=tie))


@pytest.mark.parametrize("tie", [True, False])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("which", ["input", "output"])
def test_tst_trainer_refuses_a_non_finite_embedding_weight(tie, value, which):
    model = _model(tie)
    if which == "output" and tie:
        pytest.skip("tied: the output embedding is the input one")
    layer = model.get_input_embeddings() if which == "input" else model.get_output_embeddings()
    with torch.no_grad():
        layer.weight[22, 3] = value  # a token the batches may never touch: it would stay non-finite unseen
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    err = check_bad_inputs(lambda: TSTTrainer(model, optimizer, TSTSchedule(4, 2, 0.5), context_len=2),
                           BadInput(f"{which}-{value}", exc=ValueError, names="model"), targets=[model, optimizer])
    assert f"{which if not tie else 'input'} embedding weight" in str(err) and "row 22" in str(err)


def test_a_finite_model_is_accepted_and_trains():
    model = _model(False)
    trainer = TSTTrainer(model, torch.optim.SGD(model.parameters(), 0.1), TSTSchedule(4, 2, 0.5), context_len=2)
    record = trainer.train_step(torch.arange(12).view(2, 6) % 20)
    assert math.isfinite(record["loss"])
