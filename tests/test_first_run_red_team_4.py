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


@pytest.mark.xfail(strict=True, reason="rejection-sample with rewards [math] on prompts without a gold column "
                   "generates every sample and exits 0 (all would be unverified); docs/howto_dataset.md: a column a "
                   "stage needs and does not find is an error before any work")
def test_rejection_sample_refuses_prompts_without_gold_before_generating(workdir, capsys):
    jsonl("nogold.jsonl", [{"prompt": "What is 2 + 3?"}, {"prompt": "What is 1 + 1?"}])
    code, err = rejection_sample(capsys, "nogold.jsonl", "--rewards", "math")
    assert code == 2, err
    assert "solution" in err
    assert not Path("runs/rs/records.jsonl").exists()


@pytest.mark.xfail(strict=True, reason="`trl-r1 rejection-sample --rewards math,format` is 'unknown reward "
                   "math,format (did you mean format?)' while `trl-r1 evaluate --rewards format,math` works "
                   "(docs/quickstart.md); the suggestion would silently drop math")
def test_rejection_sample_rewards_take_commas_like_evaluate(workdir, capsys):
    code, err = rejection_sample(capsys, "prompts.jsonl", "--rewards", "math,format", "--max_prompts", "1")
    assert code == 0, err
    assert json.loads(Path("runs/rs/run.json").read_text())
