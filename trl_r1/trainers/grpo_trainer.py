"""`R1GRPOTrainer`: `trl.GRPOTrainer` with a selectable advantage estimator, KL estimator, KL placement and
adaptive KL coefficient. The maths lives in `trl_r1.algorithms`; this file only wires it into TRL's hooks:

- advantages: `_generate_and_score_completions` is post-processed (TRL's own GRPO advantages are replaced when
  another estimator or KL-in-reward is selected; `_compute_loss` accepts `(B,)` and `(B, T)` advantages);
- KL in the loss: TRL's k3 term is switched off for the call to `GRPOTrainer._compute_loss` and re-added with
  the chosen estimator and the same loss-type normalisation (every aggregation is linear, so k3 reproduces TRL).
"""

from __future__ import annotations

import json
import os

import torch
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer

from ..algorithms import (
    AdaptiveKLController,
    FixedKLController,
    get_advantage_estimator,
    kl_penalty,
    masked_mean,
    reinforce_pp_advantages,
    reinforce_pp_baseline_advantages,
    sequence_to_token_rewards,
)
from .grpo_config import R1GRPOConfig

KL_CONTROLLER_STATE = "kl_controller_state.json"  # the adaptive KL coefficient, saved with each checkpoint


class R1GRPOTrainer(GRPOTrainer):
    """GRPO with the advantage estimators and KL variants of `trl_r1.algorithms` (see `R1GRPOConfig`).

    Takes the same arguments as `trl.GRPOTrainer`; `args` must be an `R1GRPOConfig`. With the config defaults
    the updates are those of `trl.GRPOTrainer`.
    """

    _tag_names = ["trl", "grpo", "trl-r1"]

    def __init__(self, model, reward_funcs=None, args: R1GRPOConfig | None = None, *more_args, **kwargs):
        if args is None:
            args = R1GRPOConfig()
        elif not isinstance(args, R1GRPOConfig):
            raise TypeError(f"R1GRPOTrainer needs an R1GRPOConfig, got {type(args).__name__}.")
        super().__init__(model, reward_funcs, args, *more_args, **kwargs)
        if args.kl_in_reward and self._is_vlm:
            raise ValueError("kl_in_reward=True supports text-only models (its sampling log-probs skip image inputs).")
        if args.kl_target is not None:
            self.kl_controller = AdaptiveKLController(args.beta, args.kl_target, args.kl_horizon)
        else:
            self.kl_controller = FixedKLController(args.beta)
        self._kl_window = torch.zeros(3, dtype=torch.float64)  # KL sum, tokens, completions since the last update
        self._rewards_per_func = None

    # ----- advantages -------------------------------------------------------------------------------------------

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        # Keep the raw (all-process) rewards: the returned batch only holds TRL's GRPO advantages.
        self._rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        return self._rewards_per_func

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if self.args.computes_own_advantages:
            output["advantages"] = self._estimate_advantages(output)
        return output

    def _estimate_advantages(self, output: dict) -> torch.Tensor:
        """Advantages of the local completions, ``(B,)`` or ``(B, T)``, from the all-process rewards."""
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        rewards_per_func = self._rewards_per_func
        # The same reward aggregation as TRL: weighted nansum; a completion no reward function scored is NaN.
        scores = (rewards_per_func * self.reward_weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
        scores[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
        mask = output["completion_mask"]
        if "tool_mask" in output:
            mask = mask * output["tool_mask"]
        local_size, length = mask.shape
        local = slice(self.accelerator.process_index * local_size, (self.accelerator.process_index + 1) * local_size)

        token_kl = self._sampled_kl(output, mask, mode) if self.args.kl_in_reward else None
        estimator = self.args.advantage_estimator
        if estimator == "reinforce_pp":
            scored = ~torch.isnan(scores[local])
            token_rewards = sequence_to_token_rewards(torch.nan_to_num(scores[local]), mask)
            if token_kl is not None:
                token_rewards = token_rewards - self.kl_controller.value * token_kl
            all_mask = self._gather_tokens(mask * scored[:, None])
            all_advantages = reinforce_pp_advantages(self._gather_tokens(token_rewards), all_mask, self.args.gamma)
        else:
            if token_kl is not None:  # sequence-level estimators: the KL summed over the completion
                scores = scores - self.kl_controller.value * self.accelerator.gather(token_kl.sum(dim=1))
            if estimator == "reinforce_pp_baseline":
                all_mask = self._gather_tokens(mask)
                all_advantages = reinforce_pp_baseline_advantages(scores, group_size, all_mask)
            else:
                all_mask = None
                all_advantages = get_advantage_estimator(estimator)(scores, group_size)

        # The completions table logs one advantage per completion: replace TRL's GRPO values with ours.
        per_completion = all_advantages if all_mask is None else masked_mean(all_advantages, all_mask, dim=1)
        logged = self._logs["advantages"]
        for _ in range(min(len(per_completion), len(logged))):
            logged.pop()
        logged.extend(per_completion.tolist())
        return all_advantages[local] if all_mask is None else all_advantages[local, :length]

    def _gather_tokens(self, tensor: torch.Tensor) -> torch.Tensor:
        """A local ``(B, T)`` tensor of every process, zero-padded to a common T: ``(N, T_max)``."""
        return self.accelerator.gather(self.accelerator.pad_across_processes(tensor, dim=1))

    @torch.no_grad()
    def _sampled_kl(self, output: dict, mask: torch.Tensor, mode: str) -> torch.Tensor:
        """Per-token KL ``(B, T)`` of the sampling policy to the reference, for KL-in-reward; updates the controller."""
        logps = output.get("old_per_token_logps")
        if logps is None:  # TRL skips this forward when the batch is used on-policy
            args = self.args
            logps, _, _ = self._get_per_token_logps_and_entropies(
                self.model,
                torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1),
                torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1),
                output["completion_ids"].size(1),
                batch_size=args.per_device_train_batch_size if mode == "train" else args.per_device_eval_batch_size,
            )
        token_kl = kl_penalty(logps, output["ref_per_token_logps"], self.args.kl_estimator) * mask
        stats = self.accelerator.reduce(_kl_stats(token_kl, mask), reduction="sum").cpu()
        self._record_kl(stats, mode, update=mode == "train")
        return token_kl

    # ----- KL in the loss ---------------------------------------------------------------------------------------

    def _compute_loss(self, model, inputs):
        if self.beta == 0.0:
            return super()._compute_loss(model, inputs)
        # Run TRL's loss without its k3 term, keeping the live log-probs it computes, then add our KL term.
        captured = []
        compute_logps = self._get_per_token_logps_and_entropies

        def capture(*args, **kwargs):
            result = compute_logps(*args, **kwargs)
            captured.append(result[0])
            return result

        self._get_per_token_logps_and_entropies, self.beta = capture, 0.0
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            del self._get_per_token_logps_and_entropies
            self.beta = self.args.beta
        if self.args.kl_in_reward:
            return loss

        logps = captured[0]
        mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        per_token_kl = kl_penalty(logps, inputs["ref_per_token_logps"], self.args.kl_estimator)
        if self.args.use_bias_correction_kl:  # TRL's default: the KL weighted by the (differentiable) IS ratio
            per_token_kl = per_token_kl * self._importance_ratio(logps, inputs, mask)
        mode = "train" if self.model.training else "eval"
        loss = loss + self.kl_controller.value * self._aggregate_like_loss(per_token_kl, mask, inputs, mode)

        self._kl_window += _kl_stats(per_token_kl * mask, mask).cpu()
        if self.accelerator.sync_gradients:  # the end of an optimizer step (always True in eval)
            window = self.accelerator.reduce(self._kl_window.to(mask.device), reduction="sum").cpu()
            self._record_kl(window, mode, update=mode == "train")
            self._kl_window.zero_()
        return loss

    def _importance_ratio(self, logps, inputs, mask):
        """``coef_1`` of `GRPOTrainer._compute_loss`: pi / pi_old per token, or per sequence (GSPO)."""
        old_logps = inputs.get("old_per_token_logps")
        log_ratio = logps - (logps.detach() if old_logps is None else old_logps)
        if self.importance_sampling_level == "sequence":
            log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
        return torch.exp(log_ratio)

    def _aggregate_like_loss(self, per_token, mask, inputs, mode):
        """Reduce a ``(B, T)`` term exactly as `GRPOTrainer._compute_loss` reduces its per-token loss."""
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        if self.loss_type in ("grpo", "sapo"):
            return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / accumulation
        if self.loss_type == "bnpo":
            return (per_token * mask).sum() / mask.sum().clamp(min=1.0) / accumulation
        if self.loss_type == "dr_grpo":
            return (per_token * mask).sum() / (per_token.size(0) * self.max_completion_length) / accumulation
        if self.loss_type == "luspo":
            return (per_token * mask).sum(-1).mean() / accumulation
        # cispo, dapo, vespo: over the valid tokens of the whole generation batch
        normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
        if mode == "train":
            normalizer = normalizer * self.current_gradient_accumulation_steps / self.args.steps_per_generation
        return (per_token * mask).sum() / normalizer

    # ----- checkpoints: the adaptive coefficient resumes where it was (TRL's pattern for its entropy controller) --

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        if self.args.kl_target is not None and self.args.should_save:
            folder = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
            with open(os.path.join(self._get_output_dir(trial=trial), folder, KL_CONTROLLER_STATE), "w") as f:
                json.dump({"kl_coef": self.kl_controller.value}, f)

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        path = os.path.join(checkpoint, KL_CONTROLLER_STATE) if checkpoint is not None else None
        if self.args.kl_target is not None and path is not None and os.path.exists(path):
            with open(path) as f:
                self.kl_controller.value = json.load(f)["kl_coef"]

    def _record_kl(self, stats: torch.Tensor, mode: str, update: bool) -> None:
        """Log the mean per-token KL of ``stats = [KL sum, tokens, completions]`` and adapt the coefficient."""
        kl_sum, tokens, completions = stats.tolist()
        mean_kl = kl_sum / max(tokens, 1.0)
        self._metrics[mode]["kl"].append(mean_kl)
        if update:
            self.kl_controller.update(mean_kl, n_steps=int(completions))
            self._metrics[mode]["kl_coef"].append(self.kl_controller.value)


def _kl_stats(masked_kl: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[KL sum, valid tokens, completions]`` in float64, to be summed over micro-batches and processes."""
    completions = torch.tensor(float(mask.size(0)), dtype=torch.float64, device=mask.device)
    return torch.stack([masked_kl.detach().sum().double(), mask.sum().double(), completions])
