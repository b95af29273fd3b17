"""The real model the claim check uses (SmolLM2-135M): perplexity of plain English, tokenizer round trip, and
one forward-only search step on it. Skips with the reason when the model's data is absent."""

import math

import pytest
import torch
import torch.nn.functional as F

from neurips26.fwdsvd import AngleConcentrationStats, laser_reduce, mean_pairwise_cosine

PASSAGE = ("The village stood at the edge of a wide river. Every morning the farmers walked down to the water "
           "with their animals, and the children followed them to play on the bank.")


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("gguf")
    from neurips26.data.testing import require_dataset

    path = require_dataset("smollm2-135m")
    from neurips26.nn import load_smollm2

    torch.set_num_threads(1)
    return load_smollm2(path)


@pytest.mark.slow
def test_smollm2_perplexity_round_trip_and_kappa(smollm2):
    model, tok = smollm2
    ids = torch.tensor([tok.encode(PASSAGE)])
    assert tok.decode(ids[0].tolist()) == PASSAGE
    with torch.no_grad():
        ppl = math.exp(float(F.cross_entropy(model(ids)[0, :-1], ids[0, 1:])))
    assert ppl < 40, ppl
    name = "layers.29.mlp.down_proj"
    captured = []
    h = model.get_submodule(name).register_forward_hook(lambda m, i, o: captured.append(i[0][0, 1:]))
    stats = AngleConcentrationStats.attach(model, [name], positions="all")
    stats.observe(model, ids)
    stats.detach()
    h.remove()
    y = (captured[0].double() @ model.get_submodule(name).weight.detach().double().T)
    assert abs(float(stats.kappa(name).sum()) - mean_pairwise_cosine(y)) < 1e-4  # float32 hooks
    before = model.get_submodule(name).weight.detach().clone()
    with laser_reduce(model, name, 0.1):
        assert not torch.equal(model.get_submodule(name).weight, before)
    assert torch.equal(model.get_submodule(name).weight, before)
