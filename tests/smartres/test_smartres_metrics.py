"""box_iou vs pixel counting; the scene generator's contract; region labels vs a loop."""

import numpy as np
import pytest
import torch

from neurips26.smartres import SyntheticEgoGrounding, box_iou, grounding_accuracy, region_labels


def _pixels(box, size=40):
    m = np.zeros((size, size), bool)
    x1, y1, x2, y2 = (int(v) for v in box)
    m[y1:y2, x1:x2] = True
    return m


def test_box_iou_matches_pixel_counting():
    rng = np.random.default_rng(0)
    a = [sorted(rng.integers(0, 40, 2)) for _ in range(12)]
    boxes = []
    for i in range(0, 12, 2):
        boxes.append([a[i][0], a[i + 1][0], a[i][1] + 1, a[i + 1][1] + 1])
    t = torch.tensor(boxes, dtype=torch.float32)
    got = box_iou(t, t.flip(0))
    for i, bi in enumerate(boxes):
        for j, bj in enumerate(boxes[::-1]):
            pi, pj = _pixels(bi), _pixels(bj)
            ref = (pi & pj).sum() / max((pi | pj).sum(), 1)
            assert got[i, j].item() == pytest.approx(ref, abs=1e-6)


def test_hand_cases_and_accuracy():
    a = torch.tensor([[0.0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 10, 10]])
    b = torch.tensor([[0.0, 0, 10, 10], [5, 0, 15, 10], [20, 20, 30, 30]])
    assert torch.allclose(box_iou(a, b)[:, 0], torch.tensor([1.0, 1.0, 1.0]))
    assert box_iou(a[1:2], b[1:2]).item() == pytest.approx(50 / 150)
    assert grounding_accuracy(a, b, 0.5) == pytest.approx(1 / 3)
    assert grounding_accuracy(a, b, 0.3) == pytest.approx(2 / 3)


@pytest.mark.parametrize("bad,match", [(torch.tensor([[5.0, 0, 1, 3]]), "x2 >= x1"),
                                       (torch.tensor([[0.0, 0, 1]]), r"\[N, 4\]"),
                                       (torch.tensor([[0.0, float("nan"), 1, 1]]), "finite")])
def test_box_iou_refuses_bad_boxes(bad, match):
    with pytest.raises(ValueError, match=match):
        box_iou(bad, torch.zeros(1, 4))


def test_scenes_are_seeded_and_the_target_is_unique():
    ds = SyntheticEgoGrounding(6, size=64, seed=3)
    a, b = ds[2], SyntheticEgoGrounding(6, size=64, seed=3)[2]
    assert torch.equal(a["image"], b["image"]) and torch.equal(a["box"], b["box"])
    assert not torch.equal(a["image"], SyntheticEgoGrounding(6, size=64, seed=4)[2]["image"])
    assert ds.batch(range(6))["small"].sum() == 3
    for i in range(6):
        s = ds[i]
        x1, y1, x2, y2 = s["box"].tolist()
        assert 0 <= x1 < x2 <= 64 and 0 <= y1 < y2 <= 64
        assert s["image"].min() >= 0 and s["image"].max() <= 1


def test_region_labels_match_loop():
    boxes = torch.tensor([[10.0, 10, 20, 20], [30, 0, 34, 5], [0, 60, 64, 64]])
    fg = region_labels(boxes, 64, (4, 4))
    for b, (x1, y1, x2, y2) in enumerate(boxes.tolist()):
        for j in range(16):
            gx, gy = (j % 4) * 16, (j // 4) * 16
            overlap = min(x2, gx + 16) > max(x1, gx) and min(y2, gy + 16) > max(y1, gy)
            assert bool(fg[b, j]) == overlap


def test_dataset_refuses_bad_arguments():
    with pytest.raises(ValueError, match="size"):
        SyntheticEgoGrounding(3, size=40)
    with pytest.raises(ValueError, match="small_frac"):
        SyntheticEgoGrounding(3, small_frac=1.5)
