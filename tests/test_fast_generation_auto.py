"""Issue 33, round 3: one rule for `fast_generation: auto` in the trainer and the dry run, the memory the fast path
holds beside the training step (on CPU too), and one tokenizing pass over the training prompts at the trainer's
build."""

import logging
from dataclasses import replace

import pytest
import torch
from datasets import Dataset

from tests.conftest import recipe
from trl_r1.data.fast_generation import (MergedPolicy, copy_bytes, graph_pool_bytes, refresh_state_bytes,
                                         static_cache_bytes)
from trl_r1.trainers.memory import GRPOSettings, estimate_grpo_peak, fast_generation_fits, model_shape, model_shapes


def _rl_trainer(model_dir, args, dataset):
    from peft import LoraConfig

    from trl_r1.trainers import R1GRPOTrainer

    return R1GRPOTrainer(model=str(model_dir), args=args, train_dataset=dataset,
                         reward_funcs=lambda completions, **kw: [0.0] * len(completions),
                         peft_config=LoraConfig(r=4, target_modules="all-linear"))


def test_the_trainer_and_the_dry_run_decide_auto_by_one_rule(workdir, tiny_model_dir):
    """The rl stage of a recipe, its trainer built from the same config and data: for every card size around the
    threshold both take the same path. Just under it the old run-time rule (the copy, cache and pool within half
    the card) took the fast path that the dry run's memory model refuses: the training step's own peak was not
    counted there."""
    from trl_r1.pipeline import load_recipe
    from trl_r1.pipeline.preflight import stage_peak
    from trl_r1.trainers.trl_compat import fast_generation_choice, longest_train_prompt, rl_step_figures

    data = recipe(model={"model_name_or_path": "tiny", "use_peft": True, "lora_r": 4, "load_in_4bit": False,
                         "dtype": "float32"}, rl={"dataset_name": "prompts.jsonl", "rewards": ["format"],
                                                  "per_device_train_batch_size": 4, "num_generations": 4,
                                                  "max_completion_length": 8, "fast_generation": "auto"})
    plan = load_recipe(data, check_hardware=False).stage("rl")
    trainer = _rl_trainer(tiny_model_dir, plan.config, Dataset.from_json("prompts.jsonl"))
    shape, settings = rl_step_figures(trainer)
    longest = longest_train_prompt(trainer)
    assert longest and settings.max_prompt_length == longest < 512  # the data's prompts, not 512
    threshold = fast_generation_fits(shape, settings, 1.0)[1].peak / 0.9e9  # the card the fast step just fits

    def dry_run_takes_fast(card_gb: float) -> bool:
        peaks = {}
        for setting in ("auto", "on", "off"):
            plan.config.fast_generation = setting
            peaks[setting] = stage_peak(plan, None, model_shape(str(tiny_model_dir)), card_gb, vllm=False,
                                        longest_prompt=longest)[0]
        plan.config.fast_generation = "auto"
        assert peaks["on"] > peaks["off"]
        return peaks["auto"] == peaks["on"]

    for card_gb in (0.9 * threshold, 0.999 * threshold, 1.001 * threshold, 1.2 * threshold):
        trainer_fast, reason = fast_generation_choice(trainer, card_gb)
        assert trainer_fast == dry_run_takes_fast(card_gb) == (card_gb > threshold), (card_gb, reason)
    under = 0.999 * threshold
    sequences = settings.per_device_train_batch_size * settings.gradient_accumulation_steps  # TRL's generation batch
    length = settings.fast_generation_prompt_length + settings.max_completion_length
    old_rule_needed = copy_bytes(shape.num_params, 2) + static_cache_bytes(
        sequences, length, shape.num_layers, shape.num_kv_heads, shape.head_dim, 2) + graph_pool_bytes(
        sequences, length, shape.num_heads, shape.intermediate_size, shape.vocab_size, 2)
    assert old_rule_needed < under * 1e9 / 2  # the old rule said fast here
    assert "over 90% of the" in fast_generation_choice(trainer, under)[1]


def test_the_memory_model_counts_what_refresh_keeps_as_the_copy_holds_it(tiny_model_dir):
    """`refresh_state_bytes` against a real `MergedPolicy` of a LoRA policy on CPU (the kept dequantized bases and
    the adapter snapshots), and the memory model adds it, with the decoder, beside the training step."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    policy = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32),
                            LoraConfig(r=4, target_modules="all-linear"))
    fast = MergedPolicy(policy)  # on CPU it keeps the bases
    kept = sum(base.numel() * base.element_size() for base in fast._bases)
    snapshot = sum(t.numel() * t.element_size() for state, _ in fast._written for t in state[4])
    lora = sum(p.numel() for name, p in policy.named_parameters() if "lora_" in name)
    adapted = sum(target.numel() for target, _ in fast._adapted)
    assert kept + snapshot == refresh_state_bytes(lora, adapted, 4, keep_base=True) > 0
    assert refresh_state_bytes(lora, adapted, 2, keep_base=False) == snapshot  # a GPU copy keeps no base

    qwen = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]
    fast_settings = GRPOSettings(fast_generation=True, dtype_bytes=4)
    on_cpu, on_gpu = estimate_grpo_peak(qwen, fast_settings, cpu=True), estimate_grpo_peak(qwen, fast_settings)
    adapted_params = qwen.num_layers * qwen.linear_params_per_layer
    assert on_cpu.policy_copy - on_gpu.policy_copy == adapted_params * 4  # the kept bases, CPU only
    assert on_gpu.policy_copy == copy_bytes(qwen.num_params, 4) + qwen.lora_params(16) * 4
    plain = estimate_grpo_peak(qwen, replace(fast_settings, fast_generation=False))
    # the copy and the decoder are held through the training step: its peak grows by both
    assert on_gpu.training_peak - on_gpu.overhead == pytest.approx(
        plain.training_peak - plain.overhead + on_gpu.policy_copy + on_gpu.decoder)


def test_the_dry_run_trains_on_the_datas_longest_prompt_not_512(workdir):
    from trl_r1.pipeline import load_recipe
    from trl_r1.pipeline.preflight import stage_peak

    data = recipe(model={"model_name_or_path": "tiny", "use_peft": True, "lora_r": 4},
                  rl={"dataset_name": "prompts.jsonl", "rewards": ["format"], "per_device_train_batch_size": 8,
                      "num_generations": 4, "max_completion_length": 64, "fast_generation": "off"})
    plan = load_recipe(data, check_hardware=False).stage("rl")
    qwen = model_shapes()["Qwen/Qwen2.5-1.5B-Instruct"]
    unscanned = stage_peak(plan, None, qwen, 80, vllm=False)[0]
    scanned = stage_peak(plan, None, qwen, 80, vllm=False, longest_prompt=100)[0]
    assert scanned < unscanned
    assert unscanned == stage_peak(plan, None, qwen, 80, vllm=False, longest_prompt=512)[0]


def test_the_trainer_tokenizes_its_prompts_once_and_budgets_the_prompts_it_keeps(tiny_model_dir, tmp_path,
                                                                                 monkeypatch, caplog):
    """One pass feeds the over-budget skip and the fast path's prompt budget; the skipped 13k-token prompt does
    not size the decoder (the budget is the kept prompts' longest rounded up, not the key)."""
    import trl_r1.data.scan as scan

    from trl_r1.trainers import R1GRPOConfig

    tokenized = []
    real = scan.prompt_lengths
    monkeypatch.setattr(scan, "prompt_lengths", lambda prompts, tokenizer: tokenized.extend(prompts) or real(
        prompts, tokenizer))
    rows = [{"prompt": [{"role": "user", "content": f"What is {i} + 1?"}]} for i in range(8)]
    rows.insert(5, {"prompt": [{"role": "user", "content": "1 + " * 6500 + "1?"}]})
    args = R1GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", num_generations=4,
                        per_device_train_batch_size=4, max_completion_length=16, fast_generation="on")
    with caplog.at_level(logging.WARNING, logger="trl_r1.trainers"):
        trainer = _rl_trainer(tiny_model_dir, args, Dataset.from_list(rows))
    assert len(tokenized) == 9  # each prompt once
    assert "1 of 9 prompts are longer than the 1008 tokens" in caplog.text
    assert len(trainer.train_dataset) == len(trainer.train_prompt_lengths) == 8
    assert max(trainer.train_prompt_lengths) < 64
    assert "one decoder of 64 prompt tokens" in trainer.fast_generation_reason
