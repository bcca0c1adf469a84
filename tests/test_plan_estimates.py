"""What the plan answers before a run: how long (per stage and in total, from the measured rates), how much memory
(the memory model, for the card planned for: `--card`), where the model and the report land; how a laptop plans
for a GPU; and how `--smoke` treats the command line's overrides and the user's own data."""

import argparse
import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from trl_r1.cli import recipe_data, run_main
from trl_r1.pipeline import STAGE_REGISTRY, load_recipe
from trl_r1.pipeline.plan import stage_time
from trl_r1.trainers.speed import MAX_DECODE_BATCH, PROJECTION_SPREAD, RATES, parse_card, size_exponent, stage_rate
from trl_r1.trainers.memory import model_shape
from trl_r1.pipeline.preflight import stage_peak
from trl_r1.pipeline.runner import Pipeline

ROOT = Path(__file__).resolve().parents[1]
MATH_RECIPE = ROOT / "recipes" / "qwen2.5-1.5b-instruct" / "math.yaml"
TINY_RECIPE = ROOT / "recipes" / "tiny" / "pipeline.yaml"
QWEN_1_5B = model_shape("Qwen/Qwen2.5-1.5B-Instruct")
needs_no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="plans a GPU run from a machine without one")


def planned(data, card):
    """The pipeline of recipe mapping `data` planned for `card`, after its preflight, and each stage's cost."""
    pipeline = Pipeline(load_recipe(data, check_hardware=False), dry_run=True, card=card, elsewhere=True)
    pipeline.preflight()
    costs = {}
    for plan in pipeline.recipe.stages:
        costs[plan.name] = STAGE_REGISTRY[plan.name].cost(plan, pipeline, costs)
    return pipeline, costs


def math_recipe(tmp_path):
    data = yaml.safe_load(MATH_RECIPE.read_text())
    data["run_dir"] = str(tmp_path / "run")
    return data


def test_card_names_and_sizes():
    assert parse_card("H100") == ("NVIDIA H100", 80.0) and parse_card("nvidia-h200") == ("NVIDIA H200", 141.0)
    assert parse_card("24") == parse_card("24GB") == ("24 GB card", 24.0)
    for bad in ("h1000", "0", "-8"):
        with pytest.raises(ValueError, match="--card"):
            parse_card(bad)


def test_times_come_from_the_measured_rate_that_matches_and_are_projected_otherwise(tmp_path, mirrors):
    data = math_recipe(tmp_path)
    pipeline, costs = planned(data, ("NVIDIA H200", 141.0))
    # `backend: auto` is planned as on the card (vLLM), whatever this machine has (issue 34)
    assert pipeline.recipe.stage("rejection_sampling").generation == costs["rejection_sampling"].generation[0] == "vllm"
    data["rejection_sampling"]["backend"] = "transformers"
    pipeline, costs = planned(data, ("NVIDIA H200", 141.0))
    # rejection sampling: transformers, bf16 base + the RL adapter, x 8 samples, at the batch the run samples at:
    # the memory model's for the card (issue 34), not the configured 4 prompts
    sampling, planned_batch = costs["rejection_sampling"], pipeline.recipe.stage("rejection_sampling").generation_batch
    assert sampling.generation == ("transformers", "bf16", True) and sampling.generation_batch == planned_batch * 8
    assert planned_batch > 4
    [row] = [r for r in RATES if r.device == "NVIDIA H200" and r.weights == "bf16" and r.adapter]
    timed = stage_time(sampling, pipeline)
    host_bound = min(sampling.generation_batch, MAX_DECODE_BATCH) / row.batch  # decoding saturates at 64 sequences
    assert not timed.measured and f"scaled from {row.batch} to {sampling.generation_batch} sequences" in timed.parts[0]
    assert timed.seconds[1] == pytest.approx(sampling.generated_tokens / (row.tokens_per_s[0] * host_bound))
    assert any(f"about {timed.seconds[1] / 86400:.1f} days" in line for line in pipeline.plan_lines())
    # the cold start on an H100: the SFT rate measured there on this model
    pipeline, costs = planned(data, ("NVIDIA H100", 80.0))
    [sft] = [r for r in RATES if r.device == "NVIDIA H100" and r.work == "training"
             and r.params == QWEN_1_5B.num_params]
    timed, trained = stage_time(costs["cold_start"], pipeline), costs["cold_start"].trained_tokens
    assert timed.measured and timed.seconds[1] == pytest.approx(trained / sft.tokens_per_s[0])
    # the same rejection sampling on an H100 is projected from the H200's row, its range widened each way
    projected = stage_time(costs["rejection_sampling"], pipeline)
    assert not projected.measured and "to the NVIDIA H100 x0.70 by memory bandwidth" in projected.parts[0]
    low, _, high = projected.seconds
    tokens = costs["rejection_sampling"].generated_tokens
    by_bandwidth = row.tokens_per_s[0] * host_bound * 3350 / 4800  # the datasheet bandwidths (trainers/speed.py)
    assert (low, high) == pytest.approx((tokens / (by_bandwidth * PROJECTION_SPREAD),
                                         tokens / (by_bandwidth / PROJECTION_SPREAD)))


def test_projection_scales_with_model_size_batch_and_device():
    h100_sft = {r.params: r.tokens_per_s[0] for r in RATES if r.device == "NVIDIA H100" and r.work == "training"}
    small, large = sorted(h100_sft)
    b = size_exponent(RATES)
    assert h100_sft[small] / h100_sft[large] == pytest.approx((large / small) ** b)  # fitted on the two
    three_b = model_shape("Qwen/Qwen2.5-3B-Instruct")
    rate = stage_rate("training", "NVIDIA H100", three_b.num_params, three_b.num_layers, "sft", "nf4", True, 2)
    mid = h100_sft[small] * (small / three_b.num_params) ** b
    assert (rate.low, rate.high) == pytest.approx((mid / PROJECTION_SPREAD, mid * PROJECTION_SPREAD))
    # transformers decoding on a GPU is host-bound: 4x the sequences per call, about 4x the tokens per second
    eight = stage_rate("generation", "NVIDIA H100", QWEN_1_5B.num_params, 28, "transformers", "nf4", True, 8)
    thirty_two = stage_rate("generation", "NVIDIA H100", QWEN_1_5B.num_params, 28, "transformers", "nf4", True, 32)
    assert eight.measured and not thirty_two.measured
    assert thirty_two.low * PROJECTION_SPREAD == pytest.approx(4 * eight.low)
    # a CPU stage never takes a GPU's rate
    on_cpu = stage_rate("generation", "CPU", QWEN_1_5B.num_params, 28, "transformers", "bf16", False, 32)
    assert on_cpu.how.startswith("projected") and "from CPU" in on_cpu.how and on_cpu.high < 50


def test_a_cpu_recipe_is_timed_from_its_cpu_measurements_with_a_total(tmp_path):
    data = yaml.safe_load(TINY_RECIPE.read_text())
    data["run_dir"] = str(tmp_path / "run")
    pipeline, costs = planned(data, None)
    rl = costs["rl"]
    gen = next(r for r in RATES if r.device == "CPU" and r.params < 10**6 and r.work == "generation")
    grpo = next(r for r in RATES if r.device == "CPU" and r.params < 10**6 and r.backend == "grpo")
    expected = (rl.generated_tokens / math.sqrt(gen.tokens_per_s[0] * gen.tokens_per_s[1])
                + rl.trained_tokens / math.sqrt(grpo.tokens_per_s[0] * grpo.tokens_per_s[1]))
    timed = stage_time(rl, pipeline)
    assert timed.measured and timed.seconds[1] == pytest.approx(expected)
    lines = pipeline.plan_lines()
    [total] = [line for line in lines if line.startswith("total:")]
    assert "from measured rates" in total
    assert not any("H200" in line or "H100" in line for line in lines)  # no GPU rate for a CPU recipe
    assert "final model: " + str(tmp_path / "run" / "final_sft") + " (full weights)" in lines
    assert f"report:  {tmp_path / 'run' / 'report.md'}" in lines
    assert not any("issue" in line for line in lines)


def test_memory_per_stage_for_the_card_planned_for(tmp_path, mirrors):
    data = math_recipe(tmp_path)
    pipeline, _ = planned(data, ("24 GB card", 24.0))
    lines = pipeline.plan_lines()
    cold_start = pipeline.recipe.stage("cold_start")
    peak, what = stage_peak(cold_start, pipeline.recipe, QWEN_1_5B, 24.0, vllm=False)
    memory = [line.strip() for line in lines if line.strip().startswith("memory:")]
    assert len(memory) == 5  # four stages and the evaluation
    assert memory[0].startswith(f"memory:   peak {peak / 1e9:.1f} GB ({what}), projected by the memory model: fits in "
                                "90% of the 24 GB card")
    final = [line for line in lines if line.startswith("final model:")]
    assert final and str(tmp_path / "run" / "final_sft" / "merged") in " ".join(lines[lines.index(final[0]):][:2])
    # the evaluation's header and its cost agree: 100 prompts x 4 samples, once per evaluated model
    header = next(line for line in lines if line.startswith("evaluation:"))
    assert "100 prompts x 4 samples" in header and "after each of base, cold_start, rl, final_sft" in header
    assert any("prompts 100, samples 1,600" in line for line in lines)


def test_rl_over_a_small_dataset_says_how_many_passes(tmp_path):
    rows = tmp_path / "mine.jsonl"
    rows.write_text("".join(json.dumps({"prompt": f"{i} + 1?", "solution": str(i + 1)}) + "\n" for i in range(40)))
    data = {"run_dir": str(tmp_path / "run"), "model": {"tiny": {}, "load_in_4bit": False},
            "training": {"use_cpu": True, "report_to": "none"},
            "rl": {"dataset_name": str(rows), "max_steps": 500, "per_device_train_batch_size": 8,
                   "gradient_accumulation_steps": 4, "num_generations": 8, "rewards": ["format"]}}
    pipeline, costs = planned(data, None)
    assert costs["rl"].prompts == 500 * 32 // 8
    assert any("sample 2,000 prompts from a dataset of 40 rows: 50 passes over it" in line
               for line in pipeline.plan_lines())


@needs_no_gpu
def test_a_laptop_plans_for_a_gpu_with_card(tmp_path, capsys):
    recipe = tmp_path / "math.yaml"
    recipe.write_text(yaml.safe_dump(math_recipe(tmp_path)))
    # this machine's plan: no vLLM and no GPU for bf16 are errors, bf16 said once for every stage
    assert run_main([str(recipe), "--dry-run"]) == 2
    err = capsys.readouterr().err
    bf16 = [line for line in err.splitlines() if "bf16" in line]
    assert len(bf16) == 1 and bf16[0].strip().startswith("- cold_start, rl, final_sft: bf16 training needs a GPU")
    assert "training.use_cpu: true" in bf16[0] and "--smoke" in bf16[0] and "vLLM is not installed" in err
    # planned for a 24 GB card: the same lacks are notes about this machine, and the plan passes
    assert run_main([str(recipe), "--dry-run", "--card", "24"]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if line.startswith("note: this machine, not the GPU planned for:")]
    assert len(notes) == 2 and "vLLM is not installed" in notes[0] and "bf16" in notes[1]
    assert "card:    24 GB card" in out
    # a real run (not a dry run) stops at the preflight with the same one line, not transformers' error per stage
    assert run_main([str(recipe)]) == 2
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if "bf16" in line]) == 1 and "doesn't support bf16" not in err
    for bad in (["--dry-run", "--card", "h1000"], ["--card", "24"]):  # unknown card; --card without --dry-run
        with pytest.raises(SystemExit) as exit_:
            run_main([str(recipe), *bad])
        assert exit_.value.code == 2


@needs_no_gpu
def test_a_single_stage_command_plans_for_a_gpu_with_card(tmp_path, capsys):
    from trl_r1.cli import grpo_main

    command = ["--model_name_or_path", "Qwen/Qwen2.5-1.5B-Instruct", "--output_dir", str(tmp_path / "out"),
               "--dataset_name", "trl_r1.toy.arithmetic:arithmetic_dataset", "--reward_funcs", "format", "math",
               "--dry-run"]
    assert grpo_main(command) == 2  # TRL's default bf16, on this machine
    assert "rl: bf16 training needs a GPU and this machine has none" in capsys.readouterr().err
    assert grpo_main([*command, "--card", "l4"]) == 0  # `card` is the command's, not a key of the stage
    assert "fits in 90% of the NVIDIA L4 (24 GB)" in capsys.readouterr().out


def test_set_applies_before_the_smoke_shrink(tmp_path):
    from trl_r1.pipeline.smoke import smoke_shape_key
    from trl_r1.pipeline.stages import RLStage

    args = argparse.Namespace(recipe=str(MATH_RECIPE), smoke=True, dry_run=True, run_dir=str(tmp_path / "smoke"),
                              set=["rl.max_completion_length=4096", "rl.beta=0.04",
                                   "model.model_name_or_path=Qwen/Qwen3-1.7B"])
    data = recipe_data(args)
    assert data["rl"]["max_completion_length"] == RLStage.smoke_settings["max_completion_length"]  # shrunk
    assert data["rl"]["beta"] == 0.04  # a key the shrink keeps stays overridden
    assert Path(data["model"]["model_name_or_path"]).name == smoke_shape_key("Qwen/Qwen3-1.7B")  # its shape
    assert data["run_dir"] == str(tmp_path / "smoke" / "run")


@pytest.mark.slow
def test_smoke_on_your_own_data_runs_end_to_end_and_says_what_it_cannot_check(tmp_path, smoke_work_dir, smoke_model,
                                                                               capsys):
    prompts, traces = tmp_path / "mine.jsonl", tmp_path / "traces.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": [{"role": "user", "content": f"What is {i} * 13?"}],
                                           "solution": str(13 * i)}) + "\n" for i in range(40)))
    traces.write_text("".join(json.dumps({"messages": [
        {"role": "user", "content": f"What is {i} + 5?"},
        {"role": "assistant",
         "content": f"<think>\n{i} + 5 = {i + 5}\n</think>\n\nThe answer is $\\boxed{{{i + 5}}}$."}]})
        + "\n" for i in range(20)))
    data = yaml.safe_load(MATH_RECIPE.read_text())
    data["cold_start"]["dataset_name"] = str(traces)
    data["cold_start"].pop("dataset_config")
    data["rl"]["dataset_name"] = str(prompts)
    recipe = tmp_path / "mine.yaml"
    recipe.write_text(yaml.safe_dump(data))
    smoke_model("Qwen/Qwen2.5-1.5B-Instruct")  # the cached rehearsed model, where the run looks for it
    work = smoke_work_dir / "own-data"
    work.mkdir()
    (work / "models").symlink_to(smoke_work_dir / "models", target_is_directory=True)
    assert run_main([str(recipe), "--smoke", "--run-dir", str(work)]) == 0
    out = capsys.readouterr().out
    assert "smoke run passed" in out
    assert "note: rejection_sampling: acceptance not checked" in out
    record = json.loads((work / "run" / "rejection_sampling" / "stage.json").read_text())
    assert record["outputs"]["num_accepted"] > 0  # the final SFT trained on its samples
    assert json.loads((work / "run" / "final_sft" / "stage.json").read_text())["status"] == "done"
