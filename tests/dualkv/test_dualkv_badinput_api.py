"""dualkv error contract, part 2 (issue 16): the rest of ``__all__`` (replicated packing and log-probs, the
policy loss, rollouts, Call 2 alone and its reference, the attention seam and module, the flex mask,
verify_equivalence) against the same classes of bad input; failed calls change nothing."""

import math

import pytest
import torch

from _badinput import BadInput, check_bad_inputs
from neurips26.dualkv import (
    DualKVAttention,
    build_flex_block_mask,
    decoded_attention_reference,
    dualkv_attention_fn,
    dualkv_decoded_attention,
    groups_from_rollouts,
    pack_replicated,
    pack_shared_prompt,
    replicated_response_logprobs,
    response_logprobs,
    token_mean_policy_loss,
    verify_equivalence,
)
from neurips26.dualkv.packing import attention_speedup_estimate

NAN = math.nan
GEN = torch.Generator().manual_seed(0)
GROUPS = [(torch.randint(0, 64, (6,), generator=GEN), [torch.randint(0, 64, (r,), generator=GEN) for r in (3, 5, 2)]),
          (torch.randint(0, 64, (4,), generator=GEN), [torch.randint(0, 64, (4,), generator=GEN)])]
B = pack_shared_prompt(GROUPS)
REP_IDS, _, REP_CU = pack_replicated(GROUPS)
PROMPTS = [6, 6, 6, 4]
LOGITS = torch.randn(B.num_tokens, 64, generator=GEN)
REP_LOGITS = torch.randn(REP_IDS.numel(), 64, generator=GEN)
LPS = response_logprobs(LOGITS, B)


def _nan_at(t, row=0):
    t = t.clone()
    t[row] = NAN
    return t


@pytest.mark.parametrize("call, case", [
    (pack_replicated, BadInput("empty", ([],), names="groups")),
    (pack_replicated, BadInput("float-ids", ([(torch.rand(3), [torch.arange(2)])],), names="prompt")),
    (pack_replicated, BadInput("tensor-responses", ([(torch.arange(3), torch.arange(2))],), names="responses")),
    (pack_shared_prompt, BadInput("2d-prompt", ([(torch.zeros(2, 2, dtype=torch.long), [torch.arange(2)])],),
                                  names="prompt")),
    (pack_shared_prompt, BadInput("not-a-pair", ([(torch.arange(3),)],), names="groups[0]")),
    (response_logprobs, BadInput("list", (LOGITS.tolist(), B), names="logits")),
    (response_logprobs, BadInput("int", (LOGITS.long(), B), names="logits")),
    (response_logprobs, BadInput("B2", (LOGITS[None].expand(2, -1, -1), B), names="logits")),
    (response_logprobs, BadInput("nan", (_nan_at(LOGITS, 5), B), names="logits")),  # NaN log-probs before
    (replicated_response_logprobs, BadInput("cu-float", (REP_LOGITS, REP_CU.float(), REP_IDS, PROMPTS),
                                            names="cu_seqlens")),
    (replicated_response_logprobs, BadInput("cu-end", (REP_LOGITS[:-1], REP_CU, REP_IDS[:-1], PROMPTS),
                                            names="cu_seqlens")),
    (replicated_response_logprobs, BadInput("ids-length", (REP_LOGITS, REP_CU, REP_IDS[:-1], PROMPTS),
                                            names="input_ids")),
    (replicated_response_logprobs, BadInput("prompts-count", (REP_LOGITS, REP_CU, REP_IDS, PROMPTS[:3]),
                                            names="prompt_lens_per_seq")),
    (replicated_response_logprobs, BadInput("prompt-too-long", (REP_LOGITS, REP_CU, REP_IDS, [9, 6, 6, 4]),
                                            names="prompt_lens_per_seq[0]")),
    (replicated_response_logprobs, BadInput("prompt-0", (REP_LOGITS, REP_CU, REP_IDS, [0, 6, 6, 4]),
                                            names="prompt_lens_per_seq[0]")),
    (replicated_response_logprobs, BadInput("logits-nan", (_nan_at(REP_LOGITS, 6), REP_CU, REP_IDS, PROMPTS),
                                            names="logits")),
    (token_mean_policy_loss, BadInput("adv-list", (LPS, [1.0] * 4), names="advantages")),
    (token_mean_policy_loss, BadInput("adv-length", (LPS, torch.ones(3)), names="advantages")),
    (token_mean_policy_loss, BadInput("adv-nan", (LPS, torch.full((4,), NAN)), names="advantages")),
    (token_mean_policy_loss, BadInput("logprobs-empty", ([], torch.ones(0)), names="logprobs")),
    (token_mean_policy_loss, BadInput("logprobs-tensor", (torch.cat(LPS), torch.ones(4)), names="logprobs")),
    (token_mean_policy_loss, BadInput("old-shapes", (LPS, torch.ones(4)), {"old_logprobs": LPS[:3]},
                                      names="old_logprobs")),
    (token_mean_policy_loss, BadInput("old-nan", (LPS, torch.ones(4)),
                                      {"old_logprobs": [torch.full_like(t, NAN) for t in LPS]}, names="old_logprobs")),
    (token_mean_policy_loss, BadInput("clip-negative", (LPS, torch.ones(4)), {"clip_low": -0.1}, names="clip_low")),
    (token_mean_policy_loss, BadInput("clip-1", (LPS, torch.ones(4)), {"clip_low": 1.0}, names="clip_low")),
    (token_mean_policy_loss, BadInput("clip-nan", (LPS, torch.ones(4)), {"clip_high": NAN}, names="clip_high")),
    (groups_from_rollouts, BadInput("float-ids", (torch.rand(2, 3), torch.ones(2, 2).long(), [0, 0]),
                                    names="prompt_ids")),
    (groups_from_rollouts, BadInput("group-float", (torch.ones(2, 3).long(), torch.ones(2, 2).long(), [0, 0.5]),
                                    names="group_index[1]")),  # truncated to group 0 before
    (groups_from_rollouts, BadInput("group-scalar", (torch.ones(2, 3).long(), torch.ones(2, 2).long(), 0),
                                    names="group_index")),
    (groups_from_rollouts, BadInput("mask-list", (torch.ones(2, 3).long(), torch.ones(2, 2).long(), [0, 0]),
                                    {"prompt_mask": [[1, 1, 1]] * 2}, names="prompt_mask")),
    (groups_from_rollouts, BadInput("mask-shape", (torch.ones(2, 3).long(), torch.ones(2, 2).long(), [0, 0]),
                                    {"response_mask": torch.ones(2, 3)}, names="mask")),
    (groups_from_rollouts, BadInput("two-prompts", (torch.tensor([[1, 2], [1, 3]]), torch.ones(2, 2).long(), [0, 0]),
                                    names="share one prompt")),
    (attention_speedup_estimate, BadInput("R-0", (2, 4, 0.0), names="R")),
    (attention_speedup_estimate, BadInput("R-inf", (2, 4, float("inf")), names="R")),  # was NaN silently
    (build_flex_block_mask, BadInput("batch", ("b", "cpu"), names="batch")),
    (build_flex_block_mask, BadInput("block-0", (B, "cpu"), {"block_size": 0}, names="block_size")),
    (verify_equivalence, BadInput("atol-nan", (lambda b: None, lambda i: None, GROUPS), {"atol": NAN}, names="atol")),
    (verify_equivalence, BadInput("atol-str", (lambda b: None, lambda i: None, GROUPS), {"atol": "1e-4"},
                                  names="atol")),
    (verify_equivalence, BadInput("not-callable", (None, lambda i: None, GROUPS), names="packed_logits")),
], ids=lambda x: getattr(x, "id", getattr(x, "__name__", "")))
def test_functions_refuse(call, case):
    check_bad_inputs(call, case, targets=[a for a in case.args if isinstance(a, torch.Tensor)])


def test_replicated_logprobs_equal_the_packed_ones_and_a_manual_log_softmax():
    """Independent reference: log_softmax of each sequence's rows, by hand."""
    ids, _, cu = pack_replicated(GROUPS)
    logits = torch.randn(ids.numel(), 64, generator=torch.Generator().manual_seed(3))
    got = replicated_response_logprobs(logits, cu, ids, PROMPTS)
    for s, p in enumerate(PROMPTS):
        a, b = int(cu[s]), int(cu[s + 1])
        ref = torch.log_softmax(logits[a + p - 1:b - 1], -1).gather(1, ids[a + p:b, None])[:, 0]
        torch.testing.assert_close(got[s], ref)
    masked = logits.clone()
    masked[:, 0] = -math.inf  # a masked vocabulary entry is legitimate (-inf log-prob), not refused
    replicated_response_logprobs(masked, cu, ids, PROMPTS)


H, HK, D = 4, 2, 8
Q = torch.randn(5, H, D, generator=GEN)
KD = torch.randn(5, HK, D, generator=GEN)
KC = torch.randn(3, HK, D, generator=GEN)
CU = torch.tensor([0, 2, 5])


@pytest.mark.parametrize("case", [
    BadInput("q-nan", (_nan_at(Q), KC, KC, KD, KD, CU, 3), names="q_dec"),
    BadInput("kctx-inf", (Q, KC.clone().fill_(math.inf), KC, KD, KD, CU, 3), names="k_ctx"),
    BadInput("heads", (Q, KC, KC, torch.randn(5, 3, D), torch.randn(5, 3, D), CU, 3), names="H_kv"),
    BadInput("ctx-len", (Q, KC, KC, KD, KD, CU, 4), names="context_len"),
    BadInput("ctx-len-bool", (Q, KC, KC, KD, KD, CU, True), names="context_len"),
    BadInput("cu-float", (Q, KC, KC, KD, KD, CU.float(), 3), names="cu_seqlens"),
    BadInput("cu-empty-response", (Q, KC, KC, KD, KD, torch.tensor([0, 2, 2, 5]), 3), names="cu_seqlens"),
    BadInput("cu-end", (Q, KC, KC, KD, KD, torch.tensor([0, 2, 4]), 3), names="cu_seqlens"),
    BadInput("scale-nan", (Q, KC, KC, KD, KD, CU, 3), {"scale": NAN}, names="scale"),
    BadInput("dtype", (Q.double(), KC, KC, KD, KD, CU, 3), names="dtype"),
    BadInput("backend", (Q, KC, KC, KD, KD, CU, 3), {"backend": "cuda"}, names="backend"),
], ids=lambda c: c.id)
def test_decoded_attention_refuses(case):
    check_bad_inputs(dualkv_decoded_attention, case, targets=[a for a in case.args if isinstance(a, torch.Tensor)])


@pytest.mark.parametrize("case", [
    BadInput("lens-sum", (Q, KC, KC, KD, KD, [2, 2], 0.3), names="seq_lens"),
    BadInput("lens-zero", (Q, KC, KC, KD, KD, [0, 5], 0.3), names="seq_lens"),
    BadInput("lens-tensor", (Q, KC, KC, KD, KD, torch.tensor([2, 3]), 0.3), names="seq_lens"),
    BadInput("scale-0", (Q, KC, KC, KD, KD, [2, 3], 0.0), names="scale"),
    BadInput("q-list", (Q.tolist(), KC, KC, KD, KD, [2, 3], 0.3), names="q_dec"),
    BadInput("ctx-empty", (Q, KC[:0], KC[:0], KD, KD, [2, 3], 0.3), names="k_ctx"),
], ids=lambda c: c.id)
def test_decoded_attention_reference_refuses(case):
    check_bad_inputs(decoded_attention_reference, case)


def test_decoded_reference_matches_a_per_response_softmax():
    """Independent reference: for each response, softmax over [context keys | its own causal keys]."""
    out = decoded_attention_reference(Q, KC, KC * 0.5, KD, KD * 2, [2, 3], 0.3)
    for lo, hi in ((0, 2), (2, 5)):
        for r in range(lo, hi):
            for h in range(H):
                kv = h // (H // HK)
                keys = torch.cat([KC[:, kv], KD[lo:r + 1, kv]])
                vals = torch.cat([0.5 * KC[:, kv], 2 * KD[lo:r + 1, kv]])
                w = torch.softmax(0.3 * keys @ Q[r, h], 0)
                torch.testing.assert_close(out[r, h], w @ vals, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [
    BadInput("q-3d", (torch.randn(H, B.num_tokens, D), torch.randn(1, HK, B.num_tokens, D),
                      torch.randn(1, HK, B.num_tokens, D)), {"batch": B}, names="q"),
    BadInput("k-list", (torch.randn(1, H, B.num_tokens, D), [0.0], torch.randn(1, HK, B.num_tokens, D)),
             {"batch": B}, names="k"),
    BadInput("batch", (torch.randn(1, H, B.num_tokens, D), torch.randn(1, HK, B.num_tokens, D),
                       torch.randn(1, HK, B.num_tokens, D)), {"batch": None}, names="batch"),
], ids=lambda c: c.id)
def test_attention_fn_refuses(case):
    check_bad_inputs(dualkv_attention_fn, case)


@pytest.mark.parametrize("case", [
    BadInput("d-0", (0, 4), names="d_model"),
    BadInput("heads-float", (32, 4.0), names="n_heads"),
    BadInput("kv-heads-3", (32, 4, 3), names="n_kv_heads"),
    BadInput("odd-head-dim", (12, 4), names="head dim"),
    BadInput("theta-nan", (32, 4, 2, NAN), names="rope_theta"),
    BadInput("backend", (32, 4), {"backend": "gpu"}, names="backend"),
], ids=lambda c: c.id)
def test_dualkv_attention_module_constructor_refuses(case):
    check_bad_inputs(DualKVAttention, case)


@pytest.mark.parametrize("case", [
    BadInput("x-width", (torch.randn(B.num_tokens, 16), B), names="x"),
    BadInput("x-rows", (torch.randn(B.num_tokens - 1, 32), B), names="x"),
    BadInput("x-B2", (torch.randn(2, B.num_tokens, 32), B), names="x"),
    BadInput("x-int", (torch.zeros(B.num_tokens, 32, dtype=torch.long), B), names="x"),
    BadInput("x-nan", (torch.full((B.num_tokens, 32), NAN), B), names="q"),
    BadInput("batch", (torch.randn(B.num_tokens, 32), "b"), names="batch"),
], ids=lambda c: c.id)
def test_dualkv_attention_module_forward_refuses_and_keeps_weights(case):
    torch.manual_seed(0)
    layer = DualKVAttention(32, 4, 2, backend="torch")
    check_bad_inputs(layer, case, target=layer)
