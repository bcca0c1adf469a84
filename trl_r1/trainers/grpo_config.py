"""`R1GRPOConfig`: TRL's `GRPOConfig` plus a selectable advantage estimator and KL variant."""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

from ..algorithms import KL_ESTIMATORS

# Estimators that work on GRPO's sampling layout (groups of `num_generations` completions per prompt, no critic).
GRPO_ADVANTAGE_ESTIMATORS = ("grpo", "dr_grpo", "rloo", "reinforce_pp", "reinforce_pp_baseline")


@dataclass
class R1GRPOConfig(GRPOConfig):
    r"""
    Configuration for [`R1GRPOTrainer`]: every [`~trl.GRPOConfig`] option, plus:

    Parameters:
        advantage_estimator (`str`, *optional*, defaults to `"grpo"`):
            How sequence rewards become advantages: `"grpo"`, `"dr_grpo"`, `"rloo"`, `"reinforce_pp"`,
            `"reinforce_pp_baseline"` (see `docs/algorithms.md`).
        kl_estimator (`str`, *optional*, defaults to `"k3"`):
            Per-token KL estimator: `"k1"`, `"k2"`, `"k3"`, `"low_var_kl"`, `"abs"`, `"k1+"`, `"k3+"`,
            `"low_var_kl+"`.
        kl_in_reward (`bool`, *optional*, defaults to `False`):
            Subtract `beta * KL` from the reward instead of adding it to the loss.
        kl_target (`float` or `None`, *optional*, defaults to `None`):
            Target per-token KL of the adaptive coefficient controller; `None` keeps `beta` fixed.
        kl_horizon (`int`, *optional*, defaults to `10000`):
            Horizon, in samples, of the adaptive controller.
        gamma (`float`, *optional*, defaults to `1.0`):
            Discount of the REINFORCE++ token returns.

    With the defaults (and any `beta`), training is identical to `trl.GRPOTrainer`.
    """

    advantage_estimator: str = field(
        default="grpo",
        metadata={
            "help": "Advantage estimator. `grpo` (default, TRL's own computation, so `scale_rewards` applies): "
            "(r - group mean) / (group std + 1e-4), Shao et al. 2024 (DeepSeekMath). `dr_grpo`: r - group mean, "
            "no std division, Liu et al. 2025 (Understanding R1-Zero-Like Training). `rloo`: r - mean of the "
            "other completions of the prompt, Ahmadian et al. 2024 (Back to Basics). `reinforce_pp`: per-token "
            "returns whitened over the batch, no baseline, Hu 2025 (REINFORCE++). `reinforce_pp_baseline`: "
            "r - group mean on every token, whitened over the batch, Hu 2025.",
            "choices": list(GRPO_ADVANTAGE_ESTIMATORS),
        },
    )
    kl_estimator: str = field(
        default="k3",
        metadata={
            "help": "Per-token estimator of KL(policy || reference), used when `beta > 0`. With x = logp - "
            "ref_logp: `k1` = x, `k2` = x^2/2, `k3` = exp(-x) + x - 1 (default, TRL's), `low_var_kl` = k3 "
            "clamped to [-10, 10] (verl), `abs` = |x| (Schulman 2020, Approximating KL Divergence). `k1+`, "
            "`k3+`, `low_var_kl+`: straight-through, the value of the base estimator with the gradient of k2, "
            "which is the unbiased gradient of the KL as a loss term.",
            "choices": list(KL_ESTIMATORS),
        },
    )
    kl_in_reward: bool = field(
        default=False,
        metadata={
            "help": "If True, the KL penalty is subtracted from the reward before the advantage instead of "
            "being added to the loss, as in PPO for RLHF (Ouyang et al. 2022) and REINFORCE++: per token for "
            "`reinforce_pp`, summed over the completion for the sequence-level estimators. Requires `beta > 0`; "
            "`k1` is the usual estimator here. Default False (KL in the loss, as in DeepSeekMath's GRPO).",
        },
    )
    kl_target: float | None = field(
        default=None,
        metadata={
            "help": "Target mean per-token KL for the adaptive KL coefficient of Ziegler et al. 2019 "
            "(Fine-Tuning Language Models from Human Preferences): beta <- beta * (1 + clip(KL / target - 1, "
            "-0.2, 0.2) * n / horizon) after each optimizer step, n = completions in the step. `beta` is the "
            "initial value and must be > 0. Default None: beta stays fixed.",
        },
    )
    kl_horizon: int = field(
        default=10000,
        metadata={
            "help": "Horizon of the adaptive KL controller, in completions: beta can move by at most 20% per "
            "`kl_horizon` completions. Default 10000 (Ziegler et al. 2019). Used only with `kl_target`.",
        },
    )
    gamma: float = field(
        default=1.0,
        metadata={
            "help": "Discount factor of the per-token returns of `advantage_estimator='reinforce_pp'` "
            "(G_t = r_t + gamma * G_{t+1}). Default 1.0, as in REINFORCE++ (Hu 2025).",
        },
    )

    def __post_init__(self):
        super().__post_init__()
        if self.advantage_estimator not in GRPO_ADVANTAGE_ESTIMATORS:
            raise ValueError(
                f"advantage_estimator={self.advantage_estimator!r} is not one of {list(GRPO_ADVANTAGE_ESTIMATORS)} "
                "(GAE needs a critic: use trl_r1.trainers.PPOTrainer)."
            )
        if self.kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"kl_estimator={self.kl_estimator!r} is not one of {list(KL_ESTIMATORS)}.")
        if self.kl_in_reward and self.beta == 0.0:
            raise ValueError("kl_in_reward=True needs a KL coefficient: set beta > 0 (e.g. 0.001).")
        if self.kl_target is not None:
            if self.beta == 0.0:
                raise ValueError("kl_target (adaptive KL) needs beta > 0 as the initial KL coefficient.")
            if self.kl_target <= 0 or self.kl_horizon <= 0:
                raise ValueError(f"kl_target and kl_horizon must be > 0, got {self.kl_target}, {self.kl_horizon}.")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}.")
        if self.computes_own_advantages:
            if self.multi_objective_aggregation != "sum_then_normalize":
                raise ValueError(
                    f"multi_objective_aggregation={self.multi_objective_aggregation!r} is only supported with "
                    "advantage_estimator='grpo' and kl_in_reward=False."
                )
            if self.scale_rewards == "batch":
                raise ValueError(
                    "scale_rewards='batch' is TRL's GRPO scaling; it is only supported with "
                    "advantage_estimator='grpo' and kl_in_reward=False."
                )
            if self.advantage_estimator == "grpo" and self.scale_rewards == "none":
                raise ValueError("scale_rewards='none' with kl_in_reward is advantage_estimator='dr_grpo'; use that.")

    @property
    def computes_own_advantages(self) -> bool:
        """Whether advantages come from `trl_r1.algorithms` rather than TRL's GRPO code."""
        return self.advantage_estimator != "grpo" or self.kl_in_reward
