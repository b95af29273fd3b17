"""spherelatent's error contract (issue 16): every public entry point refuses bad input by name (NaN included),
never hangs, and a failed call leaves the model, accumulator or EMA exactly as it was."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from _badinput import BadInput, check_bad_inputs
from neurips26.spherelatent import (
    EMA,
    ClassifierFID,
    ConvAutoencoder,
    ConvDecoder,
    ConvEncoder,
    DigitsClassifier,
    FeatureView,
    LatentFlowMatching,
    LatentTransformer,
    SphereEncoder,
    SphereLatentEncoder,
    angle_between,
    count_flops,
    fit,
    frechet_distance,
    knn_precision_recall,
    latent_statistics,
    psnr,
    sigma_max,
    spherical_corrupt,
    spherify,
    stratified_radii,
    train_classifier,
    train_tokenizer,
)

pytestmark = pytest.mark.timeout(30)
NAN, INF = math.nan, math.inf
KW = dict(in_channels=1, image_size=8, latent_channels=4, width=4, downsample=1)
IMG = torch.rand(4, 1, 8, 8) * 2 - 1
IMG_NAN = IMG.clone()
IMG_NAN[0, 0, 0, 0] = NAN
Z = torch.randn(4, 4, 4, 4)
Z_NAN = Z.clone()
Z_NAN[1, 0, 0, 0] = NAN


def _ae():
    torch.manual_seed(0)
    return ConvAutoencoder(**KW)


def _sle(num_classes=0, stats=None):
    torch.manual_seed(0)
    ae = _ae()
    return SphereLatentEncoder(ae, LatentTransformer(ae.latent_shape, dim=8, depth=1, heads=2,
                                                     num_classes=num_classes), num_classes=num_classes,
                               latent_stats=stats)


def _se(num_classes=0):
    torch.manual_seed(0)
    return SphereEncoder(**KW, num_classes=num_classes)


def _fm(num_classes=0):
    torch.manual_seed(0)
    ae = _ae()
    return LatentFlowMatching(ae, LatentTransformer(ae.latent_shape, dim=8, depth=1, heads=2, time_input=True,
                                                    num_classes=num_classes), num_classes=num_classes)


# ------------------------------------------------------------------ sphere primitives
@pytest.mark.parametrize("case", [
    BadInput("z-nan", (Z_NAN, 0.5), names="z"), BadInput("z-1d", (torch.zeros(4), 0.5), names="z"),
    BadInput("z-int", (torch.zeros(2, 3, dtype=torch.long), 0.5), names="z"),
    BadInput("r-neg", (Z, -0.5), names="r"), BadInput("r-nan", (Z, NAN), names="r"),
    BadInput("r-shape", (Z, torch.ones(3)), names="r"), BadInput("r-str", (Z, "0.5"), names="r"),
    BadInput("angle-90", (Z, 0.5, 90.0), names="max_angle_deg"),
    BadInput("angle-nan", (Z, 0.5, NAN), names="max_angle_deg"),
    BadInput("noise-shape", (Z, 0.5), {"noise": torch.randn(4, 4, 4)}, names="noise"),
    BadInput("noise-nan", (Z, 0.5), {"noise": Z_NAN}, names="noise"),
    BadInput("generator", (Z, 0.5), {"generator": 0}, names="generator"),
], ids=lambda c: c.id)
def test_spherical_corrupt_refuses(case):
    check_bad_inputs(spherical_corrupt, case)


def test_sphere_helpers_refuse():
    for eps in (-1.0, NAN, "0"):
        check_bad_inputs(spherify, BadInput(f"eps={eps!r}", (Z,), {"eps": eps}, names="eps"))
    check_bad_inputs(spherify, BadInput("nan", (Z_NAN,), names="z"))
    for a in (0.0, 90.0, -5.0, NAN, "85"):
        check_bad_inputs(sigma_max, BadInput(f"a={a!r}", (a,), names="max_angle_deg"))
    for b in (2, 2.5, True, "8"):
        check_bad_inputs(stratified_radii, BadInput(f"batch={b!r}", (b,), names="batch"))
    for p in (-0.1, 1.5, NAN):
        check_bad_inputs(stratified_radii, BadInput(f"p={p!r}", (8,), {"hard_case_prob": p}, names="hard_case_prob"))
    check_bad_inputs(stratified_radii, BadInput("generator", (8,), {"generator": 1}, names="generator"))
    check_bad_inputs(angle_between, BadInput("shape", (Z, Z[:2]), names="a"))
    check_bad_inputs(angle_between, BadInput("nan", (Z_NAN, Z), names="a"))


# ------------------------------------------------------------------ metrics
F_A, F_B = np.random.default_rng(0).normal(size=(20, 3)), np.random.default_rng(1).normal(size=(20, 3))


@pytest.mark.parametrize("fn", [frechet_distance, knn_precision_recall], ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", [
    BadInput("width", (F_A, F_B[:, :2]), names=("feats_a", "real")),
    BadInput("rows", (F_A[:1], F_B), names=("feats_a", "real")),
    BadInput("nan", (np.full((5, 3), np.nan), F_B), names=("feats_a", "real")),
    BadInput("1-d", (F_A[0], F_B), names=("feats_a", "real")),
    BadInput("list", (F_A.tolist(), F_B), names=("feats_a", "real")),
], ids=lambda c: c.id)
def test_feature_metrics_refuse(fn, case):
    check_bad_inputs(fn, case)


def test_knn_k_and_psnr_refuse():
    for k in (0, 20, 2.5, True):
        check_bad_inputs(knn_precision_recall, BadInput(f"k={k!r}", (F_A, F_B, k), names="k"))
    check_bad_inputs(psnr, BadInput("nan", (IMG_NAN, IMG), names="x"))
    check_bad_inputs(psnr, BadInput("ref-inf", (IMG, IMG * INF), names="ref"))
    check_bad_inputs(psnr, BadInput("shape", (IMG, IMG[:2]), names="x"))
    check_bad_inputs(psnr, BadInput("range-0", (IMG, IMG), {"data_range": 0.0}, names="data_range"))
    check_bad_inputs(psnr, BadInput("range-nan", (IMG, IMG), {"data_range": NAN}, names="data_range"))
    check_bad_inputs(psnr, BadInput("list", (IMG.tolist(), IMG), names="x"))
    check_bad_inputs(count_flops, BadInput("not-callable", (3,), names="fn"))


def test_classifier_fid_refuses_and_keeps_state():
    clf = DigitsClassifier(image_size=8)
    fid = ClassifierFID(FeatureView(clf), batch_size=2)
    fid.update(torch.rand(3, 1, 8, 8), real=True)
    for case in [BadInput("nan", (torch.full((2, 1, 8, 8), NAN), True), names="x"),
                 BadInput("3-d", (torch.rand(2, 8, 8), True), names="x"),
                 BadInput("real-int", (torch.rand(2, 1, 8, 8), 1), names="real"),
                 BadInput("int-images", (torch.ones(2, 1, 8, 8, dtype=torch.long), True), names="x"),
                 BadInput("size", (torch.rand(2, 1, 12, 12), True), names="x")]:
        check_bad_inputs(fid.update, case, target=fid)
    check_bad_inputs(fid.compute, BadInput("one-side", exc=RuntimeError, names="update"), target=fid)
    check_bad_inputs(ClassifierFID, BadInput("extractor", (3,), names="feature_extractor"))
    check_bad_inputs(ClassifierFID, BadInput("batch", (clf,), {"batch_size": 0}, names="batch_size"))
    check_bad_inputs(FeatureView, BadInput("classifier", (torch.nn.Linear(2, 2),), names="classifier"))


def test_digits_classifier_refuses():
    clf = DigitsClassifier(image_size=8)
    for call in (clf, clf.features):
        for case in [BadInput("nan", (torch.full((2, 1, 8, 8), NAN),), names="x"),
                     BadInput("channels", (torch.rand(2, 3, 8, 8),), names="x"),
                     BadInput("size", (torch.rand(2, 1, 16, 16),), names="x")]:
            check_bad_inputs(call, case, target=clf)
    for kw, name in [({"image_size": 6}, "image_size"), ({"image_size": 0}, "image_size"),
                     ({"num_classes": 1}, "num_classes"), ({"feature_dim": 0}, "feature_dim")]:
        check_bad_inputs(DigitsClassifier, BadInput(name, (), kw, names=name))


# ------------------------------------------------------------------ tokenizer
def test_autoencoder_refuses_and_keeps_state():
    ae = _ae()
    for call, case in [
        (ae.encode, BadInput("nan", (IMG_NAN,), names="x")),
        (ae.encode, BadInput("channels", (torch.rand(2, 3, 8, 8),), names="x")),
        (ae.encode, BadInput("size", (torch.rand(2, 1, 16, 16),), names="x")),
        (ae, BadInput("nan", (IMG_NAN,), names="x")),
        (ae.decode, BadInput("nan", (torch.full((2, 4, 4, 4), NAN),), names="z")),
        (ae.decode, BadInput("shape", (torch.zeros(2, 3, 4, 4),), names="z")),
        (ae.reconstruction_loss, BadInput("nan", (IMG_NAN,), names="x")),
        (ae.reconstruction_loss, BadInput("noise-neg", (IMG, -0.1), names="latent_noise")),
        (ae.reconstruction_loss, BadInput("noise-nan", (IMG, NAN), names="latent_noise")),
    ]:
        check_bad_inputs(call, case, target=ae)
    for cls in (ConvEncoder, ConvDecoder, ConvAutoencoder):
        for kw, name in [({"image_size": 7}, "image_size"), ({"width": 0}, "width"), ({"downsample": 0}, "downsample"),
                         ({"in_channels": 1.0}, "in_channels")]:
            check_bad_inputs(cls, BadInput(name, (), {**KW, **kw}, names=name))
    for cls in (ConvEncoder, ConvDecoder):
        check_bad_inputs(cls, BadInput("classes", (), {**KW, "num_classes": -1}, names="num_classes"))
        net = cls(**KW, num_classes=3)
        x = IMG if cls is ConvEncoder else torch.zeros(4, 4, 4, 4)
        for case in [BadInput("nan", (x * NAN,), names=("x", "z")), BadInput("y-out", (x, torch.tensor([0, 1, 2, 9])),
                                                                             names="y"),
                     BadInput("y-float", (x, torch.zeros(4)), names="y"), BadInput("y-rows", (x, torch.zeros(3).long()),
                                                                               names="y")]:
            check_bad_inputs(net, case, target=net)


def test_latent_statistics_refuses():
    ae = _ae()
    for case in [BadInput("nan", (ae, IMG_NAN), names="x"), BadInput("batch", (ae, IMG), {"batch_size": 0},
                                                                       names="batch_size"),
                 BadInput("eps", (ae, IMG), {"eps": -1.0}, names="eps"), BadInput("eps-nan", (ae, IMG), {"eps": NAN},
                                                                                names="eps"),
                 BadInput("tokenizer", ("ae", IMG), names="tokenizer")]:
        check_bad_inputs(latent_statistics, case, targets=[ae])


# ------------------------------------------------------------------ generators
GENERATORS = {"sle": _sle, "se": _se, "fm": _fm}


@pytest.mark.parametrize("kind", list(GENERATORS))
@pytest.mark.parametrize("case", [
    BadInput("nan", (IMG_NAN,), names="x"),
    BadInput("3-d", (IMG[0],), names="x"),
    BadInput("int", (IMG.long(),), names="x"),
    BadInput("labels-without-classes", (IMG, torch.zeros(4).long()), names="y"),
], ids=lambda c: c.id)
def test_generator_losses_refuse_and_keep_state(kind, case):
    model = GENERATORS[kind]()
    check_bad_inputs(model.loss, case, target=model)


@pytest.mark.parametrize("kind", list(GENERATORS))
@pytest.mark.parametrize("case", [
    BadInput("y-out", (IMG, torch.tensor([0, 1, 2, 3])), names="y"),
    BadInput("y-float", (IMG, torch.zeros(4)), names="y"),
    BadInput("y-rows", (IMG, torch.zeros(3).long()), names="y"),
], ids=lambda c: c.id)
def test_generator_labels_refused(kind, case):
    model = GENERATORS[kind](num_classes=3)
    check_bad_inputs(model.loss, case, target=model)
    check_bad_inputs(model.sample, BadInput(case.id, (len(case.args[1]),), {"y": case.args[1]}, names="y")
                     if case.id != "y-rows" else BadInput(case.id, (4,), {"y": case.args[1]}, names="y"), target=model)


@pytest.mark.parametrize("kind", list(GENERATORS))
@pytest.mark.parametrize("kw,name", [
    ({"n": 0}, "n"), ({"n": 2.0}, "n"), ({"steps": 0}, "steps"), ({"cfg": NAN}, "cfg"), ({"cfg": -1.0}, "cfg"),
    ({"noise_scale": INF}, "noise_scale"), ({"generator": 3}, "generator"), ({"cache_noise": "yes"}, "cache_noise"),
    ({"return_latents": 1}, "return_latents"),
], ids=str)
def test_samplers_refuse_and_keep_state(kind, kw, name):
    model = GENERATORS[kind]()
    check_bad_inputs(model.sample, BadInput(name, (), {"n": 2, **kw}, names=name), target=model)


def test_sle_and_se_batches_and_latents_refuse():
    for kind in ("sle", "se"):
        model = GENERATORS[kind]()
        check_bad_inputs(model.loss, BadInput("batch<3", (IMG[:2],), names="x"), target=model)
    sle = _sle()
    check_bad_inputs(sle.encode, BadInput("nan", (IMG_NAN,), names="x"), target=sle)
    check_bad_inputs(sle.decode, BadInput("nan", (torch.full((2, 4, 4, 4), NAN),), names="z"), target=sle)
    check_bad_inputs(sle.decode, BadInput("shape", (torch.zeros(2, 3, 4, 4),), names="z"), target=sle)
    se = _se()
    for call in (se.encode, se.reconstruct):
        check_bad_inputs(call, BadInput("nan", (IMG_NAN,), names="x"), target=se)
    check_bad_inputs(se.decode, BadInput("nan", (torch.full((2, 4, 4, 4), NAN),), names="z"), target=se)


@pytest.mark.parametrize("make,kw,name", [
    (lambda **k: _sle(**k), {"stats": (torch.zeros(4), torch.full((4,), NAN))}, "latent_stats"),
    (lambda **k: _sle(**k), {"stats": (torch.zeros(4), torch.zeros(4))}, "latent_stats"),
    (lambda **k: _sle(**k), {"stats": (torch.zeros(3), torch.ones(3))}, "latent_stats"),
    (lambda **k: _sle(**k), {"stats": ([0.0] * 4, [1.0] * 4)}, "latent_stats"),
    (lambda **k: _sle(**k), {"stats": torch.ones(4)}, "latent_stats"),
], ids=["std-nan", "std-0", "shape", "lists", "not-pair"])
def test_latent_stats_refused(make, kw, name):
    check_bad_inputs(lambda: make(**kw), BadInput(name, names=name))
    ae = _ae()
    vel = LatentTransformer(ae.latent_shape, dim=8, depth=1, heads=2, time_input=True)
    check_bad_inputs(LatentFlowMatching, BadInput(name, (ae, vel), {"latent_stats": kw["stats"]}, names=name))


def test_generator_constructors_refuse():
    ae = _ae()
    den = LatentTransformer(ae.latent_shape, dim=8, depth=1, heads=2)
    for kw, name in [({"max_angle_deg": 95.0}, "max_angle_deg"), ({"hard_case_prob": 1.5}, "hard_case_prob"),
                     ({"con_weight": NAN}, "con_weight"), ({"num_classes": -1}, "num_classes"),
                     ({"class_dropout": 2.0}, "class_dropout")]:
        check_bad_inputs(SphereLatentEncoder, BadInput(name, (ae, den), kw, names=name))
    check_bad_inputs(SphereLatentEncoder, BadInput("tokenizer", ("ae", den), names="tokenizer"))
    check_bad_inputs(SphereLatentEncoder, BadInput("denoiser", (ae, "g"), names="denoiser"))
    for kw, name in [({"rec_weight": -1.0}, "rec_weight"), ({"hard_case_prob": 1.5}, "hard_case_prob"),
                     ({"class_dropout": 1.5}, "class_dropout"), ({"num_classes": -2}, "num_classes")]:
        check_bad_inputs(SphereEncoder, BadInput(name, (), {**KW, **kw}, names=name))
    check_bad_inputs(LatentFlowMatching, BadInput("velocity", (ae, "v"), names="velocity"))


def test_latent_transformer_refuses_and_keeps_state():
    net = LatentTransformer((4, 4, 4), dim=8, depth=1, heads=2, num_classes=3, time_input=True)
    t = torch.rand(4)
    for case in [BadInput("z-nan", (Z_NAN, None, t), names="z"), BadInput("z-shape", (Z[:, :3], None, t), names="z"),
                 BadInput("z-list", (Z.tolist(), None, t), names="z"),
                 BadInput("y-out", (Z, torch.tensor([0, 1, 2, 4]), t), names="y"),
                 BadInput("y-neg", (Z, torch.tensor([0, 1, 2, -1]), t), names="y"),
                 BadInput("y-float", (Z, torch.zeros(4), t), names="y"),
                 BadInput("t-missing", (Z, None, None), names="t"), BadInput("t-nan", (Z, None, t * NAN), names="t"),
                 BadInput("t-range", (Z, None, t + 2), names="t")]:
        check_bad_inputs(net, case, target=net)
    for args, kw, name in [(((4, 4),), {}, "latent_shape"), (((4, 4, 4),), {"dim": 6, "heads": 4}, "dim"),
                           (((4, 4, 4),), {"mlp_ratio": 0.0}, "mlp_ratio"),
                           (((4, 4, 4),), {"mlp_ratio": NAN}, "mlp_ratio"),
                           (((4, 4, 4),), {"time_input": 1}, "time_input")]:
        check_bad_inputs(LatentTransformer, BadInput(name, args, kw, names=name))


# ------------------------------------------------------------------ training
def test_ema_refuses_and_keeps_state():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2)
    ema = EMA(net, 0.9)
    for case in [BadInput("other-shape", (torch.nn.Linear(3, 3),), names="module"),
                 BadInput("other-keys", (torch.nn.Sequential(torch.nn.Linear(3, 2)),), names="module"),
                 BadInput("not-module", ("net",), names="module")]:
        check_bad_inputs(ema.update, case, target=ema)
    for d in (1.0, -0.1, NAN, "0.9"):
        check_bad_inputs(EMA, BadInput(f"d={d!r}", (net, d), names="decay"))
    check_bad_inputs(EMA, BadInput("module", ("net",), names="module"))


def _mse(m, xb, _):
    return F.mse_loss(m(xb), xb)


@pytest.mark.parametrize("kw,name", [
    ({"steps": 0}, "steps"), ({"steps": 2.5}, "steps"), ({"batch_size": 0}, "batch_size"),
    ({"batch_size": 2.0}, "batch_size"), ({"lr": NAN}, "lr"), ({"lr": -1.0}, "lr"), ({"seed": -1}, "seed"),
    ({"ema_decay": 1.0}, "decay"), ({"warmup_steps": -1}, "warmup_steps"), ({"progress": 3}, "progress"),
    ({"loss_fn": "mse"}, "loss_fn"), ({"clock": "gpu"}, "clock"), ({"budget_s": NAN, "steps": None}, "budget_s"),
    ({"budget_s": 1.0}, "budget_s"), ({"x": IMG_NAN}, "x"), ({"x": IMG[:0]}, "x"), ({"x": IMG.long()}, "x"),
    ({"y": torch.zeros(3).long()}, "y"), ({"y": torch.zeros(4)}, "y"),
], ids=str)
def test_fit_refuses_and_keeps_the_model(kw, name):
    model = _ae().train()
    args = {"x": IMG, "y": None, "loss_fn": _mse, "steps": 2, "batch_size": 2, **kw}
    x, y = args.pop("x"), args.pop("y")
    check_bad_inputs(lambda: fit(model, x, y, **args), BadInput(name, names=name), target=model)
    assert model.training


def test_fit_restores_the_model_when_the_loss_turns_non_finite():
    model = _ae()

    def loss(m, xb, _):  # the second step's loss is NaN: the first step's update must be undone
        loss.calls += 1
        out = F.mse_loss(m(xb), xb)
        return out * NAN if loss.calls > 1 else out
    loss.calls = 0
    check_bad_inputs(lambda: fit(model, IMG, None, loss_fn=loss, steps=3, batch_size=2, ema_decay=None),
                     BadInput("nan-loss", exc=FloatingPointError, names="loss"), target=model)


def test_train_helpers_refuse():
    ae = _ae()
    check_bad_inputs(lambda: train_tokenizer(ae, IMG, steps=1, latent_noise=-1.0),
                     BadInput("noise", names="latent_noise"), target=ae)
    check_bad_inputs(lambda: train_tokenizer(torch.nn.Linear(2, 2), IMG, steps=1), BadInput("model", names="model"))
    y = torch.arange(4) % 2
    x01 = (IMG + 1) / 2
    for kw, name in [({"train_fraction": 0.0}, "train_fraction"), ({"train_fraction": 1.0}, "train_fraction"),
                     ({"train_fraction": NAN}, "train_fraction"), ({"steps": 0}, "steps"),
                     ({"image_size": 16}, "image_size")]:
        check_bad_inputs(lambda k=kw: train_classifier(x01, y, image_size=8, **{k_: v for k_, v in k.items()}),
                         BadInput(name, names=name))
    check_bad_inputs(lambda: train_classifier(x01, y[:3], image_size=8), BadInput("y-rows", names="y"))
    check_bad_inputs(lambda: train_classifier(x01, y.float(), image_size=8), BadInput("y-float", names="y"))
    check_bad_inputs(lambda: train_classifier(x01 * NAN, y, image_size=8), BadInput("x-nan", names="x01"))


@pytest.mark.parametrize("cls", ["SphereLatentEncoder", "LatentFlowMatching"])
def test_a_refused_constructor_leaves_the_tokenizer_trainable(cls):
    import neurips26.spherelatent as sl

    tok = sl.ConvAutoencoder()
    tok.train()
    with pytest.raises(ValueError, match="latent_stats"):
        getattr(sl, cls)(tok, torch.nn.Linear(2, 2), latent_stats=(torch.zeros(3), torch.ones(3)))
    assert tok.training and all(p.requires_grad for p in tok.parameters())
