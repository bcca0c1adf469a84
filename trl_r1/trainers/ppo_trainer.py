"""Actor-critic PPO with GAE on TRL's GRPO plumbing (TRL 1.16 removed its PPOTrainer).

`PPOTrainer` keeps everything `GRPOTrainer` does (generation with transformers or vLLM, reward functions, logging,
PEFT/QLoRA, the clipped policy loss with `num_iterations` epochs, which accepts ``(B, T)`` advantages) and changes
three things:

1. Rollout: the critic's values for every completion token; the weighted reward on the last token minus a per-token
   KL penalty to the reference; GAE turns both into token advantages and critic returns.
2. Loss: TRL's policy loss plus ``vf_coef`` times the clipped value loss.
3. Critic state: the value head gets its own optimizer group (``value_lr``), gradient clipping, and is saved and
   restored with checkpoints.

Memory stays close to GRPO's: one base model. Under PEFT the reference is the base with adapters disabled, and the
critic is either a head on the policy's trunk or a second LoRA adapter plus a head on the same (4-bit) base.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import textwrap
from contextlib import contextmanager, nullcontext
from typing import ClassVar

import torch
from accelerate.utils import is_peft_model
from safetensors.torch import load_file, save_file
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import use_adapter

from ..algorithms.advantages import (
    decoupled_gae,
    length_adaptive_lambda,
    masked_mean,
    sequence_to_token_rewards,
)
from ..algorithms.kl import AdaptiveKLController, FixedKLController, kl_penalty
from .ppo_config import PPOConfig
from .value_head import (
    ValueHead,
    capture_hidden_states,
    clipped_value_loss,
    explained_variance,
    keep_trainable,
)

logger = logging.getLogger(__name__)

CRITIC_ADAPTER = "critic"
VALUE_HEAD_NAME = "value_head.safetensors"
PPO_STATE_NAME = "ppo_state.json"


class PPOTrainer(GRPOTrainer):
    """Actor-critic PPO with a value head and GAE, on `trl.GRPOTrainer`'s generation, rewards and logging.

    Takes the same arguments as `GRPOTrainer` (model path or instance, `reward_funcs`, `args`, `train_dataset`,
    `processing_class`, `peft_config`, `quantization_config`, ...) with a `PPOConfig`. Logs, besides GRPO's
    metrics: `value_loss`, `value_clipfrac`, `explained_variance`, `approx_kl` and `policy_clipfrac` (policy drift
    within a batch), `kl` (to the reference) and `kl_coef`.

    Single process, text-only models: the value head lives outside the model that DDP/DeepSpeed/FSDP wrap, and the
    critic's forward passes no image inputs.
    """

    _tag_names: ClassVar[list[str]] = ["trl", "trl-r1", "ppo"]
    _name = "PPO"
    _paper: ClassVar[dict[str, str]] = {
        "title": "Proximal Policy Optimization Algorithms",
        "id": "1707.06347",
        "citation": textwrap.dedent("""\
            @article{schulman2017proximal,
                title        = {{Proximal Policy Optimization Algorithms}},
                author       = {John Schulman and Filip Wolski and Prafulla Dhariwal and Alec Radford and Oleg Klimov},
                year         = 2017,
                eprint       = {arXiv:1707.06347},
            }"""),
    }

    def __init__(self, model, reward_funcs=None, args: PPOConfig | None = None, **kwargs):
        if args is None:
            name = model if isinstance(model, str) else model.config._name_or_path
            args = PPOConfig(f"{name.rstrip('/').split('/')[-1]}-PPO")
        if not isinstance(args, PPOConfig):
            raise TypeError(f"PPOTrainer needs a PPOConfig, got {type(args).__name__}.")
        if kwargs.get("optimizers", (None, None))[0] is not None:
            raise ValueError("PPOTrainer builds its own optimizer, which holds the value head as a separate group.")
        # TRL loads a reference model (or a frozen "ref" copy of a pre-trained adapter) only when beta != 0. PPO's
        # KL lives in the reward, so beta is kl_coef while TRL builds the models and 0 after (no KL term in the loss).
        args.beta = args.kl_coef
        try:
            super().__init__(model, reward_funcs, args, **kwargs)
        finally:
            args.beta = 0.0
        self.beta = 0.0
        if self.accelerator.num_processes > 1:
            raise NotImplementedError("PPOTrainer runs in a single process (its value head is not synchronised).")
        if self._is_vlm:
            raise NotImplementedError("PPOTrainer's critic reads text only; vision-language models are not supported.")

        policy = self.accelerator.unwrap_model(self.model)
        if args.critic == "lora":
            if not is_peft_model(policy):
                raise ValueError("critic='lora' puts the critic in a second LoRA adapter: pass a `peft_config`.")
            policy.add_adapter(CRITIC_ADAPTER, copy.deepcopy(policy.peft_config[policy.active_adapter]))
            for name, parameter in policy.named_parameters():
                if f".{CRITIC_ADAPTER}." in name:
                    parameter.requires_grad_(True)
        base = policy.get_base_model() if is_peft_model(policy) else policy
        self._backbone = base.base_model
        self.value_head = ValueHead(base.config.get_text_config().hidden_size).to(self.accelerator.device)
        self._trainable_parameters = [p for p in policy.parameters() if p.requires_grad]
        if args.kl_target is not None:
            self.kl_controller = AdaptiveKLController(args.kl_coef, args.kl_target, args.kl_horizon)
        else:
            self.kl_controller = FixedKLController(args.kl_coef)

    # ----------------------------------------------------------------------------------------------- forwards

    @contextmanager
    def _active_adapter(self, adapter_name: str | None):
        """Run with one PEFT adapter active (None: all disabled), leaving every trainable adapter trainable."""
        policy = self.accelerator.unwrap_model(self.model)
        with keep_trainable(self._trainable_parameters), use_adapter(policy, adapter_name):
            yield

    def _critic_values(self, input_ids, attention_mask, logits_to_keep, batch_size=None, train_trunk=False):
        """Values ``(B, T)`` from a forward of the critic's trunk: the critic adapter, or else the policy's trunk.

        Gradient checkpointing is off for this forward: its backward would recompute the layers with whichever
        adapter is active by then (the policy's), not the critic's.
        """
        adapter = self._active_adapter(CRITIC_ADAPTER) if self.args.critic == "lora" else nullcontext()
        batch_size = batch_size or input_ids.size(0)
        values = []
        with adapter, disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            for start in range(0, input_ids.size(0), batch_size):
                with torch.set_grad_enabled(train_trunk and torch.is_grad_enabled()), self.accelerator.autocast():
                    hidden = self._backbone(
                        input_ids=input_ids[start : start + batch_size],
                        attention_mask=attention_mask[start : start + batch_size],
                        use_cache=False,
                    ).last_hidden_state
                values.append(self.value_head(hidden, logits_to_keep))
        return torch.cat(values)

    def _reference_logps(self, input_ids, attention_mask, logits_to_keep, batch_size):
        """Per-token log-probs under the reference: TRL's ref model, or under PEFT the base with adapters off."""
        if self.ref_model is not None:
            model, adapter = self.ref_model, nullcontext()
        else:
            model = self.model
            adapter = self._active_adapter("ref" if "ref" in self.accelerator.unwrap_model(model).peft_config else None)
        with adapter:
            return self._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size
            )[0]

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        # Keeps the live policy log-probs of the last forward for the approx_kl / policy_clipfrac metrics.
        logps, entropies, aux_loss = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        self._last_logps = logps.detach()
        return logps, entropies, aux_loss

    # ------------------------------------------------------------------------------------------------ rollout

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        # GRPO turns rewards straight into group advantages; PPO needs the raw (global) scores.
        self._rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        return self._rewards_per_func

    def _local_scores(self, num_local: int) -> torch.Tensor:
        """This process's weighted reward per completion, NaN where every reward function returned None."""
        start = self.accelerator.process_index * num_local
        rewards_per_func = self._rewards_per_func[start : start + num_local]
        scores = (rewards_per_func * self.reward_weights.to(rewards_per_func.device)).nansum(dim=1)
        return scores.masked_fill(torch.isnan(rewards_per_func).all(dim=1), float("nan"))

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        input_ids = torch.cat([out["prompt_ids"], out["completion_ids"]], dim=1)
        attention_mask = torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1)
        logits_to_keep = out["completion_ids"].size(1)
        batch_size = self.args.per_device_train_batch_size if mode == "train" else self.args.per_device_eval_batch_size

        scores = self._local_scores(out["completion_ids"].size(0))
        # Tool outputs are not actions, and unscorable completions carry no signal: both leave GAE and the critic.
        mask = out["completion_mask"] * out.get("tool_mask", 1) * ~torch.isnan(scores)[:, None]
        rewards = sequence_to_token_rewards(scores.nan_to_num(0.0), mask)
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            values = self._critic_values(input_ids, attention_mask, logits_to_keep, batch_size)
            if self.kl_controller.value > 0:
                policy_logps = out.get("old_per_token_logps")
                if policy_logps is None:
                    policy_logps = self._get_per_token_logps_and_entropies(
                        self.model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size
                    )[0]
                ref_logps = self._reference_logps(input_ids, attention_mask, logits_to_keep, batch_size)
                kl = kl_penalty(policy_logps, ref_logps, self.args.kl_estimator) * mask
                rewards = rewards - self.kl_controller.value * kl
                mean_kl = masked_mean(kl, mask).item()
                self._metrics[mode]["kl"].append(mean_kl)
                if mode == "train":
                    self.kl_controller.update(mean_kl, n_steps=input_ids.size(0))
        self._metrics[mode]["kl_coef"].append(self.kl_controller.value)

        lam_critic = self.args.lam if self.args.lam_critic is None else self.args.lam_critic
        lam_actor = self.args.lam
        if self.args.length_adaptive_alpha is not None:
            lam_actor = length_adaptive_lambda(mask.sum(dim=1), self.args.length_adaptive_alpha)
        advantages, returns = decoupled_gae(
            rewards, values, mask, self.args.gamma, lam_actor, lam_critic, whiten=self.args.whiten_advantages
        )
        out.update(advantages=advantages, values=values, returns=returns, value_mask=mask)

        # The completions table shows GRPO's group advantages: replace them with each completion's mean PPO one.
        logged = self._logs["advantages"]
        sequence_advantages = masked_mean(advantages, mask, dim=1).tolist()
        for _ in range(min(len(sequence_advantages), len(logged))):
            logged.pop()
        logged.extend(sequence_advantages)
        return out

    # --------------------------------------------------------------------------------------------------- loss

    def _compute_loss(self, model, inputs):
        mode = "train" if self.model.training else "eval"
        input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention_mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        logits_to_keep = inputs["completion_ids"].size(1)

        if mode == "train" and self.state.global_step < self.args.critic_warmup_steps:
            # Critic warm-up: no policy loss, and a shared trunk (= policy weights) gets no value gradient either.
            policy_loss = None
            values = self._critic_values(
                input_ids, attention_mask, logits_to_keep, train_trunk=self.args.critic == "lora"
            )
        elif self.args.critic == "shared_trunk":
            with capture_hidden_states(self._backbone) as hidden_states:
                policy_loss = super()._compute_loss(model, inputs)
            values = self.value_head(torch.cat(hidden_states), logits_to_keep)
        else:
            policy_loss = super()._compute_loss(model, inputs)
            values = self._critic_values(input_ids, attention_mask, logits_to_keep, train_trunk=True)
        if policy_loss is not None:
            self._log_policy_drift(inputs, mode)

        mask = inputs["value_mask"]
        value_loss, value_clipfrac = clipped_value_loss(
            values, inputs["values"], inputs["returns"], mask, self.args.cliprange_value
        )
        metrics = self._metrics[mode]
        metrics["value_loss"].append(value_loss.item())
        metrics["value_clipfrac"].append(value_clipfrac.item())
        metrics["explained_variance"].append(explained_variance(values.detach(), inputs["returns"], mask).item())

        # GRPO's policy loss is already divided by the accumulation steps (loss_is_scaled_for_ga); do the same here.
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1
        loss = self.args.vf_coef * value_loss / accumulation
        return loss if policy_loss is None else policy_loss + loss

    def _log_policy_drift(self, inputs, mode):
        """approx_kl (k3 estimate of KL(old || new)) and the share of tokens whose ratio left the clip range."""
        mask = inputs["completion_mask"] * inputs.get("tool_mask", 1)
        logps = self._last_logps
        old_logps = inputs.get("old_per_token_logps")
        old_logps = logps if old_logps is None else old_logps
        ratio = torch.exp(logps - old_logps)
        outside = (ratio < 1 - self.epsilon_low) | (ratio > 1 + self.epsilon_high)
        self._metrics[mode]["approx_kl"].append(masked_mean(kl_penalty(old_logps, logps, "k3"), mask).item())
        self._metrics[mode]["policy_clipfrac"].append(masked_mean(outside.float(), mask).item())

    # -------------------------------------------------------------------------------------- optimizer and state

    def create_optimizer(self, model=None):
        """Trainer's groups for the policy, plus one group at `value_lr` for the value head and critic adapter."""
        if self.optimizer is not None:
            return self.optimizer
        policy = self.accelerator.unwrap_model(self.model)
        critic_adapter = [p for n, p in policy.named_parameters() if f".{CRITIC_ADAPTER}." in n]
        for parameter in critic_adapter:  # hidden from Trainer's groups, which take every trainable parameter
            parameter.requires_grad_(False)
        with keep_trainable(critic_adapter):
            optimizer = super().create_optimizer(model)
        optimizer.add_param_group({
            "params": [*self.value_head.parameters(), *critic_adapter],
            "lr": self.args.value_lr or self.args.learning_rate,
            "weight_decay": 0.0,
        })
        return optimizer

    def _clip_grad_norm(self, model):
        # Trainer clips only the model's gradients; the head is clipped on its own to the same norm.
        torch.nn.utils.clip_grad_norm_(self.value_head.parameters(), self.args.max_grad_norm)
        return super()._clip_grad_norm(model)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False):
        """Save the model (with the critic adapter, which PEFT writes to ``critic/``) and ``value_head.safetensors``."""
        super().save_model(output_dir, _internal_call)
        if self.args.should_save:
            save_file(self.value_head.state_dict(), os.path.join(output_dir or self.args.output_dir, VALUE_HEAD_NAME))

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            checkpoint = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
            with open(os.path.join(self._get_output_dir(trial=trial), checkpoint, PPO_STATE_NAME), "w") as f:
                json.dump({"kl_coef": self.kl_controller.value}, f)

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        # Trainer reloads extra adapters (the critic's) frozen; they must stay trainable.
        with keep_trainable(self._trainable_parameters):
            super()._load_from_checkpoint(resume_from_checkpoint, model)
        head_path = os.path.join(resume_from_checkpoint, VALUE_HEAD_NAME)
        if os.path.isfile(head_path):
            self.value_head.load_state_dict(load_file(head_path, device=str(self.accelerator.device)))
        else:
            logger.warning("No %s in %s: the value head starts fresh.", VALUE_HEAD_NAME, resume_from_checkpoint)
        state_path = os.path.join(resume_from_checkpoint, PPO_STATE_NAME)
        if os.path.isfile(state_path):
            with open(state_path) as f:
                self.kl_controller.value = json.load(f)["kl_coef"]
