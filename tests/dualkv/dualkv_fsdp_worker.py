"""One DualKV policy-update step under FSDP2 (``fully_shard``, gloo, CPU) and its single-process reference.

    torchrun --standalone --nproc_per_node 2 tests/dualkv/dualkv_fsdp_worker.py OUT.pt

Each rank packs its own prompt group (different P, N and lengths), takes the DAPO token-mean loss of its
packed log-probs and steps SGD; FSDP averages the gradients over ranks. The single-process reference takes the
mean of the two groups' losses on one unsharded model. Rank 0 writes the losses and the gathered parameters.
"""

from __future__ import annotations

import sys

import torch

LR = 0.5
GROUPS = (((11, (4, 9, 1)), 0), ((6, (7, 2)), 1))  # ((P, response lengths), seed) per rank


def make_model():
    import transformers

    import neurips26.dualkv.hf  # noqa: F401  registers "dualkv"

    torch.manual_seed(0)
    cfg = transformers.Qwen3Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                   max_position_embeddings=64, attention_dropout=0.0, tie_word_embeddings=False)
    return transformers.Qwen3ForCausalLM._from_config(cfg, attn_implementation="dualkv")


def group_loss(model, rank: int) -> torch.Tensor:
    from neurips26.dualkv import pack_shared_prompt, response_logprobs, token_mean_policy_loss
    from neurips26.dualkv.hf import packed_logits

    (p, lens), seed = GROUPS[rank]
    g = torch.Generator().manual_seed(seed)
    groups = [(torch.randint(0, 48, (p,), generator=g), [torch.randint(0, 48, (r,), generator=g) for r in lens])]
    adv = torch.randn(len(lens), generator=g)
    batch = pack_shared_prompt(groups)
    return token_mean_policy_loss(response_logprobs(packed_logits(model, batch, backend="torch"), batch), adv)


def single_process_step() -> dict:
    model = make_model()
    losses = [group_loss(model, r) for r in range(2)]
    (sum(losses) / 2).backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= LR * p.grad
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    return {"losses": [float(x) for x in losses], "params": params}


if __name__ == "__main__":
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    model = make_model()
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss = group_loss(model, rank)
    loss.backward()  # FSDP reduce-scatters the mean gradient over ranks
    opt.step()
    losses = [torch.zeros(()) for _ in range(2)]
    dist.all_gather(losses, loss.detach())
    params = {n: p.full_tensor().detach().clone() for n, p in model.named_parameters()}
    if rank == 0:
        torch.save({"losses": [float(x) for x in losses], "params": params}, sys.argv[1])
    dist.barrier()  # leave together: tearing gloo down while the peer still talks can abort
    dist.destroy_process_group()
