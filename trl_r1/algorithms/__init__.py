"""Pure-torch RL algorithms (no TRL import): advantage estimators and KL penalties, each kind in one registry, and
the critic's clipped value loss; and, in `intervals` (plain Python, imported by name), the held-out statistics.
See ``docs/algorithms.md``."""

from .advantages import (
    ADVANTAGE_ESTIMATORS,
    AdvantageInputs,
    decoupled_gae,
    discounted_reverse_cumsum,
    dr_grpo_advantages,
    estimate_advantages,
    estimator_reads,
    gae,
    get_advantage_estimator,
    grpo_advantages,
    length_adaptive_lambda,
    masked_mean,
    masked_whiten,
    reinforce_pp_advantages,
    reinforce_pp_baseline_advantages,
    rloo_advantages,
    sequence_to_token_rewards,
)
from .kl import (
    KL_ESTIMATORS,
    AdaptiveKLController,
    FixedKLController,
    kl_controller,
    kl_loss_term,
    kl_penalty,
    same_loss_gradient,
)
from .value import clipped_value_loss, explained_variance

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "KL_ESTIMATORS",
    "AdaptiveKLController",
    "AdvantageInputs",
    "FixedKLController",
    "clipped_value_loss",
    "decoupled_gae",
    "discounted_reverse_cumsum",
    "dr_grpo_advantages",
    "estimate_advantages",
    "estimator_reads",
    "explained_variance",
    "gae",
    "get_advantage_estimator",
    "grpo_advantages",
    "kl_controller",
    "kl_loss_term",
    "kl_penalty",
    "same_loss_gradient",
    "length_adaptive_lambda",
    "masked_mean",
    "masked_whiten",
    "reinforce_pp_advantages",
    "reinforce_pp_baseline_advantages",
    "rloo_advantages",
    "sequence_to_token_rewards",
]
