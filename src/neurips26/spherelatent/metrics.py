r"""Sample-quality and cost metrics: Fréchet distance on any feature extractor, k-NN precision/recall, FLOPs.

Fréchet distance between Gaussians fitted to two feature sets (float64, unbiased covariances):

$$ d^2 = \lVert \mu_a - \mu_b \rVert^2 + \mathrm{tr}\big(\Sigma_a + \Sigma_b - 2(\Sigma_a\Sigma_b)^{1/2}\big). $$

$(\Sigma_a\Sigma_b)^{1/2}$ comes from ``scipy.linalg.sqrtm``; its real part is kept (round-off gives tiny
imaginary parts), and when it is not finite (singular covariances, N near the feature width) both covariances
get $\epsilon I$ added and it is retried, so no "imaginary component" crash. "FID" here is a *classifier* FID: the
features come from a small CNN trained on the data (never an Inception network; none can be downloaded offline).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from scipy import linalg
from torch import Tensor, nn

from neurips26.constraints import ArrayLike, Bool, Instance, Int, Real, check_arguments, validate
from neurips26.constraints import Callable as IsCallable
from neurips26.constraints import Tensor as TensorSpec

from .tokenizer import COUNT, check_images

__all__ = ["ClassifierFID", "DigitsClassifier", "compare_sampling_speed", "count_flops", "frechet_distance",
           "knn_precision_recall", "psnr"]


#: a feature set: a tensor or an ndarray (not a list); its shape [N, d] is :func:`_features`' declaration
FEATURES = Instance((Tensor, np.ndarray), "tensor or ndarray of features [N, d]")


def _features(where: str, specs: dict[str, str], **sets: object) -> list[np.ndarray]:
    """Each feature set as a float64 array of shape ``specs[name]`` (``"N_a d"``: ``d`` shared): finite,
    N >= 2 (a covariance)."""
    arrays = {name: f.detach().cpu().double().numpy() if isinstance(f, Tensor) else f for name, f in sets.items()}
    check_arguments(where, {name: ArrayLike(specs[name]) for name in arrays}, arrays)
    for name, f in arrays.items():
        if f.shape[0] < 2:
            raise ValueError(f"{where}: {name} needs at least 2 rows for a covariance, got {f.shape[0]}")
    return [f.astype(np.float64) for f in arrays.values()]


def _frechet_from_moments(mu_a: np.ndarray, cov_a: np.ndarray, mu_b: np.ndarray, cov_b: np.ndarray,
                          eps: float = 1e-6) -> float:
    with warnings.catch_warnings():  # a singular product is handled below, not warned about
        warnings.simplefilter("ignore", linalg.LinAlgWarning)
        covmean = linalg.sqrtm(cov_a @ cov_b)
    if not np.all(np.isfinite(covmean)):
        # singular product: regularise both covariances by $\epsilon I$ and retry
        offset = eps * np.eye(cov_a.shape[0])
        covmean = linalg.sqrtm((cov_a + offset) @ (cov_b + offset))
    covmean = np.real(covmean)
    diff = mu_a - mu_b
    # $\lVert\mu_a-\mu_b\rVert^2 + \mathrm{tr}\,\Sigma_a + \mathrm{tr}\,\Sigma_b
    #   - 2\,\mathrm{tr}(\Sigma_a\Sigma_b)^{1/2}$
    value = float(diff @ diff + np.trace(cov_a) + np.trace(cov_b) - 2.0 * np.trace(covmean))
    return max(value, 0.0)  # d^2 >= 0; round-off can leave about -1e-12


@validate(feats_a=FEATURES, feats_b=FEATURES)
def frechet_distance(feats_a: Tensor | np.ndarray, feats_b: Tensor | np.ndarray) -> float:
    """Fréchet distance between Gaussians fitted to ``feats_a [N_a, d]`` and ``feats_b [N_b, d]`` (N >= 2 each).

    Compare methods only at identical N (the estimate is biased in N).
    """
    a, b = _features("frechet_distance", {"feats_a": "N_a d", "feats_b": "N_b d"}, feats_a=feats_a,
                     feats_b=feats_b)
    return _frechet_from_moments(a.mean(0), np.cov(a, rowvar=False, ddof=1), b.mean(0), np.cov(b, rowvar=False, ddof=1))


class ClassifierFID:
    """torchmetrics-like FID accumulator on a pluggable feature extractor.

    Args:
        feature_extractor: a module or callable mapping images ``[B, C, H, W]`` (in [0, 1]) to features ``[B, d]``;
            run in ``eval()`` under ``no_grad``.
        batch_size: images per forward pass.
    """

    @validate(feature_extractor=IsCallable(), batch_size=COUNT)
    def __init__(self, feature_extractor: Callable[[Tensor], Tensor], *, batch_size: int = 512) -> None:
        self.feature_extractor, self.batch_size = feature_extractor, batch_size
        self.reset()

    def reset(self) -> None:
        """Forget both sides."""
        self._feats: dict[bool, list[np.ndarray]] = {True: [], False: []}

    @torch.no_grad()
    def _extract(self, x: Tensor) -> np.ndarray:
        net = self.feature_extractor
        was = net.training if isinstance(net, nn.Module) else None
        if isinstance(net, nn.Module):
            net.eval()
        try:
            out = torch.cat([net(x[i:i + self.batch_size]) for i in range(0, x.shape[0], self.batch_size)])
        finally:
            if was:
                net.train()
        return out.detach().cpu().double().numpy()

    @validate(real=Bool(), x=TensorSpec("B C H W", dtype="float"))
    def update(self, x: Tensor, real: bool) -> None:
        """Add images ``x [B, C, H, W]`` (finite) to the real (``real=True``) or generated side."""
        feats = self._extract(x)
        # the extractor's output: [rows, d], finite, d that of the earlier updates
        width = next((f.shape[1] for side in self._feats.values() for f in side), None)
        spec = ArrayLike(f"_ {'d' if width is None else width}")
        check_arguments("ClassifierFID.update", {"feature_extractor(x)": spec}, {"feature_extractor(x)": feats})
        self._feats[real].append(feats)

    def features(self, real: bool) -> np.ndarray:
        """All features of one side ``[N, d]``."""
        if not self._feats[real]:
            raise RuntimeError(f"no {'real' if real else 'generated'} images yet: call update(x, real={real}) first")
        return np.concatenate(self._feats[real])

    def compute(self) -> float:
        """The Fréchet distance between the two sides (both need >= 2 images)."""
        return frechet_distance(self.features(True), self.features(False))


class DigitsClassifier(nn.Module):
    """The digits-FID feature network: 2 conv layers + FC, 64-d penultimate features ``features(x)``.

    Input: images ``[B, 1, S, S]`` in [0, 1]. Trained as a classifier; never used in any generator loss.
    """

    @validate(image_size=Int(low=4), num_classes=Int(low=2), feature_dim=COUNT)
    def __init__(self, *, image_size: int = 16, num_classes: int = 10, feature_dim: int = 64) -> None:
        if image_size % 4:
            raise ValueError(f"image_size must be a multiple of 4 (two 2x2 poolings), got {image_size}")
        super().__init__()
        self.image_size = image_size
        self.conv = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(64 * (image_size // 4) ** 2, feature_dim), nn.ReLU())
        self.head = nn.Linear(feature_dim, num_classes)
        self.num_features = feature_dim  # read by torchmetrics' FrechetInceptionDistance(feature=...)

    def features(self, x: Tensor) -> Tensor:
        """``[B, 1, S, S]`` in [0, 1] -> ``[B, feature_dim]``."""
        check_images(x, channels=1, size=self.image_size, where="DigitsClassifier.features")
        return self.fc(self.conv(x * 2 - 1))

    def forward(self, x: Tensor) -> Tensor:
        """Class logits ``[B, num_classes]``."""
        return self.head(self.features(x))


class FeatureView(nn.Module):
    """Wraps a classifier so that ``forward`` returns its ``features`` (for torchmetrics and :class:`ClassifierFID`)."""

    @validate(classifier=Instance(DigitsClassifier))
    def __init__(self, classifier: DigitsClassifier) -> None:
        super().__init__()
        self.classifier = classifier
        self.num_features = classifier.num_features

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier.features(x)


@validate(real=FEATURES, fake=FEATURES, k=COUNT)
def knn_precision_recall(real: Tensor | np.ndarray, fake: Tensor | np.ndarray, k: int = 3) -> tuple[float, float]:
    """Improved precision/recall (Kynkäänniemi et al. 2019) with k-NN balls in feature space.

    precision = share of fake samples inside some real sample's k-NN ball; recall = share of real samples inside
    some fake sample's ball (radius = distance to its k-th nearest neighbour within its own set).
    """
    a, b = _features("knn_precision_recall", {"real": "N_real d", "fake": "N_fake d"}, real=real, fake=fake)
    if k >= min(len(a), len(b)):
        raise ValueError(f"knn_precision_recall: k must be an int in [1, min(N) - 1] = [1, {min(len(a), len(b)) - 1}], "
                         f"got {k!r}")

    ta, tb = torch.from_numpy(a), torch.from_numpy(b)

    def radii(x: Tensor) -> Tensor:
        # distance to the k-th neighbour; column 0 of the sorted row is the point itself
        return torch.cdist(x, x).sort(dim=1).values[:, k]

    def inside(points: Tensor, centres: Tensor, r: Tensor) -> float:
        return float((torch.cdist(points, centres) <= r[None]).any(dim=1).double().mean())

    return inside(tb, ta, radii(ta)), inside(ta, tb, radii(tb))


@validate(x=TensorSpec(dtype="float"), ref=TensorSpec(dtype="float"), data_range=Real(0.0, closed="neither"))
def psnr(x: Tensor, ref: Tensor, data_range: float = 2.0) -> float:
    """Peak signal-to-noise ratio in dB over the whole batch (images in [-1, 1]: range 2)."""
    if x.shape != ref.shape:
        raise ValueError(f"x and ref must have the same shape, got {tuple(x.shape)} and {tuple(ref.shape)}")
    mse = float((x - ref).pow(2).mean())
    return math.inf if mse == 0 else 10.0 * math.log10(data_range ** 2 / mse)


@validate(fn=IsCallable())
def count_flops(fn: Callable[[], Any]) -> int:
    """Floating-point operations of one call of ``fn()`` (``torch.utils.flop_counter``; a multiply-add = 2)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


@validate(steps=COUNT, batch=COUNT, repeats=Int(low=2), num_classes=COUNT, threads=COUNT, flops_batch=COUNT)
def compare_sampling_speed(model_a: Any, model_b: Any, *, steps: int, batch: int = 256, repeats: int = 7,
                           num_classes: int = 10, threads: int = 1, flops_batch: int = 16) -> dict[str, Any]:
    """Sampling cost of ``model_a`` against ``model_b`` at ``steps`` steps: both ``sample(batch, steps, y)`` calls
    interleaved in this process at ``threads`` thread(s) on the process CPU clock
    (:func:`neurips26.claims.measure.timeit_pair`, one warm-up each), plus FLOPs per image of each.

    Returns ``{"ratios": [time_b / time_a per interleaved pair], "timing": {...}, "flops_a", "flops_b",
    "flops_ratio" (b / a), "images_per_s_a", "images_per_s_b"}`` (ratios above 1: A is faster). The claim check
    and ``benchmarks/spherelatent_bench.py`` both call this, so their numbers are the same protocol.
    """
    from neurips26.claims import measure

    labels = torch.arange(batch) % num_classes
    gen_a, gen_b = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)

    def run(model: Any, gen: torch.Generator) -> Callable[[], None]:
        def call() -> None:
            with torch.no_grad():
                model.sample(batch, steps=steps, y=labels, generator=gen)
        return call

    cmp = measure.timeit_pair(run(model_a, gen_a), run(model_b, gen_b), repeats=repeats, warmup=1, threads=threads,
                              clock="process")
    small = torch.arange(flops_batch) % num_classes
    flops_a = count_flops(lambda: model_a.sample(flops_batch, steps=steps, y=small)) / flops_batch
    flops_b = count_flops(lambda: model_b.sample(flops_batch, steps=steps, y=small)) / flops_batch
    return {"ratios": list(cmp.ratios), "ratio": cmp.ratio, "lo": cmp.lo, "hi": cmp.hi, "timing": cmp.record(),
            "flops_a": flops_a, "flops_b": flops_b, "flops_ratio": flops_b / flops_a,
            "images_per_s_a": batch / float(np.median(cmp.a.values)),
            "images_per_s_b": batch / float(np.median(cmp.b.values))}
