"""Sphere Latent Encoder on scikit-learn digits (16x16): a frozen tokenizer, a one-step latent generator,
class-conditional samples.

    .venv/bin/python examples/spherelatent.py     # ~30 s on a CPU (tiny budgets: blurry digits, real pipeline)
"""

import torch

from neurips26.spherelatent import (
    ConvAutoencoder,
    LatentTransformer,
    SphereLatentEncoder,
    SphereLatentPipeline,
    digits_images,
    fit,
    latent_statistics,
    train_tokenizer,
)

torch.manual_seed(0)
x, y = digits_images(16)                                   # [1797, 1, 16, 16] in [-1, 1], labels [1797]
tok = ConvAutoencoder(width=16)                            # 16x16x1 -> a small latent grid
train_tokenizer(tok, x, steps=150, batch_size=64, seed=0)  # then frozen inside the generator
g = LatentTransformer(tok.latent_shape, dim=64, depth=2, mlp_ratio=2.0, num_classes=10)
sle = SphereLatentEncoder(tok, g, latent_stats=latent_statistics(tok, x), num_classes=10)
run = fit(sle, x, y, loss_fn=lambda m, xb, yb: m.loss(xb, yb)[0], steps=150, batch_size=64, seed=0)
pipe = SphereLatentPipeline(run.ema.module)                # diffusers-shaped: labels, steps, generator
images = pipe(class_labels=list(range(10)), num_inference_steps=2, generator=torch.Generator().manual_seed(0)).images
print(f"samples {tuple(images.shape)} in [{float(images.min()):.2f}, {float(images.max()):.2f}], "
      f"one per class, 2 latent steps and one decode each")
# pipe.save_pretrained("sle-digits"); SphereLatentPipeline.from_pretrained("sle-digits")  (safetensors + config.json)
