"""The peak memory of one GRPO step on one GPU, term by term as TRL 1.16 allocates it, and the one rule for the fast
generation path (`fast_generation_fits`): a stage takes the merged copy where the step's peak, with the copy, what
its `refresh` keeps, the static KV cache at the stage's prompt budget and the CUDA-graph pool all held through the
training step, fits in `USABLE_FRACTION` of the card.

Both deciders use these figures: the trainer's ``fast_generation: auto`` (`trainers/trl_compat.py`, for a Python
user's trainer too) and the pipeline's memory model (`trl_r1.trainers.memory`: the dry run, the plan, the recipes'
tables, which builds the SFT and generation-pass estimates and the calibration on this module). That module's
docstring explains each term and its calibration.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..data.fast_generation import copy_bytes, graph_pool_bytes, refresh_state_bytes, static_cache_bytes

if TYPE_CHECKING:
    from transformers import PretrainedConfig

GIB = 1024**3
NF4_BITS = 4 + 8 / 64 + 32 / (64 * 256)
LORA_BYTES_PER_PARAM = 4 + 4 + 2  # fp32 adapter weight + fp32 grad + two 8-bit AdamW states
USABLE_FRACTION = 0.9  # leave headroom for spikes the estimate does not see
HEAD_TOKENS, HEAD_VOCAB = 4096, 32768  # TRL 1.16 fused log-prob head tile (chunked_logprob.TOKEN_CHUNK_SIZE, ...)
CUDA_CONTEXT_GIB = 0.75
# What a sleeping vLLM keeps (CUDA graphs, NCCL and cuBLAS buffers outside its sleep pool): vLLM's docs say sleep
# releases "up to 90%+" of its memory.
VLLM_ASLEEP_FRACTION = 0.1
# How many bytes of activations (and their gradients) one layer's recompute holds, as a multiple of its forward
# outputs: fitted by least squares on the CPU calibration points (`trl_r1.trainers.memory.fit_calibration`).
MIN_ACTIVATION_FACTOR = 2.0  # one layer's outputs + their gradients
ACTIVATION_FACTOR = 2.0  # the fit's value: the CPU points ask for less (clamped, see fit_calibration)


@dataclass(frozen=True)
class ModelShape:
    """The architecture numbers the estimate needs (from each model's config.json)."""

    name: str
    hidden_size: int
    num_layers: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_embeddings: bool
    max_completion: int = 16384  # what the model card says it generates (Qwen2.5: 8192)
    max_position_embeddings: int = 32768  # the context: vLLM's default max_model_len

    @classmethod
    def from_config(cls, name: str, c: dict, max_completion: int = 16384) -> ModelShape:
        """From config.json values."""
        return cls(name, c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["num_attention_heads"],
                   c.get("num_key_value_heads") or c["num_attention_heads"],
                   c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"], c["vocab_size"],
                   bool(c.get("tie_word_embeddings", False)), max_completion, c.get("max_position_embeddings", 32768))

    @classmethod
    def from_model_config(cls, name: str, config: PretrainedConfig) -> ModelShape:
        """From a loaded transformers config (a vision-language model's text config)."""
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        return cls.from_config(name, text.to_dict())

    @property
    def linear_params_per_layer(self) -> int:
        h, a, kv = self.hidden_size, self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        return h * a + 2 * h * kv + a * h + 3 * h * self.intermediate_size

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size * (1 if self.tie_embeddings else 2)

    @property
    def num_params(self) -> int:
        return self.num_layers * self.linear_params_per_layer + self.embedding_params

    def lora_params(self, r: int) -> int:
        """LoRA on all seven linear layers of every block: r x (in + out) each."""
        h, a, kv, i = self.hidden_size, self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim, \
            self.intermediate_size
        per_layer = (h + a) + 2 * (h + kv) + (a + h) + 2 * (h + i) + (i + h)
        return self.num_layers * r * per_layer



@dataclass(frozen=True)
class GRPOSettings:
    """The knobs that move the peak (names as in GRPOConfig / ModelConfig)."""

    max_prompt_length: int = 512
    max_completion_length: int = 1024
    per_device_train_batch_size: int = 8  # completions per micro-batch
    gradient_accumulation_steps: int = 4  # generation batch = per_device_train_batch_size x this
    lora_r: int = 16
    load_in_4bit: bool = True
    gradient_checkpointing: bool = True
    dtype_bytes: int = 2  # bf16 on a GPU; 4 for the float32 CPU runs of the calibration
    use_vllm: bool = False  # TRL's colocate mode (server mode puts vLLM on another GPU: nothing on this one)
    vllm_gpu_memory_utilization: float = 0.3  # TRL's default
    vllm_enable_sleep_mode: bool = False
    # vLLM serves the base (4-bit with bitsandbytes when load_in_4bit) and the LoRA adapter unmerged, in
    # `vllm_max_loras` slots of rank lora_r, instead of the trainer pushing merged weights
    vllm_lora_adapter: bool = False
    vllm_max_loras: int = 1  # vLLM's `max_loras` default
    # generation from a merged copy of the policy with a static KV cache (without vLLM; trl_r1.data.fast_generation)
    fast_generation: bool = False
    # the prompt budget its static cache holds (`fast_prompt_budget`: the key, or the data's longest prompt rounded
    # up when shorter); None: max_prompt_length
    fast_generation_prompt_length: int | None = None


@dataclass(frozen=True)
class MemoryEstimate:
    """Each term of the peak, in bytes."""

    weights: float
    lora_state: float
    generation: float
    training: float
    overhead: float
    vllm_generating: float = 0.0  # vLLM's budget while it generates (colocate)
    vllm_training: float = 0.0  # what vLLM keeps during the training step: its budget, or its residue asleep
    # fast generation (`fast_path_terms`), held through the whole stage: the merged copy with what `refresh` keeps,
    # and the decoder's static KV cache with its CUDA-graph pool
    policy_copy: float = 0.0
    decoder: float = 0.0

    @property
    def held(self) -> float:
        """What both phases of the step hold: weights, adapter state, the fast path's copy and decoder, overhead."""
        return self.weights + self.lora_state + self.policy_copy + self.decoder + self.overhead

    @property
    def generation_peak(self) -> float:
        return self.held + self.generation + self.vllm_generating

    @property
    def training_peak(self) -> float:
        return self.held + self.training + self.vllm_training

    @property
    def peak(self) -> float:
        return max(self.generation_peak, self.training_peak)

    @property
    def peak_gib(self) -> float:
        return self.peak / GIB

    @property
    def reserved(self) -> float:
        """The peak less the CUDA context: what `torch.cuda.max_memory_reserved()` reports (the trainer's caching
        allocator; vLLM colocate's share counted in)."""
        return self.peak - (CUDA_CONTEXT_GIB * GIB if self.overhead else 0.0)


def activation_terms(shape: ModelShape, settings: GRPOSettings) -> tuple[float, float]:
    """(bytes kept between layers, bytes of one layer's recompute) for one training micro-batch."""
    s, h = settings, shape.hidden_size
    tokens = s.per_device_train_batch_size * (s.max_prompt_length + s.max_completion_length)
    attention = shape.num_heads * shape.head_dim + 2 * shape.num_kv_heads * shape.head_dim + h
    one_layer = tokens * (2 * h + attention + 3 * shape.intermediate_size) * s.dtype_bytes
    if s.gradient_checkpointing:
        return shape.num_layers * tokens * h * s.dtype_bytes, one_layer
    return 0.0, shape.num_layers * one_layer  # without checkpointing every layer's activations are kept


def weight_bytes(shape: ModelShape, load_in_4bit: bool, dtype_bytes: int = 2) -> float:
    """The base model's weights: linear layers in NF4 or the compute dtype, embeddings in the compute dtype."""
    linear_bytes = NF4_BITS / 8 if load_in_4bit else dtype_bytes
    return shape.num_layers * shape.linear_params_per_layer * linear_bytes + shape.embedding_params * dtype_bytes


def kv_bytes_per_token(shape: ModelShape, dtype_bytes: int = 2) -> int:
    """K and V of every layer for one token."""
    return 2 * shape.num_layers * shape.num_kv_heads * shape.head_dim * dtype_bytes


def static_bytes(shape: ModelShape, s: GRPOSettings) -> tuple[float, float]:
    """(weights, LoRA state) in bytes: what the step holds whatever its lengths."""
    return weight_bytes(shape, s.load_in_4bit, s.dtype_bytes), shape.lora_params(s.lora_r) * LORA_BYTES_PER_PARAM



def training_body(shape: ModelShape, s: GRPOSettings, factor: float) -> float:
    """One micro-batch's activations, the dequantized copy of the largest weight and sdpa's mask."""
    kept, one_layer = activation_terms(shape, s)
    largest_weight = shape.hidden_size * shape.intermediate_size * s.dtype_bytes if s.load_in_4bit else 0
    # sdpa's boolean [batch, 1, length, length] mask: transformers builds it when a padded batch has several
    # sequences (one sequence runs with is_causal and no mask); it grows with the square of the length
    length, batch = s.max_prompt_length + s.max_completion_length, s.per_device_train_batch_size
    mask = batch * length * length if batch > 1 else 0
    return kept + factor * one_layer + largest_weight + mask


def finish_estimate(weights: float, lora_state: float, generation: float, training: float, cpu: bool,
                    vllm: tuple[float, float] = (0.0, 0.0), fast_path: tuple[float, float] = (0.0, 0.0)
                    ) -> MemoryEstimate:
    """Add the overhead: none on CPU (see `trl_r1.trainers.memory.cpu_estimate_gib`), else the CUDA context + 10 %
    of what the trainer's caching allocator holds (vLLM's budget is its own pool). `fast_path`: (copy, decoder),
    `fast_path_terms`."""
    if cpu:
        return MemoryEstimate(weights, lora_state, generation, training, 0.0, *vllm, *fast_path)
    subtotal = weights + lora_state + sum(fast_path) + max(generation, training)
    return MemoryEstimate(weights, lora_state, generation, training, CUDA_CONTEXT_GIB * GIB + 0.1 * subtotal, *vllm,
                          *fast_path)


def fast_path_terms(shape: ModelShape, s: GRPOSettings, cpu: bool = False) -> tuple[float, float]:
    """(the merged copy with what its `refresh` keeps, the stage decoder's static KV cache and CUDA-graph pool) in
    bytes: both held from the first generation to the end of the stage, through every training step. The copy
    holds every parameter in the compute dtype; `refresh` keeps a float32 snapshot of the adapter and, on CPU
    (`MergedPolicy.keep_base`), each adapted layer's dequantized base. The cache holds the whole generation batch
    at the stage's prompt budget (`fast_generation_prompt_length`, else `max_prompt_length`) + the completion."""
    sequences = s.per_device_train_batch_size * s.gradient_accumulation_steps
    length = (s.fast_generation_prompt_length or s.max_prompt_length) + s.max_completion_length
    adapted = shape.num_layers * shape.linear_params_per_layer  # LoRA on every linear layer
    policy_copy = copy_bytes(shape.num_params, s.dtype_bytes) + refresh_state_bytes(
        shape.lora_params(s.lora_r), adapted, s.dtype_bytes, keep_base=cpu)
    decoder = static_cache_bytes(sequences, length, shape.num_layers, shape.num_kv_heads, shape.head_dim,
                                 s.dtype_bytes) + graph_pool_bytes(sequences, length, shape.num_heads,
                                                                   shape.intermediate_size, shape.vocab_size,
                                                                   s.dtype_bytes)
    return policy_copy, decoder


def estimate_grpo_peak(shape: ModelShape, settings: GRPOSettings = GRPOSettings(), *,
                       activation_factor: float | None = None, cpu: bool = False,
                       card_gb: float | None = None) -> MemoryEstimate:
    """Peak GPU memory of one GRPO step (see `trl_r1.trainers.memory`'s docstring for each term); `card_gb` sizes
    vLLM's budget when `settings.use_vllm`; `cpu`: a CPU process (no CUDA overhead; the fast path keeps its bases).

    >>> shapes = {name: ModelShape.from_config(name, c) for name, c in [
    ...     ("0.5B", dict(hidden_size=896, num_hidden_layers=24, intermediate_size=4864, num_attention_heads=14,
    ...                   num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True)),
    ...     ("7B", dict(hidden_size=3584, num_hidden_layers=28, intermediate_size=18944, num_attention_heads=28,
    ...                 num_key_value_heads=4, vocab_size=152064))]}
    >>> small, big = estimate_grpo_peak(shapes["0.5B"]), estimate_grpo_peak(shapes["7B"])
    >>> 1 < small.peak_gib < big.peak_gib < 40
    True
    >>> longer = estimate_grpo_peak(shapes["0.5B"], GRPOSettings(max_completion_length=4096))
    >>> longer.peak > small.peak and longer.weights == small.weights
    True
    """
    factor = ACTIVATION_FACTOR if activation_factor is None else activation_factor
    s = settings
    weights, lora_state = static_bytes(shape, s)
    sequences = s.per_device_train_batch_size * s.gradient_accumulation_steps
    training = training_body(shape, s, factor) + head_bytes(shape, s.per_device_train_batch_size
                                                             * s.max_completion_length, s.dtype_bytes)
    if not s.use_vllm:
        logits = sequences * shape.vocab_size * 4  # the last position's logits in float32, for sampling
        if s.fast_generation:  # the decoder's cache and pool are held through the training step: not in the max
            return finish_estimate(weights, lora_state, logits, training, cpu, fast_path=fast_path_terms(shape, s, cpu))
        cache = sequences * (s.max_prompt_length + s.max_completion_length) * kv_bytes_per_token(shape, s.dtype_bytes)
        return finish_estimate(weights, lora_state, cache + logits, training, cpu)
    if card_gb is None:
        raise ValueError("use_vllm: vLLM's budget is a share of the card, pass card_gb")
    budget = s.vllm_gpu_memory_utilization * card_gb * 1e9  # holds vllm_lora_bytes too (see vllm_kv_tokens)
    asleep = VLLM_ASLEEP_FRACTION * budget if s.vllm_enable_sleep_mode else budget
    return finish_estimate(weights, lora_state, 0.0, training, cpu, (budget, asleep))


def fast_generation_fits(shape: ModelShape, settings: GRPOSettings, card_gb: float, *, cpu: bool = False
                         ) -> tuple[bool, MemoryEstimate]:
    """The one rule for `fast_generation: auto` (the trainer at run time, the dry run and the plan): whether the
    step's peak with the fast path (`estimate_grpo_peak` with `fast_generation`: the training step's own peak plus
    the copy, its refresh state, the static cache at the stage's prompt budget and the graph pool) fits in
    `USABLE_FRACTION` of a `card_gb` card; and that estimate.

    >>> qwen = ModelShape.from_config("Qwen2.5-1.5B", dict(hidden_size=1536, num_hidden_layers=28,
    ...     intermediate_size=8960, num_attention_heads=12, num_key_value_heads=2, vocab_size=151936))
    >>> fast_generation_fits(qwen, GRPOSettings(), 24)[0], fast_generation_fits(qwen, GRPOSettings(), 4)[0]
    (True, False)
    """
    estimate = estimate_grpo_peak(shape, replace(settings, fast_generation=True, use_vllm=False), cpu=cpu)
    return estimate.peak <= USABLE_FRACTION * card_gb * 1e9, estimate


def head_bytes(shape: ModelShape, tokens: int, dtype_bytes: int = 2) -> float:
    """TRL 1.16's fused, chunked log-prob head: one `[min(tokens, 4096), 32768]` tile in the forward and one in the
    backward, never the `[tokens, vocab]` logits."""
    return 2 * min(tokens, HEAD_TOKENS) * min(shape.vocab_size, HEAD_VOCAB) * dtype_bytes

