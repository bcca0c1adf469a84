"""`trl-r1 sft|grpo|ppo` as TRL's own scripts: every key in --help with its help and default, TRL's key names,
lists as TRL parses them, and rewards from a local file."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trl_r1.cli import main, single_stage_recipe, stage_fields, stage_parser

ROOT = Path(__file__).resolve().parents[1]
ARITHMETIC = "trl_r1.toy.arithmetic:arithmetic_dataset"
BASE = ["--output_dir", "OUT", "--model_name_or_path", "MODEL", "--dataset_name", ARITHMETIC]


def _help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines


@pytest.mark.parametrize("command", ["sft", "grpo", "ppo"])
def test_stage_help_lists_every_key_with_its_help_and_default(command, capsys):
    text = _help(command, capsys)
    stage = "cold_start" if command == "sft" else "rl"
    names = [f.name for _, fields, _ in stage_fields(command, stage) for f in fields]
    assert len(names) > 150  # the args class, the whole TRL config and trl.ModelConfig
    missing = [name for name in names if f"--{name} " not in text]
    assert not missing
    # the defaults the stage runs with (trl-r1's, not the dataclasses' own), next to the fields' help
    assert "--load_in_4bit [{true,false}] QLoRA: 4-bit base weights (default True). (default: True)" in text
    assert "(default: 'paged_adamw_8bit')" in text.split("--optim ")[1].split("--")[0]
    assert "(default: True)" in text.split("--gradient_checkpointing ")[1].split("--")[0]
    assert "(default: 16)" in text.split("--lora_r ")[1].split("--")[0]
    assert "20% slower" in text or "%%" not in text  # transformers' escaped help shows as written
    if command == "grpo":
        assert "(default: 1e-06)" in text.split("--learning_rate ")[1].split("--")[0]
        assert "Rewards by name" in text and "(default: ['format', 'math'])" in text.split("--rewards ")[1]
        assert "--reward_funcs NAME [NAME ...] TRL's name for `rewards`" in text


def test_every_trl_script_key_is_accepted():
    """TRL's ScriptArguments, the grpo script's arguments and trl.ModelConfig: each name is an option."""
    from trl import ModelConfig, ScriptArguments
    from trl.scripts.grpo import GRPOScriptArguments

    options = {o for action in stage_parser("grpo", "rl")._actions for o in action.option_strings}
    trl_names = {f.name for cls in (ScriptArguments, GRPOScriptArguments, ModelConfig) for f in dataclasses.fields(cls)}
    assert not {f"--{name}" for name in trl_names} - options


def _recipe(command, argv, config=None):
    parser = stage_parser(command, "rl" if command != "sft" else "cold_start")
    args, rest = parser.parse_known_args(([] if config is None else ["--config", str(config)]) + BASE + argv)
    return single_stage_recipe(command, "rl" if command != "sft" else "cold_start", args, rest)[0]


def test_trl_names_and_lists_parse_as_trl_does(tmp_path):
    recipe = _recipe("grpo", ["--reward_funcs", "format", "math", "--dataset_test_split", "test",
                              "--dataset_train_split", "train", "--dataset_streaming", "false",
                              "--lora_target_modules", "q_proj", "v_proj", "--report_to", "none",
                              "--learning_rate", "1e-6", "--bf16", "--use_vllm", "false"])
    assert recipe["rl"]["rewards"] == ["format", "math"] and "reward_funcs" not in recipe["rl"]
    assert recipe["model"]["lora_target_modules"] == ["q_proj", "v_proj"]
    assert recipe["rl"]["report_to"] == ["none"] and recipe["rl"]["bf16"] is True and recipe["rl"]["use_vllm"] is False
    # dataset_test_split: the pipeline's held-out evaluation on that split of the same dataset
    assert recipe["evaluation"] == {"dataset_split": "test", "dataset_name": ARITHMETIC}
    assert _recipe("grpo", ["--rewards", "[format, {name: math, weight: 2}]"])["rl"]["rewards"] == \
        ["format", {"name": "math", "weight": 2}]  # the YAML form still works
    assert _recipe("grpo", ["--rewards", "math"])["rl"]["rewards"] == ["math"]
    config = tmp_path / "grpo.yaml"  # a TRL-style YAML with TRL's names
    config.write_text(yaml.safe_dump({"reward_funcs": ["math"], "dataset_test_split": "validation"}))
    recipe = _recipe("grpo", ["--num_generations", "4"], config)
    assert recipe["rl"]["rewards"] == ["math"] and recipe["evaluation"]["dataset_split"] == "validation"
    assert recipe["rl"]["num_generations"] == 4
    config.write_text(yaml.safe_dump({"rewards": ["math"]}))  # the command line wins over the YAML, as in TRL
    assert _recipe("grpo", ["--reward_funcs", "format"], config)["rl"]["rewards"] == ["format"]


def test_trl_keys_that_cannot_apply_fail_clearly(tmp_path, capsys):
    base = [*BASE[:1], str(tmp_path / "out"), *BASE[2:], "--dry-run"]
    assert main(["grpo", *base, "--dataset_streaming", "true"]) == 2
    assert "key 'dataset_streaming': accepted as false only" in capsys.readouterr().err
    assert main(["grpo", *base, "--rewards", "math", "--reward_funcs", "format"]) == 2
    assert "set either 'rewards' or TRL's 'reward_funcs', not both" in capsys.readouterr().err
    assert main(["grpo", *base, "--reward_model_name_or_path", "some/rm"]) == 2
    assert "not supported: trl-r1 trains on verifiable rewards" in capsys.readouterr().err
    assert main(["grpo", *base, "--learning_rat", "1e-6"]) == 2  # no prefix matching: a typo is named
    assert "unknown key 'learning_rat'; did you mean 'learning_rate'?" in capsys.readouterr().err


def test_a_dry_run_with_trl_names_validates(tmp_path, tiny_model_dir, capsys):
    argv = ["grpo", "--output_dir", str(tmp_path / "out"), "--model_name_or_path", tiny_model_dir,
            "--dataset_name", ARITHMETIC, "--reward_funcs", "format", "math", "--dataset_test_split", "test",
            "--use_cpu", "--bf16", "false", "--dry-run"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "evaluation: " + ARITHMETIC + " [test]" in out and "rl" in out


REWARDS_FILE = '''
def ends_with_seven(completions, **kwargs):
    return [1.0 if str(c).rstrip().endswith("7") else 0.0 for c in completions]
'''


def test_a_reward_from_a_local_file_without_pythonpath(tmp_path, tiny_model_dir):
    """As documented (docs/howto_reward.md): `./my_rewards.py:name` or `my_rewards.name` from the working
    directory. `python -P` keeps the working directory off sys.path, as the `trl-r1` console script does."""
    (tmp_path / "my_rewards.py").write_text(REWARDS_FILE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-P", "-m", "trl_r1.cli", "grpo", "--output_dir", str(tmp_path / "out"),
               "--model_name_or_path", tiny_model_dir, "--dataset_name", ARITHMETIC, "--use_cpu",
               "--bf16", "false", "--dry-run", "--reward_funcs"]
    for reward in ("./my_rewards.py:ends_with_seven", "my_rewards.ends_with_seven"):
        proc = subprocess.run([*command, reward], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
    proc = subprocess.run([*command, "./my_reward.py:ends_with_seven"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 2 and "no file 'my_reward.py'" in proc.stderr
    # the resolved reward is the file's function and scores with it
    code = ("from trl_r1.rewards import get_reward_func; import pickle; "
            "f = get_reward_func('./my_rewards.py:ends_with_seven'); "
            "g = get_reward_func('my_rewards.ends_with_seven'); "
            "print(f(completions=['it is 7', 'it is 8']), f is g, pickle.loads(pickle.dumps(f)) is f)")
    proc = subprocess.run([sys.executable, "-P", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    assert proc.stdout.split() == ["[1.0,", "0.0]", "True", "True"]


def test_builder_help_shows_defaults_and_lists_parse_as_trl(capsys):
    """docs/data.md: `trl-r1 rejection-sample --help` gives every field with its default; lists as TRL parses."""
    from trl_r1.config import parse_command_line
    from trl_r1.data import RejectionSamplingConfig

    text = _help("rejection-sample", capsys)
    assert "--dataset_split DATASET_SPLIT Split of `dataset_name` to use. (default: 'train')" in text
    assert "--model_name_or_path MODEL_NAME_OR_PATH" in text and "(required)" in text
    config = parse_command_line(RejectionSamplingConfig, ["--model_name_or_path", "m", "--output_dir", "o",
                                                          "--rewards", "math", "format", "--dedup_threshold", "None"],
                                "trl-r1 rejection-sample")
    assert config.rewards == ["math", "format"] and config.dedup_threshold is None
