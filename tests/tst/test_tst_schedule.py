"""TSTSchedule phase boundaries, row lengths, the PatchTrain preset, WSD, and bad input."""

import pytest

from neurips26.tst import TSTSchedule, wsd_lr_lambda


@pytest.mark.parametrize("T, r", [(10, 0.3), (600, 0.3), (7, 0.5), (9, 0.25), (100, 0.0), (3, 0.99)])
def test_switch_at_round_r_T(T, r):
    sch = TSTSchedule(T, 4, r)
    k = round(r * T)
    assert sch.switch_step == k
    phases = [sch.phase(t) for t in range(T)]
    assert phases == ["superposition"] * k + ["recovery"] * (T - k)


def test_raw_tokens_per_row():
    sch = TSTSchedule(10, 4, 0.3)
    assert sch.raw_tokens_per_row(0, 128) == 4 * 129
    assert sch.raw_tokens_per_row(3, 128) == 129


def test_patch_level_preset_reads_two_thirds_of_data_in_patch_mode():
    T, K = 900, 4
    sch = TSTSchedule.patch_level(T, K=K)
    assert sch.bag_size == K and sch.superposition_fraction == pytest.approx(1 / 3)
    r = sch.superposition_fraction
    assert r * K / (r * K + 1 - r) == pytest.approx(2 / 3)


@pytest.mark.parametrize("args, exc, match", [
    ((10, 0, 0.3), ValueError, "bag_size"),
    ((10, 2.5, 0.3), TypeError, "bag_size"),
    ((10, 4, 1.0), ValueError, "superposition_fraction"),
    ((10, 4, -0.1), ValueError, "superposition_fraction"),
    ((10, 4, float("nan")), ValueError, "superposition_fraction"),
    ((0, 4, 0.3), ValueError, "total_steps"),
])
def test_bad_schedule(args, exc, match):
    with pytest.raises(exc, match=match):
        TSTSchedule(*args)


def test_bad_step_and_context():
    sch = TSTSchedule(10)
    with pytest.raises(ValueError, match="step"):
        sch.phase(-1)
    with pytest.raises(ValueError, match="context_len"):
        sch.raw_tokens_per_row(0, 0)


def test_wsd():
    f = wsd_lr_lambda(100, warmup_fraction=0.05, decay_fraction=0.2)
    assert f(0) == pytest.approx(0.2) and f(4) == pytest.approx(1.0)
    assert f(50) == 1.0 and f(79) == 1.0
    assert f(80) == pytest.approx(1.0) and f(90) == pytest.approx(0.5) and f(99) == pytest.approx(0.05)
    with pytest.raises(ValueError):
        wsd_lr_lambda(100, warmup_fraction=0.9, decay_fraction=0.2)


def _wsd_closed_form(step: int, total: int, warmup_fraction: float, decay_fraction: float) -> float:
    """The WSD multiplier written out independently: ramp (t+1)/W, flat 1, linear decay (T-t)/D."""
    warmup = max(1, round(warmup_fraction * total)) if warmup_fraction > 0 else 0
    decay = round(decay_fraction * total)
    if step < warmup:
        return (step + 1) / warmup
    if decay > 0 and step >= total - decay:
        return max(0.0, (total - step) / decay)
    return 1.0


@pytest.mark.parametrize("total", [1, 2, 7, 40, 100, 240, 401])
@pytest.mark.parametrize("warmup_fraction,decay_fraction", [(0.05, 0.2), (0.0, 0.2), (0.25, 0.25), (0.1, 0.0),
                                                             (0.0, 1.0), (0.5, 0.5)])
def test_wsd_is_nn_train_wsd_on_a_grid(total, warmup_fraction, decay_fraction):
    """tst's multiplier equals nn.train's WSD schedule (and the closed form) at every step, bit for bit."""
    from neurips26.nn.train import lr_at, lr_lambda

    ours = wsd_lr_lambda(total, warmup_fraction=warmup_fraction, decay_fraction=decay_fraction)
    warmup = max(1, round(warmup_fraction * total)) if warmup_fraction > 0 else 0
    shared = lr_lambda(total_steps=total, schedule="wsd", warmup_steps=warmup, decay_fraction=decay_fraction)
    for step in range(total):
        expected = _wsd_closed_form(step, total, warmup_fraction, decay_fraction)
        assert ours(step) == shared(step) == expected
        assert lr_at(step, total_steps=total, peak_lr=3e-3, schedule="wsd", warmup_steps=warmup,
                     decay_fraction=decay_fraction) == pytest.approx(3e-3 * expected, rel=1e-15)
