"""Configuration of `R1PPOTrainer`: TRL's `GRPOConfig` plus the critic, GAE and KL-in-reward knobs of PPO."""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

from .base_config import (
    FastGenerationMixin,
    KLConfigMixin,
    VLLMLoRASyncMixin,
    check_trainable,
    forget_derived_generation_batch,
    kl_estimator_field,
)

CRITIC_MODES = ("shared_trunk", "lora")


@dataclass
class R1PPOConfig(FastGenerationMixin, VLLMLoRASyncMixin, KLConfigMixin, GRPOConfig):
    r"""
    Configuration class for [`R1PPOTrainer`]: actor-critic PPO (Schulman et al. 2017) with a value head and GAE.

    It subclasses TRL's `GRPOConfig`, so generation (including vLLM), reward functions, logging, PEFT/QLoRA and
    every other GRPO option work unchanged. `epsilon`/`epsilon_high` clip the policy ratio, `num_iterations` is the
    number of PPO epochs per generated batch and `steps_per_generation` the number of minibatches. GRPO's group
    advantages are replaced by token-level GAE advantages on the weighted sum of the rewards, so the group
    normalisation options (`scale_rewards`, `multi_objective_aggregation`) must keep their defaults. The KL penalty
    goes into the per-token reward (`kl_coef`), not the loss: leave `beta` at 0 (the trainer has TRL build the
    reference model for a non-zero `kl_coef`).

    Example:
        >>> cfg = R1PPOConfig(output_dir="out", use_cpu=True, report_to="none", critic="lora", lam_critic=1.0)
        >>> cfg.num_generations, cfg.lam, cfg.lam_critic, cfg.kl_estimator
        (2, 0.95, 1.0, 'k1')
        >>> R1PPOConfig(output_dir="out", use_cpu=True, report_to="none", beta=0.04)
        Traceback (most recent call last):
        ...
        ValueError: R1PPOConfig puts the KL penalty in the reward: set `kl_coef` ... not `beta` (got beta=0.04).
    """

    num_generations: int | None = field(
        default=2,
        metadata={
            "help": "Completions sampled per prompt. PPO's critic baseline needs no groups; TRL requires at least 2, "
            "which is the R1PPOConfig default (GRPO's default is 8)."
        },
    )
    num_iterations: int = field(
        default=2,
        metadata={
            "help": "PPO epochs: optimisation passes over each generated batch (GRPO's μ). Several passes are what "
            "makes the ratio and value clipping matter (Schulman et al. 2017; old TRL PPO used 4). Default 2."
        },
    )
    gamma: float = field(
        default=1.0,
        metadata={
            "help": "Discount factor of GAE (Schulman et al. 2016). 1.0 (default, as in TRL's former PPOTrainer and "
            "verl): completions are short episodes with a terminal reward."
        },
    )
    lam: float = field(
        default=0.95,
        metadata={"help": "GAE lambda (Schulman et al. 2016) of the policy's advantages. Default 0.95 (old TRL PPO)."},
    )
    lam_critic: float | None = field(
        default=None,
        metadata={
            "help": "Separate GAE lambda for the critic's return targets (decoupled GAE, VC-PPO, Yuan et al. 2025, "
            "which uses 1.0 for unbiased Monte-Carlo value targets). None (default): the same as `lam`."
        },
    )
    length_adaptive_alpha: float | None = field(
        default=None,
        metadata={
            "help": "VAPO's length-adaptive policy lambda (Yue et al. 2025): lam = 1 - 1/(alpha * completion length) "
            "per sequence, replacing `lam` for the advantages. The paper uses 0.05. None (default): off."
        },
    )
    vf_coef: float = field(
        default=0.1,
        metadata={"help": "Weight of the value loss in the total loss. Default 0.1 (old TRL PPO)."},
    )
    cliprange_value: float = field(
        default=0.2,
        metadata={
            "help": "Value clipping: new values may move at most this far from the rollout's values before the "
            "squared error stops improving (PPO2, Dhariwal et al. 2017). Default 0.2 (old TRL PPO)."
        },
    )
    value_lr: float | None = field(
        default=None,
        metadata={
            "help": "Learning rate of the value head (and of the critic adapter with `critic='lora'`); follows the "
            "same schedule. None (default): `learning_rate`."
        },
    )
    critic_warmup_steps: int = field(
        default=0,
        metadata={
            "help": "Optimizer steps at the start during which only the critic trains and the policy stays frozen "
            "(value pretraining, VAPO; OpenRLHF `critic.freezing_steps`). Default 0."
        },
    )
    critic: str = field(
        default="shared_trunk",
        metadata={
            "help": "Where the critic lives. 'shared_trunk' (default): a scalar head on the policy's last hidden "
            "state, so the value loss also trains the policy trunk. 'lora': a second LoRA adapter ('critic') on the "
            "same (4-bit) base plus a scalar head; needs `peft_config`. Either way no extra model copy is loaded.",
            "choices": list(CRITIC_MODES),
        },
    )
    kl_coef: float = field(
        default=0.05,
        metadata={
            "help": "Coefficient of the per-token KL penalty subtracted from the reward, KL(policy || reference) "
            "(Ziegler et al. 2019). Default 0.05 (old TRL PPO). 0 disables it and skips the reference forward. "
            "With PEFT the reference is the base with adapters disabled, so no copy is loaded."
        },
    )
    kl_estimator: str = kl_estimator_field("k1", "in the reward ('k1', the log-ratio, as in classic PPO-RLHF)")
    whiten_advantages: bool = field(
        default=True,
        metadata={"help": "Whiten the GAE advantages over the valid tokens of the batch. Default True (old TRL PPO)."},
    )

    def __post_init__(self):
        self.check_vllm_lora_sync()
        self.check_fast_generation()
        forget_derived_generation_batch(self)
        check_trainable(self, positive=("temperature", "max_completion_length", "num_iterations"),
                        non_negative=("kl_coef", "vf_coef", "critic_warmup_steps", "epsilon"))
        if self.beta != 0.0:
            raise ValueError(
                "R1PPOConfig puts the KL penalty in the reward: set `kl_coef` (and optionally `kl_target`), not `beta` "
                f"(got beta={self.beta})."
            )
        if self.scale_rewards not in ("group", True) or self.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError(
                "R1PPOConfig computes GAE advantages from the weighted sum of the rewards; GRPO's group normalisation "
                "options `scale_rewards` and `multi_objective_aggregation` would be ignored, so keep their defaults."
            )
        if self.critic not in CRITIC_MODES:
            raise ValueError(f"critic must be one of {list(CRITIC_MODES)}, got {self.critic!r}.")
        self.check_kl("kl_coef", self.kl_coef, "k1")
        for name in ("lam", "lam_critic"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}.")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}.")
        for name in ("cliprange_value", "length_adaptive_alpha", "value_lr"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0, got {value}.")
        if 0 < self.max_steps <= self.critic_warmup_steps:
            raise ValueError(
                f"critic_warmup_steps={self.critic_warmup_steps} >= max_steps={self.max_steps}: the policy would never "
                "train (only the critic warms up)."
            )
        super().__post_init__()

    @property
    def computes_own_advantages(self) -> bool:
        """Always: GAE advantages from `trl_r1.algorithms`, never TRL's GRPO code (as `R1GRPOConfig`'s)."""
        return True
