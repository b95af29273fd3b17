"""spherelatent's ``fit`` (its generic trainer on ``nn.train.train_lm``) on a tiny autoencoder, whose loss calls
``model.reconstruction_loss`` rather than ``model(x)``; shared by the 2-process test and its 1-process reference.

    torchrun --standalone --nproc_per_node 2 tests/_torchrun_fit_worker.py OUT.json
"""

from __future__ import annotations

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
    from _torchrun import worker_main

    worker_main(lambda args: fit_run())
