"""Fast generation from a (Q)LoRA policy: a plain copy of it with the adapter merged, decoded with a static KV cache.

Why: `generate` on a bitsandbytes 4-bit base with a PEFT adapter is bound by launching ~2,000 small kernels per
decoding step from Python (156 ms per step for a 1.5B model on an H100, whatever the batch), and the stock stack
blocks the cure, CUDA graphs: transformers never compiles a bitsandbytes model, PEFT does not support its adapters
on bitsandbytes layers under `torch.compile`, TRL's GRPO sets ``disable_compile=True``.

`MergedPolicy` holds a plain transformers model (no quantizer, no PEFT) with the policy's weights: every 4-bit
linear dequantized once (`bitsandbytes.functional.dequantize_4bit`), the LoRA delta ``scale * B @ A`` added.
`refresh` rewrites only the adapted layers from the 4-bit base and the current adapter (never re-quantizing:
merging into 4-bit loses precision, huggingface/trl#3466), so after an optimizer step the copy serves the new
adapter. `generate` decodes the copy with a static KV cache, which transformers compiles under CUDA graphs
(`torch.compile`, mode ``reduce-overhead``) on a GPU; on a CPU transformers does not compile and the static cache
would run eager and slower than the dynamic cache, so the copy decodes with the dynamic cache there
(`decode_settings`, measured by ``benchmarks/generation.py``).

The copy costs ``parameters x 2`` bytes in bf16 (fp32 on CPU) plus the static cache of the whole batch at full
length (`copy_bytes`, `static_cache_bytes`; `trl_r1.pipeline.memory.generation_path` decides where it fits).
Sampler log-probs: none are returned (as TRL's own transformers path); TRL 1.16 applies its importance-sampling
correction only with vLLM, and the copy's per-token log-probs agree with the policy's to rounding
(``tests/test_fast_generation.py`` states the tolerance).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import GenerationConfig, PreTrainedModel

FAST_GENERATION = ("auto", "on", "off")
# prompts are left-padded to a multiple of this, so that a compiled decoder sees few distinct cache lengths
# (each new static-cache shape is a new CUDA graph)
PROMPT_PAD_MULTIPLE = 64


def _peft_layer_types() -> tuple[type, ...]:
    try:
        from peft.tuners.tuners_utils import BaseTunerLayer
    except ImportError:
        return ()
    return (BaseTunerLayer,)


def merged_copy_unsupported_reason(policy: Any) -> str | None:
    """Why `MergedPolicy` cannot copy this policy, or None: it copies a plain causal LM, or a PEFT LoRA on one (a
    bitsandbytes 4-bit base or a 16/32-bit one), with one active adapter."""
    config = getattr(policy, "peft_config", None)
    if config:
        adapters = policy.active_adapters if hasattr(policy, "active_adapters") else [policy.active_adapter]
        if len(adapters) != 1:
            return f"several active adapters ({adapters})"
        lora = config[adapters[0]]
        if str(getattr(lora, "peft_type", "")) not in ("LORA", "PeftType.LORA"):
            return f"the adapter is {getattr(lora, 'peft_type', type(lora).__name__)}, not LoRA"
        if getattr(lora, "use_dora", False):
            return "DoRA adapters are not merged by the copy"
        if getattr(lora, "modules_to_save", None):
            return f"the adapter trains modules_to_save ({lora.modules_to_save})"
        if getattr(lora, "bias", "none") != "none" or getattr(lora, "lora_bias", False):
            return "the adapter trains biases"
    base = policy.get_base_model() if hasattr(policy, "get_base_model") else policy
    if getattr(base, "is_loaded_in_8bit", False):
        return "the base is in bitsandbytes 8-bit"
    if getattr(getattr(base, "config", None), "vision_config", None) is not None:
        return "vision-language models are not copied"
    return None


def copy_bytes(num_params: int, dtype_bytes: int) -> int:
    """The copy's weights: every parameter in the generation dtype (bf16 on a GPU, fp32 on CPU)."""
    return num_params * dtype_bytes


def static_cache_bytes(sequences: int, length: int, num_layers: int, num_kv_heads: int, head_dim: int,
                       dtype_bytes: int) -> int:
    """A static KV cache of `sequences` x `length` tokens, allocated in full before the first step.

    >>> static_cache_bytes(8, 1024, 28, 2, 128, 2)  # Qwen2.5-1.5B, 8 sequences of 1024 tokens: 224 MiB
    234881024
    """
    return sequences * length * 2 * num_layers * num_kv_heads * head_dim * dtype_bytes


def decode_settings(device_type: str) -> dict[str, Any]:
    """`GenerationConfig` fields of the fast path on a device. On CUDA: a static KV cache, which transformers
    compiles (mode ``reduce-overhead``: CUDA graphs). On CPU nothing: transformers compiles only on accelerators,
    an eager static cache attends over its whole length every step (slower than the dynamic cache on CPU, measured
    by ``benchmarks/generation.py``), and the copy's gain there is dropping PEFT's and bitsandbytes' per-layer work.
    """
    if device_type != "cuda":
        return {}
    from transformers import CompileConfig

    return {"cache_implementation": "static", "disable_compile": False,
            "compile_config": CompileConfig(mode="reduce-overhead", fullgraph=False, dynamic=False)}


class MergedPolicy:
    """A plain model with the policy's weights, the LoRA delta merged, for generation.

    Args:
        policy: a causal LM, or a `PeftModel` with a LoRA adapter on one (bitsandbytes 4-bit or not).
        dtype: the copy's dtype; default bf16 on a GPU that has it, else float32.
    """

    def __init__(self, policy: Any, dtype: torch.dtype | None = None):
        import torch
        from transformers import AutoModelForCausalLM

        reason = merged_copy_unsupported_reason(policy)
        if reason:
            raise ValueError(f"the policy cannot be copied for fast generation: {reason}")
        self.policy = policy
        base = policy.get_base_model() if hasattr(policy, "get_base_model") else policy
        device = next(base.parameters()).device
        if dtype is None:
            dtype = torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
        config = copy.deepcopy(base.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        with torch.device("meta"):  # no random initialisation: every tensor is written below
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
        model.to_empty(device=device)
        self.model: PreTrainedModel = model.eval().requires_grad_(False)
        self._adapted: list[tuple[torch.Tensor, Any]] = []  # (the copy's weight, the policy's LoRA layer)
        self._copied: list[tuple[torch.Tensor, Any, str]] = []  # (the copy's tensor, the policy's module, name)
        tuner = _peft_layer_types()
        for name, target in [*model.named_parameters(), *model.named_buffers()]:
            path, _, attr = name.rpartition(".")
            source = base.get_submodule(path)
            if tuner and isinstance(source, tuner) and attr == "weight":
                self._adapted.append((target, source))
            else:
                self._copied.append((target, source.get_base_layer() if tuner and isinstance(source, tuner)
                                     else source, attr))
        self._all_trained = not getattr(policy, "peft_config", None)  # a full fine-tune changes every weight
        with torch.no_grad():
            model.tie_weights()
        if not self._all_trained:
            self._copy_all()  # the frozen weights, once
        self.refresh()
        self.model.generation_config = copy.deepcopy(base.generation_config)
        #: the `GenerationConfig` fields `generate` sets (`decode_settings` of the device)
        self.decode = decode_settings(device.type)

    @property
    def device(self) -> torch.device:
        return self.model.device

    def _copy_all(self) -> None:
        import torch

        with torch.no_grad():
            for target, source, attr in self._copied:
                target.copy_(_dense(getattr(source, attr)))

    def refresh(self) -> None:
        """Rewrite the adapted layers from the policy's base and its current adapter: ``W = dequant(W_4bit) +
        scale * B @ A`` (a LoRA's other weights are frozen; a policy without an adapter is copied whole). Call
        after each optimizer step."""
        import torch

        if self._all_trained:
            self._copy_all()
        with torch.no_grad():
            for target, layer in self._adapted:
                weight = _dense(layer.get_base_layer().weight).float()
                if not layer.disable_adapters and not layer.merged:
                    for adapter in layer.active_adapters:
                        if adapter in layer.lora_A:
                            weight = weight + layer.get_delta_weight(adapter).float()
                target.copy_(weight)

    def release_policy(self) -> None:
        """Drop every reference to the policy (its 4-bit weights and adapter can be freed): the copy keeps the
        weights it has and is never refreshed again (a fixed adapter: rejection sampling, evaluation)."""
        self.policy, self._adapted, self._copied, self._all_trained = None, [], [], False

    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 generation_config: GenerationConfig) -> torch.Tensor:
        """`generate` on the copy with `decode` (a static cache compiled on CUDA): the prompts (left-padded, as
        given) and their continuations, like `model.generate`'s output. Under a static cache the prompts are
        left-padded further to a multiple of `PROMPT_PAD_MULTIPLE`, and the extra columns dropped again."""
        import torch

        config = copy.deepcopy(generation_config)
        for key, value in self.decode.items():
            setattr(config, key, value)
        static = config.cache_implementation == "static"
        extra = -input_ids.size(1) % PROMPT_PAD_MULTIPLE if static else 0
        pad_id = config.pad_token_id if config.pad_token_id is not None else 0
        input_ids = torch.nn.functional.pad(input_ids.to(self.device), (extra, 0), value=pad_id)
        attention_mask = torch.nn.functional.pad(attention_mask.to(self.device), (extra, 0), value=0)
        with torch.inference_mode():
            out = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, generation_config=config)
        return out[:, extra:]


def _dense(value: torch.Tensor) -> torch.Tensor:
    """A tensor as the layer computes with it: a bitsandbytes 4-bit weight dequantized (its own kernel, on CPU
    too), anything else as it is. bitsandbytes repacks a 4-bit weight for its CPU kernel at the first inference
    forward (`packing_format_for_cpu`); that layout is unpacked first, on a copy of the state (the layer keeps its
    own)."""
    if type(value).__name__ == "Params4bit":
        from bitsandbytes.functional import _convert_weight_packed_for_cpu_inverse, dequantize_4bit

        data, state = value.data, value.quant_state
        if getattr(state, "packing_format_for_cpu", False):
            data, state = _convert_weight_packed_for_cpu_inverse(data, copy.copy(state))
        return dequantize_4bit(data, state)
    return value.data if hasattr(value, "data") else value
