"""DualKV side by side: time and memory of DualKV vs replicated prompts vs Prefix-Grouper (and FlexAttention on GPU).

Two levels, one table each, ratios within one run:

* ``--level model`` (default on CPU): a DAPO policy update (fwd + token-mean loss + bwd) of a tiny Llama
  (2 layers, d=128, 4 heads, 2 KV heads) over a sweep of (N, P), R ~ U{32..96}; time per arm, activation bytes
  saved for backward, and rho for comparison.
* ``--level kernel`` (GPU): attention only, fwd+bwd in bf16 at the paper's kernel shapes (H=32, Hk=8, d=128,
  R=2048): Triton DualKV vs SDPA-flash on the replicated batch vs compiled FlexAttention vs Prefix-Grouper,
  with peak CUDA memory.

    python benchmarks/dualkv_bench.py                       # CPU, model level
    python benchmarks/dualkv_bench.py --clock process       # single-thread CPU time (shared, busy machine)
    python benchmarks/dualkv_bench.py --level kernel        # GPU
    python benchmarks/dualkv_bench.py --level trl           # TRL GRPO policy update: DualKVGRPOTrainer / stock
    python benchmarks/dualkv_bench.py --level trl --trl-shape 16,4096,512   # the issue's GPU shape (Triton)

``--level trl`` times TRL's ``compute_loss`` + ``backward`` (the policy-update forward/backward of one GRPO
micro-batch: one prompt, N completions) of a tiny Qwen3 (2 layers, d=128) for stock ``trl.GRPOTrainer`` and
``neurips26.dualkv.trl.DualKVGRPOTrainer`` on the same synthetic inputs; default shape N=8, P=512, R=64 on CPU.

Not run in CI. On a shared CPU, wall times are noisy: read the ratios, and prefer ``--clock process``.
"""

from __future__ import annotations

import argparse
import os

import torch


def _model_level(args: argparse.Namespace) -> None:
    from neurips26.claims import measure
    from neurips26.dualkv._measure import ARMS, PolicyUpdate, synthetic_groups
    from neurips26.nn.llama import Llama, LlamaConfig

    cells = [(n, p) for p in args.prompt_lens for n in args.n_responses]
    print(f"policy update fwd+bwd, tiny Llama (2 layers, d=128, 4/2 heads), R~U{{32..96}}, clock={args.clock}, "
          f"threads={torch.get_num_threads()}")
    header = (f"{'N':>3} {'P':>5} {'rho':>5} | " + " ".join(f"{a + ' ms':>17}" for a in ARMS)
              + " | rep/dk  pg/dk | MB rep    dk    pg")
    print(header)
    print("-" * len(header))
    for n, p in cells:
        groups = synthetic_groups(args.seed, n_groups=1, n_responses=n, prompt_len=p, resp_low=32, resp_high=96,
                                  vocab=1024)
        torch.manual_seed(args.seed)
        model = Llama(LlamaConfig(vocab_size=1024, d_model=128, n_layers=2, n_heads=4, n_kv_heads=2,
                                  max_seq_len=p + 97))
        upd = PolicyUpdate(model, groups, torch.randn(n), backend="torch")
        t = {a: 1e3 * measure.timeit(lambda a=a, u=upd: u.step(a), warmup=args.warmup, repeats=args.reps,
                                  clock=args.clock).median for a in ARMS}
        mem = {a: upd.saved_activation_bytes(a) / 2**20 for a in ARMS}
        print(f"{n:>3} {p:>5} {upd.batch.token_reduction:>5.2f} | "
              + " ".join(f"{t[a]:>17.1f}" for a in ARMS)
              + f" | {t['replicated'] / t['dualkv']:>6.2f} {t['prefix_grouper'] / t['dualkv']:>6.2f}"
              + f" | {mem['replicated']:>6.1f} {mem['dualkv']:>5.1f} {mem['prefix_grouper']:>5.1f}")


def _kernel_level(args: argparse.Namespace) -> None:
    from neurips26.dualkv._measure import kernel_bench

    if not torch.cuda.is_available():
        raise SystemExit("--level kernel needs a CUDA device (the CPU interpreter is for correctness only)")
    shapes = [(28, 4096), (28, 16384), (16, 16384)] if not args.shapes else \
        [tuple(int(x) for x in s.split(",")) for s in args.shapes]
    rows = [kernel_bench(n, p, 2048, device=torch.device("cuda"), reps=args.reps, warmup=args.warmup,
                          log=lambda m: None) for n, p in shapes]
    import math

    def geo(xs: list[float] | None) -> str:
        return f"{math.exp(sum(map(math.log, xs)) / len(xs)):.2f}" if xs else "OOM"

    def gb(r: dict, a: str) -> str:
        return f"{r[f'peak_{a}_gb']:.1f}" if r.get(f"peak_{a}_gb") is not None else "OOM"

    print("attention fwd+bwd, bf16, H=32, Hk=8, d=128, R=2048: peer time / DualKV time (geometric mean of "
          "interleaved pairs), flex/dk from medians, peak GB")
    print(f"{'N':>3} {'P':>6} {'rho':>5} | {'rep/dk':>6} {'pg/dk':>6} {'flex/dk':>7} | {'dk GB':>6} {'pg GB':>6}")
    for r in rows:
        flex = f"{r['time_flex_ms'] / r['time_dualkv_ms']:.2f}" if r.get("time_flex_ms") else "-"
        print(f"{r['N']:>3} {r['P']:>6} {r['rho']:>5.2f} | {geo(r.get('ratio_replicated_sdpa')):>6} "
              f"{geo(r.get('ratio_prefix_grouper')):>6} {flex:>7} | {gb(r, 'dualkv'):>6} {gb(r, 'prefix_grouper'):>6}")


def _trl_level(args: argparse.Namespace) -> None:
    import tempfile
    from datetime import date

    import datasets
    import transformers
    import trl
    from tokenizers import Tokenizer, models

    from neurips26.claims import measure
    from neurips26.dualkv.trl import DualKVGRPOTrainer

    n, p, r = (int(x) for x in args.trl_shape.split(","))
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    vocab = 1024
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0")),
        pad_token="t0", eos_token="t1")
    cfg = transformers.Qwen3Config(vocab_size=vocab, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                   max_position_embeddings=p + r + 1, pad_token_id=0, eos_token_id=1)
    torch.manual_seed(args.seed)
    model = transformers.Qwen3ForCausalLM(cfg)
    state = model.state_dict()
    g = torch.Generator().manual_seed(args.seed)
    lens = torch.randint(r // 2, r + 1, (n,), generator=g)
    inputs = {"prompt_ids": torch.randint(2, vocab, (1, p), generator=g).expand(n, p).contiguous(),
              "prompt_mask": torch.ones(n, p, dtype=torch.long),
              "completion_ids": torch.randint(2, vocab, (n, r), generator=g),
              "completion_mask": (torch.arange(r)[None] < lens[:, None]).long(),
              "advantages": torch.randn(n, generator=g), "num_items_in_batch": lens.sum()}
    inputs = {k: v.to(device) for k, v in inputs.items()}
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cls, extra in (("stock", trl.GRPOTrainer, {}),
                                 ("dualkv", DualKVGRPOTrainer, {"dualkv_backend": "auto"})):
            m = transformers.Qwen3ForCausalLM(cfg)
            m.load_state_dict(state)
            targs = trl.GRPOConfig(output_dir=tmp, per_device_train_batch_size=n, num_generations=n,
                                   max_completion_length=r, report_to=[], use_cpu=not cuda, bf16=cuda, beta=0.0)
            trainer = cls(model=m.to(device), reward_funcs=lambda completions, **_: [0.0] * len(completions),
                          args=targs, train_dataset=datasets.Dataset.from_dict({"prompt": ["t2"] * n}),
                          processing_class=tok, **extra)
            trainer.current_gradient_accumulation_steps = 1

            def step(t=trainer):
                t.model.zero_grad(set_to_none=True)
                t.compute_loss(t.model, inputs).backward()

            times[name] = 1e3 * measure.timeit(step, warmup=args.warmup, repeats=args.reps,
                                               clock="cuda" if cuda else args.clock).median
    where = torch.cuda.get_device_name() if cuda else f"CPU, {torch.get_num_threads()} threads, clock={args.clock}"
    print(f"TRL GRPO policy update (compute_loss + backward), tiny Qwen3 2x128, N={n}, P={p}, R~U{{{r // 2}..{r}}}, "
          f"{where}, {date.today()}")
    print(f"stock trl.GRPOTrainer {times['stock']:.1f} ms | DualKVGRPOTrainer {times['dualkv']:.1f} ms | "
          f"stock/dualkv {times['stock'] / times['dualkv']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--level", choices=("model", "kernel", "trl"), default="kernel" if torch.cuda.is_available()
                        else "model")
    parser.add_argument("--trl-shape", default="8,512,64", help="trl level: N,P,R (R = longest completion)")
    parser.add_argument("--prompt-lens", type=int, nargs="+", default=[128, 512, 1024])
    parser.add_argument("--n-responses", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--shapes", nargs="*", help="kernel level: N,P pairs, e.g. 28,4096 16,16384")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--clock", choices=("wall", "process"), default="wall")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # process CPU time counts OpenMP spin-waiting of idle threads, so it is measured on one thread
    torch.set_num_threads(1 if args.clock == "process" else int(os.environ.get("OMP_NUM_THREADS", "2")))
    {"kernel": _kernel_level, "model": _model_level, "trl": _trl_level}[args.level](args)


if __name__ == "__main__":
    main()
