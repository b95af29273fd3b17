"""all-MiniLM-L6-v2 in pure PyTorch: paraphrases closer than unrelated sentences, unit norms, padding
invariance, and the hidden states of transformers' BertModel on the same folder (offline). Skips when the
data is absent."""

import pytest
import torch

torch.set_num_threads(1)

PARA = ("A man is playing a guitar.", "Someone is playing the guitar.")
UNRELATED = ("A man is playing a guitar.", "The stock market fell sharply on Tuesday.")


@pytest.fixture(scope="module")
def minilm():
    from neurips26.data import DatasetNotFoundError, dataset_path

    pytest.importorskip("safetensors")
    try:
        path = dataset_path("minilm-l6-v2")
    except (DatasetNotFoundError, ValueError) as err:
        pytest.skip(f"minilm-l6-v2 not available: {str(err).splitlines()[0]}")
    from neurips26.nn import load_minilm

    return load_minilm(path)[0], path


def test_paraphrases_are_closer_than_unrelated_sentences(minilm):
    model, _ = minilm
    e = model.encode(list(PARA + UNRELATED))
    assert e.shape == (4, 384)
    torch.testing.assert_close(e.norm(dim=1), torch.ones(4), rtol=0, atol=1e-5)
    cos_para, cos_unrel = float(e[0] @ e[1]), float(e[2] @ e[3])
    assert cos_para > cos_unrel
    assert cos_para > 0.6 and cos_unrel < 0.3  # loose sanity bounds for a trained sentence encoder


def test_padding_and_batching_do_not_change_an_embedding(minilm):
    model, _ = minilm
    alone = model.encode(["short"])
    padded = model.encode(["short", "a much longer sentence that forces padding of the first row"])[:1]
    batched = model.encode(["short"] * 3, batch_size=2)
    torch.testing.assert_close(padded, alone, rtol=0, atol=1e-5)
    torch.testing.assert_close(batched, alone.expand(3, -1), rtol=0, atol=1e-5)


def test_tokenize_adds_cls_sep_and_truncates(minilm):
    model, _ = minilm
    ids, mask = model.tokenize(["hello world", "word " * 400])
    assert ids[0, 0] == 101 and ids[0, int(mask[0].sum()) - 1] == 102  # [CLS] ... [SEP]
    assert ids.shape[1] == model.max_length == 256 and ids[1, -1] == 102


def test_bad_input(minilm):
    model, _ = minilm
    with pytest.raises(TypeError, match="list of str"):
        model.encode("one string")
    with pytest.raises(TypeError, match="list of str"):
        model.encode([1, 2])
    with pytest.raises(ValueError, match="batch_size"):
        model.encode(["a"], batch_size=0)


def test_hidden_states_match_transformers_bertmodel(minilm):
    transformers = pytest.importorskip("transformers")
    model, path = minilm
    ref = transformers.BertModel.from_pretrained(str(path), add_pooling_layer=False).eval()
    ids, mask = model.tokenize(list(PARA + UNRELATED) + ["short"])
    with torch.no_grad():
        theirs = ref(input_ids=ids, attention_mask=mask).last_hidden_state
        ours = model.encoder(ids, mask)
    keep = mask.bool()
    torch.testing.assert_close(ours[keep], theirs[keep], rtol=0, atol=1e-5)
    # sentence-transformers' pooling written out: masked mean, then L2 normalise
    m = mask[..., None].float()
    pooled = (theirs * m).sum(1) / m.sum(1)
    torch.testing.assert_close(model(ids, mask), pooled / pooled.norm(dim=1, keepdim=True), rtol=0, atol=1e-5)
