"""`R1GRPOTrainer`: `trl.GRPOTrainer` with a selectable advantage estimator, KL estimator, KL placement and
adaptive KL coefficient. The maths lives in `trl_r1.algorithms`; TRL is reached only through `trl_compat`:

- advantages: the rollout hook replaces TRL's GRPO advantages with the registered estimator's (sequence- or
  token-level, as it declares) when another estimator or KL-in-reward is selected;
- KL: with ``beta > 0`` trl_r1 owns the KL (TRL built the reference, then its own k3 term is switched off):
  in the loss, the chosen estimator weighted by the importance ratio and reduced like TRL's loss (k3 reproduces
  TRL), or subtracted from the reward.
"""

from __future__ import annotations

import torch

from ..algorithms import (
    ADVANTAGE_ESTIMATORS,
    AdvantageInputs,
    estimate_advantages,
    kl_loss_term,
    masked_mean,
    sequence_to_token_rewards,
)
from .base_trainer import R1TrainerBase
from .grpo_config import R1GRPOConfig
from .trl_compat import completion_mask


class R1GRPOTrainer(R1TrainerBase):
    """GRPO with the advantage estimators and KL variants of `trl_r1.algorithms` (see `R1GRPOConfig`).

    Takes the same arguments as `trl.GRPOTrainer`; `args` must be an `R1GRPOConfig`. With the config defaults
    the updates are those of `trl.GRPOTrainer`.
    """

    model_card_tags = ["trl", "grpo", "trl-r1"]

    def __init__(self, model, reward_funcs=None, args: R1GRPOConfig | None = None, train_dataset=None, *more_args,
                 **kwargs):
        if args is None:
            args = R1GRPOConfig()
        elif not isinstance(args, R1GRPOConfig):
            raise TypeError(f"R1GRPOTrainer needs an R1GRPOConfig, got {type(args).__name__}.")
        super().__init__(model, reward_funcs, args, train_dataset, *more_args, **kwargs)
        if args.kl_in_reward and self.is_vision_model:
            raise ValueError("kl_in_reward=True supports text-only models (its sampling log-probs skip image inputs).")
        if args.beta != 0.0:
            self.take_over_kl()
        self._kl_window = torch.zeros(4, dtype=torch.float64)  # `kl_stats` summed since the last update

    # ----- rollout: KL in the reward, advantages ----------------------------------------------------------------

    def on_rollout(self, batch: dict, rewards_per_func: torch.Tensor) -> dict:
        if self.args.beta != 0.0 and not self.args.kl_in_reward:
            batch["ref_per_token_logps"] = self.reference_logps(batch)
        if self.args.computes_own_advantages:
            batch["advantages"] = self._estimate_advantages(batch, rewards_per_func)
        return batch

    def _estimate_advantages(self, batch: dict, rewards_per_func: torch.Tensor) -> torch.Tensor:
        """Advantages of the local completions, ``(B,)`` or ``(B, T)``, from the all-process rewards."""
        scores = self.weighted_scores(rewards_per_func)
        local = self.local_rows(batch["completion_ids"].size(0))
        scored = ~torch.isnan(scores[local])
        mask = completion_mask(batch)
        token_rewards = sequence_to_token_rewards(torch.nan_to_num(scores[local]), mask)
        if self.args.kl_in_reward:
            coef, token_kl = self.reward_kl(batch, mask)
            token_rewards = token_rewards - coef * token_kl
            scores = scores - coef * self.accelerator.gather(token_kl.sum(dim=1))
        all_mask = self.gather_tokens(mask * scored[:, None])
        inputs = AdvantageInputs(
            scores=scores,
            mask=all_mask,
            token_rewards=self.gather_tokens(token_rewards),
            group_size=self.group_size,
            gamma=self.args.gamma,
        )
        advantages = estimate_advantages(self.args.advantage_estimator, inputs)
        if ADVANTAGE_ESTIMATORS.meta(self.args.advantage_estimator)["level"] == "sequence":
            self.replace_logged_advantages(advantages.tolist())
            return advantages[local]
        self.replace_logged_advantages(masked_mean(advantages, all_mask, dim=1).tolist())
        return advantages[local, : mask.size(1)]

    # ----- KL in the loss ---------------------------------------------------------------------------------------

    def combine_loss(self, policy_loss: torch.Tensor, inputs: dict, policy_logps: torch.Tensor) -> torch.Tensor:
        if self.args.beta == 0.0 or self.args.kl_in_reward:
            return policy_loss
        log_ratio = self.importance_log_ratio(policy_logps, inputs) if self.args.use_bias_correction_kl else None
        per_token_kl = kl_loss_term(policy_logps, inputs["ref_per_token_logps"], self.args.kl_estimator, log_ratio)
        kl_loss = self.kl_controller.value * self.aggregate_like_loss(per_token_kl, inputs)

        mask = completion_mask(inputs)
        per_token_k3 = kl_loss_term(policy_logps.detach(), inputs["ref_per_token_logps"], "k3", log_ratio)  # TRL's
        self._kl_window += self.kl_stats(per_token_kl * mask, per_token_k3.detach() * mask, mask).cpu()
        if self.accelerator.sync_gradients:  # the end of an optimizer step (always True in eval)
            self.record_kl(self.accelerator.reduce(self._kl_window.to(mask.device), reduction="sum").cpu())
            self._kl_window.zero_()
        return policy_loss + kl_loss
