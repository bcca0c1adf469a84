"""The reward names a TRL or open-r1 user types (TRL's `trl.rewards`, open-r1's registry, this package's own
function names), each with its entry here and the sentence that says so: one table that `trl-r1 evaluate
--rewards` reads names through and that a recipe's `rewards:` check quotes.

>>> REWARD_ALIASES["think_format_reward"].entry
{'name': 'format', 'require_answer': False}
>>> REWARD_ALIASES["cosine"].entry is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RewardAlias:
    """What a foreign reward name is here: the `entry` to use (None: no counterpart) and why, in words."""

    entry: str | dict[str, Any] | None
    why: str


_NO_COUNTERPART = "which trl-r1 does not provide; write it as a reward (docs/howto_reward.md) and name its import path"
_MATH = "open-r1's and TRL's name for the math answer check: here 'math' (the gold answer from the 'solution' column)"
_BINARY_CODE = "open-r1's all-tests-pass code reward: here {name: code, binary: true}"

REWARD_ALIASES: dict[str, RewardAlias] = {
    "accuracy": RewardAlias("math", _MATH),
    "accuracy_reward": RewardAlias("math", _MATH),
    "reasoning_accuracy_reward": RewardAlias("math", "TRL's answer check after the reasoning: here 'math' (it reads "
                                                     "the answer, not the reasoning)"),
    "math_accuracy_reward": RewardAlias("math", "the function's name: here 'math'"),
    "format_reward": RewardAlias("format", "open-r1's and TRL's name: here 'format'"),
    "soft_format_reward": RewardAlias("soft_format", "the function's name: here 'soft_format'"),
    "think_format_reward": RewardAlias({"name": "format", "require_answer": False},
                                       "TRL's <think> format check: here {name: format, require_answer: false}"),
    "tag_count": RewardAlias("soft_format", "open-r1's partial credit per tag: here 'soft_format'"),
    "tag_count_reward": RewardAlias("soft_format", "open-r1's partial credit per tag: here 'soft_format'"),
    "code_reward": RewardAlias("code", "open-r1's name: here 'code' (the share of tests passed)"),
    "binary_code": RewardAlias({"name": "code", "binary": True}, _BINARY_CODE),
    "binary_code_reward": RewardAlias({"name": "code", "binary": True}, _BINARY_CODE),
    "language_consistency_reward": RewardAlias("language", "here 'language'"),
    **{name: RewardAlias(None, f"open-r1's or TRL's {name!r} reward, {_NO_COUNTERPART}") for name in (
        "cosine", "get_cosine_scaled_reward", "length", "len_reward", "repetition_penalty",
        "get_repetition_penalty_reward", "reasoning_steps", "reasoning_steps_reward", "soft_overlong_punishment",
        "get_soft_overlong_punishment", "ioi_code", "cf_code", "code_format")},
}

def reward_entries(values: list[Any]) -> list[Any]:
    """`--rewards` as reward entries: comma-separated names split (`--rewards format,math`), and the names a TRL
    user types (their function names, TRL's `think_format_reward`) read as this registry's entries.

    >>> reward_entries(["think_format_reward,math", {"name": "code"}])
    [{'name': 'format', 'require_answer': False}, 'math', {'name': 'code'}]
    """
    entries: list[Any] = []
    for value in values:
        names = [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else [value]
        entries += [alias.entry if isinstance(name, str) and (alias := REWARD_ALIASES.get(name)) and alias.entry
                    else name for name in names]
    return entries


__all__ = ["REWARD_ALIASES", "RewardAlias", "reward_entries"]
