"""SFT stages drop, not cut, the examples longer than `max_length` (a cut reasoning trace teaches the model to stop
before its answer): real TRL SFT trainers on the tiny model, the counts in the stage's record and report, never a
silent empty run, and the knob that restores TRL's truncation."""

import json
from pathlib import Path

import pytest

from trl_r1.pipeline import RecipeError, run_recipe
from trl_r1.pipeline.stages import read_record


def write_traces(path: Path, short: int, long: int) -> str:
    """`short` one-line answers and `long` traces of ~300 tokens, interleaved."""
    rows = [{"messages": [{"role": "user", "content": f"What is {i} + {i}?"},
                          {"role": "assistant", "content": f"<think>{i} + {i} = {2 * i}</think> {2 * i}"}]}
            for i in range(short)]
    trace = " ".join(f"{i} + {i} = {2 * i}." for i in range(60))
    rows += [{"messages": [{"role": "user", "content": f"Add the numbers {j}."},
                           {"role": "assistant", "content": f"<think>{trace}</think> {j}"}]} for j in range(long)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def recipe(run_dir: Path, dataset: str, **overrides) -> dict:
    section = {"dataset_name": dataset, "max_steps": 2, "per_device_train_batch_size": 2, "max_length": 96,
               **overrides}
    return {"run_dir": str(run_dir), "model": {"tiny": {}, "load_in_4bit": False, "use_peft": False,
                                                "dtype": "float32"},
            "training": {"use_cpu": True, "report_to": "none", "disable_tqdm": True, "save_strategy": "no"},
            "cold_start": section}


@pytest.mark.slow  # trains, then writes the report with its curves: over 20 s on a shared machine
def test_long_examples_are_dropped_and_counted_in_the_record_and_report(tmp_path):
    data = write_traces(tmp_path / "traces.jsonl", short=6, long=3)
    lines: list[str] = []
    run_recipe(recipe(tmp_path / "run", data), echo=lines.append)
    record = read_record(tmp_path / "run" / "cold_start")
    assert record.status == "done" and record.metrics["global_step"] == 2
    assert record.metrics["long_examples"] == {"policy": "drop", "max_length": 96, "examples": 9, "dropped": 3}
    report = (tmp_path / "run" / "report.md").read_text()
    assert "cold_start: dropped 3 of 9 examples longer than 96 tokens" in report
    assert any("dropped 3 of 9 examples" in line for line in lines)


def test_a_stage_whose_every_example_is_too_long_fails_clearly(tmp_path):
    data = write_traces(tmp_path / "traces.jsonl", short=0, long=4)
    with pytest.raises(RecipeError, match="cold_start: key 'max_length': 96 tokens is shorter than every one of the "
                                          "first 4 examples.*long_examples: truncate"):  # at the dry run, before a load
        run_recipe(recipe(tmp_path / "run", data), echo=lambda _: None)


def test_truncate_restores_trls_cut_and_keeps_every_example(tmp_path):
    data = write_traces(tmp_path / "traces.jsonl", short=2, long=4)
    run_recipe(recipe(tmp_path / "run", data, long_examples="truncate", max_steps=1, per_device_train_batch_size=6),
               echo=lambda _: None)
    record = read_record(tmp_path / "run" / "cold_start")
    assert record.status == "done" and "long_examples" not in record.metrics
    # the one step trained on all 6 examples, the 4 long ones cut to exactly max_length by TRL
    state = json.loads((tmp_path / "run" / "cold_start" / "trainer_state.json").read_text())
    tokens = next(entry["num_tokens"] for entry in state["log_history"] if "num_tokens" in entry)
    assert 4 * 96 < tokens < 6 * 96


def test_an_unknown_long_examples_value_names_the_key_and_the_stage(tmp_path):
    data = write_traces(tmp_path / "traces.jsonl", short=2, long=0)
    with pytest.raises(RecipeError, match="cold_start: key 'long_examples': expected one of"):
        run_recipe(recipe(tmp_path / "run", data, long_examples="cut"), echo=lambda _: None)
