"""Thin subclasses of TRL trainers (config + trainer pairs). Imported lazily: TRL is heavy."""

import importlib

_EXPORTS = {
    "R1GRPOConfig": "grpo_config",
    "R1GRPOTrainer": "grpo_trainer",
    "R1PPOConfig": "ppo_config",
    "R1PPOTrainer": "ppo_trainer",
}


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_EXPORTS)
