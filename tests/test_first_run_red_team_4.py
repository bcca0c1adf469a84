"""A blind new user's first run, round 5 (issue 35's last step): mistakes not listed in the issue, tried from the
docs alone. Each test is a finding, marked xfail(strict) until it is fixed."""
import json
from pathlib import Path

import pytest

from tests.conftest import command, jsonl
from trl_r1.cli import main


def rejection_sample(capsys, dataset: str, *flags: str) -> tuple[int, str]:
    return command(capsys, main, ["rejection-sample", "--model_name_or_path", "tiny", "--dataset_name", dataset,
                                  "--num_samples", "1", "--max_new_tokens", "4", "--output_dir", "runs/rs", *flags])


def test_rejection_sample_refuses_prompts_without_gold_before_generating(workdir, capsys):
    jsonl("nogold.jsonl", [{"prompt": "What is 2 + 3?"}, {"prompt": "What is 1 + 1?"}])
    code, err = rejection_sample(capsys, "nogold.jsonl", "--rewards", "math")
    assert code == 2, err
    assert "solution" in err
    assert not Path("runs/rs/records.jsonl").exists()


def test_rejection_sample_rewards_take_commas_like_evaluate(workdir, capsys):
    code, err = rejection_sample(capsys, "prompts.jsonl", "--rewards", "math,format", "--max_prompts", "1")
    assert code == 0, err
    assert json.loads(Path("runs/rs/run.json").read_text())


def write_recipe(data: dict, name: str = "recipe.yaml") -> str:
    import yaml

    Path(name).write_text(yaml.safe_dump(data, sort_keys=False))
    return name


def start_run(*argv: str, **pause_after: int | str):
    """`trl-r1 run ...` as a user starts it, in its own process (stdout and stderr together, as text); with
    `pause_after`, it stops itself at that event (tests/pause_points)."""
    import os
    import subprocess
    import sys

    from tests.pause_points import pausing_env

    env = pausing_env(**pause_after) if pause_after else \
        {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen([sys.executable, "-m", "trl_r1.cli", "run", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def test_two_runs_into_one_run_dir_at_once(workdir):
    import signal

    from tests.conftest import recipe
    from tests.pause_points import wait_until_paused

    path = write_recipe(recipe(evaluation=None, training={"max_steps": 2}))
    # the first run stops itself once it holds the run directory's lock, so the second starts while the first runs
    # on a machine of any speed (started together, a fast first run could end before the second one looked)
    first = start_run(path, run_lock=1)
    wait_until_paused(first)
    second = start_run(path)
    outputs = [second.communicate(timeout=240)[0]]
    first.send_signal(signal.SIGCONT)
    outputs.insert(0, first.communicate(timeout=240)[0])
    codes = sorted([first.returncode, second.returncode])
    assert codes[0] == 0 and codes[1] != 0, (codes, [out[-400:] for out in outputs])
    refused = outputs[[first.returncode, second.returncode].index(codes[1])]
    assert "runs/r" in refused.splitlines()[-1]


def test_ctrl_c_during_rl_says_how_to_resume(workdir):
    import signal

    from tests.conftest import recipe
    from tests.pause_points import wait_until_paused

    path = write_recipe(recipe(evaluation=None, training={"save_strategy": "steps", "save_steps": 1},
                               rl={"max_steps": 400}))
    process = start_run(path, checkpoint="rl/checkpoint-2")  # stops itself there (tests/pause_points)
    wait_until_paused(process)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGCONT)
    output = process.communicate(timeout=120)[0]
    assert process.returncode != 0
    assert "Traceback" not in output, output[-1500:]
    assert "checkpoint-" in output.splitlines()[-1]


def test_a_run_dir_that_cannot_be_written_fails_the_dry_run(workdir, capsys):
    from tests.conftest import dry_run, recipe

    # /proc refuses new folders even to root (tests may run as root, where chmod 555 would not stop a write)
    code, problems, _ = dry_run(capsys, {**recipe(evaluation=None), "run_dir": "/proc/trl-r1-red-team/run"})
    assert code == 2 and any("run_dir" in problem for problem in problems), (code, problems)


def test_a_relative_dataset_folder_missing_here_is_not_read_from_the_cache(workdir, capsys, monkeypatch):
    import shutil

    import datasets

    from tests.conftest import dry_run, recipe

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", workdir / "hf-datasets-cache")
    data = recipe()
    assert dry_run(capsys, data)[0] == 0  # in the folder that holds split/: reads it (and caches it)
    elsewhere = workdir / "elsewhere"
    elsewhere.mkdir()
    for name in ("tiny", "sft.jsonl", "prompts.jsonl"):
        (elsewhere / name).symlink_to(workdir / name)
    monkeypatch.chdir(elsewhere)
    code, problems, _ = dry_run(capsys, data)
    assert code == 2 and any("split" in problem for problem in problems), (code, problems)


def test_evaluate_a_stage_from_another_directory(workdir, capsys, monkeypatch):
    from tests.conftest import recipe

    path = write_recipe(recipe(model={"use_peft": True, "lora_r": 4}, evaluation={"stages": ["rl"]}))
    process = start_run(path)
    output = process.communicate(timeout=300)[0]
    assert process.returncode == 0, output[-1500:]
    stage = workdir / "runs/r/rl"
    elsewhere = workdir / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, err = command(capsys, main, ["evaluate", "--model_name_or_path", str(stage),
                                       "--dataset_name", str(workdir / "split/test.jsonl"), "--dataset_split", "train",
                                       "--output_dir", "eval"])
    assert code == 0, err[-800:]


def test_evaluate_reads_a_dataset_folder_given_by_absolute_path(workdir, capsys):
    code, err = command(capsys, main, ["evaluate", "--model_name_or_path", "tiny", "--dataset_name",
                                       str(workdir / "split"), "--dataset_split", "test", "--num_prompts", "2",
                                       "--num_samples", "1", "--max_new_tokens", "4", "--output_dir", "eval"])
    assert code == 0, err[-600:]
    assert Path("eval/report.md").is_file()


def test_the_dry_run_counts_the_processes_in_the_grpo_batch(workdir, capsys):
    from tests.conftest import dry_run, recipe

    data = recipe(evaluation=None, rl={"num_generations": 8, "per_device_train_batch_size": 4})
    code, problems, plan = dry_run(capsys, data, "--num_processes", "2")
    assert (code, problems) == (0, [])
    assert "ranks:   2" in plan  # the plan is for the processes asked for
    code, problems, _ = dry_run(capsys, data)  # one process makes 4 completions a step: still refused
    assert code == 2 and any("num_generations" in p for p in problems), problems


def processes_running(fragment: str) -> list[int]:
    """Ids of live processes whose command line holds `fragment` (a path unique to this test)."""
    ids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().split(") ")[-1][:1]
            except OSError:
                continue
            if fragment in cmdline and state != "Z":
                ids.append(int(entry.name))
    return ids


@pytest.mark.slow
def test_killing_a_two_rank_run_stops_its_ranks(workdir):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import recipe

    path = write_recipe(recipe(evaluation=None, training={"save_strategy": "steps", "save_steps": 1},
                               rl={"max_steps": 400}), name=f"kill-{workdir.name}.yaml")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    launcher = subprocess.Popen([sys.executable, "-m", "trl_r1.cli", "run", path, "--num_processes", "2"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not Path("runs/r/rl/checkpoint-2").is_dir():
            assert launcher.poll() is None and time.monotonic() < deadline, "rl never saved checkpoint-2"
            time.sleep(0.5)
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
        deadline = time.monotonic() + 60  # the ranks go at once (SIGKILL, or their parent-death signal): wait for
        while processes_running(path) and time.monotonic() < deadline:  # it to show, not a fixed 10 s
            time.sleep(0.5)
        survivors = processes_running(path)
        saved = len(list(Path("runs/r/rl").glob("checkpoint-*")))
        time.sleep(5)
        assert survivors == [], f"ranks still running: {survivors}"
        assert len(list(Path("runs/r/rl").glob("checkpoint-*"))) == saved
    finally:
        for pid in processes_running(path):  # the orphans this test started
            os.kill(pid, signal.SIGKILL)


def test_the_plan_times_a_vllm_evaluation_at_the_vllm_rate(workdir, capsys):
    from tests.conftest import ROOT
    from trl_r1.cli import run_main

    capsys.readouterr()
    code = run_main([str(ROOT / "recipes/qwen2.5-1.5b-instruct/math.yaml"), "--dry-run", "--card", "24"])
    out = capsys.readouterr().out
    assert code == 0
    assert "note: generation: evaluation: vllm" in out
    evaluation = out[out.index("\nevaluation:"):out.index("\ntotal:")]
    assert "transformers generation" not in evaluation and "vLLM" in evaluation, evaluation


@pytest.mark.parametrize("override", ["training.seed=42", "rl.learning_rate=1e-6", "rl.temperature=1.0",
                                      "rl.beta=0.0"])
def test_writing_a_default_down_keeps_the_finished_stages(workdir, capsys, override):
    from tests.conftest import recipe

    path = write_recipe(recipe(evaluation=None))
    process = start_run(path)
    output = process.communicate(timeout=300)[0]
    assert process.returncode == 0, output[-1500:]
    from trl_r1.cli import run_main

    capsys.readouterr()
    code = run_main([path, "--dry-run", "--set", override])
    plan = capsys.readouterr().out
    assert code == 0
    assert "-> runs/r/rl" in plan
    assert "redo" not in plan, [line for line in plan.splitlines() if "redo" in line]


def test_dataset_test_split_in_a_recipe_points_to_the_evaluation_section(workdir, capsys):
    from tests.conftest import fails_once, recipe

    problem = fails_once(capsys, recipe(evaluation=None, rl={"dataset_name": "split", "dataset_test_split": "test"}),
                         "dataset_test_split")
    assert "evaluation" in problem and "dataset_train_split" not in problem, problem
