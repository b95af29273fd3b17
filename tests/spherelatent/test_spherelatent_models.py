"""SLE and the baselines: call counts (latent loop, one decode), determinism, frozen tokenizer, losses, bad input."""

import pytest
import torch
from torch import nn

from neurips26.spherelatent import (
    ConvAutoencoder,
    LatentFlowMatching,
    LatentTokenizer,
    LatentTransformer,
    SphereEncoder,
    SphereLatentEncoder,
    fit,
    latent_statistics,
)

SHAPE = (4, 2, 2)


class CountingTokenizer(nn.Module):
    """A protocol tokenizer that counts how many images it encodes and decodes."""

    latent_shape = SHAPE

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(1, 4, 4, stride=4)
        self.dec = nn.ConvTranspose2d(4, 1, 4, stride=4)
        self.encoded = self.decoded = 0

    def encode(self, x):
        self.encoded += x.shape[0]
        return self.enc(x)

    def decode(self, z):
        self.decoded += z.shape[0]
        return self.dec(z)


class CountingDenoiser(LatentTransformer):
    def __init__(self, **kw):
        super().__init__(SHAPE, dim=16, depth=1, heads=2, **kw)
        self.seen = 0

    def forward(self, z, y=None, t=None):
        self.seen += z.shape[0]
        return super().forward(z, y) if t is None else super().forward(z, y, t)


def _images(n=6, seed=0):
    return torch.rand(n, 1, 8, 8, generator=torch.Generator().manual_seed(seed)) * 2 - 1


def test_protocol():
    assert isinstance(CountingTokenizer(), LatentTokenizer)
    assert isinstance(ConvAutoencoder(), LatentTokenizer)


@pytest.mark.parametrize("steps", [1, 2, 4])
def test_sle_sample_runs_denoiser_t_times_decodes_once_never_encodes(steps):
    tok, g = CountingTokenizer(), CountingDenoiser(num_classes=3)
    sle = SphereLatentEncoder(tok, g, num_classes=3)
    out = sle.sample(5, steps=steps, y=torch.tensor([0, 1, 2, 0, 1]))
    assert out.shape == (5, 1, 8, 8) and float(out.min()) >= 0 and float(out.max()) <= 1
    assert (g.seen, tok.decoded, tok.encoded) == (steps * 5, 5, 0)


def test_sle_cfg_doubles_denoiser_calls_only():
    tok, g = CountingTokenizer(), CountingDenoiser(num_classes=3)
    sle = SphereLatentEncoder(tok, g, num_classes=3)
    sle.sample(4, steps=3, y=torch.tensor([0, 1, 2, 0]), cfg=2.0)
    assert (g.seen, tok.decoded, tok.encoded) == (2 * 3 * 4, 4, 0)


class CountingConv(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner, self.calls = inner, 0

    def forward(self, h, y=None):
        self.calls += h.shape[0]
        return self.inner(h, y)


@pytest.mark.parametrize("steps", [1, 2, 4])
def test_se_sample_t_decodes_t_minus_1_encodes(steps):
    se = SphereEncoder(image_size=8, latent_channels=4, width=4, downsample=2, num_classes=3)
    se.encoder, se.decoder = CountingConv(se.encoder), CountingConv(se.decoder)
    se.sample(3, steps=steps, y=torch.tensor([0, 1, 2]))
    assert (se.decoder.calls, se.encoder.calls) == (3 * steps, 3 * (steps - 1))


def test_fm_sample_steps_and_single_decode():
    tok, v = CountingTokenizer(), CountingDenoiser(time_input=True)
    fm = LatentFlowMatching(tok, v)
    fm.sample(4, steps=5)
    assert (v.seen, tok.decoded, tok.encoded) == (20, 4, 0)


@pytest.mark.parametrize("make", ["sle", "se", "fm"])
def test_fixed_generator_gives_same_samples(make):
    torch.manual_seed(0)
    model = {"sle": lambda: SphereLatentEncoder(CountingTokenizer(), CountingDenoiser()),
             "se": lambda: SphereEncoder(image_size=8, latent_channels=4, width=4),
             "fm": lambda: LatentFlowMatching(CountingTokenizer(), CountingDenoiser(time_input=True))}[make]()
    a = model.sample(3, steps=3, generator=torch.Generator().manual_seed(7))
    b = model.sample(3, steps=3, generator=torch.Generator().manual_seed(7))
    c = model.sample(3, steps=3, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_cache_noise_changes_multistep_samples_only():
    torch.manual_seed(0)
    sle = SphereLatentEncoder(CountingTokenizer(), CountingDenoiser())
    one = [sle.sample(3, steps=1, cache_noise=c, generator=torch.Generator().manual_seed(1)) for c in (True, False)]
    assert torch.equal(*one)
    three = [sle.sample(3, steps=3, cache_noise=c, generator=torch.Generator().manual_seed(1)) for c in (True, False)]
    assert not torch.equal(*three)


def test_no_gradient_reaches_tokenizer_and_it_stays_eval():
    tok = CountingTokenizer()
    sle = SphereLatentEncoder(tok, CountingDenoiser(num_classes=3), num_classes=3)
    sle.train()
    assert not tok.training and all(not p.requires_grad for p in tok.parameters())
    loss, logs = sle.loss(_images(), torch.tensor([0, 1, 2, 0, 1, 2]))
    loss.backward()
    assert all(p.grad is None for p in tok.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in sle.denoiser.parameters())
    assert set(logs) == {"loss", "rec", "con"} and all(torch.isfinite(torch.tensor(v)) for v in logs.values())


def test_sle_rec_loss_is_zero_for_an_oracle_denoiser():
    """A denoiser that returns the clean latent makes L_rec = L_con = 0 (the loss targets f(z))."""
    tok = CountingTokenizer()
    x = _images()

    class Oracle(nn.Module):
        def forward(self, z, y=None):
            return oracle_z

    sle = SphereLatentEncoder(tok, Oracle())
    oracle_z = sle.encode(x)
    loss, logs = sle.loss(x)
    assert logs["rec"] == pytest.approx(0.0, abs=1e-10) and float(loss) == pytest.approx(0.0, abs=1e-10)


@pytest.mark.parametrize("make", ["sle", "se", "fm"])
def test_losses_finite_and_decreasing(make):
    torch.manual_seed(0)
    x = torch.rand(64, 1, 8, 8) * 2 - 1
    y = torch.arange(64) % 3
    if make == "se":
        model = SphereEncoder(image_size=8, latent_channels=4, width=8, num_classes=3)
    else:
        tok = ConvAutoencoder(image_size=8, latent_channels=4, width=4, downsample=2)
        stats = latent_statistics(tok, x)
        net = LatentTransformer(tok.latent_shape, dim=32, depth=1, heads=2, num_classes=3, time_input=make == "fm")
        cls = SphereLatentEncoder if make == "sle" else LatentFlowMatching
        model = cls(tok, net, latent_stats=stats, num_classes=3)
    res = fit(model, x, y, loss_fn=lambda m, a, b: m.loss(a, b)[0], steps=60, batch_size=32, lr=3e-3, ema_decay=0.9)
    assert all(torch.isfinite(torch.tensor(res.losses)))
    assert sum(res.losses[-10:]) / 10 < sum(res.losses[:10]) / 10
    assert res.ema is not None and res.ema.updates == 60


def test_se_reconstruction_shape():
    se = SphereEncoder(image_size=8, latent_channels=4, width=4)
    assert se.reconstruct(_images(3)).shape == (3, 1, 8, 8)


@pytest.mark.parametrize("call, match", [
    (lambda m: m.sample(0), "n must be an int >= 1"),
    (lambda m: m.sample(2, steps=0), "steps must be an int >= 1"),
    (lambda m: m.sample(2, cfg=float("nan")), "cfg"),
    (lambda m: m.sample(2, y=torch.tensor([0, 3])), r"y must lie in \[0, 3\)"),
    (lambda m: m.sample(2, y=torch.tensor([0])), r"y must be an int64/int32/int16/uint8 tensor \[2\]"),
    (lambda m: m.sample(2, y=torch.tensor([0.0, 1.0])), "y must be an int64/int32/int16/uint8 tensor"),
    (lambda m: m.sample(2, generator=3), "generator"),
    (lambda m: m.loss(_images(2)), "at least 3 images"),
    (lambda m: m.loss(_images()[0]), r"x must be a float tensor \[B, "),
    (lambda m: m.loss(torch.full((4, 1, 8, 8), float("nan"))), "finite"),
])
@pytest.mark.parametrize("make", ["sle", "se"])
def test_bad_input(make, call, match):
    model = (SphereLatentEncoder(CountingTokenizer(), CountingDenoiser(num_classes=3), num_classes=3) if make == "sle"
             else SphereEncoder(image_size=8, latent_channels=4, width=4, num_classes=3))
    with pytest.raises((ValueError, TypeError), match=match):
        call(model)


def test_labels_without_classes_and_bad_constructor_args():
    sle = SphereLatentEncoder(CountingTokenizer(), CountingDenoiser())
    with pytest.raises(ValueError, match="no classes"):
        sle.sample(2, y=torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="LatentTokenizer"):
        SphereLatentEncoder(object(), CountingDenoiser())
    with pytest.raises(ValueError, match="max_angle_deg"):
        SphereLatentEncoder(CountingTokenizer(), CountingDenoiser(), max_angle_deg=90)
    with pytest.raises(ValueError, match="latent_stats"):
        SphereLatentEncoder(CountingTokenizer(), CountingDenoiser(), latent_stats=(torch.zeros(3), torch.ones(3)))
    with pytest.raises(ValueError, match="latent_shape"):
        LatentTransformer((4, 2))
    with pytest.raises(ValueError, match="time input"):
        CountingDenoiser()(torch.randn(2, *SHAPE), t=torch.zeros(2))
