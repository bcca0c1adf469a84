"""`R1GRPOConfig`: TRL's `GRPOConfig` plus a selectable advantage estimator and KL variant."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from trl import GRPOConfig

from ..algorithms import ADVANTAGE_ESTIMATORS, estimator_reads, same_loss_gradient
from .base_config import (
    FastGenerationMixin,
    KLConfigMixin,
    VLLMLoRASyncMixin,
    check_trainable,
    forget_derived_generation_batch,
    kl_estimator_field,
)


def grpo_advantage_estimators() -> tuple[str, ...]:
    """Estimators that work on GRPO's sampling layout (groups of `num_generations` completions per prompt, no
    critic); read when a config is checked, so an estimator registered after this import counts."""
    return tuple(n for n in ADVANTAGE_ESTIMATORS if not ADVANTAGE_ESTIMATORS.meta(n).get("critic"))


@dataclass
class R1GRPOConfig(FastGenerationMixin, VLLMLoRASyncMixin, KLConfigMixin, GRPOConfig):
    r"""
    Configuration for [`R1GRPOTrainer`]: every [`~trl.GRPOConfig`] option, plus:

    Parameters:
        advantage_estimator (`str`, *optional*, defaults to `"grpo"`):
            How sequence rewards become advantages: any estimator of `trl_r1.algorithms.ADVANTAGE_ESTIMATORS`
            without a critic (`"grpo"`, `"dr_grpo"`, `"rloo"`, `"reinforce_pp"`, `"reinforce_pp_baseline"`).
        kl_estimator (`str`, *optional*, defaults to `"k3"`):
            Per-token KL estimator, any of `trl_r1.algorithms.KL_ESTIMATORS`.
        kl_in_reward (`bool`, *optional*, defaults to `False`):
            Subtract `beta * KL` from the reward instead of adding it to the loss.
        kl_target (`float` or `None`, *optional*, defaults to `None`):
            Target per-token KL of the adaptive coefficient controller; `None` keeps `beta` fixed.
        kl_horizon (`int`, *optional*, defaults to `10000`):
            Horizon, in samples, of the adaptive controller.
        gamma (`float`, *optional*, defaults to `1.0`):
            Discount of the REINFORCE++ token returns.
        vllm_lora_sync (`str`, *optional*, defaults to `"auto"`):
            With vLLM in colocate mode, push only the LoRA adapter, unmerged (`"auto"`), or TRL's merged weights.
        fast_generation (`str`, *optional*, defaults to `"auto"`):
            Without vLLM, generate from a merged copy of the policy with a static KV cache compiled under CUDA graphs
            (`"on"`), or with TRL's `generate` on the policy (`"off"`); `"auto"`: on a GPU where the copy fits.

    With the defaults (and any `beta`), training is identical to `trl.GRPOTrainer`.

    Example:
        >>> R1GRPOConfig(output_dir="out", use_cpu=True, report_to="none", advantage_estimator="gae")
        Traceback (most recent call last):
        ...
        ValueError: advantage_estimator='gae' is not one of [...] (GAE needs a critic: use trl_r1.trainers.R1PPOTrainer).
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
            "choices": list(grpo_advantage_estimators()),
        },
    )
    kl_estimator: str = kl_estimator_field("k3", "when `beta > 0`, in the loss or (`kl_in_reward`) the reward")
    kl_in_reward: bool = field(
        default=False,
        metadata={
            "help": "If True, the KL penalty is subtracted from the reward before the advantage instead of "
            "being added to the loss, as in PPO for RLHF (Ouyang et al. 2022) and REINFORCE++: per token for "
            "token-level estimators (`reinforce_pp`), summed over the completion for the sequence-level ones. "
            "Requires `beta > 0`; `k1` is the usual estimator here. Default False (KL in the loss, as in "
            "DeepSeekMath's GRPO).",
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
        self.check_vllm_lora_sync()
        self.check_fast_generation()
        forget_derived_generation_batch(self)
        check_trainable(self, positive=("temperature", "max_completion_length", "num_iterations"),
                        non_negative=("beta", "epsilon"))
        super().__post_init__()
        if self.advantage_estimator not in grpo_advantage_estimators():
            raise ValueError(
                f"advantage_estimator={self.advantage_estimator!r} is not one of {list(grpo_advantage_estimators())} "
                "(GAE needs a critic: use trl_r1.trainers.R1PPOTrainer)."
            )
        self.check_kl("beta", self.beta, "k3")
        if self.kl_in_reward and self.beta == 0.0:
            raise ValueError("kl_in_reward=True needs a KL coefficient: set beta > 0 (e.g. 0.001).")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}.")
        if self.gamma != 1.0 and not estimator_reads(self.advantage_estimator, "gamma"):
            readers = [n for n in grpo_advantage_estimators() if estimator_reads(n, "gamma")]
            raise ValueError(
                f"gamma={self.gamma} does nothing with advantage_estimator={self.advantage_estimator!r} (a sequence "
                f"reward has no token returns to discount); it is read by {readers}."
            )
        if not self.use_bias_correction_kl and (self.beta == 0.0 or self.kl_in_reward):
            warnings.warn(
                "use_bias_correction_kl=False weights the KL term of the loss; with "
                f"{'beta=0' if self.beta == 0.0 else 'kl_in_reward=True'} there is none, so it changes nothing.",
                stacklevel=3,
            )
        in_corrected_loss = self.beta != 0.0 and not self.kl_in_reward and self.use_bias_correction_kl
        if in_corrected_loss and self.kl_estimator != "k3" and same_loss_gradient(self.kl_estimator, "k3"):
            warnings.warn(
                f"kl_estimator={self.kl_estimator!r} in the loss with use_bias_correction_kl=True has the same "
                "gradient as 'k3' (docs/algorithms.md): training is identical, only the logged "
                f"kl/{self.kl_estimator} differs. 'k1' and 'abs' change the updates, as does "
                "use_bias_correction_kl=False.",
                stacklevel=3,
            )
        if self.computes_own_advantages:
            if self.multi_objective_aggregation != "sum_then_normalize":
                raise ValueError(
                    f"multi_objective_aggregation={self.multi_objective_aggregation!r} is applied by TRL's own GRPO "
                    "advantages only (advantage_estimator='grpo', kl_in_reward=False)."
                )
            if self.scale_rewards == "batch":
                raise ValueError(
                    "scale_rewards='batch' is applied by TRL's own GRPO advantages only (advantage_estimator='grpo', "
                    "kl_in_reward=False)."
                )
            if ADVANTAGE_ESTIMATORS.meta(self.advantage_estimator).get("trl_builtin") and self.scale_rewards == "none":
                raise ValueError("scale_rewards='none' with kl_in_reward is advantage_estimator='dr_grpo'; use that.")

    @property
    def computes_own_advantages(self) -> bool:
        """Whether advantages come from `trl_r1.algorithms` rather than TRL's GRPO code."""
        return self.kl_in_reward or not ADVANTAGE_ESTIMATORS.meta(self.advantage_estimator).get("trl_builtin")

    @property
    def kl_coef(self) -> float:
        """The (initial) KL coefficient: GRPO's `beta`."""
        return self.beta
