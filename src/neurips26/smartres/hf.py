"""SmartRes on a Hugging Face vision tower, a processor-like entry point, and save / load.

* :class:`HFVisionTower` wraps a ``transformers`` ``SiglipVisionModel`` or ``CLIPVisionModel`` (built from a
  config or loaded with ``from_pretrained``) so that it encodes *any crop at any scale with positions in one
  full-resolution frame*: the tower's learned position table (a ``g × g`` grid for its native image size) is
  resampled at the centres of the tokens in the full-resolution frame — bilinear with ``align_corners=False``,
  so a low-view token covering 2 × 2 full-resolution patches gets the embedding at the centre of those four,
  and a region's tokens get the sub-block of the full-resolution grid they occupy.
* :class:`SmartResHF` — low view → :class:`~.router.ResolutionRouter` → only the routed regions through the
  tower → :class:`~.sequence.VisualSequence`, plus Qwen2-VL-style ``image_grid_thw`` rows ``(t=1, h, w)`` per
  encoded view (global view first, then regions in raster order), the shape a Qwen2-VL-style LLM reads.
* :class:`SmartResGrounder` — image + query → boxes on the mini grounding MLLM (the trained model of the claim
  check): ``grounder(image, "red 7")`` with ``image`` an ``H × W × 3`` uint8 array or a ``[3, H, W]`` float
  tensor; boxes come back in the input image's pixels. ``save_pretrained(dir)`` / ``from_pretrained(dir)``
  write and read a JSON config and ``safetensors`` weights.

Inferred: the paper's code is not public; the resampling of the position table is our choice for towers with
absolute learned positions (Qwen2-VL's rotary 2-D positions would take the full-resolution ``pos`` directly).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.constraints import Instance, Int, Real, check_arguments, validate
from neurips26.constraints import Tensor as TensorC

from ._checks import tensor
from .data import COLOUR_NAMES, N_DIGITS
from .model import MiniGroundingMLLM, MLLMConfig, SmartRes
from .router import ResolutionRouter, select_regions
from .sequence import VisualSequence, build_order_preserving_sequence, region_corners, token_centres


def _tower_parts(model: nn.Module) -> nn.Module:
    """The module holding ``embeddings``/``encoder`` (``model.vision_model`` in older transformers)."""
    inner = getattr(model, "vision_model", model)
    if not (hasattr(inner, "embeddings") and hasattr(inner, "encoder")):
        raise TypeError("model must be a transformers SiglipVisionModel or CLIPVisionModel, got "
                        f"{type(model).__name__}")
    return inner


class HFVisionTower(nn.Module):
    """A SigLIP / CLIP vision tower that encodes crops with positions in one full-resolution frame.

    Args:
        model: a ``transformers`` ``SiglipVisionModel`` or ``CLIPVisionModel`` (any size; from a config or
            pretrained). Its ``config.patch_size`` is the patch side ``p`` in pixels.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        inner = _tower_parts(model)
        self.config = model.config
        self.patch = int(self.config.patch_size)
        self.dim = int(self.config.hidden_size)
        self.is_clip = hasattr(inner.embeddings, "class_embedding")
        self.native_grid = int(self.config.image_size) // self.patch

    @property
    def _inner(self) -> nn.Module:
        return _tower_parts(self.model)

    def position_grid(self, rows: float, cols: float, out_rows: int, out_cols: int) -> Tensor:
        """The position table resampled so that a frame of ``rows × cols`` full-resolution tokens spans the
        native grid, read at an ``out_rows × out_cols`` grid of token centres → ``[out_rows·out_cols, d]``."""
        table = self._inner.embeddings.position_embedding.weight                     # [(1+) g², d]
        if self.is_clip:
            table = table[1:]
        g = self.native_grid
        grid = table.reshape(g, g, self.dim).permute(2, 0, 1)[None]                  # [1, d, g, g]
        out = F.interpolate(grid, size=(out_rows, out_cols), mode="bilinear", align_corners=False)
        return out[0].permute(1, 2, 0).reshape(out_rows * out_cols, self.dim)

    def encode(self, pixels: Tensor, positions: Tensor) -> Tensor:
        """``pixels [B, 3, h, w]`` (h, w multiples of the patch) with ``positions [(h/p)(w/p), d]`` → tokens
        ``[B, (h/p)(w/p), d]``, the tower's ``last_hidden_state`` without CLIP's class token (added for the pass)."""
        inner = self._inner
        emb = inner.embeddings
        x = emb.patch_embedding(pixels.to(emb.patch_embedding.weight.dtype)).flatten(2).transpose(1, 2)
        x = x + positions[None]
        if self.is_clip:
            cls = (emb.class_embedding + emb.position_embedding.weight[0]).expand(x.shape[0], 1, -1)
            x = inner.pre_layrnorm(torch.cat([cls, x], 1))
        h = inner.encoder(inputs_embeds=x)
        h = h.last_hidden_state if hasattr(h, "last_hidden_state") else h[0]
        # as the towers' own last_hidden_state: SigLIP applies post_layernorm to every token, CLIP only to its pool
        return h[:, 1:] if self.is_clip else inner.post_layernorm(h)

    def full_frame_positions(self, size: int) -> Tensor:
        """Positions of the ``(size/p)²`` full-resolution tokens of a ``size × size`` image → ``[(size/p)², d]``."""
        g = size // self.patch
        return self.position_grid(g, g, g, g)


class SmartResHF(nn.Module):
    """SmartRes on an :class:`HFVisionTower`.

    Args:
        tower: the wrapped vision tower.  image_size: side ``S`` of the (square) full-resolution input, pixels.
        region_px: side of a region (a multiple of ``2 · patch``, dividing ``S``).
        query_dim: width of the query embedding the router reads (e.g. a text encoder's pooled output).
        hidden: the router's hidden width.  threshold, k_min, k_max: :func:`~.router.select_regions`.
    """

    @validate(tower=Instance(HFVisionTower, "HFVisionTower"), image_size=Int(low=1), region_px=Int(low=1),
              query_dim=Int(low=1), hidden=Int(low=1), threshold=Real(low=0.0, high=1.0, closed="neither"),
              k_min=Int(low=0))
    def __init__(self, tower: HFVisionTower, image_size: int, region_px: int, query_dim: int, hidden: int = 128,
                 threshold: float = 0.5, k_min: int = 1, k_max: int | None = None) -> None:
        super().__init__()
        p = tower.patch
        if image_size % region_px or region_px % (2 * p):
            raise ValueError(f"SmartResHF: region_px must divide image_size={image_size} and be a multiple of "
                             f"2 x patch={2 * p}, got {region_px}")
        self.tower, self.image_size, self.region_px = tower, image_size, region_px
        self.router = ResolutionRouter(tower.dim, query_dim, hidden=hidden)
        self.threshold, self.k_min, self.k_max = threshold, k_min, k_max
        self.grid = image_size // p                                                   # full-res tokens per side
        self.region_grid = (image_size // region_px,) * 2

    def encode_low(self, images: Tensor) -> tuple[Tensor, Tensor]:
        """The ½-scale global view: tokens ``[B, (G/2)², d]`` and centres ``[(G/2)², 2]`` (full-res pixels)."""
        low = F.interpolate(images, scale_factor=0.5, mode="area")
        gl = self.grid // 2
        pos_emb = self.tower.position_grid(self.grid, self.grid, gl, gl)
        return self.tower.encode(low, pos_emb), token_centres(gl, gl, 2.0 * self.tower.patch)

    @validate(images=TensorC("B 3 H W", dtype="float"), query_emb=TensorC("B Q", dtype="float"))
    def forward(self, images: Tensor, query_emb: Tensor) -> tuple[VisualSequence, Tensor]:
        """``images [B, 3, S, S]``, ``query_emb [B, query_dim]`` → (the order-preserving sequence, ``image_grid_thw
        [n_views, 3]``: one ``(1, h, w)`` row per encoded view in token grid units, image by image)."""
        s = self.image_size
        check_arguments("SmartResHF.forward", {"images": tensor(f"_ 3 {s} {s}", None, False)}, {"images": images})
        p, r = self.tower.patch, self.region_px
        low_tokens, low_pos = self.encode_low(images)
        gl = self.grid // 2
        logits = self.router(low_tokens, (gl, gl), query_emb, self.region_grid)
        ids = select_regions(logits, self.threshold, self.k_min, self.k_max)
        full_pos_emb = self.tower.full_frame_positions(self.image_size).reshape(self.grid, self.grid, -1)
        n = r // p
        local = token_centres(n, n, float(p))
        rt, rp, thw = [], [], []
        for i, rid in enumerate(ids):
            corners = region_corners(rid, self.region_grid, r)                       # [k, 2] (x, y) pixels
            crops = [images[i, :, y0:y0 + r, x0:x0 + r] for x0, y0 in corners.long().tolist()]
            toks = []
            for (x0, y0), crop in zip(corners.long().tolist(), crops):
                pe = full_pos_emb[y0 // p:y0 // p + n, x0 // p:x0 // p + n].reshape(n * n, -1)
                toks.append(self.tower.encode(crop[None], pe)[0])
            rt.append(torch.stack(toks) if toks else low_tokens.new_zeros(0, n * n, low_tokens.shape[-1]))
            rp.append(corners[:, None, :] + local[None])
            thw.append([[1, gl, gl]] + [[1, n, n]] * len(rid))
        seq = build_order_preserving_sequence(low_tokens, low_pos, rt, rp, ids,
                                              n_regions=self.region_grid[0] * self.region_grid[1],
                                              low_footprint=2.0 * p, region_footprint=float(p))
        return seq, torch.tensor([row for rows in thw for row in rows], dtype=torch.long)


# ------------------------------------------------------------------------- processor-like entry, save/load
def parse_query(query: Any) -> tuple[int, int]:
    """``"red 7"`` / ``"7 red"`` / ``(7, 0)`` → ``(digit, colour id)``; colours: :data:`~.data.COLOUR_NAMES`."""
    if isinstance(query, str):
        words = query.lower().replace(",", " ").split()
        digits = [int(w) for w in words if w.isdigit() and int(w) < N_DIGITS]
        colours = [COLOUR_NAMES.index(w) for w in words if w in COLOUR_NAMES]
        if len(digits) != 1 or len(colours) != 1:
            raise ValueError(f"query must name one digit 0-9 and one colour of {COLOUR_NAMES}, e.g. 'red 7'; "
                             f"got {query!r}")
        return digits[0], colours[0]
    if isinstance(query, tuple | list) and len(query) == 2 and all(
            isinstance(v, int | np.integer) and not isinstance(v, bool) for v in query):
        d, c = int(query[0]), int(query[1])
        if 0 <= d < N_DIGITS and 0 <= c < len(COLOUR_NAMES):
            return d, c
    raise ValueError(f"query must be a string like 'red 7' or a (digit, colour id) pair, got {query!r}")


class SmartResGrounder:
    """Image + query → boxes with SmartRes on the mini grounding MLLM.

    Args:
        model: a trained :class:`~.model.MiniGroundingMLLM`.  router: its trained :class:`ResolutionRouter`.
        k: regions encoded at full resolution per image (``None``: the threshold rule, k_min 1).
    """

    def __init__(self, model: MiniGroundingMLLM, router: ResolutionRouter, k: int | None = 2) -> None:
        c = model.config
        kk = {} if k is None else {"k_min": k, "k_max": k}
        self.model, self.router, self.k = model.eval(), router.eval(), k
        self.smartres = SmartRes(model, router, c.lowres_scale, c.region_px, **kk)

    def _image(self, image: Any) -> tuple[Tensor, float, float]:
        if isinstance(image, np.ndarray):
            if image.ndim != 3 or image.shape[2] != 3:
                raise ValueError(f"image must be an H x W x 3 array, got shape {image.shape}")
            t = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).float()
            t = t / 255.0 if image.dtype == np.uint8 else t
        elif isinstance(image, Tensor) and image.dim() == 3 and image.shape[0] == 3 and image.is_floating_point():
            t = image.float()
        else:
            raise TypeError(f"image must be an H x W x 3 numpy array or a [3, H, W] float tensor, got "
                            f"{type(image).__name__}")
        if not bool(torch.isfinite(t).all()):
            raise ValueError("image must be finite")
        s = self.model.config.image_size
        h, w = t.shape[1:]
        t = F.interpolate(t[None], size=(s, s), mode="bilinear", align_corners=False, antialias=True)
        return t, w / s, h / s

    @torch.no_grad()
    def __call__(self, image: Any, query: Any) -> dict[str, Any]:
        """→ ``{"box": [x1, y1, x2, y2] in the input's pixels, "regions": routed region ids, "tokens": visual
        tokens the LM read}``."""
        from .baselines import run_smartres

        pix, sx, sy = self._image(image)
        q = torch.tensor([parse_query(query)], dtype=torch.long)
        seq = self.smartres.encode(pix, self.model.lm.query_embedding(q))
        out = run_smartres(self.smartres, pix, q)
        box = out.boxes[0] * torch.tensor([sx, sy, sx, sy])
        regions = sorted({int(r) for r in seq.region_ids[0].tolist() if r >= 0})
        return {"box": box.tolist(), "regions": regions, "tokens": int(out.llm_tokens)}

    def save_pretrained(self, directory: str) -> None:
        """``config.json`` (model config, router sizes, k) and ``model.safetensors`` (both state dicts)."""
        from safetensors.torch import save_file

        os.makedirs(directory, exist_ok=True)
        r = self.router
        meta = {"format": "neurips26.smartres/1", "mllm": asdict(self.model.config), "k": self.k,
                "router": {"feat_dim": r.feat_dim, "query_dim": r.query_dim, "hidden": r.mlp[0].out_features}}
        state = {f"model.{k}": v.contiguous() for k, v in self.model.state_dict().items()}
        state.update({f"router.{k}": v.contiguous() for k, v in r.state_dict().items()})
        save_file(state, os.path.join(directory, "model.safetensors"))
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(meta, f, indent=1)

    @classmethod
    def from_pretrained(cls, directory: str) -> SmartResGrounder:
        """Read what :meth:`save_pretrained` wrote."""
        from safetensors.torch import load_file

        with open(os.path.join(directory, "config.json")) as f:
            meta = json.load(f)
        if meta.get("format") != "neurips26.smartres/1":
            raise ValueError(f"{directory}: not a SmartResGrounder checkpoint (format {meta.get('format')!r})")
        model = MiniGroundingMLLM(MLLMConfig(**meta["mllm"]))
        router = ResolutionRouter(**meta["router"])
        state = load_file(os.path.join(directory, "model.safetensors"))
        model.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("model.")})
        router.load_state_dict({k[7:]: v for k, v in state.items() if k.startswith("router.")})
        return cls(model, router, k=meta["k"])
