"""The veRL-style adapter against veRL's own formula on the unpacked model (``logits[:, -R-1:-1] / τ``)."""

import copy
import types

import pytest
import torch

transformers = pytest.importorskip("transformers")

from neurips26.dualkv.verl import dualkv_forward_micro_batch, forward_micro_batch  # noqa: E402


def _model():
    torch.manual_seed(0)
    cfg = transformers.Qwen3Config(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                   max_position_embeddings=128, attention_dropout=0.0)
    return transformers.Qwen3ForCausalLM._from_config(cfg, attn_implementation="sdpa").eval()


def _micro_batch(seed=0):
    """Two prompts (9 and 4 tokens) x 3 responses, interleaved rows; prompts left-padded to 9, responses
    right-padded to 7 (lengths 7, 3, 1, 5, 7, 2); position ids as veRL builds them."""
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(1, 40, (9,), generator=g), torch.randint(1, 40, (4,), generator=g)]
    rows = [(0, 7), (1, 5), (0, 3), (1, 7), (0, 1), (1, 2)]
    ids, mask = torch.zeros(6, 16, dtype=torch.long), torch.zeros(6, 16, dtype=torch.long)
    for b, (pi, rl) in enumerate(rows):
        p = prompts[pi]
        ids[b, 9 - p.numel():9], mask[b, 9 - p.numel():9] = p, 1
        ids[b, 9:9 + rl], mask[b, 9:9 + rl] = torch.randint(1, 40, (rl,), generator=g), 1
    position_ids = (mask.cumsum(1) - 1).clamp(min=0)
    return {"input_ids": ids, "attention_mask": mask, "position_ids": position_ids, "responses": ids[:, 9:]}


def _verl_formula(model, mb, temperature):
    out = model(input_ids=mb["input_ids"], attention_mask=mb["attention_mask"], position_ids=mb["position_ids"])
    z = out.logits[:, -8:-1].float() / temperature
    logp = torch.log_softmax(z, -1).gather(-1, mb["responses"][..., None])[..., 0]
    ent = -(torch.softmax(z, -1) * torch.log_softmax(z, -1)).sum(-1)
    return ent, logp


def test_packed_micro_batch_equals_verl_formula_values_and_gradients():
    ref_model = _model()
    model = copy.deepcopy(ref_model)
    mb = _micro_batch()
    real = mb["attention_mask"][:, 9:].bool()
    ent, logp = forward_micro_batch(model, mb, temperature=0.7, calculate_entropy=True, backend="torch")
    ref_ent, ref_logp = _verl_formula(ref_model, mb, 0.7)
    assert logp.shape == ent.shape == (6, 7) and model.config._attn_implementation == "dualkv"
    torch.testing.assert_close(logp[real], ref_logp[real], rtol=0, atol=2e-5)
    torch.testing.assert_close(ent[real], ref_ent[real], rtol=0, atol=2e-5)
    assert (logp[~real] == 0).all()
    # a token-mean policy-gradient surrogate with per-row advantages, as veRL's loss aggregates it
    adv = torch.tensor([1.0, -0.5, 0.25, 2.0, -1.0, 0.5])[:, None]
    ((logp * adv)[real].mean()).backward()
    ((ref_logp * adv)[real].mean()).backward()
    ref_grads = dict(ref_model.named_parameters())
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad, ref_grads[name].grad, rtol=1e-4, atol=1e-6, msg=name)


def test_bound_as_the_actor_method_and_fallback_on_a_non_prefix_mask():
    ref_model = _model()
    actor = types.SimpleNamespace(actor_module=copy.deepcopy(ref_model))
    actor._forward_micro_batch = types.MethodType(dualkv_forward_micro_batch(backend="torch"), actor)
    mb = _micro_batch(1)
    with torch.no_grad():
        ent, logp = actor._forward_micro_batch(mb, temperature=1.0)
        _, ref_logp = _verl_formula(ref_model, mb, 1.0)
    real = mb["attention_mask"][:, 9:].bool()
    assert ent is None
    torch.testing.assert_close(logp[real], ref_logp[real], rtol=0, atol=2e-5)
    holey = dict(mb, attention_mask=mb["attention_mask"].clone())
    holey["attention_mask"][0, 10] = 0  # a hole inside a response: not packable, veRL's formula runs
    with torch.no_grad():
        _, got = forward_micro_batch(actor.actor_module, holey)
        _, want = _verl_formula(ref_model, holey, 1.0)
    torch.testing.assert_close(got, want, rtol=0, atol=2e-5)


def test_bad_micro_batches_refused():
    model, mb = _model(), _micro_batch()
    with pytest.raises(ValueError, match="keys"):
        forward_micro_batch(model, {"input_ids": mb["input_ids"]})
    with pytest.raises(ValueError, match="responses must equal input_ids"):
        forward_micro_batch(model, dict(mb, responses=mb["responses"].flip(1)))
    with pytest.raises(ValueError, match="temperature"):
        forward_micro_batch(model, mb, temperature=0.0)
    with pytest.raises(ValueError, match="backend"):
        dualkv_forward_micro_batch(backend="cuda")
