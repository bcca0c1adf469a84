"""Held-out evaluation between stages: sample answers to unseen prompts and score them with trl-r1's rewards.

R1 reports pass@1 estimated from k samples at temperature 0.6 (§3.1); the defaults follow it. Each reward's
mean is reported under its name (so `math_accuracy_reward` is the held-out accuracy), next to the mean
completion length and the share of truncated completions.
"""

from __future__ import annotations

import logging
from typing import Any

from ..verifiers.format import with_think_prefix
from .recipe import EvaluationConfig

logger = logging.getLogger("trl_r1.pipeline")


def evaluate_model(model_path: str, prompts: Any, config: EvaluationConfig, rewards: list[Any], *,
                   adapter_path: str | None = None, load_in_4bit: bool = False, seed: int = 0) -> dict[str, float]:
    """Mean reward per reward function (and length statistics) of `model_path` on `prompts` (a `prompt` column)."""
    from ..data.generation import SamplingParams, load_generator
    from ..rewards import get_reward_funcs

    funcs = get_reward_funcs(rewards)
    generator = load_generator(config.backend, model_path, adapter_path=adapter_path, load_in_4bit=load_in_4bit,
                               seed=seed)
    params = SamplingParams(config.num_samples, config.max_new_tokens, config.temperature, config.top_p)
    rows = [prompts[i] for i in range(min(len(prompts), config.num_prompts or len(prompts)))]
    scores: dict[str, list[float]] = {f.__name__: [] for f in funcs}
    lengths: list[int] = []
    truncated = 0
    for start in range(0, len(rows), config.batch_size):
        batch = rows[start:start + config.batch_size]
        groups = generator.generate([r["prompt"] for r in batch], params, seed=seed + start)
        completions, columns = [], {}
        for row, group in zip(batch, groups):
            for completion in group:
                completions.append(with_think_prefix(completion.content, bool(completion.think_prefilled)))
                lengths.append(completion.num_tokens or 0)
                truncated += completion.finish_reason == "length"
                for key, value in row.items():
                    if key != "prompt":
                        columns.setdefault(key, []).append(value)
        for func in funcs:
            values = func(completions=completions, **columns)
            scores[func.__name__].extend(0.0 if v is None else float(v) for v in values)
    results = {name: sum(v) / len(v) for name, v in scores.items() if v}
    results["mean_length"] = sum(lengths) / max(len(lengths), 1)
    results["truncated_ratio"] = truncated / max(len(lengths), 1)
    results["num_completions"] = len(lengths)
    return results
