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
