"""TRL reward functions for R1-style training, and the reward registry recipes name them from.

Every reward follows TRL's protocol (keyword call, `list[float | None]` out) and can be passed directly to
`GRPOTrainer(reward_funcs=[...])` or `RLOOTrainer`. Recipes list them by name with `get_reward_funcs`.

`REWARD_REGISTRY` (a `trl_r1.registry.Registry`) maps a name to the reward's class, imported on first use so
that heavy verifiers load only when asked for; the entry's `instance` is the ready-made default and `options`
the preset keyword arguments. What a reward *is* (correctness / format / style, the columns it reads, whether
code in its reasoning is fine) is declared on its class (`RewardFunction`), so callers ask it. Adding a reward
is its class plus one `REWARD_REGISTRY.add(...)` line here.
"""

from __future__ import annotations

from typing import Any, Callable

from ..registry import Registry, looks_like_import_path, resolve_import_path
from .base import RewardFunction, Score, declared

REWARD_REGISTRY: Registry[type] = Registry(
    "reward", signature="Reward(**options)(prompts, completions, completion_ids, **columns) -> list[float | None]")
REWARD_REGISTRY.add("format", "trl_r1.rewards.format:FormatReward", instance="trl_r1.rewards.format:format_reward")
REWARD_REGISTRY.add("soft_format", "trl_r1.rewards.format:FormatReward", options={"soft": True},
                    instance="trl_r1.rewards.format:soft_format_reward")
REWARD_REGISTRY.add("math", "trl_r1.rewards.math:MathAccuracyReward", aliases=("math_accuracy",),
                    instance="trl_r1.rewards.math:math_accuracy_reward")
REWARD_REGISTRY.add("code", "trl_r1.rewards.code:CodeReward", instance="trl_r1.rewards.code:code_reward")
REWARD_REGISTRY.add("language", "trl_r1.rewards.language:LanguageConsistencyReward", aliases=("language_consistency",),
                    instance="trl_r1.rewards.language:language_consistency_reward")


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
        meta = REWARD_REGISTRY.meta(name)
        if not options:
            return resolve_import_path(meta["instance"])
        return _built(name, REWARD_REGISTRY[name], {**meta.get("options", {}), **options})
    if looks_like_import_path(name):
        try:
            target = resolve_import_path(name)
        except ImportError as exc:
            raise ValueError(f"cannot import reward {name!r}: {exc}") from exc
        if options:
            if not isinstance(target, type):
                raise ValueError(f"reward {name!r} is not a class, so it takes no options (got {sorted(options)})")
            return _built(name, target, options)
        return target() if isinstance(target, type) else target
    try:
        REWARD_REGISTRY.canonical(name)
    except KeyError as exc:
        raise ValueError(f"{exc.args[0]} or a dotted import path") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _built(name: str, cls: type, options: dict[str, Any]) -> Callable[..., list[float | None]]:
    """`cls(**options)`; an option the class does not take is a ValueError naming it, with a close match and the
    options it takes (not Python's bare "__init__() got an unexpected keyword argument")."""
    import difflib
    import inspect

    accepted = [p.name for p in inspect.signature(cls).parameters.values()
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_kwargs = any(p.kind is p.VAR_KEYWORD for p in inspect.signature(cls).parameters.values())
    unknown = [] if has_kwargs else [key for key in options if key not in accepted]
    if unknown:
        close = difflib.get_close_matches(unknown[0], accepted, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"reward {name!r} has no option {unknown[0]!r}{hint} (its options: "
                         f"{', '.join(accepted) or 'none'}, and weight)")
    return cls(**options)


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


def reward_declares(entry: str | dict[str, Any], attribute: str) -> Any:
    """What the reward a recipe entry names declares on its class (`role`, `code_in_reasoning_ok`,
    `think_prefill_option`), without building it.

    >>> reward_declares("soft_format", "role"), reward_declares({"name": "math"}, "think_prefill_option")
    ('format', False)
    """
    name = entry if isinstance(entry, str) else entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, str):
        return declared(None, attribute)
    target = REWARD_REGISTRY[name] if name in REWARD_REGISTRY else resolve_import_path(name)
    return declared(target, attribute)


def _exports() -> dict[str, str]:
    """Attribute name -> import path of each registered reward's class and default instance (the registry's own
    paths): this package's lazy exports."""
    paths = [path for name in REWARD_REGISTRY
             for path in (REWARD_REGISTRY.import_path(name), REWARD_REGISTRY.meta(name)["instance"])]
    return {path.rpartition(":")[2]: path for path in paths if path and path.startswith(f"{__name__}.")}


_EXPORTS = _exports()


def __getattr__(attr: str) -> Any:
    """The registered rewards' classes and default instances as attributes, imported on first use (sympy, the
    sandbox and language ID load only when asked for)."""
    if attr in _EXPORTS:
        return resolve_import_path(_EXPORTS[attr])
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


__all__ = ["RewardFunction", "Score", "REWARD_REGISTRY", "get_reward_func", "get_reward_funcs", "reward_declares",
           *_EXPORTS]
