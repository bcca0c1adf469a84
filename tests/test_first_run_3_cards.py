"""Issue 35, items 4 and 5: estimates scale to the card named, vLLM stages at a vLLM rate, and `--card t4` refuses
the precisions a T4 lacks."""

import pytest

from trl_r1.pipeline import load_recipe
from trl_r1.pipeline.preflight import card_precision_problems
from trl_r1.trainers.speed import CARDS, parse_card
from trl_r1.trainers.speed import stage_rate

QWEN_1_5B = (1543569408, 28)


def gpu_recipe(**training):
    return load_recipe({"run_dir": "/tmp/r", "model": {"model_name_or_path": "m"},
                        "training": {"bf16": True, **training},
                        "cold_start": {"dataset_name": "d"}, "rl": {"dataset_name": "d"}}, check_hardware=False)


def test_t4_refuses_bf16_naming_the_key_and_the_fix():
    recipe = gpu_recipe()
    problems = card_precision_problems(recipe.stages, parse_card("t4"))
    assert problems and all("bf16: true" in p and "`bf16: false, fp16: true`" in p for p in problems)
    assert {p.split(":")[0] for p in problems} == {"cold_start", "rl"}
    assert card_precision_problems(recipe.stages, parse_card("l4")) == []
    assert card_precision_problems(recipe.stages, parse_card("24")) == []  # a size: its features are unknown


def test_tf32_refused_before_ampere_and_fp16_accepted_on_a_t4():
    recipe = gpu_recipe(bf16=False, fp16=True)
    for plan in recipe.stages:  # transformers refuses tf32 when the config is built without an Ampere GPU
        plan.config.tf32 = True
    problems = card_precision_problems(recipe.stages, parse_card("t4"))
    assert problems and all("tf32: true" in p and "`tf32: false`" in p for p in problems)
    assert card_precision_problems(recipe.stages, parse_card("a100")) == []
    assert card_precision_problems(gpu_recipe(bf16=False, fp16=True).stages, parse_card("t4")) == []


def test_every_card_has_its_figures_and_a_source():
    for key in ("t4", "l4", "a10g", "3090", "4090", "a100-40", "a100", "h100", "h200"):
        card = CARDS[key]
        assert card.memory_gb > 0 and card.bandwidth_gb_s > 0 and card.tflops > 0 and card.source
    assert not CARDS["t4"].bf16 and CARDS["l4"].bf16


@pytest.mark.parametrize("work,backend,weights,adapter,batch", [
    ("training", "sft", "nf4", True, 2), ("generation", "transformers", "nf4", True, 8),
    ("generation", "vllm", "bf16", False, 64)])
def test_an_h100_estimate_is_below_a_t4s(work, backend, weights, adapter, batch):
    h100 = stage_rate(work, "NVIDIA H100", *QWEN_1_5B, backend, weights, adapter, batch)
    t4 = stage_rate(work, "NVIDIA T4", *QWEN_1_5B, backend, weights, adapter, batch)
    tokens = 1e9
    assert h100.seconds(tokens)[1] < t4.seconds(tokens)[1] / 2  # 3350 vs 320 GB/s, 989 vs 65 TFLOPs
    assert "NVIDIA T4" in t4.how and "datasheet" in t4.how


@pytest.mark.parametrize("card", ["NVIDIA L4", "NVIDIA H100", "NVIDIA T4"])
def test_a_vllm_stage_is_faster_than_transformers_on_the_same_card(card):
    vllm = stage_rate("generation", card, *QWEN_1_5B, "vllm", "bf16", False, 64)
    transformers = stage_rate("generation", card, *QWEN_1_5B, "transformers", "bf16", False, 64)
    assert vllm.seconds(1e9)[1] < transformers.seconds(1e9)[1]
    assert not vllm.measured and "vLLM PR #20059" in vllm.how  # a published figure, named, never "measured"


def test_on_the_cpu_a_vllm_stage_falls_back_to_the_transformers_rate():
    rate = stage_rate("generation", "CPU", 134479872, 30, "vllm", "float32", True, 64)
    assert "the transformers rate for vllm" in rate.how
