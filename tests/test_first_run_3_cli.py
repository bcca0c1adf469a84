"""Issue 35 (a user's first run, round 3), the command-line items: `trl-r1 evaluate` agreeing with the pipeline
(item 6), a model name that is a missing folder (13)."""

import dataclasses
import json
import shutil

import pytest
from datasets import Dataset

from trl_r1.cli import main
from trl_r1.pipeline.evaluate import evaluate_model
from trl_r1.pipeline.recipe import EvaluationConfig
from trl_r1.pipeline.stages import StageRecord, write_record
from trl_r1.toy.toy_reasoner import toy_prompts

RECIPE_REWARDS = ["math", {"name": "format", "require_answer": False}]  # as the shipped recipes evaluate


def test_two_settings_of_one_reward_are_two_columns(toy_reasoner, tmp_path):
    """The strict format reward and the recipes' `require_answer: false` scored the same completions under one
    name (the second list extended the first); each now has its own column, with its own value."""
    prompts = toy_prompts().select(range(4))
    config = EvaluationConfig(num_samples=2, max_new_tokens=24, batch_size=4, num_prompts=4)
    results = evaluate_model(toy_reasoner, prompts, config, ["format", {"name": "format", "require_answer": False}])
    strict, lenient = results["format_reward/per_prompt"], results["format_reward(require_answer=false)/per_prompt"]
    assert len(strict) == len(lenient) == 4
    assert results["format_reward"] <= results["format_reward(require_answer=false)"]


def test_evaluate_on_a_stage_output_reproduces_the_runs_figure(toy_reasoner, tmp_path, capsys):
    """A stage folder with its stage.json (as the pipeline writes it): `trl-r1 evaluate` with no settings uses the
    run's recorded evaluation (prompts, samples, rewards with their options) and gets the run's figure."""
    prompts_file = tmp_path / "held_out.jsonl"
    toy_prompts().to_json(prompts_file)
    recorded = {"dataset_name": str(prompts_file), "dataset_split": "train", "num_prompts": 6, "num_samples": 2,
                "max_new_tokens": 24, "batch_size": 6, "temperature": 0.6, "stages": ["rl"]}
    stage_dir = tmp_path / "run" / "rl"
    shutil.copytree(toy_reasoner, stage_dir)
    ev = EvaluationConfig(**recorded)
    figure = evaluate_model(str(stage_dir), Dataset.from_json(str(prompts_file)), ev, RECIPE_REWARDS)
    write_record(stage_dir, StageRecord(name="rl", fingerprint="f", status="done", evaluation=figure,
                                        evaluation_settings={"evaluation": recorded,
                                                             "rewards": {"entries": RECIPE_REWARDS}}))
    out = tmp_path / "eval"
    assert main(["evaluate", "--model_name_or_path", str(stage_dir), "--output_dir", str(out)]) == 0
    report = json.loads((out / "evaluation.json").read_text())
    results = report["evaluation"][str(stage_dir)]
    assert results["num_completions"] == 12  # the run's 6 prompts x 2 samples, not evaluate's defaults
    assert results["format_reward(require_answer=false)"] == pytest.approx(figure["format_reward(require_answer=false)"])
    assert results == pytest.approx(figure)
    # a flag still wins over the run's setting
    assert main(["evaluate", "--model_name_or_path", str(stage_dir), "--num_prompts", "2", "--output_dir", str(out)]) == 0
    assert json.loads((out / "evaluation.json").read_text())["evaluation"][str(stage_dir)]["num_completions"] == 4


def test_rewards_flag_takes_trl_names_and_commas(toy_reasoner, tmp_path):
    prompts_file = tmp_path / "prompts.jsonl"
    toy_prompts().select(range(2)).to_json(prompts_file)
    out = tmp_path / "eval"
    argv = ["evaluate", "--model_name_or_path", toy_reasoner, "--dataset_name", str(prompts_file), "--num_samples",
            "1", "--max_new_tokens", "16", "--output_dir", str(out), "--rewards", "think_format_reward,math"]
    assert main(argv) == 0
    results = json.loads((out / "evaluation.json").read_text())["evaluation"][toy_reasoner]
    assert "format_reward(require_answer=false)" in results and "math_accuracy_reward" in results


def test_a_missing_run_folder_is_named_not_looked_up_on_the_hub(tmp_path, monkeypatch, capsys):
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", "--model_name_or_path", "runs/nope", "--benchmark", "math500"]) == 1
    err = capsys.readouterr().err
    assert "'runs/nope' is no folder here" in err and "Hub" in err and "connect" not in err.lower()


@pytest.mark.parametrize("settings, expected", [({"model": {}}, True),  # trl-r1's QLoRA default
                                                ({"model": {"load_in_4bit": False}}, False),
                                                ({"model": {"load_in_4bit": False}, "rl": {"load_in_4bit": True}}, True)])
def test_an_adapter_stage_is_evaluated_on_its_base_loaded_as_the_pipeline_loaded_it(tmp_path, settings, expected):
    from trl_r1.pipeline.evaluate import recorded_evaluation, run_settings_argv

    stage_dir = tmp_path / "rl"
    stage_dir.mkdir()
    (stage_dir / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "base"}))
    write_record(stage_dir, StageRecord(name="rl", fingerprint="f", status="done", settings=settings,
                                        evaluation_settings={"evaluation": {}, "rewards": {"entries": ["math"]}}))
    assert recorded_evaluation(str(stage_dir))["load_in_4bit"] is expected
    argv = run_settings_argv(["--model_name_or_path", str(stage_dir)])
    assert argv[argv.index("--load_in_4bit") + 1] == json.dumps(expected)
    assert "--load_in_4bit" not in run_settings_argv(["--model_name_or_path", str(stage_dir), "--load_in_4bit", "x"])[:-4]


def test_a_key_the_recipe_left_out_takes_the_pipelines_default_not_evaluates(tmp_path):
    """The pipeline evaluates 200 prompts unless the recipe says otherwise; `trl-r1 evaluate`'s own default is all."""
    from trl_r1.pipeline.evaluate import run_settings_argv

    write_record(tmp_path, StageRecord(name="rl", fingerprint="f", status="done",
                                       evaluation_settings={"evaluation": {"dataset_name": "held_out.jsonl"},
                                                            "rewards": {"entries": ["math"]}}))
    argv = run_settings_argv(["--model_name_or_path", str(tmp_path)])
    assert argv[argv.index("--num_prompts") + 1] == str(EvaluationConfig().num_prompts) == "200"
    assert argv[argv.index("--dataset_name") + 1] == "held_out.jsonl"
