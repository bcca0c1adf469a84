"""Held-out evaluation between stages: sample answers to unseen prompts and score them with trl-r1's rewards.

R1 reports pass@1 estimated from k samples at temperature 0.6 (§3.1); the defaults follow it. Each reward's
mean is reported under its name (so `math_accuracy_reward` is the held-out accuracy), with a 95% interval
(`<name>/ci95`: a bootstrap over prompts, since the k samples of one prompt are not independent) and
pass@k (`<name>/pass@k`: the share of prompts with at least one of their k samples scoring 1), next to the mean
completion length and the share of truncated completions. Samples a reward does not apply to (None: no gold
answer, no tests, no sandbox) are left out of its metrics and counted in `<name>/skipped`, as TRL leaves them out
of its reward means; counting them as 0 would report them as wrong answers.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from ..verifiers.format import with_think_prefix
from .recipe import EvaluationConfig

logger = logging.getLogger("trl_r1.pipeline")


def evaluate_model(model_path: str, prompts: Any, config: EvaluationConfig, rewards: list[Any], *,
                   adapter_path: str | None = None, load_in_4bit: bool = False, seed: int = 0) -> dict[str, float]:
    """Mean reward per reward function (and length statistics) of `model_path` on `prompts` (a `prompt` column)."""
    from ..data.generation import SamplingParams, load_generator, vllm_engine_kwargs
    from ..rewards import get_reward_funcs

    funcs = get_reward_funcs(rewards)
    generator = load_generator(config.backend, model_path, adapter_path=adapter_path, load_in_4bit=load_in_4bit,
                               seed=seed, vllm_kwargs=vllm_engine_kwargs(config.vllm_gpu_memory_utilization,
                                                                         config.vllm_max_model_length))
    params = SamplingParams(config.num_samples, config.max_new_tokens, config.temperature, config.top_p)
    rows = [prompts[i] for i in range(min(len(prompts), config.num_prompts or len(prompts)))]
    scores: dict[str, list[float | None]] = {f.__name__: [] for f in funcs}  # prompt-major: k samples per prompt
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
            scores[func.__name__].extend(None if v is None else float(v) for v in values)
    results: dict[str, Any] = {}
    for name, values in scores.items():
        results.update(summarize_scores(name, values, config.num_samples, seed=seed))
    results["mean_length"] = sum(lengths) / max(len(lengths), 1)
    results["truncated_ratio"] = truncated / max(len(lengths), 1)
    results["num_completions"] = len(lengths)
    return results


def summarize_scores(name: str, values: list[float | None], k: int, *, seed: int = 0) -> dict[str, Any]:
    """A reward's held-out metrics from its prompt-major scores (k per prompt): mean, 95% interval and pass@k
    over the samples it scored, and the share it skipped (None: it did not apply, e.g. no gold answer or no
    sandbox), which would otherwise pass for wrong answers.

    >>> summarize_scores("acc", [1.0, None, 0.0, 0.0], k=2)
    {'acc/skipped': 0.25, 'acc': 0.3333333333333333, 'acc/ci95': [0.0, 1.0], 'acc/pass@2': 0.5}
    """
    if not values:
        return {}
    results: dict[str, Any] = {f"{name}/skipped": sum(v is None for v in values) / len(values)}
    per_prompt = [[v for v in values[i:i + k] if v is not None] for i in range(0, len(values), k)]
    per_prompt = [group for group in per_prompt if group]
    if results[f"{name}/skipped"]:
        logger.warning("held-out %s: %.0f%% of the samples were not scored (the reward did not apply; see its "
                       "log lines); its metrics cover the rest", name, 100 * results[f"{name}/skipped"])
    if per_prompt:
        scored = [v for group in per_prompt for v in group]
        results[name] = sum(scored) / len(scored)
        results[f"{name}/ci95"] = bootstrap_interval(per_prompt, seed=seed)
        results[f"{name}/pass@{k}"] = pass_at_k(per_prompt)
    return results


def pass_at_k(per_prompt: list[list[float]]) -> float:
    """Share of prompts where at least one sample scored 1 (pass@k with k = samples per prompt).

    >>> pass_at_k([[0.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
    0.6666666666666666
    """
    return sum(any(v >= 1.0 for v in group) for group in per_prompt) / max(len(per_prompt), 1)


def bootstrap_interval(per_prompt: list[list[float]], *, level: float = 0.95, resamples: int = 1000,
                       seed: int = 0) -> list[float]:
    """Percentile bootstrap interval of the mean score, resampling whole prompts (their samples are correlated).

    Seeded, so the same scores always give the same interval.

    >>> bootstrap_interval([[1.0, 1.0]] * 50 + [[0.0, 0.0]] * 50)
    [0.4, 0.6]
    """
    means = [sum(g) / len(g) for g in per_prompt if g]
    if not means:
        return [0.0, 0.0]
    rng, n = random.Random(seed), len(means)
    stats = sorted(sum(rng.choices(means, k=n)) / n for _ in range(resamples))
    tail = (1.0 - level) / 2
    return [round(stats[int(tail * resamples)], 4), round(stats[min(int((1 - tail) * resamples), resamples - 1)], 4)]
