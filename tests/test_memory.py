"""The memory formula behind the recipes' card sizes: calibrated on GPU measurements (the CPU ones as a secondary
check), and the recipes use it."""

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from trl_r1.trainers.memory import (
    CALIBRATION,
    CUDA_CONTEXT_GIB,
    GIB,
    MAX_CALIBRATION_ERROR,
    MAX_GPU_CALIBRATION_ERROR,
    NF4_BITS,
    USABLE_FRACTION,
    VLLM_ASLEEP_FRACTION,
    VLLM_RUNTIME_GIB,
    GenerationSettings,
    GRPOSettings,
    ModelShape,
    activation_terms,
    calibration_error,
    estimate_generation_peak,
    estimate_grpo_peak,
    estimate_sft_peak,
    fit_calibration,
    fits,
    gpu_calibration_error,
    gpu_point_estimate,
    head_bytes,
    model_shapes,
    sft_fits,
    vllm_kv_tokens,
    vllm_lora_bytes,
    weight_bytes,
)

ROOT = Path(__file__).resolve().parents[1]
# hidden 64, 2 layers, MLP 128, 4 heads, 2 KV heads of 16, vocabulary 1000, tied embeddings
TOY = ModelShape("toy", 64, 2, 128, 4, 2, 16, 1000, True)
TOY_WEIGHTS = 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128) * 2 + 1000 * 64 * 2  # bf16: 275456 bytes


def test_the_stated_error_is_the_formulas_error_on_the_measured_points():
    errors = [abs(formula / measured - 1) for *_, measured, formula in calibration_error()]
    assert len(errors) == len(CALIBRATION) >= 4
    assert max(errors) == pytest.approx(MAX_CALIBRATION_ERROR, abs=0.005)  # the docstring's figure, not a bound


def test_the_constants_are_the_least_squares_fit_of_the_measured_points():
    from trl_r1.trainers import memory

    factor, overhead = fit_calibration(CALIBRATION)
    assert factor == pytest.approx(memory.ACTIVATION_FACTOR, abs=0.01)
    assert overhead == pytest.approx(memory.CPU_OVERHEAD_GIB, abs=0.01)
    assert NF4_BITS == pytest.approx(4.127, abs=0.001)


def _size_recipes():
    spec = importlib.util.spec_from_file_location("size_recipes", ROOT / "benchmarks" / "size_recipes.py")
    size_recipes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(size_recipes)
    return size_recipes


# the GPU recipes (tiny/ and smollm2-135m-instruct/ run on CPU; size_recipes.py sizes the same set)
RECIPES = [p for p in sorted(ROOT.glob("recipes/*/*.yaml")) if p.stem in ("math", "code")]


def test_every_shipped_recipe_is_sized_by_the_calibrated_formula():
    size_recipes = _size_recipes()
    recipes = RECIPES
    assert len(recipes) == 18
    stale = [p.name for p in recipes if size_recipes.size_recipe(p) != p.read_text()]
    assert not stale, "run python benchmarks/size_recipes.py"


def test_a_single_point_is_fitted_with_the_floor_factor():
    """One measured point (benchmarks/memory.py --only N) has no slope to fit: the factor stays at its floor and
    the overhead absorbs the rest, so the formula meets that point exactly."""
    from trl_r1.trainers.memory import MIN_ACTIVATION_FACTOR, cpu_estimate_gib

    point = ("grpo", "lora", 128, "stock", 6.10)
    factor, overhead = fit_calibration([point])
    assert factor == MIN_ACTIVATION_FACTOR
    assert cpu_estimate_gib(*point[:4], (factor, overhead)) == pytest.approx(6.10, abs=0.01)


def test_vllm_colocate_terms_by_hand_for_a_toy_shape():
    """vLLM takes utilization x card while it generates; asleep it keeps VLLM_ASLEEP_FRACTION of that; the
    trainer holds no KV cache of its own; the 10 % fragmentation is charged on the trainer's terms only."""
    assert weight_bytes(TOY, load_in_4bit=False) == TOY_WEIGHTS == 275456
    settings = GRPOSettings(max_prompt_length=8, max_completion_length=8, per_device_train_batch_size=2,
                            lora_r=4, load_in_4bit=False, use_vllm=True, vllm_gpu_memory_utilization=0.5,
                            vllm_enable_sleep_mode=True)
    est = estimate_grpo_peak(TOY, settings, card_gb=10)
    assert (est.weights, est.generation, est.vllm_generating) == (TOY_WEIGHTS, 0.0, 5e9)
    assert est.vllm_training == pytest.approx(VLLM_ASLEEP_FRACTION * 5e9)
    assert est.lora_state == 2 * 4 * (128 + 2 * 96 + 128 + 2 * 192 + 192) * 10  # r x (in + out), 10 B each
    trainer = TOY_WEIGHTS + est.lora_state + est.training
    assert est.overhead == pytest.approx(CUDA_CONTEXT_GIB * GIB + 0.1 * trainer)
    assert est.peak == pytest.approx(max(trainer - est.training + 5e9, trainer + 0.5e9) + est.overhead)
    # vLLM's KV cache: its budget less its bf16 weights and working memory, 2 (K, V) x 2 layers x 2 x 16 x 2 B
    assert vllm_kv_tokens(TOY, 10, 0.5) == int((5e9 - TOY_WEIGHTS - VLLM_RUNTIME_GIB * GIB) // 256)
    with pytest.raises(ValueError, match="card_gb"):
        estimate_grpo_peak(TOY, settings)


def test_sleep_mode_frees_vllms_budget_for_the_training_step_only():
    shape = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]
    awake = GRPOSettings(max_completion_length=8192, per_device_train_batch_size=8, load_in_4bit=False,
                         use_vllm=True, vllm_gpu_memory_utilization=0.3)
    asleep = estimate_grpo_peak(shape, GRPOSettings(**{**awake.__dict__, "vllm_enable_sleep_mode": True}), card_gb=24)
    awake = estimate_grpo_peak(shape, awake, card_gb=24)
    assert asleep.generation_peak == awake.generation_peak
    assert awake.training_peak - asleep.training_peak == pytest.approx((1 - VLLM_ASLEEP_FRACTION) * 0.3 * 24e9)
    assert asleep.peak < awake.peak
    # without vLLM the same step generates with transformers: a KV cache of all 32 sequences, no vLLM share
    plain = estimate_grpo_peak(shape, GRPOSettings(max_completion_length=8192, per_device_train_batch_size=8,
                                                   load_in_4bit=False))
    assert plain.vllm_generating == plain.vllm_training == 0 and plain.generation > 0


def test_four_bit_weights_are_about_a_quarter_of_bf16():
    shape = model_shapes()["Qwen/Qwen3-8B"]
    bf16, nf4 = weight_bytes(shape, False), weight_bytes(shape, True)
    linear = shape.num_layers * shape.linear_params_per_layer
    assert bf16 - nf4 == pytest.approx(linear * (2 - NF4_BITS / 8))
    assert 16e9 < bf16 < 17e9 and nf4 < bf16 / 2.5  # Qwen3-8B: 16.4 GB in bf16, the untied embeddings stay bf16
    run = GenerationSettings(batch_size=2, num_samples=8, max_new_tokens=2048)
    assert estimate_generation_peak(shape, replace(run, load_in_4bit=True)).peak < estimate_generation_peak(
        shape, run).peak


def test_a_generation_pass_by_hand_for_a_toy_shape():
    """transformers generate: KV cache of batch x samples full sequences + one layer's prefill + last-token logits."""
    est = estimate_generation_peak(TOY, GenerationSettings(batch_size=2, num_samples=3, max_new_tokens=10,
                                                           prompt_length=6, lora_r=None))
    kv = 6 * (6 + 10) * 256
    prefill = 6 * 6 * (2 * 64 + (64 + 2 * 32 + 64) + 3 * 128) * 2
    assert (est.weights, est.lora_state, est.generation) == (TOY_WEIGHTS, 0, kv + prefill + 6 * 1000 * 4)


def test_vllm_must_hold_one_full_sequence_to_start():
    """A bf16 7B beside vLLM's own bf16 copy leaves no KV cache on a 24 GB card: no setting fits; on 48 GB the
    chosen prompt + completion fits in vLLM's KV cache."""
    shape = model_shapes()["Qwen/Qwen2.5-7B-Instruct"]
    settings = GRPOSettings(load_in_4bit=False, use_vllm=True, vllm_gpu_memory_utilization=0.4,
                            vllm_enable_sleep_mode=True)
    assert vllm_kv_tokens(shape, 24, 0.4) == 0 and fits(shape, 24, settings) is None
    chosen, estimate = fits(shape, 48, settings)
    assert chosen.max_prompt_length + chosen.max_completion_length <= vllm_kv_tokens(shape, 48, 0.4)
    assert estimate.peak <= USABLE_FRACTION * 48e9


@pytest.mark.parametrize("path", RECIPES, ids=[f"{p.parent.name}/{p.name}" for p in RECIPES])
def test_each_recipe_fits_a_24_gb_card_as_it_runs(path):
    """From the file's own settings: its rl step (vLLM colocate or transformers generation, 4-bit or bf16 base),
    and the transformers fallback of its rejection sampling and evaluation fit 90% of 24 GB."""
    data, size_recipes = yaml.safe_load(path.read_text()), _size_recipes()
    shape = model_shapes()[data["model"]["model_name_or_path"]]
    rl = replace(size_recipes.rl_settings(data), max_completion_length=data["rl"]["max_completion_length"],
                 per_device_train_batch_size=data["rl"]["per_device_train_batch_size"],
                 gradient_accumulation_steps=data["rl"]["gradient_accumulation_steps"])
    assert rl.use_vllm == bool(data["rl"].get("use_vllm"))
    limit = USABLE_FRACTION * 24e9
    assert estimate_grpo_peak(shape, rl, card_gb=24).peak <= limit
    if rl.use_vllm:
        assert data["rl"]["vllm_max_model_length"] == rl.max_prompt_length + rl.max_completion_length
        assert vllm_kv_tokens(shape, 24, rl.vllm_gpu_memory_utilization,
                              rl.load_in_4bit) >= data["rl"]["vllm_max_model_length"]
    for stage in ("cold_start", "final_sft"):  # long traces kept whole: >= 16k tokens up to 3B, on the card
        sft = data[stage]
        assert sft["max_length"] >= (16384 if shape.num_params < 3.5e9 else 8192)
        assert estimate_sft_peak(shape, GRPOSettings(max_prompt_length=0, max_completion_length=sft["max_length"],
                                                     per_device_train_batch_size=sft["per_device_train_batch_size"]
                                                     )).peak <= limit
        assert sft["per_device_train_batch_size"] * sft["gradient_accumulation_steps"] == 16
    rs, ev = data["rejection_sampling"], data["evaluation"]
    assert estimate_generation_peak(shape, GenerationSettings(
        rs["batch_size"], rs["num_samples"], rs["max_new_tokens"], load_in_4bit=rs["load_in_4bit"])).peak <= limit
    assert estimate_generation_peak(shape, GenerationSettings(
        ev["batch_size"], ev["num_samples"], ev["max_new_tokens"], lora_r=None)).peak <= limit


GPU_POINTS = [json.loads(line) for line in (ROOT / "benchmarks" / "data" / "gpu_points.jsonl").read_text().splitlines()]


def test_the_formula_meets_every_measured_gpu_point_within_25_percent():
    """The points measured on a GPU (issue 20's H200 table, kept as data with card and versions) against the
    formula's `reserved` figure (the peak without the CUDA context, as torch.cuda.max_memory_reserved counts)."""
    assert len(GPU_POINTS) >= 5 and all(p["card"] and p["versions"]["trl"] for p in GPU_POINTS)
    errors = [formula / measured - 1 for _, measured, formula in gpu_calibration_error(GPU_POINTS)]
    assert max(abs(e) for e in errors) == pytest.approx(MAX_GPU_CALIBRATION_ERROR, abs=0.005)
    assert MAX_GPU_CALIBRATION_ERROR <= 0.25
    # SFT: 0.25 GiB per 1,000 tokens of micro-batch measured; the old full-logits term was 5x that
    sft = {(p["completion_length"], p["per_device_train_batch_size"]): p for p in GPU_POINTS if p["trainer"] == "sft"}
    small, large = gpu_point_estimate(sft[4032, 2]), gpu_point_estimate(sft[4032, 8])
    assert 0.2 < (large.reserved - small.reserved) / GIB / 24.576 < 0.3


def test_sft_has_no_full_logits_unless_the_loss_needs_them():
    """TRL 1.16's SFTTrainer projects through the fused, chunked head (two [4096, 32768] tiles); label smoothing or
    a compute_loss_func brings back [tokens, vocab] logits in bf16 + their float32 upcast + float32 gradient."""
    shape = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]
    one = GRPOSettings(max_prompt_length=0, max_completion_length=16384, per_device_train_batch_size=1)
    fused, full = estimate_sft_peak(shape, one), estimate_sft_peak(shape, one, full_logits=True)
    assert head_bytes(shape, 16384) == 2 * 4096 * 32768 * 2
    assert full.training - fused.training == 16384 * shape.vocab_size * (2 + 4 + 4)
    # sdpa's padding mask appears with a second sequence: batch x length^2 bytes
    two = estimate_sft_peak(shape, replace(one, per_device_train_batch_size=2))
    kept, layer = activation_terms(shape, one)
    assert two.training - fused.training == pytest.approx(kept + 2 * layer + 2 * 16384 ** 2)


def test_sft_fits_uses_the_card_for_long_traces():
    """Up to 3B, a 24 GB card holds at least a 16k-token max_length; an 8B holds 16k on 24 GB and 32k on 48 GB."""
    for name, shape in model_shapes().items():
        length, batch, estimate = sft_fits(shape, 24)
        assert estimate.peak <= USABLE_FRACTION * 24e9
        if shape.num_params < 3.5e9:
            assert length >= 16384, name
    length, batch, _ = sft_fits(model_shapes()["Qwen/Qwen3-8B"], 48)
    assert (length, batch) == (32768, 1)
    assert sft_fits(TOY, 0.001) is None


def test_vllm_serving_the_4bit_base_with_an_unmerged_adapter():
    """vLLM colocate on the 4-bit base + LoRA slots: its weights are NF4, its budget also holds max_loras adapter
    slots in bf16, and the trainer trains on the 4-bit base."""
    shape = model_shapes()["Qwen/Qwen2.5-7B-Instruct"]
    settings = GRPOSettings(load_in_4bit=True, use_vllm=True, vllm_gpu_memory_utilization=0.4,
                            vllm_enable_sleep_mode=True, vllm_lora_adapter=True, vllm_max_loras=2)
    slots = vllm_lora_bytes(shape, settings)
    assert slots == 2 * shape.lora_params(16) * 2
    assert vllm_lora_bytes(shape, replace(settings, vllm_lora_adapter=False)) == 0
    kv = vllm_kv_tokens(shape, 24, 0.4, load_in_4bit=True, lora_bytes=slots)
    assert kv == int((0.4 * 24e9 - weight_bytes(shape, True) - slots - VLLM_RUNTIME_GIB * GIB)
                     // (2 * shape.num_layers * shape.num_kv_heads * shape.head_dim * 2))
    # the bf16 7B beside vLLM's bf16 copy does not fit a 24 GB card (test above); the 4-bit one with its adapter does
    chosen, estimate = fits(shape, 24, settings)
    assert estimate.weights == weight_bytes(shape, True) and estimate.peak <= USABLE_FRACTION * 24e9
    assert chosen.max_prompt_length + chosen.max_completion_length <= kv
