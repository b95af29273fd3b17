"""snndelay's error contract (issue 16): every public entry point refuses bad input by name (NaN included),
never hangs, and a failed call leaves the model (weights, mode) and the data exactly as they were."""

import math

import numpy as np
import pytest
import torch

from _badinput import BadInput, check_bad_inputs
from neurips26.snndelay import (
    LIF,
    CausalGaussianSmoothing,
    DayInputLayer,
    DelayedLinear,
    FrameStackMLP,
    GRUDecoder,
    ResidualDelaySNN,
    SpeechBCIData,
    TCNDecoder,
    boundary_uncertainty,
    build_decoder,
    count_core_params,
    ctc_forced_align,
    ctc_greedy_decode,
    ctc_loss,
    ctc_min_length,
    delayed_linear_reference,
    draw_delays,
    edit_distance,
    estimate_energy,
    evaluate,
    lif,
    lif_reference,
    load_willett2023,
    make_batch,
    matched_width,
    phoneme_error_rate,
    synthetic_speech_bci,
    train_ctc,
)

pytestmark = pytest.mark.timeout(30)
NAN, INF = math.nan, math.inf


def _x(b=2, t=12, f=6, seed=0):
    return torch.randn(b, t, f, generator=torch.Generator().manual_seed(seed))


X = _x()
XNAN = X.clone()
XNAN[0, 3, 1] = NAN
DAY = torch.tensor([0, 1])


def _models():
    torch.manual_seed(0)
    return {
        "snn": ResidualDelaySNN(6, 8, 2, max_delay=3, n_days=2),
        "gru": GRUDecoder(6, 8, 1, n_days=2),
        "tcn": TCNDecoder(6, 8, n_days=2, dilations=(1, 2)),
        "mlp": FrameStackMLP(6, 8, 1, stack=3, n_days=2),
    }


FORWARD_CASES = [
    BadInput("nan", (XNAN, DAY), names="x"),
    BadInput("inf", (X * INF, DAY), names="x"),
    BadInput("2-d", (X[0], DAY), names="x"),
    BadInput("width", (X[..., :5], DAY), names="x"),
    BadInput("int", (X.long(), DAY), names="x"),
    BadInput("numpy", (X.numpy(), DAY), names="x"),
    BadInput("empty-T", (X[:, :0], DAY), names="x"),
    BadInput("day-out", (X, torch.tensor([0, 2])), names="day_idx"),
    BadInput("day-neg", (X, torch.tensor([-1, 0])), names="day_idx"),
    BadInput("day-float", (X, torch.tensor([0.0, 1.0])), names="day_idx"),
    BadInput("day-shape", (X, torch.tensor([0])), names="day_idx"),
    BadInput("day-missing", (X, None), names="day_idx"),
]


@pytest.mark.parametrize("kind", ["snn", "gru", "tcn", "mlp"])
@pytest.mark.parametrize("case", FORWARD_CASES, ids=lambda c: c.id)
def test_decoders_refuse_and_keep_state(kind, case):
    model = _models()[kind].train()
    check_bad_inputs(model, case, target=model)
    assert model.training


@pytest.mark.parametrize("make,kw,name", [
    (ResidualDelaySNN, {"n_in": 0}, "n_in"), (ResidualDelaySNN, {"hidden": 2.5}, "hidden"),
    (ResidualDelaySNN, {"n_classes": 1}, "n_classes"), (ResidualDelaySNN, {"max_delay": -1}, "max_delay"),
    (ResidualDelaySNN, {"beta": 0.0}, "beta"), (ResidualDelaySNN, {"beta": NAN}, "beta"),
    (ResidualDelaySNN, {"smooth_sigma": -1.0}, "smooth_sigma"), (ResidualDelaySNN, {"delay_dist": "normal"},
                                                                  "delay_dist"),
    (ResidualDelaySNN, {"delay_seed": -1}, "delay_seed"), (ResidualDelaySNN, {"n_days": 0}, "n_days"),
    (GRUDecoder, {"hidden": 0}, "hidden"), (GRUDecoder, {"n_classes": 0}, "n_classes"),
    (GRUDecoder, {"bidirectional": 1}, "bidirectional"), (GRUDecoder, {"smooth_sigma": NAN}, "smooth_sigma"),
    (TCNDecoder, {"channels": 0}, "channels"), (TCNDecoder, {"dilations": (1, 0)}, "dilations"),
    (TCNDecoder, {"dilations": ()}, "dilations"), (TCNDecoder, {"kernel": 0}, "kernel"),
    (TCNDecoder, {"n_classes": 1}, "n_classes"),
    (FrameStackMLP, {"stack": 0}, "stack"), (FrameStackMLP, {"n_layers": 0}, "n_layers"),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_decoder_constructors_refuse(make, kw, name):
    base = {ResidualDelaySNN: {"n_in": 6, "hidden": 8, "n_layers": 1}, GRUDecoder: {"n_in": 6, "hidden": 8},
            TCNDecoder: {"n_in": 6, "channels": 8}, FrameStackMLP: {"n_in": 6, "hidden": 8}}[make]
    check_bad_inputs(make, BadInput(name, (), {**base, **kw}, names=name))


def test_build_decoder_and_matched_width_refuse():
    check_bad_inputs(build_decoder, BadInput("kind", ("lstm", 6, 8), names="kind"))
    check_bad_inputs(build_decoder, BadInput("width", ("gru", 6, 0), names="hidden"))
    check_bad_inputs(matched_width, BadInput("budget", ("gru", 6, 0), names="budget"))
    check_bad_inputs(matched_width, BadInput("lo>hi", ("gru", 6, 100), {"lo": 50, "hi": 10}, names="lo"))
    check_bad_inputs(matched_width, BadInput("lo-0", ("gru", 6, 100), {"lo": 0}, names="lo"))
    check_bad_inputs(matched_width, BadInput("kind", ("lstm", 6, 100), names="kind"))
    check_bad_inputs(count_core_params, BadInput("model", ("gru",), names="model"))


# ------------------------------------------------------------------ layers
@pytest.mark.parametrize("case", [
    BadInput("nan", (torch.full((1, 4, 3), NAN),), names="current"),
    BadInput("2-d", (torch.zeros(4, 3),), names="current"),
    BadInput("int", (torch.zeros(1, 4, 3, dtype=torch.long),), names="current"),
    BadInput("list", ([[[0.0]]],), names="current"),
], ids=lambda c: c.id)
def test_lif_refuses(case):
    layer = LIF(0.8)
    check_bad_inputs(layer, case, target=layer)
    for fn in (lif, lif_reference):
        check_bad_inputs(fn, BadInput(case.id, case.args + (0.8,), names=case.names))


@pytest.mark.parametrize("fn", [lif, lif_reference], ids=lambda f: f.__name__)
@pytest.mark.parametrize("kw,name", [
    ({"beta": 0.0}, "beta"), ({"beta": 1.5}, "beta"), ({"beta": NAN}, "beta"), ({"beta": "0.8"}, "beta"),
    ({"beta": torch.tensor([0.5, 0.5])}, "beta"), ({"threshold": 0.0}, "threshold"),
    ({"threshold": NAN}, "threshold"), ({"slope": -1.0}, "slope"), ({"slope": INF}, "slope"),
], ids=str)
def test_lif_functions_refuse_parameters(fn, kw, name):
    kw = {"beta": 0.8, **kw}
    check_bad_inputs(fn, BadInput(name, (torch.zeros(1, 4, 3),), kw, names=name))


def test_lif_module_and_backend_refuse():
    for kw, name in [({"beta": 0.0}, "beta"), ({"threshold": NAN}, "threshold"), ({"threshold": INF}, "threshold"),
                     ({"slope": NAN}, "slope"), ({"backend": "cuda"}, "backend"), ({"learn_beta": 1}, "learn_beta"),
                     ({"detach_reset": "yes"}, "detach_reset")]:
        check_bad_inputs(LIF, BadInput(name, (), kw, names=name))
    check_bad_inputs(lif, BadInput("backend", (torch.zeros(1, 2, 2), 0.8), {"backend": "cuda"}, names="backend"))


@pytest.mark.parametrize("case", [
    BadInput("nan", (torch.full((1, 5, 4), NAN),), names="x"),
    BadInput("width", (torch.zeros(1, 5, 3),), names="x"),
    BadInput("1-d", (torch.zeros(4),), names="x"),  # 2-D [T, F] is accepted (any leading dimensions)
    BadInput("int", (torch.zeros(1, 5, 4, dtype=torch.long),), names="x"),
    BadInput("backend", (torch.zeros(1, 5, 4),), {"backend": "fft"}, names="backend"),
], ids=lambda c: c.id)
def test_delayed_linear_refuses_and_keeps_state(case):
    torch.manual_seed(0)
    layer = DelayedLinear(4, 3, 2)
    check_bad_inputs(layer, case, target=layer)


@pytest.mark.parametrize("case", [
    BadInput("x-nan", (torch.full((1, 5, 4), NAN), torch.zeros(3, 4), None, torch.zeros(3, 4, dtype=torch.long)),
             names="x"),
    BadInput("w-shape", (torch.zeros(1, 5, 4), torch.zeros(3, 5), None, torch.zeros(3, 4, dtype=torch.long)),
             names="weight"),
    BadInput("w-nan", (torch.zeros(1, 5, 4), torch.full((3, 4), NAN), None, torch.zeros(3, 4, dtype=torch.long)),
             names="weight"),
    BadInput("d-shape", (torch.zeros(1, 5, 4), torch.zeros(3, 4), None, torch.zeros(4, 3, dtype=torch.long)),
             names="delays"),
    BadInput("d-neg", (torch.zeros(1, 5, 4), torch.zeros(3, 4), None, -torch.ones(3, 4, dtype=torch.long)),
             names="delays"),
    BadInput("d-float", (torch.zeros(1, 5, 4), torch.zeros(3, 4), None, torch.zeros(3, 4)), names="delays"),
    BadInput("b-shape", (torch.zeros(1, 5, 4), torch.zeros(3, 4), torch.zeros(4), torch.zeros(3, 4, dtype=torch.long)),
             names="bias"),
], ids=lambda c: c.id)
def test_delayed_linear_reference_refuses(case):
    check_bad_inputs(delayed_linear_reference, case)


@pytest.mark.parametrize("case", [
    BadInput("out-0", (0, 4, 2), names="out_features"), BadInput("in-float", (3, 4.0, 2), names="in_features"),
    BadInput("D-neg", (3, 4, -1), names="max_delay"), BadInput("D-float", (3, 4, 2.0), names="max_delay"),
    BadInput("dist", (3, 4, 2), {"dist": "normal"}, names="dist"), BadInput("seed", (3, 4, 2), {"seed": -1},
                                                                            names="seed"),
], ids=lambda c: c.id)
def test_draw_delays_refuses(case):
    check_bad_inputs(draw_delays, case)


def test_delayed_linear_constructor_refuses():
    for args, kw, name in [((0, 3, 2), {}, "in_features"), ((4, 3, -1), {}, "max_delay"),
                           ((4, 3, 2), {"backend": "fft"}, "backend"), ((4, 3, 2), {"delay_dist": "x"}, "delay_dist"),
                           ((4, 3, 2), {"seed": "s"}, "seed"), ((4, 3, 2), {"bias": 1}, "bias")]:
        check_bad_inputs(DelayedLinear, BadInput(name, args, kw, names=name))


def test_day_layer_and_smoothing_refuse_and_keep_state():
    layer = DayInputLayer(6, 2)
    for case in [BadInput("nan", (XNAN, DAY), names="x"), BadInput("day-out", (X, torch.tensor([0, 5])),
                                                                   names="day_idx"),
                 BadInput("day-float", (X, DAY.float()), names="day_idx"), BadInput("width", (X[..., :3], DAY),
                                                                                  names="x")]:
        check_bad_inputs(layer, case, target=layer)
    for args, name in [((0, 2), "n_features"), ((6, 0), "n_days"), ((6.0, 2), "n_features")]:
        check_bad_inputs(DayInputLayer, BadInput(name, args, names=name))
    smooth = CausalGaussianSmoothing(2.0)
    for case in [BadInput("nan", (XNAN,), names="x"), BadInput("2-d", (X[0],), names="x"),
                 BadInput("int", (X.long(),), names="x")]:
        check_bad_inputs(smooth, case, target=smooth)
    for s in (NAN, -1.0, INF, "2"):
        check_bad_inputs(CausalGaussianSmoothing, BadInput(f"sigma={s!r}", (s,), names="sigma"))


# ------------------------------------------------------------------ CTC
LOGITS = torch.randn(2, 10, 41)


@pytest.mark.parametrize("case", [
    BadInput("nan", (torch.full((2, 10, 41), NAN), [[1, 2], [3]], [10, 10]), names="logits"),
    BadInput("2-d", (LOGITS[0], [[1, 2], [3]], [10, 10]), names="logits"),
    BadInput("list", (LOGITS.tolist(), [[1, 2], [3]], [10, 10]), names="logits"),
    BadInput("label-0", (LOGITS, [[0, 2], [3]], [10, 10]), names="targets"),
    BadInput("label-41", (LOGITS, [[41], [3]], [10, 10]), names="targets"),
    BadInput("label-float", (LOGITS, [[1.5], [3]], [10, 10]), names="targets"),
    BadInput("empty-target", (LOGITS, [[], [3]], [10, 10]), names="targets"),
    BadInput("batch", (LOGITS, [[1]], [10]), names="targets"),
    BadInput("too-short", (LOGITS, [[1, 1, 1, 1, 1, 1], [3]], [10, 10]), names="input_lengths"),
    BadInput("len-big", (LOGITS, [[1], [3]], [11, 10]), names="input_lengths"),
    BadInput("len-0", (LOGITS, [[1], [3]], [0, 10]), names="input_lengths"),
    BadInput("len-empty", (LOGITS, [[1], [3]], []), names="input_lengths"),
    BadInput("len-float", (LOGITS, [[1], [3]], [9.5, 10]), names="input_lengths"),
    BadInput("reduction", (LOGITS, [[1], [3]], [10, 10]), {"reduction": "max"}, names="reduction"),
], ids=lambda c: c.id)
def test_ctc_loss_refuses(case):
    check_bad_inputs(ctc_loss, case)


def test_ctc_helpers_refuse():
    check_bad_inputs(ctc_greedy_decode, BadInput("lengths", (LOGITS, [11, 3]), names="lengths"))
    check_bad_inputs(ctc_greedy_decode, BadInput("2-d", (LOGITS[0],), names="logits"))
    check_bad_inputs(ctc_greedy_decode, BadInput("nan", (torch.full((1, 3, 4), NAN),), names="logits"))
    check_bad_inputs(ctc_greedy_decode, BadInput("len-float", (LOGITS, [2.5, 3]), names="lengths"))
    check_bad_inputs(ctc_min_length, BadInput("string", ("abc",), names="target"))
    check_bad_inputs(ctc_min_length, BadInput("float", ([1.5, 2],), names="target"))
    check_bad_inputs(edit_distance, BadInput("none", (None, [1]), names="a"))
    check_bad_inputs(phoneme_error_rate, BadInput("lengths", ([[1]], [[1], [2]]), names="hyps"))
    check_bad_inputs(phoneme_error_rate, BadInput("empty-refs", ([[1]], [[]]), names="refs"))
    check_bad_inputs(phoneme_error_rate, BadInput("string", ("ab", "ab"), names="hyps"))


LP = torch.randn(8, 5).log_softmax(-1)


@pytest.mark.parametrize("case", [
    BadInput("nan", (torch.full((8, 5), NAN), [1, 2]), names="log_probs"),
    BadInput("+inf", (torch.full((8, 5), INF), [1, 2]), names="log_probs"),
    BadInput("1-d", (LP[0], [1]), names="log_probs"),
    BadInput("empty", (LP, []), names="target"),
    BadInput("blank", (LP, [0, 1]), names="target"),
    BadInput("label-out", (LP, [5]), names="target"),
    BadInput("too-short", (LP[:2], [1, 1]), names="T"),
    BadInput("float-label", (LP, [1.5]), names="target"),
], ids=lambda c: c.id)
def test_forced_align_refuses(case):
    check_bad_inputs(ctc_forced_align, case)


def test_boundary_uncertainty_refuses():
    check_bad_inputs(boundary_uncertainty, BadInput("window", ([LP], [[1, 2]]), {"window": -1}, names="window"))
    check_bad_inputs(boundary_uncertainty, BadInput("counts", ([LP, LP], [[1, 2]]), names="log_probs"))
    check_bad_inputs(boundary_uncertainty, BadInput("nan", ([torch.full((8, 5), NAN)], [[1, 2]]), names="log_probs"))


# ------------------------------------------------------------------ data
def _data():
    return synthetic_speech_bci(6, n_channels=3, n_days=2, seed=0, lexicon_size=5)


@pytest.mark.parametrize("kw,name", [
    ({"n_sentences": 0}, "n_sentences"), ({"n_channels": 0}, "n_channels"), ({"sigma": NAN}, "sigma"),
    ({"sigma": -1.0}, "sigma"), ({"lead": -1}, "lead"), ({"n_days": 0}, "n_days"), ({"seed": -1}, "seed"),
    ({"seed": "s"}, "seed"), ({"world_seed": -3}, "world_seed"), ({"words": (3, 2)}, "words"),
    ({"lexicon_size": 0}, "lexicon_size"),
], ids=str)
def test_generator_refuses(kw, name):
    check_bad_inputs(synthetic_speech_bci, BadInput(name, (), {"n_sentences": 4, "n_channels": 3, **kw}, names=name))


def test_data_methods_refuse_and_keep_state():
    data = _data()
    for case in [BadInput("n_test-0", (0,), names="n_test"), BadInput("n_test-all", (6,), names="n_test"),
                 BadInput("n_test-float", (1.5,), names="n_test")]:
        check_bad_inputs(data.split, case, target=data)
    for case in [BadInput("out", ([0, 9],), names="idx"), BadInput("neg", ([-1],), names="idx"),
                 BadInput("float", ([0.5],), names="idx")]:
        check_bad_inputs(data.subset, case, target=data)
    for case in [BadInput("empty", (data, []), names="idx"), BadInput("out", (data, [0, 9]), names="idx"),
                 BadInput("neg", (data, [-1]), names="idx"), BadInput("data", ("data", [0]), names="data")]:
        check_bad_inputs(make_batch, case, targets=[data])
    check_bad_inputs(load_willett2023, BadInput("missing", ("/nonexistent/willett",), exc=FileNotFoundError,
                                                names="/nonexistent/willett"))


# ------------------------------------------------------------------ training, evaluation, energy
@pytest.mark.parametrize("kw,name", [
    ({"steps": 0}, "steps"), ({"batch_size": 0}, "batch_size"), ({"batch_size": 2.5}, "batch_size"),
    ({"batch_size": 99}, "batch_size"), ({"lr": NAN}, "lr"), ({"lr": -1.0}, "lr"),
    ({"weight_decay": -1.0}, "weight_decay"), ({"noise_std": NAN}, "noise_std"), ({"offset_std": -1.0}, "offset_std"),
    ({"grad_clip": 0.0}, "grad_clip"), ({"time_budget_s": -1.0}, "time_budget_s"), ({"seed": "s"}, "seed"),
    ({"progress": 3}, "progress"),
], ids=str)
def test_train_ctc_refuses_and_keeps_the_model(kw, name):
    torch.manual_seed(0)
    model = ResidualDelaySNN(6, 8, 1, max_delay=2, n_days=2).eval()
    check_bad_inputs(lambda: train_ctc(model, _data(), **{"steps": 1, "batch_size": 2, **kw}),
                     BadInput(name, names=name), target=model)
    assert not model.training


def test_train_ctc_refuses_bad_model_and_data():
    data = _data()
    check_bad_inputs(lambda: train_ctc("model", data, steps=1), BadInput("model", names="model"))
    model = GRUDecoder(6, 4, n_days=2)  # built outside the call: building draws from torch's RNG
    check_bad_inputs(lambda: train_ctc(model, "data", steps=1), BadInput("data", names="data"), target=model)


def test_train_ctc_restores_the_model_when_the_loss_turns_non_finite():
    torch.manual_seed(0)
    model = GRUDecoder(6, 4, 1, n_days=2)

    def progress(steps):  # one good step, then the readout blows the logits up to NaN
        for step in steps:
            if step == 1:
                with torch.no_grad():
                    model.readout.bias.fill_(NAN)
            yield step

    check_bad_inputs(lambda: train_ctc(model, _data(), steps=3, batch_size=2, progress=progress),
                     BadInput("nan-loss", names=("loss", "logits")), target=model)


def test_evaluate_refuses_and_keeps_mode():
    model = GRUDecoder(6, 4, 1, n_days=2).train()
    for bs in (0, -1, 2.5, True):
        check_bad_inputs(lambda b=bs: evaluate(model, _data(), batch_size=b), BadInput(f"bs={bs!r}",
                                                                                       names="batch_size"),
                         target=model)
    check_bad_inputs(lambda: evaluate(model, "data"), BadInput("data", names="data"), target=model)
    assert model.training


@pytest.mark.parametrize("case", [
    BadInput("e_mac-nan", (X, DAY), {"e_mac": NAN}, names="e_mac"),
    BadInput("e_ac-inf", (X, DAY), {"e_ac": INF}, names="e_ac"),
    BadInput("e_ac-neg", (X, DAY), {"e_ac": -1.0}, names="e_ac"),
    BadInput("x-nan", (XNAN, DAY), names="x"),
    BadInput("x-2d", (X[0], DAY), names="x"),
    BadInput("lengths-0", (X, DAY), {"lengths": [0, 12]}, names="lengths"),
    BadInput("lengths-big", (X, DAY), {"lengths": [13, 12]}, names="lengths"),
    BadInput("lengths-float", (X, DAY), {"lengths": [2.5, 12]}, names="lengths"),
    BadInput("day-out", (X, torch.tensor([0, 7])), names="day_idx"),
], ids=lambda c: c.id)
def test_estimate_energy_refuses_and_keeps_the_model(case):
    model = _models()["snn"].train()
    check_bad_inputs(lambda *a, **k: estimate_energy(model, *a, **k), case, target=model)
    assert model.training and all(not m._forward_hooks for m in model.modules())
    check_bad_inputs(estimate_energy, BadInput("model", ("snn", X), names="model"))


def test_speech_data_structure_refused():
    f = [np.zeros((5, 3), np.float32), np.zeros((4, 3), np.float32)]
    p = [np.array([1, 2]), np.array([3])]
    for args, kw, name in [((f, p[:1], np.array([0, 0])), {}, "phonemes"),
                           ((f, p, np.array([0])), {}, "day"),
                           ((f, p, np.array([0, -1])), {}, "day"),
                           ((f, p, np.array([0.0, 1.0])), {}, "day"),
                           (([f[0], np.zeros((4, 2))], p, np.array([0, 0])), {}, "features"),
                           (([np.zeros(5), f[1]], p, np.array([0, 0])), {}, "features"),
                           ((tuple(f), p, np.array([0, 0])), {}, "features"),
                           ((f, p, np.array([0, 0])), {"text": ["a"]}, "text"),
                           ((f, p, np.array([0, 0])), {"frame_labels": [np.zeros(5)]}, "frame_labels")]:
        check_bad_inputs(SpeechBCIData, BadInput(name, args, kw, names=name))
