"""The preflight `--dry-run` runs (issue 19): each mistake a user's first real run met, caught before any work,
one error per mistake; and the plan, which shows each stage's cost and its full settings."""

import importlib.util
import json
import warnings
from pathlib import Path

import pytest
import yaml

from trl_r1.cli import run_main, sft_main
from trl_r1.pipeline import STAGE_REGISTRY, RecipeError, load_recipe
from trl_r1.pipeline.runner import Pipeline

ROOT = Path(__file__).resolve().parents[1]
ARITHMETIC = "trl_r1.toy.arithmetic:arithmetic_dataset"
COLD_START = "trl_r1.toy.arithmetic:cold_start_dataset"
MATH_RECIPE = ROOT / "recipes" / "qwen2.5-1.5b-instruct" / "math.yaml"


def tiny_recipe(tmp_path, **sections):
    data = {"run_dir": str(tmp_path / "run"), "model": {"tiny": {}, "load_in_4bit": False},
            "training": {"use_cpu": True, "report_to": "none"}}
    data.update(sections)
    return data


def dry_run_problems(data, **pipeline_kwargs) -> list[str]:
    pipeline = Pipeline(load_recipe(data, check_hardware=False), dry_run=True, **pipeline_kwargs)
    with pytest.raises(RecipeError) as info:
        pipeline.preflight()
    return info.value.problems


def test_sft_dry_run_on_a_prompt_solution_dataset_fails(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"prompt": f"{i} + 1?", "solution": str(i + 1)}) + "\n" for i in range(4)))
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump({"model_name_or_path": "some/model", "output_dir": str(tmp_path / "out"),
                                      "dataset_name": str(rows), "use_cpu": True}))
    assert sft_main(["--config", str(config), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "cold_start: the dataset has columns ['prompt', 'solution']; it needs 'messages' or 'text' or " \
           "'prompt' + 'completion'" in err
    assert not (tmp_path / "out").exists()


def test_a_misspelt_solution_column_is_an_error_naming_the_key(tmp_path, mirrors):
    # on MATH-500 the `solution` column (the worked solution) would otherwise quietly become the gold answer
    evaluation = {"dataset_name": "HuggingFaceH4/MATH-500", "prompt_column": "problem", "solution_column": "answr"}
    problems = dry_run_problems(tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC}, evaluation=evaluation))
    assert problems == ["evaluation: key 'solution_column': the dataset has no 'answr' column (columns: ['problem', "
                        "'solution', 'answer', 'subject', 'level', 'unique_id'])"]
    # the same key in a stage names that stage; the reward's missing reference is not a second error
    problems = dry_run_problems(tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "solution_column": "answr"}))
    assert problems == ["rl: key 'solution_column': the dataset has no 'answr' column (columns: ['prompt', "
                        "'solution'])"]
    evaluation["solution_column"] = "answer"
    Pipeline(load_recipe(tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC}, evaluation=evaluation)),
             dry_run=True).preflight()


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_vllm_asked_for_but_not_installed_fails_the_dry_run_with_the_install_command(tmp_path, capsys):
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "use_vllm": True},
                                                 evaluation={"dataset_name": ARITHMETIC, "backend": "vllm"})))
    assert run_main([str(config), "--dry-run"]) == 2
    out, err = capsys.readouterr()
    [problem] = [line for line in err.splitlines() if "vLLM" in line]  # one mistake, one error
    assert problem.startswith("  - rl (use_vllm: true), evaluation (backend: vllm): vLLM is not installed; "
                              "install it with pip install 'vllm")
    assert "1. rl" in out  # the plan is printed all the same


def test_4bit_without_bitsandbytes_fails(tmp_path, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "bitsandbytes" else find_spec(name, *a))
    data = tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "load_in_4bit": True},
                       cold_start={"dataset_name": COLD_START})
    assert dry_run_problems(data) == ["rl: load_in_4bit: true needs bitsandbytes, which is not installed; install it "
                                      "with pip install bitsandbytes, or set load_in_4bit: false"]


def test_code_reward_without_a_working_sandbox_fails(tmp_path, monkeypatch):
    from trl_r1.verifiers.code import sandbox

    monkeypatch.setattr(sandbox, "_isolation_works", False)
    monkeypatch.setattr(sandbox, "_isolation_failure", None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    rows = tmp_path / "code.jsonl"
    rows.write_text(json.dumps({"prompt": [{"role": "user", "content": "sum"}],
                                "verification_info": {"language": "python", "test_cases": []}}) + "\n")
    [problem] = dry_run_problems(tiny_recipe(tmp_path, rl={"dataset_name": str(rows), "rewards": ["code"]}))
    assert problem.startswith("rl: the code reward runs programs in a bubblewrap sandbox, which does not work here: "
                              "bubblewrap is not installed")
    assert "scripts/install.sh" in problem
    # allow_unsafe (trusted code) needs no sandbox
    Pipeline(load_recipe(tiny_recipe(tmp_path, rl={"dataset_name": str(rows), "rewards": [
        {"name": "code", "allow_unsafe": True}]})), dry_run=True).preflight()


def test_memory_model_must_fit_the_card(tmp_path):
    data = yaml.safe_load(MATH_RECIPE.read_text())
    data["run_dir"] = str(tmp_path / "run")
    for stage in ("cold_start", "rl"):
        data[stage]["dataset_name"] = COLD_START if stage == "cold_start" else ARITHMETIC
        data[stage].pop("dataset_config", None)
    data["rl"].pop("use_vllm")  # transformers generation: 32 sequences of 8,704 tokens of KV cache
    data["rl"]["per_device_train_batch_size"] = 4
    for key in ("rejection_sampling", "final_sft", "evaluation"):
        data.pop(key)
    # SFT on micro-batches of 2 x 32,768 tokens (the recipe's 24 GB setting) is ~21 GB; RL's QLoRA step at micro-batch 4 is ~11.7 GB
    problems = [p for p in dry_run_problems(data, card=("NVIDIA T4", 16.0)) if "has no bf16" not in p]
    assert problems == ["cold_start: the memory model puts its peak (SFT step) at 21.1 GB, over 90% of this NVIDIA "
                        "T4 (16 GB); see docs/troubleshooting.md (out of memory)"]
    problems = dry_run_problems(data, card=("NVIDIA RTX 3060", 12.0))
    assert [p.split(":")[0] for p in problems] == ["cold_start", "rl"]
    assert "rl: the memory model puts its peak (RL step) at 11.7 GB" in problems[1]
    Pipeline(load_recipe(data, check_hardware=False), dry_run=True, card=("NVIDIA H200", 141.0)).preflight()
    # without a GPU the check is skipped, and the plan says so
    pipeline = Pipeline(load_recipe(data, check_hardware=False), dry_run=True, card=None)
    pipeline.preflight()
    assert any(line.startswith("note: memory: no GPU here") for line in pipeline.plan_lines())


def test_vllm_needs_room_for_one_sequence_in_its_share_of_the_card(tmp_path):
    from trl_r1.trainers.memory import model_shape
    from trl_r1.pipeline.preflight import memory_problems, resolve_plan

    def planned_for_a_card(data):  # the plan for the card (vLLM on it), as `--card` resolves it
        return resolve_plan(load_recipe(data, check_hardware=False), elsewhere=True)

    data = yaml.safe_load(MATH_RECIPE.read_text())
    data["run_dir"] = str(tmp_path / "run")
    recipe = planned_for_a_card(data)
    shape = model_shape("Qwen/Qwen2.5-1.5B-Instruct")
    assert memory_problems(recipe, recipe.stages, shape, ("NVIDIA L4", 24.0)) == []
    data["rl"]["vllm_gpu_memory_utilization"] = 0.05  # 1.2 GB: the 4-bit weights and vLLM's working memory fill it
    recipe = planned_for_a_card(data)
    [problem] = memory_problems(recipe, recipe.stages, shape, ("NVIDIA L4", 24.0))
    assert problem.startswith("rl: vLLM's share of this NVIDIA L4 (vllm_gpu_memory_utilization 0.05 of 24 GB) "
                              "holds the KV cache of 0 tokens after its weights, fewer than one sequence of "
                              "vllm_max_model_length 8704; vLLM would not start")


def test_plan_shows_every_setting_marks_overrides_and_the_model_each_stage_loads(tmp_path, capsys):
    long_section = {"dataset_name": ARITHMETIC, "rewards": [{"name": "format", "weight": 0.5}, {"name": "math"}],
                    "learning_rate": 1e-5, "lr_scheduler_type": "cosine", "warmup_steps": 0.05, "temperature": 1.0,
                    "beta": 0.001, "mask_truncated_completions": True, "load_in_4bit": False, "max_steps": 500}
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(tiny_recipe(tmp_path, model={"tiny": {}}, cold_start={"dataset_name": COLD_START},
                                                 rl=long_section)))
    assert run_main([str(config), "--dry-run", "--set", "rl.max_steps=50"]) == 0
    out = capsys.readouterr().out
    assert "max_steps=50 (overridden)" in out and "mask_truncated_completions=True" in out  # nothing cut
    models = [line.strip() for line in out.splitlines() if line.startswith("     loads: ")]
    assert models[0].startswith("loads:    QLoRA: 4-bit NF4 base") and models[1].startswith("loads:    LoRA r=16 on")
    assert not (tmp_path / "run").exists()  # a dry run builds nothing, not even the tiny model


def test_the_plan_gives_each_stage_its_cost(tmp_path, mirrors, capsys):
    data = yaml.safe_load(MATH_RECIPE.read_text())
    data["run_dir"] = str(tmp_path / "run")
    recipe = load_recipe(data, check_hardware=False)
    pipeline = Pipeline(recipe, dry_run=True, card=None)
    try:
        pipeline.preflight()
    except RecipeError as exc:  # vLLM is not installed here: the only problem
        assert all("vLLM is not installed" in p for p in exc.problems)
    costs = {}
    for plan in recipe.stages:
        costs[plan.name] = STAGE_REGISTRY[plan.name].cost(plan, pipeline, costs)
    rl, sampling = costs["rl"], costs["rejection_sampling"]
    assert (rl.prompts, rl.samples, rl.generated_tokens) == (2000, 16000, 16000 * 8192)  # 500 steps x 32 / 8
    # rejection sampling covers about the prompts GRPO saw, not all 20,000 (1.3 billion tokens)
    assert (sampling.prompts, sampling.samples, sampling.generated_tokens) == (2000, 16000, 16000 * 8192)
    assert costs["cold_start"].trained_tokens <= 5000 * 32768  # max_samples x max_length
    lines = pipeline.plan_lines()
    assert any("generated <= 131.1M tokens" in line for line in lines)
    assert any("projected" in line for line in lines) and not any("measured:" in line for line in lines)


def test_dry_run_shows_no_future_warning_of_our_own_defaults():
    paths = sorted(p for p in (ROOT / "recipes").rglob("*.yaml") if "accelerate_configs" not in p.parts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # transformers 5: `gradient_checkpointing` is an old alias
        recipes = {path.parent.name + "/" + path.name: load_recipe(path, check_hardware=False) for path in paths}
    assert recipes["qwen2.5-1.5b-instruct/math.yaml"].stage("rl").config.gradient_checkpointing  # on by default
    assert not recipes["tiny/pipeline.yaml"].stage("rl").config.gradient_checkpointing  # the recipe's own `false`


def test_math_recipes_cap_rejection_sampling_at_the_prompts_grpo_sees():
    for path in sorted(ROOT.glob("recipes/*/math.yaml")):
        data = yaml.safe_load(path.read_text())
        rl = data["rl"]
        seen = rl["max_steps"] * rl["per_device_train_batch_size"] * rl["gradient_accumulation_steps"] \
            // rl["num_generations"]
        assert data["rejection_sampling"]["max_prompts"] == seen, path


def test_smoke_dry_run_builds_no_model(tmp_path, capsys):
    work = tmp_path / "smoke"
    assert run_main([str(MATH_RECIPE), "--smoke", "--dry-run", "--run-dir", str(work)]) == 0
    assert not (work / "models").exists() and not (work / "run").exists()
    assert "1. cold_start" in capsys.readouterr().out


def test_the_dry_run_names_each_generating_stages_backend_and_why(tmp_path, capsys):
    """rl, rejection sampling and evaluation each get one line: the backend and the reason (here: no vLLM, or the
    recipe asks for transformers)."""
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(tiny_recipe(
        tmp_path, rl={"dataset_name": ARITHMETIC}, rejection_sampling={"dataset_name": ARITHMETIC, "backend": "auto"},
        evaluation={"dataset_name": ARITHMETIC, "backend": "transformers"})))
    assert run_main([str(config), "--dry-run"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("note: generation: ")]
    assert lines[0] == "note: generation: rl: transformers (as the recipe says)"
    assert lines[1].startswith("note: generation: rejection_sampling: ")
    assert lines[2] == "note: generation: evaluation: transformers (as the recipe says)"
    if importlib.util.find_spec("vllm") is None:
        assert "rejection_sampling: transformers (vLLM is not installed" in lines[1]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_vllm_fallback_transformers_lets_a_stage_without_vllm_plan_with_transformers(tmp_path, capsys):
    """Issue 34: the key the error names is honoured: no vLLM installed, the rl stage plans transformers."""
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(tiny_recipe(
        tmp_path, rl={"dataset_name": ARITHMETIC, "use_vllm": True, "vllm_fallback": "transformers"},
        evaluation={"dataset_name": ARITHMETIC, "backend": "vllm", "vllm_fallback": "transformers"})))
    assert run_main([str(config), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "note: generation: rl: transformers (vLLM is not installed" in out
    assert "note: generation: evaluation: transformers (vLLM is not installed" in out


QLORA = {"tiny": {}, "load_in_4bit": True, "use_peft": True, "bnb_4bit_quant_type": "nf4",
         "use_bnb_nested_quant": True, "lora_target_modules": "all-linear"}


@pytest.mark.parametrize(("model", "rl", "refusal"), [
    ({"bnb_4bit_quant_type": "fp4"}, {}, "the trainer to fp4"),
    ({"use_bnb_nested_quant": False}, {}, "double quantization"),
    ({"load_in_4bit": False, "load_in_8bit": True}, {}, "in-flight 8-bit"),
    ({"use_dora": True}, {}, "DoRA"),
    ({}, {"vllm_mode": "server"}, "server mode"),
    ({}, {"vllm_lora_sync": "merge"}, "vllm_lora_sync: merge"),
], ids=["fp4", "no-double-quant", "8bit", "dora", "server-on-4bit", "merge-on-4bit"])
def test_planning_for_a_card_fails_on_every_refusal_the_recipe_brings(tmp_path, model, rl, refusal):
    """Issue 34: under --card only this machine's lacks (no vLLM here, no CUDA) are notes; what vLLM refuses for the
    recipe fails the dry run as it would on the card, naming vllm_fallback; with the key, the plan says why."""
    data = tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "use_vllm": True, **rl})
    data["model"] = {**QLORA, **model}
    [problem] = [p for p in dry_run_problems(data, card=("24 GB", 24.0), elsewhere=True) if "vLLM" in p]
    assert problem.startswith("rl (use_vllm: true): vLLM cannot generate on that card") and refusal in problem
    assert "vllm_fallback: transformers" in problem
    data["rl"]["vllm_fallback"] = "transformers"
    pipeline = Pipeline(load_recipe(data, check_hardware=False), dry_run=True, card=("24 GB", 24.0), elsewhere=True)
    pipeline.preflight()
    [note] = [n for n in pipeline.notes if n.startswith("generation: rl:")]
    assert note.startswith("generation: rl: transformers (") and refusal in note


def test_planning_for_a_card_plans_vllm_where_only_this_machine_lacks_it(tmp_path):
    data = tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "use_vllm": True})
    data["model"] = QLORA
    pipeline = Pipeline(load_recipe(data, check_hardware=False), dry_run=True, card=("24 GB", 24.0), elsewhere=True)
    pipeline.preflight()
    assert "generation: rl: vllm (vLLM serves the base with the LoRA adapter unmerged)" in pipeline.notes


def test_the_preflight_is_one_call_that_returns_every_problem_of_the_plan(tmp_path):
    """Issue 34: `preflight.plan_problems` returns the problems of every area at once (data, values, the run
    directory), as a list, and `Pipeline.preflight` raises exactly those."""
    from trl_r1.pipeline.preflight import plan_problems

    (tmp_path / "taken").write_text("a file, not a folder")
    data = tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "rewards": ["math"], "solution_column": "answr",
                                     "learning_rate": -1.0})
    data["run_dir"] = str(tmp_path / "taken" / "run")
    problems = plan_problems(Pipeline(load_recipe(data, check_hardware=False), dry_run=True, card=None))
    assert any("key 'solution_column'" in p for p in problems)  # the data
    assert any("key 'learning_rate'" in p for p in problems)  # a value
    assert any(p.startswith("run_dir:") for p in problems)  # the run directory
    assert dry_run_problems(data, card=None) == problems


def test_fast_prompt_cuts_are_judged_by_the_backend_the_plan_decided(tmp_path):
    """An rl stage that asks for vLLM but falls back to transformers (`vllm_fallback: transformers`, no vLLM here)
    runs the fast path, so its prompt cuts are judged; a stage the plan gives vLLM has none to judge."""
    from collections import Counter

    from trl_r1.data.scan import PromptScan
    from trl_r1.pipeline.preflight import fast_prompt_problems, resolve_plan

    data = tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "rewards": ["math"], "use_vllm": True,
                                     "vllm_fallback": "transformers", "fast_generation": "on",
                                     "fast_generation_max_prompt_length": 64})
    recipe = resolve_plan(load_recipe(data, check_hardware=False), elsewhere=False)
    plan = recipe.stage("rl")
    lengths = PromptScan(rows=10, longest=200, lengths=Counter({200: 5, 10: 5}))
    assert plan.config.use_vllm and plan.generation == "transformers"
    [problem], _ = fast_prompt_problems(plan, lengths, refuse=True)
    assert "5 of 10 prompts" in problem and "fast_generation_max_prompt_length 64" in problem
    plan.generation = "vllm"
    assert fast_prompt_problems(plan, lengths, refuse=True) == ([], [])


def test_the_dry_run_states_a_stage_s_4_bit_base_once(tmp_path, capsys):
    """`loads:` says how the stage loads its model (4-bit as decided); `decided:` does not repeat it."""
    data = tiny_recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "rewards": ["math"], "load_in_4bit": True})
    pipeline = Pipeline(load_recipe(data, check_hardware=False), dry_run=True, card=None)
    lines = pipeline.plan_lines()
    [loads] = [line for line in lines if line.strip().startswith("loads:")]
    decided = [line for line in lines if line.strip().startswith("decided:")]
    assert "4-bit" in loads and decided and not any("4-bit" in line for line in decided)
