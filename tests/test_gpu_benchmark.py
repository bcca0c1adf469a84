"""benchmarks/gpu.py, the one command that measures a recipe on a GPU, kept from rotting: its CPU dry run (the
model's ci size, tiny lengths) runs real TRL trainers and generation through the same code, and its figures land
beside the formula's in the JSON and in the gpu_points.jsonl format the formula is tested against."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trl_r1.trainers.memory import gpu_calibration_error

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "qwen2.5-0.5b-instruct" / "math.yaml"


def _gpu_module():
    spec = importlib.util.spec_from_file_location("gpu_benchmark", ROOT / "benchmarks" / "gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_measured_run_becomes_calibration_points_the_formula_reads():
    """gpu_points turns the JSON's training measurements into gpu_points.jsonl rows, which the calibration reads
    back with the very settings that ran (here a made-up H200 run of the 0.5B recipe's two training stages)."""
    gpu = _gpu_module()
    results = {"card": "NVIDIA H200", "card_memory_gb": 150.0, "versions": {"trl": "1.16.0"},
               "model": "Qwen/Qwen2.5-0.5B-Instruct", "command": "python benchmarks/gpu.py RECIPE", "stages": {
                   "cold_start": {"measured": [{"what": "training", "kind": "sft", "load_in_4bit": True, "lora_r": 16,
                                                "max_length": 32768, "per_device_train_batch_size": 2,
                                                "peak_reserved_gib": 9.0}]},
                   "rl": {"measured": [
                       {"what": "training", "kind": "grpo", "load_in_4bit": False, "lora_r": 16, "prompt_tokens": 540,
                        "max_completion_length": 1024, "per_device_train_batch_size": 8, "steps_per_generation": 4,
                        "use_vllm": False, "vllm_gpu_memory_utilization": 0.3, "vllm_enable_sleep_mode": False,
                        "peak_reserved_gib": 5.0},
                       {"what": "generation", "backend": "transformers", "peak_reserved_gib": 3.0}]}}}
    rows = gpu.gpu_points(results)
    assert [(r["trainer"], r["mode"], r["prompt_length"], r["completion_length"]) for r in rows] == [
        ("sft", "qlora", 0, 32768), ("grpo", "lora", 540, 1024)]
    assert rows[1]["gradient_accumulation_steps"] == 4 and rows[1]["generation"] == "transformers"
    (_, measured, formula), _ = gpu_calibration_error(rows)
    assert measured == 9.0 and 5 < formula < 15  # the 0.5B at 2 x 32k: activations + sdpa's padding mask


def test_without_a_gpu_it_asks_for_the_dry_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), str(RECIPE)], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert done.returncode == 2 and "--dry-run" in done.stderr


@pytest.mark.slow
def test_the_dry_run_measures_every_stage_kind_on_cpu(tmp_path):
    """SFT and GRPO train for real (tokens/s > 0), every generation pass generates (tokens/s > 0), each beside the
    formula's figure for the ci shape; no error anywhere; the JSON is written."""
    out = tmp_path / "gpu.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), str(RECIPE), "--dry-run", "--stages",
                           "cold_start", "rl", "evaluation", "--model-dir", str(tmp_path / "model"), "--out", str(out)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["size"] == "ci" and results["card"].startswith("cpu")
    measured = {(stage, m["what"]): m for stage, entry in results["stages"].items() for m in entry["measured"]}
    assert set(measured) == {("cold_start", "training"), ("rl", "training"), ("rl", "generation"),
                             ("evaluation", "generation")}
    assert not [m["error"] for m in measured.values() if "error" in m]
    assert measured["cold_start", "training"]["max_length"] == 48
    assert measured["cold_start", "training"]["train_tokens_per_s"] > 0
    assert measured["rl", "training"]["train_tokens_per_s"] > 0
    assert all(measured[k]["generated_tokens_per_s"] > 0 for k in (("rl", "generation"), ("evaluation", "generation")))
    assert all(m["formula_reserved_gib"] > 0 for m in measured.values())
    assert "| cold_start | training | 48 tok x 2 |" in done.stdout


RECIPES = [p for p in sorted(ROOT.glob("recipes/*/*.yaml")) if p.parent.name not in ("tiny", "accelerate_configs")]


@pytest.mark.parametrize("path", RECIPES[::5], ids=[f"{p.parent.name}/{p.name}" for p in RECIPES[::5]])
def test_each_training_stage_plans_as_the_benchmark_runs_it(path, tmp_path):
    """On a GPU run (not dry): the recipe's own settings, shortened only in steps; final_sft measured alone."""
    import argparse

    import yaml

    gpu, data = _gpu_module(), yaml.safe_load(path.read_text())
    args = argparse.Namespace(steps=3, dry_run=False, transformers_completion=1024)
    for stage in ("cold_start", "rl", "final_sft"):
        section, changed = gpu.stage_section(data, stage, args, vllm=True)
        plan = gpu.plan_stage(data, stage, section, str(tmp_path / "model"), str(tmp_path / "run"), dry_run=True)
        assert plan.config.max_steps == 3 and changed["steps"] == 3
        if stage == "rl":
            full = data["rl"]["max_completion_length"]
            if data["rl"].get("use_vllm"):
                assert plan.config.use_vllm and plan.config.max_completion_length == full
            else:  # transformers generation is slow: shortened, and the JSON says so
                assert plan.config.max_completion_length == min(full, 1024)
                assert changed.get("max_completion_length", f"{full} -> {full}") == f"{full} -> {min(full, 1024)}"
            assert plan.config.per_device_train_batch_size == data["rl"]["per_device_train_batch_size"]
            generation_batch = plan.config.per_device_train_batch_size * plan.config.steps_per_generation
            assert generation_batch % plan.config.num_generations == 0
        else:
            assert plan.config.max_length == data[stage]["max_length"]


def test_every_calibration_point_is_remeasured_at_its_own_settings(tmp_path):
    """`--remeasure benchmarks/data/gpu_points.jsonl` plans each recorded point as it ran: trainer, 4-bit or not,
    lengths, micro-batch, one generation batch per step."""
    import argparse

    gpu = _gpu_module()
    args = argparse.Namespace(steps=3, dry_run=False, transformers_completion=1024)
    rows = [json.loads(line) for line in (ROOT / "benchmarks/data/gpu_points.jsonl").read_text().splitlines()]
    for row in rows:
        data, stage = gpu.point_recipe(row)
        section, _ = gpu.stage_section(data, stage, args, vllm=False)
        plan = gpu.plan_stage(data, stage, section, str(tmp_path / "model"), str(tmp_path / "run"), dry_run=True)
        assert plan.model_args.load_in_4bit == (row["mode"] == "qlora")
        assert plan.config.per_device_train_batch_size == row["per_device_train_batch_size"]
        assert plan.config.gradient_checkpointing
        if row["trainer"] == "sft":
            assert plan.kind == "sft" and plan.config.max_length == row["prompt_length"] + row["completion_length"]
        else:
            assert plan.kind == "grpo" and plan.config.max_completion_length == row["completion_length"]
            assert plan.config.num_generations == row["per_device_train_batch_size"]
            assert plan.config.steps_per_generation == row.get("gradient_accumulation_steps", 1)


def test_the_fast_generation_acceptance_dry_run_builds_one_graph_per_stage(tmp_path):
    """`python benchmarks/gpu.py --acceptance --dry-run`: issue 33's GPU command on CPU (tiny Qwen2, dynamo's graph),
    in a subprocess as it runs on the card: every stage builds one graph, each figure lands beside its goal, and
    the GRPO step's code path (the 1.5B recipe's rl plan at its ci size, tiny lengths) trains one real step."""
    out = tmp_path / "acceptance.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--acceptance", "--dry-run",
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert [p["sequences"] for p in result["passes"]] == [8, 64]
    assert all(p["graphs_built"] == 1 and p["fast_steady_tokens_per_s"] > 0 for p in result["passes"])
    assert result["passes"][0]["calls"][-1]["rows"] == 7  # the short last batch
    assert result["rl_generation_1024"]["graphs_built"] == 1
    assert "(goal >= 1,000)" in done.stdout and "(goal 1)" in done.stdout
    step = result["grpo_step"]  # one real GRPO step of the 1.5B recipe's rl plan (ci size), from the merged copy
    assert "error" not in step, step.get("error")
    assert step["kind"] == "grpo" and step["fast_generation"] and step["load_in_4bit"]
    assert step["max_completion_length"] == 8 and step["step_seconds"] > 0 and step["steps"] == 2
    assert "(goal <= 15 s)" in done.stdout
