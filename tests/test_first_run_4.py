"""Issue 35, round 4: what the blind new-user rounds (red teams 5 and 6) found and the fixer's own tries
(interrupt and resume, builders on bad files, two runs at once). Each test failed on the main of its round."""

import pytest

from tests.conftest import dry_run, passes, recipe
from tests.pause_points import pausing_env, wait_until_paused


def test_a_misspelt_bare_model_name_offline_fails_the_dry_run(workdir, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, problems, _ = dry_run(capsys, recipe(model={"model_name_or_path": "tinyy"}))
    assert code == 2 and len(problems) == 1, (code, problems)
    assert "model_name_or_path" in problems[0] and "'tinyy'" in problems[0] and "offline" in problems[0], problems
    assert "did you mean the folder 'tiny'" in problems[0], problems


def test_an_org_model_id_offline_still_plans(workdir, capsys, monkeypatch):
    """A Hub id 'org/name' offline is a laptop planning a run that downloads it on the GPU machine: a note only."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan = passes(capsys, recipe(model={"model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}, evaluation=None))
    assert "Qwen/Qwen2.5-0.5B-Instruct" in plan


def notes_of(plan: str) -> list[str]:
    return [line[len("note: "):] for line in plan.splitlines() if line.startswith("note: ")]


def test_vllm_importance_sampling_without_vllm_is_noted(workdir, capsys):
    plan = passes(capsys, recipe(rl={"vllm_importance_sampling_correction": True}, evaluation=None))
    assert any(n.startswith("rl: key 'vllm_importance_sampling_correction'") and "transformers" in n
               and "changes nothing" in n for n in notes_of(plan)), plan


@pytest.mark.parametrize(("keys", "named", "missing"), [
    ({"loss_type": "dr_grpo"}, "loss_type", "advantage_estimator: dr_grpo"),
    ({"advantage_estimator": "dr_grpo"}, "advantage_estimator", "loss_type: dr_grpo"),
    ({"advantage_estimator": "rloo", "scale_rewards": "none"}, "scale_rewards", "changes nothing"),
])
def test_half_of_dr_grpo_is_noted_with_the_other_half(workdir, capsys, keys, named, missing):
    plan = passes(capsys, recipe(rl=keys, evaluation=None))
    assert any(n.startswith(f"rl: key '{named}'") and missing in n for n in notes_of(plan)), plan


@pytest.mark.parametrize("keys", [{"loss_type": "dr_grpo", "advantage_estimator": "dr_grpo"},
                                  {"loss_type": "dr_grpo", "scale_rewards": "none"}])
def test_whole_dr_grpo_has_no_note(workdir, capsys, keys):
    plan = passes(capsys, recipe(rl=keys, evaluation=None))
    assert not any("Dr. GRPO" in n or "scale_rewards" in n for n in notes_of(plan)), plan


def test_num_iterations_trains_each_generated_batch_that_often(workdir, capsys):
    """It acts (TRL's mu: one generation per `num_iterations` steps, counted here) and the plan says so."""
    import transformers

    from tests.conftest import command
    from trl_r1.cli import grpo_main

    plan = passes(capsys, recipe(rl={"num_iterations": 2, "max_steps": 4}, evaluation=None, cold_start=None))
    assert "each generated batch trained num_iterations=2 times" in " ".join(plan.split()), plan
    calls = []
    generate = transformers.GenerationMixin.generate

    def counted(self, *args, **kwargs):
        calls.append(1)
        return generate(self, *args, **kwargs)

    for iterations, expected in ((1, 4), (2, 2)):
        calls.clear()
        transformers.GenerationMixin.generate = counted
        try:
            code, err = command(capsys, grpo_main, [
                "--model_name_or_path", "tiny", "--dataset_name", "prompts.jsonl", "--output_dir", f"out{iterations}",
                "--use_cpu", "true", "--report_to", "none", "--max_steps", "4", "--per_device_train_batch_size", "4",
                "--num_generations", "4", "--max_completion_length", "4", "--num_iterations", str(iterations),
                "--save_strategy", "no", "--dtype", "float32", "--load_in_4bit", "false", "--use_peft", "false",
                "--reward_funcs", "format", "math"])
        finally:
            transformers.GenerationMixin.generate = generate
        assert code == 0, err[-2000:]
        assert len(calls) == expected, (iterations, len(calls))


def test_save_strategy_no_unquoted_in_yaml(workdir, capsys):
    """YAML 1.1 reads `save_strategy: no` as false; TRL's parser then fails on SaveStrategy(False)."""
    from pathlib import Path

    import yaml

    from tests.conftest import command
    from trl_r1.cli import run_main

    text = yaml.safe_dump(recipe(evaluation=None, rl=None)).replace("save_strategy: 'no'", "save_strategy: no")
    assert "save_strategy: no\n" in text
    Path("recipe.yaml").write_text(text)
    code, err = command(capsys, run_main, ["recipe.yaml", "--dry-run"])
    assert code == 0, err[-2000:]


def test_a_run_into_a_run_dir_in_use_refuses_and_touches_nothing(workdir, capsys):
    """A second run while another holds the run_dir refuses in one line, before reading or moving anything; once
    the first ends, the same command runs. A dry run only reads, so it still plans."""
    from pathlib import Path

    import yaml

    from tests.conftest import command
    from trl_r1.cli import run_main
    from trl_r1.pipeline.run_lock import RunDirLock

    Path("recipe.yaml").write_text(yaml.safe_dump(recipe(evaluation=None, rl=None)))
    holder = RunDirLock(Path("runs/r"))
    holder.acquire()
    try:
        code, err = command(capsys, run_main, ["recipe.yaml"])
        assert code == 1 and "Traceback" not in err, err[-2000:]
        assert "runs/r is in use by another trl-r1 run (pid" in err and "--run-dir" in err, err[-2000:]
        assert not Path("runs/r/cold_start").exists()
        assert command(capsys, run_main, ["recipe.yaml", "--dry-run"])[0] == 0
    finally:
        holder.release()
    code, err = command(capsys, run_main, ["recipe.yaml"])
    assert code == 0 and Path("runs/r/cold_start/stage.json").is_file(), err[-2000:]


def test_ctrl_c_then_the_same_command_resumes_every_step_once(workdir):
    """Ctrl-C in rl: exit 130 and one line naming the checkpoint the same command resumes from. A checkpoint cut
    while saving (no trainer_state.json: a kill mid-save) is passed over, not resumed from into a traceback. The
    resumed stage ends at max_steps with each step logged once."""
    import json
    import shutil
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    Path("recipe.yaml").write_text(yaml.safe_dump(recipe(
        evaluation=None, training={"save_strategy": "steps", "save_steps": 1, "logging_steps": 1},
        rl={"max_steps": 40})))
    argv = [sys.executable, "-m", "trl_r1.cli", "run", "recipe.yaml"]
    # the run stops itself once rl saved checkpoint-2 (tests/pause_points): the Ctrl-C lands there on a machine of
    # any speed (polling for the checkpoint let a fast machine train on, up to the end of the stage)
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=pausing_env(checkpoint="rl/checkpoint-2"))
    wait_until_paused(process)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGCONT)
    output = process.communicate(timeout=120)[0]
    last = output.strip().splitlines()[-1]
    assert process.returncode == 130 and "Traceback" not in output, output[-3000:]
    whole = max(int(p.parent.name.split("-")[1]) for p in Path("runs/r/rl").glob("checkpoint-*/trainer_state.json"))
    assert whole < 40, "the stage ended before the interrupt"
    assert last == f"trl-r1 run: interrupted (Ctrl-C) in stage rl; run the same command again to resume from " \
                   f"runs/r/rl/checkpoint-{whole}", last
    cut = Path(f"runs/r/rl/checkpoint-{whole + 1}")  # what a kill mid-save leaves (a Ctrl-C there leaves one too)
    cut.mkdir(exist_ok=True)
    (cut / "trainer_state.json").unlink(missing_ok=True)
    shutil.copy(f"runs/r/rl/checkpoint-{whole}/model.safetensors", cut)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"checkpoint-{whole + 1} cut while saving" in done.stderr
    assert f"resuming from runs/r/rl/checkpoint-{whole}" in done.stderr
    state = json.loads(Path("runs/r/rl/trainer_state.json").read_text())
    steps = [entry["step"] for entry in state["log_history"] if "loss" in entry]
    assert state["global_step"] == 40 and steps == list(range(1, 41)), steps


def test_a_stage_evaluated_without_a_base_is_not_called_unevaluated():
    """No base evaluation, the stage evaluated: its sentence gives its held-out figure and never says there is
    none; its training-batch curves are named as such (the reward names are the held-out columns' too)."""
    from trl_r1.pipeline.report import stage_changes

    (sentence,) = stage_changes({"evaluation": {"rl": {"format_reward": 0.5, "format_reward/ci95": [0.3, 0.7]}},
                                 "stages": [{"stage": "rl", "status": "done", "seconds": 9.0, "steps": 8,
                                             "format_reward_first": 0.0, "format_reward_last": 0.25}]})
    assert "no held-out" not in sentence, sentence
    assert sentence == "rl: 8 steps; on its training batches: format_reward 0 -> 0.25; held-out format_reward 0.5 " \
                       "[0.3, 0.7].", sentence


def test_the_builders_count_line_says_one_prompt(workdir, capsys, caplog):
    import logging

    from tests.conftest import command
    from trl_r1.cli import main

    caplog.set_level(logging.INFO, logger="trl_r1")
    code, err = command(capsys, main, ["rejection-sample", "--model_name_or_path", "tiny", "--dataset_name",
                                       "prompts.jsonl", "--num_samples", "1", "--max_new_tokens", "4",
                                       "--max_prompts", "1", "--output_dir", "rs"])
    assert code == 0, err[-2000:]
    assert any(r.getMessage().endswith("accepted from 1 prompt -> rs/sft.jsonl") and "/1 sample " in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_a_touched_data_file_is_no_edit_but_a_changed_one_is(workdir, capsys):
    import os
    import shutil
    from pathlib import Path

    import yaml

    from tests.conftest import command
    from trl_r1.cli import run_main

    data = recipe(rl=None, evaluation=None)
    Path("recipe.yaml").write_text(yaml.safe_dump(data))
    assert command(capsys, run_main, ["recipe.yaml"])[0] == 0
    later = Path("runs/r/cold_start/stage.json").stat().st_mtime + 60
    shutil.copy2("sft.jsonl", "copy.jsonl")
    os.replace("copy.jsonl", "sft.jsonl")  # `cp -p` back over it: same rows, then a newer time
    os.utime("sft.jsonl", (later, later))
    assert not [n for n in notes_of(passes(capsys, data)) if "sft.jsonl" in n]
    rows = Path("sft.jsonl").read_text().splitlines()
    Path("sft.jsonl").write_text("\n".join(rows[::-1]) + "\n")  # same size, other order: an edit
    os.utime("sft.jsonl", (later, later))
    assert [n for n in notes_of(passes(capsys, data)) if "sft.jsonl was modified" in n]


def test_a_training_key_the_stage_sets_itself_is_not_in_its_fingerprint():
    """`--set rl.max_steps=60` with `training.max_steps: 1`: the redo names rl.max_steps (not "training.max_steps
    40 -> 60"), and an edit of the shared value the stage overrides redoes nothing (red team 4, LOW)."""
    from pathlib import Path

    from transformers import TrainingArguments

    from trl_r1.pipeline.fingerprint import changed_keys, fingerprint_stages
    from trl_r1.pipeline.recipe import StagePlan

    def plans(rl_steps: int, shared_steps: int) -> list[StagePlan]:
        config = TrainingArguments("o", max_steps=rl_steps, use_cpu=True)
        stage = [StagePlan("rl", "grpo", None, config, None, Path("r/rl"), section={"max_steps": rl_steps})]
        fingerprint_stages(stage, {}, {"max_steps": shared_steps, "learning_rate": 1e-4})
        return stage

    before, after = plans(40, 1)[0], plans(60, 1)[0]
    assert changed_keys(before.settings, after.settings) == ["rl.max_steps 40 -> 60"]
    assert plans(40, 7)[0].fingerprint == before.fingerprint


def test_an_uneven_grpo_batch_names_the_keys_the_recipe_sets(workdir, capsys):
    """num_generations 3 with per_device_train_batch_size 4: TRL names generation_batch_size, a key the user never
    set; the problem names its factors (red team 4, LOW)."""
    from tests.conftest import fails_once, recipe

    problem = fails_once(capsys, recipe(evaluation=None, rl={"num_generations": 3, "per_device_train_batch_size": 4}),
                         "generation_batch_size")
    assert "per_device_train_batch_size" in problem and "--num_processes" in problem, problem
