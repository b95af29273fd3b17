"""DualKVGRPOTrainer against stock trl.GRPOTrainer: same loss and gradients on the same completions."""

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers")
trl = pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")

from _tiny_grpo import a_fraction_reward, char_tokenizer, tiny_qwen3  # noqa: E402
from neurips26.dualkv.trl import DualKVGRPOTrainer, packed_completion_logps  # noqa: E402


def _args(tmp_path, **kw):
    base = dict(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=4, max_completion_length=6,
                learning_rate=1e-3, logging_steps=1, report_to=[], save_strategy="no", use_cpu=True, seed=0,
                beta=0.0, bf16=False, dataloader_num_workers=0, disable_tqdm=True)
    base.update(kw)
    return trl.GRPOConfig(**base)


def _dataset():
    return datasets.Dataset.from_dict({"prompt": ["abcab", "zz", "qrstu", "ab"]})


def _trainers(tmp_path, **kw):
    tok = char_tokenizer()
    model = tiny_qwen3()
    stock = trl.GRPOTrainer(model=copy.deepcopy(model), reward_funcs=a_fraction_reward,
                            args=_args(tmp_path / "s", **kw),
                            train_dataset=_dataset(), processing_class=tok)
    ours = DualKVGRPOTrainer(model=copy.deepcopy(model), reward_funcs=a_fraction_reward,
                             args=_args(tmp_path / "d", **kw),
                             train_dataset=_dataset(), processing_class=tok, dualkv_backend="torch")
    return stock, ours


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_one_step_same_loss_and_gradients_as_stock_grpo(tmp_path):
    stock, ours = _trainers(tmp_path)
    torch.manual_seed(1)
    rows = [stock.train_dataset[0]] * 4  # one prompt group of N = 4 completions
    inputs = stock._generate_and_score_completions(rows)  # the same completions for both trainers
    assert inputs["completion_ids"].shape[0] == 4
    inputs["advantages"] = torch.tensor([1.0, -1.0, 0.5, -0.25])  # non-zero whatever the rewards were
    losses, grads = [], []
    for trainer in (stock, ours):
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train's loop
        trainer.model.zero_grad()
        loss = trainer.compute_loss(trainer.model, inputs)
        loss.backward()
        losses.append(loss.detach())
        grads.append({n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None})
    assert not ours._dualkv_warned  # the packed path ran (no fallback to TRL's forward)
    assert max(float(g.abs().max()) for g in grads[0].values()) > 1e-4
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-5, atol=1e-6)
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], rtol=1e-4, atol=1e-6, msg=name)


def test_packed_logps_equal_stock_fused_head_on_mixed_groups(tmp_path):
    """Several prompt groups, left-padded prompts and right-padded completions in one chunk."""
    stock, ours = _trainers(tmp_path)
    tok = char_tokenizer()
    prompts = tok(["abcab", "abcab", "zz", "zz", "qrstu"], padding=True, return_tensors="pt")
    completions = torch.tensor([[2, 3, 4, 1], [5, 1, 0, 0], [6, 7, 1, 0], [8, 0, 0, 0], [9, 9, 9, 9]])
    cmask = (torch.arange(4)[None] < torch.tensor([4, 2, 3, 1, 4])[:, None]).int()
    ids = torch.cat([prompts["input_ids"], completions], 1)
    mask = torch.cat([prompts["attention_mask"], cmask], 1)
    ref, ref_ent, _ = stock._get_per_token_logps_and_entropies(stock.model, ids, mask, 4, compute_entropy=True)
    got, ent, _ = ours._get_per_token_logps_and_entropies(ours.model, ids, mask, 4, compute_entropy=True)
    torch.testing.assert_close(got, ref, rtol=0, atol=2e-5)
    torch.testing.assert_close(ent, ref_ent, rtol=0, atol=2e-5)
    assert (got[cmask == 0] == 0).all()
    with pytest.raises(ValueError, match="logits_to_keep"):
        packed_completion_logps(ours.model, ids, mask, 0)
    with pytest.raises(ValueError, match="attention_mask"):
        packed_completion_logps(ours.model, ids, mask[:, 1:], 4)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_few_steps_run_end_to_end_and_generation_uses_sdpa(tmp_path):
    _, ours = _trainers(tmp_path, max_steps=2)
    assert ours.model.config._attn_implementation == "dualkv"
    before = {n: p.detach().clone() for n, p in ours.model.named_parameters()}
    ours.train()
    assert ours.state.global_step == 2
    assert any(not torch.equal(before[n], p) for n, p in ours.model.named_parameters())
    assert all(torch.isfinite(p).all() for p in ours.model.parameters())
    with pytest.raises(ValueError, match="dualkv_backend"):
        DualKVGRPOTrainer(model=tiny_qwen3(), reward_funcs=a_fraction_reward, args=_args(tmp_path / "x"),
                          train_dataset=_dataset(), processing_class=char_tokenizer(), dualkv_backend="cuda")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_lora_policy_same_loss_and_adapter_gradients_as_stock_grpo(tmp_path):
    """A PEFT LoRA policy (``peft_config=``, TRL wraps the model): the packed forward runs through the PeftModel
    (LoRA deltas inside q/k/v/o) and gives stock TRL's loss and LoRA gradients; the base weights stay frozen."""
    peft = pytest.importorskip("peft")
    lora = dict(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                task_type="CAUSAL_LM")
    tok = char_tokenizer()  # beta > 0 below: TRL's reference is the adapter-disabled policy
    base = tiny_qwen3()
    stock = trl.GRPOTrainer(model=copy.deepcopy(base), reward_funcs=a_fraction_reward,
                            args=_args(tmp_path / "s", beta=0.05),
                            train_dataset=_dataset(), processing_class=tok, peft_config=peft.LoraConfig(**lora))
    ours = DualKVGRPOTrainer(model=copy.deepcopy(base), reward_funcs=a_fraction_reward,
                             args=_args(tmp_path / "d", beta=0.05),
                             train_dataset=_dataset(), processing_class=tok, peft_config=peft.LoraConfig(**lora),
                             dualkv_backend="torch")
    assert isinstance(ours.model, peft.PeftModel)
    # LoRA B starts at zero (the update is a no-op): give both adapters the same non-zero weights
    torch.manual_seed(5)
    with torch.no_grad():
        for (n, p), (n2, p2) in zip(stock.model.named_parameters(), ours.model.named_parameters()):
            assert n == n2
            if "lora_" in n:
                p.normal_(0, 0.2)
                p2.copy_(p)
    torch.manual_seed(1)
    inputs = stock._generate_and_score_completions([stock.train_dataset[0]] * 4)
    inputs["advantages"] = torch.tensor([1.0, -1.0, 0.5, -0.25])
    losses, grads = [], []
    for trainer in (stock, ours):
        trainer.current_gradient_accumulation_steps = 1
        trainer.model.zero_grad()
        loss = trainer.compute_loss(trainer.model, inputs)
        loss.backward()
        losses.append(loss.detach())
        grads.append({n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None})
    assert not ours._dualkv_warned
    assert grads[0] and all("lora_" in n for n in grads[0])  # only the adapters train
    assert max(float(g.abs().max()) for g in grads[0].values()) > 1e-4
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-5, atol=1e-6)
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], rtol=1e-4, atol=1e-6, msg=name)
