"""snndelay's ``train_ctc`` on a tiny residual delay SNN and a tiny synthetic set; shared by the 2-process test
(``test_snndelay_torchrun.py``) and its 1-process reference.

    python -m torch.distributed.run --standalone --nproc_per_node 2 snndelay_ddp_worker.py OUT.json [ddp|fsdp]
"""

from __future__ import annotations

import torch

from neurips26.nn.train import full_state_dict
from neurips26.snndelay import ResidualDelaySNN, synthetic_speech_bci, train_ctc


def fit_run(distributed: str = "auto") -> dict:
    data = synthetic_speech_bci(n_sentences=12, n_channels=4, sigma=1.0, lead=1, n_days=2, seed=0, words=(1, 2),
                                lexicon_size=20)
    torch.manual_seed(0)
    model = ResidualDelaySNN(8, 12, 2, max_delay=3, n_days=2)
    # the default augmentation noise is kept: it is drawn for the global batch from the seeded generator, the same
    # on every rank, before the rows are split
    res = train_ctc(model, data, steps=5, batch_size=6, lr=5e-3, seed=1, distributed=distributed)
    state = full_state_dict(model)  # a collective under FSDP (every rank gathers)
    return {"losses": res.losses, "params": {k: v.detach().double().flatten().tolist() for k, v in state.items()}}


if __name__ == "__main__":
    from _torchrun import worker_main

    worker_main(lambda args: fit_run(args[0] if args else "ddp"))
