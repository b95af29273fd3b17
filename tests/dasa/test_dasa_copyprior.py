"""The copy prior (x̂₀ = previous frame + f, f zero at init) of the check's teacher."""

import pytest
import torch

from neurips26.dasa import ARVideoDiT, VideoDiTConfig, moving_sprites, train_teacher


def _model(copy_prior: bool = True) -> ARVideoDiT:
    torch.manual_seed(0)
    return ARVideoDiT(VideoDiTConfig(frame_size=32, dim=24, depth=2, heads=2, copy_prior=copy_prior)).eval()


def test_at_init_the_model_repeats_the_previous_frame():
    video = moving_sprites("occlusion", 8, 32, 0).frames[None]
    out = _model().generate(video[:, :2], 8, generator=torch.Generator().manual_seed(0))
    assert torch.equal(out[:, :2], video[:, :2])
    assert torch.equal(out[:, 2:], video[:, 1:2].expand(-1, 6, -1, -1, -1))


def test_teacher_forcing_loss_at_init_is_the_copy_error():
    """At init the noisy chunk c predicts the clean last frame of chunk c - 1 (whatever the context noise)."""
    m = _model()
    clip = moving_sprites("sparse", 6, 32, 1).frames[None]
    loss = m.teacher_forcing_loss(clip, generator=torch.Generator().manual_seed(0), context_noise=0.05)
    copy = torch.cat([clip[:, 1:2].expand(-1, 2, -1, -1, -1), clip[:, 3:4].expand(-1, 2, -1, -1, -1)], dim=1)
    assert abs(float(loss.detach()) - float(((copy - clip[:, 2:]) ** 2).mean())) < 1e-6


def test_prev_frame_required_except_for_cache_writes():
    m = _model()
    x = torch.rand(1, 2, 3, 32, 32)
    with pytest.raises(ValueError, match="prev_frame"):
        m(x, 0.5)
    with pytest.raises(ValueError, match="prev_frame"):
        m(x, 0.5, prev_frame=torch.rand(2, 3, 32, 32))
    assert torch.equal(m(x, 0.5, prev_frame=x[:, 0]), x[:, :1].expand(-1, 2, -1, -1, -1))
    plain = _model(copy_prior=False)
    assert plain(x, 0.5).shape == x.shape          # without the prior prev_frame is not needed


def test_copy_prior_trains_and_moves_off_the_copy():
    m = _model()
    clips = torch.stack([moving_sprites("sparse", 4, 32, i).frames for i in range(4)])
    losses = train_teacher(m, clips, steps=3, batch=2, lr=1e-3)
    assert len(losses) == 3 and not m.training
    assert m.out.weight.abs().sum() > 0
