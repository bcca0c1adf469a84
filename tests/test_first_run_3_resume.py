"""Issue 35, items 1 and 2: the fingerprint compares typed settings and leaves bookkeeping and the batch's shape
out (an interrupted stage resumes across them), and a redo keeps every earlier run, numbered."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import dry_run, recipe
from trl_r1.cli import run_main

COLD_START = "cold_start         sft                "


def trained(data: dict) -> dict:
    Path("recipe.yaml").write_text(yaml.safe_dump(data))
    assert run_main(["recipe.yaml"]) == 0
    return json.loads(Path("runs/r/cold_start/stage.json").read_text())


def test_the_same_number_written_another_way_redoes_nothing(workdir, capsys):
    data = recipe(rl=None, evaluation=None, cold_start={"learning_rate": 5.0e-5})
    trained(data)
    code, _, plan = dry_run(capsys, data, "--set", "cold_start.learning_rate=5e-5")  # YAML reads 5e-5 as a string
    assert code == 0 and COLD_START + "skip (done)" in plan
    code, _, plan = dry_run(capsys, data, "--set", "cold_start.learning_rate=6e-5")
    assert code == 0 and "changed: cold_start.learning_rate 5e-05 -> 6e-05" in plan


def test_stage_bookkeeping_and_the_same_effective_batch_redo_nothing(workdir, capsys):
    data = recipe(rl=None, evaluation=None)  # cold_start: per_device_train_batch_size 4
    trained(data)
    for flags in (["--set", "cold_start.logging_steps=1"], ["--set", "cold_start.eval_steps=3"],
                  ["--set", "cold_start.per_device_train_batch_size=2",
                   "--set", "cold_start.gradient_accumulation_steps=2"]):
        code, _, plan = dry_run(capsys, data, *flags)
        assert code == 0 and COLD_START + "skip (done)" in plan, flags
    code, _, plan = dry_run(capsys, data, "--set", "cold_start.per_device_train_batch_size=2")
    assert code == 0 and COLD_START + "redo" in plan
    assert "cold_start.effective_batch (per_device_train_batch_size x gradient_accumulation_steps) 4 -> 2" in plan


def test_an_interrupted_stage_resumes_with_a_smaller_batch_of_the_same_effective_size(workdir, capsys):
    data = recipe(rl=None, evaluation=None, training={"max_steps": 2, "save_strategy": "steps", "save_steps": 1,
                                                       "logging_steps": 1})
    record = trained(data)
    out = Path("runs/r/cold_start")
    checkpoints = sorted(out.rglob("checkpoint-*"))
    assert [c.name for c in checkpoints][-2:] == ["checkpoint-1", "checkpoint-2"]
    # a kill after the first step: its checkpoint is the last, the stage is still running
    shutil.rmtree(checkpoints[-1])
    (out / "stage.json").write_text(json.dumps({**record, "status": "running"}))
    smaller = ["--set", "cold_start.per_device_train_batch_size=2", "--set", "cold_start.gradient_accumulation_steps=2"]
    code, _, plan = dry_run(capsys, data, *smaller)
    assert code == 0 and COLD_START + "resume" in plan
    assert run_main(["recipe.yaml", *smaller]) == 0
    first_loss = [e for e in json.loads((checkpoints[0] / "trainer_state.json").read_text())["log_history"]
                  if "loss" in e]
    state = json.loads(next(out.rglob("checkpoint-2/trainer_state.json")).read_text())
    logged = [entry for entry in state["log_history"] if "loss" in entry]
    # step 1 kept from the first run (its loss as logged then), step 2 trained after the resume: not from step 0
    assert state["global_step"] == 2 and [e["step"] for e in logged] == [1, 2] and logged[0] == first_loss[0]
    assert not Path("runs/r/cold_start.previous").exists()


def test_two_edits_in_a_row_keep_both_earlier_runs(workdir, capsys, caplog):
    data = recipe(rl=None, evaluation=None)
    first = trained(data)["fingerprint"]
    second = trained(recipe(rl=None, evaluation=None, cold_start={"learning_rate": 1e-4}))["fingerprint"]
    code, _, plan = dry_run(capsys, recipe(rl=None, evaluation=None, cold_start={"learning_rate": 2e-4}))
    assert "its old outputs move to runs/r/cold_start.previous.2" in plan
    with caplog.at_level("WARNING", logger="trl_r1.pipeline"):
        third = trained(recipe(rl=None, evaluation=None, cold_start={"learning_rate": 2e-4}))["fingerprint"]
    assert "runs/r/cold_start.previous.2 (the newest of the earlier runs" in caplog.text
    kept = [json.loads(Path(f"runs/r/{name}/stage.json").read_text())
            for name in ("cold_start.previous", "cold_start.previous.2")]
    assert [k["fingerprint"] for k in kept] == [first, second] and len({first, second, third}) == 3
    assert all(k["status"] == "done" for k in kept)
    assert all(any(Path(f"runs/r/{name}").rglob("model.safetensors"))
               for name in ("cold_start.previous", "cold_start.previous.2"))


@pytest.mark.slow  # three GRPO runs: ~40 s on a quiet machine, 100 s on a shared one
def test_two_edits_of_a_single_stage_grpo_keep_both_earlier_runs(workdir, capsys):
    from trl_r1.cli import grpo_main

    Path("grpo.yaml").write_text(yaml.safe_dump({
        "model_name_or_path": "tiny", "dataset_name": "prompts.jsonl", "rewards": ["math"], "max_steps": 1,
        "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 8, "use_cpu": True,
        "report_to": "none", "save_strategy": "no", "load_in_4bit": False, "use_peft": False, "dtype": "float32",
        "output_dir": "runs/grpo"}))
    for learning_rate in ("1e-6", "2e-6", "3e-6"):
        assert grpo_main(["--config", "grpo.yaml", "--learning_rate", learning_rate]) == 0
    rates = [json.loads(Path(f"runs/{name}/stage.json").read_text())["settings"]["rl"].get("learning_rate", 1e-6)
             for name in ("grpo.previous", "grpo.previous.2", "grpo")]  # 1e-6, TRL's default, is no setting of its own
    assert rates == [1e-6, 2e-6, 3e-6]
