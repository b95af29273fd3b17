"""Packing, ratios, log-prob indexing, rollout adapter and bad-input errors."""

import pytest
import torch

from neurips26.dualkv import (
    SharedPromptBatch,
    attention_speedup_estimate,
    groups_from_rollouts,
    pack_replicated,
    pack_shared_prompt,
    replicated_response_logprobs,
    response_logprobs,
    token_mean_policy_loss,
    token_reduction_ratio,
)


def _groups():
    g = torch.Generator().manual_seed(0)
    return [(torch.randint(0, 100, (5,), generator=g), [torch.randint(0, 100, (n,), generator=g) for n in (3, 1, 4)]),
            (torch.randint(0, 100, (2,), generator=g), [torch.randint(0, 100, (2,), generator=g)])]


def test_layout_positions_and_offsets():
    groups = _groups()
    b = pack_shared_prompt(groups)
    (p0, rs0), (p1, rs1) = groups
    expect = torch.cat([p0, *rs0, p1, *rs1])
    assert torch.equal(b.input_ids, expect)
    # positions: 0..P-1 then restart at P for every response
    assert b.position_ids.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 5, 5, 6, 7, 8, 0, 1, 2, 3]
    assert b.group_offsets == [0, 13, 17]
    assert b.prompt_lens == [5, 2]
    assert [c.tolist() for c in b.cu_seqlens_dec] == [[0, 3, 4, 8], [0, 2]]
    assert b.response_slices == [[slice(5, 8), slice(8, 9), slice(9, 13)], [slice(15, 17)]]
    assert b.num_tokens == 17 and b.num_replicated_tokens == 3 * 5 + 8 + 2 + 2
    assert b.token_reduction == pytest.approx(27 / 17)


def test_replicated_layout():
    groups = _groups()
    ids, pos, cu = pack_replicated(groups)
    (p0, rs0), (p1, rs1) = groups
    assert torch.equal(ids, torch.cat([torch.cat([p0, r]) for r in rs0] + [torch.cat([p1, r]) for r in rs1]))
    assert cu.tolist() == [0, 8, 14, 23, 27]
    assert pos[8:14].tolist() == list(range(6))


def test_token_reduction_ratio_closed_form_and_limits():
    # rho = N(P+R)/(P+NR) equals the measured token ratio for equal lengths
    g = [(torch.arange(40), [torch.arange(7) for _ in range(6)])]
    assert token_reduction_ratio(6, 40, 7) == pytest.approx(pack_shared_prompt(g).token_reduction)
    assert token_reduction_ratio(8, 10**9, 1) == pytest.approx(8, rel=1e-6)  # P/R -> inf: rho -> N
    assert token_reduction_ratio(10**9, 100, 10) == pytest.approx(11, rel=1e-6)  # N -> inf: 1 + P/R
    # attention FLOP ratio: N causal squares over prompt square + N (R·P + R²/2), all halved
    n, p, r = 4, 30, 10
    flops_rep, flops_dk = n * (p + r) ** 2 / 2, p * p / 2 + n * (r * p + r * r / 2)
    assert attention_speedup_estimate(n, p, r) == pytest.approx(flops_rep / flops_dk)


@pytest.mark.parametrize("args", [(0, 4, 2.0), (4, 0, 2.0), (4, 4, 0.0), (2.5, 4, 1.0), (True, 4, 1.0)])
def test_token_reduction_ratio_bad_input(args):
    with pytest.raises(ValueError):
        token_reduction_ratio(*args)


def test_logprob_index_first_token_from_last_prompt_row():
    b = pack_shared_prompt(_groups())
    pred, targets = b.logprob_index()
    # response 0 of group 0 (rows 5..7): predicted by rows 4 (last prompt), 5, 6
    assert pred[:3].tolist() == [4, 5, 6]
    # response 1 (row 8, length 1): predicted by the same shared row 4
    assert pred[3].item() == 4
    # group 1 response (rows 15, 16): last prompt row 14
    assert pred[-2:].tolist() == [14, 15]
    assert torch.equal(targets, torch.cat([b.input_ids[s] for g in b.response_slices for s in g]))


def test_response_logprobs_against_direct_softmax():
    b = pack_shared_prompt(_groups())
    logits = torch.randn(b.num_tokens, 100, dtype=torch.float64)
    lps = response_logprobs(logits, b)
    assert [t.numel() for t in lps] == [3, 1, 4, 2]
    logp = torch.log_softmax(logits, -1)
    # response 2 of group 0 lives at rows 9..12, its first token is scored by row 4
    rows = [4, 9, 10, 11]
    expect = torch.stack([logp[r, b.input_ids[9 + i]] for i, r in enumerate(rows)])
    torch.testing.assert_close(lps[2].double(), expect, rtol=1e-6, atol=1e-6)
    # [1, T, V] accepted
    torch.testing.assert_close(response_logprobs(logits[None], b)[0], lps[0])


def test_replicated_logprobs_indexing():
    groups = _groups()
    ids, _, cu = pack_replicated(groups)
    logits = torch.randn(ids.numel(), 100)
    lps = replicated_response_logprobs(logits, cu, ids, [5, 5, 5, 2])
    logp = torch.log_softmax(logits, -1)
    # sequence 1 = [p0 (5) | r (1)] at rows 8..13: its response token (row 13) is scored by row 12
    torch.testing.assert_close(lps[1], logp[12, ids[13]][None])


def test_groups_from_rollouts_strips_padding_and_checks_prompts():
    pad = 0
    prompts = torch.tensor([[pad, 7, 8], [pad, 7, 8], [5, 6, 9]])
    pmask = prompts != pad
    responses = torch.tensor([[1, 2, pad], [3, pad, pad], [4, 4, 4]])
    rmask = responses != pad
    groups = groups_from_rollouts(prompts, responses, [0, 0, 1], prompt_mask=pmask, response_mask=rmask)
    assert [g[0].tolist() for g in groups] == [[7, 8], [5, 6, 9]]
    assert [[r.tolist() for r in g[1]] for g in groups] == [[[1, 2], [3]], [[4, 4, 4]]]
    with pytest.raises(ValueError, match="do not share one prompt"):
        groups_from_rollouts(prompts, responses, [0, 0, 0], prompt_mask=pmask, response_mask=rmask)
    with pytest.raises(ValueError, match="empty response"):
        groups_from_rollouts(prompts, torch.zeros(3, 2, dtype=torch.long), [0, 0, 1], prompt_mask=pmask,
                             response_mask=torch.zeros(3, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"group_index must have one entry per row of prompt_ids \(B=3\)"):
        groups_from_rollouts(prompts, responses, [0, 0])


@pytest.mark.parametrize("groups, match", [
    ([], "non-empty"),
    ([(torch.arange(3), [])], "non-empty list"),
    ([(torch.arange(0), [torch.arange(2)])], "P >= 1"),
    ([(torch.arange(3), [torch.arange(2), torch.arange(0)])], "empty"),
    ([(torch.arange(3.0), [torch.arange(2)])], "int64"),
    ([(torch.arange(3), [torch.zeros(2, 2, dtype=torch.long)])], r"int64/int32 tensor \[N\]"),
    ([(torch.arange(3), torch.arange(2))], "non-empty list"),
    ([(torch.arange(3),)], "pair"),
])
def test_pack_bad_input(groups, match):
    with pytest.raises(ValueError, match=match):
        pack_shared_prompt(groups)
    with pytest.raises(ValueError):
        pack_replicated(groups)


def test_pack_type_errors():
    with pytest.raises(TypeError):
        pack_shared_prompt([([1, 2, 3], [torch.arange(2)])])
    with pytest.raises(TypeError):
        response_logprobs(torch.zeros(3, 4), "not a batch")
    b = pack_shared_prompt(_groups())
    with pytest.raises(ValueError, match="T=17"):
        response_logprobs(torch.zeros(16, 4), b)


def test_token_mean_loss_aggregates_over_all_tokens():
    lps = [torch.tensor([-1.0, -2.0], requires_grad=True), torch.tensor([-3.0], requires_grad=True)]
    adv = torch.tensor([1.0, -2.0])
    loss = token_mean_policy_loss(lps, adv)
    # on-policy: ratio = 1, loss = -(1 + 1 - 2) / 3 tokens; d loss / d logp = -A / 3
    assert loss.item() == pytest.approx(0.0)
    loss.backward()
    torch.testing.assert_close(lps[0].grad, torch.tensor([-1 / 3, -1 / 3]))
    torch.testing.assert_close(lps[1].grad, torch.tensor([2 / 3]))
    with pytest.raises(ValueError, match="advantages"):
        token_mean_policy_loss(lps, torch.ones(3))


def test_batch_to_device_keeps_layout():
    b = pack_shared_prompt(_groups())
    c = b.to("cpu")
    assert isinstance(c, SharedPromptBatch) and torch.equal(c.input_ids, b.input_ids)
    assert c.response_slices == b.response_slices and c.sequence_table()["seq_len"].tolist() == [3, 1, 4, 2]


def test_example_program_runs_and_is_exact():
    import runpy
    from pathlib import Path

    out = runpy.run_path(str(Path(__file__).parents[2] / "examples" / "dualkv.py"))
    assert out["gap"] < 1e-5 and out["batch"].num_tokens == 295
