"""Peak memory of one GRPO or SFT step with TRL 1.16 on one GPU, and of a generation pass (rejection sampling,
evaluation): the formula behind the recipes' card sizes. docs/memory.md explains it and its calibration.

Built on what TRL 1.16 allocates, term by term::

    peak = weights + lora_state + fast path + max(generation + vllm_generating, training + vllm_training)
           + overhead

* weights: QLoRA stores a linear weight in NF4 with double quantisation, 4 + 8/64 + 32/(64*256) = 4.127 bits
  per parameter; LoRA without 4-bit keeps it in bf16. Embeddings (and an untied LM head) stay in bf16.
* lora_state: PEFT keeps the adapters in float32, so 4 B weight + 4 B gradient + two 8-bit AdamW states (2 B).
* generation (GRPO with transformers): the KV cache of the whole generation batch (`per_device_train_batch_size
  x steps_per_generation` sequences) plus the last-token logits (`[sequences, vocab]` float32).
* training (one micro-batch, gradient checkpointing): each layer's bf16 input kept for the backward pass, one
  layer's recomputed activations times `ACTIVATION_FACTOR`, the dequantised bf16 copy of the largest weight, and
  the output head. TRL 1.16 never materialises the `[batch, length, vocab]` logits in GRPO nor, by default, in
  SFT: both project through a fused, chunked log-prob head (`trl/kernels/chunked_logprob.py`;
  SFTTrainer patches it in with `add_fused_lm_head`) in `[4096 tokens, 32768 vocab]` tiles, one in the forward
  and one in the backward. SFTTrainer still builds the full logits when the loss needs them: with
  `label_smoothing_factor > 0` or a `compute_loss_func` (`estimate_sft_peak(..., full_logits=True)`).
* overhead: the CUDA context (`CUDA_CONTEXT_GIB`, outside the caching allocator) + 10 % of the trainer's terms
  (allocator fragmentation). `MemoryEstimate.reserved` is the peak without the context: what
  `torch.cuda.max_memory_reserved()` reports.
* vLLM in TRL's colocate mode (`use_vllm`, `vllm_mode: colocate`; vllm_* terms, 0 without it): vLLM takes
  `vllm_gpu_memory_utilization x card` (its own copy of the weights, its working memory `VLLM_RUNTIME_GIB`, the
  KV cache filling the rest) while it generates; the trainer then holds no KV cache of its own. With
  `vllm_enable_sleep_mode` vLLM sleeps at level 2 during the training step and keeps `VLLM_ASLEEP_FRACTION` of
  its budget; without it the whole budget stays. vLLM starts only if its KV cache holds one
  `vllm_max_model_length` sequence (`vllm_kv_tokens`). With `vllm_lora_adapter` vLLM serves the base (in 4-bit
  with bitsandbytes when `load_in_4bit`, so the trainer also trains on the 4-bit base) and the LoRA adapter
  unmerged: its budget also holds `vllm_max_loras` adapter slots of rank `lora_r` in bf16 (`vllm_lora_bytes`).
* a generation pass (`estimate_generation_peak`): weights (4-bit or bf16) + the adapter + the KV cache of
  `batch_size x num_samples` sequences + the prompts' prefill + the last-token logits.
* fast generation (`fast_generation`, `trl_r1.data.fast_generation`; `trl_r1.trainers.step_memory.fast_path_terms`),
  all held from the first generation to the end of the stage, so beside the training step, not in the max: a copy
  of the policy in the compute dtype with the adapter merged (every parameter, `copy_bytes`) and what its `refresh`
  keeps (a float32 snapshot of the adapter; on CPU each adapted layer's dequantized base, `refresh_state_bytes`);
  the static KV cache of the whole generation batch at the stage's prompt budget (`fast_generation_prompt_length`:
  the `fast_generation_max_prompt_length` key, or the data's longest prompt rounded up when shorter,
  `fast_prompt_budget`) + completion, and the CUDA-graph pool (`graph_pool_bytes`; the grouped attention expands
  no K/V). One rule, `fast_generation_fits`, says whether that fits 90 % of a card, for the trainer's `auto` and
  for the dry run (`generation_path`, `preflight.rl_step_peak`). The formula itself lives in
  `trl_r1.trainers.step_memory` (a layer the trainer may import) and is re-exported here.

Calibration. Primary: one-step peaks measured on a GPU (`benchmarks/data/gpu_points.jsonl`: card, versions,
settings and `torch.cuda.max_memory_reserved()` of each point; `benchmarks/gpu.py` measures more). The formula's
`reserved` figure is within `MAX_GPU_CALIBRATION_ERROR` of every point (`gpu_calibration_error`). Secondary:
six CPU points of the 0.5B shape in float32 (`CALIBRATION`, `benchmarks/memory.py`: peak RSS above the process
baseline, which also counts host heap the GPU never sees), fitted by `fit_calibration` into `ACTIVATION_FACTOR`
(clamped at its physical floor, 2.0) and `CPU_OVERHEAD_GIB`; `MAX_CALIBRATION_ERROR` is the formula's error
there. The vLLM terms are projections from vLLM's and TRL's documented behaviour: no point measures them.

Run `python -m trl_r1.trainers.memory` to print the GRPO tables of docs/memory.md.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from pathlib import Path

from ..data.fast_generation import copy_bytes, graph_pool_bytes
from ..trainers.step_memory import (  # noqa: F401 (the formula's names, re-exported: this module's API)
    ACTIVATION_FACTOR, CUDA_CONTEXT_GIB, GIB, HEAD_TOKENS, HEAD_VOCAB, LORA_BYTES_PER_PARAM, MIN_ACTIVATION_FACTOR,
    NF4_BITS, USABLE_FRACTION, VLLM_ASLEEP_FRACTION, GRPOSettings, MemoryEstimate, ModelShape, activation_terms,
    estimate_grpo_peak, fast_generation_fits, fast_path_terms, finish_estimate, head_bytes, kv_bytes_per_token,
    static_bytes, training_body, weight_bytes)

CARDS_GB = (24, 48, 80)
COMPLETION_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)
BATCH_SIZES = (4, 8, 16)
# vLLM (projected, see the module docstring). Its working memory inside its budget: the profiling forward of the
# 4096 tokens TRL batches per step (`max_num_batched_tokens=4096`), the sampler and CUDA graphs.
VLLM_RUNTIME_GIB = 1.0

# The host memory a CPU process holds beyond the formula's terms (tokenizer, Python heap, allocator arenas: CPU only,
# the GPU estimate has the CUDA context and 10 % instead): fitted with `ACTIVATION_FACTOR` by least squares on
# CALIBRATION (`fit_calibration`, printed by `python benchmarks/memory.py`).
CPU_OVERHEAD_GIB = 2.22
# (trainer, mode, completion length, setup, measured CPU peak GiB above the process baseline) from that run.
CALIBRATION: list[tuple[str, str, int, str, float]] = [
    ("grpo", "qlora", 128, "trl-r1", 3.44), ("sft", "qlora", 256, "trl-r1", 2.95), ("sft", "lora", 256, "trl-r1", 5.61),
    ("sft", "qlora", 512, "trl-r1", 4.36), ("grpo", "lora", 128, "trl-r1", 4.44), ("grpo", "lora", 128, "stock", 6.10),
]
MAX_CALIBRATION_ERROR = 0.22  # the largest relative error of the formula on CALIBRATION (docs/memory.md)
# The largest relative error of `MemoryEstimate.reserved` on the GPU points (benchmarks/data/gpu_points.jsonl); the
# issue-20 bound is 25 %.
MAX_GPU_CALIBRATION_ERROR = 0.22


MODEL_IDS = ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct",
             "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B", "Qwen/Qwen3-8B",
             "meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-3B-Instruct")


def spec_shape(name: str, config: dict | None = None) -> ModelShape:
    """A recipe model's `ModelShape` from `trl_r1.rehearsal.models` (its config.json values, or `config`: a
    rehearsal size's, `model_spec(name).sized(size)`)."""
    from ..rehearsal.models import model_spec

    spec = model_spec(name)
    return ModelShape.from_config(name, config or spec.config, 8192 if spec.family == "qwen2.5" else 16384)


def model_shapes() -> dict[str, ModelShape]:
    """Every recipe model's shape, from `trl_r1.rehearsal.models` (the config.json values)."""
    return {name: spec_shape(name) for name in MODEL_IDS}


def vllm_lora_bytes(shape: ModelShape, settings: GRPOSettings) -> float:
    """vLLM's LoRA slots when it serves the adapter unmerged: `vllm_max_loras` x the adapter's A and B matrices
    of every linear layer at rank `lora_r`, preallocated in bf16 (0 when vLLM gets merged weights)."""
    if not (settings.use_vllm and settings.vllm_lora_adapter):
        return 0.0
    return settings.vllm_max_loras * shape.lora_params(settings.lora_r) * 2


def vllm_kv_tokens(shape: ModelShape, card_gb: float, utilization: float, load_in_4bit: bool = False,
                   lora_bytes: float = 0.0) -> int:
    """Tokens of KV cache vLLM's budget (`utilization x card`) holds after its weights, its LoRA slots
    (`lora_bytes`) and working memory; vLLM refuses to start below one `max_model_len` sequence.

    >>> qwen = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]
    >>> vllm_kv_tokens(qwen, 24, 0.3) > 8704 > vllm_kv_tokens(qwen, 24, 0.15) == 0
    True
    """
    free = utilization * card_gb * 1e9 - weight_bytes(shape, load_in_4bit) - lora_bytes - VLLM_RUNTIME_GIB * GIB
    return max(0, int(free // kv_bytes_per_token(shape)))

def estimate_sft_peak(shape: ModelShape, settings: GRPOSettings = GRPOSettings(), *,
                      activation_factor: float | None = None, cpu: bool = False,
                      full_logits: bool = False) -> MemoryEstimate:
    """Peak memory of one SFT step on `per_device_train_batch_size` sequences of prompt + completion tokens.

    TRL 1.16's SFTTrainer always patches in the fused LM head (`add_fused_lm_head`) and computes the default
    `nll`/`dft` loss from it: no full logits. With `full_logits` (what SFTTrainer does for
    `label_smoothing_factor > 0` or a `compute_loss_func`) the loss forward builds `[tokens, vocab]` logits in the
    compute dtype, their float32 upcast and float32 gradient, on top of the fused head's metrics forward.

    >>> qwen = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]
    >>> one = GRPOSettings(max_prompt_length=0, max_completion_length=16384, per_device_train_batch_size=1)
    >>> 4 < estimate_sft_peak(qwen, one).peak_gib < 8 < 20 < estimate_sft_peak(qwen, one, full_logits=True).peak_gib
    True
    """
    factor = ACTIVATION_FACTOR if activation_factor is None else activation_factor
    s = settings
    weights, lora_state = static_bytes(shape, s)
    tokens = s.per_device_train_batch_size * (s.max_prompt_length + s.max_completion_length)
    training = training_body(shape, s, factor) + head_bytes(shape, tokens, s.dtype_bytes)
    if full_logits:
        upcast = 4 if s.dtype_bytes != 4 else 0  # float32 runs have no separate upcast
        training += tokens * shape.vocab_size * (s.dtype_bytes + upcast + 4)
    return finish_estimate(weights, lora_state, 0.0, training, cpu)


SFT_LENGTHS = (4096, 8192, 16384, 32768)  # open-r1 trains its distilled models at 32k
SFT_BATCHES = (1, 2, 4, 8)


def sft_fits(shape: ModelShape, card_gb: float, settings: GRPOSettings = GRPOSettings(), *,
             lengths: tuple[int, ...] = SFT_LENGTHS, batches: tuple[int, ...] = SFT_BATCHES
             ) -> tuple[int, int, MemoryEstimate] | None:
    """(max_length, per_device_train_batch_size, estimate): the longest `max_length` (up to the model's context)
    that fits one sequence in 90% of the card, then the largest micro-batch of such sequences that fits."""
    limit = USABLE_FRACTION * card_gb * 1e9
    best = None
    for length in (n for n in lengths if n <= shape.max_position_embeddings):
        for batch in batches:
            estimate = estimate_sft_peak(shape, replace(settings, max_prompt_length=0, max_completion_length=length,
                                                        per_device_train_batch_size=batch))
            if estimate.peak > limit:
                break
            best = (length, batch, estimate)  # ascending lengths, then batches: the last fit wins
    return best


def fits(shape: ModelShape, card_gb: int, settings: GRPOSettings) -> tuple[GRPOSettings, MemoryEstimate] | None:
    """The longest completion, then the largest micro-batch, whose estimated peak fits in 90% of the card (and,
    with vLLM, whose prompt + completion vLLM's KV cache holds, else vLLM does not start)."""
    best = None
    for length in (n for n in COMPLETION_LENGTHS if n <= shape.max_completion):
        if settings.use_vllm and vllm_kv_tokens(shape, card_gb, settings.vllm_gpu_memory_utilization,
                                                settings.load_in_4bit, vllm_lora_bytes(shape, settings)
                                                ) < settings.max_prompt_length + length:
            continue
        for batch in BATCH_SIZES:
            candidate = replace(settings, max_completion_length=length, per_device_train_batch_size=batch,
                                gradient_accumulation_steps=max(1, 32 // batch))  # 32 completions per step
            estimate = estimate_grpo_peak(shape, candidate, card_gb=card_gb)
            if estimate.peak <= USABLE_FRACTION * card_gb * 1e9:
                best = (candidate, estimate)
    return best


def generation_path(shape: ModelShape, settings: GRPOSettings, card_gb: float) -> tuple[str, str]:
    """How a GRPO stage generates on a card, and why: ``"vllm"`` (its settings say so), ``"fast"`` (a merged copy
    of the policy with a static KV cache, under CUDA graphs) where `fast_generation_fits` (the rule the trainer's
    `auto` applies too), else ``"plain"`` (TRL's `generate` on the policy, 4-bit where it is).

    >>> qwen = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]
    >>> generation_path(qwen, GRPOSettings(), 24)[0], generation_path(qwen, GRPOSettings(), 4)[0]
    ('fast', 'plain')
    """
    if settings.use_vllm:
        return "vllm", "use_vllm: vLLM generates"
    fits_card, fast = fast_generation_fits(shape, settings, card_gb)
    held = f"the merged copy ({fast.policy_copy / GIB:.1f} GiB) and its decoder ({fast.decoder / GIB:.1f} GiB)"
    if fits_card:
        return "fast", (f"{held} fit beside the training step: estimated peak {fast.peak / 1e9:.1f} GB of "
                        f"{USABLE_FRACTION:.0%} x {card_gb:g} GB")
    plain = estimate_grpo_peak(shape, replace(settings, fast_generation=False), card_gb=card_gb)
    return "plain", (f"with {held} held through the training step the estimated peak is {fast.peak / 1e9:.1f} GB, "
                     f"over {USABLE_FRACTION:.0%} x {card_gb:g} GB; {'4-bit ' if settings.load_in_4bit else ''}"
                     f"generate on the policy peaks at {plain.peak / 1e9:.1f} GB")


@dataclass(frozen=True)
class GenerationSettings:
    """A rejection-sampling or evaluation pass with transformers (names as in their configs)."""

    batch_size: int = 8  # prompts per generate call; each brings num_samples sequences
    num_samples: int = 8
    max_new_tokens: int = 1024
    prompt_length: int = 512
    load_in_4bit: bool = False
    lora_r: int | None = 16  # the stage's adapter; None for the base model
    # generate from a merged copy (`trl_r1.data.fast_generation`): the copy (bf16, adapter merged) replaces the
    # 4-bit model and the adapter once built; the static cache holds `prompt_length` + `max_new_tokens`
    fast: bool = False


def estimate_generation_peak(shape: ModelShape, settings: GenerationSettings = GenerationSettings()
                             ) -> MemoryEstimate:
    """Peak GPU memory of one transformers `generate` call of a generation pass: weights (bf16, or NF4 linear
    layers) + the adapter (PEFT keeps it in float32) + the KV cache of `batch_size x num_samples` full-length
    sequences, the prompts' prefill (one layer's activations) and the last-token logits (float32), summed (an
    upper bound: the prefill comes before the cache is full) + CUDA context and 10 %. Projected, not measured.
    """
    s = settings
    sequences = s.batch_size * s.num_samples  # transformers expands the prompts before the prefill
    prompt = s.prompt_length
    prefill = activation_terms(shape, GRPOSettings(max_prompt_length=prompt, max_completion_length=0,
                                                   per_device_train_batch_size=sequences))[1]
    dequantised = shape.hidden_size * shape.intermediate_size * 2 if s.load_in_4bit and not s.fast else 0
    generation = (sequences * (prompt + s.max_new_tokens) * kv_bytes_per_token(shape) + prefill
                  + sequences * shape.vocab_size * 4 + dequantised)
    if s.fast:
        generation += graph_pool_bytes(sequences, prompt + s.max_new_tokens, shape.num_heads, shape.intermediate_size,
                                       shape.vocab_size, 2)
        return finish_estimate(copy_bytes(shape.num_params, 2), 0.0, generation, 0.0, cpu=False)
    adapter = shape.lora_params(s.lora_r) * 4 if s.lora_r else 0
    return finish_estimate(weight_bytes(shape, s.load_in_4bit), adapter, generation, 0.0, cpu=False)


def generation_batch_size(shape: ModelShape, settings: GenerationSettings, card_gb: float,
                          limit: int = 1024) -> int:
    """The most prompts per `generate` call (each with `num_samples` sequences, all decoded together) whose
    estimated peak fits in 90% of the card, up to `limit`; 0 when not even one fits. What rejection sampling and
    evaluation use for `batch_size: auto` on a GPU.

    >>> qwen = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]
    >>> s = GenerationSettings(num_samples=8, max_new_tokens=8192, prompt_length=512, fast=True)
    >>> generation_batch_size(qwen, s, 24) < generation_batch_size(qwen, s, 80)
    True
    """
    budget = USABLE_FRACTION * card_gb * 1e9
    low, high = 0, limit
    while low < high:  # the peak grows with the batch: the largest batch that fits, by bisection
        middle = (low + high + 1) // 2
        if estimate_generation_peak(shape, replace(settings, batch_size=middle)).peak <= budget:
            low = middle
        else:
            high = middle - 1
    return low


@functools.lru_cache(maxsize=8)
def model_shape(model_path: str):
    """The memory model's `ModelShape` of a model: a recipe model's known config (no download), else its
    config.json (a local directory, or the Hub when reachable); None when neither is at hand."""
    from ..rehearsal.models import MODELS

    known = {name.lower(): name for name in MODELS}
    if model_path.lower() in known:
        return spec_shape(known[model_path.lower()])
    try:
        from transformers import AutoConfig

        c = AutoConfig.from_pretrained(model_path)
    except (OSError, ValueError):
        return None
    return ModelShape.from_model_config(model_path, c)


def adapter_rank(adapter_path: str | None) -> int | None:
    """The LoRA rank of the adapter saved at `adapter_path` (its adapter_config.json), for the memory model; None
    without an adapter.

    >>> import json, tempfile; from pathlib import Path
    >>> folder = tempfile.mkdtemp(); _ = (Path(folder) / "adapter_config.json").write_text(json.dumps({"r": 64}))
    >>> adapter_rank(folder), adapter_rank(None)
    (64, None)
    """
    if not adapter_path:
        return None
    config = Path(adapter_path) / "adapter_config.json"
    return int(json.loads(config.read_text()).get("r", 16)) if config.is_file() else 16


def card_generation_batch(model_path: str, settings: GenerationSettings, card_gb: float | None = None
                          ) -> tuple[int, str]:
    """(prompts per `generate` call, why) for a transformers generation pass (rejection sampling, evaluation) of
    the model at `model_path` on this machine's GPU (or a `card_gb` one): the largest batch the memory model fits
    in 90% of the card (`generation_batch_size`, all its sequences decoded together: the step time is flat in the
    batch); the configured `settings.batch_size` without a GPU, or when not even it fits.

    >>> import tempfile
    >>> from trl_r1.toy import build_tiny_model
    >>> path = str(build_tiny_model(tempfile.mkdtemp()))
    >>> card_generation_batch(path, GenerationSettings(batch_size=8, num_samples=8, fast=True), 24)[0]
    1024
    >>> card_generation_batch(path, GenerationSettings(batch_size=8))[0] if card_memory_gb() is None else 8
    8
    """
    if card_gb is None:
        if card_memory_gb() is None:
            return settings.batch_size, "no GPU: the configured batch_size"
        card_gb = card_memory_gb()[1]
    shape = model_shape(str(model_path))
    if shape is None:
        return settings.batch_size, f"no config for {model_path}: the configured batch_size"
    fitted = generation_batch_size(shape, settings, card_gb)
    if fitted < 1:
        return settings.batch_size, f"the memory model fits no batch on {card_gb:.0f} GB: the configured batch_size"
    return fitted, (f"{fitted} prompts x {settings.num_samples} samples fit in {USABLE_FRACTION:.0%} of "
                    f"{card_gb:.0f} GB (memory model, {settings.prompt_length}-token prompts)")


def card_memory_gb() -> tuple[str, float] | None:
    """(name, GB) of the GPU this process sees, None without one."""
    import torch

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return props.name, props.total_memory / 1e9


BENCH_PROMPT, BENCH_BATCH = 64, 4  # benchmarks/memory.py: prompt tokens, completions (sequences) per step
CalibrationPoint = tuple[str, str, int, str, float]  # (trainer, mode, completion length, setup, measured GiB)


def bench_settings(mode: str, length: int, setup: str) -> GRPOSettings:
    """The settings of a `benchmarks/memory.py` point: float32 on the CPU, one step of `BENCH_BATCH` sequences."""
    return GRPOSettings(max_prompt_length=BENCH_PROMPT, max_completion_length=length,
                        per_device_train_batch_size=BENCH_BATCH, gradient_accumulation_steps=1,
                        load_in_4bit=mode == "qlora", gradient_checkpointing=setup == "trl-r1", dtype_bytes=4)


def cpu_estimate_gib(trainer: str, mode: str, length: int, setup: str,
                     constants: tuple[float, float] | None = None) -> float:
    """The formula's CPU figure for a benchmark point; `constants` (activation factor, CPU overhead GiB) default to
    the fitted ones."""
    factor, overhead = constants or (ACTIVATION_FACTOR, CPU_OVERHEAD_GIB)
    estimate = (estimate_grpo_peak if trainer == "grpo" else estimate_sft_peak)(
        model_shapes()["Qwen/Qwen2.5-0.5B-Instruct"], bench_settings(mode, length, setup), activation_factor=factor,
        cpu=True)
    return estimate.peak / GIB + overhead


def fit_calibration(points: list[CalibrationPoint]) -> tuple[float, float]:
    """(activation factor, CPU overhead GiB) minimising the squared error of `cpu_estimate_gib` on `points`.

    The formula is linear in both: measured = rest + factor x (recomputed activations) + overhead. The factor is
    kept at least `MIN_ACTIVATION_FACTOR` (a layer's backward holds its outputs and their gradients): CPU peak RSS
    also counts heap that glibc kept after loading, noise that can pull a free fit below what physics allows.
    """
    shape = model_shapes()["Qwen/Qwen2.5-0.5B-Instruct"]
    xs, ys = [], []
    for trainer, mode, length, setup, measured in points:
        xs.append(activation_terms(shape, bench_settings(mode, length, setup))[1] / GIB)
        ys.append(measured - cpu_estimate_gib(trainer, mode, length, setup, (0.0, 0.0)))
    n, sx, sy = len(xs), sum(xs), sum(ys)
    sxx, sxy = sum(x * x for x in xs), sum(x * y for x, y in zip(xs, ys))
    spread = n * sxx - sx * sx  # 0 when every point has the same activation term (one point, say): no slope
    factor = max(MIN_ACTIVATION_FACTOR, (n * sxy - sx * sy) / spread if spread > 1e-12 else MIN_ACTIVATION_FACTOR)
    return round(factor, 2), round((sy - factor * sx) / n, 2)


def calibration_error(points: list[CalibrationPoint] | None = None,
                      constants: tuple[float, float] | None = None) -> list[tuple[str, str, int, str, float, float]]:
    """(trainer, mode, length, setup, measured GiB, formula GiB) for each CPU point (default: `CALIBRATION`).

    >>> errors = [abs(formula / measured - 1) for *_, measured, formula in calibration_error()]
    >>> len(errors) >= 4 and max(errors) <= MAX_CALIBRATION_ERROR + 0.005
    True
    """
    return [(trainer, mode, length, setup, measured, cpu_estimate_gib(trainer, mode, length, setup, constants))
            for trainer, mode, length, setup, measured in (CALIBRATION if points is None else points)]


def gpu_point_settings(point: dict) -> GRPOSettings:
    """The settings of a measured GPU point (a `benchmarks/data/gpu_points.jsonl` row, as `benchmarks/gpu.py`
    writes them): one step of `per_device_train_batch_size` sequences, bf16, gradient checkpointing."""
    return GRPOSettings(max_prompt_length=point["prompt_length"], max_completion_length=point["completion_length"],
                        per_device_train_batch_size=point["per_device_train_batch_size"],
                        gradient_accumulation_steps=point.get("gradient_accumulation_steps", 1),
                        lora_r=point.get("lora_r", 16), load_in_4bit=point["mode"] == "qlora",
                        gradient_checkpointing=point.get("gradient_checkpointing", True))


def gpu_point_estimate(point: dict, shape: ModelShape | None = None) -> MemoryEstimate:
    """The formula's estimate for a measured GPU point (`shape` defaults to the point's model)."""
    shape = shape or model_shapes()[point["model"]]
    if point["trainer"] == "sft":
        return estimate_sft_peak(shape, gpu_point_settings(point))
    return estimate_grpo_peak(shape, gpu_point_settings(point))


def gpu_calibration_error(points: list[dict]) -> list[tuple[dict, float, float]]:
    """(point, measured `max_memory_reserved` GiB, the formula's `reserved` GiB) for each measured GPU point.

    >>> point = {"model": "Qwen/Qwen2.5-1.5B-Instruct", "trainer": "sft", "mode": "qlora", "prompt_length": 64,
    ...          "completion_length": 4032, "per_device_train_batch_size": 2, "peak_reserved_gib": 3.42}
    >>> (_, measured, formula), = gpu_calibration_error([point])
    >>> abs(formula / measured - 1) <= MAX_GPU_CALIBRATION_ERROR
    True
    """
    return [(p, p["peak_reserved_gib"], gpu_point_estimate(p).reserved / GIB) for p in points]


VLLM_TABLE = GRPOSettings(load_in_4bit=False, use_vllm=True, vllm_gpu_memory_utilization=0.4,
                          vllm_enable_sleep_mode=True)  # LoRA on the bf16 base, as the vLLM recipes run it


def markdown_table(settings: GRPOSettings = GRPOSettings()) -> str:
    """Per model and card: the longest completion and largest micro-batch that fit, and the estimated peak."""
    s = settings
    base = ("the 4-bit base, vLLM serving it with the LoRA adapter unmerged" if s.vllm_lora_adapter else
            "the bf16 base")
    setup = (f"LoRA on {base} with vLLM colocate (`vllm_gpu_memory_utilization` {s.vllm_gpu_memory_utilization}"
             f" of the card, sleep mode {'on' if s.vllm_enable_sleep_mode else 'off'}; the vLLM share is projected "
             "from vLLM's and TRL's documented behaviour)" if s.use_vllm else
             f"{'QLoRA' if s.load_in_4bit else 'LoRA on the bf16 base'}, generation with transformers")
    intro = (
        f"Projected peak GPU memory of one GRPO step with TRL 1.16, {setup} (`trl_r1.trainers.memory`, calibrated "
        f"on one-step peaks measured on an NVIDIA H200, within {MAX_GPU_CALIBRATION_ERROR:.0%} of each; "
        f"prompt {s.max_prompt_length} tokens, 32 completions per step, LoRA "
        f"r={s.lora_r} on all linear layers, 8-bit AdamW, gradient checkpointing). Each card column gives the "
        "longest `max_completion_length`, then the largest `per_device_train_batch_size`, that fit in 90% of the "
        "card" + (" with vLLM able to start (its KV cache holds one prompt + completion)" if s.use_vllm else "")
        + ", and the estimated peak."
    )
    weights = "4-bit weights" if s.load_in_4bit else "bf16 weights"
    lines = [intro, "", f"| model | params | {weights} | peak @ 1024 x 8 (24 GB card) | "
             + " | ".join(f"{c} GB card" for c in CARDS_GB) + " |", "|---|---|---|---|" + "---|" * len(CARDS_GB)]
    for shape in model_shapes().values():
        base = estimate_grpo_peak(shape, s, card_gb=CARDS_GB[0])
        cells = []
        for card in CARDS_GB:
            fit = fits(shape, card, s)
            cells.append(f"{fit[0].max_completion_length} tok x {fit[0].per_device_train_batch_size}, "
                         f"{fit[1].peak / 1e9:.1f} GB" if fit else "does not fit")
        lines.append(f"| {shape.name} | {shape.num_params / 1e9:.2f} B | {base.weights / 1e9:.1f} GB | "
                     f"{base.peak / 1e9:.1f} GB | " + " | ".join(cells) + " |")
    return "\n".join(lines)


VLLM_4BIT_TABLE = replace(VLLM_TABLE, load_in_4bit=True, vllm_lora_adapter=True)  # vLLM on the 4-bit base + LoRA


def sft_markdown_table(settings: GRPOSettings = GRPOSettings()) -> str:
    """Per model and card: the longest SFT `max_length`, then the largest micro-batch, that fit (`sft_fits`)."""
    lines = [f"Projected peak GPU memory of one SFT step with TRL 1.16 ({'QLoRA' if settings.load_in_4bit else 'LoRA'}"
             f", fused log-prob head, LoRA r={settings.lora_r}, 8-bit AdamW, gradient checkpointing): per card, the "
             "longest `max_length` (up to 32768 and the model's context), then the largest "
             "`per_device_train_batch_size`, that fit in 90% of the card.", "",
             "| model | " + " | ".join(f"{c} GB card" for c in CARDS_GB) + " |", "|---|" + "---|" * len(CARDS_GB)]
    for shape in model_shapes().values():
        cells = []
        for card in CARDS_GB:
            fit = sft_fits(shape, card, settings)
            cells.append(f"{fit[0]} x {fit[1]}, {fit[2].peak / 1e9:.1f} GB" if fit else "does not fit")
        lines.append(f"| {shape.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def gpu_calibration_table(points: list[dict]) -> str:
    """The measured GPU points beside the formula (`python -m trl_r1.trainers.memory --gpu-points FILE`)."""
    lines = ["| card | versions (torch, transformers, TRL, PEFT, bitsandbytes) | model | step | tokens per micro-batch "
             "| measured peak reserved | formula (reserved) | error |", "|---|---|---|---|---|---|---|---|"]
    for point, measured, formula in gpu_calibration_error(points):
        v = point["versions"]
        versions = ", ".join(str(v.get(k)) for k in ("torch", "transformers", "trl", "peft", "bitsandbytes"))
        length, batch = point["prompt_length"] + point["completion_length"], point["per_device_train_batch_size"]
        sequences = batch * point.get("gradient_accumulation_steps", 1)
        step = (f"SFT {point['mode']}, {length} x {batch}" if point["trainer"] == "sft" else
                f"GRPO {point['mode']}, {sequences} x ({point['prompt_length']} + {point['completion_length']}), "
                f"{point.get('generation') or 'transformers'} generation")
        lines.append(f"| {point['card']} | {versions} | {point['model']} | {step} | {length * batch:,} | "
                     f"{measured:.2f} GiB | {formula:.2f} GiB | {formula / measured - 1:+.0%} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    if "--gpu-points" in sys.argv:
        path = sys.argv[sys.argv.index("--gpu-points") + 1]
        with open(path) as file:
            print(gpu_calibration_table([json.loads(line) for line in file if line.strip()]))
    else:
        print(sft_markdown_table(), markdown_table(), markdown_table(VLLM_TABLE), markdown_table(VLLM_4BIT_TABLE),
              sep="\n\n")
