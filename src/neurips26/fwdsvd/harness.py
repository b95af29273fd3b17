"""An evaluation hook in the shape lm-eval-harness uses, to plug any multiple-choice task into the searches.

:class:`HarnessLM` wraps a causal LM (``model(input_ids [B, T]) -> logits [B, T, V]``) and a tokenizer
(``encode(str) -> list[int]``) with lm-eval-harness' ``loglikelihood(requests)`` contract: each request is a
``(context, continuation)`` pair (or an object whose ``.args`` is one, like the harness' ``Instance``) and
the answer is ``(sum of the continuation's token log-probabilities, whether greedy decoding gives it)``.
:func:`multiple_choice_eval_fn` builds the ``eval_fn(model) -> accuracy`` the searches take from a task
written as the harness' multiple-choice YAML fields (``doc_to_text``, ``doc_to_choice``, ``doc_to_target``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.constraints import Int, validate

__all__ = ["HarnessLM", "multiple_choice_eval_fn"]


def check_tokenizer(where: str, tokenizer: Any) -> None:
    """A tokenizer is anything with ``encode(str) -> list[int]`` (duck typed: no class to declare)."""
    if not callable(getattr(tokenizer, "encode", None)):
        raise TypeError(f"{where}: tokenizer must have encode(str) -> list[int], got {type(tokenizer).__name__}")


def _pair(request: Any) -> tuple[str, str]:
    args = getattr(request, "args", request)
    if not (isinstance(args, tuple | list) and len(args) == 2 and all(isinstance(a, str) for a in args)):
        raise TypeError(f"a request must be (context, continuation) strings or have .args = that, got {request!r}")
    return args[0], args[1]


class HarnessLM:
    """``loglikelihood`` / ``loglikelihood_rolling`` of lm-eval-harness' ``LM`` API over a torch causal LM.

    Args:
        model: called as ``model(input_ids)``; returns logits ``[B, T, V]``.
        tokenizer: ``encode(str) -> list[int]``.
        max_length: contexts are cut from the left so context + continuation fit.
        batch_size: sequences per forward (right-padded; the causal model never looks at the padding).
    """

    @validate(max_length=Int(low=2), batch_size=Int(low=2))
    def __init__(self, model: nn.Module, tokenizer: Any, *, max_length: int = 512, batch_size: int = 16) -> None:
        check_tokenizer("HarnessLM", tokenizer)
        self.model, self.tokenizer, self.max_length, self.batch_size = model, tokenizer, max_length, batch_size

    def _score(self, pairs: list[tuple[list[int], list[int]]]) -> list[tuple[float, bool]]:
        out: list[tuple[float, bool]] = []
        device = next(self.model.parameters()).device
        for b in range(0, len(pairs), self.batch_size):
            chunk = pairs[b:b + self.batch_size]
            seqs = [(ctx + cont)[-self.max_length:] for ctx, cont in chunk]
            ids = torch.zeros(len(seqs), max(len(s) for s in seqs), dtype=torch.long)
            for i, s in enumerate(seqs):
                ids[i, :len(s)] = torch.tensor(s)
            with torch.no_grad():
                logp = F.log_softmax(self.model(ids.to(device)).double(), dim=-1).cpu()  # [B, T, V]
            for i, ((_, cont), s) in enumerate(zip(chunk, seqs)):
                n = len(cont)
                pos = torch.arange(len(s) - n - 1, len(s) - 1)     # outputs that predict the continuation
                target = torch.tensor(s[-n:])
                rows = logp[i, pos]
                out.append((float(rows.gather(1, target[:, None]).sum()), bool((rows.argmax(1) == target).all())))
        return out

    def loglikelihood(self, requests: Sequence[Any]) -> list[tuple[float, bool]]:
        """``[(log P(continuation | context), is_greedy)]`` per request, in order."""
        pairs = []
        for req in requests:
            ctx, cont = _pair(req)
            c = self.tokenizer.encode(cont)
            if not c:
                raise ValueError(f"continuation {cont!r} encodes to no token")
            pairs.append((self.tokenizer.encode(ctx) or [0], c))
        return self._score(pairs)

    def loglikelihood_rolling(self, requests: Sequence[Any]) -> list[float]:
        """Log-probability of each whole string (``.args = (text,)`` or a plain string), its first token given."""
        texts = [getattr(r, "args", (r,))[0] if not isinstance(r, str) else r for r in requests]
        pairs = []
        for t in texts:
            ids = self.tokenizer.encode(t)
            if len(ids) < 2:
                raise ValueError(f"text {t!r} needs at least 2 tokens")
            pairs.append((ids[:1], ids[1:]))
        return [s for s, _ in self._score(pairs)]


def multiple_choice_eval_fn(docs: Sequence[Any], tokenizer: Any, *, doc_to_text: Callable[[Any], str],
                            doc_to_choice: Callable[[Any], Sequence[str]], doc_to_target: Callable[[Any], int],
                            target_delimiter: str = " ", length_normalized: bool = False,
                            **lm_kwargs: Any) -> Callable[[nn.Module], float]:
    """``eval_fn(model) -> accuracy`` of a harness-style multiple-choice task: per doc, the choice with the
    highest log-likelihood (``acc``; ``length_normalized=True`` divides by the choice's characters, ``acc_norm``)
    must be ``doc_to_target(doc)``."""
    if not docs:
        raise ValueError("docs is empty")
    requests, spans, targets, lengths = [], [], [], []
    for doc in docs:
        ctx, choices = doc_to_text(doc), list(doc_to_choice(doc))
        spans.append((len(requests), len(requests) + len(choices)))
        requests.extend((ctx, target_delimiter + c) for c in choices)
        lengths.extend(len(target_delimiter + c) for c in choices)
        targets.append(int(doc_to_target(doc)))

    def eval_fn(model: nn.Module) -> float:
        scores = [s for s, _ in HarnessLM(model, tokenizer, **lm_kwargs).loglikelihood(requests)]
        if length_normalized:
            scores = [s / n for s, n in zip(scores, lengths)]
        right = 0
        for (a, b), target in zip(spans, targets):
            best = max(range(a, b), key=lambda i: scores[i]) - a
            right += int(best == target)
        return right / len(targets)

    return eval_fn
