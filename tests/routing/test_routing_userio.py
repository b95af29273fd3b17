"""Users' own TSPLIB files, x8 symmetry augmentation, multi-start decoding and lengths of huge instances."""

import math

import numpy as np
import pytest
import torch

from neurips26.routing import (
    DecoderConfig,
    TSPDecoderOnly,
    augment_x8,
    distance_matrix,
    greedy_construct,
    make_tsp_instances,
    multi_start_construct,
    random_tours,
    read_tour,
    read_tsp,
    tour_length,
)

TSP = """NAME : t6
TYPE : TSP
COMMENT : six cities, nint distances
DIMENSION : 6
EDGE_WEIGHT_TYPE : EUC_2D
NODE_COORD_SECTION
1 0 0
2 3 0
3 3 4
4 0 4
5 1.5 2.2
6 2.5 1.5
EOF
"""
TOUR = "NAME : t6.opt.tour\nTYPE : TOUR\nDIMENSION : 6\nTOUR_SECTION\n1\n2\n6\n3\n4\n5\n-1\nEOF\n"


def _tiny_model(seed=0):
    torch.manual_seed(seed)
    return TSPDecoderOnly(DecoderConfig(d_model=16, n_layers=1))


def test_tsplib_round_trip_scores_with_nint_distances(tmp_path):
    (tmp_path / "t6.tsp").write_text(TSP)
    (tmp_path / "t6.opt.tour").write_text(TOUR)
    inst = read_tsp(tmp_path / "t6.tsp")
    assert inst.n == 6 and inst.X.shape == (1, 6, 2) and inst.rounding == "nint_half_up" and inst.name == "t6"
    tour = read_tour(tmp_path / "t6.opt.tour", n=inst.n)
    np.testing.assert_array_equal(tour, [[0, 1, 5, 2, 3, 4]])
    pts = inst.X[0]
    by_hand = sum(math.floor(math.hypot(*(pts[a] - pts[b])) + 0.5)
                  for a, b in zip(tour[0], np.roll(tour[0], -1)))
    assert tour_length(inst.X, tour, rounding=inst.rounding)[0] == by_hand


def test_tsplib_refuses_unsupported_and_broken_files(tmp_path):
    (tmp_path / "geo.tsp").write_text(TSP.replace("EUC_2D", "GEO"))
    with pytest.raises(ValueError, match="EDGE_WEIGHT_TYPE GEO is not supported"):
        read_tsp(tmp_path / "geo.tsp")
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_tsp(tmp_path / "absent.tsp")
    (tmp_path / "bad.tour").write_text("TOUR_SECTION\n1\n2\n2\n-1\n")
    with pytest.raises(ValueError, match="permutations"):
        read_tour(tmp_path / "bad.tour")
    (tmp_path / "none.tour").write_text("NAME : x\n")
    with pytest.raises(ValueError, match="no TOUR_SECTION"):
        read_tour(tmp_path / "none.tour")


def test_augmentation_images_are_isometries():
    X = make_tsp_instances(3, 9, seed=0).astype(np.float64) * 7 + 2  # not the unit square
    images = augment_x8(X)
    assert images.shape == (8, 3, 9, 2)
    np.testing.assert_array_equal(images[0], X)
    D = distance_matrix(X)
    tours = random_tours(3, 9, seed=1)
    for image in images:
        np.testing.assert_allclose(distance_matrix(image), D, atol=1e-12)
        np.testing.assert_allclose(tour_length(image, tours), tour_length(X, tours), rtol=1e-13)
    assert len({images[k].tobytes() for k in range(8)}) == 8  # eight distinct images


def test_multi_start_is_the_best_single_start_and_augment_never_worse():
    model = _tiny_model()
    X = make_tsp_instances(4, 8, seed=2)
    starts = [0, 3, 5]
    _, multi = multi_start_construct(model, X, starts)
    singles = np.stack([greedy_construct(model, X, s)[1].numpy() for s in starts])
    np.testing.assert_allclose(multi.numpy(), singles.min(0), rtol=1e-6)
    tours, aug = multi_start_construct(model, X, starts, augment=True)
    assert (aug.numpy() <= multi.numpy() + 1e-9).all()
    np.testing.assert_allclose(tour_length(X, tours.numpy()), aug.numpy(), rtol=1e-12)  # tours of the original
    small_tours, small = multi_start_construct(model, X, starts, augment=True, max_batch=5)  # chunked rollouts
    np.testing.assert_allclose(small.numpy(), aug.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="max_batch"):
        multi_start_construct(model, X, starts, max_batch=0)


def test_multi_start_refuses_bad_starts_before_decoding():
    model = _tiny_model()
    X = make_tsp_instances(2, 5, seed=0)
    for bad, err in (([], ValueError), ([0, 9], ValueError), (3, ValueError), ([True], ValueError)):
        with pytest.raises(err, match="starts"):
            multi_start_construct(model, X, bad)
    with pytest.raises(TypeError, match="augment"):
        multi_start_construct(model, X, [0], augment="yes")


def test_huge_finite_coordinates_give_finite_lengths_or_a_clear_error():
    tours = np.array([[0, 1, 2]])
    X = np.array([[[0.0, 0.0], [1e200, 0.0], [0.0, 1e200]]])  # squaring would overflow; hypot does not
    length = tour_length(X, tours)
    assert np.isfinite(length).all() and length[0] == pytest.approx((2 + math.sqrt(2)) * 1e200)
    with pytest.raises(ValueError, match="overflow float64; rescale"):
        tour_length(np.array([[[-1.7e308, 0.0], [1.7e308, 0.0], [0.0, 0.0]]]), tours)
    with pytest.raises(ValueError, match="overflow"):
        distance_matrix(np.array([[[-1.7e308, 0.0], [1.7e308, 0.0]]]))


def test_cli_tour_reads_a_users_file_and_refuses_bad_ones_in_one_line(tmp_path, capsys):
    import json

    from neurips26.cli import main

    (tmp_path / "t6.tsp").write_text(TSP)
    (tmp_path / "t6.opt.tour").write_text(TOUR)
    assert main(["routing", "tour", str(tmp_path / "t6.tsp"), "--opt-tour", str(tmp_path / "t6.opt.tour"),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 6 and sorted(out["tour"]) == list(range(1, 7))
    inst = read_tsp(tmp_path / "t6.tsp")
    assert out["length"] == tour_length(inst.X, np.array([out["tour"]]) - 1, rounding="nint_half_up")[0]
    ref = tour_length(inst.X, read_tour(tmp_path / "t6.opt.tour"), rounding="nint_half_up")[0]
    assert out["opt_length"] == ref and out["gap_percent"] == pytest.approx(100 * (out["length"] - ref) / ref)
    import itertools  # the true optimum by enumeration (6 cities): no tour the CLI prints can beat it

    best = min(tour_length(inst.X, np.array([(0, *p)]), rounding="nint_half_up")[0]
               for p in itertools.permutations(range(1, 6)))
    assert out["length"] >= best
    for argv in (["routing", "tour", str(tmp_path / "absent.tsp")],
                 ["routing", "tour", str(tmp_path / "t6.tsp"), "--method", "magic"],
                 ["routing", "tour", str(tmp_path / "t6.tsp"), "--opt-tour", str(tmp_path / "t6.tsp")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("neurips26 routing:") and err.count("\n") == 1
