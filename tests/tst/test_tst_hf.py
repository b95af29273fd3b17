"""TST inside ``transformers.Trainer``: one ``train()`` runs both phases and equals :class:`TSTTrainer`.

Reference: ``TSTTrainer.fit`` (itself tested against the naive loss and a hand-folded batch) with the same
model init, SGD with momentum, LambdaLR, clipping and rows; equal weights after a run that crosses the switch, with and
without gradient accumulation, and after a resume from a Trainer checkpoint.
"""

from __future__ import annotations

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers")

from neurips26.nn import TokenWindows  # noqa: E402
from neurips26.tst import TSTSchedule, TSTTrainer  # noqa: E402
from neurips26.tst.hf import TSTHFTrainer, TSTRowStream  # noqa: E402

V, L, T = 64, 6, 6
SCHEDULE = TSTSchedule(T, 2, 0.5)  # steps 0-2 on bags of 2, 3-5 next-token prediction
CLIP = 5.0


def _qwen3() -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = transformers.Qwen3Config(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                   max_position_embeddings=64, tie_word_embeddings=False)
    return transformers.Qwen3ForCausalLM(cfg).float()


def _tokens() -> torch.Tensor:
    return torch.randint(0, V, (4000,), generator=torch.Generator().manual_seed(1))


def _optim(model):
    # SGD, not Adam: Adam's update hardly changes when gradients are scaled, so it would hide a wrong
    # gradient-accumulation divisor.
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / (2 * T))
    return opt, sched


def _args(tmp_path, batch, accum, **kw):
    return transformers.TrainingArguments(
        str(tmp_path / "hf"), max_steps=T, per_device_train_batch_size=batch, gradient_accumulation_steps=accum,
        max_grad_norm=CLIP, use_cpu=True, report_to=[], logging_steps=1, save_strategy="no",
        dataloader_num_workers=0, disable_tqdm=True, seed=0, **kw)


def _reference(batch_rows, accum):
    model = _qwen3()
    opt, sched = _optim(model)
    trainer = TSTTrainer(model, opt, SCHEDULE, lr_scheduler=sched, context_len=L, grad_accum_steps=accum,
                         grad_clip=CLIP)
    history = trainer.fit(TokenWindows(_tokens(), batch_size=batch_rows))
    return model, history


def _max_diff(a, b):
    return max(float((p - q).abs().max()) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


@pytest.mark.parametrize("batch, accum", [(4, 1), (2, 2)])
def test_hf_trainer_runs_both_phases_like_tst_trainer(tmp_path, batch, accum):
    model = _qwen3()
    opt, sched = _optim(model)
    seen = []

    class Record(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            seen.append(state.global_step)

    trainer = TSTHFTrainer(model=model, args=_args(tmp_path, batch, accum), optimizers=(opt, sched),
                           train_tokens=_tokens(), schedule=SCHEDULE, context_len=L, callbacks=[Record()])
    trainer.train()
    assert seen == list(range(1, T + 1))
    reference, history = _reference(batch * accum, accum)
    assert _max_diff(model, reference) < 1e-5
    # separate logs per objective (issue 47): MCE in phase 1, NTP after the switch, never one mixed "loss"
    logs = [h for h in trainer.state.log_history if "learning_rate" in h]
    assert [h["step"] for h in logs] == list(range(1, T + 1))
    assert all("loss" not in h for h in logs)
    for h, ref in zip(logs, history):
        key = "mce_loss" if ref["phase"] == "superposition" else "ntp_loss"
        other = "ntp_loss" if key == "mce_loss" else "mce_loss"
        assert other not in h and h[key] == pytest.approx(ref["loss"], rel=1e-5)


def test_a_log_window_across_the_switch_keeps_both_losses_apart(tmp_path):
    model = _qwen3()
    opt, sched = _optim(model)
    args = _args(tmp_path, 4, 1)
    args.logging_steps = 6
    trainer = TSTHFTrainer(model=model, args=args, optimizers=(opt, sched), train_tokens=_tokens(),
                           schedule=SCHEDULE, context_len=L)
    trainer.train()
    _, history = _reference(4, 1)
    log = [h for h in trainer.state.log_history if "learning_rate" in h][-1]
    mce = [r["loss"] for r in history if r["phase"] == "superposition"]
    ntp = [r["loss"] for r in history if r["phase"] == "recovery"]
    assert log["mce_loss"] == pytest.approx(sum(mce) / 3, rel=1e-5)
    assert log["ntp_loss"] == pytest.approx(sum(ntp) / 3, rel=1e-5)


def test_rows_follow_the_phases():
    stream = TSTRowStream(_tokens(), SCHEDULE, context_len=L, rows_per_step=3)
    lengths = [row["input_ids"].shape[0] for row in stream]
    assert lengths == [2 * (L + 1)] * 9 + [L + 1] * 9
    assert len(stream) == 18
    # the same rows as TSTTrainer.fit reads from TokenWindows
    windows = TokenWindows(_tokens(), batch_size=3)
    expected = torch.cat([windows.next_batch(2 * (L + 1)) for _ in range(3)])  # the 3 phase-1 steps
    got = [row["input_ids"] for row in stream][:9]
    assert all(torch.equal(a, b) for a, b in zip(got, expected))


def test_resume_from_a_trainer_checkpoint_equals_one_run(tmp_path):
    model = _qwen3()
    opt, sched = _optim(model)
    args = _args(tmp_path, 2, 1)
    args.save_strategy, args.save_steps = "steps", 2
    TSTHFTrainer(model=model, args=args, optimizers=(opt, sched), train_tokens=_tokens(), schedule=SCHEDULE,
                 context_len=L).train()
    resumed = _qwen3()
    opt2, sched2 = _optim(resumed)
    trainer = TSTHFTrainer(model=resumed, args=args, optimizers=(opt2, sched2), train_tokens=_tokens(),
                           schedule=SCHEDULE, context_len=L)
    trainer.train(resume_from_checkpoint=str(tmp_path / "hf" / "checkpoint-2"))  # resumes in phase 1
    assert _max_diff(model, resumed) < 1e-5


def test_eval_is_next_token_prediction(tmp_path):
    model = _qwen3()
    rows = [{"input_ids": r} for r in torch.randint(0, V, (4, L + 1), generator=torch.Generator().manual_seed(3))]
    args = _args(tmp_path, 2, 1, per_device_eval_batch_size=4)
    trainer = TSTHFTrainer(model=model, args=args, train_tokens=_tokens(), schedule=SCHEDULE, context_len=L,
                           eval_dataset=rows)
    loss = trainer.evaluate()["eval_loss"]
    ids = torch.stack([r["input_ids"] for r in rows])
    with torch.no_grad():
        logits = copy.deepcopy(model).eval()(input_ids=ids[:, :-1]).logits
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1))
    assert loss == pytest.approx(float(expected), rel=1e-5)


def test_bad_configuration_is_refused_by_name(tmp_path):
    model = _qwen3()
    with pytest.raises(ValueError, match="max_steps"):
        TSTHFTrainer(model=model, args=transformers.TrainingArguments(str(tmp_path), max_steps=T + 1, use_cpu=True,
                                                                      report_to=[]),
                     train_tokens=_tokens(), schedule=SCHEDULE, context_len=L)
    with pytest.raises(ValueError, match="context_len"):
        TSTHFTrainer(model=model, args=_args(tmp_path, 2, 1), train_tokens=_tokens(), schedule=SCHEDULE,
                     context_len=0)
    with pytest.raises(TypeError, match="schedule"):
        TSTHFTrainer(model=model, args=_args(tmp_path, 2, 1), train_tokens=_tokens(), schedule=(6, 2, 0.5),
                     context_len=L)
    with pytest.raises(ValueError, match="tokens"):
        TSTRowStream(_tokens()[:20], SCHEDULE, context_len=L, rows_per_step=4)
    with pytest.raises(ValueError, match="train_tokens or train_dataset"):
        TSTHFTrainer(model=model, args=_args(tmp_path, 2, 1), train_tokens=_tokens(), schedule=SCHEDULE,
                     context_len=L, train_dataset=TSTRowStream(_tokens(), SCHEDULE, context_len=L, rows_per_step=2))
    with pytest.raises(ValueError, match="rows_per_step"):
        TSTHFTrainer(model=model, args=_args(tmp_path, 2, 1), schedule=SCHEDULE, context_len=L,
                     train_dataset=TSTRowStream(_tokens(), SCHEDULE, context_len=L, rows_per_step=3))


def test_rows_of_the_wrong_phase_length_are_refused(tmp_path):
    model = _qwen3()
    rows = [{"input_ids": r} for r in torch.randint(0, V, (12, L + 1), generator=torch.Generator().manual_seed(4))]
    trainer = TSTHFTrainer(model=model, args=_args(tmp_path, 2, 1), train_dataset=rows, schedule=SCHEDULE,
                           context_len=L)
    with pytest.raises(ValueError, match="TSTRowStream"):
        trainer.train()


def test_two_processes_equal_one_process_with_the_same_global_batch(tmp_path):
    # torchrun, 2 gloo processes, 2 rows each: the row stream is sharded by rank (each rank its lanes), DDP
    # averages the gradients; the weights and the per-objective logs equal one process reading 4 rows a step
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from tst_hf_ddp_worker import hf_run

    single = hf_run(str(tmp_path / "one"))
    out = tmp_path / "ddp.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(Path(__file__).parent / "tst_hf_ddp_worker.py"), str(tmp_path / "two"), str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ddp = json.loads(out.read_text())
    assert ddp["world_size"] == 2 and single["world_size"] == 1
    assert [x is not None for x in ddp["mce_loss"]] == [True] * 3 + [False] * 3
    assert ddp["mce_loss"][:3] == pytest.approx(single["mce_loss"][:3], rel=1e-5)
    assert ddp["ntp_loss"][3:] == pytest.approx(single["ntp_loss"][3:], rel=1e-5)
    assert ddp["param_sum"] == pytest.approx(single["param_sum"], rel=1e-5, abs=1e-4)
    assert ddp["param_abs"] == pytest.approx(single["param_abs"], rel=1e-5)
    for name, values in single["params"].items():
        assert ddp["params"][name] == pytest.approx(values, rel=1e-4, abs=1e-5), name


def test_rank_shards_of_the_row_stream_are_the_global_rows():
    whole = [r["input_ids"] for r in TSTRowStream(_tokens(), SCHEDULE, context_len=L, rows_per_step=4,
                                                  block_len=256, seed=2)]
    parts = [[r["input_ids"] for r in TSTRowStream(_tokens(), SCHEDULE, context_len=L, rows_per_step=4,
                                                   block_len=256, seed=2, rank=k, world_size=2)] for k in (0, 1)]
    assert len(parts[0]) == len(parts[1]) == len(whole) // 2
    for step in range(T):
        mine = parts[0][2 * step:2 * step + 2] + parts[1][2 * step:2 * step + 2]
        assert all(torch.equal(a, b) for a, b in zip(mine, whole[4 * step:4 * step + 4]))
