"""DualKV in 25 lines: score N responses to one prompt with the prompt processed once, exactly."""

import torch

from neurips26.dualkv import (
    dualkv_attention_fn,
    pack_replicated,
    pack_shared_prompt,
    replicated_response_logprobs,
    response_logprobs,
    token_mean_policy_loss,
)
from neurips26.dualkv.baselines import replicated_attention_fn
from neurips26.nn import Llama, LlamaConfig

torch.manual_seed(0)
model = Llama(LlamaConfig(vocab_size=256, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, max_seq_len=512),
              attention_fn=dualkv_attention_fn)
prompt = torch.randint(0, 256, (200,))
responses = [torch.randint(0, 256, (n,)) for n in (17, 40, 5, 33)]
groups = [(prompt, responses)]

batch = pack_shared_prompt(groups)  # [prompt | r_1 | ... | r_4], positions restart at P per response
logps = response_logprobs(model(batch.input_ids[None], position_ids=batch.position_ids[None], batch=batch), batch)
token_mean_policy_loss(logps, advantages=torch.tensor([1.0, -0.5, 0.25, -0.75])).backward()  # DAPO token-mean
logps = [lp.detach() for lp in logps]

# the same model on the replicated layout (the prompt repeated per response) gives the same log-probs
for layer in model.layers:
    layer.attn.attention_fn = replicated_attention_fn
ids, pos, cu = pack_replicated(groups)
with torch.no_grad():
    ref = replicated_response_logprobs(model(ids[None], position_ids=pos[None], cu_seqlens=cu), cu, ids, [200] * 4)
gap = max(float((a - b).abs().max()) for a, b in zip(logps, ref, strict=True))
print(f"tokens {batch.num_tokens} instead of {batch.num_replicated_tokens} (rho = {batch.token_reduction:.2f}); "
      f"max |Δ log-prob| vs replicated {gap:.1e}")
