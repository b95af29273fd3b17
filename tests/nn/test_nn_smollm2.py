"""SmolLM2 from its GGUF: the Q/K un-permutation against closed forms and transformers' own inverse, then
the real model (perplexity of plain English, tokenizer round trip). The model tests skip when the data is
absent; the comparison with transformers' GGUF loader is slow (it dequantises the file a second time)."""

import math

import pytest
import torch
import torch.nn.functional as F

from neurips26.nn import apply_rope, rope_cos_sin
from neurips26.nn.smollm2 import permute_qk, unpermute_qk

torch.set_num_threads(1)

PASSAGE = ("The village stood at the edge of a wide river. Every morning the farmers walked down to the water "
           "with their animals, and the children followed them to play on the bank. In the evening the families "
           "gathered in the square, where the old men told stories about the years when the river had flooded "
           "the fields and the whole village had worked together to build the wall that still protects it today.")


# ------------------------------------------------------------------------------------ the permutation
@pytest.mark.parametrize("n_heads, d", [(1, 2), (3, 8), (9, 64)])
def test_unpermute_is_the_closed_form_row_map(n_heads, d):
    rows = torch.arange(n_heads * d, dtype=torch.float64)[:, None]  # row r holds the value r
    out = unpermute_qk(rows, n_heads)
    for h in range(n_heads):
        for c in range(2):
            for j in range(d // 2):
                # HF row h d + c d/2 + j  <-  GGUF row h d + 2 j + c
                assert out[h * d + c * d // 2 + j, 0] == h * d + 2 * j + c


@pytest.mark.parametrize("n_heads, d, cols", [(3, 8, 5), (9, 64, 1), (2, 4, 0)])
def test_permute_and_unpermute_are_inverse(n_heads, d, cols):
    w = torch.randn(n_heads * d, cols) if cols else torch.randn(n_heads * d)
    assert torch.equal(unpermute_qk(permute_qk(w, n_heads), n_heads), w)
    assert torch.equal(permute_qk(unpermute_qk(w, n_heads), n_heads), w)
    if d == 4:  # with d/2 = 2 the two maps coincide: a swap of the middle pair is an involution
        assert torch.equal(permute_qk(w, n_heads), unpermute_qk(w, n_heads))


def _rope_adjacent(x, pos, theta):
    """llama.cpp's rotation of adjacent pairs (2j, 2j+1) with frequency theta^(-2j/d), written out."""
    d = x.shape[-1]
    out = x.clone()
    for j in range(d // 2):
        a = pos * theta ** (-2 * j / d)  # [T]
        x0, x1 = x[..., 2 * j], x[..., 2 * j + 1]
        out[..., 2 * j] = x0 * torch.cos(a) - x1 * torch.sin(a)
        out[..., 2 * j + 1] = x0 * torch.sin(a) + x1 * torch.cos(a)
    return out


def test_unpermuted_weights_under_rotate_half_rope_equal_gguf_weights_under_adjacent_rope():
    """The reason for the un-permute: q = W x rotated the HF way equals the GGUF rows rotated llama.cpp's
    way, once the heads' dimensions are put back in HF order."""
    g = torch.Generator().manual_seed(0)
    n_heads, d, d_model, t, theta = 3, 8, 12, 5, 100000.0
    w_gguf = torch.randn(n_heads * d, d_model, generator=g, dtype=torch.float64)
    x = torch.randn(t, d_model, generator=g, dtype=torch.float64)
    pos = torch.arange(t, dtype=torch.float64)
    q_gguf = (x @ w_gguf.T).view(t, n_heads, d).transpose(0, 1)  # [H, T, d]
    want = _rope_adjacent(q_gguf, pos, theta)  # llama.cpp semantics
    q_hf = (x @ unpermute_qk(w_gguf, n_heads).T).view(t, n_heads, d).transpose(0, 1)[None]
    cos, sin = rope_cos_sin(torch.arange(t), d, theta, torch.float64)
    got = apply_rope(q_hf, cos, sin)[0]  # [H, T, d] in HF order
    hf_order = [2 * j + c for c in range(2) for j in range(d // 2)]  # HF dim c d/2 + j = GGUF dim 2j + c
    torch.testing.assert_close(got, want[..., hf_order], rtol=0, atol=1e-5)  # rope tables are fp32


def test_matches_transformers_reverse_permute():
    gguf_utils = pytest.importorskip("transformers.modeling_gguf_pytorch_utils")
    proc = gguf_utils.LlamaTensorProcessor(config={"num_attention_heads": 9, "num_key_value_heads": 3})
    w = torch.randn(3 * 64, 576)
    theirs = proc._reverse_permute_weights(w.numpy(), 9, 3)  # k: heads = the 3 KV heads
    assert torch.equal(unpermute_qk(w, 3), torch.from_numpy(theirs))


def test_permute_validation():
    with pytest.raises(ValueError, match="n_heads must be a positive int"):
        unpermute_qk(torch.zeros(8, 2), 0)
    with pytest.raises(ValueError, match="even head_dim"):
        unpermute_qk(torch.zeros(9, 2), 3)


# ------------------------------------------------------------------------------------ the real model
@pytest.fixture(scope="module")
def smollm2():
    from neurips26.data import DatasetNotFoundError, dataset_path

    pytest.importorskip("gguf")
    try:
        path = dataset_path("smollm2-135m")
    except (DatasetNotFoundError, ValueError) as err:
        pytest.skip(f"smollm2-135m not available: {str(err).splitlines()[0]}")
    from neurips26.nn import load_smollm2

    return load_smollm2(path)


def test_smollm2_shape(smollm2):
    model, tok = smollm2
    c = model.config
    assert (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.d_ff, c.vocab_size) == (30, 576, 9, 3, 1536, 49152)
    assert c.rope_theta == 100000.0 and math.isclose(c.norm_eps, 1e-5, rel_tol=1e-6) and c.tie_embeddings
    assert model.lm_head.weight is model.embed_tokens.weight
    assert 134e6 < model.num_parameters() < 135e6
    assert tok.vocab_size == 49152 and tok.special_tokens["eos"] == 2


def test_smollm2_perplexity_of_plain_english(smollm2):
    model, tok = smollm2
    ids = torch.tensor([tok.encode(PASSAGE)])
    with torch.no_grad():
        logits = model(ids)
    ppl = math.exp(float(F.cross_entropy(logits[0, :-1], ids[0, 1:])))
    assert ppl < 40, ppl
    # a shuffled passage (same tokens, no language) must be far less likely: the weights carry language
    shuffled = ids[:, torch.randperm(ids.shape[1], generator=torch.Generator().manual_seed(0))]
    with torch.no_grad():
        ppl_shuffled = math.exp(float(F.cross_entropy(model(shuffled)[0, :-1], shuffled[0, 1:])))
    assert ppl_shuffled > 5 * ppl


@pytest.mark.parametrize("text", [PASSAGE, "Hello 12345 world!", "naïve café — 日本語 🙂", "  two  spaces\n\n\ttab",
                                  "<|im_start|>user\nHi there<|im_end|>\n", ""])
def test_smollm2_tokenizer_round_trip(smollm2, text):
    _, tok = smollm2
    ids = tok.encode(text)
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == text


def test_smollm2_tokenizer_specials_and_digits(smollm2):
    _, tok = smollm2
    assert tok.encode("<|im_start|>")[0] == 1 and tok.encode("<|im_end|>")[0] == 2
    assert len(tok.encode("12345")) == 5  # llama.cpp's smollm pre-tokeniser: one token per digit


@pytest.mark.slow
def test_smollm2_logits_match_transformers_gguf_loader(smollm2):
    """transformers' own GGUF loader (dequantise, reverse-permute, LlamaForCausalLM) on the same file."""
    pytest.importorskip("accelerate")
    transformers = pytest.importorskip("transformers")
    from neurips26.data import dataset_path

    path = dataset_path("smollm2-135m")
    ref = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                            dtype=torch.float32).eval()
    model, tok = smollm2
    ids = torch.tensor([tok.encode(PASSAGE)])
    with torch.no_grad():
        torch.testing.assert_close(model(ids), ref(ids).logits, rtol=0, atol=5e-4)
