"""A user's first real run, round 2 (issue 29, items 1, 2 and 7): each mistake fails the dry run (exit 2) with
one line naming the stage, the key, the file or row and the fix; an evaluation edit re-runs evaluations only.

Real components throughout: the tiny model on disk, real JSONL files, `trl-r1 run|grpo` as a user types them."""

import json
from pathlib import Path

import pytest
import yaml

from trl_r1.cli import grpo_main, run_main

from tests.conftest import dry_run, fails_once, recipe


def test_the_small_recipe_passes(workdir, capsys):
    code, problems, _ = dry_run(capsys, recipe())
    assert (code, problems) == (0, [])


# ------------------------------------------------------------------------------------------- 1. evaluation edits


def test_an_evaluation_edit_reevaluates_and_retrains_nothing(workdir, capsys):
    data = recipe(rl=None)
    Path("recipe.yaml").write_text(yaml.safe_dump(data))
    assert run_main(["recipe.yaml"]) == 0
    record = json.loads(Path("runs/r/cold_start/stage.json").read_text())
    model = Path(record["outputs"]["model_path"]) / "model.safetensors"
    trained_at = model.stat().st_mtime_ns

    code, _, plan = dry_run(capsys, data, "--set", "evaluation.num_prompts=2")
    assert code == 0
    assert "cold_start         sft                skip (done)" in plan
    assert "evaluate: again (evaluation.num_prompts 4 -> 2); the trained model is kept" in plan

    assert run_main(["recipe.yaml", "--set", "evaluation.num_prompts=2"]) == 0
    after = json.loads(Path("runs/r/cold_start/stage.json").read_text())
    assert model.stat().st_mtime_ns == trained_at and not Path("runs/r/cold_start.previous").exists()
    assert after["evaluation_settings"]["evaluation"]["num_prompts"] == 2
    assert after["fingerprint"] == record["fingerprint"]


def test_a_redo_names_the_changed_key_and_where_the_old_outputs_go(workdir, capsys):
    data = recipe(rl=None, evaluation=None)
    Path("recipe.yaml").write_text(yaml.safe_dump(data))
    assert run_main(["recipe.yaml"]) == 0
    code, _, plan = dry_run(capsys, data, "--set", "cold_start.learning_rate=1e-4")
    assert code == 0
    assert "cold_start         sft                redo" in plan
    assert ('redo:     changed: cold_start.learning_rate (unset) -> 0.0001; its old outputs move to '
            "runs/r/cold_start.previous") in plan


def test_a_training_default_edit_redoes_and_a_bookkeeping_edit_does_not(workdir, capsys):
    data = recipe(rl=None, evaluation=None)
    Path("recipe.yaml").write_text(yaml.safe_dump(data))
    assert run_main(["recipe.yaml"]) == 0
    code, _, plan = dry_run(capsys, data, "--set", "training.logging_steps=5")
    assert code == 0 and "cold_start         sft                skip (done)" in plan
    code, _, plan = dry_run(capsys, data, "--set", "training.learning_rate=1e-4")
    assert code == 0 and "cold_start         sft                redo" in plan
    assert 'changed: training.learning_rate (unset) -> 0.0001' in plan


# ------------------------------------------------------------------------------------------- 2. false passes


def test_reward_weights_of_another_length(workdir, capsys):
    fails_once(capsys, recipe(rl={"reward_weights": [1.0, 0.5, 0.25]}),
               "rl: key 'reward_weights': 3 weights for the 2 rewards of rl (['format', 'math'])",
               "give one weight per reward")
    fails_once(capsys, recipe(training={"reward_weights": [1.0]}), "training: key 'reward_weights': 1 weight for")


def test_lengths_above_the_model_context(workdir, capsys):
    fails_once(capsys, recipe(cold_start={"max_length": 100000}),
               "cold_start: key 'max_length': 100000 is above the model's context of 1024 tokens",
               "tiny/config.json", "set it to at most 1024")
    # a Hub id, offline: its context from the known config (trl_r1.rehearsal.models)
    problems = dry_run(capsys, recipe(model={"model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"},
                                      rl={"max_completion_length": 131072}))[1]
    assert ("rl: key 'max_completion_length': 131072 is above the model's context of 32768 tokens "
            "(max_position_embeddings in Qwen/Qwen2.5-0.5B-Instruct's config); set it to at most 32768") in problems


def test_rows_without_their_gold_answer(workdir, capsys):
    rows = [json.loads(line) for line in Path("prompts.jsonl").read_text().splitlines()]
    for i in range(3, 40, 3):
        rows[i]["solution"] = None
    Path("gaps.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    fails_once(capsys, recipe(rl={"dataset_name": "gaps.jsonl"}),
               "rl: gaps.jsonl: 13 of 40 rows have no 'solution' (first: row 3, counted from 0)",
               "set allow_missing_answers: true")
    code, problems, plan = dry_run(capsys, recipe(rl={"dataset_name": "gaps.jsonl", "allow_missing_answers": True}))
    assert (code, problems) == (0, []) and "allow_missing_answers=True" in plan  # the choice shows in the plan


@pytest.mark.parametrize("path", ["/data/models/X", "./models/X"])
def test_a_model_path_whose_folder_is_missing(workdir, capsys, path):
    fails_once(capsys, recipe(model={"model_name_or_path": path}),
               f"model: key 'model_name_or_path': {path!r} does not exist, nor does its folder",
               "not looked up on the Hub")


def test_a_missing_data_file_is_no_hub_id(workdir, capsys):
    fails_once(capsys, recipe(rl={"dataset_name": "promts.jsonl"}),
               "rl: key 'dataset_name': promts.jsonl does not exist; did you mean 'prompts.jsonl'?")
    fails_once(capsys, recipe(rl={"dataset_name": "data/prompts.jsonl"}),
               "rl: key 'dataset_name': data/prompts.jsonl does not exist, nor does its folder data")


def test_local_files_honour_split_names_and_slices(workdir, capsys):
    from trl_r1.data.loading import load_dataset_spec

    assert load_dataset_spec("prompts.jsonl", split="train[:5]").num_rows == 5
    assert load_dataset_spec("prompts.jsonl", split="train[-10%:]").num_rows == 4
    assert load_dataset_spec("split", split="test").num_rows == 4
    for split in ("test", "nonexistent"):
        fails_once(capsys, recipe(evaluation={"dataset_name": "prompts.jsonl", "dataset_split": split}),
                   f"evaluation: key 'dataset_split': split {split!r}: prompts.jsonl is one file",
                   "use 'train' or a slice of it")
    # a file of held-out rows with no split named is its one split; a split named is honoured or refused
    held_out = recipe(evaluation={"dataset_name": "split/test.jsonl", "dataset_split": None})
    held_out["evaluation"].pop("dataset_split")
    code, problems, plan = dry_run(capsys, held_out)
    assert (code, problems) == (0, []) and "evaluation: split/test.jsonl [train]" in plan
    # the quickstart's old `--dataset_test_split test` on one file: it evaluated on the training prompts
    path = Path("grpo.yaml")
    path.write_text(yaml.safe_dump({"model_name_or_path": "tiny", "load_in_4bit": False, "use_peft": False,
                                    "use_cpu": True, "dataset_name": "prompts.jsonl", "output_dir": "runs/g",
                                    "max_completion_length": 8, "rewards": ["format", "math"]}))
    capsys.readouterr()
    assert grpo_main(["--config", str(path), "--dataset_test_split", "test", "--dry-run"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("  - ")]
    assert errors == ["  - evaluation: key 'dataset_split': split 'test': prompts.jsonl is one file, which `datasets` "
                      "reads as a single split named 'train'; use 'train' or a slice of it ('train[:100]', "
                      "'train[-100:]'), or keep the held-out rows in a file of their own (or a folder with "
                      "train.jsonl and test.jsonl) and name that"]


# ------------------------------------------------------------------------------------------- 7. errors that help


def test_a_file_that_is_not_utf8(workdir, capsys):
    Path("latin.jsonl").write_bytes(Path("prompts.jsonl").read_bytes() + '{"prompt": "café", "solution": "1"}\n'
                                    .encode("latin-1"))
    fails_once(capsys, recipe(rl={"dataset_name": "latin.jsonl"}),
               "rl: key 'dataset_name': latin.jsonl, line 41: not UTF-8 text (byte 0xe9", "save the file as UTF-8")


def test_a_file_of_blank_lines(workdir, capsys):
    Path("blank.jsonl").write_text("\n\n  \n")
    fails_once(capsys, recipe(rl={"dataset_name": "blank.jsonl"}),
               "rl: the dataset has no rows (blank.jsonl has blank lines only, no rows)")


def test_max_samples_zero(workdir, capsys):
    fails_once(capsys, recipe(rl={"max_samples": 0}), "rl: max_samples must be >= 1 (leave it out to keep every row)")


def test_a_flat_config_given_to_run(workdir, capsys):
    flat = {"model_name_or_path": "tiny", "dataset_name": "prompts.jsonl", "rewards": ["math"], "max_steps": 2,
            "learning_rate": 1e-5, "output_dir": "runs/g"}
    fails_once(capsys, flat, "is a single-stage config", "run it with `trl-r1 sft|grpo|ppo --config FILE`")


def test_a_recipe_given_to_grpo(workdir, capsys):
    fails_once(capsys, recipe(), "--config: this is a pipeline recipe (sections 'model', 'training'",
               "run it with `trl-r1 run FILE`", main=grpo_main, as_config=True)


@pytest.mark.parametrize("name, fragment", [
    ("accuracy_reward", "here 'math'"), ("accuracy", "here 'math'"), ("tag_count", "here 'soft_format'"),
    ("think_format_reward", "{name: format, require_answer: false}"), ("binary_code", "{name: code, binary: true}"),
    ("cosine", "which trl-r1 does not provide")])
def test_trl_and_open_r1_reward_names(workdir, capsys, name, fragment):
    fails_once(capsys, recipe(rl={"rewards": [name, "format"]}), f"rl: key 'rewards': {name!r} is", fragment)


@pytest.mark.parametrize("key, value, fragment", [
    ("max_prompt_length", 512, "GRPOConfig has none"), ("reward_funcs", ["math"], "name for `rewards`"),
    ("dataset_prompt_column", "problem", "`prompt_column`"), ("max_seq_length", 64, "`max_length`")])
def test_trl_and_open_r1_keys(workdir, capsys, key, value, fragment):
    section = "cold_start" if key == "max_seq_length" else "rl"
    problem = fails_once(capsys, recipe(**{section: {key: value}}), f"{section}: unknown key {key!r}: ", fragment)
    assert "did you mean" not in problem


def test_a_training_mistake_is_reported_once(workdir, capsys):
    fails_once(capsys, recipe(training={"seed": "x"}), "training: key 'seed': expected int")
    fails_once(capsys, recipe(training={"optim": "adamx"}), "training: key 'optim': adamx is not a valid")
