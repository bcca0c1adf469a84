"""`trl-r1 ... --num_processes 2` (two real ranks, gloo on CPU) when a rank fails: a recipe error is printed once and
exits 2 as with one process, a crash during training ends in one line naming the rank, never torchelastic's
ChildFailedError traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trl_r1.cli import failed_ranks_exit_code

ROOT = Path(__file__).resolve().parents[1]


def two_ranks(command: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    return subprocess.run([sys.executable, "-m", "trl_r1.cli", *command, "--num_processes", "2"], env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_recipe_error_is_printed_once_and_exits_2(tmp_path):
    (tmp_path / "grpo.yaml").write_text(yaml.safe_dump({"model_name_or_path": str(tmp_path), "use_cpu": True}))
    result = two_ranks(["grpo", "--config", str(tmp_path / "grpo.yaml")], tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-3000:]
    assert output.count("trl-r1 grpo: invalid recipe:") == 1 and output.count("output_dir: required") == 1, output
    assert "Traceback" not in output and "ChildFailedError" not in output, output


@pytest.mark.slow  # two ranks load a model (~25-80 s on a shared 2-core machine)
def test_a_rank_failing_during_training_is_named_once(tiny_model_dir, tmp_path):
    """Rank 1's dataset cannot load (rank 0's can): its own traceback, then one line of ours naming it."""
    (tmp_path / "rank_prompts.py").write_text(
        "import os\nfrom trl_r1.toy.toy_reasoner import toy_prompts\n\n\ndef prompts():\n"
        "    if os.environ['RANK'] == '1':\n        raise RuntimeError('rank 1 cannot read its prompts')\n"
        "    return toy_prompts()\n")
    flat = {"model_name_or_path": tiny_model_dir, "dtype": "float32", "output_dir": str(tmp_path / "grpo"),
            "dataset_name": "rank_prompts:prompts", "rewards": ["format", "math"], "max_steps": 1,
            "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 8, "use_cpu": True,
            "report_to": "none", "save_strategy": "no", "disable_tqdm": True, "use_peft": False,
            "load_in_4bit": False}
    (tmp_path / "grpo.yaml").write_text(yaml.safe_dump(flat))
    result = two_ranks(["grpo", "--config", str(tmp_path / "grpo.yaml")], tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert output.count("RuntimeError: rank 1 cannot read its prompts") == 1, output[-3000:]
    assert output.count("trl-r1 grpo: rank 1 failed (exit code 1): see above") == 1, output[-3000:]
    assert "ChildFailedError" not in output and "failed (exitcode" not in output, output[-3000:]


def test_the_line_names_the_rank_that_failed_first(capsys):
    from torch.distributed.elastic.multiprocessing.errors import ProcessFailure

    def failure(rank: int, exitcode: int, timestamp: int) -> ProcessFailure:
        failed = ProcessFailure(local_rank=rank, pid=100 + rank, exitcode=exitcode, error_file="")
        failed.timestamp = timestamp
        return failed

    assert failed_ranks_exit_code("trl-r1 run", {0: failure(0, 2, 5), 1: failure(1, 2, 4)}) == 2  # printed by rank 0
    assert failed_ranks_exit_code("trl-r1 run", {0: failure(0, -15, 5), 1: failure(1, -9, 4)}) == 1
    assert failed_ranks_exit_code("trl-r1 run", {1: failure(1, 2, 4)}) == 2  # rank 0 stopped before it printed
    assert capsys.readouterr().err.splitlines() == ["trl-r1 run: rank 1 failed (killed by SIGKILL): see above",
                                                    "trl-r1 run: rank 1 failed (exit code 2): see above"]
