"""Red team of issue 35 (a user's first real run, round 3), blind: mistakes an ML engineer who knows TRL makes while
checking a recipe and their own JSONL/CSV data on a laptop, other than those issue 35 lists and those
test_first_run_red_team.py and test_first_run_2.py already cover. Each test is one mistake typed as a user would, on
the tiny model (dry runs, or a command on a 4-prompt file), asserting what the user should get: one clear line naming
the key, row or file, exit 2 and no traceback, or the right result. Each test failed on the main of its
round (the fixes landed with it)."""

import gzip
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, command, dry_run, fails_once, jsonl, passes, recipe
from trl_r1.cli import grpo_main, main, run_main


def fails_naming(capsys, data: dict, *fragments: str) -> list[str]:
    """The dry run exits 2 and one of its problems holds every fragment (for data whose one mistake shows in two
    columns)."""
    code, problems, _ = dry_run(capsys, data)
    assert code == 2 and any(all(f in p for f in fragments) for p in problems), (code, problems)
    return problems


def one_line_error(capsys, main_, argv: list[str], *fragments: str) -> str:
    """Exit 2, no traceback, and an error line that holds every fragment."""
    code, err = command(capsys, main_, argv)
    assert code == 2 and "Traceback" not in err, (code, err[-2000:])
    assert any(all(f in line for f in fragments) for line in err.splitlines()), err[-2000:]
    return err


def small_prompts() -> str:
    return jsonl("four.jsonl", [{"prompt": f"What is {i} + 1?", "solution": str(i + 1)} for i in range(4)])


# ------------------------------------------------------------------------------------------- odd rows


def test_mixed_schema_jsonl_names_the_first_row_of_the_other_schema(workdir, capsys):
    rows = [{"prompt": f"What is {i} + 1?", "solution": str(i + 1)} for i in range(5)]
    rows += [{"messages": [{"role": "user", "content": "1+1"}], "solution": "2"}] * 5
    fails_naming(capsys, recipe(rl={"dataset_name": jsonl("mixed.jsonl", rows)}), "rl: column 'prompt', row 5")


@pytest.mark.parametrize("rows, fragment", [
    ([{"prompt": i, "solution": str(i)} for i in range(10)], "row 0 (counted from 0) is int '0'"),
    ([{"prompt": None if i == 3 else f"What is {i}?", "solution": str(i)} for i in range(10)], "row 3 (counted from 0) is NoneType"),
])
def test_prompts_that_are_not_text(workdir, capsys, rows, fragment):
    fails_once(capsys, recipe(rl={"dataset_name": jsonl("odd.jsonl", rows)}), "rl: column 'prompt'", fragment)


def test_empty_objects_among_the_rows(workdir, capsys):
    rows = [{"prompt": f"What is {i} + 1?", "solution": str(i + 1)} if i % 3 else {} for i in range(12)]
    fails_naming(capsys, recipe(rl={"dataset_name": jsonl("holes.jsonl", rows)}), "4 of 12 rows have no 'solution'")


def test_capitalised_roles(workdir, capsys):
    turns = [{"role": "User", "content": "1+1"}, {"role": "Assistant", "content": "<think>1+1</think><answer>2</answer>"}]
    fails_once(capsys, recipe(cold_start={"dataset_name": jsonl("caps.jsonl", [{"messages": turns}] * 8)}),
               "cold_start: column 'messages', row 0 (counted from 0), turn 0: role 'User' is none of")


def test_a_prompt_with_a_system_turn_only(workdir, capsys):
    rows = [{"prompt": [{"role": "system", "content": "Reason step by step."}], "solution": "2"}] * 8
    fails_once(capsys, recipe(rl={"dataset_name": jsonl("sys.jsonl", rows)}), "rl: column 'prompt', row 0", "user")


def test_duplicate_prompts_are_noted(workdir, capsys):
    plan = passes(capsys, recipe(rl={"dataset_name": jsonl("dup.jsonl", [{"prompt": "What is 1+1?", "solution": "2"}] * 40)}))
    assert any("duplicate" in line for line in plan.splitlines() if line.startswith("note:")), plan


# ------------------------------------------------------------------------------------------- file formats


def test_a_csv_with_a_bom(workdir, capsys):
    Path("bom.csv").write_bytes(b"\xef\xbb\xbf" + ("prompt,solution\n" + "".join(
        f"What is {i} + 1?,{i + 1}\n" for i in range(10))).encode())
    passes(capsys, recipe(rl={"dataset_name": "bom.csv"}))


def test_a_csv_with_semicolons_shows_the_one_column_read(workdir, capsys):
    Path("semi.csv").write_text("prompt;solution\n" + "".join(f"What is {i} + 1?;{i + 1}\n" for i in range(10)))
    fails_naming(capsys, recipe(rl={"dataset_name": "semi.csv"}), "no 'prompt' column", "['prompt;solution']")


def test_a_tsv_file(workdir, capsys):
    Path("p.tsv").write_text("prompt\tsolution\n" + "".join(f"What is {i} + 1?\t{i + 1}\n" for i in range(10)))
    fails_once(capsys, recipe(rl={"dataset_name": "p.tsv"}), "rl: cannot load the dataset", "cannot tell the format of 'p.tsv'")


def test_a_gzipped_jsonl(workdir, capsys):
    Path("prompts.jsonl.gz").write_bytes(gzip.compress(Path("prompts.jsonl").read_bytes()))
    passes(capsys, recipe(rl={"dataset_name": "prompts.jsonl.gz"}))


# ------------------------------------------------------------------------------------------- conflicting keys


def test_4bit_and_8bit_together(workdir, capsys):
    fails_once(capsys, recipe(model={"use_peft": True, "load_in_4bit": True, "load_in_8bit": True}),
               "model:", "8 bit and 4 bit")


@pytest.mark.parametrize("section, keys, fragment", [
    ("training", {"bf16": True, "fp16": True}, "fp16 and bf16"),
    ("model", {"load_in_4bit": True, "use_peft": False}, "needs use_peft: true")])
def test_a_conflict_in_a_shared_section_is_reported_once(workdir, capsys, section, keys, fragment):
    fails_once(capsys, recipe(**{section: keys}), fragment)


# ------------------------------------------------------------------------------------------- wrong types, values


@pytest.mark.parametrize("section, keys, fragment", [
    ("rl", {"num_generations": 4.5}, "rl: key 'num_generations': expected int, got 4.5 (float)"),
    ("model", {"use_peft": True, "lora_r": 16.5}, "model: key 'lora_r': expected int, got 16.5"),
    ("rl", {"max_samples": "ten"}, "rl: key 'max_samples': expected int, got 'ten'"),
    ("rl", {"reward_weights": "1,1"}, "rl: key 'reward_weights': expected a list, got '1,1'"),
    ("evaluation", {"stages": "cold_start"}, "evaluation: key 'stages': expected a list, got 'cold_start'"),
    ("evaluation", {"num_prompts": -1}, "evaluation: num_prompts must be >= 1, got -1"),
    ("rl", {"temperature": -1.0}, "rl: key 'temperature': -1.0 makes every completion"),
    ("model", {"lora_rank": 8}, "model: unknown key 'lora_rank'; did you mean 'lora_r'?"),
])
def test_wrong_types_and_values(workdir, capsys, section, keys, fragment):
    fails_once(capsys, recipe(**{section: keys}), fragment)


@pytest.mark.parametrize("section, keys, key", [
    ("rl", {"reward_weights": [1.0, float("nan")]}, "reward_weights"),
    ("rl", {"top_p": 2.0}, "top_p"),
    ("rl", {"epsilon": -0.2}, "epsilon"),
    ("rl", {"num_iterations": 0}, "num_iterations"),
    ("model", {"use_peft": True, "lora_dropout": 1.5}, "lora_dropout"),
    ("model", {"use_peft": True, "lora_alpha": 0}, "lora_alpha"),
])
def test_values_that_cannot_train(workdir, capsys, section, keys, key):
    fails_once(capsys, recipe(**{section: keys}), f"{section}: key {key!r}")


def test_a_reward_listed_twice(workdir, capsys):
    fails_once(capsys, recipe(rl={"rewards": ["math", "format", "math"]}), "rl: key 'rewards'", "math")


def test_an_sft_max_length_shorter_than_every_example(workdir, capsys):
    fails_once(capsys, recipe(cold_start={"max_length": 2}), "cold_start: key 'max_length'")


def test_warmup_ratio_as_in_transformers_4(workdir, capsys):
    fails_once(capsys, recipe(training={"warmup_ratio": 0.1}), "unknown key 'warmup_ratio'", "warmup_steps")


# ------------------------------------------------------------------------------------------- flags in the wrong place


def test_set_typos_and_double_equals(workdir, capsys):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    one_line_error(capsys, run_main, ["recipe.yaml", "--dry-run", "--set", "rl.learnig_rate=1e-6"],
                   "rl: unknown key 'learnig_rate'; did you mean 'learning_rate'?")
    one_line_error(capsys, run_main, ["recipe.yaml", "--dry-run", "--set", "rl.learning_rate==1e-6"],
                   "rl: key 'learning_rate': expected float, got '=1e-6'")


def test_set_with_a_space_instead_of_equals(workdir, capsys):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    one_line_error(capsys, run_main, ["recipe.yaml", "--dry-run", "--set", "rl.learning_rate", "1e-6"],
                   "rl.learning_rate=1e-6")


def test_two_recipes(workdir, capsys):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    Path("other.yaml").write_text(yaml.safe_dump(recipe()))
    one_line_error(capsys, run_main, ["recipe.yaml", "other.yaml", "--dry-run"], "unrecognized arguments: other.yaml")


def test_a_run_flag_before_the_command(workdir, capsys):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    one_line_error(capsys, main, ["--dry-run", "run", "recipe.yaml"], "--dry-run", "after")


def test_smoke_with_card(workdir, capsys):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    one_line_error(capsys, run_main, ["recipe.yaml", "--smoke", "--card", "24"], "--card plans a run for another GPU")


def test_grpo_rewards_comma_separated(workdir, capsys):
    one_line_error(capsys, grpo_main, [
        "--model_name_or_path", "tiny", "--dataset_name", "prompts.jsonl", "--output_dir", "runs/g", "--use_cpu",
        "--bf16", "false", "--load_in_4bit", "false", "--rewards", "format,math", "--dry_run"],
        "unknown reward 'format,math'")


def test_sft_on_prompt_only_data_and_grpo_on_sft_data(workdir, capsys):
    flags = ["--model_name_or_path", "tiny", "--use_cpu", "--bf16", "false", "--load_in_4bit", "false", "--dry_run"]
    one_line_error(capsys, lambda argv: main(["sft", *argv]),
                   [*flags, "--dataset_name", "prompts.jsonl", "--output_dir", "runs/s"],
                   "cold_start: the dataset has columns ['prompt', 'solution']", "'messages'")
    one_line_error(capsys, grpo_main, [*flags, "--dataset_name", "sft.jsonl", "--output_dir", "runs/g", "--rewards",
                                       "format"], "rl: the dataset has no 'prompt' column (columns: ['messages'])")


def test_grpo_output_dir_that_is_a_file(workdir, capsys):
    Path("afile").write_text("notes\n")
    err = one_line_error(capsys, grpo_main, [
        "--model_name_or_path", "tiny", "--dataset_name", "prompts.jsonl", "--output_dir", "afile", "--use_cpu",
        "--bf16", "false", "--load_in_4bit", "false", "--rewards", "format", "--dry_run"], "output_dir", "afile")
    assert "--run-dir" not in err


# ------------------------------------------------------------------------------------------- accelerate configs


def test_an_accelerate_config_given_as_the_recipe(workdir, capsys):
    zero3 = str(ROOT / "recipes/accelerate_configs/zero3.yaml")
    err = one_line_error(capsys, run_main, [zero3, "--dry-run"], "accelerate")
    assert "--config FILE" not in err


def test_an_accelerate_config_file_flag_given_to_run(workdir, capsys):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    ddp = str(ROOT / "recipes/accelerate_configs/ddp.yaml")
    one_line_error(capsys, run_main, ["recipe.yaml", "--dry-run", "--config_file", ddp], "accelerate launch")


# ------------------------------------------------------------------------------------------- resume situations


def test_a_finished_stage_with_an_unreadable_record(workdir, capsys):
    stage = Path("runs/r/cold_start")
    stage.mkdir(parents=True)
    (stage / "stage.json").write_text('{"name": "cold_start", "fingerpr')
    (stage / "model.safetensors").write_bytes(b"\0" * 64)
    code, problems, plan = dry_run(capsys, recipe())
    said = problems if code == 2 else [line for line in plan.splitlines() if line.startswith("note:")]
    assert any("cold_start" in line and "stage.json" in line for line in said), (code, problems)


def test_from_stage_on_a_fresh_run_dir_still_runs_the_earlier_stages(workdir, capsys):
    plan = passes(capsys, recipe(), "--from-stage", "rl")
    assert "1. cold_start" in plan and "run" in plan.split("1. cold_start")[1].splitlines()[0]


# ------------------------------------------------------------------------------------------- the other commands


def test_evaluate_and_rejection_sample_refuse_zero_samples(workdir, capsys):
    one_line_error(capsys, main, ["evaluate", "--model_name_or_path", "tiny", "--dataset_name", "split",
                                  "--dataset_split", "test", "--num_samples", "0", "--output_dir", "ev"],
                   "num_samples must be >= 1, got 0")
    one_line_error(capsys, main, ["rejection-sample", "--model_name_or_path", "tiny", "--dataset_name", small_prompts(),
                                  "--output_dir", "rs", "--num_samples", "-1"], "num_samples must be >= 1, got -1")


def test_rejection_sample_openai_backend_without_a_url(workdir, capsys):
    one_line_error(capsys, main, ["rejection-sample", "--model_name_or_path", "tiny", "--dataset_name", small_prompts(),
                                  "--output_dir", "rs", "--backend", "openai"], "needs base_url")


def test_publish_before_any_stage_finished(workdir, capsys):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    one_line_error(capsys, main, ["publish", "recipe.yaml", "--repo-id", "me/x", "--export-only"],
                   "no finished stage with a model in runs/r")


def test_evaluate_on_a_missing_file(workdir, capsys):
    one_line_error(capsys, main, ["evaluate", "--model_name_or_path", "tiny", "--dataset_name", "nope.jsonl",
                                  "--output_dir", "ev"], "nope.jsonl does not exist")


@pytest.mark.parametrize("command_, flags, key", [
    ("evaluate", ["--dataset_name", "split", "--dataset_split", "test", "--top_p", "2"], "top_p"),
    ("distill", ["--dataset_name", "four.jsonl", "--temperature", "-1"], "temperature"),
    ("rejection-sample", ["--dataset_name", "four.jsonl", "--dedup_threshold", "2"], "dedup_threshold"),
    ("rejection-sample", ["--dataset_name", "four.jsonl", "--min_reward", "5"], "min_reward"),
])
def test_generation_settings_out_of_range(workdir, capsys, command_, flags, key):
    small_prompts()
    budget = ["--num_prompts", "1"] if command_ == "evaluate" else []
    one_line_error(capsys, main, [command_, "--model_name_or_path", "tiny", *flags, *budget, "--num_samples", "1",
                                  "--max_new_tokens", "2", "--output_dir", "out"], key)


# ------------------------------------------------------------------------------------------- round two of probes


def test_prompt_content_as_a_list_of_parts(workdir, capsys):
    rows = [{"prompt": [{"role": "user", "content": [{"type": "text", "text": f"What is {i} + 1?"}]}],
             "solution": str(i + 1)} for i in range(8)]
    code, problems, _ = dry_run(capsys, recipe(rl={"dataset_name": jsonl("parts.jsonl", rows)}))
    assert code == 0 or (code == 2 and any("row 0" in p for p in problems)), (code, problems)


def test_gold_answers_that_are_nan(workdir, capsys):
    Path("nan.jsonl").write_text("".join(f'{{"prompt": "What is {i} + 1?", "solution": NaN}}\n' for i in range(8)))
    fails_naming(capsys, recipe(rl={"dataset_name": "nan.jsonl"}), "8 of 8 rows have no 'solution'")


def test_run_dir_that_is_the_model_folder(workdir, capsys):
    fails_once(capsys, {**recipe(), "run_dir": "tiny"}, "run_dir", "tiny")


def test_planning_a_gpu_for_a_recipe_that_trains_on_cpu(workdir, capsys):
    plan = passes(capsys, recipe(), "--card", "24")
    assert any("use_cpu" in line for line in plan.splitlines() if line.startswith("note:")), plan


def test_cold_start_data_without_think_tags_is_noted(workdir, capsys):
    turns = [{"role": "user", "content": "1+1"}, {"role": "assistant", "content": "2"}]
    plan = passes(capsys, recipe(cold_start={"dataset_name": jsonl("nothink.jsonl", [{"messages": turns}] * 8)}))
    assert any("<think>" in line for line in plan.splitlines() if line.startswith("note:")), plan


@pytest.mark.parametrize("card, shown", [("24GB", "24 GB card"), ("H100", "H100")])
def test_card_spellings(workdir, capsys, card, shown):
    assert shown in passes(capsys, recipe(), "--card", card)


@pytest.mark.parametrize("card", ["0", "-24"])
def test_card_sizes_that_are_not_positive(workdir, capsys, card):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    one_line_error(capsys, run_main, ["recipe.yaml", "--dry-run", f"--card={card}"], f"--card '{card}'", "positive")


def test_a_data_file_edited_after_its_stage_finished(workdir, capsys):
    from trl_r1.toy.arithmetic import cold_start_dataset

    data = recipe(rl=None, evaluation=None)
    Path("recipe.yaml").write_text(yaml.safe_dump(data))
    assert command(capsys, run_main, ["recipe.yaml"])[0] == 0
    cold_start_dataset(num_rows=32).to_json("sft.jsonl")
    plan = passes(capsys, data)
    stage = next(line for line in plan.splitlines() if line.startswith("1. cold_start"))
    notes = [line for line in plan.splitlines() if line.startswith("note:") and "sft.jsonl" in line]
    assert "skip (done)" not in stage or notes, plan
