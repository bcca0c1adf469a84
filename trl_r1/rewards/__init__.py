"""TRL reward functions for R1-style training, and a name registry for recipes.

Every reward follows TRL's protocol (keyword call, `list[float | None]` out) and can be passed directly to
`GRPOTrainer(reward_funcs=[...])` or `RLOOTrainer`. Recipes list them by name with `get_reward_funcs`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from .base import RewardFunction, Sample, Score
from .format import FormatReward, format_reward, soft_format_reward

# name -> "module:attribute" (imported on first use, so heavy verifiers load only when asked for)
REWARD_REGISTRY: dict[str, str] = {
    "format": "trl_r1.rewards.format:format_reward",
    "soft_format": "trl_r1.rewards.format:soft_format_reward",
    "math": "trl_r1.rewards.math:math_accuracy_reward",
    "math_accuracy": "trl_r1.rewards.math:math_accuracy_reward",
    "code": "trl_r1.rewards.code:code_reward",
    "language": "trl_r1.rewards.language:language_consistency_reward",
    "language_consistency": "trl_r1.rewards.language:language_consistency_reward",
}
# classes whose options a recipe may set: name -> "module:Class"
REWARD_CLASSES: dict[str, str] = {
    "format": "trl_r1.rewards.format:FormatReward",
    "soft_format": "trl_r1.rewards.format:FormatReward",
    "math": "trl_r1.rewards.math:MathAccuracyReward",
    "math_accuracy": "trl_r1.rewards.math:MathAccuracyReward",
    "code": "trl_r1.rewards.code:CodeReward",
    "language": "trl_r1.rewards.language:LanguageConsistencyReward",
    "language_consistency": "trl_r1.rewards.language:LanguageConsistencyReward",
}


def _load(target: str) -> Any:
    module, _, attr = target.partition(":") if ":" in target else target.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import reward {target!r}: {exc}") from exc


def get_reward_func(name: str, **options: Any) -> Callable[..., list[float | None]]:
    """Resolve one reward by registry name or dotted import path; options build a configured instance.

    >>> get_reward_func("format").__name__
    'format_reward'
    >>> get_reward_func("format", require_answer=False).require_answer
    False
    >>> get_reward_func("trl_r1.rewards.format.soft_format_reward").__name__
    'soft_format_reward'
    """
    if name in REWARD_REGISTRY:
        if not options and name != "soft_format":
            return _load(REWARD_REGISTRY[name])
        if name == "soft_format":
            options = {"soft": True, **options}
        return _load(REWARD_CLASSES[name])(**options)
    if "." in name:
        target = _load(name)
        if options:
            if not isinstance(target, type):
                raise ValueError(f"reward {name!r} is not a class, so it takes no options (got {sorted(options)})")
            return target(**options)
        return target() if isinstance(target, type) else target
    raise ValueError(f"unknown reward {name!r}; known: {sorted(REWARD_REGISTRY)} or a dotted import path")


def get_reward_funcs(names: list[str | dict[str, Any]]) -> list[Callable[..., list[float | None]]]:
    """Resolve a recipe's reward list: names, dotted paths, or `{"name": ..., **options}` entries.

    >>> [f.__name__ for f in get_reward_funcs(["format", {"name": "soft_format"}])]
    ['format_reward', 'soft_format_reward']
    """
    funcs = []
    for entry in names:
        if isinstance(entry, str):
            funcs.append(get_reward_func(entry))
        elif isinstance(entry, dict) and "name" in entry:
            options = {k: v for k, v in entry.items() if k not in ("name", "weight")}
            funcs.append(get_reward_func(entry["name"], **options))
        else:
            raise ValueError(f"a reward entry must be a name or a mapping with 'name', got {entry!r}")
    return funcs


# rewards whose verifiers are heavy (sympy, sandboxes) are exported lazily: imported on first attribute access
_LAZY_EXPORTS = {
    "MathAccuracyReward": "trl_r1.rewards.math", "math_accuracy_reward": "trl_r1.rewards.math",
    "CodeReward": "trl_r1.rewards.code", "code_reward": "trl_r1.rewards.code",
    "LanguageConsistencyReward": "trl_r1.rewards.language",
    "language_consistency_reward": "trl_r1.rewards.language",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY_EXPORTS:
        return getattr(importlib.import_module(_LAZY_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "RewardFunction", "Sample", "Score", "FormatReward", "format_reward", "soft_format_reward",
    "REWARD_REGISTRY", "get_reward_func", "get_reward_funcs", *_LAZY_EXPORTS,
]
