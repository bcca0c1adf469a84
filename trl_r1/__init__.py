"""trl-r1: DeepSeek-R1-style post-training for Hugging Face TRL.

- `trl_r1.rewards`: reward functions for `GRPOTrainer` / `RLOOTrainer` (format, math, code, language).
- `trl_r1.verifiers`: the pure checks behind them.
- `trl_r1.algorithms`: advantage estimators and KL variants (pure torch).
- `trl_r1.trainers`: `R1GRPOTrainer` and an actor-critic `R1PPOTrainer` on TRL's plumbing.
- `trl_r1.data`: rejection sampling, distillation, Hub publishing.
- `trl_r1.pipeline`: recipe YAMLs for the R1 pipeline (`trl-r1 run`).

The most used names are importable from here; they load on first use, so `import trl_r1` stays light.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "format_reward": "trl_r1.rewards",
    "soft_format_reward": "trl_r1.rewards",
    "get_reward_funcs": "trl_r1.rewards",
    "math_accuracy_reward": "trl_r1.rewards.math",
    "code_reward": "trl_r1.rewards.code",
    "language_consistency_reward": "trl_r1.rewards.language",
    "R1GRPOConfig": "trl_r1.trainers",
    "R1GRPOTrainer": "trl_r1.trainers",
    "R1PPOConfig": "trl_r1.trainers",
    "R1PPOTrainer": "trl_r1.trainers",
    "RejectionSamplingConfig": "trl_r1.data.rejection_sampling",
    "rejection_sample": "trl_r1.data.rejection_sampling",
    "DistillationConfig": "trl_r1.data.distillation",
    "distill": "trl_r1.data.distillation",
    "run_recipe": "trl_r1.pipeline",
    "build_tiny_model": "trl_r1.toy",
}


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'trl_r1' has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
