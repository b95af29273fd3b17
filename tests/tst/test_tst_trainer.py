"""TSTTrainer: phase switch at round(r·T), the phase-1 loss against a naive computation, state kept
across the switch, ablations, checkpoint/resume == uninterrupted run, refusals, DDP (2 processes)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.nn import Llama, LlamaConfig, TokenWindows
from neurips26.tst import TSTSchedule, TSTTrainer, make_trainer, wsd_lr_lambda

V = 47


def _model(seed=0, tie=True):
    torch.manual_seed(seed)
    return Llama(LlamaConfig(vocab_size=V, d_model=32, n_layers=2, n_heads=4, max_seq_len=32,
                             tie_embeddings=tie))


def _tokens(n=3000, seed=1):
    return torch.randint(0, V, (n,), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("T, r", [(10, 0.3), (7, 0.5), (5, 0.0)])
def test_switches_exactly_at_round_r_T_with_equal_positions(T, r):
    model = _model()
    trainer = TSTTrainer(model, torch.optim.AdamW(model.parameters(), 1e-3), TSTSchedule(T, 3, r), context_len=6)
    hist = trainer.fit(TokenWindows(_tokens(), batch_size=2))
    k = round(r * T)
    assert [h["phase"] for h in hist] == ["superposition"] * k + ["recovery"] * (T - k)
    assert [h["objective"] for h in hist] == ["mce"] * k + ["ce"] * (T - k)
    assert [h["raw_tokens"] for h in hist] == [2 * 3 * 7] * k + [2 * 7] * (T - k)
    assert {h["positions"] for h in hist} == {2 * 6}  # equal FLOPs per step


def test_phase1_loss_matches_naive_bag_mean_and_mean_of_s_ces():
    model = _model(tie=False)
    ref = _model(tie=False)
    s, L = 4, 5
    ids = _tokens(2 * s * (L + 1)).view(2, -1)
    trainer = TSTTrainer(model, torch.optim.SGD(model.parameters(), 0.0), TSTSchedule(4, s, 0.5), context_len=L)
    got = trainer.train_step(ids)["loss"]
    E = ref.embed_tokens.weight
    h = torch.stack([torch.stack([sum(E[ids[b, j * s + k]] for k in range(s)) / s for j in range(L)])
                     for b in range(2)])
    with torch.no_grad():
        logits = ref(inputs_embeds=h, position_ids=torch.arange(L).expand(2, L))
        want = sum(F.cross_entropy(logits.reshape(-1, V), torch.stack(
            [ids[b, [(j + 1) * s + k for j in range(L)]] for b in range(2)]).reshape(-1)) for k in range(s)) / s
    assert got == pytest.approx(float(want), rel=1e-5)


def test_ablation_losses_match_naive_targets():
    s, L = 3, 6
    # output-only: tokens in, the next s tokens out
    model = _model()
    tr = make_trainer("output_only", model, torch.optim.SGD(model.parameters(), 0.0), total_steps=4, bag_size=s,
                      superposition_fraction=0.5, context_len=L)
    ids = _tokens(2 * (L + s)).view(2, L + s)
    assert tr.row_len(0) == L + s
    got = tr.train_step(ids)["loss"]
    with torch.no_grad():
        logits = _model()(ids[:, :L])
    want = sum(F.cross_entropy(logits.reshape(-1, V), ids[:, 1 + k:1 + k + L].reshape(-1)) for k in range(s)) / s
    assert got == pytest.approx(float(want), rel=1e-5)
    # input-only: bag means in, the first token of the next bag out (plain CE)
    model = _model()
    tr = make_trainer("input_only", model, torch.optim.SGD(model.parameters(), 0.0), total_steps=4, bag_size=s,
                      superposition_fraction=0.5, context_len=L)
    ids = _tokens(2 * s * (L + 1)).view(2, -1)
    rec = tr.train_step(ids)
    ref = _model()
    h = ref.embed_tokens.weight[ids.view(2, L + 1, s)[:, :L]].mean(2)
    with torch.no_grad():
        logits = ref(inputs_embeds=h)
    want = F.cross_entropy(logits.reshape(-1, V), ids.view(2, L + 1, s)[:, 1:, 0].reshape(-1))
    assert rec["objective"] == "ce" and rec["loss"] == pytest.approx(float(want), rel=1e-5)


def test_state_kept_across_switch_and_reinit_resets_it():
    for arm in ("tst", "reinit"):
        model = _model()
        opt = torch.optim.AdamW(model.parameters(), 1e-2)
        tr = make_trainer(arm, model, opt, total_steps=6, bag_size=2, superposition_fraction=0.5, context_len=5)
        data = TokenWindows(_tokens(), batch_size=2)
        tr.fit(data, until_step=3)
        emb = model.embed_tokens.weight
        before = emb.detach().clone()
        tr.fit(data, until_step=4)
        assert model.embed_tokens.weight is emb and model.lm_head.weight is emb  # same tensor, still tied
        steps = int(opt.state[emb]["step"])
        moved = (emb.detach() - before).abs().max().item()
        if arm == "tst":
            assert steps == 4 and moved < 0.05  # Adam moments continue; one small update
        else:
            assert steps == 1 and moved > 0.01  # fresh weights and fresh Adam state
            assert (before - emb.detach()).abs().mean() > 0.01


class _NoEmbeds(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 8)
        self.head = nn.Linear(8, V)

    def get_input_embeddings(self):
        return self.emb

    def forward(self, input_ids):
        return self.head(self.emb(input_ids))


def test_model_without_inputs_embeds_is_refused_but_ok_for_baseline():
    m = _NoEmbeds()
    with pytest.raises(TypeError, match="inputs_embeds"):
        TSTTrainer(m, torch.optim.SGD(m.parameters(), 0.1), TSTSchedule(10, 4, 0.3))
    tr = TSTTrainer(m, torch.optim.SGD(m.parameters(), 0.1), TSTSchedule(10, 4, 0.0), context_len=4)
    assert tr.train_step(_tokens(10).view(2, 5))["phase"] == "recovery"
    with pytest.raises(TypeError, match="model"):
        TSTTrainer(nn.Linear(2, 2), torch.optim.SGD(nn.Linear(2, 2).parameters(), 0.1), TSTSchedule(10))


def test_train_step_bad_input():
    model = _model()
    tr = TSTTrainer(model, torch.optim.SGD(model.parameters(), 0.1), TSTSchedule(4, 4, 0.5), context_len=5)
    with pytest.raises(ValueError, match=r"batch_ids must be .*\[B, 24\]"):
        tr.train_step(_tokens(2 * 20).view(2, 20))
    with pytest.raises(ValueError, match="step=3"):
        tr.train_step(_tokens(48).view(2, 24), step=3)
    free = TSTTrainer(model, torch.optim.SGD(model.parameters(), 0.1), TSTSchedule(4, 4, 0.5))
    with pytest.raises(ValueError, match="divide"):
        free.train_step(_tokens(2 * 22).view(2, 22))
    with pytest.raises(ValueError, match="shorter than two bags"):
        free.train_step(_tokens(2 * 3).view(2, 3))
    tr.fit(TokenWindows(_tokens(), batch_size=2))
    with pytest.raises(ValueError, match="past"):
        tr.train_step(_tokens(12).view(2, 6))


def _make(arm, seed, T=8):
    model = _model(seed)
    opt = torch.optim.AdamW(model.parameters(), 3e-3, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, wsd_lr_lambda(T, warmup_fraction=0.25, decay_fraction=0.25))
    tr = make_trainer(arm, model, opt, total_steps=T, bag_size=2, superposition_fraction=0.5, lr_scheduler=sched,
                      context_len=6)
    return tr, TokenWindows(_tokens(), batch_size=3, seed=5)


@pytest.mark.parametrize("arm, stop", [("tst", 2), ("tst", 4), ("reinit", 3), ("reinit", 4)])
def test_checkpoint_resume_reproduces_uninterrupted_run(tmp_path, arm, stop):
    tr, data = _make(arm, 0)
    full = [h["loss"] for h in tr.fit(data)]
    final = {k: v.clone() for k, v in tr.model.state_dict().items()}

    tr1, data1 = _make(arm, 0)
    first = [h["loss"] for h in tr1.fit(data1, until_step=stop)]
    path = tr1.save_checkpoint(tmp_path / "ck.pt", data=data1)
    tr2, data2 = _make(arm, 123)  # different initial weights: everything must come from the checkpoint
    tr2.load_checkpoint(path, data=data2)
    assert tr2.step == stop
    rest = [h["loss"] for h in tr2.fit(data2)]
    assert first + rest == pytest.approx(full, rel=1e-6, abs=1e-7)
    for k, v in tr2.model.state_dict().items():
        torch.testing.assert_close(v, final[k])
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_resume_with_other_schedule_is_refused(tmp_path):
    tr, data = _make("tst", 0)
    tr.fit(data, until_step=2)
    path = tr.save_checkpoint(tmp_path / "ck.pt", data=data)
    model = _model()
    other = TSTTrainer(model, torch.optim.AdamW(model.parameters()), TSTSchedule(8, 2, 0.25), context_len=6)
    with pytest.raises(ValueError, match="schedule"):
        other.load_checkpoint(path)
    tr_ntp, _ = _make("reinit", 0)
    with pytest.raises(ValueError, match="refusing"):
        tr_ntp.load_checkpoint(path)


def test_hugging_face_llama_from_config_through_both_phases():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   tie_word_embeddings=True)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), 1e-2)
    tr = TSTTrainer(model, opt, TSTSchedule(6, 2, 0.5), context_len=8)
    emb = model.get_input_embeddings().weight
    hist = tr.fit(TokenWindows(_tokens(), batch_size=2))
    assert [h["phase"] for h in hist] == ["superposition"] * 3 + ["recovery"] * 3
    assert all(torch.isfinite(torch.tensor(h["loss"])) for h in hist)
    assert model.get_input_embeddings().weight is emb and int(opt.state[emb]["step"]) == 6
    # the phase-1 loss equals the MCE computed by hand through the HF forward
    s, L = 2, 8
    ids = _tokens(2 * s * (L + 1), seed=9).view(2, -1)
    probe = TSTTrainer(model, torch.optim.SGD(model.parameters(), 0.0), TSTSchedule(2, s, 0.5), context_len=L)
    got = probe.train_step(ids)["loss"]
    bags = ids.view(2, L + 1, s)
    with torch.no_grad():
        logits = model(inputs_embeds=emb[bags[:, :L]].mean(2), position_ids=torch.arange(L)[None].expand(2, L),
                       use_cache=False).logits
    want = sum(F.cross_entropy(logits.reshape(-1, V), bags[:, 1:, k].reshape(-1)) for k in range(s)) / s
    assert got == pytest.approx(float(want), rel=1e-5)


@pytest.mark.parametrize("untied", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_ddp_two_processes_equal_one_process(tmp_path, monkeypatch, untied):
    # untied: the input embedding is used only outside the DDP forward in phase 1 (still all-reduced)
    monkeypatch.setenv("TST_DDP_UNTIED", "1" if untied else "0")
    sys.path.insert(0, str(Path(__file__).parent))
    from tst_ddp_worker import toy_run

    single = toy_run()
    out = tmp_path / "ddp.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(Path(__file__).parent / "tst_ddp_worker.py"), str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ddp = json.loads(out.read_text())
    assert ddp["phase"] == single["phase"] == ["superposition"] * 2 + ["recovery"] * 2
    assert ddp["raw_tokens"] == single["raw_tokens"]
    assert ddp["loss"] == pytest.approx(single["loss"], rel=1e-5)
    assert ddp["param_sum"] == pytest.approx(single["param_sum"], rel=1e-5, abs=1e-4)
    assert ddp["param_abs"] == pytest.approx(single["param_abs"], rel=1e-5)


def test_a_failed_fit_restores_weights_optimizer_step_scheduler_and_data():
    # nn.train.TrainingGuard around fit: all or nothing
    model = _model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, wsd_lr_lambda(6))
    trainer = TSTTrainer(model, opt, TSTSchedule(6, 2, 0.5), lr_scheduler=sched, context_len=8)
    data = TokenWindows(_tokens(), batch_size=4)
    trainer.fit(data, until_step=1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    data_before, sched_before = data.state_dict(), sched.state_dict()

    def boom(tr, record):
        if tr.step == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        trainer.fit(data, callback=boom)
    assert trainer.step == 1 and data.state_dict() == data_before and sched.state_dict() == sched_before
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    trainer.fit(data)  # resumes from step 1
    assert trainer.step == 6
