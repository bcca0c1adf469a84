"""Fast generation from a (Q)LoRA policy: a plain copy of it with the adapter merged, decoded with a static KV cache.

Why: `generate` on a bitsandbytes 4-bit base with a PEFT adapter is bound by launching ~2,000 small kernels per
decoding step from Python (156 ms per step for a 1.5B model on an H100, whatever the batch), and the stock stack
blocks the cure, CUDA graphs: transformers never compiles a bitsandbytes model, PEFT does not support its adapters
on bitsandbytes layers under `torch.compile`, TRL's GRPO sets ``disable_compile=True``.

`MergedPolicy` holds a plain transformers model (no quantizer, no PEFT) with the policy's weights: every 4-bit
linear dequantized once (`bitsandbytes.functional.dequantize_4bit`), the LoRA delta ``scale * B @ A`` added.
`refresh` rewrites only the adapted layers from the 4-bit base and the current adapter (never re-quantizing:
merging into 4-bit loses precision, huggingface/trl#3466), so after an optimizer step the copy serves the new
adapter. `generate` decodes through the stage's one `StageDecoder` (a fixed batch, a static KV cache of the prompt
budget + max_new_tokens reset between calls, a one-token step compiled once: inductor under CUDA graphs on CUDA,
eager on CPU unless asked), with `grouped_query_attention` so no step copies the cache per head group; a recompile
within a stage raises `FallbackToEager`.

The copy costs ``parameters x 2`` bytes in bf16 (fp32 on CPU), plus what `refresh` keeps, the static cache of the
whole batch at the budget and the CUDA-graph pool (`copy_bytes`, `refresh_state_bytes`, `static_cache_bytes`,
`graph_pool_bytes`), all held through the stage; `trl_r1.trainers.step_memory.fast_generation_fits` decides where
it fits, for the trainer's `auto` and the dry run alike.
Sampler log-probs: none are returned (as TRL's own transformers path); TRL 1.16 applies its importance-sampling
correction only with vLLM, and the copy's per-token log-probs agree with the policy's to rounding
(``tests/test_fast_generation.py`` states the tolerance).
"""

from __future__ import annotations

import copy
import logging
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import GenerationConfig, PreTrainedModel

FAST_GENERATION = ("auto", "on", "off")
#: the attention the copy runs (`grouped_query_attention`), registered with transformers' AttentionInterface
GROUPED_ATTENTION = "trl_r1_grouped_sdpa"

logger = logging.getLogger(__name__)


def _peft_layer_types() -> tuple[type, ...]:
    try:
        from peft.tuners.tuners_utils import BaseTunerLayer
    except ImportError:
        return ()
    return (BaseTunerLayer,)


#: the fix a refusal names: generation that needs no copy
_SERVE_INSTEAD = "generate with fast_generation: off (plain generate) or with vLLM"


def merged_copy_unsupported_reason(policy: Any, compiled: bool = True) -> str | None:
    """Why `MergedPolicy` cannot copy this policy, or None: it copies a plain causal LM, or a PEFT LoRA on one (a
    bitsandbytes 4-bit base or a 16/32-bit one), with one active adapter. `compiled`: whether its decoder compiles
    (the default on CUDA), which sliding-window layers and dynamic RoPE do not survive."""
    config = getattr(policy, "peft_config", None)
    if config:
        adapters = policy.active_adapters if hasattr(policy, "active_adapters") else [policy.active_adapter]
        if len(adapters) != 1:
            return f"several active adapters ({adapters})"
        reason = _adapter_config_reason(config[adapters[0]])
        if reason:
            return reason
    base = policy.get_base_model() if hasattr(policy, "get_base_model") else policy
    unmerged = _unmerged_adapter_reason(base)
    if unmerged:
        return unmerged
    if getattr(base, "is_loaded_in_8bit", False):
        return "the base is in bitsandbytes 8-bit"
    if getattr(getattr(base, "config", None), "vision_config", None) is not None:
        return "vision-language models are not copied"
    model_type = getattr(base.config, "model_type", "?")
    if not (getattr(base, "_supports_attention_backend", False) and getattr(base, "_can_compile_fullgraph", False)
            and getattr(base, "_supports_sdpa", False)):
        return (f"the model type {model_type!r} ({type(base).__name__}) has no pluggable SDPA attention or no "
                f"static-cache compile in transformers, which the copy's decoder needs; {_SERVE_INSTEAD}")
    return _architecture_reason(base.config.get_text_config(decoder=True), model_type, compiled)


def _adapter_config_reason(lora: Any) -> str | None:
    """Why the copy cannot merge the adapter configured by `lora`, or None (checked at build and again whenever
    the policy's active adapters change, `MergedPolicy.refresh`)."""
    if str(getattr(lora, "peft_type", "")) not in ("LORA", "PeftType.LORA"):
        return f"the adapter is {getattr(lora, 'peft_type', type(lora).__name__)}, not LoRA"
    if getattr(lora, "alora_invocation_tokens", None):
        return "an activated LoRA (alora_invocation_tokens) applies from its invocation on; a merge applies everywhere"
    if getattr(lora, "layer_replication", None):
        return "layer_replication shares base layers between adapted ones, which the copy does not hold"
    if getattr(lora, "use_dora", False):
        return "DoRA adapters are not merged by the copy"
    if getattr(lora, "modules_to_save", None):
        return f"the adapter trains modules_to_save ({lora.modules_to_save})"
    if getattr(lora, "bias", "none") != "none" or getattr(lora, "lora_bias", False):
        return "the adapter trains biases"
    return None


def _architecture_reason(config: Any, model_type: str, compiled: bool) -> str | None:
    """Why the copy's decoder cannot serve this architecture, or None: latent attention (K and V heads of other
    sizes, one cache head size here), and under compile sliding-window cache layers (a Python int per step that
    dynamo guards on: a recompile each step) and dynamic NTK RoPE (branches on the sequence length)."""
    if getattr(config, "v_head_dim", None) is not None and getattr(config, "kv_lora_rank", None) is not None:
        return (f"the model type {model_type!r} uses multi-head latent attention (V heads of {config.v_head_dim}, K "
                f"heads of another size), which the copy's static cache (one head size) does not hold; "
                f"{_SERVE_INSTEAD}")
    if not compiled:
        return None
    sliding = _sliding_layers(config)
    if sliding:
        return (f"the model type {model_type!r} has sliding-window attention layers ({sliding} of "
                f"{config.num_hidden_layers}), whose static cache recompiles the decoder at every step; build the "
                f"copy uncompiled (compile=False) or {_SERVE_INSTEAD}")
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    per_layer_type = [value for value in rope.values() if isinstance(value, dict)]  # Gemma 3: one per layer type
    rope_types = {rope.get("rope_type"), *(value.get("rope_type") for value in per_layer_type)}
    if "dynamic" in rope_types:
        return (f"the model type {model_type!r} uses dynamic NTK RoPE (rope_type 'dynamic'), which branches on the "
                f"sequence length and does not compile; build the copy uncompiled (compile=False) or {_SERVE_INSTEAD}")
    return None


def _sliding_layers(config: Any) -> int:
    """How many layers the static cache holds as a sliding window (transformers' own layer typing when it has it)."""
    try:
        from transformers.cache_utils import get_layer_types_and_kwargs
        layer_types = get_layer_types_and_kwargs(config)[0]
    except (ImportError, AttributeError):
        layer_types = getattr(config, "layer_types", None) or (
            ["sliding_attention" if getattr(config, "sliding_window", None) else "full_attention"]
            * config.num_hidden_layers)
    return sum(kind in ("sliding_attention", "chunked_attention", "hybrid_sliding") for kind in layer_types)


def _unmerged_adapter_reason(base: Any) -> str | None:
    """Why an adapted layer of `base` would reach the copy without its delta, or None: the copy merges LoRA into
    linear layers it holds a weight of its own for; an embedding's LoRA (PEFT's ``lora_embedding_A/B``) and a
    LoRA on an output layer tied to the input embedding (one tensor in the copy, written once) would be dropped."""
    tuner = _peft_layer_types()
    if not tuner:
        return None
    import torch

    embeddings = base.get_input_embeddings() if hasattr(base, "get_input_embeddings") else None
    embedding_weight = getattr(embeddings, "weight", None)
    for name, module in base.named_modules():
        if not isinstance(module, tuner):
            continue
        if getattr(module, "parameter_name", None):  # PEFT's ParamWrapper: LoRA on a 3-D MoE expert parameter
            return (f"the adapter is on MoE expert parameters ({name}.{module.parameter_name}; target_parameters, or "
                    f"'all-linear' on fused experts), which the copy does not merge; target the attention and "
                    f"dense layers only, or {_SERVE_INSTEAD}")
        layer = module.get_base_layer()
        if isinstance(layer, torch.nn.Embedding):
            return f"the adapter is on an embedding ({name}), which the copy does not merge"
        if embedding_weight is not None and getattr(layer, "weight", None) is embedding_weight:
            return f"the adapter is on {name}, tied to the input embedding, which the copy does not merge"
    return None


#: the data's longest prompt is rounded up to this many tokens for a stage's prompt budget (`fast_prompt_budget`):
#: a tokenizer or template change of a few tokens then cuts nothing
PROMPT_BUDGET_STEP = 64


def fast_prompt_budget(max_prompt_length: int, longest_prompt: int | None) -> int:
    """The prompt budget a stage's decoder holds: ``fast_generation_max_prompt_length``, or less when the data's
    longest prompt is shorter (rounded up to `PROMPT_BUDGET_STEP`), so the static cache is not sized for prompts
    the data does not have.

    >>> fast_prompt_budget(512, 130), fast_prompt_budget(512, 900), fast_prompt_budget(512, None)
    (192, 512, 512)
    """
    if not longest_prompt:
        return max_prompt_length
    return min(max_prompt_length, -(-longest_prompt // PROMPT_BUDGET_STEP) * PROMPT_BUDGET_STEP)


def copy_bytes(num_params: int, dtype_bytes: int) -> int:
    """The copy's weights: every parameter in the generation dtype (bf16 on a GPU, fp32 on CPU)."""
    return num_params * dtype_bytes


def refresh_state_bytes(lora_params: int, adapted_params: int, dtype_bytes: int, keep_base: bool) -> int:
    """What `MergedPolicy` keeps beside the copy so `refresh` can tell what changed and rewrite it: a float32
    snapshot of every LoRA tensor (`_adapter_state`), and with `keep_base` (its default on CPU) each adapted
    layer's dequantized base in the copy's dtype.

    >>> refresh_state_bytes(1000, 50_000, 4, keep_base=True), refresh_state_bytes(1000, 50_000, 2, keep_base=False)
    (204000, 4000)
    """
    return lora_params * 4 + (adapted_params * dtype_bytes if keep_base else 0)


def static_cache_bytes(sequences: int, length: int, num_layers: int, num_kv_heads: int, head_dim: int,
                       dtype_bytes: int) -> int:
    """A static KV cache of `sequences` x `length` tokens, allocated in full before the first step.

    >>> static_cache_bytes(8, 1024, 28, 2, 128, 2)  # Qwen2.5-1.5B, 8 sequences of 1024 tokens: 224 MiB
    234881024
    """
    return sequences * length * 2 * num_layers * num_kv_heads * head_dim * dtype_bytes


def graph_pool_bytes(sequences: int, cache_length: int, num_heads: int, intermediate_size: int, vocab_size: int,
                     dtype_bytes: int) -> int:
    """What the decoder holds beside the copy and the cache: one decoding step's live intermediates, kept by the
    CUDA graph's private pool for the whole stage (an allowance: one layer's float32 attention scores over the
    cache, the MLP's three activations, the logits in the model's dtype and in float32 for sampling). The grouped
    attention expands no K/V, so no expanded copy of the cache is counted.

    >>> graph_pool_bytes(64, 1536, 12, 8960, 151936, 2) / 2**20  # Qwen2.5-1.5B, 64 sequences, 512+1024 tokens
    100.515625
    """
    return sequences * (num_heads * cache_length * 4 + 3 * intermediate_size * dtype_bytes
                        + vocab_size * (dtype_bytes + 4 + 4))


def grouped_query_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                            **kwargs: Any) -> tuple[torch.Tensor, None]:
    """SDPA that never copies the KV cache per head group (grouped-query attention): transformers' SDPA path calls
    `repeat_kv` under compile, which expands K and V over the whole cache length at every decoding step.

    A one-token query (decoding) attends as ``[batch, kv_heads, group, dim] @ [batch, kv_heads, dim, length]``:
    a batched matmul over the cache as it lies. Longer queries (the prefill, once per call) use SDPA with
    ``enable_gqa=True`` (torch >= 2.5). Returns ``(output [batch, q_len, heads, dim], None)`` as transformers'
    attention functions do.
    """
    import torch

    batch, heads, q_len, dim = query.shape
    kv_heads = key.shape[1]
    scale = scaling if scaling is not None else dim**-0.5
    if q_len == 1 and heads != kv_heads:
        grouped = query.reshape(batch, kv_heads, heads // kv_heads, dim)
        scores = torch.matmul(grouped, key.transpose(-1, -2)) * scale  # [batch, kv_heads, group, length]
        if attention_mask is not None:
            mask = attention_mask[:, :, -1:, : key.shape[-2]]  # [batch, 1, 1, length]
            scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(value.dtype)
        out = torch.matmul(probs, value).reshape(batch, heads, 1, dim)
    else:
        mask = attention_mask[:, :, :, : key.shape[-2]] if attention_mask is not None else None
        out = torch.nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, scale=scale, is_causal=mask is None and q_len > 1,
            enable_gqa=heads != kv_heads)
    return out.transpose(1, 2).contiguous(), None


def _register_grouped_attention() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(GROUPED_ATTENTION, grouped_query_attention)
    AttentionMaskInterface.register(GROUPED_ATTENTION, sdpa_mask)


class GraphCounter:
    """A `torch.compile` backend that counts the graphs it is given (each is a compile, a recompile after the
    first) and keeps the last one for inspection, then hands them to `inner` (inductor, under CUDA graphs on CUDA).
    """

    def __init__(self, inner: Any = None, cudagraphs: bool = False):
        self.inner, self.cudagraphs, self.graphs, self.last_graph = inner, cudagraphs, 0, None

    def __call__(self, graph: torch.fx.GraphModule, example_inputs: list) -> Any:
        self.graphs += 1
        self.last_graph = graph
        if self.inner == "eager":
            return graph.forward
        from torch._inductor.compile_fx import compile_fx

        return compile_fx(graph, example_inputs, config_patches={"triton.cudagraphs": self.cudagraphs})


class FallbackToEager(RuntimeError):
    """A compiled decoder was about to build another graph (or run eager) within its stage."""


def _decode_step(model: PreTrainedModel, cache: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 position_ids: torch.Tensor, cache_position: torch.Tensor, cache_arg: str) -> torch.Tensor:
    """One forward of the copy over the stage's cache: the last position's logits."""
    return model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                 cache_position=cache_position, use_cache=True, logits_to_keep=1, **{cache_arg: cache}).logits[:, -1]


def _fresh_function(function: types.FunctionType) -> types.FunctionType:
    """A copy of `function` with its own code object: dynamo keeps compiled graphs, guards and its recompile limit
    per code object, so each generator gets its own (two generators or stages in a process never share them)."""
    return types.FunctionType(function.__code__.replace(), function.__globals__, function.__name__)


def unsupported_settings(config: GenerationConfig) -> dict[str, Any]:
    """The generation settings the compiled decoder does not implement, with their values (none: it serves them).

    >>> from transformers import GenerationConfig
    >>> unsupported_settings(GenerationConfig(repetition_penalty=1.1, top_p=0.9))
    {'repetition_penalty': 1.1}
    """
    return {name: getattr(config, name, None) for name, neutral in (
        ("num_beams", 1), ("repetition_penalty", 1.0), ("no_repeat_ngram_size", 0), ("bad_words_ids", None),
        ("typical_p", 1.0), ("epsilon_cutoff", 0.0), ("eta_cutoff", 0.0), ("suppress_tokens", None),
        ("begin_suppress_tokens", None), ("forced_eos_token_id", None), ("forced_bos_token_id", None),
        ("min_length", 0))
        if getattr(config, name, neutral) not in (neutral, None)}


def _sampling_processors(config: GenerationConfig) -> list:
    """The logits warpers `generate` applies for TRL's sampling settings (public transformers classes); settings
    the decoder does not implement are refused, not ignored."""
    from transformers.generation import (MinPLogitsWarper, TemperatureLogitsWarper, TopKLogitsWarper,
                                         TopPLogitsWarper)

    unsupported = unsupported_settings(config)
    if unsupported:
        raise ValueError(f"fast_generation: the compiled decoder does not implement {unsupported}; "
                         "set fast_generation: off for these generation settings")
    if not config.do_sample:
        return []
    processors = []
    if config.temperature is not None and config.temperature != 1.0:
        processors.append(TemperatureLogitsWarper(config.temperature))
    if config.top_k:
        processors.append(TopKLogitsWarper(config.top_k))
    if config.top_p is not None and config.top_p < 1.0:
        processors.append(TopPLogitsWarper(config.top_p))
    if config.min_p:
        processors.append(MinPLogitsWarper(config.min_p))
    return processors


def _pad_id(config: GenerationConfig) -> int:
    """The id finished rows are padded with, as `generate` pads them: the pad token, else the (first) EOS; 0 when
    there is neither (no row finishes then: it only fills the masked left of short prompts).

    >>> from transformers import GenerationConfig
    >>> _pad_id(GenerationConfig(eos_token_id=[7, 9])), _pad_id(GenerationConfig(pad_token_id=3, eos_token_id=7))
    (7, 3)
    """
    if config.pad_token_id is not None:
        return config.pad_token_id
    eos = config.eos_token_id
    return (eos if isinstance(eos, int) else eos[0]) if eos not in (None, []) else 0


class StageDecoder:
    """One compiled decoder for one stage: a fixed batch, a fixed cache (`prompt_budget` + `max_new_tokens`), one
    `StaticCache` reset (never rebuilt) between calls, so one graph (one CUDA graph) serves every call.

    The loop is driven here, as gpt-fast does, rather than by transformers' `generate`: `generate` builds a new
    `StaticCache` per call, sizes it from each call's prompts (a new graph per new length) and compiles a frame
    shared by every model in the process (dynamo's recompile limit of 8 for all of them). The prefill runs eager
    (one forward per call); each one-token decoding step runs the compiled `_decode_step`. After the first
    compiled step any recompile raises `FallbackToEager` (``torch.compiler.set_stance("fail_on_recompile")``)
    instead of silently decoding eager.

    Prompts longer than `prompt_budget` are cut from the left (the end of the prompt, next to the answer, is
    kept), with a WARNING counting them; a shorter batch than `batch_size` is padded with copies of its first row.
    """

    def __init__(self, model: PreTrainedModel, batch_size: int, prompt_budget: int, max_new_tokens: int,
                 backend: GraphCounter | None):
        import torch
        from transformers import StaticCache

        self.model, self.batch_size, self.prompt_budget = model, batch_size, prompt_budget
        self.max_new_tokens, self.backend = max_new_tokens, backend
        self.cache_length = prompt_budget + max_new_tokens
        self.cache = StaticCache(config=model.config, max_cache_len=self.cache_length)
        config = model.config.get_text_config()
        heads = config.num_attention_heads  # no num_key_value_heads (GPT-2): every head has its own K/V
        self.cache.early_initialization(batch_size, getattr(config, "num_key_value_heads", None) or heads,
                                        getattr(config, "head_dim", None) or config.hidden_size // heads,
                                        model.dtype, model.device) if hasattr(self.cache, "early_initialization") \
            else None
        import inspect

        self._cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        self._step = _decode_step
        if backend is not None:
            self._step = torch.compile(_fresh_function(_decode_step), backend=backend, fullgraph=True,
                                       dynamic=False)
        self.compiled_steps = 0
        self.prompts_cut = 0

    def _forward(self, step: Any, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
                 cache_position: torch.Tensor) -> torch.Tensor:
        return step(self.model, self.cache, ids, mask, positions, cache_position, self._cache_arg)

    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 config: GenerationConfig) -> torch.Tensor:
        """The prompts as given and their continuations, like `model.generate`'s output (pad after EOS)."""
        import torch

        rows = input_ids.size(0) * (config.num_return_sequences or 1)
        new_tokens = config.max_new_tokens
        per_call = self.batch_size // (config.num_return_sequences or 1)
        if rows > self.batch_size and per_call and new_tokens is not None and new_tokens <= self.max_new_tokens:
            return self._in_parts(input_ids, attention_mask, config, per_call)  # an eval batch larger than the stage's
        if rows > self.batch_size or new_tokens is None or new_tokens > self.max_new_tokens:
            raise ValueError(f"fast_generation: this stage's decoder holds {self.batch_size} sequences x "
                             f"{self.max_new_tokens} new tokens; a call asked for {rows} x {new_tokens} (build the "
                             "decoder with the stage's largest generation batch and max_new_tokens)")
        processors = _sampling_processors(config)
        device = self.model.device
        repeat = config.num_return_sequences or 1
        prompt_ids, prompt_mask = input_ids.repeat_interleave(repeat, 0), attention_mask.repeat_interleave(repeat, 0)
        # one mask dtype for every call: a collator's int32 or bool mask would otherwise be a new graph
        ids, mask = prompt_ids.to(device), prompt_mask.to(device=device, dtype=torch.long)
        if not bool(mask[:, -1].all()):
            raise ValueError("fast_generation: the prompts are right-padded (a row ends with padding); the decoder "
                             "continues each prompt from the last column, so it needs them left-padded, as TRL pads "
                             "them: set the tokenizer's padding_side='left'")
        lengths = mask.sum(-1)
        if int(lengths.max()) > self.prompt_budget:
            cut = int((lengths > self.prompt_budget).sum())
            self.prompts_cut += cut
            logger.warning("fast_generation: %d of %d prompts are longer than the stage's prompt budget "
                           "(fast_generation_max_prompt_length=%d tokens, longest %d) and were cut from the left; "
                           "raise fast_generation_max_prompt_length to keep them whole", cut, rows, self.prompt_budget, int(lengths.max()))
        # right-align every prompt into the fixed prompt budget (left padding), then pad the batch
        width = min(ids.size(1), self.prompt_budget)
        ids, mask = ids[:, -width:], mask[:, -width:]
        pad_id = _pad_id(config)
        ids = torch.nn.functional.pad(ids, (self.prompt_budget - width, 0), value=pad_id)
        mask = torch.nn.functional.pad(mask, (self.prompt_budget - width, 0), value=0)
        if rows < self.batch_size:
            ids = torch.cat([ids, ids[:1].expand(self.batch_size - rows, -1)])
            mask = torch.cat([mask, mask[:1].expand(self.batch_size - rows, -1)])
        full_mask = torch.ones(self.batch_size, self.cache_length, dtype=mask.dtype, device=device)
        full_mask[:, : self.prompt_budget] = mask
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        eos = config.eos_token_id
        eos = torch.tensor([eos] if isinstance(eos, int) else (eos or []), device=device)
        self.cache.reset()
        generated = torch.full((self.batch_size, new_tokens), pad_id, dtype=ids.dtype, device=device)
        finished = torch.zeros(self.batch_size, dtype=torch.bool, device=device)
        with torch.inference_mode():
            logits = self._forward(_decode_step, ids, full_mask, positions,
                                   torch.arange(self.prompt_budget, device=device))
            position = positions[:, -1:]
            for step in range(new_tokens):
                logits = logits.float()
                if step < (config.min_new_tokens or 0) and eos.numel():  # as generate's MinNewTokens processor
                    logits[:, eos] = float("-inf")
                token = self._pick(logits, processors, generated[:, :step], config.do_sample)
                token = torch.where(finished, pad_id, token)
                generated[:, step] = token
                if eos.numel():
                    finished |= torch.isin(token, eos)
                    if step % 16 == 15 and bool(finished[:rows].all()):
                        break
                if step == new_tokens - 1:
                    break
                position = position + 1
                logits = self._compiled_step(token[:, None], full_mask, position,
                                             torch.tensor([self.prompt_budget + step], device=device)).clone()
        kept = generated[:rows]
        if eos.numel():  # like generate: stop at the column where every sequence has finished
            done = torch.isin(kept, eos).cumsum(-1).clamp(max=1).cumsum(-1) > 1
            last = int((~done).any(0).nonzero().max()) + 1 if (~done).any() else 0
            kept = kept[:, :last]
        return torch.cat([prompt_ids, kept.to(prompt_ids.device)], dim=1)

    def _in_parts(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, config: GenerationConfig,
                  per_call: int) -> torch.Tensor:
        """A call of more prompts than the decoder holds (an evaluation batch larger than the training one), decoded
        `per_call` prompts at a time by the same graph; the parts' continuations padded to one width, as `generate`
        pads its batch."""
        import torch

        parts = [self.generate(input_ids[i: i + per_call], attention_mask[i: i + per_call], config)
                 for i in range(0, input_ids.size(0), per_call)]
        width = max(part.size(1) for part in parts)
        pad_id = _pad_id(config)
        return torch.cat([torch.nn.functional.pad(part, (0, width - part.size(1)), value=pad_id) for part in parts])

    def _compiled_step(self, token: torch.Tensor, mask: torch.Tensor, position: torch.Tensor,
                       cache_position: torch.Tensor) -> torch.Tensor:
        import torch

        if self.backend is None:
            return self._forward(self._step, token, mask, position, cache_position)
        if self.backend.cudagraphs:
            torch.compiler.cudagraph_mark_step_begin()
        if self.compiled_steps == 0:
            logits = self._forward(self._step, token, mask, position, cache_position)
        else:
            try:
                with torch.compiler.set_stance("fail_on_recompile"):
                    logits = self._forward(self._step, token, mask, position, cache_position)
            except Exception as error:  # torch raises its own RuntimeError subclasses for this
                if "recompil" not in str(error).lower():
                    raise
                raise FallbackToEager(
                    f"fast_generation: the stage's compiled decoder would build graph {self.backend.graphs + 1} "
                    f"(or decode eager) after {self.compiled_steps} compiled steps: {str(error).splitlines()[0]}. "
                    "Its batch, cache and dtype are fixed per stage, so this is a bug or a changed model: report it, "
                    "or set fast_generation: off") from error
        self.compiled_steps += 1
        return logits

    @staticmethod
    def _pick(logits: torch.Tensor, processors: list, generated: torch.Tensor, sample: bool) -> torch.Tensor:
        import torch

        if not sample:
            return logits.argmax(-1)
        for processor in processors:
            logits = processor(generated, logits)
        return torch.multinomial(torch.softmax(logits, -1), 1).squeeze(-1)


def compile_backend(device_type: str, compile: bool | str | None = None) -> GraphCounter | None:
    """The backend of a stage's decoder: inductor under CUDA graphs on CUDA; on CPU none (plain eager steps of the
    copy) unless `compile` asks for one (``True``: inductor, ``"eager"``: dynamo's graph without a compiler, the
    tests' fast check that one graph serves a stage)."""
    if compile is None:
        compile = device_type == "cuda"
    if compile is False:
        return None
    return GraphCounter("eager" if compile == "eager" else "inductor", cudagraphs=device_type == "cuda")


class MergedPolicy:
    """A plain model with the policy's weights, the LoRA delta merged, for generation.

    Args:
        policy: a causal LM, or a `PeftModel` with a LoRA adapter on one (bitsandbytes 4-bit or not).
        dtype: the copy's dtype; default bf16 on a GPU that has it, else float32.
        compile: how each stage's decoder compiles (`compile_backend`): default inductor under CUDA graphs on
            CUDA, none on CPU.
        prompt_budget: the stage's prompt budget in tokens (``fast_generation_max_prompt_length``); longer prompts are cut
            from the left. None: the first call's longest prompt, and a decoder that grows (a new graph, a WARNING)
            when a later call's prompts, batch or new tokens do not fit, so nothing is ever cut.
        keep_base: keep each adapted layer's dequantized base weight beside the copy (the adapted layers' size
            again), so `refresh` writes ``base + delta`` without dequantizing. Default: on CPU, where bitsandbytes'
            dequantization is most of a refresh (`benchmarks/refresh.py`); off on a GPU, where dequantizing reads
            0.56 bytes a parameter and a kept bf16 base would cost the copy's memory again.
    """

    def __init__(self, policy: Any, dtype: torch.dtype | None = None, compile: bool | str | None = None,
                 prompt_budget: int | None = None, keep_base: bool | None = None):
        import torch
        from transformers import AutoModelForCausalLM

        base = policy.get_base_model() if hasattr(policy, "get_base_model") else policy
        device = next(base.parameters()).device
        reason = merged_copy_unsupported_reason(policy, compiled=compile_backend(device.type, compile) is not None)
        if reason:
            raise ValueError(f"the policy cannot be copied for fast generation: {reason}")
        self.policy = policy
        if dtype is None:
            dtype = torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
        config = copy.deepcopy(base.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        if not _output_tied(base):  # the policy's own tie state, whatever its config says (an lm_head untied later)
            config.tie_word_embeddings = config.get_text_config().tie_word_embeddings = False
        _register_grouped_attention()
        with torch.device("meta"):  # no random initialisation: every tensor is written below
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=GROUPED_ATTENTION)
        model.to_empty(device=device)
        self.model: PreTrainedModel = model.eval().requires_grad_(False)
        self._all_trained = not getattr(policy, "peft_config", None)  # a full fine-tune changes every weight
        with torch.no_grad():
            model.tie_weights()
        #: keep each adapted layer's dequantized base (`_kept_base`) rather than dequantize it at each refresh
        self.keep_base = device.type != "cuda" if keep_base is None else keep_base
        self._split()
        self.layers_rewritten = 0  # by the last refresh
        self.refresh()
        self.model.generation_config = copy.deepcopy(base.generation_config)
        self.compile, self.prompt_budget = compile, prompt_budget
        #: the current stage's decoder (`start_stage`), built at the first call if no stage was started
        self.decoder: StageDecoder | None = None

    def _split(self) -> None:
        """Sort the copy's tensors into adapted layers (rewritten by `refresh` from base + delta) and the others
        (copied from the policy, once), and copy the others; done at build and again whenever the policy's
        adapted layers or active adapters change (an adapter added on other layers), so no layer keeps a stale
        base. The copy's tensors stay where they are (compiled graphs hold them)."""
        tuner = _peft_layer_types()
        base = self.policy.get_base_model() if hasattr(self.policy, "get_base_model") else self.policy
        self._adapted: list[tuple[torch.Tensor, Any]] = []  # (the copy's weight, the policy's LoRA layer)
        self._copied: list[tuple[torch.Tensor, Any, str]] = []  # (the copy's tensor, the policy's module, name)
        for name, target in [*self.model.named_parameters(), *self.model.named_buffers()]:
            path, _, attr = name.rpartition(".")
            source = base.get_submodule(path)
            if tuner and isinstance(source, tuner) and attr == "weight":
                self._adapted.append((target, source))
            else:
                self._copied.append((target, source.get_base_layer() if tuner and isinstance(source, tuner)
                                     else source, attr))
        #: the policy's adapted layers and active adapters this split was made for (`_adapter_layout`)
        self._layout = _adapter_layout(self.policy)
        if not self._all_trained:
            self._copy_all()  # the frozen weights, once per split
        #: each adapted layer's kept base, or None (not kept, or dropped while the layer is merged)
        self._bases: list[torch.Tensor | None] = [None] * len(self._adapted)
        #: the base weight each kept base was taken from (`_weight_origin`)
        self._bases_origin: list[tuple | None] = [None] * len(self._adapted)
        #: each adapted layer's adapter state and base weight at its last rewrite; None: never written
        self._written: list[tuple | None] = [None] * len(self._adapted)

    def _follow_layout(self) -> None:
        """Re-check the adapters and re-split when the policy's adapted layers or active adapters changed since
        the last split: an adapter made active later is checked as at build (DoRA, say, is refused, not merged
        as plain LoRA), and an adapter added on layers that had none is merged into them."""
        layout = _adapter_layout(self.policy)
        if layout == self._layout:
            return
        configs = getattr(self.policy, "peft_config", {})
        base = self.policy.get_base_model() if hasattr(self.policy, "get_base_model") else self.policy
        reason = next((r for r in (*(_adapter_config_reason(configs[name]) for name in layout[1] if name in configs),
                                   _unmerged_adapter_reason(base)) if r), None)
        if reason:
            raise ValueError(f"fast_generation: the policy's adapters changed after the copy was built and the "
                             f"copy cannot follow them: {reason}")
        self._split()

    @property
    def device(self) -> torch.device:
        return self.model.device

    def _copy_all(self) -> None:
        import torch

        with torch.no_grad():
            for target, source, attr in self._copied:
                target.copy_(_dense(getattr(source, attr)))

    def refresh(self) -> None:
        """Rewrite, in place, each adapted layer whose adapter changed since its last rewrite: ``W = base + scale *
        B @ A``, the base dequantized from the policy's 4-bit weight (or kept, `keep_base`) and PEFT's delta of the
        current adapter added; tensor addresses, and the compiled graphs that hold them, stay valid. Exact every
        time: never a running ``W += new delta - old delta``, which would accumulate rounding over a run. A layer
        whose adapter and base weight are unchanged (no optimizer step touched it, `_adapter_state`, and its base
        is the same tensor, `_weight_origin`) is left as it is. A layer PEFT merged (``merge_adapter()``) is its
        merged base weight, dequantized, and a kept base is dropped while it holds deltas and re-taken from the
        unmerged weight (`_kept_base`). A base tensor trained beside the adapter (``requires_grad``: an unfrozen
        norm, or an adapted layer's base) is copied again, as is one written in place (its version counter). When
        the policy's adapted layers or active adapters changed, they are checked as at build and the copy is
        re-split (`_follow_layout`). A policy without an adapter is copied whole. Call after each optimizer step."""
        import torch

        if self.policy is None:
            raise RuntimeError("refresh() after release_policy(): the copy no longer follows the policy (it was "
                               "released to free its 4-bit weights); build a new MergedPolicy to follow it")
        if self._all_trained:
            self._copy_all()
        else:
            self._follow_layout()
        self.layers_rewritten = 0
        with torch.no_grad():
            if not self._all_trained:  # a base tensor trained beside the adapter (an unfrozen norm, say)
                for target, source, attr in self._copied:
                    value = getattr(source, attr)
                    if getattr(value, "requires_grad", False):
                        target.copy_(_dense(value))
            for index, (target, layer) in enumerate(self._adapted):
                weight = layer.get_base_layer().weight
                written = (_adapter_state(layer), _weight_origin(weight))
                if weight.requires_grad:  # a base trained beside its LoRA: a fused step bumps no version counter
                    self._bases[index] = None
                elif self._written[index] is not None and _same_state(written[0], self._written[index][0]) \
                        and _same_origin(written[1], self._written[index][1]):
                    continue
                self._write(index, target, layer)
                self._written[index] = written
                self.layers_rewritten += 1

    def _write(self, index: int, target: torch.Tensor, layer: Any) -> None:
        """Write into `target` the weight `layer` computes with, PEFT's three cases: merged (its base weight holds
        the merged deltas, and a disabled adapter is unmerged at the layer's next forward), else its base plus the
        deltas of its active adapters (none when disabled)."""
        import torch

        weight = layer.get_base_layer().weight
        merged = [name for name in layer.merged_adapters if name in layer.lora_A]
        if merged:
            self._bases[index] = self._bases_origin[index] = None  # holds deltas: re-taken once unmerged
            target.copy_(_dense(weight))
            for name in merged if layer.disable_adapters else []:
                target.sub_(layer.get_delta_weight(name).to(target.dtype))
            return
        deltas = [] if layer.disable_adapters else [layer.get_delta_weight(name).to(target.dtype)  # PEFT's own
                                                    for name in layer.active_adapters if name in layer.lora_A]
        base = self._kept_base(index, target, weight) if self.keep_base else None
        if base is None:
            target.copy_(_dense(weight))
        elif deltas:  # one pass: the kept base plus the first delta, written into the copy's tensor
            torch.add(base, deltas.pop(0), out=target)
        else:
            target.copy_(base)
        for delta in deltas:
            target.add_(delta)

    def _kept_base(self, index: int, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """An unmerged layer's dequantized base weight, taken again whenever the weight is another tensor than the
        one it was taken from: bitsandbytes repacked it for its CPU kernel (which computes with bf16 block scales
        from then on), PEFT merged or unmerged into it (a new 4-bit weight), a safe merge replaced its data."""
        origin = _weight_origin(weight)
        if self._bases[index] is None or not _same_origin(origin, self._bases_origin[index]):
            self._bases[index], self._bases_origin[index] = _dense(weight).to(target.dtype), origin
        return self._bases[index]

    def release_policy(self) -> None:
        """Drop every reference to the policy (its 4-bit weights and adapter can be freed) and the kept bases: the
        copy keeps the weights it has and is never refreshed again (a fixed adapter: rejection sampling,
        evaluation)."""
        self.policy, self._adapted, self._copied, self._all_trained = None, [], [], False
        self._bases, self._bases_origin, self._written = [], [], []

    def start_stage(self, batch_size: int, max_new_tokens: int, prompt_budget: int | None = None) -> StageDecoder:
        """A new decoder (its own cache and graph) for a stage's fixed shape: its largest generation batch, its
        `max_new_tokens` and prompt budget. The previous stage's decoder, cache and graphs are dropped."""
        import torch

        self.decoder = None
        if self.model.device.type == "cuda":
            torch.cuda.empty_cache()
        if not (prompt_budget or self.prompt_budget):
            raise ValueError("start_stage: no prompt_budget, neither here nor when the MergedPolicy was built; pass "
                             "the stage's prompt budget in tokens (or call generate, which sizes one from its prompts)")
        self.decoder = StageDecoder(self.model, batch_size, prompt_budget or self.prompt_budget, max_new_tokens,
                                    compile_backend(self.model.device.type, self.compile))
        return self.decoder

    @property
    def graphs_built(self) -> int:
        """Graphs the current stage's decoder compiled (one per stage when it stays fast)."""
        return self.decoder.backend.graphs if self.decoder and self.decoder.backend else 0

    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 generation_config: GenerationConfig) -> torch.Tensor:
        """The prompts (left-padded, as given) and their continuations, like `model.generate`'s output, decoded by
        the stage's decoder (`StageDecoder`; started from this call's shape when no stage was started). Settings the
        call leaves at their defaults come from the model's `generation_config` (its EOS, say), as in `generate`."""
        settings = copy.deepcopy(self.model.generation_config)
        settings.update(**generation_config.to_diff_dict())
        generation_config = settings
        rows = input_ids.size(0) * (generation_config.num_return_sequences or 1)
        shape = (rows, int(attention_mask.sum(-1).max()), generation_config.max_new_tokens)
        decoder = self.decoder
        if decoder is None or (self.prompt_budget is None and (
                shape[0] > decoder.batch_size or shape[1] > decoder.prompt_budget or shape[2] > decoder.max_new_tokens)):
            if decoder is not None:  # no budget was set: grow (a new graph), never cut
                logger.warning("fast_generation: a call of %d sequences x %d prompt + %d new tokens outgrows the "
                               "decoder (%d x %d + %d): a new one is built (a new graph); set a prompt budget and "
                               "start_stage with the stage's largest batch to keep one", *shape, decoder.batch_size,
                               decoder.prompt_budget, decoder.max_new_tokens)
                shape = (max(shape[0], decoder.batch_size), max(shape[1], decoder.prompt_budget),
                         max(shape[2], decoder.max_new_tokens))
            self.start_stage(shape[0], shape[2], self.prompt_budget or shape[1])
        return self.decoder.generate(input_ids, attention_mask, generation_config)


def _adapter_state(layer: Any) -> tuple:
    """What an adapted layer's merged weight depends on besides its frozen base: whether the adapter is on, which
    adapters are active with which scaling, and a copy of their LoRA tensors (small: rank x (in + out) values).
    Compared by value: an optimizer's fused kernel writes the parameters in place without bumping their version
    counters."""
    tensors = tuple(param.detach().clone() for name in layer.active_adapters if name in layer.lora_A
                    for param in (layer.lora_A[name].weight, layer.lora_B[name].weight))
    return (layer.disable_adapters, tuple(layer.merged_adapters), tuple(layer.active_adapters),
            tuple(layer.scaling.items()), tensors)


def _same_state(state: tuple, written: tuple | None) -> bool:
    """Whether an adapted layer's `_adapter_state` equals the one its copy was written from."""
    import torch

    return written is not None and state[:4] == written[:4] and len(state[4]) == len(written[4]) and all(
        torch.equal(now, then) for now, then in zip(state[4], written[4]))


def _weight_origin(weight: torch.Tensor) -> tuple:
    """Which tensor `weight` is and which write of it: the parameter (by weak reference: a freed one's id can be
    reused), its storage address and its version counter. Another one means other values (a repack, a 4-bit
    merge, a safe merge, an in-place write: `load_state_dict`, ``copy_``, PEFT's merge into a 16/32-bit weight)."""
    import weakref

    try:
        version = weight._version
    except RuntimeError:  # an inference-mode tensor has no version counter (and is never written in place)
        version = None
    return weakref.ref(weight), weight.data_ptr(), version


def _same_origin(now: tuple, then: tuple | None) -> bool:
    return then is not None and now[0]() is then[0]() is not None and now[1:] == then[1:]


def _adapter_layout(policy: Any) -> tuple:
    """The policy's adapted layers (the modules PEFT wrapped) and active adapters: when either changes, the copy
    re-checks and re-splits (`MergedPolicy._follow_layout`)."""
    tuner = _peft_layer_types()
    if not tuner or not getattr(policy, "peft_config", None):
        return (), ()
    active = policy.active_adapters if hasattr(policy, "active_adapters") else [policy.active_adapter]
    return tuple(id(module) for module in policy.modules() if isinstance(module, tuner)), tuple(active)


def _output_tied(base: Any) -> bool:
    """Whether the model's output layer is its input embedding (one tensor), as the copy will build it."""
    inputs = base.get_input_embeddings() if hasattr(base, "get_input_embeddings") else None
    outputs = base.get_output_embeddings() if hasattr(base, "get_output_embeddings") else None
    if inputs is None or outputs is None:
        return bool(getattr(base.config.get_text_config(), "tie_word_embeddings", False))
    layer = outputs.get_base_layer() if hasattr(outputs, "get_base_layer") else outputs
    return layer.weight is inputs.weight


def _dense(value: torch.Tensor) -> torch.Tensor:
    """A tensor as the layer computes with it: a bitsandbytes 4-bit weight dequantized (its own kernel, on CPU
    too), anything else as it is. bitsandbytes repacks a 4-bit weight for its CPU kernel at the first inference
    forward (`packing_format_for_cpu`), which from then on computes with its block scales in bf16 (transposed, a
    double-quantized absmax dequantized first); `_unpacked_for_cpu` takes that layout back."""
    if type(value).__name__ == "Params4bit":
        from bitsandbytes.functional import dequantize_4bit

        data, state = value.data, value.quant_state
        if getattr(state, "packing_format_for_cpu", False):
            data, state = _unpacked_for_cpu(data, state)
        return dequantize_4bit(data, state)
    return value.data if hasattr(value, "data") else value


def _unpacked_for_cpu(data: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
    """A CPU-packed 4-bit weight and its state in bitsandbytes' ordinary layout, on a copy of the state (the layer
    keeps its own). bitsandbytes' own inverse restores the block scales only when it re-quantizes them (double
    quantization: a second rounding the layer never computes with) and leaves a single-quantized weight's scales
    transposed; here they are untransposed, as the layer's kernel reads them, in either case."""
    from bitsandbytes.functional import _convert_weight_packed_for_cpu_inverse

    state = copy.copy(state)
    state.original_nested = False  # keep the bf16 scales the CPU kernel computes with; no re-quantization
    data, state = _convert_weight_packed_for_cpu_inverse(data, state)
    state.absmax = state.absmax.T.reshape(-1).float()  # [in / blocksize, out] -> the row-major blocks
    return data, state
