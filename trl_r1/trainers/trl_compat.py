"""The one seam between trl_r1's trainers and the private API of `trl.GRPOTrainer` (TRL 1.16).

TRL has no public hooks for other advantages, KL estimators, a critic or extra checkpoint state, so the trainers
need some of its private members. All of them are used here, and only here: `GRPOSeam` overrides TRL's private
methods and hands the trainers public hooks (`on_rollout`, `loss_context`, `combine_loss`, `checkpoint_state`)
plus services (reference/sampling log-probs, TRL's loss aggregation, metric logging). The module refuses a TRL
version it was not checked against. Its contract is `tests/test_trl_compat.py` and the parity tests in
`tests/test_grpo_trainer.py` (an `R1GRPOTrainer` with default options reproduces `trl.GRPOTrainer`'s loss and
gradients to 1e-6 for several loss types).

Private TRL / transformers members used: `GRPOTrainer._calculate_rewards`, `._generate_and_score_completions`,
`._compute_loss`, `._get_per_token_logps_and_entropies`, `._metrics`, `._logs`, `.beta`, `.ref_model`,
`.loss_type`, `.importance_sampling_level`, `.max_completion_length`, `.num_generations(_eval)`,
`.reward_weights`, `._is_vlm`, `.epsilon_low/high`; `Trainer._save_checkpoint`, `._load_from_checkpoint`,
`._load_optimizer_and_scheduler`, `._get_output_dir`, `.current_gradient_accumulation_steps`, `.save_model`'s
`_internal_call`; the model-card class attributes `_tag_names`, `_name`, `_paper` (TRL's `_BaseTrainer`);
`PreTrainedModel._keys_to_ignore_on_save`, `config._name_or_path`; `trl.trainer.utils.use_adapter`,
`trl.trainer.utils.create_model_from_path` (the pipeline loads a base to continue an adapter on exactly as TRL's
trainers load a model path), `trl.models.utils.disable_gradient_checkpointing`; and TRL's chat-template kit,
which it does not export: `trl.chat_template_utils` (`get_training_chat_template`, `has_generation_markers`,
`llama3_2_chat_template`) and the template files in `trl/chat_templates/` (byte-identical Hub copies).

vLLM in colocate mode with a LoRA policy (`vllm_lora_sync: auto`): TRL 1.16 merges the adapter into the base and
pushes full weights after each optimizer step, which a 4-bit base cannot take (huggingface/trl#3466, #4973). Here
vLLM loads the frozen base once (bitsandbytes 4-bit where the policy's base is 4-bit) with LoRA enabled, and only
the adapter is pushed, unmerged, under a fresh id per push (`AdapterSyncVLLMGeneration`, built on
`data.generation.VLLMAdapterSlot`); TRL's sleep mode keeps the base at level 1 (offloaded, not discarded). What
vLLM cannot serve falls back to transformers generation with the reason logged. For this it uses TRL's
`trl.trainer.grpo_trainer.VLLMGeneration` name (swapped while `GRPOSeam.__init__` runs),
`trl.generation.vllm_generation.LLM` (swapped while the engine starts) and `.empty_cache`, and
`VLLMGeneration._init_vllm`, `._dist`, `._llm_weights_sleeping`, and `GRPOTrainer.vllm_generation.llm` (shut
down after a stage, `shutdown_trainer_vllm`). TRL's own adapter-only sync
(huggingface/trl#6007, #5975) replaces this when a supported TRL ships it.

Generation without vLLM (`fast_generation`, `FastPolicyGeneration`): TRL's `generate` call runs on a merged copy of
the policy (`trl_r1.data.fast_generation.MergedPolicy`) instead of the 4-bit + PEFT policy, refreshed when the
optimizer stepped. For this it overrides `GRPOTrainer._generate_single_turn` and swaps
`trl.trainer.grpo_trainer.unwrap_model_for_generation` while it runs, and reads `.use_vllm`,
`.use_transformers_continuous_batching`, `.generation_config` and `._is_vlm`.
"""

from __future__ import annotations


import dataclasses
import inspect
import json
import logging
import math
import os
import time
from contextlib import contextmanager, nullcontext
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import torch
import trl
from packaging.version import Version
from torch import Tensor
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer
from trl.chat_template_utils import (  # noqa: F401 (pipeline)
    get_training_chat_template,
    has_generation_markers,
    llama3_2_chat_template,  # noqa: F401 (trainers/chat_templates)
)
from trl.generation.vllm_generation import VLLMGeneration
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import (  # noqa: F401 (create_model_from_path: for the pipeline)
    create_model_from_path,
    is_async_callable,
    use_adapter,
)

from ..data.generation import lora_max_rank, lora_unservable_reason
from .checks import (CheckedReward, check_enough_prompts, check_reward_values, check_train_dataset,
                     without_long_prompts)

if TYPE_CHECKING:
    from .step_memory import GRPOSettings, ModelShape

logger = logging.getLogger("trl_r1.trainers")

SUPPORTED_TRL = (Version("1.16.0"), Version("1.17.0"))  # [min, max): the versions the parity tests were run on
STATE_FILE = "trl_r1_state.json"  # trainer state saved with each checkpoint (e.g. the adaptive KL coefficient)


def check_trl_version(version: str = trl.__version__) -> None:
    """Raise ImportError unless ``version`` is one this seam was checked against.

    >>> check_trl_version("1.16.0")
    >>> check_trl_version("1.18.0")
    Traceback (most recent call last):
    ...
    ImportError: trl_r1.trainers supports trl>=1.16.0,<1.17.0 (found 1.18.0): ...
    """
    low, high = SUPPORTED_TRL
    if not low <= Version(version) < high:
        raise ImportError(
            f"trl_r1.trainers supports trl>={low},<{high} (found {version}): its trainers use private GRPOTrainer "
            f"members pinned by tests/test_trl_compat.py. Install a supported version: pip install 'trl>={low},<{high}'."
        )


check_trl_version()


def trl_chat_template_file(file_name: str) -> str:
    """One of the original chat templates TRL ships in `trl/chat_templates/` (e.g. ``"qwen2_5.jinja"``)."""
    from pathlib import Path

    return (Path(trl.__file__).parent / "chat_templates" / file_name).read_text(encoding="utf-8")


def completion_mask(batch: dict) -> Tensor:
    """The tokens that are the policy's actions: completion tokens that are not tool output."""
    mask = batch["completion_mask"]
    return mask * batch["tool_mask"] if "tool_mask" in batch else mask


def importance_sampling_masked_share(old_logps: Tensor, sampling_logps: Tensor, mask: Tensor, mode: str,
                                     clip_min: float | None, clip_max: float | None) -> Tensor:
    """The share of a batch that TRL 1.16's vLLM importance-sampling correction (`vllm_importance_sampling_mode`)
    drops or clips: sequences for ``sequence_*``, completion tokens for ``token_*``.

    TRL's rule (`GRPOTrainer._generate_and_score_completions`): the ratio is ``exp(old - sampling)`` per token, or
    of the sum over a sequence; ``*_mask`` zeroes a ratio outside ``[clip_min, clip_max]`` (that sequence or token
    then adds nothing to the loss), ``*_truncate`` clamps it to that range. ``(B, T)`` log-probs; a 0-d tensor.
    """
    mask = mask.bool()
    diff = torch.nan_to_num((old_logps - sampling_logps).masked_fill(~mask, 0.0), nan=0.0)
    low = -math.inf if clip_min is None else math.log(clip_min) if clip_min > 0 else -math.inf
    high = math.inf if clip_max is None else math.log(clip_max)
    if mode.startswith("sequence_"):
        log_ratio = diff.sum(-1)
        outside = (log_ratio < low) | (log_ratio > high)
        return outside.float().mean() if outside.numel() else torch.tensor(0.0)
    outside = ((diff < low) | (diff > high))[mask]
    return outside.float().mean() if outside.numel() else torch.tensor(0.0)


def model_name(model) -> str:
    """The last part of a model's path or Hub id (``"org/Qwen2.5-0.5B"`` -> ``"Qwen2.5-0.5B"``)."""
    name = model if isinstance(model, str) else model.config._name_or_path
    return name.rstrip("/").split("/")[-1]


def add_unsaved_submodule(model, name: str, module: torch.nn.Module) -> None:
    """Make ``module`` a submodule of a transformers ``model`` (so wrappers such as DDP see its parameters) that
    ``save_pretrained`` leaves out and checkpoint loading does not miss."""
    model.add_module(name, module)
    keys = {f"{name}.{key}" for key in module.state_dict()}
    model._keys_to_ignore_on_save.update(keys)
    model._trl_r1_unsaved_keys = getattr(model, "_trl_r1_unsaved_keys", set()) | keys


@contextmanager
def reference_model_for(args: Any, coef: float):
    """While TRL's trainer is built, ``args.beta = coef``: TRL decides from ``args.beta`` alone (read in
    ``__init__`` only) whether it loads a reference model. The config keeps its own ``beta`` afterwards."""
    beta = args.beta
    args.beta = coef
    try:
        yield
    finally:
        args.beta = beta


def unsaved_keys(model) -> set[str]:
    """The state-dict keys (as in ``model``'s own state dict) of every `add_unsaved_submodule` of ``model``."""
    return {f"{name}.{key}".lstrip(".") for name, module in model.named_modules()
            for key in getattr(module, "_trl_r1_unsaved_keys", ())}


# ----- vLLM colocate: the LoRA policy pushed as an adapter, unmerged --------------------------------------------------


def _policy_facts(model: Any, args: Any, peft_config: Any, quantization_config: Any) -> tuple[str, dict, Any]:
    """(base model path, its bitsandbytes settings as `vllm_backend_choice` takes them, the LoRA config of the
    policy or None) before TRL loads it."""
    if isinstance(model, str):
        path, lora = model, peft_config
        quantization = quantization_config or (args.model_init_kwargs or {}).get("quantization_config")
    else:
        path, lora = model.name_or_path, peft_config
        if lora is None and hasattr(model, "peft_config"):  # a PeftModel: continuing an adapter
            lora = model.peft_config[model.active_adapter]
        quantization = getattr(model.config, "quantization_config", None)
    if quantization is not None and not isinstance(quantization, dict):
        quantization = quantization.to_dict()
    quantization = quantization or {}
    if not isinstance(model, str):  # what was loaded, whatever the config says
        quantization = {**quantization, "load_in_4bit": bool(getattr(model, "is_loaded_in_4bit", False)),
                        "load_in_8bit": bool(getattr(model, "is_loaded_in_8bit", False))}
    four_bit = bool(quantization.get("load_in_4bit"))
    # transformers' `BitsAndBytesConfig` defaults where a key is missing (fp4, no double quantization)
    return path, {"load_in_4bit": four_bit, "load_in_8bit": bool(quantization.get("load_in_8bit")),
                  "bnb_4bit_quant_type": quantization.get("bnb_4bit_quant_type") or "fp4",
                  "use_bnb_nested_quant": bool(quantization.get("bnb_4bit_use_double_quant", False))}, lora


def vllm_generation_choice(model: Any, args: Any, peft_config: Any = None, quantization_config: Any = None, *,
                           this_machine: bool = True) -> tuple[str, str | None]:
    """How a trainer with ``args.use_vllm`` generates here, and why not with vLLM when it cannot: the trainer and the
    pipeline's preflight both ask this (``this_machine=False``: for another card, this machine's lacks left out).

    ``"adapter"``: vLLM in colocate mode on the frozen base (4-bit where the policy's is), the LoRA adapter pushed
    unmerged; ``"trl"``: TRL's own vLLM path (full weights, or LoRA merged into a 16-bit base); ``"transformers"``:
    vLLM cannot serve this policy here, the reason says why.
    """
    from ..data.generation import vllm_backend_choice, vllm_base_reason

    path, quantization, lora = _policy_facts(model, args, peft_config, quantization_config)
    four_bit = quantization["load_in_4bit"]
    if args.vllm_mode != "colocate":
        reason = vllm_base_reason(**quantization)
        if reason:
            return "transformers", reason
        if four_bit:
            return "transformers", ("TRL's vLLM server mode pushes the adapter merged into full weights, which a "
                                    "4-bit base cannot take; trl-r1 pushes the adapter alone in vllm_mode: colocate")
        return "trl", None
    backend, reason = vllm_backend_choice(path, **quantization, this_machine=this_machine)
    if backend == "transformers":
        return "transformers", reason
    if lora is None:
        return "trl", None
    unservable = lora_unservable_reason(lora)
    if args.vllm_lora_sync == "merge" or unservable:
        if four_bit:
            return "transformers", unservable or ("vllm_lora_sync: merge pushes the adapter merged into full "
                                                  "weights, which a 4-bit base cannot take")
        if unservable:
            logger.warning("vLLM gets the adapter merged into the base after each step (TRL's push): %s", unservable)
        return "trl", None
    if os.environ.get("ACCELERATE_USE_FSDP", "").lower() in ("1", "true"):
        if four_bit:
            return "transformers", "pushing the adapter alone under FSDP is not implemented (DDP and ZeRO are)"
        return "trl", None
    return "adapter", None


@contextmanager
def _swapped(module: Any, name: str, value: Any):
    """``module.<name>`` is ``value`` inside the block (TRL reads these names when it builds its vLLM engine)."""
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


class _SeededLLM:
    """`vllm.LLM` seeded from the run's seed: TRL seeds a colocated engine with the rank alone, so runs with
    different seeds would share vLLM's sampling stream. The rank offset stays (one stream per tensor-parallel
    group, as TRL keeps it)."""

    def __init__(self, start_engine: Any, run_seed: int):
        self.start_engine, self.run_seed = start_engine, run_seed

    def __call__(self, **kwargs):
        return self.start_engine(**{**kwargs, "seed": engine_seed(self.run_seed, kwargs.get("seed") or 0)})


def engine_seed(run_seed: int, rank_seed: int) -> int:
    """The colocated engine's seed: the run's seed, then TRL's per-rank offset.

    >>> engine_seed(42, 1)
    420001
    """
    return run_seed * 10_000 + rank_seed


def _seeded_engines(config: Any):
    """The block in which TRL starts a colocated vLLM engine seeded from ``config.seed``."""
    if config is None or not config.use_vllm or config.vllm_mode != "colocate":
        return nullcontext()
    import trl.generation.vllm_generation as vllm_generation

    return _swapped(vllm_generation, "LLM", _SeededLLM(vllm_generation.LLM, config.seed))


class _AdapterServingLLM:
    """TRL's handle on the engine (`VLLMGeneration.llm`): every generation uses the adapter version being served,
    and sleep keeps the frozen base (level 1: offloaded to CPU memory and back; level 2 would discard it, and only
    the adapter is ever pushed again)."""

    def __init__(self, llm: Any, slot: Any):
        self._llm, self.slot = llm, slot

    def generate(self, *args, **kwargs):
        if kwargs.get("lora_request") is None:
            if self.slot.request is None:
                raise RuntimeError("vLLM has no adapter yet: sync_weights() pushes it before the first generation")
            kwargs["lora_request"] = self.slot.request
        return self._llm.generate(*args, **kwargs)

    def sleep(self, level: int = 1, **kwargs):
        return self._llm.sleep(level=1, **kwargs)

    def __getattr__(self, name: str):
        if name == "_llm":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self._llm, name)


class AdapterSyncVLLMGeneration(VLLMGeneration):
    """TRL's colocated `VLLMGeneration` for a LoRA policy, with the adapter pushed unmerged after each step.

    The engine starts on the policy's frozen base (TRL picks `quantization="bitsandbytes"` for a 4-bit one) with
    LoRA enabled; `sync_weights` gathers the adapter (a collective under ZeRO-3, as TRL's push), writes it to
    tmpfs and serves it under a fresh id (`VLLMAdapterSlot`). ``adapter_slot`` holds the version being served
    and ``last_push_seconds`` the newest push's duration.
    """

    def _init_vllm(self):
        import trl.generation.vllm_generation as vllm_generation

        from ..data.generation import VLLMAdapterSlot, vllm_lora_rank

        rank = lora_max_rank(self.model.peft_config[self.model.active_adapter])
        start_engine = vllm_generation.LLM

        def start(**kwargs):
            llm = start_engine(**kwargs, enable_lora=True, max_lora_rank=vllm_lora_rank(rank), max_loras=1)
            return _AdapterServingLLM(llm, VLLMAdapterSlot(llm))

        with _swapped(vllm_generation, "LLM", start):
            super()._init_vllm()
        self.adapter_slot = self.llm.slot
        self.last_push_seconds = 0.0

    def sync_weights(self):
        from peft import get_peft_model_state_dict
        from trl.generation.vllm_generation import empty_cache

        began = time.perf_counter()
        if self.enable_sleep_mode:  # the base's memory back on the device before the adapter joins it
            empty_cache()
            self.llm.wake_up(tags=["weights"])
            self._llm_weights_sleeping = False
        model, adapter = self.model, self.model.active_adapter
        lora_params = [p for n, p in model.named_parameters() if "lora_" in n]
        with self._dist.gather_params(lora_params):
            # embedding layers are never pushed (`lora_unservable_reason`); PEFT's "auto" would ask the Hub (or
            # re-read the base's config.json) on every push to find out
            tensors = get_peft_model_state_dict(model, adapter_name=adapter, save_embedding_layers=False)
            self.adapter_slot.push(tensors, model.peft_config[adapter])
        self.llm.reset_prefix_cache()
        self.last_push_seconds = time.perf_counter() - began


# ----- generation without vLLM: a merged copy of the policy ----------------------------------------------------------


def train_prompt_lengths(dataset: Any, processing_class: Any) -> list[int | None] | None:
    """Each training prompt's length in tokens as TRL renders it, in one tokenizing pass at the trainer's build
    (`data.scan.dataset_prompt_lengths`); the over-budget skip and the fast path's prompt budget both read it. None
    where there is nothing to measure (an iterable dataset, no 'prompt' column, no tokenizer)."""
    from ..data.scan import dataset_prompt_lengths

    tokenizer = getattr(processing_class, "tokenizer", processing_class)
    if tokenizer is None or not hasattr(dataset, "select") or "prompt" not in (dataset.column_names or []):
        return None
    return dataset_prompt_lengths(dataset, tokenizer, desc="training prompts: lengths")


def longest_train_prompt(trainer: Any) -> int | None:
    """The longest training prompt in tokens (`train_prompt_lengths`), None when unmeasured."""
    lengths = [n for n in (getattr(trainer, "train_prompt_lengths", None) or ()) if n is not None]
    return max(lengths) if lengths else None


def fast_generation_prompt_budget(trainer: Any) -> int:
    """The rl stage's prompt budget for its decoder: ``fast_generation_max_prompt_length``, or the training data's
    longest prompt rounded up when shorter (`fast_prompt_budget`), so the static cache holds what the data needs."""
    from ..data.fast_generation import fast_prompt_budget

    return fast_prompt_budget(trainer.args.fast_generation_max_prompt_length, longest_train_prompt(trainer))


def rl_step_figures(trainer: Any) -> tuple[ModelShape, GRPOSettings]:
    """The memory model's figures of this trainer's step (`trainers.step_memory`), as the dry run takes them from
    the recipe (`pipeline.preflight.stage_peak`): the policy's shape, its LoRA rank and 4-bit base, TRL's generation
    batch, the completion length, the data's longest prompt (the model's default, 512, where unmeasured) and the
    fast path's prompt budget."""
    from .step_memory import GRPOSettings, ModelShape

    policy = trainer.accelerator.unwrap_model(trainer.model)
    base = policy.get_base_model() if hasattr(policy, "get_base_model") else policy
    args = trainer.args
    longest = longest_train_prompt(trainer)
    settings = GRPOSettings(
        max_completion_length=trainer.max_completion_length,
        per_device_train_batch_size=args.per_device_train_batch_size,
        gradient_accumulation_steps=args.steps_per_generation,
        lora_r=lora_max_rank(policy.peft_config[policy.active_adapter]),
        load_in_4bit=bool(getattr(base, "is_loaded_in_4bit", False)),
        gradient_checkpointing=bool(args.gradient_checkpointing),
        fast_generation_prompt_length=fast_generation_prompt_budget(trainer))
    if longest is not None:
        settings = dataclasses.replace(settings, max_prompt_length=longest)
    return ModelShape.from_model_config(model_name(base), base.config), settings


def fast_generation_choice(trainer: Any, card_gb: float | None = None) -> tuple[bool, str]:
    """Whether TRL's transformers generation runs on a merged copy of the policy (`fast_generation`), and why.

    ``auto`` decides on a card (this process's GPU, or a `card_gb` one) by the dry run's own rule,
    `step_memory.fast_generation_fits` on `rl_step_figures`: the step's peak with the copy, its refresh state, the
    static cache at the prompt budget and the graph pool held through the training step, within 90 % of the card."""
    from ..data.fast_generation import merged_copy_unsupported_reason, unsupported_settings
    from .step_memory import USABLE_FRACTION, fast_generation_fits

    setting = getattr(trainer.args, "fast_generation", "off")
    if setting == "off":
        return False, "fast_generation: off"
    if trainer.use_vllm or trainer.use_transformers_continuous_batching:
        return False, "generation runs on vLLM or transformers' continuous batching"
    policy = trainer.accelerator.unwrap_model(trainer.model)
    reason = merged_copy_unsupported_reason(policy, compiled=next(policy.parameters()).device.type == "cuda")
    settings = unsupported_settings(trainer.generation_config) if hasattr(trainer, "generation_config") else {}
    if reason is None and settings:  # refused now, not at the first generation after the model loaded
        reason = f"the compiled decoder does not implement the generation settings {settings}"
    if reason is None and (trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled):
        reason = "a sharded policy (DeepSpeed / FSDP) is not copied"
    if reason is None and setting == "auto":
        device = trainer.accelerator.device
        if card_gb is None and device.type != "cuda":
            reason = ("auto: on CPU the copy is no faster than plain generate past a tiny model, compiled or not "
                      "(docs/data.md, benchmarks/generation.py)")
        elif not getattr(policy, "peft_config", None):
            reason = "auto: the memory model covers LoRA and QLoRA policies, not a full fine-tune (set on or off)"
        else:
            card_gb = card_gb or torch.cuda.mem_get_info(device)[1] / 1e9
            fits, estimate = fast_generation_fits(*rl_step_figures(trainer), card_gb)
            if not fits:
                reason = (f"auto: with the merged copy ({estimate.policy_copy / 2**30:.1f} GiB) and its decoder "
                          f"({estimate.decoder / 2**30:.1f} GiB) held through the training step, the memory model "
                          f"puts the step's peak at {estimate.peak / 1e9:.1f} GB, over {USABLE_FRACTION:.0%} of the "
                          f"{card_gb:.0f} GB card (the dry run's rule, step_memory.fast_generation_fits)")
    if reason:
        if setting == "on":
            raise ValueError(f"fast_generation: on, but the policy cannot generate from a merged copy: {reason}; "
                             "set fast_generation: off")
        return False, reason
    budget, key = fast_generation_prompt_budget(trainer), trainer.args.fast_generation_max_prompt_length
    source = f"fast_generation_max_prompt_length {key}" + (", the data's longest prompt rounded up" if budget < key
                                                           else "")
    return True, (f"fast_generation: a merged copy of the policy, one decoder of {budget} prompt tokens ({source}) "
                  "+ the completion, static KV cache") + (
        " compiled under CUDA graphs" if trainer.accelerator.device.type == "cuda" else "")


class FastPolicyGeneration:
    """What TRL's `unwrap_model_for_generation` yields under `fast_generation`: an object whose `generate`
    decodes from the merged copy of the policy, refreshed once per optimizer step (lazily, at the next
    generation). The copy is built at the first generation, where the policy is on its device."""

    def __init__(self, trainer: Any):
        self.trainer = trainer
        self.policy_copy: Any = None
        self.refreshed_at_step = -1
        self.refresh_seconds = 0.0

    @contextmanager
    def unwrap(self, *args, **kwargs):
        """Stands in for `unwrap_model_for_generation(model, accelerator, ...)`."""
        yield self

    def generate(self, input_ids: Tensor, attention_mask: Tensor, generation_config: Any, **kwargs) -> Tensor:
        from ..data.fast_generation import MergedPolicy

        if kwargs:
            raise ValueError(f"fast_generation does not pass {sorted(kwargs)} to the copy (multimodal inputs)")
        began, step = time.perf_counter(), self.trainer.state.global_step
        if self.policy_copy is None:  # one decoder for the stage: TRL's generation batch, fixed lengths
            args = self.trainer.args
            self.policy_copy = MergedPolicy(self.trainer.accelerator.unwrap_model(self.trainer.model),
                                            prompt_budget=fast_generation_prompt_budget(self.trainer))
            self.policy_copy.start_stage(batch_size=args.per_device_train_batch_size * args.steps_per_generation,
                                         max_new_tokens=self.trainer.max_completion_length)
            self.refreshed_at_step = step
        elif step != self.refreshed_at_step:
            self.policy_copy.refresh()
            self.refreshed_at_step = step
        self.refresh_seconds = time.perf_counter() - began
        return self.policy_copy.generate(input_ids, attention_mask, generation_config)


def shutdown_trainer_vllm(trainer: Any) -> None:
    """Shut a finished trainer's colocated vLLM engine down (TRL's `vllm_generation.llm`; TRL never does) and drop
    it, with the adapter versions it served, so that the next stage's engine finds the memory free
    (`data.generation.shutdown_vllm_engine`). Nothing for a trainer without one."""
    from ..data.generation import shutdown_vllm_engine

    generation = getattr(trainer, "vllm_generation", None)
    llm = getattr(generation, "llm", None)  # server mode has a client, no engine
    if llm is None:
        return
    if isinstance(llm, _AdapterServingLLM):
        llm.slot.close()
        llm = llm._llm
    shutdown_vllm_engine(llm)
    generation.llm = None


def render_prefilled_prompts(dataset: Any, processing_class: Any, template_kwargs: dict | None = None) -> Any:
    """`dataset` with its conversational prompts rendered to text when one ends with an assistant message (a
    prefill such as ``<think>``, which the model must continue); any other dataset as it is.

    TRL's own rendering (`trl.data_utils.apply_chat_template`) continues a final assistant message
    (``continue_final_message``), but TRL 1.16's `GRPOTrainer` tokenizes conversational prompts with
    ``add_generation_prompt=True`` whatever their last role, so the model would start a fresh assistant turn after
    the prefill. Rendered text is tokenized as written, and the rewards see a prompt ending with the prefill.
    Every row is rendered (one column holds one type); rows ending with a user turn get the generation prompt.
    """
    if dataset is None or "prompt" not in (dataset.column_names or []):
        return dataset
    first = next(iter(dataset))["prompt"]
    if not (isinstance(first, list) and first and isinstance(first[-1], dict) and first[-1].get("role") == "assistant"):
        return dataset
    from trl.data_utils import maybe_apply_chat_template

    logger.info("GRPO prompts end with an assistant message: rendered to text with the chat template, continuing "
                "that message (TRL 1.16's GRPOTrainer would open a new assistant turn after it)")
    return dataset.map(lambda row: {"prompt": maybe_apply_chat_template({"prompt": row["prompt"]}, processing_class,
                                                                        **(template_kwargs or {}))["prompt"]})


class GRPOSeam(GRPOTrainer):
    """`trl.GRPOTrainer` with public hooks in place of its private methods.

    Subclasses override only the hooks (`on_rollout`, `loss_context`, `combine_loss`, `checkpoint_state`,
    `load_checkpoint_state`, `save_extra_files`), declare their model card (`model_card_tags`, `model_card_name`,
    `model_card_paper`) and use the services below; they never touch a private TRL member.
    """

    # ----- model card: what TRL writes into a saved model's README (TRL reads private class attributes) -------------

    model_card_tags: ClassVar[list[str] | None] = None
    model_card_name: ClassVar[str | None] = None
    model_card_paper: ClassVar[dict[str, str] | None] = None

    def __init__(self, *args, **kwargs):
        bound = inspect.signature(GRPOTrainer.__init__).bind(self, *args, **kwargs).arguments
        config = bound.get("args")
        if bound.get("train_dataset") is not None:
            check_train_dataset(bound["train_dataset"])
        #: "adapter" (vLLM, the adapter pushed unmerged), "trl" (TRL's vLLM push) or "transformers"
        self.generation_backend, self.generation_fallback_reason = "transformers", None
        if config is not None and config.use_vllm:
            self.generation_backend, self.generation_fallback_reason = vllm_generation_choice(
                bound["model"], config, bound.get("peft_config"), bound.get("quantization_config"))
            if self.generation_backend == "transformers":  # never silent: say why, and what generates instead
                if config.vllm_fallback != "transformers":  # stop before any model loads, naming the key
                    raise ValueError(f"use_vllm=True, but vLLM cannot generate for this policy here: "
                                     f"{self.generation_fallback_reason}. Fix that, or set "
                                     "vllm_fallback='transformers' to generate with transformers (much slower)")
                logger.warning("%s: generating with transformers, not vLLM: %s", type(self).__name__,
                               self.generation_fallback_reason)
                config.use_vllm = False
        import trl.trainer.grpo_trainer as grpo_trainer

        swap = (_swapped(grpo_trainer, "VLLMGeneration", AdapterSyncVLLMGeneration)
                if self.generation_backend == "adapter" else nullcontext())
        with swap, _seeded_engines(config):
            super().__init__(*args, **kwargs)
        self.reward_funcs = [
            reward if isinstance(reward, torch.nn.Module) or is_async_callable(reward) else CheckedReward(reward, name)
            for reward, name in zip(self.reward_funcs, self.reward_func_names, strict=True)
        ]
        self.train_dataset = render_prefilled_prompts(self.train_dataset, self.processing_class,
                                                      self.chat_template_kwargs)
        #: each training prompt's length in tokens, from one pass (`train_prompt_lengths`): the over-budget skip and
        #: the fast path's prompt budget (taken over the prompts that are kept) both read it
        self.train_dataset, self.train_prompt_lengths = without_long_prompts(
            type(self).__name__, self.train_dataset, train_prompt_lengths(self.train_dataset, self.processing_class),
            self.args, getattr(self.model.config, "max_position_embeddings", None))
        #: whether TRL's transformers generation runs on a merged copy of the policy, and why (logged)
        self.fast_generation, self.fast_generation_reason = fast_generation_choice(self)
        self.fast_policy_generation = FastPolicyGeneration(self) if self.fast_generation else None
        if not self.use_vllm:
            logger.info("%s generates %s: %s", type(self).__name__,
                        "from a merged copy" if self.fast_generation else "with TRL's generate on the policy",
                        self.fast_generation_reason)
        if isinstance(self.eval_dataset, dict):
            self.eval_dataset = {k: render_prefilled_prompts(v, self.processing_class, self.chat_template_kwargs)
                                 for k, v in self.eval_dataset.items()}
        else:
            self.eval_dataset = render_prefilled_prompts(self.eval_dataset, self.processing_class,
                                                         self.chat_template_kwargs)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        declared = vars(cls)
        for public, private in (("model_card_tags", "_tag_names"), ("model_card_name", "_name"),
                                ("model_card_paper", "_paper")):
            if declared.get(public) is not None:
                setattr(cls, private, declared[public])

    # ----- hooks ------------------------------------------------------------------------------------------------

    def on_rollout(self, batch: dict, rewards_per_func: Tensor) -> dict:
        """Post-process a generated and scored batch (TRL's returned dict). ``rewards_per_func``: ``(N, F)``
        rewards of every process's completions, NaN where a reward function returned None."""
        return batch

    def loss_context(self, inputs: dict):
        """A context entered around TRL's loss (its policy forward runs inside), e.g. to collect critic values."""
        return nullcontext()

    def combine_loss(self, policy_loss: Tensor, inputs: dict, policy_logps: Tensor) -> Tensor:
        """The loss to optimise, from TRL's ``policy_loss`` (already scaled for gradient accumulation) and the live
        log-probs ``policy_logps`` ``(B, T)`` of its forward."""
        return policy_loss

    def checkpoint_state(self) -> dict[str, Any]:
        """JSON-serialisable state saved with each checkpoint (``trl_r1_state.json``)."""
        return {}

    def load_checkpoint_state(self, state: dict[str, Any], checkpoint: str) -> None:
        """Restore what `checkpoint_state` saved (``state`` is empty for a checkpoint without the file)."""

    def save_extra_files(self, output_dir: str) -> None:
        """Write the trainer's own files next to a saved model (the final save and every checkpoint), on the
        process that saves."""

    # ----- services ---------------------------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        return "train" if self.model.training else "eval"

    @property
    def group_size(self) -> int:
        return self.num_generations if self.mode == "train" else self.num_generations_eval

    @property
    def micro_batch_size(self) -> int:
        return self.args.per_device_train_batch_size if self.mode == "train" else self.args.per_device_eval_batch_size

    @property
    def is_vision_model(self) -> bool:
        return self._is_vlm

    @property
    def ratio_clip_range(self) -> tuple[float, float]:
        """The policy ratio's clip range ``(1 - epsilon_low, 1 + epsilon_high)``."""
        return 1 - self.epsilon_low, 1 + self.epsilon_high

    @property
    def accumulation_steps(self) -> int:
        """What TRL divides each micro-batch loss by (it scales for gradient accumulation itself)."""
        return self.current_gradient_accumulation_steps if self.mode == "train" else 1

    def take_over_kl(self) -> None:
        """Switch off TRL's own KL (reference forward in the rollout, k3 term in the loss) for good.

        Call once, after TRL's ``__init__`` built the reference for a non-zero ``args.beta``; trl_r1 then computes
        the reference log-probs (`reference_logps`) and the KL itself.
        """
        self.beta = 0.0

    def weighted_scores(self, rewards_per_func: Tensor) -> Tensor:
        """One score per completion as TRL combines reward functions (``sum_then_normalize``): the weighted nansum,
        NaN where every reward function returned None (unscorable)."""
        scores = (rewards_per_func * self.reward_weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
        return scores.masked_fill(torch.isnan(rewards_per_func).all(dim=1), float("nan"))

    def log_metric(self, name: str, value: float) -> None:
        """Add one value to TRL's metric ``name`` (averaged per logging step)."""
        self._metrics[self.mode][name].append(value)

    def replace_logged_advantages(self, advantages: list[float]) -> None:
        """Show ``advantages`` (one per completion, all processes) in the completions table instead of GRPO's."""
        logged = self._logs["advantages"]
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(advantages)

    def policy_forward(self, model, batch: dict) -> Tensor:
        """Per-token log-probs ``(B, T)`` of the batch's completions under ``model``, in micro-batches."""
        logps, _, _ = self._get_per_token_logps_and_entropies(
            model,
            torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1),
            torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1),
            batch["completion_ids"].size(1),
            batch_size=self.micro_batch_size,
        )
        return logps

    @torch.no_grad()
    def sampling_logps(self, batch: dict) -> Tensor:
        """Log-probs of the policy that sampled the batch: TRL's ``old_per_token_logps``, else a forward pass."""
        old = batch.get("old_per_token_logps")
        if old is not None:
            return old
        with disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            return self.policy_forward(self.model, batch)

    @torch.no_grad()
    def reference_logps(self, batch: dict) -> Tensor:
        """Log-probs under the reference, as TRL gets them: its ``ref_model``, or under PEFT the ``"ref"`` adapter
        (a frozen copy of a pre-trained adapter) or the base with adapters disabled."""
        if self.ref_model is not None:
            model, adapter = self.ref_model, nullcontext()
        else:
            model = self.model
            policy = self.accelerator.unwrap_model(model)
            adapter = self.use_adapter("ref" if "ref" in policy.peft_config else None)
        with adapter, disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            return self.policy_forward(model, batch)

    @contextmanager
    def use_adapter(self, adapter_name: str | None):
        """Run with one PEFT adapter active (None: all disabled)."""
        with use_adapter(self.accelerator.unwrap_model(self.model), adapter_name):
            yield

    def gradient_checkpointing_off(self):
        """Context: the policy without gradient checkpointing."""
        return disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs)

    def importance_log_ratio(self, logps: Tensor, inputs: dict) -> Tensor:
        """``log(pi / pi_old)`` as TRL's loss weights tokens: per token ``(B, T)``, or per sequence ``(B, 1)`` (GSPO)."""
        old = inputs.get("old_per_token_logps")
        log_ratio = logps - (logps.detach() if old is None else old)
        if self.importance_sampling_level == "sequence":
            mask = completion_mask(inputs)
            log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
        return log_ratio

    def aggregate_like_loss(self, per_token: Tensor, inputs: dict) -> Tensor:
        """Reduce a ``(B, T)`` term exactly as TRL 1.16's `_compute_loss` reduces its per-token loss.

        TRL has no hook to change its KL term, and the reduction depends on ``loss_type``, gradient accumulation
        and the generation batch; this restates it (pinned by the parity tests for every loss type).
        """
        mask = completion_mask(inputs)
        if self.loss_type in ("grpo", "sapo"):
            return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / self.accumulation_steps
        if self.loss_type == "bnpo":
            return (per_token * mask).sum() / mask.sum().clamp(min=1.0) / self.accumulation_steps
        if self.loss_type == "dr_grpo":
            return (per_token * mask).sum() / (per_token.size(0) * self.max_completion_length) / self.accumulation_steps
        if self.loss_type == "luspo":
            return (per_token * mask).sum(-1).mean() / self.accumulation_steps
        # cispo, dapo, vespo: over the valid tokens of the whole generation batch
        normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
        if self.mode == "train":
            normalizer = normalizer * self.current_gradient_accumulation_steps / self.args.steps_per_generation
        return (per_token * mask).sum() / normalizer

    def gather_tokens(self, tensor: Tensor) -> Tensor:
        """A local ``(B, T)`` tensor of every process, zero-padded to a common T: ``(N, T_max)``."""
        return self.accelerator.gather(self.accelerator.pad_across_processes(tensor, dim=1))

    def local_rows(self, num_local: int) -> slice:
        """This process's rows in a tensor gathered from all processes."""
        start = self.accelerator.process_index * num_local
        return slice(start, start + num_local)

    def train(self, *args, **kwargs):
        check_enough_prompts(self.train_dataset, self.args.generation_batch_size // self.args.num_generations)
        return super().train(*args, **kwargs)

    # ----- TRL's private methods, routed to the hooks -------------------------------------------------------------

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        # TRL turns the rewards straight into GRPO advantages; keep them for `on_rollout`.
        self._rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        check_reward_values(self._rewards_per_func, self.reward_func_names, self.args.computes_own_advantages)
        return self._rewards_per_func

    def _generate_and_score_completions(self, inputs):
        batch = super()._generate_and_score_completions(inputs)
        if "importance_sampling_ratio" in batch:  # TRL logs the ratio's range, not what its mode drops
            share = importance_sampling_masked_share(
                batch["old_per_token_logps"], batch["sampling_per_token_logps"], completion_mask(batch),
                self.args.vllm_importance_sampling_mode, self.args.vllm_importance_sampling_clip_min,
                self.args.vllm_importance_sampling_clip_max)
            self.log_metric("sampling/importance_sampling_masked_share",
                            self.accelerator.gather(share.reshape(1)).mean().item())
        return self.on_rollout(batch, self._rewards_per_func)

    def _generate_single_turn(self, *args, **kwargs):
        if self.fast_policy_generation is None or self.use_vllm or self.use_transformers_continuous_batching:
            return super()._generate_single_turn(*args, **kwargs)
        import trl.trainer.grpo_trainer as grpo_trainer

        with _swapped(grpo_trainer, "unwrap_model_for_generation", self.fast_policy_generation.unwrap):
            return super()._generate_single_turn(*args, **kwargs)

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        result = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        self._latest_logps = result[0]  # in `_compute_loss`, TRL makes exactly one call: the live policy forward
        return result

    def _compute_loss(self, model, inputs):
        with self.loss_context(inputs):
            loss = super()._compute_loss(model, inputs)
        return self.combine_loss(loss, inputs, self._latest_logps)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False):
        super().save_model(output_dir, _internal_call)
        if self.args.should_save:
            self.save_extra_files(output_dir or self.args.output_dir)

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        state = self.checkpoint_state()
        if state and self.args.should_save:
            folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
            with open(os.path.join(folder, STATE_FILE), "w") as f:
                json.dump(state, f)

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        # Trainer reloads a second PEFT adapter (e.g. a critic's) frozen: what was trainable stays trainable.
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        for parameter in trainable:
            parameter.requires_grad_(True)

    def _issue_warnings_after_load(self, load_result):
        # The trainer restores its unsaved submodules (a value head) itself: they are not missing from a checkpoint.
        # What is left is judged as Trainer judges it: exactly the keys left out on save means tied weights.
        unsaved = unsaved_keys(self.model)
        load_result.missing_keys[:] = [key for key in load_result.missing_keys if key not in unsaved]
        left_out = set(self.model._keys_to_ignore_on_save or ()) - unsaved
        if load_result.missing_keys and set(load_result.missing_keys) == left_out:
            self.model.tie_weights()
            load_result.missing_keys.clear()
        super()._issue_warnings_after_load(load_result)

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        path = os.path.join(checkpoint, STATE_FILE)
        state = {}
        if os.path.isfile(path):
            with open(path) as f:
                state = json.load(f)
        self.load_checkpoint_state(state, checkpoint)


@contextmanager
def planned_world_size(processes: int) -> Iterator[None]:
    """Within it, TRL's and transformers' configs see `processes` as their world size: they check a batch against
    `TrainingArguments.world_size` (the processes running now), and a dry run for `--num_processes N` runs in one
    process but must check the batch of N (`generation_batch_size` divisible by `num_generations`)."""
    from transformers import TrainingArguments

    if processes <= 1:
        yield
        return
    running = TrainingArguments.__dict__["world_size"]
    TrainingArguments.world_size = property(lambda self: processes)
    try:
        yield
    finally:
        TrainingArguments.world_size = running
