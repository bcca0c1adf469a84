"""trl-r1: DeepSeek-R1-style post-training for Hugging Face TRL.

- `trl_r1.rewards`: reward functions for `GRPOTrainer` / `RLOOTrainer` (format, math, code, language).
- `trl_r1.verifiers`: the pure checks behind them.
- `trl_r1.algorithms`: advantage estimators and KL variants (pure torch).
- `trl_r1.trainers`: `R1GRPOTrainer` and an actor-critic `PPOTrainer` on TRL's plumbing.
- `trl_r1.data`: rejection sampling, distillation, Hub publishing.
- `trl_r1.pipeline`: recipe YAMLs for the R1 pipeline (`trl-r1 run`).
"""

__version__ = "0.1.0"
