"""Red team of the preflight (issue 19): real recipes broken the ways users break them.

Each test asserts the behaviour a user needs: one error per real mistake, naming the stage (section) and the key, or
a clean pass. Where the preflight does not do that yet, the test is an xfail (strict) whose reason says what
happens instead."""

import copy
import json
from pathlib import Path

import pytest
import yaml

from trl_r1.cli import run_main
from trl_r1.pipeline import RecipeError, load_recipe
from trl_r1.pipeline.runner import Pipeline

ROOT = Path(__file__).resolve().parents[1]
ARITHMETIC = "trl_r1.toy.arithmetic:arithmetic_dataset"
COLD_START = "trl_r1.toy.arithmetic:cold_start_dataset"
TINY = yaml.safe_load((ROOT / "recipes" / "tiny" / "pipeline.yaml").read_text())
MATH = yaml.safe_load((ROOT / "recipes" / "qwen2.5-1.5b-instruct" / "math.yaml").read_text())
CODE = yaml.safe_load((ROOT / "recipes" / "qwen2.5-1.5b-instruct" / "code.yaml").read_text())


def recipe(base: dict, tmp_path, **changes) -> dict:
    """A copy of `base` run under tmp_path, with `changes` ({"section.key": value}; value None deletes the key)."""
    data = copy.deepcopy(base)
    data["run_dir"] = str(tmp_path / "run")
    for dotted, value in changes.items():
        section, _, key = dotted.partition(".")
        target = data.setdefault(section, {})
        if value is None:
            target.pop(key)
        else:
            target[key] = value
    return data


def problems_of(data, **pipeline_kwargs) -> list[str]:
    """The preflight's problems ([] on a clean pass), on no GPU, vLLM's absence left out (tested on its own)."""
    try:
        Pipeline(load_recipe(data, check_hardware=False), dry_run=True, card=None, **pipeline_kwargs).preflight()
    except RecipeError as exc:
        return [p for p in exc.problems if "vLLM is not installed" not in p]
    return []


def one_problem(data, *fragments: str) -> str:
    """The preflight reports exactly one problem, and it contains every fragment (stage, key, value)."""
    problems = problems_of(data)
    assert len(problems) == 1, problems
    assert all(fragment in problems[0] for fragment in fragments), problems[0]
    return problems[0]


@pytest.fixture
def code_mirrors(tmp_path, monkeypatch):
    from trl_r1.rehearsal.fixtures import DATA_DIR_ENV, write_mirrors

    # 128 rows: the recipe holds out the last 100 (`train[:-100]`, `train[-100:]`)
    root = write_mirrors(tmp_path / "mirrors", ["open-r1/Mixture-of-Thoughts",
                                                "open-r1/verifiable-coding-problems-python"], rows=128)
    monkeypatch.setenv(DATA_DIR_ENV, str(root))
    return root


def write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


# ------------------------------------------------------------------ what already behaves (keep it that way)


def test_the_shipped_tiny_and_math_recipes_pass(tmp_path, mirrors):
    assert problems_of(recipe(TINY, tmp_path)) == []
    assert problems_of(recipe(MATH, tmp_path)) == []


@pytest.mark.parametrize("section, key, hint", [
    ("training", "loging_steps", "logging_steps"),
    ("cold_start", "max_lenght", "max_length"),
    ("rl", "num_generation", "num_generations"),
    ("rejection_sampling", "num_sample", "num_samples"),
    ("final_sft", "init_form", "init_from"),
    ("evaluation", "num_prompt", "num_prompts"),
])
def test_a_misspelt_key_in_any_section_is_one_error_naming_section_and_key(tmp_path, section, key, hint):
    problem = one_problem(recipe(MATH, tmp_path, **{f"{section}.{key}": 1}), f"{section}: unknown key {key!r}")
    assert f"did you mean {hint!r}" in problem


def test_a_mistake_in_the_model_section_is_one_error_not_one_per_stage(tmp_path):
    # every trainer stage builds its model arguments from the section; it used to re-report the mistake
    one_problem(recipe(MATH, tmp_path, **{"model.lora_rr": 8}), "model: unknown key 'lora_rr'", "'lora_r'")
    one_problem(recipe(MATH, tmp_path, **{"model.lora_r": "eight"}), "model: key 'lora_r': expected int")
    # the same mistake of a stage's own is named too: one line naming both sections
    data = recipe(MATH, tmp_path, **{"model.load_in_4bit": "yes", "rl.load_in_4bit": "yes"})
    problems = problems_of(data)
    assert [p.split(":")[0] for p in problems] == ["model, rl"], problems


def test_a_misspelt_section_is_one_error(tmp_path):
    data = recipe(TINY, tmp_path)
    data["evalution"] = data.pop("evaluation")
    one_problem(data, "unknown section 'evalution'", "'evaluation'")


@pytest.mark.parametrize("dotted, value, expected", [
    ("rl.max_steps", "eighty", "rl: key 'max_steps': expected int, got 'eighty'"),
    ("rl.dataset_name", [ARITHMETIC], "rl: key 'dataset_name': expected str"),
    ("rejection_sampling.num_samples", "four", "rejection_sampling: key 'num_samples': expected int"),
    ("evaluation.num_prompts", "many", "evaluation: key 'num_prompts': expected int"),
    ("cold_start.num_train_epochs", "three", "cold_start: key 'num_train_epochs': expected float"),
    ("rl.algorithm", "grop", "rl: key 'algorithm': expected one of ['grpo', 'ppo']"),
    ("rl.rewards", "math", "rl: key 'rewards' must be a non-empty list"),
    ("rl.rewards", [{"name": "maths"}], "unknown reward 'maths' (did you mean 'math'?)"),
    ("final_sft.init_from", "rll", "final_sft: init_from 'rll' is neither 'base' nor an earlier stage"),
    ("evaluation.stages", ["base", "rll"], "evaluation: stages entry 'rll' is not a stage; did you mean 'rl'?"),
    ("rejection_sampling.num_samples", 0, "rejection_sampling: num_samples must be >= 1"),
])
def test_a_wrong_value_is_one_error_naming_stage_and_key(tmp_path, dotted, value, expected):
    one_problem(recipe(TINY, tmp_path, **{dotted: value}), expected)


def test_two_mistakes_in_two_stages_are_two_errors_and_no_false_ones(tmp_path):
    data = recipe(TINY, tmp_path, **{"rl.learning_rat": 1e-5, "cold_start.num_train_epochs": "three"})
    problems = problems_of(data)
    assert len(problems) == 2, problems
    assert problems[0].startswith("cold_start: key 'num_train_epochs'")
    assert problems[1].startswith("rl: unknown key 'learning_rat'")


@pytest.mark.parametrize("dotted, value, expected", [
    ("cold_start.dataset_config", "maths", "cold_start: cannot load the dataset: ValueError: BuilderConfig 'maths' "
                                           "not found. Available: ['all', 'code', 'math', 'science']"),
    ("cold_start.dataset_train_split", "tran", "cold_start: cannot load the dataset: ValueError: Bad split: tran. "
                                               "Available splits: ['train']"),
    ("rl.dataset_train_split", "validation", "rl: cannot load the dataset: ValueError: Bad split: validation. "
                                             "Available splits: ['train', 'test']"),
    ("evaluation.dataset_split", "train", "evaluation: cannot load the dataset: ValueError: Bad split: train."),
    ("rl.prompt_column", "prmpt", "rl: key 'prompt_column': the dataset has no 'prmpt' column"),
    ("rl.solution_column", "soln", "rl: key 'solution_column': the dataset has no 'soln' column"),
    ("evaluation.prompt_column", "problm", "evaluation: key 'prompt_column': the dataset has no 'problm' column"),
    ("evaluation.solution_column", "answr", "evaluation: key 'solution_column': the dataset has no 'answr' column"),
    ("cold_start.dataset_name", "trl-lib/DeepMath-103K", "cold_start: the dataset has columns ['prompt', "
                                                         "'solution']; it needs 'messages'"),
])
def test_a_hub_dataset_mistake_is_one_error_naming_stage_and_key(tmp_path, mirrors, dotted, value, expected):
    changes = {dotted: value}
    if dotted == "cold_start.dataset_name":
        changes["cold_start.dataset_config"] = None
    one_problem(recipe(MATH, tmp_path, **changes), expected)


def test_two_column_typos_in_two_stages_are_two_errors(tmp_path, mirrors):
    problems = problems_of(recipe(MATH, tmp_path, **{"rl.prompt_column": "x", "evaluation.solution_column": "y"}))
    assert [p.split(": key ")[0] for p in problems] == ["rl", "evaluation"], problems


def test_local_files_column_keys(tmp_path):
    import pandas as pd

    table = tmp_path / "questions.parquet"
    pd.DataFrame({"question": ["1 + 1?"] * 4, "answer": ["2"] * 4}).to_parquet(table)
    rl = {"rl.dataset_name": str(table), "rl.dataset_kwargs": None, "rl.prompt_column": "question",
          "rl.solution_column": "answer"}
    zero = yaml.safe_load((ROOT / "recipes" / "tiny" / "zero.yaml").read_text())
    assert problems_of(recipe(zero, tmp_path, **rl)) == []
    one_problem(recipe(zero, tmp_path, **{**rl, "rl.prompt_column": "questoin"}),
                "rl: key 'prompt_column': the dataset has no 'questoin' column (columns: ['question', 'answer'])")
    one_problem(recipe(zero, tmp_path, **{"rl.dataset_name": str(tmp_path / "nope.jsonl"), "rl.dataset_kwargs": None}),
                f"rl: key 'dataset_name': {tmp_path / 'nope.jsonl'} does not exist")


def test_set_override_typos_fail_naming_the_key(tmp_path, capsys):
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump(recipe(TINY, tmp_path)))
    assert run_main([str(config), "--dry-run", "--set", "rl.max_step=5"]) == 2
    assert "rl: unknown key 'max_step'; did you mean 'max_steps'?" in capsys.readouterr().err
    assert run_main([str(config), "--dry-run", "--set", "rll.max_steps=5"]) == 2
    assert "unknown section 'rll'; did you mean 'rl'?" in capsys.readouterr().err
    assert run_main([str(config), "--dry-run", "--set", "rl.max_steps"]) == 2
    assert "expected SECTION.KEY=VALUE" in capsys.readouterr().err
    assert run_main([str(config), "--dry-run", "--set", "rl.max_steps=5", "--set", "rl.max_steps=6"]) == 0
    assert "max_steps=6 (overridden)" in capsys.readouterr().out  # the last one wins, and is marked
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------ findings


# every shipped code recipe holds out rows with a sliced split (dataset_train_split 'train[:-100]', evaluation
# dataset_split 'train[-100:]'); the dry run streams Hub datasets and `datasets` cannot stream a slice: it used to
# fail with two false errors ("Bad split: train[:-100]"), so no code recipe passed its own dry run
def test_the_shipped_code_recipe_passes(tmp_path, code_mirrors):
    assert problems_of(recipe(CODE, tmp_path)) == []
    # a misspelt split is still an error, slice or not
    one_problem(recipe(CODE, tmp_path, **{"rl.dataset_train_split": "tran[:-100]"}),
                "rl: cannot load the dataset: ValueError: Bad split: tran")


def test_code_recipe_column_typo_is_one_error(tmp_path, code_mirrors):
    data = recipe(CODE, tmp_path, **{"rl.prompt_column": "problem_statment"})
    one_problem(data, "rl: key 'prompt_column': the dataset has no 'problem_statment' column")


# rejection_sampling.max_prompts 0 or -1 used to pass: the run then sampled from no prompt
# (dataset.select(range(min(-1, n)))) and the final SFT got an empty dataset, after the whole RL stage
@pytest.mark.parametrize("value", [0, -1])
def test_max_prompts_below_one_is_an_error(tmp_path, value):
    one_problem(recipe(TINY, tmp_path, **{"rejection_sampling.max_prompts": value}),
                f"rejection_sampling: max_prompts must be >= 1, got {value}")


# evaluation.num_prompts 0 and num_samples 0 used to pass (an evaluation of nothing reports nothing)
@pytest.mark.parametrize("key", ["num_prompts", "num_samples"])
def test_evaluation_of_zero_prompts_or_samples_is_an_error(tmp_path, key):
    one_problem(recipe(TINY, tmp_path, **{f"evaluation.{key}": 0}), f"evaluation: {key} must be >= 1, got 0")


def test_a_missing_local_model_path_is_an_error(tmp_path):
    data = recipe(MATH, tmp_path)
    data["model"]["model_name_or_path"] = str(tmp_path / "no-such-model")
    data["evaluation"]["dataset_name"] = ARITHMETIC
    for stage in ("cold_start", "rl"):
        data[stage]["dataset_name"] = COLD_START if stage == "cold_start" else ARITHMETIC
        data[stage].pop("dataset_config", None)
    data["evaluation"]["prompt_column"] = "prompt"
    data["evaluation"]["solution_column"] = "solution"
    one_problem(data, "model", "model_name_or_path", "no-such-model")


def test_a_tokenizer_without_a_chat_template_is_an_error(tmp_path, tiny_model_dir):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    (model / "chat_template.jinja").unlink(missing_ok=True)
    config_file = model / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config.pop("chat_template", None)
    config_file.write_text(json.dumps(config))
    data = recipe(TINY, tmp_path)
    data["model"] = {"model_name_or_path": str(model), "load_in_4bit": False, "use_peft": False}
    problems = problems_of(data)
    assert problems and all("chat template" in p or "chat_template" in p for p in problems), problems


def test_a_split_in_dataset_kwargs_of_a_file_names_the_key(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"prompt": "1 + 1?", "solution": "2"}] * 4)
    zero = yaml.safe_load((ROOT / "recipes" / "tiny" / "zero.yaml").read_text())
    problem = one_problem(recipe(zero, tmp_path, **{"rl.dataset_name": rows}), "rl", "dataset_kwargs")
    assert "TypeError" not in problem


# an empty jsonl file used to give 'rl: cannot load the dataset: StopIteration: '
def test_an_empty_dataset_says_it_is_empty(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    zero = yaml.safe_load((ROOT / "recipes" / "tiny" / "zero.yaml").read_text())
    one_problem(recipe(zero, tmp_path, **{"rl.dataset_name": str(empty), "rl.dataset_kwargs": None}),
                "rl: the dataset has no rows")


@pytest.mark.parametrize("form", ["parquet", "saved"])
def test_an_empty_table_says_it_is_empty(tmp_path, form):
    import pandas as pd
    from datasets import Dataset

    empty = pd.DataFrame({"prompt": [], "solution": []}, dtype=str)
    path = tmp_path / "empty"
    if form == "parquet":
        path = path.with_suffix(".parquet")
        empty.to_parquet(path)
    else:
        Dataset.from_pandas(empty).save_to_disk(str(path))
    zero = yaml.safe_load((ROOT / "recipes" / "tiny" / "zero.yaml").read_text())
    one_problem(recipe(zero, tmp_path, **{"rl.dataset_name": str(path), "rl.dataset_kwargs": None}),
                "rl: the dataset has no rows")


def test_messages_as_a_string_is_an_error(tmp_path):
    rows = write_jsonl(tmp_path / "sft.jsonl", [{"messages": "User: 1 + 1? Assistant: 2"}] * 4)
    one_problem(recipe(TINY, tmp_path, **{"cold_start.dataset_name": rows, "cold_start.dataset_kwargs": None}),
                "cold_start", "messages")


def test_a_reward_given_as_a_missing_file_path_says_how_to_name_it(tmp_path):
    problem = one_problem(recipe(TINY, tmp_path, **{"rl.rewards": [{"name": "./my_rewards.py:reward"}]}),
                          "rl: key 'rewards'", "my_rewards")
    assert "package" not in problem


def test_an_unknown_dtype_is_an_error(tmp_path):
    one_problem(recipe(TINY, tmp_path, **{"model.dtype": "float33"}), "model", "dtype", "float33")
