"""``neurips26 effbench``: build a small benchmark from a correctness matrix, then score new models.

    neurips26 effbench select --matrix scores.npz [--key mmlu] --budget 0.1 --out tiny/
    neurips26 effbench predict --model tiny/ --answers new_models.csv

``select`` runs mRMR on the source matrix (rows = models, columns = questions), fits the regressor
(default degree-2 kernel ridge, alpha by leave-one-out or ``--folds K``) and writes
``coreset.json`` (the question indices, in order) plus ``predictor.npz``/``predictor.json`` (no pickle).
``predict`` reads answers of new models, either on all questions or on the coreset only (columns in
``coreset.json`` order), and prints one predicted full score per model.

Matrices: ``.npz`` (a 2-D numeric array; ``--key`` names it when there are several) or ``.csv``
(numbers, optionally with one header row of question ids; ``--header auto|yes|no``). Bad input: one line
on stderr, exit 2. ``select`` refuses an ``--out`` that already holds a model unless ``--force``, and
writes every file atomically (temporary name, then rename).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from neurips26.constraints import AnyOf, Bool, Choice, Int, Real, check_arguments

from ._validation import check_matrix

EXIT_BAD_INPUT = 2


class InputError(Exception):
    """A problem with the user's files or options: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + message
        raise InputError(message)


def _is_header(first: list[str]) -> bool:
    """A first row is a header of question ids when a cell is not a number, or when a number lies outside
    [0, 1] (scores cannot; numeric ids such as ``3,17,42`` do)."""
    try:
        values = [float(cell) for cell in first]
    except ValueError:
        return True
    return any(not (0.0 <= v <= 1.0) for v in values)


def _read_csv(path: Path, header_mode: str = "auto") -> tuple[np.ndarray, list[str] | None]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = [row for row in csv.reader(fh) if row and any(cell.strip() for cell in row)]
    except (UnicodeDecodeError, csv.Error) as err:
        raise InputError(f"{path}: not a readable UTF-8 CSV ({type(err).__name__})") from err
    header = None
    if rows and (header_mode == "yes" or (header_mode == "auto" and _is_header(rows[0]))):
        header, rows = [cell.strip() for cell in rows[0]], rows[1:]
    if not rows:
        raise InputError(f"{path} has a header but no rows" if header is not None else f"{path} is empty")
    widths = {len(row) for row in rows}
    if len(widths) != 1:
        raise InputError(f"{path}: rows have different lengths {sorted(widths)}")
    try:
        data = np.array([[float(cell) if cell.strip() else np.nan for cell in row] for row in rows])
    except ValueError as err:
        raise InputError(f"{path}: non-numeric entry ({err})") from err
    if header is not None and len(header) != data.shape[1]:
        raise InputError(f"{path}: header has {len(header)} ids but rows have {data.shape[1]} columns")
    return data, header


def read_matrix(path_text: str, key: str | None, header: str = "auto") -> tuple[np.ndarray, list[str] | None]:
    """Load a ``(models, questions)`` matrix from ``.npz`` or ``.csv``; question ids when the file has them.

    ``header`` (CSV only): ``"yes"`` the first row is question ids, ``"no"`` it is a model, ``"auto"`` it is a
    header when it holds a non-number or a number outside [0, 1]."""
    path = Path(path_text)
    if not path.is_file():
        raise InputError(f"file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        if key is not None:
            raise InputError("--key applies to .npz files only")
        return _read_csv(path, header)
    if suffix != ".npz":
        raise InputError(f"{path}: expected a .npz or .csv file, got {suffix or 'no extension'}")
    try:
        # arrays decompress lazily: every read of the archive is inside this block
        with np.load(path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except InputError:
        raise
    except Exception as err:  # noqa: BLE001 - any unreadable archive (BadZipFile, zlib.error, ...) is the user's file
        raise InputError(f"{path}: not a readable npz ({type(err).__name__})") from err
    numeric = [k for k, a in arrays.items() if a.ndim == 2 and a.dtype.kind in "biuf"]
    if key is None:
        if len(numeric) != 1:
            raise InputError(f"{path} holds {len(numeric)} matrices {numeric}; choose one with --key")
        key = numeric[0]
    if key not in numeric:
        raise InputError(f"{path}: array {key!r} is not a 2-D numeric matrix" if key in arrays
                         else f"{path} has no array {key!r}; available: {numeric}")
    return np.asarray(arrays[key], dtype=np.float64), None


def _check_values(S: np.ndarray, what: str, binary: bool) -> np.ndarray:
    try:
        return check_matrix(S, name=what, binary=binary if binary else False)
    except (ValueError, TypeError) as err:
        raise InputError(str(err)) from err


def _int_or_fraction(text: str) -> int | float:
    """``"50"`` -> 50, ``"0.1"`` -> 0.1 (``ValueError`` for neither)."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def declared(parse, constraint, flag: str, *, keep_text: bool = False):
    """An argparse ``type=``: ``parse`` the text, then check the value against ``constraint``; a refusal is
    argparse's one-line error naming ``flag`` (``"argument --mi-k: --mi-k must be an int >= 1, got 0"``).
    ``keep_text``: return the checked text itself (``--budget`` is recorded as typed)."""
    def convert(text: str):
        try:
            value = parse(text)
            check_arguments("", {flag: constraint}, {flag: value})
        except ValueError as err:
            message = str(err) if flag in str(err) else f"{flag} must be {constraint.expected}, got {text!r}"
            raise argparse.ArgumentTypeError(message) from None
        return text if keep_text else value
    convert.__name__ = flag.lstrip("-")
    return convert


_BUDGET = AnyOf(Int(low=1), Real(0, 1, closed="right"))  # a question count or a fraction in (0, 1]


def parse_budget(text: str, n_questions: int) -> int | float:
    """``"0.1"`` -> fraction in (0, 1]; ``"50"`` -> a count in [1, n_questions] (``text`` as checked by the
    ``--budget`` type)."""
    value = _int_or_fraction(text)
    if isinstance(value, int):  # a count is at most the question count (ValueError: main prints it as one line)
        check_arguments(f"{n_questions} questions", {"--budget": Int(high=n_questions)}, {"--budget": value})
    return value


MODEL_FILES = ("predictor.json", "predictor.npz", "coreset.json")


def _remove_stale_temporaries(out_dir: Path) -> None:
    """Delete the ``.<file>.*.tmp`` a ``select`` killed mid-write left in ``--out`` (one writer per folder)."""
    if not out_dir.is_dir():
        return
    for name in MODEL_FILES:
        for tmp in out_dir.glob(f".{name}.*.tmp"):
            try:
                if tmp.is_file() and not tmp.is_symlink():
                    tmp.unlink()
            except OSError:
                continue


def _cmd_select(args) -> int:
    from .mrmr import MRMRSelector
    from .pipeline import EfficientBenchmark, atomic_write, make_predictor

    out_dir = Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir} is a file; give a folder")
    taken = [n for n in ("predictor.json", "predictor.npz", "coreset.json") if (out_dir / n).exists()]
    if taken and not args.force:
        raise InputError(f"--out {out_dir} already holds a model ({', '.join(taken)}); pass --force to replace it")
    S, ids = read_matrix(args.matrix, args.key, args.header)
    binary = not args.continuous
    S = _check_values(S, "matrix", binary)
    n_models, n_questions = S.shape
    if not 1 <= args.mi_k < n_models:
        raise InputError(f"--mi-k must lie in [1, {n_models - 1}] (fewer neighbours than the {n_models} source "
                         f"models), got {args.mi_k}")
    budget = parse_budget(args.budget, n_questions)
    if args.folds is not None:  # at most one fold per source model (ValueError: main prints it as one line)
        check_arguments(f"{n_models} source models", {"--folds": Int(high=n_models)}, {"--folds": args.folds})
    if n_models < 3:
        raise InputError(f"need at least 3 source models to fit a regressor, got {n_models}")
    predictor = make_predictor(args.regressor)
    if args.folds is not None and args.regressor != "mean":
        predictor.set_params(cv=args.folds)
    selector = MRMRSelector(budget, mi="ross" if binary else "ksg", mi_k=args.mi_k, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        bench = EfficientBenchmark(selector, predictor).fit(S, question_ids=ids)
    _remove_stale_temporaries(out_dir)
    try:
        out = bench.save(out_dir, overwrite=args.force)
    except OSError as err:
        raise InputError(f"--out {out_dir}: cannot write ({err.strerror or err})") from err
    info = {"coreset": bench.coreset_.tolist(), "question_ids": [ids[j] for j in bench.coreset_] if ids else None,
            "n_source_models": n_models, "n_questions": n_questions, "budget": args.budget,
            "regressor": args.regressor, "mi_k": args.mi_k, "binary": binary,
            "alpha": getattr(bench.predictor_, "alpha_", None)}
    atomic_write(out / "coreset.json", lambda fh: fh.write(json.dumps(info, indent=1).encode("utf-8")))
    print(f"selected {bench.coreset_.size} of {n_questions} questions from {n_models} source models "
          f"-> {out}/coreset.json, {out}/predictor.npz")
    if n_models < 20:
        print(f"warning: only {n_models} source models; predictions are unreliable below 20", file=sys.stderr)
    return 0


def _strict_json(path: Path):
    """JSON with no NaN/Infinity token, no overflowing number and no duplicate key; InputError otherwise."""
    def finite(text):  # a float or int literal beyond a double, or a bare NaN/Infinity token
        value = float(text)
        if not np.isfinite(value):
            raise ValueError(f"number {text[:30]} is not a finite double")
        return value

    def unique(pairs):
        keys = [k for k, _ in pairs]
        dup = next((k for k in keys if keys.count(k) > 1), None)
        if dup is not None:
            raise ValueError(f"duplicate key {dup!r}")
        return dict(pairs)

    try:  # an integer beyond a double is refused as a float overflowing one is
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=finite, parse_float=finite,
                          parse_int=lambda text: (finite(text), int(text))[1], object_pairs_hook=unique)
    except (OSError, ValueError, RecursionError) as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise InputError(f"--model: {path} is not valid JSON ({str(err).splitlines()[0][:120]})") from err


# predictor.json: the fields every kind has, then each kind's own (JSON numbers: int or float, never a bool)
_META = {"kind": Choice("krr", "ridge", "mean"), "clip": Bool(), "n_questions_total": Int(low=1)}
_META_KIND = {"krr": {"gamma": Real(), "coef0": Real(), "alpha": Real(), "degree": Int(low=1)},
              "ridge": {"alpha": Real(), "intercept": Real()}, "mean": {}}


def check_model_folder(folder: Path) -> None:
    """Check what ``select`` writes (``predictor.json`` + ``predictor.npz``) before loading it: one InputError
    naming the file and the field for anything a loader would trip on (wrong types, shapes, NaN, a folder)."""
    meta_path, arr_path = folder / "predictor.json", folder / "predictor.npz"
    for path in (meta_path, arr_path):
        if path.exists() and not path.is_file():
            raise InputError(f"--model: {path} is a folder where a file belongs")
    if not meta_path.is_file() or not arr_path.is_file():
        raise InputError(f"--model: {folder} has no predictor.json/predictor.npz (write them with `select`)")
    meta = _strict_json(meta_path)
    if not isinstance(meta, dict):
        raise InputError(f"--model: {meta_path} must hold a JSON object, got {type(meta).__name__}")
    try:
        fields = {key: meta.get(key) for key in _META}  # a missing field is None, which no constraint accepts
        check_arguments(f"--model: {meta_path}: field", _META, fields)
        kind = meta["kind"]
        check_arguments(f"--model: {meta_path}: field", _META_KIND[kind], {k: meta.get(k) for k in _META_KIND[kind]})
    except ValueError as err:
        raise InputError(str(err)[:200]) from None
    n_total = meta["n_questions_total"]
    ids = meta.get("question_ids")
    if ids is not None and not (isinstance(ids, list) and len(ids) == n_total and all(isinstance(i, str) for i in ids)):
        raise InputError(f"--model: {meta_path}: field 'question_ids' must be null or {n_total} strings")
    try:
        with np.load(arr_path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except Exception as err:  # noqa: BLE001 - BadZipFile, zlib.error, EOFError, a pickled array: the file is bad
        raise InputError(f"--model: {arr_path}: not a readable npz ({type(err).__name__})") from err
    coreset = arrays.get("coreset")
    if coreset is None or coreset.ndim != 1 or coreset.size < 1 or coreset.dtype.kind not in "iu" \
            or coreset.min() < 0 or coreset.max() >= n_total or np.unique(coreset).size != coreset.size:
        raise InputError(f"--model: {arr_path}: 'coreset' must be distinct question indices in [0, {n_total})")
    n = coreset.size
    shapes = {"krr": {"dual_coef": None, "X_fit": None}, "ridge": {"coef": (n,)}, "mean": {"weights": (n,)}}[kind]
    if kind == "krr" and isinstance(arrays.get("dual_coef"), np.ndarray) and arrays["dual_coef"].ndim == 1:
        shapes = {"dual_coef": arrays["dual_coef"].shape, "X_fit": (arrays["dual_coef"].shape[0], n)}
    if "fill" in arrays:
        shapes["fill"] = (n,)
    for key, shape in shapes.items():
        array = arrays.get(key)
        if array is None or array.dtype.kind not in "biuf" or (shape is not None and array.shape != shape) \
                or shape is None or not np.isfinite(array).all():
            raise InputError(f"--model: {arr_path}: {key!r} must be a finite numeric array of shape "
                             f"{shape if shape is not None else '(models,)'}, got "
                             + ("none" if array is None else f"{array.dtype} {array.shape}"))


def _cmd_predict(args) -> int:
    from .pipeline import EfficientBenchmark

    check_model_folder(Path(args.model))
    try:
        bench = EfficientBenchmark.load(args.model)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"--model: {err}") from err
    A, _ = read_matrix(args.answers, args.key, args.header)
    A = _check_values(A, "answers", binary=not args.continuous)
    n_full, n_core = bench.n_questions_total_, bench.coreset_.size
    if A.shape[1] == n_full:
        pred = bench.predict(A)
    elif A.shape[1] == n_core:
        pred = bench.predict_from_coreset(A)
    else:
        raise InputError(f"answers have {A.shape[1]} questions; the model expects {n_full} (all questions) "
                         f"or {n_core} (the coreset)")
    for i, value in enumerate(pred):
        print(f"{i}\t{value:.6f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="neurips26 effbench", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sel = sub.add_parser("select", help="pick questions and fit the predictor")
    sel.add_argument("--matrix", required=True, help="source models x questions (.npz or .csv)")
    sel.add_argument("--key", default=None, help="array name inside a .npz with several matrices")
    sel.add_argument("--budget", required=True, type=declared(_int_or_fraction, _BUDGET, "--budget", keep_text=True),
                     help="fraction in (0, 1] or number of questions")
    sel.add_argument("--out", required=True, help="output folder")
    sel.add_argument("--regressor", choices=("krr", "ridge", "mean"), default="krr")
    sel.add_argument("--mi-k", type=declared(int, Int(low=1), "--mi-k"), default=3,
                     help="kNN neighbours of the MI estimator (default 3)")
    sel.add_argument("--folds", type=declared(int, Int(low=2), "--folds"), default=None,
                     help="CV folds for alpha (default: leave-one-out)")
    sel.add_argument("--continuous", action="store_true", help="scores in [0, 1] instead of 0/1")
    sel.add_argument("--force", action="store_true", help="replace a model already in --out")
    sel.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                     help="CSV: first row is question ids (auto: when it is not all scores in [0, 1])")
    sel.set_defaults(func=_cmd_select)
    pred = sub.add_parser("predict", help="predict full scores of new models")
    pred.add_argument("--model", required=True, help="folder written by select")
    pred.add_argument("--answers", required=True, help="new models x (all or coreset) questions (.npz or .csv)")
    pred.add_argument("--key", default=None, help="array name inside a .npz with several matrices")
    pred.add_argument("--continuous", action="store_true", help="scores in [0, 1] instead of 0/1")
    pred.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                      help="CSV: first row is question ids (auto: when it is not all scores in [0, 1])")
    pred.set_defaults(func=_cmd_predict)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except InputError as err:
        print(f"neurips26 effbench: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as err:  # validation inside the estimators: still the user's input
        print(f"neurips26 effbench: error: {str(err).splitlines()[0]}", file=sys.stderr)
        return EXIT_BAD_INPUT
