"""DualKV on the ``neurips26.bench`` harness: a DAPO-style policy update (forward + token-mean loss + backward) of a
tiny Llama with the shared prompt stored once (DualKV) against the replicated-prompt batch (the standard GRPO/DAPO
layout) and Prefix-Grouper (our re-implementation; its code is not a package), over (N responses, P prompt
tokens) cells; TRL's ``GRPOTrainer`` policy update (the real peer) against our ``DualKVGRPOTrainer`` on a tiny
Qwen3 when TRL is installed; activation bytes saved for backward and tokens processed (counts); the scaling of each
layout's step in N. Writes results/dualkv/bench.json (1 thread, process clock, interleaved pairs, t-interval).

    .venv/bin/python benchmarks/dualkv_bench.py [--quick] [--repeats 7] [--no-trl]

Model: 2 layers, d = 128, 4 heads, 2 KV heads, vocabulary 1024; responses R ~ U{32..96}. ours / limit: 6 x the
non-embedding parameters x the tokens DualKV processes (prompt once + responses) against the GEMM rate (attention
left out: at these lengths it is a few per cent). The GPU kernel level (Triton vs SDPA-flash vs FlexAttention at
H = 32, R = 2048) needs a CUDA device and is not part of this CPU record.
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import torch

from neurips26.bench import Bench
from neurips26.dualkv import (
    dualkv_attention_fn,
    pack_replicated,
    pack_shared_prompt,
    replicated_response_logprobs,
    response_logprobs,
    token_mean_policy_loss,
)
from neurips26.dualkv.baselines import prefix_grouper_attention_fn, replicated_attention_fn
from neurips26.nn.llama import Llama, LlamaConfig

VOCAB = 1024
LAYOUTS = ("dualkv", "replicated", "prefix_grouper")


def _groups(seed: int, n: int, p: int) -> list:
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(32, 97, (n,), generator=g).tolist()
    return [(torch.randint(0, VOCAB, (p,), generator=g), [torch.randint(0, VOCAB, (r,), generator=g) for r in lens])]


class _Update:
    """One policy-update micro-batch in each layout (the model's attention function is swapped per call)."""

    def __init__(self, n: int, p: int, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.model = Llama(LlamaConfig(vocab_size=VOCAB, d_model=128, n_layers=2, n_heads=4, n_kv_heads=2,
                                       max_seq_len=p + 97))
        self.groups = _groups(seed, n, p)
        self.batch = pack_shared_prompt(self.groups)
        self.rep_ids, self.rep_pos, self.rep_cu = pack_replicated(self.groups)
        self.prompt_per_seq = [prompt.numel() for prompt, rs in self.groups for _ in rs]
        self.advantages = torch.randn(n, generator=torch.Generator().manual_seed(seed + 1))
        self.tokens = {"dualkv": int(self.batch.input_ids.numel()), "replicated": int(self.rep_ids.numel())}
        self.tokens["prefix_grouper"] = self.tokens["dualkv"]

    def _set(self, fn) -> None:
        for layer in self.model.layers:
            layer.attn.attention_fn = fn

    def logprobs(self, layout: str) -> list[torch.Tensor]:
        m, b = self.model, self.batch
        if layout == "replicated":
            self._set(replicated_attention_fn)
            logits = m(self.rep_ids[None], position_ids=self.rep_pos[None], cu_seqlens=self.rep_cu)
            return replicated_response_logprobs(logits, self.rep_cu, self.rep_ids, self.prompt_per_seq)
        if layout == "dualkv":
            self._set(dualkv_attention_fn)
            logits = m(b.input_ids[None], position_ids=b.position_ids[None], batch=b, backend="torch")
        else:
            self._set(prefix_grouper_attention_fn)
            logits = m(b.input_ids[None], position_ids=b.position_ids[None], batch=b)
        return response_logprobs(logits, b)

    def step(self, layout: str):
        def run() -> None:
            self.model.zero_grad(set_to_none=True)
            token_mean_policy_loss(self.logprobs(layout), self.advantages).backward()

        return run

    def activation_bytes(self, layout: str) -> int:
        """Distinct storages autograd saves for backward in one forward, the parameters left out."""
        params = {q.data_ptr() for q in self.model.parameters()}
        seen: dict[int, int] = {}

        def pack(t: torch.Tensor) -> torch.Tensor:
            ptr = t.untyped_storage().data_ptr()
            if ptr not in params:
                seen[ptr] = max(seen.get(ptr, 0), t.untyped_storage().nbytes())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = token_mean_policy_loss(self.logprobs(layout), self.advantages)
        del loss
        return sum(seen.values())

    def flops(self, layout: str) -> float:
        """6 x the parameters that multiply (the embedding lookup does not; a tied head does) x tokens."""
        m = self.model
        n_params = sum(q.numel() for q in {id(q): q for q in m.parameters()}.values())
        if m.lm_head.weight is not m.embed_tokens.weight:
            n_params -= m.embed_tokens.weight.numel()
        return 6.0 * n_params * self.tokens[layout]


def bench_layouts(bench: Bench, cells: list[tuple[int, int]]) -> None:
    for n, p in cells:
        upd = _Update(n, p)
        ours = upd.step("dualkv")
        setting = f"N={n} P={p}"
        for layout, name in (("replicated", "replicated-prompt batch (standard GRPO/DAPO layout)"),
                             ("prefix_grouper", "Prefix-Grouper")):
            bench.compare(f"{setting}: policy update, DualKV vs {layout}", ours=ours, peer=upd.step(layout),
                          peer_name=name, peer_kind="ours", flops=upd.flops("dualkv"))
        bench.count(f"{setting}: tokens through the model", ours=upd.tokens["dualkv"],
                    peer=upd.tokens["replicated"], peer_name="replicated-prompt batch", peer_kind="ours",
                    unit="tokens")
        bench.count(f"{setting}: activation bytes saved for backward", ours=upd.activation_bytes("dualkv"),
                    peer=upd.activation_bytes("replicated"), peer_name="replicated-prompt batch", peer_kind="ours",
                    unit="bytes (parameters excluded)")
        bench.count(f"{setting}: activation bytes saved for backward vs Prefix-Grouper",
                    ours=upd.activation_bytes("dualkv"), peer=upd.activation_bytes("prefix_grouper"),
                    peer_name="Prefix-Grouper", peer_kind="ours", unit="bytes (parameters excluded)")


def bench_scaling(bench: Bench, p: int, ns: list[int]) -> None:
    for layout in ("dualkv", "replicated"):
        bench.scaling(f"{layout} policy update time in N responses (P={p}, R~U{{32..96}})", sizes=ns,
                      time_of=lambda n, lay=layout: bench.time(_Update(int(n), p).step(lay), repeats=3),
                      claimed="DualKV: the prompt once, cost ~ P + N·R (slope < 1 while P dominates); replicated: "
                              "N·(P + R) (slope 1)")


def bench_trl(bench: Bench, n: int, p: int, r: int) -> None:
    try:
        import datasets
        import transformers
        import trl
        from tokenizers import Tokenizer, models

        from neurips26.dualkv.trl import DualKVGRPOTrainer
    except ImportError as err:
        print(f"TRL rows skipped ({err}); pip install -e '.[hf]' for them")
        return
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({f"t{i}": i for i in range(VOCAB)}, unk_token="t0")),
        pad_token="t0", eos_token="t1")
    cfg = transformers.Qwen3Config(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                   max_position_embeddings=p + r + 1, pad_token_id=0, eos_token_id=1)
    torch.manual_seed(0)
    state = transformers.Qwen3ForCausalLM(cfg).state_dict()
    g = torch.Generator().manual_seed(0)
    lens = torch.randint(r // 2, r + 1, (n,), generator=g)
    inputs = {"prompt_ids": torch.randint(2, VOCAB, (1, p), generator=g).expand(n, p).contiguous(),
              "prompt_mask": torch.ones(n, p, dtype=torch.long),
              "completion_ids": torch.randint(2, VOCAB, (n, r), generator=g),
              "completion_mask": (torch.arange(r)[None] < lens[:, None]).long(),
              "advantages": torch.randn(n, generator=g), "num_items_in_batch": lens.sum()}
    steps = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cls, extra in (("stock", trl.GRPOTrainer, {}),
                                 ("dualkv", DualKVGRPOTrainer, {"dualkv_backend": "auto"})):
            m = transformers.Qwen3ForCausalLM(cfg)
            m.load_state_dict(state)
            targs = trl.GRPOConfig(output_dir=tmp, per_device_train_batch_size=n, num_generations=n,
                                   max_completion_length=r, report_to=[], use_cpu=True, beta=0.0)
            trainer = cls(model=m, reward_funcs=lambda completions, **_: [0.0] * len(completions), args=targs,
                          train_dataset=datasets.Dataset.from_dict({"prompt": ["t2"] * n}), processing_class=tok,
                          **extra)
            trainer.current_gradient_accumulation_steps = 1

            def step(t=trainer) -> None:
                t.model.zero_grad(set_to_none=True)
                t.compute_loss(t.model, inputs).backward()

            steps[name] = step
        bench.compare(f"TRL GRPO policy update (compute_loss + backward), tiny Qwen3 2x128, N={n} P={p} "
                      f"R~U{{{r // 2}..{r}}}: DualKVGRPOTrainer vs stock", ours=steps["dualkv"], peer=steps["stock"],
                      peer_name=f"trl {trl.__version__} GRPOTrainer (stock)", peer_kind="real")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="two cells, three scaling sizes")
    ap.add_argument("--no-trl", action="store_true", help="skip the TRL rows")
    args, _ = ap.parse_known_args()
    bench = Bench("dualkv", description="policy update of a tiny Llama: DualKV (prompt once) vs replicated prompts "
                  "and Prefix-Grouper; TRL GRPOTrainer vs DualKVGRPOTrainer; activation bytes; scaling in N",
                  argv=sys.argv[1:])
    cells = [(4, 256), (16, 512)] if args.quick else [(4, 256), (8, 512), (16, 1024)]
    bench_layouts(bench, cells)
    bench_scaling(bench, 512, [2, 8, 32] if args.quick else [2, 4, 8, 16, 32])
    if not args.no_trl:
        bench_trl(bench, 8, 512, 64)
    bench.write()


if __name__ == "__main__":
    main()
