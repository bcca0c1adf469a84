"""What both trainers' configs share: the KL options (estimator, adaptive target and horizon; one definition, one
check) and how the LoRA policy reaches TRL's colocated vLLM."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

from ..algorithms import KL_ESTIMATORS
from ..data.generation import VLLM_FALLBACKS, vllm_fallback_field

KL_HORIZON_DEFAULT = 10000


def kl_estimator_field(default: str, placement: str):
    """The ``kl_estimator`` field, with ``default`` and where the KL goes (``placement``) in its help."""
    return field(
        default=default,
        metadata={
            "help": f"Per-token estimator of KL(policy || reference) {placement} (Schulman 2020, Approximating KL "
            "Divergence). With x = logp - ref_logp: `k1` = x, `k2` = x^2/2, `k3` = exp(-x) + x - 1 (TRL's), "
            "`low_var_kl` = k3 clamped to [-10, 10] (verl), `abs` = |x|; `k1+`, `k3+`, `low_var_kl+`: the value of "
            "the base estimator with the gradient of k2 (straight-through, verl). In the loss, with TRL's "
            "`use_bias_correction_kl=True`, k2, k3, low_var_kl and the `+` ones have one and the same gradient "
            "(they train identically; derivation in docs/algorithms.md) and only k1 and abs change the updates. "
            f"Logged: `kl` is always k3 (as TRL logs it), the estimator's value is `kl/<estimator>`. Default `{default}`.",
            "choices": list(KL_ESTIMATORS.choices()),
        },
    )


UNTRAINABLE_WHY = {  # what a user is told instead of the bound, where the bound alone does not say why
    "beta": "must be 0 (no KL penalty) or above",
    "max_completion_length": "must be at least 1 token",
    "temperature": "makes every completion of a prompt the same, so every advantage is 0 and nothing is learned; "
                   "sample with a temperature above 0 (R1: 0.6 to 1.0)",
}


def check_trainable(config: object, positive: tuple[str, ...] = (), non_negative: tuple[str, ...] = ()) -> None:
    """Fail fast, naming the field, on a value no run can train with (written so that NaN fails too; TRL checks
    none of these)."""
    for name in positive:
        value = getattr(config, name)
        if value is not None and not value > 0:
            raise ValueError(f"key {name!r}: {value} {UNTRAINABLE_WHY.get(name, 'must be > 0')}.")
    for name in non_negative:
        value = getattr(config, name)
        if value is not None and not value >= 0:
            raise ValueError(f"key {name!r}: {value} {UNTRAINABLE_WHY.get(name, 'must be >= 0')}.")


@dataclass
class KLConfigMixin:
    """``kl_target`` / ``kl_horizon`` of the adaptive KL coefficient, and the checks shared by both configs.

    A config using it declares ``kl_estimator`` (with `kl_estimator_field`) and calls `check_kl` with its
    initial coefficient in ``__post_init__``.
    """

    kl_target: float | None = field(
        default=None,
        metadata={
            "help": "Target mean per-token KL of the adaptive KL coefficient (Ziegler et al. 2019, Fine-Tuning "
            "Language Models from Human Preferences; verl uses 0.1): coef <- coef * (1 + clip(KL / target - 1, "
            "-0.2, 0.2) * n / horizon) after each optimizer step, n = completions in the step. The configured "
            "coefficient is the initial value and must be > 0. Default None: the coefficient stays fixed.",
        },
    )
    kl_horizon: int = field(
        default=KL_HORIZON_DEFAULT,
        metadata={
            "help": "Horizon of the adaptive KL controller, in completions: the coefficient moves by at most 20% per "
            "`kl_horizon` completions. Default 10000 (Ziegler et al. 2019, verl). Used only with `kl_target`.",
        },
    )

    def check_kl(self, coef_name: str, coef: float, default_estimator: str) -> None:
        """Fail fast on an unknown estimator, on a KL option without a KL coefficient, or on an adaptive target
        without a starting coefficient; warn about a horizon without a target."""
        if self.kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"kl_estimator={self.kl_estimator!r} is not one of {list(KL_ESTIMATORS.choices())}.")
        if coef == 0.0 and self.kl_estimator != default_estimator:
            raise ValueError(
                f"kl_estimator={self.kl_estimator!r} does nothing with {coef_name}=0 (no KL term is computed): set "
                f"{coef_name} > 0 (e.g. 0.001) or leave kl_estimator unset."
            )
        if self.kl_target is None and self.kl_horizon != KL_HORIZON_DEFAULT:
            warnings.warn(
                f"kl_horizon={self.kl_horizon} is read only by the adaptive coefficient: it changes nothing without "
                "kl_target.",
                stacklevel=4,
            )
        if self.kl_target is not None:
            if self.kl_target <= 0 or self.kl_horizon <= 0:
                raise ValueError(f"kl_target and kl_horizon must be > 0, got {self.kl_target}, {self.kl_horizon}.")
            if coef == 0.0:
                raise ValueError(
                    f"kl_target adapts the KL coefficient multiplicatively: {coef_name} must start above 0 "
                    f"(set {coef_name} > 0, e.g. 0.001)."
                )


def forget_derived_generation_batch(config) -> None:
    """Let ``dataclasses.replace`` rebuild a GRPO-based config: TRL's ``__post_init__`` fills
    ``generation_batch_size`` from ``steps_per_generation`` and then refuses the two together; a pair that agrees
    (batch x processes x steps) is what TRL derived, so the derived half is dropped and derived again."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    steps, batch = config.steps_per_generation, config.generation_batch_size
    if steps is not None and batch is not None and batch == config.per_device_train_batch_size * world_size * steps:
        config.generation_batch_size = None


VLLM_LORA_SYNC = ("auto", "merge")


@dataclass
class VLLMLoRASyncMixin:
    """How a LoRA policy reaches TRL's colocated vLLM engine after each optimizer step."""

    vllm_lora_sync: str = field(
        default="auto",
        metadata={
            "help": "With `use_vllm` in colocate mode and a LoRA policy: `auto` pushes only the adapter, unmerged "
            "(vLLM keeps the frozen base, 4-bit where the policy's is, and serves each new adapter version under a "
            "fresh id; the approach of unsloth, verl `lora.merge=False` and huggingface/trl#6007); `merge` keeps "
            "TRL 1.16's push of the adapter merged into full weights, which a 4-bit base cannot take. Default `auto`.",
            "choices": list(VLLM_LORA_SYNC),
        },
    )

    vllm_fallback: str = vllm_fallback_field("use_vllm: true")

    def check_vllm_lora_sync(self) -> None:
        if self.vllm_lora_sync not in VLLM_LORA_SYNC:
            raise ValueError(f"vllm_lora_sync={self.vllm_lora_sync!r} is not one of {list(VLLM_LORA_SYNC)}.")
        if self.vllm_fallback not in VLLM_FALLBACKS:
            raise ValueError(f"vllm_fallback={self.vllm_fallback!r} is not one of {list(VLLM_FALLBACKS)}.")


@dataclass
class FastGenerationMixin:
    """Whether generation without vLLM runs on a merged copy of the policy (`trl_r1.data.fast_generation`)."""

    fast_generation: str = field(
        default="auto",
        metadata={
            "help": "Generation without vLLM: `on` decodes from a copy of the policy with the LoRA adapter merged "
            "(a 4-bit base dequantized once, bf16 on a GPU; the adapted layers rewritten after each optimizer step) "
            "with a static KV cache compiled under CUDA graphs on a GPU; `off` keeps TRL's `generate` on the "
            "policy; `auto` (default) is `on` on a GPU where the step's peak with the copy, its cache and graph pool "
            "fits 90% of the card (trl_r1.trainers.step_memory.fast_generation_fits, the dry run's rule), else "
            "`off` (on CPU the compiled copy is slower than plain generate at SmolLM2's size and repays its compile only "
            "after thousands of decoding steps: docs/data.md).",
            "choices": ["auto", "on", "off"],
        },
    )

    fast_generation_max_prompt_length: int = field(
        default=512,
        metadata={
            "help": "The fast path's prompt budget in tokens: each stage's one compiled decoder holds this (or the "
            "training data's longest prompt rounded up to 64 tokens, when shorter) + `max_completion_length` tokens "
            "per sequence; a longer prompt is cut from the left (its end kept) and counted in a WARNING, and the "
            "dry run refuses a recipe where more than 5% of the prompts would be. Default 512, the memory model's "
            "figure. Plain `generate` (`fast_generation: off`) never cuts.",
        },
    )

    def check_fast_generation(self) -> None:
        from ..data.fast_generation import FAST_GENERATION

        if self.fast_generation not in FAST_GENERATION:
            raise ValueError(f"fast_generation={self.fast_generation!r} is not one of {list(FAST_GENERATION)}.")
        if self.fast_generation_max_prompt_length < 1:
            raise ValueError("fast_generation_max_prompt_length must be a positive number of tokens, got "
                             f"{self.fast_generation_max_prompt_length}.")
