"""Issue 35, items 3 and 12: every prompt of the file checked against the stage's budget (streaming, batched,
linear), builders skip a prompt over it and count it, training data given as the held-out set fails, and an
evaluation set that shares prompts with the training data is not called held-out in the report."""

import json
import logging
from pathlib import Path

import pytest

from tests.conftest import dry_run, fails_once, recipe
from trl_r1.data.scan import iter_file_batches, prompt_budget, scan_prompts
from trl_r1.pipeline import load_recipe


def long_row_at_the_end(path: Path, rows: int, words: int) -> None:
    with path.open("a") as handle:
        for i in range(rows):
            handle.write(json.dumps({"prompt": f"What is {i} + 1?", "solution": str(i + 1)}) + "\n")
        handle.write(json.dumps({"prompt": "add " * words + "1 + 1?", "solution": "2"}) + "\n")


def test_the_rl_budget_is_the_engine_limit_less_the_completion():
    recipe_ = load_recipe({"run_dir": "/tmp/r", "model": {"model_name_or_path": "m"}, "rl": {
        "dataset_name": "d", "use_vllm": True, "vllm_max_model_length": 8704, "max_completion_length": 8192,
        "use_cpu": True}}, check_hardware=False)
    tokens, why = prompt_budget(recipe_.stages[0].config, (32768, "config.json"))
    assert tokens == 8704 - 8192 and "vllm_max_model_length 8704" in why


def test_one_long_prompt_past_the_first_rows_fails_the_dry_run(workdir, capsys):
    long_row_at_the_end(Path("prompts.jsonl"), 1500, 300)  # row 1540: past the 1,000 rows checked until now
    problem = fails_once(capsys, recipe(cold_start=None, evaluation=None, rl={"max_completion_length": 600}),
                         "rl: column 'prompt': 1 of 1541 prompts are longer than the 424 tokens",
                         "model context 1024", "first: row 1540")
    assert "TRL does not cut them" in problem


def test_a_whole_file_scan_reads_jsonl_csv_parquet_and_folders_in_batches(tmp_path, tiny_model_dir):
    from datasets import Dataset
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    (tmp_path / "d").mkdir()
    long_row_at_the_end(tmp_path / "d" / "a.jsonl", 2500, 50)
    rows = [json.loads(line) for line in (tmp_path / "d" / "a.jsonl").read_text().splitlines()]
    Dataset.from_list(rows).to_csv(tmp_path / "d" / "b.csv")
    Dataset.from_list(rows).to_parquet(tmp_path / "d" / "c.parquet")
    batches = list(iter_file_batches(tmp_path / "d", batch_size=1000))
    assert max(len(b) for b in batches) == 1000 and sum(len(b) for b in batches) == 3 * 2501
    scan = scan_prompts(iter(batches), tokenizer, budget=40)
    assert (scan.rows, scan.over_budget, scan.first_over[0]) == (3 * 2501, 3, 2500) and scan.longest > 50


def test_the_training_file_as_the_held_out_set_fails(workdir, capsys):
    fails_once(capsys, recipe(cold_start=None, evaluation={"dataset_name": "prompts.jsonl", "dataset_split": "train",
                                                           "stages": ["rl"]}),
               "evaluation: 40 of its 40 prompts are also in the rl stage's training data", "would not be held-out")


def test_a_copy_of_the_training_data_as_the_held_out_set_warns_loudly(workdir, capsys, caplog):
    import shutil

    shutil.copy("prompts.jsonl", "copy.jsonl")
    with caplog.at_level(logging.WARNING, logger="trl_r1.pipeline"):
        code, problems, plan = dry_run(capsys, recipe(cold_start=None, evaluation={
            "dataset_name": "copy.jsonl", "dataset_split": "train", "stages": ["rl"]}))
    assert code == 0 and problems == []
    line = "evaluation: 40 of its 40 prompts are also in the rl stage's training data: the scores would not be held-out"
    assert line in caplog.text and line in plan


def test_an_evaluation_set_seen_in_training_is_not_called_held_out_in_the_report(workdir, capsys):
    import yaml

    from trl_r1.cli import run_main

    Path("copy.jsonl").write_text("".join(Path("prompts.jsonl").read_text().splitlines(keepends=True)[:4]))
    data = recipe(cold_start=None, evaluation={"dataset_name": "copy.jsonl", "dataset_split": "train",
                                               "num_prompts": 4, "stages": ["rl"]})
    Path("recipe.yaml").write_text(yaml.safe_dump(data))
    assert run_main(["recipe.yaml"]) == 0
    summary = capsys.readouterr().out
    report = json.loads(Path("runs/r/report.json").read_text())
    markdown = Path("runs/r/report.md").read_text()
    assert report["evaluation_seen_in_training"] == 4
    assert "Held-out evaluation" not in markdown and "## Evaluation (not held-out)" in markdown
    assert "n = 4 evaluation prompts, 4 of them also in the training data (not held-out" in markdown
    assert "held-out" not in "\n".join(line for line in summary.splitlines() if "[95% CI]" in line), summary


@pytest.mark.parametrize("command_", ["rejection-sample", "distill"])
@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_builder_skips_one_13k_token_prompt_with_a_line_a_count_and_the_rule(workdir, caplog, command_, suffix):
    from datasets import Dataset

    from trl_r1.cli import main

    rows = [{"prompt": f"What is {i} + 1?", "solution": str(i + 1)} for i in range(4)]
    rows.insert(2, {"prompt": "1 + " * 6500 + "1?", "solution": "6501"})
    data = f"long.{suffix}"
    Dataset.from_list(rows).to_json(data) if suffix == "jsonl" else Dataset.from_list(rows).to_csv(data, index=False)
    with caplog.at_level(logging.WARNING, logger="trl_r1"):
        code = main([command_, "--model_name_or_path", "tiny", "--dataset_name", data, "--num_samples", "1",
                     "--max_new_tokens", "2", "--output_dir", "out"])
    assert code in (0, None), caplog.text
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("prompt 2 has" in w and "over max_prompt_tokens=4096: skipped, not cut" in w for w in warnings), warnings
    assert any("1 prompt longer than max_prompt_tokens=4096 tokens was skipped" in w for w in warnings), warnings
    assert json.loads(Path("out/stats.json").read_text())["prompts_too_long"] == 1


def test_missing_gold_is_found_past_the_first_ten_thousand_rows(workdir, capsys):
    rows = [{"prompt": f"What is {i} + 1?", "solution": str(i + 1)} for i in range(12_000)]
    rows[11_500]["solution"] = ""
    Path("big.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    fails_once(capsys, recipe(rl={"dataset_name": "big.jsonl"}), "1 of 12000 rows have no 'solution'", "row 11500")
