"""spherelatent's ``fit`` (its generic trainer on ``nn.train.train_lm``) on a tiny autoencoder, whose loss calls
``model.reconstruction_loss`` rather than ``model(x)``; shared by the 2-process test and its 1-process reference.

    torchrun --standalone --nproc_per_node 2 tests/_torchrun_fit_worker.py OUT.json
"""

from __future__ import annotations

import json
import sys

import torch

from neurips26.spherelatent import ConvAutoencoder, fit


def fit_run() -> dict:
    torch.manual_seed(0)
    model = ConvAutoencoder(image_size=8, latent_channels=4, width=8)
    x = torch.rand(64, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    res = fit(model, x, None, loss_fn=lambda m, xb, _: m.reconstruction_loss(xb, 0.0), steps=4, batch_size=8,
              lr=1e-2, seed=0, ema_decay=None, eval_fn=lambda m: float(m.reconstruction_loss(x[:8], 0.0)),
              eval_every=2)
    evals = [value for _, _, value in res.eval_history]
    return {"losses": res.losses, "evals": evals,
            "params": {k: v.detach().double().flatten().tolist() for k, v in model.state_dict().items()}}


if __name__ == "__main__":
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    out = fit_run()
    out["world_size"] = dist.get_world_size()
    if dist.get_rank() == 0:
        with open(sys.argv[1], "w") as fh:
            json.dump(out, fh)
    dist.barrier()
    dist.destroy_process_group()
