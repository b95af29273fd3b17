"""Issue 14 / 16 for TST: compiled models, autocast, gradient accumulation, fp64 MCE (gradcheck), bad ids,
checkpoints that do not fit (refused, nothing changed)."""

import pytest
import torch

from _badinput import BadInput, assert_unchanged, check_bad_inputs, snapshot
from neurips26.nn import Llama, LlamaConfig, TokenWindows
from neurips26.tst import (
    TSTSchedule,
    TSTTrainer,
    multi_hot_cross_entropy,
    superpose_embeddings,
    unwrap_model,
    wsd_lr_lambda,
)

V = 47


def _model(seed=0):
    torch.manual_seed(seed)
    return Llama(LlamaConfig(vocab_size=V, d_model=32, n_layers=2, n_heads=4, max_seq_len=32))


def _ids(rows, width, seed=1):
    return torch.randint(0, V, (rows, width), generator=torch.Generator().manual_seed(seed))


def _trainer(model=None, **kw):
    model = _model() if model is None else model
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    return TSTTrainer(model, opt, TSTSchedule(6, 2, 0.5), context_len=5, **kw)


def test_mce_computes_in_promoted_dtype_and_passes_gradcheck():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(1, 3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 5, (1, 3, 2), generator=g)
    assert multi_hot_cross_entropy(logits, targets).dtype == torch.float64
    assert multi_hot_cross_entropy(logits.detach().bfloat16(), targets).dtype == torch.float32
    assert torch.autograd.gradcheck(lambda z: multi_hot_cross_entropy(z, targets), (logits,))
    with pytest.raises(ValueError, match="logits must be a tensor of finite values"):
        multi_hot_cross_entropy(logits.detach().index_fill(1, torch.tensor([1]), float("nan")), targets)


def test_compiled_model_is_accepted_and_trains_like_the_plain_one():
    plain = _model()
    compiled_base = _model()
    compiled = torch.compile(compiled_base, backend="eager")
    assert unwrap_model(compiled) is compiled_base
    ids = _ids(2, 2 * 6)
    a = _trainer(plain).train_step(ids)["loss"]
    b = _trainer(compiled).train_step(ids)["loss"]
    assert a == pytest.approx(b, rel=1e-5)
    for p, q in zip(plain.parameters(), compiled_base.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_grad_accumulation_equals_one_batch_update():
    one, acc = _model(), _model()
    ids = _ids(4, 2 * 6)
    ra = _trainer(one, grad_clip=None).train_step(ids)
    rb = _trainer(acc, grad_clip=None, grad_accum_steps=2).train_step(ids)
    assert ra["loss"] == pytest.approx(rb["loss"], rel=1e-5)
    for p, q in zip(one.parameters(), acc.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="grad_accum_steps"):
        _trainer(grad_accum_steps=3).train_step(_ids(4, 12))
    with pytest.raises(ValueError, match="grad_accum_steps"):
        _trainer(grad_accum_steps=0)


def test_autocast_bf16_runs_both_phases_close_to_fp32():
    ref, low = _model(), _model()
    data_ref, data_low = TokenWindows(_ids(1, 2000)[0], batch_size=2), TokenWindows(_ids(1, 2000)[0], batch_size=2)
    h_ref = _trainer(ref).fit(data_ref)
    h_low = _trainer(low, autocast_dtype=torch.bfloat16).fit(data_low)
    assert [h["phase"] for h in h_low] == [h["phase"] for h in h_ref]
    for a, b in zip(h_ref, h_low):
        assert b["loss"] == pytest.approx(a["loss"], abs=0.05)
    with pytest.raises(ValueError, match="autocast_dtype"):
        _trainer(autocast_dtype=torch.float64)


def test_out_of_vocabulary_ids_are_refused_before_anything_changes():
    trainer = _trainer()
    bad = _ids(2, 12)
    bad[0, 3] = V
    check_bad_inputs(trainer.train_step, BadInput("oov", (bad,), names="batch_ids", match="vocab_size"),
                     target=trainer.model)
    assert trainer.step == 0
    with pytest.raises(ValueError, match="bag_ids must lie"):
        superpose_embeddings(bad.view(2, 6, 2), trainer.model.get_input_embeddings())


def _saved(tmp_path, **kw):
    tr = _trainer(_model(), **kw)
    data = TokenWindows(_ids(1, 2000)[0], batch_size=2)
    tr.fit(data, until_step=2)
    return tr.save_checkpoint(tmp_path / "ck.pt", data)


@pytest.mark.parametrize("what, make", [
    ("grad_clip", lambda m: TSTTrainer(m, torch.optim.AdamW(m.parameters(), 1e-3), TSTSchedule(6, 2, 0.5),
                                       context_len=5, grad_clip=0.5)),
    ("optimizer", lambda m: TSTTrainer(m, torch.optim.SGD(m.parameters(), 1e-3), TSTSchedule(6, 2, 0.5),
                                       context_len=5)),
    ("lr_probes", lambda m: _with_sched(m, warmup=1)),
], ids=["grad-clip", "optimizer", "warmup"])
def test_resume_with_another_recipe_is_refused(tmp_path, what, make):
    if what == "lr_probes":
        path = _with_sched(_model(), warmup=3)
        path.fit(TokenWindows(_ids(1, 2000)[0], batch_size=2), until_step=2)
        path = path.save_checkpoint(tmp_path / "ck.pt")
    else:
        path = _saved(tmp_path)
    other = make(_model(5))
    before = snapshot(other.model)
    with pytest.raises(ValueError, match=what):
        other.load_checkpoint(path)
    assert_unchanged(before, other.model)
    assert other.step == 0


def _with_sched(m, warmup):
    opt = torch.optim.AdamW(m.parameters(), 1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, wsd_lr_lambda(6, warmup_fraction=warmup / 6))
    return TSTTrainer(m, opt, TSTSchedule(6, 2, 0.5), context_len=5, lr_scheduler=sched)


def test_load_with_another_data_layout_or_vocab_changes_nothing(tmp_path):
    path = _saved(tmp_path)
    tr = _trainer(_model(5))
    other_layout = TokenWindows(_ids(1, 2000)[0], batch_size=4)
    before, data_before = snapshot(tr.model), other_layout.state_dict()
    opt_before = snapshot(tr.optimizer.state_dict())
    with pytest.raises(ValueError):
        tr.load_checkpoint(path, other_layout)
    assert_unchanged(before, tr.model)
    assert_unchanged(opt_before, tr.optimizer.state_dict())
    assert tr.step == 0 and other_layout.state_dict().keys() == data_before.keys()
    torch.manual_seed(0)
    bigger = Llama(LlamaConfig(vocab_size=V + 3, d_model=32, n_layers=2, n_heads=4, max_seq_len=32))
    tr2 = _trainer(bigger)
    before = snapshot(bigger)
    with pytest.raises(ValueError, match="shapes differ"):
        tr2.load_checkpoint(path)
    assert_unchanged(before, bigger)
