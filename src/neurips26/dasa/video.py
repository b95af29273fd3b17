r"""Synthetic moving-sprite videos (the spec's data) and fidelity metrics: PSNR, SSIM and a mini-VBench.

**MovingSprites.** A smooth random background (``scipy.ndimage.gaussian_filter``, σ = 3 at 64 px) with a few
static rectangles; scikit-learn digit glyphs (8×8, scaled to 12 px at 64 px) in random colours move 1–2 px
per frame and bounce off the walls; ±2 % global brightness flicker. Regimes: ``sparse`` (1 sprite),
``medium`` (4 sprites), ``dense`` (4 sprites over a camera pan of 1 px/frame), ``occlusion`` (2 sprites
behind a dark bar sweeping at 1/8 of the frame per frame, see :func:`_bar_track`).

**mini-VBench** (own code, inferred stand-ins; each score is compared relative to the dense rollout):
background consistency (PSNR of static pixels vs frame 0), flicker ($1 -$ mean |Δframe| on static pixels),
motion smoothness ($1 -$ mean |second difference| of the foreground centroid, in pixels/size) and subject
consistency (mean cosine of consecutive foreground crops).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from ..constraints import Choice, Int, Real, Tensor, validate

REGIMES = ("sparse", "medium", "dense", "occlusion")
BAR_LEVEL = 0.05                      # grey level of the occluding bar (before flicker)


@dataclass
class SpriteVideo:
    """``frames [T, 3, S, S]`` float32 in [0, 1]; ``sprite_mask [T, S, S]`` bool (moving pixels);
    ``static_mask [S, S]`` bool (pixels never covered by a sprite and, for pans, the pan is not static)."""

    frames: torch.Tensor
    sprite_mask: torch.Tensor
    static_mask: torch.Tensor
    regime: str
    background: torch.Tensor | None = None   # [3, S, S] sprite-free first frame (before flicker)


@lru_cache(maxsize=1)
def _glyphs() -> np.ndarray:
    from neurips26.data import load_digits

    x, _ = load_digits()
    return (x.reshape(-1, 8, 8) / 16.0).astype(np.float32)


def _resize(img: np.ndarray, size: int) -> np.ndarray:
    """Nearest-neighbour resize of a square image to ``size × size``."""
    idx = np.minimum((np.arange(size) * img.shape[0] / size).astype(int), img.shape[0] - 1)
    return img[np.ix_(idx, idx)]


@validate(regime=Choice(*REGIMES), num_frames=Int(low=2), size=Int(low=16), seed=Int(low=0))
def moving_sprites(regime: str, num_frames: int, size: int = 64, seed: int = 0) -> SpriteVideo:
    """One seeded video of the given regime (see the module docstring)."""
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(seed)
    pan = regime == "dense"
    scale = size / 64
    big = size + (num_frames if pan else 0)
    bg = np.stack([gaussian_filter(rng.random((big, big)), 3 * scale) for _ in range(3)])
    bg = (bg - bg.min()) / (bg.max() - bg.min() + 1e-9) * 0.6 + 0.2
    for _ in range(3):                                     # static shapes
        h, w = rng.integers(int(6 * scale), int(14 * scale), size=2)
        y, x = rng.integers(0, big - h), rng.integers(0, big - w)
        bg[:, y:y + h, x:x + w] = rng.random(3)[:, None, None]
    glyphs = _glyphs()
    gs = max(4, round(12 * scale))
    n_sprites = {"sparse": 1, "occlusion": 2}.get(regime, 4)
    sprites = []
    for _ in range(n_sprites):
        g = _resize(glyphs[rng.integers(len(glyphs))], gs)
        pos = rng.uniform(0, size - gs, size=2)
        vel = rng.choice([-1, 1], size=2) * rng.uniform(1, 2, size=2) * scale
        sprites.append([g, pos, vel, rng.uniform(0.1, 1.0, size=3)])
    background = torch.from_numpy(bg[:, :size, :size].astype(np.float32))
    bar = _bar_track(rng, num_frames, size) if regime == "occlusion" else None
    frames = np.empty((num_frames, 3, size, size), np.float32)
    masks = np.zeros((num_frames, size, size), bool)
    for t in range(num_frames):
        off = t if pan else 0
        img = bg[:, off:off + size, off:off + size].copy()
        for sp in sprites:
            g, pos, vel, col = sp
            y, x = np.round(pos).astype(int)
            alpha = g > 0.25
            img[:, y:y + gs, x:x + gs][:, alpha] = col[:, None] * g[alpha][None]
            masks[t, y:y + gs, x:x + gs] |= alpha
            pos += vel
            for a in range(2):                              # bounce off the walls
                if pos[a] < 0 or pos[a] > size - gs:
                    vel[a] = -vel[a]
                    pos[a] = np.clip(pos[a], 0, size - gs)
        if bar is not None:                                  # the occluder, in front of everything
            axis, lo, hi = bar[t]
            if axis == 0:
                img[:, :, lo:hi] = BAR_LEVEL
            else:
                img[:, lo:hi, :] = BAR_LEVEL
        frames[t] = np.clip(img * (1 + rng.uniform(-0.02, 0.02)), 0, 1)
    static = ~masks.any(0) if not pan else np.zeros((size, size), bool)
    if bar is not None:                                      # pixels the bar ever covers are not static
        for axis, lo, hi in bar:
            if axis == 0:
                static[:, lo:hi] = False
            else:
                static[lo:hi, :] = False
    return SpriteVideo(torch.from_numpy(frames), torch.from_numpy(masks), torch.from_numpy(static), regime, background)


def _bar_track(rng: np.random.Generator, num_frames: int, size: int) -> list[tuple[int, int, int]]:
    """Per frame ``(axis, lo, hi)`` of the occluding bar: vertical (axis 0, columns ``lo:hi``) or horizontal
    (rows); width 3/8 of the frame, speed 1/8 of the frame (one 8-px token at 64 px) per frame, entering from a
    random side and bouncing off the walls. It is **in the context frames** (1/8 of it at frame 0, 2/8 at
    frame 1), so a rollout from the context knows where it is and how fast it moves; a band it covers is seen
    before (in an earlier frame) and hidden for three frames, so when it reappears only a cache that reaches
    two chunks back still holds it (protocol 4: the first version entered at frame 2, after the context, so no
    rollout could know the bar and the regime did not need history)."""
    axis = int(rng.integers(2))
    step, width = size // 8, 3 * size // 8
    u_min, u_max = step - width, size - width                 # leading band position, reflected in [u_min, u_max]
    span = u_max - u_min
    from_left = bool(rng.integers(2))
    out = []
    for t in range(num_frames):
        k = (t * step) % (2 * span)                            # triangle wave
        u = u_min + (k if k <= span else 2 * span - k)
        lo, hi = max(u, 0), u + width
        if not from_left:
            lo, hi = size - hi, size - lo
        out.append((axis, lo, hi))
    return out


_POSITIVE = Real(low=0.0, closed="neither")


def _same_shape(where: str, x: torch.Tensor, ref: torch.Tensor) -> None:
    if x.shape != ref.shape:
        raise ValueError(f"{where}: x and ref must share a shape, got {tuple(x.shape)} and {tuple(ref.shape)}")


@validate(x=Tensor(), ref=Tensor(), data_range=_POSITIVE)
def psnr(x: torch.Tensor, ref: torch.Tensor, data_range: float = 1.0) -> float:
    r"""$10 \log_{10}(R^2 / \mathrm{MSE})$ in dB over all elements (capped at 100 dB for identical inputs)."""
    _same_shape("psnr", x, ref)
    mse = float(((x.float() - ref.float()) ** 2).mean())
    return 100.0 if mse <= 1e-10 else 10 * math.log10(data_range**2 / mse)


@validate(x=Tensor(), ref=Tensor(), data_range=_POSITIVE, sigma=_POSITIVE)
def ssim(x: torch.Tensor, ref: torch.Tensor, data_range: float = 1.0, sigma: float = 1.5) -> float:
    r"""Mean SSIM (Wang et al. 2004; Gaussian window σ = 1.5, 11 taps) of images ``[..., C, H, W]``:
    $\frac{(2\mu_x\mu_y + c_1)(2\sigma_{xy} + c_2)}{(\mu_x^2 + \mu_y^2 + c_1)(\sigma_x^2 + \sigma_y^2 + c_2)}$."""
    _same_shape("ssim", x, ref)
    a = x.float().reshape(-1, 1, *x.shape[-2:])
    b = ref.float().reshape(-1, 1, *x.shape[-2:])
    r = torch.arange(11, dtype=torch.float32) - 5
    w = torch.exp(-(r**2) / (2 * sigma**2))
    w = (w / w.sum())
    win = (w[:, None] * w[None, :])[None, None]

    def blur(z):
        return torch.nn.functional.conv2d(z, win)

    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    mx, my = blur(a), blur(b)
    sxx, syy, sxy = blur(a * a) - mx**2, blur(b * b) - my**2, blur(a * b) - mx * my
    s = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx**2 + my**2 + c1) * (sxx + syy + c2))
    return float(s.mean())


@validate(video=Tensor("T 3 H W"), static_mask=Tensor("H W", finite=False), background=Tensor("3 H W"))
def mini_vbench(video: torch.Tensor, static_mask: torch.Tensor, background: torch.Tensor) -> dict[str, float]:
    """Scores of a video ``[T, 3, S, S]`` (higher is better); ``static_mask [S, S]`` pixels that should not
    change, ``background [3, S, S]`` the sprite-free reference used to find the foreground (|x − bg| > 0.1)."""
    if video.shape[0] < 3:
        raise ValueError(f"mini_vbench: video must hold T >= 3 frames, got {video.shape[0]}")
    v = video.float().clamp(0, 1)
    t = v.shape[0]
    st = static_mask.bool()
    out: dict[str, float] = {}
    if st.any():
        out["background_consistency"] = float(np.mean([psnr(v[i][:, st], v[0][:, st]) for i in range(1, t)]))
        out["flicker"] = 1.0 - float((v[1:] - v[:-1]).abs()[:, :, st].mean())
    fg = (v - background[None]).abs().amax(1) > 0.1                                  # [T, S, S]
    ys, xs = torch.meshgrid(torch.arange(v.shape[-2]), torch.arange(v.shape[-1]), indexing="ij")
    cent = []
    for i in range(t):
        m = fg[i].float()
        cent.append(torch.stack([(m * ys).sum(), (m * xs).sum()]) / m.sum().clamp_min(1))
    cent = torch.stack(cent)
    out["motion_smoothness"] = 1.0 - float((cent[2:] - 2 * cent[1:-1] + cent[:-2]).norm(dim=1).mean()) / v.shape[-1]
    feats = (v * fg[:, None]).reshape(t, -1)
    out["subject_consistency"] = float(torch.nn.functional.cosine_similarity(feats[1:], feats[:-1], dim=1,
                                                                             eps=1e-6).mean())
    return out


class MovingSprites(torch.utils.data.Dataset):
    """Seeded dataset of ``count`` sprite videos ``[num_frames, 3, size, size]`` of one regime
    (item ``i`` uses seed ``seed + i``)."""

    def __init__(self, regime: str, num_frames: int, size: int = 64, seed: int = 0, count: int = 64) -> None:
        moving_sprites(regime, 2, size, seed)        # validates the arguments
        self.regime, self.num_frames, self.size, self.seed, self.count = regime, num_frames, size, seed, count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> torch.Tensor:
        return moving_sprites(self.regime, self.num_frames, self.size, self.seed + int(i)).frames
