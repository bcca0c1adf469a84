"""The pipeline with two processes (DDP, gloo on CPU) via `trl-r1 run --num_processes 2`: the same records,
datasets and report as one process, nothing lost or duplicated when a rank is killed, and the launch checks."""

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.pause_points import pausing_env
from trl_r1.cli import accelerate_config
from trl_r1.data.rejection_sampling import RejectionSamplingConfig, rejection_sample
from trl_r1.pipeline import run_recipe
from trl_r1.pipeline.ranks import WorldSizeError, check_world_size
from trl_r1.pipeline.stages import read_record
from trl_r1.toy.toy_reasoner import toy_prompts

ROOT = Path(__file__).resolve().parents[1]
STAGE_NAMES = ["cold_start", "rl", "rejection_sampling", "final_sft"]
PROMPTS = "trl_r1.toy.toy_reasoner:toy_prompts"  # 12 arithmetic prompts with gold answers


def two_rank_recipe(run_dir: Path, base: str) -> dict:
    """All four stages with the QLoRA defaults (4-bit base, LoRA, adapters merged between stages), shortened."""
    training = {"use_cpu": True, "report_to": "none", "disable_tqdm": True, "save_strategy": "steps",
                "save_steps": 1, "logging_steps": 1, "learning_rate": 1e-5}
    return {
        "run_dir": str(run_dir), "model": {"model_name_or_path": base, "dtype": "float32"}, "training": training,
        "cold_start": {"dataset_name": "trl_r1.toy.arithmetic:cold_start_dataset",
                       "dataset_kwargs": {"num_rows": 16}, "max_steps": 2, "per_device_train_batch_size": 2,
                       "max_length": 96},
        "rl": {"dataset_name": PROMPTS, "max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 4,
               "max_completion_length": 24},
        "rejection_sampling": {"num_samples": 2, "max_new_tokens": 40, "batch_size": 2,
                               "min_language_consistency": None},
        "final_sft": {"max_steps": 2, "per_device_train_batch_size": 2, "max_length": 96},
        "evaluation": {"dataset_name": PROMPTS, "num_prompts": 4, "num_samples": 1, "max_new_tokens": 40,
                       "stages": ["final_sft"]},
    }


def launch(recipe: dict, path: Path, pause_after_records: int | None = None) -> subprocess.Popen:
    path.write_text(yaml.safe_dump(recipe))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    if pause_after_records:  # the main rank stops itself after that many records (tests/pause_points)
        env = pausing_env(records=pause_after_records)
    return subprocess.Popen([sys.executable, "-m", "trl_r1.cli", "run", str(path), "--num_processes", "2"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def records_of(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "rejection_sampling" / "records.jsonl").read_text().splitlines()]


def check_run(run: Path, report: dict) -> None:
    """Every stage done once, each prompt recorded exactly once, the accepted rows are the final SFT's data."""
    records = {name: read_record(run / name) for name in STAGE_NAMES}
    assert all(r.status == "done" for r in records.values())
    indices = [r["index"] for r in records_of(run)]
    assert sorted(indices) == list(range(12))  # each of the 12 prompts exactly once
    accepted = records["rejection_sampling"].outputs["num_accepted"]
    rows = (run / "rejection_sampling" / "sft.jsonl").read_text().splitlines()
    assert 0 < accepted == len(rows) == len(set(rows)) == sum(r["num_accepted"] for r in records_of(run))
    assert [row["stage"] for row in report["stages"]] == STAGE_NAMES
    markdown = (run / "report.md").read_text()
    assert all(markdown.count(f"| {name} | done |") == 1 for name in STAGE_NAMES)
    assert set(report["evaluation"]) == {"final_sft"} and report["evaluation"]["final_sft"]["num_completions"] == 4


def stop_pending(process: psutil.Process) -> bool:
    """Whether the stopped process is gone or a SIGTERM or SIGINT waits for it: the launcher has told it to stop."""
    try:
        if process.status() != psutil.STATUS_STOPPED:
            return True
        status = Path(f"/proc/{process.pid}/status").read_text()
    except (psutil.Error, OSError):
        return True
    pending = 0
    for line in status.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            pending |= int(line.split()[1], 16)
    return bool(pending & ((1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1))))


def test_two_ranks_run_the_pipeline_like_one(toy_reasoner, tmp_path):
    process = launch(two_rank_recipe(tmp_path / "two", toy_reasoner), tmp_path / "two.yaml")
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output[-3000:]
    two = tmp_path / "two"
    check_run(two, json.loads((two / "report.json").read_text()))
    for name in ("cold_start", "rl", "final_sft"):  # every rank trained (TRL's trainer saw both processes)
        record = read_record(two / name)
        assert record.metrics["num_processes"] == 2 and record.metrics["global_step"] == 2
        assert record.outputs["model_path"] == str(two / name / "merged")  # merged once rank 0 had saved
    assert output.count("[rl] running") == 1 and output.count("trl-r1 run summary") == 1  # printed once

    one = tmp_path / "one"
    check_run(one, run_recipe(two_rank_recipe(one, toy_reasoner), echo=lambda _: None))
    assert read_record(one / "rl").metrics["num_processes"] == 1
    one_stats = read_record(one / "rejection_sampling").metrics["rejection_sampling"]
    two_stats = read_record(two / "rejection_sampling").metrics["rejection_sampling"]
    assert (one_stats["num_prompts"], one_stats["generated"]) == (two_stats["num_prompts"], two_stats["generated"])


@pytest.mark.slow  # the fast tier's 2-rank runs: the pipeline and a single-stage command
def test_a_killed_rank_loses_and_duplicates_nothing_on_resume(toy_reasoner, tmp_path):
    run = tmp_path / "run"
    recipe = two_rank_recipe(run, toy_reasoner)
    recipe["rejection_sampling"]["batch_size"] = 1  # a record per prompt: many points to be killed at
    recipe["model"].update(load_in_4bit=False, use_peft=False)  # full fine-tuning: quicker, same hand-offs
    del recipe["cold_start"], recipe["final_sft"], recipe["evaluation"]
    process = launch(recipe, tmp_path / "run.yaml", pause_after_records=3)
    records = run / "rejection_sampling" / "records.jsonl"
    # the main rank stops itself after its 3rd record (tests/pause_points); then the rank that is not the main
    # one is killed, and the launcher stops the other. The main rank is let go once the launcher's stop signal is
    # pending, so it dies where it was paused (mid-write at worst), whatever the machine's speed.
    deadline = time.time() + 400
    main_rank = None
    while time.time() < deadline and main_rank is None:
        assert process.poll() is None, process.communicate()[0][-3000:]
        ranks = [p for p in psutil.Process(process.pid).children(recursive=True)
                 if "trl_r1.cli" in " ".join(p.cmdline())]
        with contextlib.suppress(psutil.Error):
            main_rank = next((p for p in ranks if p.environ().get("LOCAL_RANK") == "0"
                              and p.status() == psutil.STATUS_STOPPED), None)
        time.sleep(0.05)
    assert main_rank is not None, "the main rank never paused after its 3rd record"
    victim = next(p for p in ranks if p.environ().get("LOCAL_RANK") == "1")
    victim.send_signal(signal.SIGKILL)
    deadline = time.time() + 120
    while not stop_pending(main_rank) and time.time() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(psutil.Error):
        main_rank.send_signal(signal.SIGCONT)
    output, _ = process.communicate(timeout=120)
    assert process.returncode != 0
    before = records.read_text()
    assert 3 <= before.count("\n") < 12 and not (run / "rejection_sampling" / "sft.jsonl").exists()
    stamps = (run / "rl" / "stage.json").stat().st_mtime_ns

    process = launch(recipe, tmp_path / "run.yaml")
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output[-3000:]
    assert "[rl] done earlier, skipped" in output and "[rejection_sampling] resuming" in output
    assert stamps == (run / "rl" / "stage.json").stat().st_mtime_ns
    after = records.read_text()
    assert after.startswith(before[:before.rfind("\n") + 1])  # every record written before the kill is kept
    assert sorted(r["index"] for r in records_of(run)) == list(range(12))  # each prompt exactly once
    # the same data an uninterrupted sampler produces from the same RL model (sampling is seeded per batch)
    rs = read_record(run / "rejection_sampling")
    config = yaml.safe_load((run / "rejection_sampling" / "run.json").read_text())["config"]
    again = rejection_sample(RejectionSamplingConfig(**{**config, "output_dir": str(tmp_path / "again")}),
                             dataset=toy_prompts())
    assert (tmp_path / "again" / "sft.jsonl").read_text() == (run / "rejection_sampling" / "sft.jsonl").read_text()
    assert rs.outputs["num_accepted"] == again.stats["accepted"]


def test_single_stage_commands_write_their_report(tiny_model_dir, tmp_path):
    from trl_r1.cli import sft_main

    flat = {"model_name_or_path": tiny_model_dir, "load_in_4bit": False, "use_peft": False, "dtype": "float32",
            "output_dir": str(tmp_path / "sft"), "dataset_name": "trl_r1.toy.arithmetic:cold_start_dataset",
            "dataset_kwargs": {"num_rows": 8}, "max_steps": 2, "per_device_train_batch_size": 4, "max_length": 64,
            "use_cpu": True, "report_to": "none", "save_strategy": "no", "logging_steps": 1, "disable_tqdm": True}
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump(flat))
    assert sft_main(["--config", str(tmp_path / "sft.yaml")]) == 0
    report = json.loads((tmp_path / "sft" / "report.json").read_text())
    assert [(row["stage"], row["status"], row["steps"]) for row in report["stages"]] == [("cold_start", "done", 2)]
    assert "| cold_start | done |" in (tmp_path / "sft" / "report.md").read_text()
    assert (tmp_path / "sft" / "curves_loss.png").exists()


def test_a_single_stage_command_trains_qlora_on_two_ranks(tiny_model_dir, tmp_path):
    """`trl-r1 grpo --num_processes 2` with the QLoRA defaults (4-bit base, LoRA, the adapter merged at the end):
    the merge waits until the main process saved the adapter (rank 1 once merged before it existed)."""
    flat = {"model_name_or_path": tiny_model_dir, "dtype": "float32", "output_dir": str(tmp_path / "grpo"),
            "dataset_name": PROMPTS, "rewards": ["format", "math"], "max_steps": 2, "per_device_train_batch_size": 4,
            "num_generations": 4, "max_completion_length": 16, "use_cpu": True, "report_to": "none",
            "save_strategy": "no", "logging_steps": 1, "disable_tqdm": True}
    (tmp_path / "grpo.yaml").write_text(yaml.safe_dump(flat))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "trl_r1.cli", "grpo", "--config", str(tmp_path / "grpo.yaml"),
                             "--num_processes", "2"], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    record = read_record(tmp_path / "grpo")
    assert record.status == "done" and record.metrics["global_step"] == 2 and record.metrics["loaded_in_4bit"]
    assert (tmp_path / "grpo" / "adapter_config.json").exists()
    merged = Path(record.outputs["model_path"])  # the adapter merged into the base, once, by the main process
    assert merged == tmp_path / "grpo" / "merged" and (merged / "config.json").exists()
    report = json.loads((tmp_path / "grpo" / "report.json").read_text())
    assert [(row["stage"], row["status"]) for row in report["stages"]] == [("rl", "done")]


def test_shipped_and_generated_accelerate_configs_load(tmp_path):
    from accelerate.commands.config.config_args import load_config_from_file

    paths = sorted((ROOT / "recipes" / "accelerate_configs").glob("*.yaml"))
    assert {p.stem for p in paths} >= {"ddp", "zero2", "zero3", "fsdp"}
    for path in paths:
        config = load_config_from_file(str(path))
        assert config.num_processes > 1 and config.distributed_type.value in ("MULTI_GPU", "DEEPSPEED", "FSDP")
        if config.distributed_type.value == "DEEPSPEED":
            assert config.deepspeed_config["zero_stage"] in (2, 3)
    (tmp_path / "generated.yaml").write_text(yaml.safe_dump(accelerate_config(2, use_cpu=True, port=29555)))
    generated = load_config_from_file(str(tmp_path / "generated.yaml"))  # what `--num_processes 2` launches with
    assert generated.use_cpu and generated.num_processes == 2 and generated.distributed_type.value == "MULTI_GPU"


def test_more_ranks_announced_than_started_is_refused(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(WorldSizeError, match="WORLD_SIZE=2 but only 1 process"):
        check_world_size(1)
    monkeypatch.setenv("WORLD_SIZE", "1")
    check_world_size(1)


@pytest.mark.parametrize("use_cpu, warned", [("true", True), ("1", True), ("False", False), ("0", False)])
def test_a_cpu_launch_of_one_process_is_named(monkeypatch, caplog, use_cpu, warned):
    """`accelerate launch --cpu` starts one process whatever --num_processes says: say so. Accelerate also sets
    ACCELERATE_USE_CPU=False on GPU launches, which must not warn."""
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.setenv("ACCELERATE_USE_CPU", use_cpu)
    with caplog.at_level(logging.WARNING, logger="trl_r1.pipeline"):
        check_world_size(1)
    assert ("runs ONE process" in caplog.text) is warned


def test_shut_down_leaves_the_process_group(tmp_path):
    """Every `trl-r1` command leaves its process group before exit (left to interpreter shutdown, a rank
    that finished its work could abort with SIGABRT); outside a distributed launch it does nothing."""
    import torch.distributed as dist

    from trl_r1.pipeline.ranks import shut_down

    shut_down(succeeded=True)  # nothing joined: a no-op
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    shut_down(succeeded=True)
    assert not dist.is_initialized()
