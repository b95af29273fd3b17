"""Issue 16 for tst: the bad-input table over the rest of ``__all__`` (fold_bags, TSTSchedule, the LR
schedule, the arms, the trainer's constructor and step) and stale checkpoint temporaries left by a kill."""

import math
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

from _badinput import BadInput, assert_unchanged, check_bad_inputs, snapshot
from neurips26.nn import Llama, LlamaConfig
from neurips26.tst import (
    TSTSchedule,
    TSTTrainer,
    flops_per_step,
    fold_bags,
    make_trainer,
    multi_hot_cross_entropy,
    superpose_embeddings,
    wsd_lr_lambda,
)
from neurips26.tst.trainer import remove_stale_checkpoint_tmp

V = 23
IDS = torch.arange(12).view(2, 6)


@pytest.mark.parametrize("case", [
    BadInput("ids-list", args=([[1, 2, 3, 4]], 2), names="ids"),
    BadInput("ids-1d", args=(torch.arange(8), 2), names="ids"),
    BadInput("ids-float", args=(IDS.float(), 2), names="ids"),
    BadInput("s-0", args=(IDS, 0), names="s"),
    BadInput("s-bool", args=(IDS, True), names="s"),
    BadInput("s-float", args=(IDS, 2.0), names="s"),
    BadInput("s-not-dividing", args=(IDS, 4), names="s"),
    BadInput("row-shorter-than-two-bags", args=(IDS, 6), names="ids"),
], ids=lambda c: c.id)
def test_fold_bags_refuses(case):
    check_bad_inputs(fold_bags, case)


@pytest.mark.parametrize("case", [
    BadInput("T-0", args=(0,), names="total_steps"),
    BadInput("T-float", args=(10.0,), names="total_steps"),
    BadInput("T-bool", args=(True,), names="total_steps"),
    BadInput("s-0", args=(10, 0), names="bag_size"),
    BadInput("s-str", args=(10, "4"), names="bag_size"),
    BadInput("r-1", args=(10, 4, 1.0), names="superposition_fraction"),
    BadInput("r-negative", args=(10, 4, -0.1), names="superposition_fraction"),
    BadInput("r-nan", args=(10, 4, math.nan), names="superposition_fraction"),
    BadInput("r-str", args=(10, 4, "0.3"), names="superposition_fraction"),
], ids=lambda c: c.id)
def test_tst_schedule_refuses(case):
    check_bad_inputs(TSTSchedule, case)


@pytest.mark.parametrize("method, case", [
    ("phase", BadInput("step-negative", args=(-1,), names="step")),
    ("phase", BadInput("step-float", args=(1.5,), names="step")),
    ("phase", BadInput("step-bool", args=(True,), names="step")),
    ("raw_tokens_per_row", BadInput("L-0", args=(0, 0), names="context_len")),
    ("raw_tokens_per_row", BadInput("step-none", args=(None, 4), names="step")),
    ("patch_level", BadInput("f-1", args=(10,), kwargs={"data_fraction": 1.0}, names="data_fraction")),
    ("patch_level", BadInput("f-nan", args=(10,), kwargs={"data_fraction": math.nan}, names="data_fraction")),
    ("patch_level", BadInput("f-str", args=(10,), kwargs={"data_fraction": "0.5"}, names="data_fraction")),
    ("patch_level", BadInput("K-0", args=(10,), kwargs={"K": 0}, names="K")),
], ids=lambda c: c.id if isinstance(c, BadInput) else c)
def test_tst_schedule_methods_refuse(method, case):
    schedule = TSTSchedule(10, 4, 0.3)
    check_bad_inputs(getattr(schedule, method), case, target=schedule)


@pytest.mark.parametrize("case", [
    BadInput("T-0", args=(0,), names="total_steps"),
    BadInput("warmup-1", args=(10,), kwargs={"warmup_fraction": 1.0}, names="warmup_fraction"),
    BadInput("warmup-nan", args=(10,), kwargs={"warmup_fraction": math.nan}, names="warmup_fraction"),
    BadInput("warmup-str", args=(10,), kwargs={"warmup_fraction": "0.1"}, names="warmup_fraction"),
    BadInput("decay-negative", args=(10,), kwargs={"decay_fraction": -0.1}, names="decay_fraction"),
    BadInput("decay-inf", args=(10,), kwargs={"decay_fraction": math.inf}, names="decay_fraction"),
    BadInput("sum>1", args=(10,), kwargs={"warmup_fraction": 0.6, "decay_fraction": 0.6},
             names="warmup_fraction"),
], ids=lambda c: c.id)
def test_wsd_lr_lambda_refuses(case):
    check_bad_inputs(wsd_lr_lambda, case)


def test_wsd_lr_lambda_step_past_the_end_is_refused_or_zero():
    fn = wsd_lr_lambda(10, warmup_fraction=0.2, decay_fraction=0.2)
    assert fn(9) == pytest.approx(0.5) and fn(0) == pytest.approx(0.5)  # (t+1)/W, (T-t)/D
    with pytest.raises(ValueError, match="step"):
        fn(1.5)


@pytest.mark.parametrize("case", [
    BadInput("logits-nan", args=(torch.full((1, 2, 5), math.nan), torch.zeros(1, 2, 2, dtype=torch.long)),
             names="logits"),
    BadInput("logits-int", args=(torch.zeros(1, 2, 5, dtype=torch.long), torch.zeros(1, 2, 2, dtype=torch.long)),
             names="logits"),
    BadInput("targets-float", args=(torch.zeros(1, 2, 5), torch.zeros(1, 2, 2)), names="targets"),
    BadInput("targets-shape", args=(torch.zeros(1, 2, 5), torch.zeros(1, 3, 2, dtype=torch.long)),
             names="targets"),
    BadInput("targets-oov", args=(torch.zeros(1, 2, 5), torch.full((1, 2, 2), 5)), names="targets"),
    BadInput("reduction", args=(torch.zeros(1, 2, 5), torch.zeros(1, 2, 2, dtype=torch.long)),
             kwargs={"reduction": "avg"}, names="reduction"),
], ids=lambda c: c.id)
def test_multi_hot_cross_entropy_refuses(case):
    check_bad_inputs(multi_hot_cross_entropy, case)


@pytest.mark.parametrize("case", [
    BadInput("embedding-list", args=(torch.zeros(1, 2, 2, dtype=torch.long), [[0.0]]), names="embedding"),
    BadInput("bag-ids-2d", args=(torch.zeros(2, 2, dtype=torch.long), torch.zeros(4, 3)), names="bag_ids"),
    BadInput("bag-ids-float", args=(torch.zeros(1, 2, 2), torch.zeros(4, 3)), names="bag_ids"),
    BadInput("bag-ids-negative", args=(torch.full((1, 2, 2), -1), torch.zeros(4, 3)), names="bag_ids"),
], ids=lambda c: c.id)
def test_superpose_embeddings_refuses(case):
    check_bad_inputs(superpose_embeddings, case)


def _model():
    torch.manual_seed(0)
    return Llama(LlamaConfig(vocab_size=V, d_model=16, n_layers=1, n_heads=2, max_seq_len=16))


def _opt(model):
    return torch.optim.SGD(model.parameters(), 0.1)


@pytest.mark.parametrize("case", [
    BadInput("model-none", args=(None, None, TSTSchedule(4)), names="model"),
    BadInput("schedule-dict", kwargs={"schedule": {"total_steps": 4}}, names="schedule"),
    BadInput("context-len-0", kwargs={"context_len": 0}, names="context_len"),
    BadInput("context-len-bool", kwargs={"context_len": True}, names="context_len"),
    BadInput("grad-clip-nan", kwargs={"grad_clip": math.nan}, names="grad_clip"),
    BadInput("grad-clip-0", kwargs={"grad_clip": 0.0}, names="grad_clip"),
    BadInput("accum-0", kwargs={"grad_accum_steps": 0}, names="grad_accum_steps"),
    BadInput("autocast-f64", kwargs={"autocast_dtype": torch.float64}, names="autocast_dtype"),
    BadInput("seed-str", kwargs={"reinit_seed": "0"}, names="reinit_seed"),
], ids=lambda c: c.id)
def test_trainer_constructor_refuses_and_leaves_the_model_alone(case):
    model = _model()
    opt = _opt(model)
    args = case.args or (model, opt)
    kwargs = dict(case.kwargs)
    if not case.args and "schedule" not in kwargs:
        kwargs["schedule"] = TSTSchedule(4, 2, 0.5)
    check_bad_inputs(TSTTrainer, BadInput(case.id, args, kwargs, names=case.names), targets=[model, opt])


@pytest.mark.parametrize("case", [
    BadInput("arm", args=("tst2",), names="arm"),
    BadInput("total-steps-0", args=("tst",), kwargs={"total_steps": 0}, names="total_steps"),
    BadInput("bag-size-0", args=("tst",), kwargs={"bag_size": 0}, names="bag_size"),
    BadInput("fraction-nan", args=("tst",), kwargs={"superposition_fraction": math.nan},
             names="superposition_fraction"),
], ids=lambda c: c.id)
def test_make_trainer_refuses(case):
    model = _model()
    kwargs = {"total_steps": 4, **case.kwargs}
    check_bad_inputs(lambda arm: make_trainer(arm, model, _opt(model), **kwargs),
                     BadInput(case.id, case.args, names=case.names), target=model)


@pytest.mark.parametrize("case", [
    BadInput("step-ahead", args=(torch.zeros(2, 6, dtype=torch.long), 1), names="step"),
    BadInput("step-bool", args=(torch.zeros(2, 6, dtype=torch.long), True), names="step"),
    BadInput("ids-list", args=([[0] * 6] * 2,), names="batch_ids"),
    BadInput("ids-float", args=(torch.zeros(2, 6),), names="batch_ids"),
    BadInput("ids-wrong-row", args=(torch.zeros(2, 5, dtype=torch.long),), names="batch_ids"),
    BadInput("ids-oov", args=(torch.full((2, 6), V),), names="batch_ids"),
    BadInput("ids-negative", args=(torch.full((2, 6), -1),), names="batch_ids"),
    BadInput("ids-empty", args=(torch.zeros(0, 6, dtype=torch.long),), names="batch_ids"),
], ids=lambda c: c.id)
def test_train_step_refuses_and_changes_nothing(case):
    model = _model()
    trainer = TSTTrainer(model, _opt(model), TSTSchedule(4, 2, 0.5), context_len=2)
    check_bad_inputs(trainer.train_step, case, target=trainer)


@pytest.mark.parametrize("case", [
    BadInput("rows-0", kwargs={"rows": 0, "context_len": 4}, names="rows"),  # returned 0 FLOPs before
    BadInput("rows-negative", kwargs={"rows": -2, "context_len": 4}, names="rows"),  # returned negative FLOPs
    BadInput("context-float", kwargs={"rows": 2, "context_len": 4.5}, names="context_len"),
], ids=lambda c: c.id)
def test_flops_per_step_refuses(case):
    model = _model()
    check_bad_inputs(lambda **kw: flops_per_step(model, **kw), case, target=model)
    check_bad_inputs(flops_per_step, BadInput("model", ("m",), {"rows": 2, "context_len": 4}, names="model"))


# ---------------------------------------------------------------- stale temporaries of a killed save
def _trainer():
    model = _model()
    return TSTTrainer(model, _opt(model), TSTSchedule(4, 2, 0.5), context_len=2)


def test_save_and_load_remove_stale_tmp_siblings_only(tmp_path):
    path = tmp_path / "ck.pt"
    stale = tmp_path / ".ck.pt.k1l2m3.tmp"
    stale.write_bytes(b"\0" * 4096)
    keep = [tmp_path / ".other.pt.abc.tmp", tmp_path / "ck.pt.tmp", tmp_path / ".ck.pt.notes",
            tmp_path / ".ck.pt2.abc.tmp"]
    for p in keep:
        p.write_bytes(b"x")
    trainer = _trainer()
    trainer.save_checkpoint(path)
    assert not stale.exists()
    assert all(p.exists() for p in keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["ck.pt"] + [p.name for p in keep])
    stale.write_bytes(b"\0" * 4096)
    _trainer().load_checkpoint(path)
    assert not stale.exists() and all(p.exists() for p in keep)


def test_remove_stale_tmp_handles_a_missing_folder_and_odd_names(tmp_path):
    assert remove_stale_checkpoint_tmp(tmp_path / "absent" / "ck.pt") == []
    odd = tmp_path / "ck[1]*.pt"
    stale = tmp_path / ".ck[1]*.pt.zz.tmp"
    stale.write_bytes(b"x")
    other = tmp_path / ".ck1x.pt.zz.tmp"  # would match if the name were used as a glob pattern
    other.write_bytes(b"x")
    assert remove_stale_checkpoint_tmp(odd) == [stale]
    assert other.exists()


def test_sigkill_during_save_leaves_a_tmp_the_next_save_removes(tmp_path):
    """A child process starts a save, writes part of the checkpoint and is SIGKILLed mid-write (its
    ``finally`` never runs); the temporary stays. The next save in this process removes it."""
    path = tmp_path / "ck.pt"
    child = textwrap.dedent(f"""
        import os, signal, torch
        from neurips26.nn import Llama, LlamaConfig
        from neurips26.tst import TSTSchedule, TSTTrainer
        torch.manual_seed(0)
        model = Llama(LlamaConfig(vocab_size={V}, d_model=16, n_layers=1, n_heads=2, max_seq_len=16))
        trainer = TSTTrainer(model, torch.optim.SGD(model.parameters(), 0.1), TSTSchedule(4, 2, 0.5))
        real_save = torch.save
        def dying_save(obj, f, *a, **k):
            with open(f, "wb") as out:
                out.write(b"\\0" * 65536)
                out.flush()
                os.fsync(out.fileno())
            os.kill(os.getpid(), signal.SIGKILL)
        torch.save = dying_save
        trainer.save_checkpoint({str(path)!r})
    """)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    left = list(tmp_path.glob(".ck.pt.*.tmp"))
    assert len(left) == 1 and left[0].stat().st_size == 65536 and not path.exists()
    trainer = _trainer()
    trainer.save_checkpoint(path)
    assert list(tmp_path.glob(".ck.pt.*.tmp")) == []
    state = torch.load(path, weights_only=False)
    fresh = _trainer()
    before = snapshot(fresh.model)
    fresh.load_checkpoint(path)
    assert state["step"] == 0 if "step" in state else True
    assert_unchanged(before, fresh.model)  # same seed, same weights: the saved file is the full, good one
