"""DyRA in a few lines: one layer, then a whole (tiny, random) transformers BERT, PEFT-style.

    .venv/bin/python examples/dyra.py
"""

from __future__ import annotations

import tempfile

import torch

from neurips26.dyra import (
    DyRAConfig,
    DyRALinear,
    StructuredLinear,
    get_dyra_model,
    load_dyra,
    merge,
    save_dyra,
    unmerge,
)
from neurips26.dyra.baselines import relative_output_error


def main() -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 1024)
    x = torch.randn(4, 201, 256)                             # 4 "images" × 201 tokens
    fast = StructuredLinear.from_linear(lin, "svd", rank_ratio=0.25)
    layer = DyRALinear(lin, fast, rank=16, group="sample", residual_dtype=torch.float32)
    with torch.no_grad():
        y = lin(x)
        print(f"relative output error: SVD(0.25) {relative_output_error(fast(x), y):.3f}, "
              f"+ DyRA(k=16) {relative_output_error(layer(x), y):.3f}; "
              f"FLOPs/token {layer.flops_per_token(201):.0f} vs dense {2 * 256 * 1024 + 1024}")
    try:
        import transformers
    except ImportError:
        print("(transformers not installed: PEFT-style part skipped)")
        return
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=512)
    bert = transformers.BertModel(cfg).eval()
    fresh = transformers.BertModel(cfg).eval()
    fresh.load_state_dict(bert.state_dict())
    ids, mask = torch.randint(0, 100, (2, 128)), torch.ones(2, 128, dtype=torch.long)
    config = DyRAConfig(target_modules=["query", "key", "value"], flop_budget=0.9, correction_rank=8, n_tokens=128)
    print("swapped:", len(get_dyra_model(bert, config)), "layers")
    with torch.no_grad(), tempfile.TemporaryDirectory() as d:
        out = bert(ids, attention_mask=mask).last_hidden_state
        save_dyra(bert, d, config)
        load_dyra(fresh, d)
        print("reloaded equal:", torch.equal(fresh(ids, attention_mask=mask).last_hidden_state, out))
        merge(bert)
        unmerge(bert)
        print("unmerge bit-identical:", torch.equal(bert(ids, attention_mask=mask).last_hidden_state, out))


if __name__ == "__main__":
    main()
