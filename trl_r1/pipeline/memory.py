"""Expected peak GPU memory of a QLoRA GRPO step on one GPU: the formula behind the recipes' card sizes.

An estimate, not a measurement (no GPU was available when the table in docs/recipes.md was produced; replace
it with `torch.cuda.max_memory_allocated()` numbers when one is). For one GRPO step with TRL's default
`transformers` generation (no vLLM), the peak is::

    peak = weights + lora_state + max(generation, training) + overhead

* weights: NF4 with double quantisation stores a linear weight in 4 + 8/64 + 32/(64*256) = 4.127 bits per
  parameter (QLoRA §3). Embeddings and the LM head stay in bf16 (bitsandbytes does not quantise them).
* lora_state: LoRA parameters in bf16 (2 B), their gradients (2 B) and 8-bit paged AdamW's two states (2 B).
* generation: the KV cache of the whole generation batch, 2 (K, V) x layers x kv_heads x head_dim x 2 B per
  token, for (prompt + completion) tokens of every sequence generated at once.
* training (one micro-batch, gradient checkpointing): each layer's bf16 input kept for the backward pass,
  one layer's recomputed activations (attention projections, MLP gate/up/act, norms), the dequantised bf16
  copy of the largest weight, and the completion logits, kept in bf16 for backward plus one fp32 copy for
  the log-softmax (`b x C x vocab x 6 B`; the largest term for 150k-token vocabularies).
* overhead: CUDA context and allocator fragmentation, 1 GiB + 10 %.

Run `python -m trl_r1.pipeline.memory` to print the table for docs/recipes.md.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3
NF4_BITS = 4 + 8 / 64 + 32 / (64 * 256)
LORA_BYTES_PER_PARAM = 2 + 2 + 2  # bf16 weight + bf16 grad + two 8-bit AdamW states
CARDS_GB = (24, 48, 80)
COMPLETION_LENGTHS = (512, 1024, 2048, 4096, 8192)
USABLE_FRACTION = 0.9  # leave headroom for spikes the estimate does not see


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


# Shapes copied from the models' config.json files on the Hub.
MODELS: dict[str, ModelShape] = {m.name: m for m in [
    ModelShape("Qwen/Qwen2.5-0.5B-Instruct", 896, 24, 4864, 14, 2, 64, 151936, True),
    ModelShape("Qwen/Qwen2.5-1.5B-Instruct", 1536, 28, 8960, 12, 2, 128, 151936, True),
    ModelShape("Qwen/Qwen2.5-3B-Instruct", 2048, 36, 11008, 16, 2, 128, 151936, True),
    ModelShape("Qwen/Qwen2.5-7B-Instruct", 3584, 28, 18944, 28, 4, 128, 152064, False),
    ModelShape("Qwen/Qwen3-1.7B", 2048, 28, 6144, 16, 8, 128, 151936, True),
    ModelShape("Qwen/Qwen3-4B", 2560, 36, 9728, 32, 8, 128, 151936, True),
    ModelShape("Qwen/Qwen3-8B", 4096, 36, 12288, 32, 8, 128, 151936, False),
    ModelShape("meta-llama/Llama-3.2-1B-Instruct", 2048, 16, 8192, 32, 8, 64, 128256, True),
    ModelShape("meta-llama/Llama-3.2-3B-Instruct", 3072, 28, 8192, 24, 8, 128, 128256, True),
]}


@dataclass(frozen=True)
class GRPOSettings:
    """The knobs that move the peak (names as in GRPOConfig / ModelConfig)."""

    max_prompt_length: int = 512
    max_completion_length: int = 1024
    per_device_train_batch_size: int = 8  # completions per micro-batch
    gradient_accumulation_steps: int = 4  # generation batch = per_device_train_batch_size x this
    lora_r: int = 16


@dataclass(frozen=True)
class MemoryEstimate:
    """Each term of the peak, in bytes."""

    weights: float
    lora_state: float
    generation: float
    training: float
    overhead: float

    @property
    def peak(self) -> float:
        return self.weights + self.lora_state + max(self.generation, self.training) + self.overhead

    @property
    def peak_gib(self) -> float:
        return self.peak / GIB


def estimate_grpo_peak(shape: ModelShape, settings: GRPOSettings = GRPOSettings()) -> MemoryEstimate:
    """Peak GPU memory of one QLoRA GRPO step (see the module docstring for each term).

    >>> small = estimate_grpo_peak(MODELS["Qwen/Qwen2.5-0.5B-Instruct"])
    >>> big = estimate_grpo_peak(MODELS["Qwen/Qwen2.5-7B-Instruct"])
    >>> 2 < small.peak_gib < big.peak_gib < 40
    True
    >>> longer = estimate_grpo_peak(MODELS["Qwen/Qwen2.5-0.5B-Instruct"], GRPOSettings(max_completion_length=4096))
    >>> longer.peak > small.peak and longer.weights == small.weights
    True
    """
    h, layers, s = shape.hidden_size, shape.num_layers, settings
    weights = layers * shape.linear_params_per_layer * NF4_BITS / 8 + shape.embedding_params * 2
    lora_state = shape.lora_params(s.lora_r) * LORA_BYTES_PER_PARAM
    seq = s.max_prompt_length + s.max_completion_length
    sequences = s.per_device_train_batch_size * s.gradient_accumulation_steps
    kv_per_token = 2 * layers * shape.num_kv_heads * shape.head_dim * 2
    generation = sequences * seq * kv_per_token + sequences * shape.vocab_size * 4  # KV cache + last-token logits
    b = s.per_device_train_batch_size
    attention = shape.num_heads * shape.head_dim + 2 * shape.num_kv_heads * shape.head_dim + h
    one_layer = b * seq * (2 * h + attention + 3 * shape.intermediate_size) * 2
    checkpoints = layers * b * seq * h * 2
    largest_weight = h * shape.intermediate_size * 2
    logits = b * s.max_completion_length * shape.vocab_size * (2 + 4)
    training = checkpoints + one_layer + largest_weight + logits
    subtotal = weights + lora_state + max(generation, training)
    return MemoryEstimate(weights, lora_state, generation, training, GIB + 0.1 * subtotal)


def longest_fitting_completion(shape: ModelShape, card_gb: int,
                               settings: GRPOSettings = GRPOSettings()) -> tuple[int, MemoryEstimate] | None:
    """The longest `max_completion_length` (from COMPLETION_LENGTHS) whose peak fits in 90% of the card.

    >>> [longest_fitting_completion(MODELS["meta-llama/Llama-3.2-1B-Instruct"], card)[0] for card in CARDS_GB]
    [2048, 4096, 8192]
    """
    best = None
    for length in COMPLETION_LENGTHS:
        estimate = estimate_grpo_peak(shape, GRPOSettings(**{**settings.__dict__, "max_completion_length": length}))
        if estimate.peak <= USABLE_FRACTION * card_gb * 1e9:
            best = (length, estimate)
    return best


def markdown_table(settings: GRPOSettings = GRPOSettings()) -> str:
    """The per-model, per-card table: the longest completion that fits and its estimated peak."""
    intro = (
        f"Estimated peak GPU memory of one QLoRA GRPO step (`trl_r1.pipeline.memory`; prompt "
        f"{settings.max_prompt_length} tokens, {settings.per_device_train_batch_size} completions per micro-batch, "
        f"{settings.per_device_train_batch_size * settings.gradient_accumulation_steps} generated at once, LoRA r="
        f"{settings.lora_r} on all linear layers, 8-bit paged AdamW, gradient checkpointing). Each card column "
        "gives the longest `max_completion_length` that fits in 90% of the card, and the estimated peak."
    )
    lines = [
        intro,
        "",
        "| model | params | 4-bit weights | peak @ 1024 | " + " | ".join(f"{c} GB card" for c in CARDS_GB) + " |",
        "|---|---|---|---|" + "---|" * len(CARDS_GB),
    ]
    for shape in MODELS.values():
        base = estimate_grpo_peak(shape, settings)
        cells = []
        for card in CARDS_GB:
            fit = longest_fitting_completion(shape, card, settings)
            cells.append(f"{fit[0]} tok, {fit[1].peak / 1e9:.1f} GB" if fit else "does not fit")
        lines.append(f"| {shape.name} | {shape.num_params / 1e9:.2f} B | {base.weights / 1e9:.1f} GB | "
                     f"{base.peak / 1e9:.1f} GB | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
