"""The decoder and baselines: causality, equal core parameters for all D, input errors, the energy count
by hand, the generator, the Willett .mat loader, and a tiny training run."""

import numpy as np
import pytest
import torch

from neurips26.snndelay import (
    SIL,
    FrameStackMLP,
    GRUDecoder,
    ResidualDelaySNN,
    TCNDecoder,
    count_core_params,
    estimate_energy,
    evaluate,
    load_willett2023,
    matched_width,
    synthetic_speech_bci,
    train_ctc,
)


def _models():
    torch.manual_seed(0)
    return {
        "snn_d0": ResidualDelaySNN(6, 16, 2, max_delay=0, n_days=2),
        "snn_d4": ResidualDelaySNN(6, 16, 2, max_delay=4, n_days=2),
        "gru": GRUDecoder(6, 12, 2, n_days=2),
        "tcn": TCNDecoder(6, 12, n_days=2),
        "mlp": FrameStackMLP(6, 12, 2, stack=4, n_days=2),
    }


@pytest.mark.parametrize("name", ["snn_d0", "snn_d4", "gru", "tcn", "mlp"])
def test_causal_in_eval_mode(name):
    model = _models()[name].double().eval()
    x = torch.randn(2, 20, 6, dtype=torch.float64, requires_grad=True)
    day = torch.tensor([0, 1])
    logits = model(x, day)
    assert logits.shape == (2, 20, 41)
    logits[:, :9].sum().backward()
    assert torch.all(x.grad[:, 9:] == 0)
    x2 = x.detach().clone()
    x2[:, 9:] = torch.randn(2, 11, 6, dtype=torch.float64) * 5
    torch.testing.assert_close(model(x2, day)[:, :9], logits[:, :9].detach())


def test_bidirectional_gru_sees_the_future():
    model = GRUDecoder(6, 8, 1, bidirectional=True).eval()
    x = torch.randn(1, 10, 6)
    x2 = x.clone()
    x2[:, 8:] += 3.0
    assert not torch.allclose(model(x)[:, :5], model(x2)[:, :5])


def test_core_params_equal_for_all_delays_and_exclude_day_layers():
    counts = {d: count_core_params(ResidualDelaySNN(128, 128, 3, max_delay=d, n_days=4)) for d in (0, 1, 2, 4, 8, 16)}
    assert len(set(counts.values())) == 1
    # F·N + N (stem) + L(N² + N) (synapses) + 2N(L+1) (LayerNorms) + 41N + 41 (readout)
    f, n, layers = 128, 128, 3
    assert counts[0] == f * n + n + layers * (n * n + n) + 2 * n * (layers + 1) + 41 * n + 41
    full = ResidualDelaySNN(128, 128, 3, max_delay=8, n_days=4)
    assert sum(p.numel() for p in full.parameters()) - counts[0] == 4 * (128 * 128 + 128)


def test_matched_width_is_closest():
    for kind in ("gru", "tcn", "mlp"):
        w = matched_width(kind, 20, 30_000)
        from neurips26.snndelay import build_decoder

        c = [abs(count_core_params(build_decoder(kind, 20, v)) - 30_000) for v in (w - 1, w, w + 1)]
        assert c[1] == min(c)


def test_input_errors():
    model = ResidualDelaySNN(6, 8, 1, n_days=2)
    x = torch.randn(2, 5, 6)
    with pytest.raises(ValueError, match=r"\[B, T, 6\]"):
        model(torch.randn(2, 5, 7), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"\[B, T, 6\]"):
        model(torch.randn(5, 6), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"0\.\.1"):
        model(x, torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="required"):
        model(x)
    with pytest.raises(ValueError, match="integer"):  # a wrong dtype is a value error (neurips26.constraints)
        model(x, torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="finite"):
        model(torch.full((2, 5, 6), float("nan")), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="max_delay"):
        ResidualDelaySNN(6, 8, 1, max_delay=-1)
    with pytest.raises(ValueError, match="beta"):
        ResidualDelaySNN(6, 8, 1, beta=1.2)


def test_energy_counts_by_hand():
    torch.manual_seed(1)
    model = ResidualDelaySNN(4, 5, 2, max_delay=3, n_days=1, smooth_sigma=0.0).eval()
    x = torch.randn(2, 7, 4) * 3
    lengths = [7, 5]
    with torch.no_grad():
        logits, spikes = model(x, return_spikes=True)
    mask = (torch.arange(7)[None] < torch.tensor(lengths)[:, None]).float()[..., None]
    # inputs of the delayed layers: h_0, h_0 + s_1 (block 2), h_2 = h_0 + s_1 + s_2 (readout)
    h = [spikes[0], spikes[0] + spikes[1], spikes[0] + spikes[1] + spikes[2]]
    sops = sum(float((hi * mask).sum()) * fan for hi, fan in zip(h, (5, 5, 41)))
    bins = 12
    macs = bins * (4 * 4 + 4 * 5)  # per-day layer F² + stem F·N
    e = estimate_energy(model, x, lengths=lengths, e_mac=4.6e-12, e_ac=0.9e-12)
    assert e["sops"] == pytest.approx(sops) and e["macs"] == pytest.approx(macs) and e["bins"] == bins
    assert e["joules"] == pytest.approx(0.9e-12 * sops + 4.6e-12 * macs)
    assert e["delay_buffer_entries"] == 3 * 5 * 4
    gru = GRUDecoder(4, 6, 2)
    e_gru = estimate_energy(gru, x)
    per_bin = 16 + 3 * (4 * 6 + 36 + 12) + 3 * (6 * 6 + 36 + 12) + 6 * 41
    assert e_gru["macs_per_bin"] == per_bin and e_gru["sops"] == 0


def test_synthetic_generator_properties():
    d = synthetic_speech_bci(n_sentences=12, n_channels=8, sigma=2.0, lead=3, n_days=3, seed=5)
    assert len(d) == 12 and d.n_features == 16 and d.n_days == 3
    assert d.info["horizon"] == pytest.approx(3 + 6.0)
    for f, p, fl in zip(d.features, d.phonemes, d.frame_labels):
        assert f.dtype == np.float32 and f.shape[0] == len(fl) and np.isfinite(f).all()
        assert p[-1] == SIL and p.min() >= 1 and p.max() <= SIL
        # frame labels collapse to the phoneme sequence (adjacent equal phonemes merge)
        runs = [v for k, v in enumerate(fl) if k == 0 or v != fl[k - 1]]
        merged = [v for k, v in enumerate(p) if k == 0 or v != p[k - 1]]
        assert runs == merged
    for day in range(3):  # per-day z-scoring
        cat = np.concatenate([f for f, dd in zip(d.features, d.day) if dd == day])
        np.testing.assert_allclose(cat.mean(0), 0, atol=1e-4)
    again = synthetic_speech_bci(n_sentences=12, n_channels=8, sigma=2.0, lead=3, n_days=3, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(d.features, again.features))
    other = synthetic_speech_bci(n_sentences=12, n_channels=8, sigma=2.0, lead=3, n_days=3, seed=6)
    assert not np.array_equal(d.features[0][:5], other.features[0][:5])
    with pytest.raises(ValueError, match="sigma"):
        synthetic_speech_bci(4, 8, sigma=-1.0)
    with pytest.raises(ValueError, match="n_days"):
        synthetic_speech_bci(4, 8, n_days=0)


def test_load_willett2023_on_tiny_mat(tmp_path):
    scipy_io = pytest.importorskip("scipy.io")
    rng = np.random.default_rng(0)
    n = 3
    tx = np.empty((1, n), dtype=object)
    sp = np.empty((1, n), dtype=object)
    for i in range(n):
        tx[0, i] = rng.poisson(1.0, size=(10 + i, 256)).astype(float)
        sp[0, i] = rng.normal(size=(10 + i, 256))
    text = np.array(["hi there", "hi", "zzyzx"], dtype=object)
    scipy_io.savemat(tmp_path / "t12.2022.04.28.mat",
                     {"tx1": tx, "spikePow": sp, "sentenceText": text, "blockIdx": np.array([[1], [1], [2]])})
    lex = {"hi": [["HH", "AY1"]], "there": [["DH", "EH1", "R"]]}
    data = load_willett2023(tmp_path, lexicon=lex)
    assert len(data) == 2 and data.info["dropped_oov"] == 1 and data.text == ["hi there", "hi"]
    from neurips26.snndelay import PHONEMES

    ids = {p: i + 1 for i, p in enumerate(PHONEMES)}
    assert data.phonemes[0].tolist() == [ids["HH"], ids["AY"], SIL, ids["DH"], ids["EH"], ids["R"], SIL]
    assert data.features[0].shape == (10, 256) and data.features[1].shape == (11, 256)
    raw = np.concatenate([tx[0, 0][:, :128], sp[0, 0][:, :128]], 1)
    both = np.concatenate([raw, np.concatenate([tx[0, 1][:, :128], sp[0, 1][:, :128]], 1)])
    np.testing.assert_allclose(data.features[0], (raw - both.mean(0)) / both.std(0), rtol=1e-4, atol=1e-4)
    with pytest.raises(FileNotFoundError):
        load_willett2023(tmp_path / "missing")


def test_tiny_training_run_lowers_ctc_loss():
    torch.manual_seed(0)
    data = synthetic_speech_bci(n_sentences=24, n_channels=8, sigma=1.0, lead=1, n_days=2, seed=0, words=(1, 2))
    model = ResidualDelaySNN(16, 24, 1, max_delay=2, n_days=2)
    before = evaluate(model, data).loss
    res = train_ctc(model, data, steps=40, batch_size=8, lr=5e-3, seed=0)
    after = evaluate(model, data)
    assert res.steps == 40 and len(res.losses) == 40
    assert after.loss < before and 0.0 <= after.per <= 1.0 + 1e-9
    with pytest.raises(ValueError, match="batch_size"):
        train_ctc(model, data, steps=1, batch_size=100)


def test_causal_smoothing_matches_direct_sum():
    from neurips26.snndelay import CausalGaussianSmoothing

    sm = CausalGaussianSmoothing(1.5).double()
    x = torch.randn(2, 9, 3, dtype=torch.float64)
    m = np.arange(6)
    w = np.exp(-(m**2) / (2 * 1.5**2))
    ref = np.zeros((2, 9, 3))
    for t in range(9):
        lags = [k for k in m if t - k >= 0]
        ref[:, t] = sum(w[k] * x[:, t - k].numpy() for k in lags) / sum(w[k] for k in lags)
    np.testing.assert_allclose(sm(x).numpy(), ref, rtol=1e-6)  # kernel stored in float32
    assert torch.equal(CausalGaussianSmoothing(0.0)(x), x)
