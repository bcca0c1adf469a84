"""Red team of issue 29 (a user's first real run, round 2): a fresh round of new-user mistakes, made by someone who
did not build the checks. Each test is one mistake typed as a user would: a recipe, a data file or a command line
on the tiny model, run as a dry run (exit 2 with one line naming the stage, key, file or row and the fix), or a
command whose behaviour is right as it is. Mistakes the code still gets wrong are `xfail(strict=True)`.

The issue's own list (reward_weights, context lengths, missing answers, ...) is tested in test_first_run_2.py;
this file covers other kinds: chat formats, file formats, YAML, --set/--from-stage, numbers, models, run dirs,
command-line spelling."""

import importlib.util
import json
import logging
from pathlib import Path

import pytest
import yaml

from tests.conftest import command, fails_once, jsonl, passes, recipe
from trl_r1.cli import grpo_main, main, run_main


# ------------------------------------------------------------------------------------------- chat formats


def test_sharegpt_roles_in_sft_data(workdir, capsys):
    jsonl("sharegpt.jsonl", [{"messages": [{"role": "human", "content": "1+1"}, {"role": "gpt", "content": "2"}]}] * 8)
    fails_once(capsys, recipe(cold_start={"dataset_name": "sharegpt.jsonl"}),
               "cold_start: column 'messages', row 0", "role 'human'", "human -> user, gpt -> assistant")


def test_a_prompt_that_is_a_list_of_strings(workdir, capsys):
    jsonl("listprompt.jsonl", [{"prompt": ["What is 1+1?", "Think first."], "solution": "2"}] * 8)
    fails_once(capsys, recipe(rl={"dataset_name": "listprompt.jsonl"}),
               "rl: column 'prompt', row 0 (counted from 0), turn 0 is str 'What is 1+1?'", '{"role": "user"')


def test_sft_rows_without_an_assistant_turn(workdir, capsys):
    jsonl("useronly.jsonl", [{"messages": [{"role": "user", "content": "1+1"}]}] * 8)
    fails_once(capsys, recipe(cold_start={"dataset_name": "useronly.jsonl"}),
               "cold_start: column 'messages', row 0 (counted from 0) has no assistant turn")


def test_a_turn_with_null_content(workdir, capsys):
    jsonl("null.jsonl", [{"messages": [{"role": "user", "content": "1+1"}, {"role": "assistant", "content": None}]}] * 8)
    fails_once(capsys, recipe(cold_start={"dataset_name": "null.jsonl"}),
               "cold_start: column 'messages', row 0 (counted from 0), turn 1 (assistant): content is None")


def test_messages_saved_as_a_json_string(workdir, capsys):
    turns = json.dumps([{"role": "user", "content": "1+1"}, {"role": "assistant", "content": "2"}])
    jsonl("strmsg.jsonl", [{"messages": turns}] * 8)
    fails_once(capsys, recipe(cold_start={"dataset_name": "strmsg.jsonl"}),
               "cold_start: column 'messages', row 0 (counted from 0) is str", "not a list of {role, content} turns")


def test_empty_prompts(workdir, capsys):
    jsonl("emptyp.jsonl", [{"prompt": "" if i % 2 else f"What is {i} + 1?", "solution": str(i + 1)} for i in range(10)])
    fails_once(capsys, recipe(rl={"dataset_name": "emptyp.jsonl"}),
               "rl: column 'prompt': 5 of 10 rows have an empty prompt (first: row 1, counted from 0)")


def test_gsm8k_style_question_column(workdir, capsys):
    jsonl("gsm.jsonl", [{"question": f"What is {i}+1?", "solution": str(i + 1)} for i in range(10)])
    fails_once(capsys, recipe(rl={"dataset_name": "gsm.jsonl"}),
               "rl: the dataset has no 'prompt' column", "set prompt_column: question")


def test_sft_prompt_completion_and_text_files_are_accepted(workdir, capsys):
    jsonl("pc.jsonl", [{"prompt": "1+1?", "completion": "<think>1+1=2</think> <answer>2</answer>"}] * 8)
    passes(capsys, recipe(cold_start={"dataset_name": "pc.jsonl"}))
    jsonl("text.jsonl", [{"text": "<think>1+1=2</think> <answer>2</answer>"}] * 8)
    passes(capsys, recipe(cold_start={"dataset_name": "text.jsonl"}))


def test_prompts_longer_than_the_context(workdir, capsys):
    jsonl("long.jsonl", [{"prompt": "word " * 3000 if i % 2 else "What is 1 + 1?", "solution": "2"} for i in range(4)])
    fails_once(capsys, recipe(rl={"dataset_name": "long.jsonl"}),
               "rl: column 'prompt': 2 of 4 prompts fill the model's context of 1024 tokens", "(first: row 1,")


# ------------------------------------------------------------------------------------------- file formats


def test_csv_and_parquet_files(workdir, capsys):
    from trl_r1.toy.arithmetic import arithmetic_dataset

    Path("p.csv").write_text("prompt,solution\n" + "".join(f"What is {i} + 1?,{i + 1}\n" for i in range(10)))
    passes(capsys, recipe(rl={"dataset_name": "p.csv"}))
    arithmetic_dataset(num_rows=10).to_parquet("p.parquet")
    passes(capsys, recipe(rl={"dataset_name": "p.parquet"}))


def test_one_broken_line_in_the_middle(workdir, capsys):
    lines = Path("prompts.jsonl").read_text().splitlines()
    lines[17] = lines[17][:-5]
    Path("broken.jsonl").write_text("\n".join(lines) + "\n")
    fails_once(capsys, recipe(rl={"dataset_name": "broken.jsonl"}),
               "rl: key 'dataset_name': broken.jsonl, line 18: not valid JSON", "fix or remove that line")


def test_a_line_that_is_a_json_list(workdir, capsys):
    Path("listline.jsonl").write_text(Path("prompts.jsonl").read_text() + '["What is 1 + 1?", "2"]\n')
    fails_once(capsys, recipe(rl={"dataset_name": "listline.jsonl"}),
               "listline.jsonl, line 41: a JSON list, not an object")


def test_gold_answers_as_numbers(workdir, capsys):
    jsonl("numbers.jsonl", [{"prompt": f"What is {i} + 1?", "solution": i + 1} for i in range(10)])
    passes(capsys, recipe(rl={"dataset_name": "numbers.jsonl"}))


def test_windows_line_endings_and_a_bom(workdir, capsys):
    Path("crlf.jsonl").write_bytes(Path("prompts.jsonl").read_bytes().replace(b"\n", b"\r\n"))
    passes(capsys, recipe(rl={"dataset_name": "crlf.jsonl"}))
    Path("bom.jsonl").write_bytes(b"\xef\xbb\xbf" + Path("prompts.jsonl").read_bytes())
    passes(capsys, recipe(rl={"dataset_name": "bom.jsonl"}))


def test_a_json_array_saved_as_jsonl(workdir, capsys):
    rows = [json.loads(line) for line in Path("prompts.jsonl").read_text().splitlines()]
    Path("array.jsonl").write_text(json.dumps(rows))
    passes(capsys, recipe(rl={"dataset_name": "array.jsonl"}))


def test_a_folder_with_no_data_files(workdir, capsys):
    Path("nodata").mkdir()
    fails_once(capsys, recipe(rl={"dataset_name": "nodata"}), "rl:", "nodata doesn't contain any data files")


def test_more_max_samples_than_rows_keeps_every_row(workdir, capsys):
    passes(capsys, recipe(rl={"max_samples": 1000}))


# ------------------------------------------------------------------------------------------- the recipe's YAML


def test_a_yaml_indented_with_tabs(workdir, capsys):
    Path("recipe.yaml").write_text("run_dir: runs/r\nmodel:\n\tmodel_name_or_path: tiny\n")
    code, err = command(capsys, run_main, ["recipe.yaml", "--dry-run"])
    assert code == 2 and "recipe.yaml: not valid YAML (YAML indents with spaces, not tabs)" in err
    assert "line 3" in err and len(err.splitlines()) == 2  # the title and one line


@pytest.mark.parametrize("text, key", [("run_dir: runs/other\n", "run_dir"), (None, "max_length")])
def test_a_key_given_twice(workdir, capsys, text, key):
    body = yaml.safe_dump(recipe(), sort_keys=False)
    body = body + text if text else body.replace("  max_length: 64\n", "  max_length: 64\n  max_length: 128\n")
    Path("recipe.yaml").write_text(body)
    code, err = command(capsys, run_main, ["recipe.yaml", "--dry-run"])
    assert code == 2 and f"key {key!r} is given twice; keep one" in err


def test_a_recipe_with_a_bom_and_windows_line_endings(workdir, capsys):
    Path("win.yaml").write_bytes(b"\xef\xbb\xbf" + yaml.safe_dump(recipe()).encode().replace(b"\n", b"\r\n"))
    assert command(capsys, run_main, ["win.yaml", "--dry-run"])[0] == 0


def test_a_recipe_that_is_a_folder(workdir, capsys):
    code, err = command(capsys, run_main, ["split", "--dry-run"])
    assert code == 2 and "config file 'split' is a folder; give the YAML file in it" in err


@pytest.mark.parametrize("text, kind", [("", "NoneType"), ("- a\n- b\n", "list")])
def test_an_empty_or_list_recipe(workdir, capsys, text, kind):
    Path("bad.yaml").write_text(text)
    code, err = command(capsys, run_main, ["bad.yaml", "--dry-run"])
    assert code == 2 and f"bad.yaml: must be a mapping of keys, got {kind}" in err


def test_an_empty_stage_section(workdir, capsys):
    data = recipe()
    data["cold_start"] = None
    fails_once(capsys, data, "cold_start: must be a mapping of keys, got NoneType")


@pytest.mark.parametrize("section, fragment", [("grpo", "'rl' (algorithm: grpo)"), ("sft", "'cold_start'")])
def test_trl_command_names_as_sections(workdir, capsys, section, fragment):
    data = recipe()
    data[section] = {"learning_rate": 1e-6}
    fails_once(capsys, data, f"unknown section {section!r}", fragment)


def test_output_dir_in_a_stage(workdir, capsys):
    fails_once(capsys, recipe(rl={"output_dir": "out/rl"}), "rl: key 'output_dir' is set by the pipeline")


# ------------------------------------------------------------------------------------------- --set, --from-stage


def test_set_a_key_without_its_section(workdir, capsys):
    fails_once(capsys, recipe(), "unknown section 'learning_rate'", "--set training.learning_rate=",
               main=lambda argv: run_main([*argv, "--set", "learning_rate=1e-6"]))


@pytest.mark.parametrize("item, fragment", [
    ("rl.learning_rate=abc", "rl: key 'learning_rate': expected float, got 'abc'"),
    ("rl.rewards=format,math", "rl: key 'rewards' must be a non-empty list"),
    ("rl.learning_rate", "--set 'rl.learning_rate': expected SECTION.KEY=VALUE")])
def test_set_with_a_bad_value(workdir, capsys, item, fragment):
    fails_once(capsys, recipe(), fragment, main=lambda argv: run_main([*argv, "--set", item]))


def test_set_a_list_in_yaml_syntax(workdir, capsys):
    plan = passes(capsys, recipe(), "--set", "rl.rewards=[format, math]")
    assert "rewards=['format', 'math']" in plan


@pytest.mark.parametrize("stage", ["cold-start", "evaluation"])
def test_from_stage_that_is_no_stage(workdir, capsys, stage):
    fails_once(capsys, recipe(), f"--from-stage {stage!r} is not a stage of this recipe; stages: ['cold_start', 'rl']",
               main=lambda argv: run_main([*argv, "--from-stage", stage]))


# ------------------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("section, keys, fragment", [
    ("rl", {"learning_rate": -1e-6}, "rl: key 'learning_rate': -1e-06 must be 0 or above"),
    ("rl", {"max_steps": 0}, "rl: key 'max_steps': 0 would train num_train_epochs epochs"),
    ("rl", {"max_steps": -5}, "rl: key 'max_steps': -5 would train"),
    ("cold_start", {"num_train_epochs": 0, "max_steps": -1}, "cold_start: key 'num_train_epochs': 0.0 trains nothing"),
    ("rl", {"per_device_train_batch_size": 0}, "rl: key 'per_device_train_batch_size': 0 must be at least 1"),
    ("rl", {"beta": -0.1}, "rl: key 'beta': -0.1 must be 0 (no KL penalty) or above"),
    ("rl", {"temperature": 0}, "rl: key 'temperature': 0.0 makes every completion of a prompt the same"),
    ("rl", {"max_completion_length": 0}, "rl: key 'max_completion_length': 0 must be at least 1 token"),
    ("model", {"use_peft": True, "lora_r": 0}, "model: key 'lora_r': 0 must be at least 1"),
])
def test_numbers_that_train_wrong(workdir, capsys, section, keys, fragment):
    fails_once(capsys, recipe(**{section: keys}), fragment)


def test_a_learning_rate_of_zero_is_a_note(workdir, capsys):
    """0 is a deliberate choice (a stage that must change no weight, as test_pipeline's handoff test uses), so a
    note, not an error: the plan says the stage trains nothing."""
    plan = passes(capsys, recipe(cold_start={"learning_rate": 0}))
    assert "note: cold_start: learning_rate 0: this stage trains no weight" in plan


def test_a_training_number_is_reported_once_for_every_stage(workdir, capsys):
    fails_once(capsys, recipe(training={"gradient_accumulation_steps": 0}),
               "cold_start, rl: key 'gradient_accumulation_steps': 0 must be at least 1")


@pytest.mark.parametrize("keys, fragment", [
    ({"num_generations": 3}, "rl: generation_batch_size (4) must be divisible by num_generations (3)"),
    ({"num_generations": 1}, "rl: GRPO requires at least 2 generations per prompt")])
def test_num_generations_that_do_not_fit_the_batch(workdir, capsys, keys, fragment):
    fails_once(capsys, recipe(rl=keys), fragment)


def test_a_learning_rate_written_as_text_is_a_number(workdir, capsys):
    """YAML reads `1e-6` (no dot) as text: it is taken as the number it spells, as TRL's parser does."""
    from trl_r1.pipeline import load_recipe

    assert "learning_rate=1e-6" in passes(capsys, recipe(rl={"learning_rate": "1e-6"}))
    assert load_recipe(recipe(rl={"learning_rate": "1e-6"})).stages[1].config.learning_rate == 1e-6


@pytest.mark.parametrize("section, keys, fragment", [
    ("model", {"dtype": "bf16"}, "model: key 'dtype': expected one of ['auto', 'bfloat16', 'float16', 'float32'], got 'bf16'"),
    ("model", {"use_peft": "yes"}, "model: key 'use_peft': expected bool, got 'yes'"),
    ("rl", {"algorithm": "gpro"}, "rl: key 'algorithm': expected one of ['grpo', 'ppo'], got 'gpro'"),
    ("evaluation", {"stages": ["cold-start"]}, "evaluation: stages entry 'cold-start' is not a stage; did you mean 'cold_start'?"),
    ("evaluation", {"num_samples": 0}, "evaluation: num_samples must be >= 1, got 0"),
])
def test_wrong_values_of_known_keys(workdir, capsys, section, keys, fragment):
    fails_once(capsys, recipe(**{section: keys}), fragment)


# ------------------------------------------------------------------------------------------- rewards


def test_a_reward_option_with_a_typo(workdir, capsys):
    fails_once(capsys, recipe(rl={"rewards": [{"name": "format", "require_answr": False}, "math"]}),
               "rl: key 'rewards': reward 'format' has no option 'require_answr'; did you mean 'require_answer'?")


@pytest.mark.parametrize("rewards, fragment", [
    ([{"kind": "math"}], "a reward entry must be a name or a mapping with 'name'"),
    ([], "rl: key 'rewards' must be a non-empty list"), ("math", "rl: key 'rewards' must be a non-empty list")])
def test_rewards_of_the_wrong_shape(workdir, capsys, rewards, fragment):
    fails_once(capsys, recipe(rl={"rewards": rewards}), fragment)


def test_a_tracker_that_is_not_installed(workdir, capsys):
    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here")
    fails_once(capsys, recipe(training={"report_to": "wandb"}),
               "cold_start, rl: key 'report_to': wandb is not installed; pip install wandb")


# ------------------------------------------------------------------------------------------- models and run dirs


def test_a_model_folder_with_an_adapter_only(workdir, capsys):
    Path("adapter").mkdir()
    Path("adapter/adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "tiny", "peft_type": "LORA"}))
    fails_once(capsys, recipe(model={"model_name_or_path": "adapter"}),
               "model: key 'model_name_or_path': 'adapter' holds a LoRA adapter only", "its base model (tiny)")


def test_an_empty_model_folder(workdir, capsys):
    Path("empty").mkdir()
    fails_once(capsys, recipe(model={"model_name_or_path": "empty"}),
               "model: key 'model_name_or_path': 'empty' is a folder without config.json")


def test_a_model_path_that_is_a_file(workdir, capsys):
    fails_once(capsys, recipe(model={"model_name_or_path": "tiny/config.json"}),
               "model: key 'model_name_or_path': 'tiny/config.json' is a file")


def test_a_tokenizer_without_a_chat_template(workdir, capsys):
    import shutil

    shutil.copytree("tiny", "plain")
    config = json.loads(Path("plain/tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    Path("plain/tokenizer_config.json").write_text(json.dumps(config))
    Path("plain/chat_template.jinja").unlink(missing_ok=True)
    fails_once(capsys, recipe(model={"model_name_or_path": "plain"}), "model: the tokenizer of plain has no chat template")


@pytest.mark.parametrize("run_dir, fragment", [("afile", "run_dir: afile is a file"),
                                               ("afile/sub", "run_dir: afile/sub lies under afile")])
def test_a_run_dir_that_is_a_file(workdir, capsys, run_dir, fragment):
    Path("afile").write_text("notes\n")
    fails_once(capsys, recipe(), fragment, main=lambda argv: run_main([*argv, "--run-dir", run_dir]))


def test_relative_paths_are_from_the_current_folder(workdir, capsys):
    """A recipe in proj/ naming '../prompts.jsonl', run from the folder above: the error says where paths start."""
    Path("proj").mkdir()
    data = recipe(model=None, cold_start=None, evaluation=None, rl={"dataset_name": "../prompts.jsonl"})
    data["model"] = {"model_name_or_path": "tiny", "load_in_4bit": False, "use_peft": False, "dtype": "float32"}
    Path("proj/recipe.yaml").write_text(yaml.safe_dump(data))
    code, err = command(capsys, run_main, ["proj/recipe.yaml", "--dry-run"])
    assert code == 2 and f"rl: key 'dataset_name': ../prompts.jsonl does not exist (paths are relative to {Path.cwd()})" in err


# ------------------------------------------------------------------------------------------- the command line


@pytest.mark.parametrize("flags", [["--dry_run"], ["--dry-run", "--run_dir", "runs/x"],
                                   ["--dry-run", "--from_stage", "rl"], ["--dry-run", "--num-processes", "1"]])
def test_run_flags_take_dashes_or_underscores(workdir, capsys, flags):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    code, err = command(capsys, run_main, ["recipe.yaml", *flags])
    assert code == 0, err


def test_stage_flags_take_dashes_or_underscores(workdir, capsys):
    flat = ["--model_name_or_path", "tiny", "--dataset-name", "prompts.jsonl", "--output-dir", "runs/g",
            "--use-cpu", "--bf16", "false", "--load_in_4bit", "false", "--learning-rate", "1e-6",
            "--max-completion-length", "8", "--rewards", "format", "math", "--dry_run"]
    capsys.readouterr()
    assert grpo_main(flat) == 0
    assert "learning_rate=1e-6 (overridden)" in " ".join(capsys.readouterr().out.split())


def test_help_shows_required_keys_as_required(capsys):
    with pytest.raises(SystemExit):
        grpo_main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for placeholder in ("'MODEL'", "'DATASET'", "'OUTPUT_DIR'"):
        assert placeholder not in out
    assert "--model_name_or_path MODEL_NAME_OR_PATH Model checkpoint for weights initialization. (required)" in out


def test_lora_target_modules_all_linear_as_the_docs_write_it(workdir, capsys):
    plan = passes(capsys, recipe(model={"use_peft": True, "lora_target_modules": "all-linear"}))
    assert "all-linear" in plan


def test_lora_target_modules_the_model_does_not_have(workdir, capsys):
    fails_once(capsys, recipe(model={"use_peft": True, "lora_target_modules": ["q_proj", "qkv"]}),
               "model: key 'lora_target_modules': ['qkv'] name no linear layer of tiny", "'v_proj'")
    passes(capsys, recipe(model={"use_peft": True, "lora_target_modules": ["q_proj", "v_proj"]}))


def test_the_bitsandbytes_kernels_notice_is_silenced():
    logger = logging.getLogger("bitsandbytes.backends.cpu.ops")
    record = logger.makeRecord(logger.name, logging.WARNING, "ops.py", 1, "Failed to load CPU gemm_4bit_forward from "
                               "kernels-community: %s. Please make sure ...", ("No module named 'kernels'",), None)
    other = logger.makeRecord(logger.name, logging.WARNING, "ops.py", 1, "another bitsandbytes warning", (), None)
    assert not logger.filter(record) and logger.filter(other)


def test_run_with_config_as_for_trl(workdir, capsys):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    code, err = command(capsys, run_main, ["--config", "recipe.yaml", "--dry-run"])
    assert code == 2 and "`trl-r1 run` takes the recipe as its argument, not --config" in err


def test_grpo_with_the_config_as_a_positional_argument(workdir, capsys):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    code, err = command(capsys, grpo_main, ["recipe.yaml", "--dry-run"])
    assert code == 2 and "unexpected argument 'recipe.yaml'; overrides are --KEY VALUE" in err


def test_an_unknown_command(capsys):
    code, err = command(capsys, main, ["train", "recipe.yaml"])
    assert code == 2 and err.startswith("trl-r1: unknown command 'train'")


@pytest.mark.parametrize("flags, fragment", [
    (["--dry-run", "--card", "rtx9000"], "--card 'rtx9000': give a size in GB"),
    (["--card", "24"], "--card plans a run for another GPU: use it with --dry-run"),
    (["--dry-run", "--num_processes", "0"], "--num_processes must be >= 1, got 0")])
def test_bad_launch_flags(workdir, capsys, flags, fragment):
    Path("recipe.yaml").write_text(yaml.safe_dump(recipe()))
    code, err = command(capsys, run_main, ["recipe.yaml", *flags])
    assert code == 2 and fragment in err
