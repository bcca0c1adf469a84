"""Held-out statistics with no model in sight: pass@k, and percentile bootstrap intervals over prompts (a prompt's
k samples are correlated, so prompts, not samples, are resampled). Seeded, so the same scores always give the
same interval."""

from __future__ import annotations

import random


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


def paired_gain_interval(before: list[float | None], after: list[float | None], *, level: float = 0.95,
                         resamples: int = 1000, seed: int = 0) -> list[float] | None:
    """Percentile bootstrap interval of the mean per-prompt gain `after - before`, two evaluations of the same
    prompts in the same order (`<name>/per_prompt`); prompts either did not score are left out. None when they
    are not the same prompts (different lengths) or none is shared.

    Pairing removes the prompts' own difficulty from the noise: a gain the two stages' separate intervals leave in
    doubt can be clearly beyond it.

    >>> paired_gain_interval([0.0] * 60 + [1.0] * 40, [1.0] * 10 + [0.0] * 50 + [1.0] * 40)
    [0.05, 0.16]
    >>> paired_gain_interval([1.0, 0.0], [1.0]) is None
    True
    """
    if len(before) != len(after):
        return None
    diffs = [b - a for a, b in zip(before, after) if a is not None and b is not None]
    if not diffs:
        return None
    return bootstrap_interval([[d] for d in diffs], level=level, resamples=resamples, seed=seed)
