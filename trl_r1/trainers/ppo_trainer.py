"""Actor-critic PPO with GAE on TRL's GRPO plumbing (TRL 1.16 removed its PPOTrainer).

`R1PPOTrainer` keeps everything `GRPOTrainer` does (generation with transformers or vLLM, reward functions, logging,
PEFT/QLoRA, the clipped policy loss with `num_iterations` epochs, which accepts ``(B, T)`` advantages) and changes
three things:

1. Rollout: the critic's values for every completion token; the weighted reward on the last token minus a per-token
   KL penalty to the reference; GAE turns both into token advantages and critic returns, whitened over all processes.
2. Loss: TRL's policy loss plus ``vf_coef`` times the clipped value loss. The values come out of the policy's own
   forward (the head is a submodule of the model), so DDP and DeepSpeed ZeRO-1/2 synchronise the critic too.
3. Critic state: the value head gets its own optimizer group (``value_lr``) and is saved and restored with
   checkpoints.

Memory stays close to GRPO's: one base model. Under PEFT the reference is the base with adapters disabled, and the
critic is either a head on the policy's trunk or a second LoRA adapter plus a head on the same (4-bit) base.
"""

from __future__ import annotations

import copy
import logging
import os
import textwrap
from contextlib import contextmanager
from typing import Any

import torch
from accelerate.utils import is_peft_model
from safetensors.torch import load_file, save_file
from transformers.utils import strtobool

from ..algorithms import (
    clipped_value_loss,
    decoupled_gae,
    explained_variance,
    kl_penalty,
    length_adaptive_lambda,
    masked_mean,
    masked_whiten,
    sequence_to_token_rewards,
)
from .base_trainer import R1TrainerBase
from .ppo_config import R1PPOConfig
from .trl_compat import add_unsaved_submodule, completion_mask, model_name, reference_model_for
from .value_head import CriticInForward, ValueHead, keep_trainable

logger = logging.getLogger(__name__)

CRITIC_ADAPTER = "critic"
VALUE_HEAD_MODULE = "value_head"  # submodule of the policy's base model (not saved with its weights)
VALUE_HEAD_NAME = "value_head.safetensors"


def refuse_sharded_training(args: R1PPOConfig) -> None:
    """R1PPOTrainer supports one process, DDP and DeepSpeed ZeRO-1/2; refuse ZeRO-3 and FSDP before a model loads.

    Both shard the parameters, and the critic reads the trunk through a second forward or a hook that a sharded
    module does not run.
    """
    zero_stage = args.deepspeed_plugin.zero_stage if args.deepspeed_plugin is not None else None
    if zero_stage == 3 or args.fsdp or strtobool(os.environ.get("ACCELERATE_USE_FSDP", "false")):
        raise NotImplementedError(
            "R1PPOTrainer runs in one process, under DDP or under DeepSpeed ZeRO-1/2; ZeRO-3 and FSDP shard the "
            "parameters its critic reads. Use `accelerate launch --multi_gpu` or a ZeRO-2 config."
        )


class R1PPOTrainer(R1TrainerBase):
    """Actor-critic PPO with a value head and GAE, on `trl.GRPOTrainer`'s generation, rewards and logging.

    Takes the same arguments as `GRPOTrainer` (model path or instance, `reward_funcs`, `args`, `train_dataset`,
    `processing_class`, `peft_config`, `quantization_config`, ...) with a `R1PPOConfig`. Logs, besides GRPO's
    metrics: `value_loss`, `value_clipfrac`, `explained_variance`, `approx_kl` and `policy_clipfrac` (policy drift
    within a batch), `kl` (to the reference) and `kl_coef`.

    Text-only models; one process, DDP or DeepSpeed ZeRO-1/2 (see `refuse_sharded_training`).
    """

    model_card_tags = ["trl", "trl-r1", "ppo"]
    model_card_name = "PPO"
    model_card_paper = {
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

    def __init__(self, model, reward_funcs=None, args: R1PPOConfig | None = None, train_dataset=None, *more_args,
                 **kwargs):
        if args is None:
            args = R1PPOConfig(f"{model_name(model)}-PPO")
        if not isinstance(args, R1PPOConfig):
            raise TypeError(f"R1PPOTrainer needs a R1PPOConfig, got {type(args).__name__}.")
        optimizers = more_args[5] if len(more_args) > 5 else kwargs.get("optimizers", (None, None))
        if optimizers[0] is not None:
            raise ValueError("R1PPOTrainer builds its own optimizer, which holds the value head as a separate group.")
        refuse_sharded_training(args)
        with reference_model_for(args, args.kl_coef):
            super().__init__(model, reward_funcs, args, train_dataset, *more_args, **kwargs)
        self.take_over_kl()  # PPO's KL goes into the reward
        if self.is_vision_model:
            raise NotImplementedError("R1PPOTrainer's critic reads text only; vision-language models are not supported.")

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
        add_unsaved_submodule(base, VALUE_HEAD_MODULE, self.value_head)  # inside the model DDP / DeepSpeed wrap
        self._trainable_parameters = [p for p in policy.parameters() if p.requires_grad]
        critic_hidden = self._critic_hidden if args.critic == "lora" else None
        self._critic = CriticInForward(policy, self._backbone, self.value_head, critic_hidden)

    # ----------------------------------------------------------------------------------------------- forwards

    @contextmanager
    def _active_adapter(self, adapter_name: str | None):
        """Run with one PEFT adapter active, leaving every trainable adapter trainable."""
        with keep_trainable(self._trainable_parameters), self.use_adapter(adapter_name):
            yield

    def _critic_hidden(self, input_ids, attention_mask):
        """Last hidden states of the critic adapter's trunk.

        Gradient checkpointing is off for this forward: its backward would recompute the layers with whichever
        adapter is active by then (the policy's), not the critic's.
        """
        with self._active_adapter(CRITIC_ADAPTER), self.gradient_checkpointing_off(), self.accelerator.autocast():
            return self._backbone(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state

    @torch.no_grad()
    def _rollout_values(self, batch: dict) -> torch.Tensor:
        """Values ``(B, T)`` of the sampled batch, in micro-batches."""
        input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        attention_mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        num_completion_tokens = batch["completion_ids"].size(1)
        values = []
        for start in range(0, input_ids.size(0), self.micro_batch_size):
            rows = slice(start, start + self.micro_batch_size)
            if self.args.critic == "lora":
                hidden = self._critic_hidden(input_ids[rows], attention_mask[rows])
            else:
                with self.gradient_checkpointing_off(), self.accelerator.autocast():
                    hidden = self._backbone(
                        input_ids=input_ids[rows], attention_mask=attention_mask[rows], use_cache=False
                    ).last_hidden_state
            values.append(self.value_head(hidden, num_completion_tokens))
        return torch.cat(values)

    # ------------------------------------------------------------------------------------------------ rollout

    def on_rollout(self, batch: dict, rewards_per_func: torch.Tensor) -> dict:
        num_local = batch["completion_ids"].size(0)
        scores = self.weighted_scores(rewards_per_func)[self.local_rows(num_local)]
        # Tool outputs are not actions, and unscorable completions carry no signal: both leave GAE and the critic.
        mask = completion_mask(batch) * ~torch.isnan(scores)[:, None]
        rewards = sequence_to_token_rewards(scores.nan_to_num(0.0), mask)
        values = self._rollout_values(batch)
        if self.kl_controller.value > 0:
            coef, token_kl = self.reward_kl(batch, mask)
            rewards = rewards - coef * token_kl

        args = self.args
        lam_critic = args.lam if args.lam_critic is None else args.lam_critic
        lam_actor = args.lam
        if args.length_adaptive_alpha is not None:
            lam_actor = length_adaptive_lambda(mask.sum(dim=1), args.length_adaptive_alpha)
        advantages, returns = decoupled_gae(rewards, values, mask, args.gamma, lam_actor, lam_critic)

        # Whitening statistics and the completions table span every process.
        all_advantages, all_mask = self.gather_tokens(advantages), self.gather_tokens(mask)
        if args.whiten_advantages:
            all_advantages = masked_whiten(all_advantages, all_mask)
            advantages = all_advantages[self.local_rows(num_local), : mask.size(1)]
        self.replace_logged_advantages(masked_mean(all_advantages, all_mask, dim=1).tolist())
        batch.update(advantages=advantages, values=values, returns=returns, value_mask=mask)
        return batch

    # --------------------------------------------------------------------------------------------------- loss

    def _warming_up(self) -> bool:
        return self.mode == "train" and self.state.global_step < self.args.critic_warmup_steps

    @contextmanager
    def loss_context(self, inputs: dict):
        # Critic warm-up: a shared trunk (= policy weights) gets no value gradient.
        train_trunk = self.args.critic == "lora" or not self._warming_up()
        with self._critic.values(inputs["completion_ids"].size(1), train_trunk) as self._loss_values:
            yield

    def combine_loss(self, policy_loss: torch.Tensor, inputs: dict, policy_logps: torch.Tensor) -> torch.Tensor:
        if self._warming_up():
            # The policy's gradient is zero, not absent: under DDP every rank must reduce the same parameters.
            policy_loss = 0.0 * policy_loss
        else:
            self._log_policy_drift(inputs, policy_logps)
        values = torch.cat(self._loss_values)
        mask = inputs["value_mask"]
        value_loss, value_clipfrac = clipped_value_loss(
            values, inputs["values"], inputs["returns"], mask, self.args.cliprange_value
        )
        self.log_metric("value_loss", value_loss.item())
        self.log_metric("value_clipfrac", value_clipfrac.item())
        self.log_metric("explained_variance", explained_variance(values.detach(), inputs["returns"], mask).item())
        # TRL's policy loss is already divided by the accumulation steps; do the same here.
        return policy_loss + self.args.vf_coef * value_loss / self.accumulation_steps

    def _log_policy_drift(self, inputs: dict, policy_logps: torch.Tensor) -> None:
        """approx_kl (k3 estimate of KL(old || new)) and the share of tokens whose ratio left the clip range."""
        mask = completion_mask(inputs)
        logps = policy_logps.detach()
        old_logps = inputs.get("old_per_token_logps")
        old_logps = logps if old_logps is None else old_logps
        ratio = torch.exp(logps - old_logps)
        low, high = self.ratio_clip_range
        self.log_metric("approx_kl", masked_mean(kl_penalty(old_logps, logps, "k3"), mask).item())
        self.log_metric("policy_clipfrac", masked_mean(((ratio < low) | (ratio > high)).float(), mask).item())

    # -------------------------------------------------------------------------------------- optimizer and state

    def create_optimizer(self, model=None):
        """Trainer's groups for the policy, plus one group at `value_lr` for the value head and critic adapter."""
        if self.optimizer is not None:
            return self.optimizer
        policy = self.accelerator.unwrap_model(self.model)
        critic = [p for n, p in policy.named_parameters() if f".{CRITIC_ADAPTER}." in n]
        critic += list(self.value_head.parameters())
        for parameter in critic:  # hidden from Trainer's groups, which take every trainable parameter
            parameter.requires_grad_(False)
        with keep_trainable(critic):
            optimizer = super().create_optimizer(model)
        optimizer.add_param_group({
            "params": critic,
            "lr": self.args.value_lr or self.args.learning_rate,
            "weight_decay": 0.0,
        })
        return optimizer

    def save_extra_files(self, output_dir: str) -> None:
        """``value_head.safetensors`` next to the model (PEFT writes the critic adapter to ``critic/`` itself)."""
        save_file(self.value_head.state_dict(), os.path.join(output_dir, VALUE_HEAD_NAME))

    def load_checkpoint_state(self, state: dict[str, Any], checkpoint: str) -> None:
        super().load_checkpoint_state(state, checkpoint)
        head_path = os.path.join(checkpoint, VALUE_HEAD_NAME)
        if os.path.isfile(head_path):
            # Read on the CPU and copied into the head where it lives (safetensors refuses a device such as "cpu:0",
            # which is what a rank's device is under `--multi_gpu` with `use_cpu`).
            self.value_head.load_state_dict(load_file(head_path))
        else:
            logger.warning("No %s in %s: the value head starts fresh.", VALUE_HEAD_NAME, checkpoint)
