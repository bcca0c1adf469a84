"""Recipe validation: every problem is found before any work, and names its stage and key."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trl_r1.cli import run_main, sft_main
from trl_r1.pipeline import RecipeError, load_recipe
from trl_r1.pipeline.recipe import flat_to_recipe
from trl_r1.pipeline.runner import Pipeline
from trl_r1.trainers.chat_templates import adapt_rewards, inspect_chat_template

ROOT = Path(__file__).resolve().parents[1]
ARITHMETIC = "trl_r1.toy.arithmetic:arithmetic_dataset"
COLD_START = "trl_r1.toy.arithmetic:cold_start_dataset"


def recipe(tmp_path, **sections):
    base = {"run_dir": str(tmp_path / "run"), "model": {"model_name_or_path": "some/model"},
            "training": {"use_cpu": True, "report_to": "none"}}
    base.update(sections)
    return base


def problems_of(data) -> list[str]:
    with pytest.raises(RecipeError) as info:
        load_recipe(data)
    return info.value.problems


def test_unknown_keys_name_stage_and_suggest(tmp_path):
    problems = problems_of(recipe(tmp_path, evalution={}, rl={"dataset_name": ARITHMETIC, "learning_rat": 1e-6},
                                  cold_start={"dataset_name": COLD_START, "num_train_epoch": 1}))
    assert "unknown section 'evalution'; did you mean 'evaluation'?" in problems
    # all problems of a recipe are reported together, not one per attempt
    assert len(problems) == 1
    problems = problems_of(recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "learning_rat": 1e-6},
                                  cold_start={"dataset_name": COLD_START, "num_train_epoch": 1}))
    assert "rl: unknown key 'learning_rat'; did you mean 'learning_rate'?" in problems
    assert "cold_start: unknown key 'num_train_epoch'; did you mean 'num_train_epochs'?" in problems


def test_one_error_per_mistake_no_cascade(tmp_path):
    """A typo in `rl` must not make the later stages claim the recipe has no rl stage (issue 19)."""
    problems = problems_of(recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "learning_rat": 1e-6},
                                  cold_start={"dataset_name": COLD_START, "num_train_epochs": "three"},
                                  rejection_sampling={"num_samples": 2}, final_sft={"init_from": "rl"}))
    assert problems == ["cold_start: key 'num_train_epochs': expected float, got 'three' (str)",
                        "rl: unknown key 'learning_rat'; did you mean 'learning_rate'?"]


def test_wrong_types_are_reported_and_numeric_strings_coerced(tmp_path):
    problems = problems_of(recipe(tmp_path, cold_start={"dataset_name": COLD_START, "num_train_epochs": "three",
                                                        "assistant_only_loss": "yes"}))
    assert "cold_start: key 'num_train_epochs': expected float, got 'three' (str)" in problems
    assert "cold_start: key 'assistant_only_loss': expected bool, got 'yes' (str)" in problems
    # YAML reads 1e-5 (no dot) as a string; TRL's argparse would convert it, so must we
    parsed = load_recipe(recipe(tmp_path, cold_start={"dataset_name": COLD_START, "learning_rate": "1e-5"}))
    assert parsed.stage("cold_start").config.learning_rate == 1e-5


def test_incompatible_options(tmp_path):
    problems = problems_of(recipe(
        tmp_path,
        model={"model_name_or_path": "m", "use_peft": False},
        rl={"dataset_name": ARITHMETIC, "rewards": [{"name": "math", "weight": 2.0}], "reward_weights": [1.0]},
        final_sft={"init_from": "cold_start"},
        cold_start={"dataset_name": COLD_START, "output_dir": "elsewhere"},
    ))
    # one line for a mistake the model section brings into every trainer stage, naming them (not one per stage)
    assert any(p.startswith("model, rl, final_sft: load_in_4bit/load_in_8bit needs use_peft") for p in problems)
    assert any(p.startswith("rl: set reward weights either in `rewards` entries or in `reward_weights`")
               for p in problems)
    assert any(p.startswith("cold_start: key 'output_dir' is set by the pipeline") for p in problems)
    assert any(p.startswith("final_sft: key 'dataset_name' is required") for p in problems)


def test_final_sft_needs_its_source_stage(tmp_path):
    problems = problems_of(recipe(tmp_path, rl={"dataset_name": ARITHMETIC}, final_sft={"init_from": "cold_start"}))
    assert any(p.startswith("final_sft: init_from 'cold_start' names a stage the recipe does not have")
               for p in problems)


def test_trl_config_errors_and_unknown_rewards_name_the_stage(tmp_path):
    problems = problems_of(recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "rewards": ["format", "maths"],
                                                "per_device_train_batch_size": 3, "num_generations": 2}))
    assert any(p.startswith("rl: key 'rewards': unknown reward 'maths'") for p in problems)
    # GRPOConfig's own check (generation batch divisible by num_generations), prefixed with the stage
    assert any(p.startswith("rl: ") and "num_generations" in p for p in problems)


def test_qlora_defaults_and_reward_weights(tmp_path):
    parsed = load_recipe(recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "lora_r": 32,
                                              "rewards": [{"name": "format", "weight": 0.5}, "math"]}))
    model, rl = parsed.model, parsed.stage("rl")
    assert (model.load_in_4bit, model.bnb_4bit_quant_type, model.use_bnb_nested_quant, model.dtype) == \
        (True, "nf4", True, "bfloat16")
    assert model.use_peft and model.lora_target_modules == "all-linear"
    assert rl.model_args.lora_r == 32 and model.lora_r == 16  # a stage may override model keys
    assert rl.config.gradient_checkpointing and rl.config.optim == "paged_adamw_8bit"
    assert rl.config.reward_weights == [0.5, 1.0]
    assert rl.output_dir == tmp_path / "run" / "rl"


def test_algorithm_selects_the_config_class(tmp_path):
    ppo = load_recipe(recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "algorithm": "ppo", "vf_coef": 0.5,
                                           "lam": 0.95, "kl_estimator": "k3"}))
    assert type(ppo.stage("rl").config).__name__ == "R1PPOConfig" and ppo.stage("rl").kind == "ppo"
    assert ppo.stage("rl").config.vf_coef == 0.5
    problems = problems_of(recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "vf_coef": 0.5}))
    assert problems == ["rl: unknown key 'vf_coef'"]  # a PPO-only key in a GRPO stage


def test_fingerprints_chain_so_an_edit_invalidates_later_stages(tmp_path):
    sections = {"cold_start": {"dataset_name": COLD_START}, "rl": {"dataset_name": ARITHMETIC}}
    first = load_recipe(recipe(tmp_path, **sections))
    sections["cold_start"] = {"dataset_name": COLD_START, "learning_rate": 1e-4}
    second = load_recipe(recipe(tmp_path, **sections))
    assert all(a.fingerprint != b.fingerprint for a, b in zip(first.stages, second.stages))


def test_tiny_model_keys_are_checked(tmp_path):
    problems = problems_of(recipe(tmp_path, model={"tiny": {"hidden_sise": 32}},
                                  cold_start={"dataset_name": COLD_START}))
    assert "model: tiny: unknown key 'hidden_sise'; did you mean 'hidden_size'?" in problems


def test_missing_dataset_columns_for_rewards(tmp_path):
    data = recipe(tmp_path, model={"tiny": {}, "load_in_4bit": False, "use_peft": False},
                  rl={"dataset_name": COLD_START, "rewards": ["format", "math"]})
    with pytest.raises(RecipeError) as info:
        Pipeline(load_recipe(data)).preflight()
    problems = info.value.problems
    assert any(p.startswith("rl: the dataset has no 'prompt' column") for p in problems)
    assert any(p.startswith("rl: reward 'math_accuracy_reward' reads its reference from one of the columns "
                            "['solution', 'answer']") for p in problems)


def test_prefilled_think_template_is_detected_and_format_rewards_adapted(tiny_think_model_dir, tiny_model_dir):
    from transformers import AutoTokenizer

    report = inspect_chat_template(AutoTokenizer.from_pretrained(tiny_think_model_dir))
    assert report.prefills_think and report.keeps_reasoning
    assert not inspect_chat_template(AutoTokenizer.from_pretrained(tiny_model_dir)).prefills_think
    from trl_r1.rewards import get_reward_funcs

    plain, = get_reward_funcs(["format"])
    adapted, = get_reward_funcs(adapt_rewards(["format"], report))
    prompt = [{"role": "user", "content": "What is 2 + 3?"}]
    completion = [[{"role": "assistant", "content": "2 + 3 is 5.</think> <answer>5</answer>"}]]
    # what a model behind a <think>-prefilling template writes: scored 0 unadapted, 1 adapted
    assert plain(prompts=[prompt], completions=completion) == [0.0]
    assert adapted(prompts=[prompt], completions=completion) == [1.0]


def test_assistant_only_loss_on_a_template_nobody_can_patch_fails_before_any_work(tiny_model_dir, tmp_path):
    import shutil

    from transformers import AutoTokenizer

    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"  # no markers
    tok.save_pretrained(model_dir)
    data = recipe(tmp_path, model={"model_name_or_path": str(model_dir), "load_in_4bit": False, "use_peft": False},
                  cold_start={"dataset_name": COLD_START, "assistant_only_loss": True},
                  final_sft={"dataset_name": COLD_START, "init_from": "cold_start", "assistant_only_loss": True,
                             "chat_template_path": str(tmp_path / "mine.jinja")})
    with pytest.raises(RecipeError) as info:
        Pipeline(load_recipe(data)).preflight()
    [problem] = info.value.problems  # final_sft brings its own template
    assert problem.startswith("cold_start: key 'assistant_only_loss': the chat template has no {% generation %} "
                              "markers and neither TRL 1.16 nor trl-r1 has a training version of it")


def test_shipped_recipes_validate():
    paths = sorted(p for p in (ROOT / "recipes").rglob("*.yaml") if "accelerate_configs" not in p.parts)
    assert len(paths) >= 19
    for path in paths:
        load_recipe(path, check_hardware=False)  # GPU recipes validate on this CPU-only machine too


def test_flat_trl_style_yaml_runs_as_one_stage(tmp_path, capsys):
    flat = {"model_name_or_path": "some/model", "lora_r": 8, "output_dir": str(tmp_path / "out"),
            "dataset_name": COLD_START, "max_steps": 3, "use_cpu": True}
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump(flat))
    assert sft_main(["--config", str(config), "--learning_rate", "3e-5", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "cold_start" in out and str(tmp_path / "out") in out
    assert "learning_rate=3e-5 (overridden)" in out and "max_steps=3," in out  # the flag's key marked, not the file's
    parsed = load_recipe(flat_to_recipe(flat, "cold_start"), single_stage=True)
    assert parsed.stage("cold_start").output_dir == tmp_path / "out"  # a single stage writes into output_dir
    assert sft_main(["--config", str(config), "--lora_rr", "3"]) == 2
    assert "unknown key 'lora_rr'; did you mean 'lora_r'?" in capsys.readouterr().err


def test_cli_reports_recipe_errors_before_any_work(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(recipe(tmp_path, rl={"dataset_name": ARITHMETIC, "temprature": 0.7})))
    proc = subprocess.run([sys.executable, "-m", "trl_r1.cli", "run", str(bad)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 2
    assert "rl: unknown key 'temprature'; did you mean 'temperature'?" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_smoke_names_the_key_it_cannot_rehearse_before_building_anything(tmp_path, capsys):
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(recipe(tmp_path, rl={"dataset_name": ARITHMETIC})))
    assert run_main([str(config), "--smoke", "--dry-run", "--run-dir", str(tmp_path / "smoke")]) == 2
    assert "model: model_name_or_path 'some/model' has no real shape to rehearse with --smoke" in capsys.readouterr().err
    config.write_text(yaml.safe_dump({"run_dir": str(tmp_path / "run"), "model": {
        "model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}, "rl": {"dataset_name": "someone/private-set"}}))
    assert run_main([str(config), "--smoke", "--dry-run", "--run-dir", str(tmp_path / "smoke")]) == 2
    assert "rl: dataset_name 'someone/private-set' has no schema mirror for --smoke" in capsys.readouterr().err
    assert not (tmp_path / "smoke").exists()  # checked before the model was built


@pytest.fixture
def rl_2():
    """R1's second RL phase registered as DESIGN.md shows it (after final_sft), and removed afterwards."""
    from trl_r1.pipeline.stages import STAGE_REGISTRY, RLStage

    STAGE_REGISTRY.add("rl_2", RLStage(starts_from=("final_sft", "rl", "cold_start")))
    yield
    del STAGE_REGISTRY._entries["rl_2"]


def test_a_registered_stage_is_a_recipe_section(tmp_path, rl_2):
    """R1's second RL phase as DESIGN.md shows it: one registration, then a section like any other."""
    parsed = load_recipe(recipe(tmp_path, rl={"dataset_name": ARITHMETIC}, rl_2={
        "dataset_name": ARITHMETIC, "rewards": ["format", "math", "language"], "learning_rate": 5e-7},
        evaluation={"dataset_name": ARITHMETIC, "stages": ["rl", "rl_2"]}))
    assert [s.name for s in parsed.stages] == ["rl", "rl_2"]
    second = parsed.stage("rl_2")
    assert second.kind == "grpo" and second.output_dir == tmp_path / "run" / "rl_2"
    assert second.config.learning_rate == 5e-7 and second.fingerprint != parsed.stage("rl").fingerprint
    assert problems_of(recipe(tmp_path, rl_2={"dataset_name": ARITHMETIC, "lerning_rate": 1}))[0] == \
        "rl_2: unknown key 'lerning_rate'; did you mean 'learning_rate'?"


def test_a_registered_rl_stage_is_validated_planned_and_smoked_like_rl(tmp_path, capsys, rl_2):
    from trl_r1.pipeline.smoke import check_smoke_run, smoke_recipe

    # validation: the RL stage's algorithms, its required keys, and what the evaluation and final SFT accept
    ppo = load_recipe(recipe(tmp_path, rl_2={"dataset_name": ARITHMETIC, "algorithm": "ppo", "vf_coef": 0.5}))
    assert type(ppo.stage("rl_2").config).__name__ == "R1PPOConfig" and ppo.stage("rl_2").config.vf_coef == 0.5
    assert problems_of(recipe(tmp_path, rl_2={"dataset_name": ARITHMETIC, "algorithm": "dpo"})) == \
        ["rl_2: key 'algorithm': expected one of ['grpo', 'ppo'], got 'dpo'"]
    assert problems_of(recipe(tmp_path, rl_2={})) == ["rl_2: key 'dataset_name' is required"]
    parsed = load_recipe(recipe(tmp_path, rl={"dataset_name": ARITHMETIC}, rl_2={"dataset_name": ARITHMETIC},
                                evaluation={"dataset_name": ARITHMETIC}))
    assert parsed.evaluation.stages == ["base", "cold_start", "rl", "final_sft", "rl_2"]  # the default: every model
    problems = problems_of(recipe(tmp_path, rl={"dataset_name": ARITHMETIC}, rl_2={"dataset_name": ARITHMETIC},
                                  final_sft={"dataset_name": COLD_START, "init_from": "rl_2"}))
    assert problems == ["final_sft: init_from 'rl_2' is neither 'base' nor an earlier stage that trains a model "
                        "(cold_start, rl)"]  # rl_2 comes after final_sft

    # --dry-run planning: the command line prints it as a stage of its own
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(recipe(tmp_path, rl={"dataset_name": ARITHMETIC}, rl_2={
        "dataset_name": ARITHMETIC, "learning_rate": 5e-7})))
    assert run_main([str(config), "--dry-run"]) == 0
    plan = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("2. ")]
    assert plan == [["2.", "rl_2", "grpo", "run", "->", str(tmp_path / "run" / "rl_2")]]

    # the smoke transform shrinks it as it shrinks rl, vLLM keys included
    big = {"dataset_name": ARITHMETIC, "max_steps": 500, "per_device_train_batch_size": 64, "num_generations": 16,
           "max_completion_length": 4096, "use_vllm": True, "vllm_mode": "colocate", "beta": 0.001}
    smoke = smoke_recipe(recipe(tmp_path, rl=dict(big), rl_2=dict(big), evaluation={"dataset_name": ARITHMETIC}),
                         model_dir="/m")
    assert smoke["rl_2"] == smoke["rl"] and "use_vllm" not in smoke["rl_2"] and "vllm_mode" not in smoke["rl_2"]
    assert (smoke["rl_2"]["max_steps"], smoke["rl_2"]["num_generations"], smoke["rl_2"]["beta"]) == (1, 4, 0.001)
    assert smoke["evaluation"]["stages"] == ["rl_2"]  # once, after the last trained stage
    # ... and checks what its run exercised
    state = tmp_path / "smoke" / "rl_2" / "trainer_state.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"log_history": [{"completions/clipped_ratio": 1.0}]}))
    assert check_smoke_run(tmp_path / "smoke") == ["rl_2: every completion hit max_completion_length, so no token "
                                                   "was trained on (mask_truncated_completions masks them all)"]


def test_mix_dataset_entries_are_checked_against_trls_dataset_config():
    from trl_r1.pipeline.recipe import check_mix_entry

    problems = []
    for index, entry in enumerate([{"path": "a", "fraction": 0.5, "split": "train"}, {"path": "b", "fracton": 0.5},
                                   {"name": "no path"}]):
        check_mix_entry(entry, index, problems)
    assert problems == ["final_sft: mix_datasets[1]: unknown key 'fracton'; did you mean 'fraction'?",
                        "final_sft: mix_datasets[2]: must be a mapping with at least 'path'"]


@pytest.mark.parametrize("training_seed", [None, 7])
def test_evaluation_and_rejection_sampling_follow_the_runs_seed_unless_their_section_sets_one(tmp_path, training_seed):
    """Issue 34: one `seed` reproduces the whole run (it was 0 for both, while the rl stage ran at 42)."""
    data = recipe(tmp_path, rl={"dataset_name": ARITHMETIC}, rejection_sampling={"dataset_name": ARITHMETIC},
                  evaluation={"dataset_name": ARITHMETIC})
    if training_seed is not None:
        data["training"]["seed"] = training_seed
    loaded = load_recipe(data)
    seed = 42 if training_seed is None else training_seed  # TrainingArguments' default
    assert loaded.stage("rl").config.seed == seed
    assert loaded.stage("rejection_sampling").config.seed == seed and loaded.evaluation.seed == seed
    data["rejection_sampling"]["seed"], data["evaluation"]["seed"] = 3, 5
    loaded = load_recipe(data)
    assert (loaded.stage("rejection_sampling").config.seed, loaded.evaluation.seed) == (3, 5)
