"""Protocol 4: the word-order task and its ceiling precondition, PCA init and moment matching in the aligner,
the token-level (transformer) side network, the guarded server step, save/load and the PEFT-shaped config."""

from collections import Counter

import numpy as np
import pytest
import torch

from neurips26.claims import Evidence
from neurips26.mobillm import (
    FeatureAligner,
    SideNetwork,
    SideTuningConfig,
    SideTuningServer,
    check,
    load_side_model,
    save_side_model,
    shuffle_windows,
    word_order_passages,
)
from neurips26.mobillm.payload import ActivationPayload, quantize_absmax
from neurips26.mobillm.side import _moment_loss


# ------------------------------------------------------------------------------------ task and ceiling
def test_shuffle_windows_keeps_each_window_s_words():
    text = " ".join(f"w{i}" for i in range(10))
    out = shuffle_windows(text, 4, np.random.default_rng(0)).split()
    words = text.split()
    for s in range(0, 10, 4):
        assert Counter(out[s:s + 4]) == Counter(words[s:s + 4])
    assert out != words
    with pytest.raises(ValueError, match="window"):
        word_order_passages(n_train=8, n_test=8, window=1)


def test_word_order_passages_balanced_and_split_by_play():
    from neurips26.data.testing import require_dataset

    require_dataset("shakespeare")
    task = word_order_passages(n_train=60, n_test=30, n_val=30, words=12, seed=1)
    train, test, val = set(task["train_plays"]), set(task["test_plays"]), set(task["val_plays"])
    assert not (train & test) and not (train & val) and not (test & val)
    assert len(test) == 9 and len(val) == 3  # 3 held out per Folio group for test, 1 for validation
    for part in ("train", "test", "val"):
        texts, y = task[part]
        assert len(texts) == len(y) and abs(int(y.sum()) - len(y) // 2) <= 1
        assert all(len(t.split()) == 12 for t in texts)


def test_ceiling_preconditions_refuse_the_old_task_and_accept_headroom():
    # protocol 3's comedy/tragedy probe (0.52) and SmolLM2's last-token probe (0.73) are refused
    assert check.HEADROOM.rule(Evidence(values=[0.523], unit="accuracy")).label != "supported"
    assert check.MIX_HEADROOM.rule(Evidence(values=[0.92, 0.73], unit="accuracy")).label != "supported"
    assert check.MIX_HEADROOM.rule(Evidence(values=[0.92, 0.95], unit="accuracy")).label == "supported"


# ------------------------------------------------------------------------------------ aligner
def test_pca_init_sets_orthogonal_rows_once_and_random_init_does_nothing():
    torch.manual_seed(0)
    a = FeatureAligner(3, 12, 3, 6, window=1).train()
    h = torch.randn(20, 3, 12) * torch.linspace(0.1, 3.0, 12)  # anisotropic: PCA has a direction to find
    before = [p.weight.detach().clone() for p in a.proj]
    assert a.pca_init_(h) == 6 and bool(a.initialised)
    for p, b in zip(a.proj, before):
        w = p.weight.detach()
        unit = w / w.norm(dim=1, keepdim=True)
        torch.testing.assert_close(unit @ unit.T, torch.eye(6), atol=1e-4, rtol=0)  # principal directions
        torch.testing.assert_close(w.norm(dim=1), b.norm(dim=1))                    # scale of the random rows
    snapshot = [p.weight.detach().clone() for p in a.proj]
    assert a.pca_init_(torch.randn(20, 3, 12)) == 0  # idempotent
    assert all(torch.equal(p.weight, s) for p, s in zip(a.proj, snapshot))
    r = FeatureAligner(3, 12, 3, 6, init="random")
    assert bool(r.initialised) and r.pca_init_(h) == 0
    with pytest.raises(ValueError, match="init"):
        FeatureAligner(3, 12, 3, 6, init="svd")


def test_pca_init_refuses_non_finite_features_without_moving():
    a = FeatureAligner(2, 5, 2, 4)
    h = torch.randn(8, 2, 5)
    h[0, 0, 0] = float("nan")
    w = a.proj[0].weight.detach().clone()
    with pytest.raises(ValueError, match="finite values"):
        a.pca_init_(h)
    assert torch.equal(a.proj[0].weight, w) and not bool(a.initialised)


def test_moment_loss_zero_for_equal_moments_positive_for_a_shift():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(16, 2, 4, generator=g)
    y = torch.tensor([0, 1] * 8)
    assert float(_moment_loss([(z, y, None), (z.clone(), y, None)])) == pytest.approx(0.0, abs=1e-7)
    assert float(_moment_loss([(z, y, None), (z + 1.0, y, None)])) == pytest.approx(1.0, rel=1e-5)
    # a class with one sample per group is skipped: nothing to compare
    assert float(_moment_loss([(z[:1], y[:1], None), (z[:1] + 1, y[:1], None)])) == 0.0


# ------------------------------------------------------------------------------------ token-level side network
def test_token_level_side_network_ignores_padded_tokens():
    torch.manual_seed(0)
    side = SideNetwork(d_side=8, n_layers=2, block="transformer", n_heads=2).eval()
    z = torch.randn(3, 2, 5, 8)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=torch.bool)
    out = side(z, mask)
    z2 = z.clone()
    z2[:, :, :, :][~mask[:, None, :, None].expand_as(z)] = 100.0  # garbage in the padding only
    torch.testing.assert_close(side(z2, mask), out)
    assert out.shape == (3, 2)


# ------------------------------------------------------------------------------------ guarded server step
def _payload(x: torch.Tensor, y: torch.Tensor, *, btype: str = "a", device_id: int = 0, seq: int = 0):
    return ActivationPayload(parts=quantize_absmax(x, 32), shape=tuple(x.shape), quant_bits=32, labels=y,
                             sample_ids=torch.arange(len(y)), backbone_type=btype, device_id=device_id, seq=seq,
                             positions="mean")


def test_a_failed_step_leaves_weights_optimizer_pca_state_and_modes_unchanged():
    torch.manual_seed(0)
    side = SideNetwork(d_side=4, n_layers=2)
    srv = SideTuningServer(side, {"a": FeatureAligner(2, 6, 2, 4)}, lr=1e-2)
    srv.receive(_payload(torch.randn(8, 2, 6), torch.tensor([0, 1] * 4)))  # one good step: Adam has state
    srv.trainable.eval()
    fresh = FeatureAligner(2, 6, 2, 4)
    srv2 = SideTuningServer(SideNetwork(d_side=4, n_layers=2), {"a": fresh}, lr=1e-2)
    with torch.no_grad():
        srv2.side.head.weight.fill_(float("nan"))  # every loss is NaN
    state = {k: v.clone() for k, v in srv2.trainable.state_dict().items()}
    with pytest.raises(FloatingPointError, match="non-finite"):
        srv2.receive(_payload(torch.randn(8, 2, 6), torch.tensor([0, 1] * 4), seq=1))
    after = srv2.trainable.state_dict()
    for k, v in state.items():
        assert torch.equal(after[k], v) or (torch.isnan(v).all() and torch.isnan(after[k]).all()), k
    assert not bool(fresh.initialised) and srv2.steps == 0 and not srv2.processed and not srv2.cache
    assert not srv2.optimizer.state  # AdamW never stepped


# ------------------------------------------------------------------------------------ save / load, config
def test_save_load_round_trip_and_peft_shaped_config(tmp_path):
    cfg = SideTuningConfig(d_side=8, n_layers=2, backbones={"a": {"n_layers": 3, "d_model": 6, "layers": [1, 2, 3]},
                                                            "b": {"n_layers": 2, "d_model": 10}})
    assert cfg.peft_type == "SIDE_TUNING" and cfg.task_type == "SEQ_CLS"
    assert SideTuningConfig.from_dict(cfg.to_dict()) == cfg
    torch.manual_seed(0)
    side, aligners = cfg.build()
    srv = SideTuningServer(side, aligners, lr=1e-2)
    srv.receive(_payload(torch.randn(8, 3, 6), torch.tensor([0, 1] * 4)))  # moves weights, PCA, statistics
    save_side_model(tmp_path / "m", side, aligners, cfg)
    side2, aligners2, cfg2 = load_side_model(tmp_path / "m")
    assert cfg2 == cfg and cfg2.backbones["a"]["layers"] == [1, 2, 3]
    x = torch.randn(5, 3, 6)
    side.eval(), aligners["a"].eval()
    torch.testing.assert_close(side2(aligners2["a"](x)), side(aligners["a"](x)))
    assert bool(aligners2["a"].initialised) and not bool(aligners2["b"].initialised)
    assert int(aligners2["a"].batches_seen) == int(aligners["a"].batches_seen)


def test_save_refuses_modules_that_do_not_match_the_config_and_writes_nothing(tmp_path):
    cfg = SideTuningConfig(d_side=8, n_layers=2, backbones={"a": {"n_layers": 3, "d_model": 6}})
    side, aligners = cfg.build()
    with pytest.raises(ValueError, match="backbone types"):
        save_side_model(tmp_path / "x", side, {}, cfg)
    with pytest.raises(ValueError, match="does not match"):
        save_side_model(tmp_path / "x", SideNetwork(d_side=8, n_layers=3), aligners, cfg)
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match="unknown fields"):
        SideTuningConfig.from_dict({**cfg.to_dict(), "rank": 8})
    with pytest.raises(ValueError, match="d_model"):
        SideTuningConfig(backbones={"a": {"n_layers": 3}})
    with pytest.raises(FileNotFoundError):
        load_side_model(tmp_path / "nothing")
