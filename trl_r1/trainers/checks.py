"""Checks both trainers run on what a user hands them (the dataset at construction, each reward function's output
at every step), so a misuse fails naming the column, the reward or the batch instead of deep inside TRL or torch.

>>> from datasets import Dataset
>>> check_train_dataset(Dataset.from_list([{"question": "1 + 1?"}]))
Traceback (most recent call last):
...
ValueError: train_dataset has no 'prompt' column (columns: ['question']); ...
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from numbers import Real
from typing import Any

import torch
from torch import Tensor

logger = logging.getLogger("trl_r1.trainers")


def check_train_dataset(dataset: Any) -> None:
    """Refuse, when the trainer is built, a ``train_dataset`` without a ``prompt`` column or without rows (an
    iterable dataset's length is unknown: only its columns are checked)."""
    columns = getattr(dataset, "column_names", None)
    if columns is not None and "prompt" not in columns:
        raise ValueError(
            f"train_dataset has no 'prompt' column (columns: {sorted(columns)}); TRL's GRPO trainers read the prompt "
            "from it: rename or map the question (or the user turn of 'messages') to 'prompt'."
        )
    if hasattr(dataset, "__len__") and len(dataset) == 0:
        raise ValueError("train_dataset is empty: nothing to generate from.")


def without_long_prompts(trainer: str, dataset: Any, lengths: list[int | None] | None, args: Any,
                         context: int | None) -> tuple[Any, list[int | None] | None]:
    """(the dataset, its rows' prompt `lengths`) without the prompts longer than the generation budget (the model
    context, or `vllm_max_model_length` with vLLM, less `max_completion_length`), with one WARNING line: their
    count, the first, and the rule. TRL never cuts a prompt, so one such row crashes vLLM or fills the memory in
    `generate`; it is skipped, not cut from the left (a cut math problem loses its question and would train on a
    wrong one), as rejection sampling's `max_prompt_tokens` does. `lengths`: each row's prompt length in tokens
    (`data.scan.dataset_prompt_lengths`, the trainer's one pass); None (an iterable dataset) passes unchecked."""
    from ..data.scan import prompt_budget

    budget = prompt_budget(args, (context, "max_position_embeddings") if context else None)
    if budget is None or lengths is None:
        return dataset, lengths
    over = [(row, n) for row, n in enumerate(lengths) if n is not None and n > budget[0]]
    if not over:
        return dataset, lengths
    logger.warning("%s: %d of %d prompts are longer than the %d tokens a prompt may take (%s; first: row %d, %d "
                   "tokens): skipped, not cut (TRL does not cut prompts); shorten them or raise the limit to keep "
                   "them", trainer, len(over), len(dataset), budget[0], budget[1], over[0][0], over[0][1])
    long_rows = {row for row, _ in over}
    kept = [i for i in range(len(dataset)) if i not in long_rows]
    return dataset.select(kept), [lengths[i] for i in kept]


def check_enough_prompts(dataset: Any, prompts_per_generation: int) -> None:
    """Refuse to train on fewer prompts than one generation batch: TRL's sampler drops an incomplete batch, so
    training would end after 0 steps. Checked when training starts, so a trainer built only to evaluate is not
    refused."""
    if hasattr(dataset, "__len__") and len(dataset) < prompts_per_generation:
        raise ValueError(
            f"train_dataset has {len(dataset)} prompts, fewer than one generation batch of {prompts_per_generation} "
            "(generation_batch_size / num_generations), so not one step would run: add prompts or lower "
            "per_device_train_batch_size / steps_per_generation."
        )


def _is_score(value: object) -> bool:
    return value is None or isinstance(value, Real) or (isinstance(value, Tensor) and value.numel() == 1)


class CheckedReward:
    """A synchronous reward function whose output must be one number (or None) per completion; anything else (a
    bare float, strings) raises TypeError naming the reward. Attributes are the wrapped function's; picklable."""

    def __init__(self, reward_func: Callable[..., Sequence[float | None]], name: str):
        self.__wrapped__ = reward_func
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Sequence[float | None] | Tensor:
        scores = self.__wrapped__(*args, **kwargs)
        if isinstance(scores, (str, bytes)) or not isinstance(scores, (Sequence, Tensor)):
            raise TypeError(f"The reward function {self.name!r} returned a {type(scores).__name__}; it must return a "
                            "list with one float (or None) per completion.")
        wrong = next((s for s in scores if not _is_score(s)), None)
        if wrong is not None:
            raise TypeError(f"The reward function {self.name!r} returned a {type(wrong).__name__} ({wrong!r}) for a "
                            "completion; each score must be a float (or None where the reward does not apply).")
        return scores

    def __getattr__(self, attribute: str) -> Any:
        if attribute == "__wrapped__":  # not yet set (unpickling)
            raise AttributeError(attribute)
        return getattr(self.__wrapped__, attribute)


def check_reward_values(rewards_per_func: Tensor, names: Sequence[str], refuse_infinite: bool) -> None:
    """Warn, naming it, about a reward function that scored no completion of the batch (None or NaN for each), and
    raise naming it on an infinite score where ``refuse_infinite`` (advantages that an infinite score turns NaN,
    and every weight with them)."""
    for column, name in zip(rewards_per_func.unbind(dim=1), names, strict=True):
        if torch.isnan(column).all():
            logger.warning("The reward function %r returned None or NaN for all %d completions of this batch: it "
                           "scored nothing.", name, column.numel())
        if refuse_infinite and torch.isinf(column).any():
            value = column[torch.isinf(column)][0].item()
            raise ValueError(f"The reward function {name!r} returned {value} for a completion: with this advantage "
                             "estimator an infinite reward makes every weight NaN; return a finite score or None.")
