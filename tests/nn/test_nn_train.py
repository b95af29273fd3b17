"""nn.train against independent references: a naive hand-written loop (same seed -> identical losses),
closed forms of the schedules, gradient-accumulation equivalence, autocast, validation."""

import math

import pytest
import torch
import torch.nn.functional as F

from neurips26.nn import Llama, LlamaConfig
from neurips26.nn.train import lr_at, lr_lambda, seeded_batches, train_lm

torch.set_num_threads(1)
CFG = dict(vocab_size=50, d_model=32, n_layers=2, n_heads=2, max_seq_len=16)


def _model(seed=0):
    torch.manual_seed(seed)
    return Llama(LlamaConfig(**CFG))


def _tokens(n=2000, seed=1):
    return torch.randint(0, 50, (n,), generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------------- schedules: closed forms
def _cosine_product(step, total, peak, warmup):  # the formula dynconv's check wrote by hand
    return peak * min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * step / total))


def _wsd(step, total, warmup, decay):  # tst's wsd_lr_lambda, written out
    if step < warmup:
        return (step + 1) / warmup
    if step >= total - decay and decay > 0:
        return max(0.0, (total - step) / decay)
    return 1.0


@pytest.mark.parametrize("total", [1, 7, 100, 333])
def test_cosine_over_warmup_equals_the_product_form_bit_for_bit(total):
    warmup = max(1, total // 10)
    for t in range(total):
        got = lr_at(t, total_steps=total, peak_lr=3e-3, schedule="cosine", warmup_steps=warmup,
                    cosine_over_warmup=True)
        assert got == _cosine_product(t, total, 3e-3, warmup)


@pytest.mark.parametrize("total", [1, 10, 100, 257])
def test_wsd_equals_the_closed_form_bit_for_bit(total):
    warmup, decay = max(1, round(0.05 * total)), round(0.2 * total)
    factor = lr_lambda(total_steps=total, schedule="wsd", warmup_steps=warmup, decay_fraction=0.2)
    for t in range(total):
        assert factor(t) == _wsd(t, total, warmup, decay)
        assert lr_at(t, total_steps=total, peak_lr=1e-3, schedule="wsd", warmup_steps=warmup) == 1e-3 * _wsd(
            t, total, warmup, decay)


def test_cosine_after_warmup_closed_form_and_endpoints():
    total, warmup, peak, m = 50, 5, 2.0, 0.1
    for t in range(total):
        got = lr_at(t, total_steps=total, peak_lr=peak, schedule="cosine", warmup_steps=warmup, min_lr_ratio=m)
        if t < warmup:
            want = peak * (t + 1) / warmup
        else:
            want = peak * (m + (1 - m) * 0.5 * (1 + math.cos(math.pi * (t - warmup) / (total - warmup))))
        assert got == pytest.approx(want, rel=1e-15)
    assert lr_at(warmup, total_steps=total, peak_lr=peak, warmup_steps=warmup) == peak
    # monotone non-increasing after warm-up, floor at m * peak reached at t = T
    after = [lr_at(t, total_steps=total, peak_lr=peak, warmup_steps=warmup, min_lr_ratio=m) for t in range(5, 51)]
    assert all(a >= b for a, b in zip(after, after[1:]))
    assert after[-1] == pytest.approx(m * peak)


def test_constant_and_wsd_floor():
    assert [lr_at(t, total_steps=10, peak_lr=1.0, schedule="constant", warmup_steps=4) for t in range(6)] == \
        [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    last = lr_at(9, total_steps=10, peak_lr=1.0, schedule="wsd", decay_fraction=0.5, min_lr_ratio=0.2)
    assert last == pytest.approx(0.2 + 0.8 * 1 / 5)


@pytest.mark.parametrize("kwargs, match", [
    (dict(step=-1), "lr_at: step must be an int >= 0, got -1"),
    (dict(step=1.0), "step must be"),
    (dict(step=True), "step must be"),
    (dict(total_steps=0), "total_steps"),
    (dict(schedule="linear"), "schedule must be one of"),
    (dict(warmup_steps=11), "warmup_steps must be <= total_steps"),
    (dict(warmup_steps=-1), "warmup_steps"),
    (dict(decay_fraction=1.5), "decay_fraction"),
    (dict(min_lr_ratio=float("nan")), "min_lr_ratio"),
    (dict(peak_lr=float("inf")), "peak_lr"),
    (dict(peak_lr=-1.0), "peak_lr"),
])
def test_lr_at_refuses_bad_input(kwargs, match):
    args = dict(step=0, total_steps=10, peak_lr=1e-3) | kwargs
    with pytest.raises(ValueError, match=match):
        lr_at(**args)


# ------------------------------------------------------------------------- the loop vs a naive loop
def _naive(model, tokens, *, steps, lr, batch, ctx, seed, clip, betas):
    """The plain loop dynconv and tst wrote by hand: set lr, draw a window batch, CE, clip, AdamW."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1, betas=betas)
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = _cosine_product(step, steps, lr, max(1, steps // 10))
        i = torch.randint(0, len(tokens) - ctx - 1, (batch,), generator=gen)
        window = tokens[i[:, None] + torch.arange(ctx + 1)]
        x, y = window[:, :-1], window[:, 1:]
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        losses.append(float(loss.detach()))
    return losses


@pytest.mark.parametrize("clip, betas", [(1.0, (0.9, 0.95)), (None, (0.9, 0.999))])
def test_same_seed_gives_the_naive_loops_losses_exactly(clip, betas):
    tokens, steps = _tokens(), 12
    want = _naive(_model(), tokens, steps=steps, lr=3e-3, batch=4, ctx=16, seed=7, clip=clip, betas=betas)
    model = _model()
    res = train_lm(model, seeded_batches(tokens, 4, 16, seed=7), steps=steps, lr=3e-3, schedule="cosine",
                   warmup_steps=max(1, steps // 10), cosine_over_warmup=True, weight_decay=0.1, betas=betas,
                   grad_clip=clip)
    assert res.losses == want
    assert res.steps == steps and res.tokens_seen == steps * 4 * 16
    assert res.lrs == [_cosine_product(t, steps, 3e-3, max(1, steps // 10)) for t in range(steps)]
    assert res.losses[-1] < res.losses[0]
    assert res.wall_seconds > 0


def test_grad_accumulation_matches_one_big_batch():
    tokens = _tokens()
    big = list(_take(seeded_batches(tokens, 8, 16, seed=3), 3))
    halves = [(x[s], y[s]) for x, y in big for s in (slice(0, 4), slice(4, 8))]
    m1, m2 = _model(), _model()
    kw = dict(steps=3, lr=1e-2, schedule="constant", grad_clip=1.0)
    r1 = train_lm(m1, iter(big), **kw)
    r2 = train_lm(m2, iter(halves), grad_accum_steps=2, **kw)
    assert r2.tokens_seen == r1.tokens_seen
    for a, b in zip(r1.losses, r2.losses):
        assert a == pytest.approx(b, rel=1e-5)
    for p, q in zip(m1.parameters(), m2.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def _take(it, n):
    for _ in range(n):
        yield next(it)


def test_callable_source_gets_the_micro_batch_index():
    tokens = _tokens()
    seen = []

    def source(k):
        seen.append(k)
        return tokens[k:k + 16].view(1, 16), tokens[k + 1:k + 17].view(1, 16)

    train_lm(_model(), source, steps=3, lr=1e-3, grad_accum_steps=2)
    assert seen == [0, 1, 2, 3, 4, 5]


def test_bf16_autocast_runs_and_learns():
    model = _model()
    res = train_lm(model, seeded_batches(_tokens(), 8, 16, seed=0), steps=30, lr=1e-2, warmup_steps=3,
                   autocast_dtype=torch.bfloat16)
    assert all(math.isfinite(v) for v in res.losses)
    assert sum(res.losses[-5:]) / 5 < sum(res.losses[:5]) / 5
    assert all(p.dtype == torch.float32 for p in model.parameters())  # master weights stay fp32


def test_fp16_autocast_with_grad_scaler_runs():
    res = train_lm(_model(), seeded_batches(_tokens(), 4, 16, seed=0), steps=4, lr=1e-3,
                   autocast_dtype=torch.float16)
    assert all(math.isfinite(v) for v in res.losses) and res.steps == 4


def test_eval_history_callback_and_progress():
    calls, wrapped = [], []

    def progress(it, desc):
        wrapped.append(desc)
        return it

    def callback(rec):
        calls.append(rec.step)
        return rec.step == 4  # stop after step 4 (5 steps done)

    res = train_lm(_model(), seeded_batches(_tokens(), 2, 8, seed=0), steps=10, lr=1e-3,
                   eval_fn=lambda m: float(m.training), eval_every=2, callback=callback, progress=progress)
    assert calls == [0, 1, 2, 3, 4] and res.steps == 5 and res.stopped_early
    assert res.eval_history == [(2, 0.0), (4, 0.0), (5, 0.0)]  # eval mode inside eval_fn
    assert wrapped == ["train"]


def test_non_finite_loss_is_refused():
    with pytest.raises(FloatingPointError, match="step 0"):
        train_lm(_model(), seeded_batches(_tokens(), 2, 8, seed=0), steps=2, lr=1e-3,
                 loss_fn=lambda m, x, y: m(x).sum() * float("nan"))


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(model="m"), TypeError, "model must be a torch.nn.Module"),
    (dict(steps=0), ValueError, "train_lm: steps must be an int >= 1, got 0"),
    (dict(grad_clip=0.0), ValueError, "grad_clip"),
    (dict(betas=(0.9,)), ValueError, "betas"),
    (dict(betas=(0.9, 1.0)), ValueError, r"betas\[1\]"),
    (dict(autocast_dtype=torch.float64), ValueError, "autocast_dtype"),
    (dict(grad_accum_steps=0), ValueError, "grad_accum_steps"),
    (dict(eval_every=2), ValueError, "eval_every needs eval_fn"),
    (dict(batches=5), TypeError, "batches must be"),
    (dict(weight_decay=-0.1), ValueError, "weight_decay"),
])
def test_train_lm_refuses_bad_input(kwargs, err, match):
    args = dict(model=_model(), batches=seeded_batches(_tokens(), 2, 8, seed=0), steps=2, lr=1e-3) | kwargs
    before = [p.clone() for p in _model().parameters()]
    with pytest.raises(err, match=match):
        train_lm(args.pop("model"), args.pop("batches"), **args)
    assert all(torch.equal(a, b) for a, b in zip(before, _model().parameters()))


def test_running_out_of_batches_says_so():
    with pytest.raises(ValueError, match="ran out"):
        train_lm(_model(), iter([(torch.zeros(1, 4, dtype=torch.long),) * 2]), steps=2, lr=1e-3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(tokens=torch.zeros(5)), "1-D integer"),
    (dict(tokens=torch.zeros(2, 50, dtype=torch.long)), "1-D integer"),
    (dict(tokens=torch.zeros(9, dtype=torch.long)), "at least context_len \\+ 2"),
    (dict(batch_size=0), "batch_size"),
    (dict(seed=-1), "seed"),
])
def test_seeded_batches_validation(kwargs, match):
    args = dict(tokens=torch.zeros(100, dtype=torch.long), batch_size=2, context_len=8, seed=0) | kwargs
    with pytest.raises(ValueError, match=match):
        seeded_batches(**args)


def test_seeded_batches_are_shifted_windows_and_reproducible():
    tokens = torch.arange(100)
    a, b = seeded_batches(tokens, 3, 5, seed=1), seeded_batches(tokens, 3, 5, seed=1)
    for _ in range(4):
        (x, y), (x2, y2) = next(a), next(b)
        assert torch.equal(x, x2) and torch.equal(y, y2)
        assert torch.equal(y, x + 1) and torch.equal(x[:, 1:], x[:, :-1] + 1)  # contiguous windows
        assert int(y.max()) <= 98
