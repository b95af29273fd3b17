"""Workers for device peak-memory measurements in a fresh process (``claims.measure.peak_rss_subprocess``).

Each loads a backbone, then runs a few device steps: ``forward`` (ours: frozen, ``no_grad``, quantised upload)
or ``lora`` (the FedAvg-LoRA device: forward + backward + AdamW on PEFT adapters and a head); ``load`` stops after
loading our device, ``load-lora`` after building the LoRA model (importing PEFT costs memory of its own): the
floors to subtract. Arguments are strings (a command line): backbone ``"minilm"`` or ``"tiny"``,
batch size, tokens, steps.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F

from neurips26.constraints import Choice, validate

__all__ = ["device_job", "make_backbone"]


@validate(name=Choice("minilm", "tiny"))
def make_backbone(name: str):
    """``(model, hidden_states_backbone, layers)`` for ``"minilm"`` (all-MiniLM-L6-v2) or ``"tiny"`` (random Llama)."""
    from .backbone import HiddenStates

    if name == "minilm":
        from neurips26.nn import load_minilm

        model, _ = load_minilm()
        return model, HiddenStates(model), [2, 4, 6]
    from neurips26.nn import Llama, LlamaConfig  # "tiny"

    torch.manual_seed(0)
    model = Llama(LlamaConfig(vocab_size=256, d_model=64, n_layers=4, n_heads=4)).eval()
    return model, HiddenStates(model), [2, 3, 4]


@validate(kind=Choice("load", "forward", "load-lora", "lora"), backbone=Choice("minilm", "tiny"))
def device_job(kind: str, backbone: str = "minilm", batch: str = "16", tokens: str = "32", steps: str = "3") -> None:
    """One device's work: ``kind`` in ``{"load", "forward", "lora"}`` (see the module docstring)."""
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    b, t, n = int(batch), int(tokens), int(steps)
    model, hidden, layers = make_backbone(backbone)
    vocab = 256 if backbone == "tiny" else 30522
    g = torch.Generator().manual_seed(0)
    data = {"input_ids": torch.randint(5, vocab, (b, t), generator=g),
            "attention_mask": torch.ones(b, t, dtype=torch.long), "labels": torch.randint(2, (b,), generator=g)}
    if kind == "load":
        return
    if kind == "forward":
        from .device import DeviceClient

        client = DeviceClient(hidden, layers, positions="mean", quant_bits=8, backbone_type=backbone)
        for _ in range(n):
            client.step(data)
        return
    if kind in ("lora", "load-lora"):
        from .baselines import LoRAClassifier

        clf = LoRAClassifier(model, positions="mean", rank=8)
        del model, hidden  # the classifier holds its own copy: keep one set of weights, as a device would
        if kind == "load-lora":
            return
        opt = torch.optim.AdamW([p for p in clf.parameters() if p.requires_grad], lr=1e-3)
        for _ in range(n):
            loss = F.cross_entropy(clf(data["input_ids"], data["attention_mask"]), data["labels"])
            opt.zero_grad()
            loss.backward()
            opt.step()
