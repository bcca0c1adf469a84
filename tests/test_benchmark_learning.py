"""benchmarks/learning.py's aggregation and tables on synthetic runs (no training): every evaluated reward of every
stage across seeds, with its 95% interval and pass@k, and each stage's wall time."""

import doctest
import importlib.util
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ACC, FMT = "math_accuracy_reward", "format_reward"


@pytest.fixture(scope="module")
def learning():
    spec = importlib.util.spec_from_file_location("learning", ROOT / "benchmarks" / "learning.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(seed: int, cold: float, rl: float, fmt_base: float, seconds: dict[str, float]) -> dict:
    """One seed's run as run_seed returns it: the report's evaluations and stage rows, and the run's times."""
    def held_out(acc, fmt):
        return {ACC: acc, f"{ACC}/ci95": [acc - 0.03, acc + 0.03], f"{ACC}/pass@4": min(1.0, 2 * acc),
                FMT: fmt, f"{FMT}/ci95": [fmt, fmt], f"{FMT}/pass@4": fmt, "mean_length": 30.0}
    evaluation = {"base": held_out(0.0, fmt_base), "cold_start": held_out(cold, 1.0), "rl": held_out(rl, 1.0)}
    stages = {name: {"stage": name, "status": "done", "seconds": s} for name, s in seconds.items()}
    return {"seed": seed, "wall_s": sum(seconds.values()) + 5, "cpu_s": sum(seconds.values()),
            "evaluation": evaluation, "stages": stages}


RUNS = [run(0, 0.40, 0.70, 0.1, {"cold_start": 60.0, "rl": 90.0, "rejection_sampling": 20.0}),
        run(1, 0.42, 0.74, 0.3, {"cold_start": 64.0, "rl": 96.0, "rejection_sampling": 22.0}),
        run(2, 0.41, 0.78, 0.2, {"cold_start": 62.0, "rl": 93.0, "rejection_sampling": 24.0})]


def test_its_doctests_pass(learning):
    assert doctest.testmod(learning).failed == 0


def test_summary_has_every_reward_of_every_stage_and_each_stage_wall_time(learning):
    summary = learning.summarize(RUNS)
    assert list(summary) == ["base", "cold_start", "rl", "rejection_sampling"]
    rl = summary["rl"]["rewards"][ACC]
    assert rl["values"] == [0.70, 0.74, 0.78] and rl["mean"] == pytest.approx(0.74)
    assert rl["range"] == [0.70, 0.78]
    assert rl["std"] == pytest.approx(0.04)
    half = 4.303 * 0.04 / math.sqrt(3)  # Student t, 2 degrees of freedom
    assert rl["ci95"] == pytest.approx([0.74 - half, 0.74 + half])
    assert rl["pass@4"] == 1.0 and summary["cold_start"]["rewards"][ACC]["pass@4"] == pytest.approx(0.82)
    assert summary["base"]["rewards"][FMT]["mean"] == pytest.approx(0.2)  # R1-Zero's main metric is there too
    assert list(summary["base"]["rewards"]) == [ACC, FMT] and "seconds" not in summary["base"]
    assert summary["rl"]["seconds"] == [90.0, 96.0, 93.0]
    assert summary["rejection_sampling"] == {"seconds": [20.0, 22.0, 24.0]}  # timed, not evaluated


def test_tables_give_interval_pass_at_k_and_wall_time_per_stage(learning):
    text = learning.format_tables(RUNS, learning.summarize(RUNS))
    lines = text.splitlines()
    rl = next(line for line in lines if line.startswith("rl "))
    # the range across seeds sits next to the interval, so a one-seed interval over prompts is not read as it
    assert rl.split() == ["rl", ACC, "0.740", "0.040", "0.700-0.780", "[0.641,", "0.839]", "1.000", "93", "(90-96)"]
    assert lines[lines.index(rl) + 1].split() == [FMT, "1.000", "0.000", "1.000-1.000", "[1.000,", "1.000]", "1.000"]
    assert "the range here is what another seed can give" in text
    assert next(line for line in lines if line.startswith("rejection_sampling")).split() == \
        ["rejection_sampling", "(not", "evaluated)", "22", "(20-24)"]
    assert f"per seed: {FMT} after each stage [that run's 95% bootstrap interval over prompts], gains [paired 95% " \
        "bootstrap interval over prompts]" in lines
    header = lines.index("per seed: wall seconds of each stage, and of the whole run with its CPU seconds")
    assert lines[header + 1].split() == ["seed", "cold_start", "rl", "rejection_sampling", "run", "wall", "s",
                                         "run", "cpu", "s"]
    assert lines[header + 2].split() == ["0", "60", "90", "20", "175", "170"]
    gains = next(line for line in lines if line.startswith("2 ") and "[0.75, 0.81]" in line)
    assert gains.split()[-2:] == ["+0.370", "+0.780"]  # rl - cold_start, rl - base


def test_the_plot_draws_every_reward_with_a_line_per_seed(learning, tmp_path):
    path = tmp_path / "learning.png"
    drawn = learning.plot_seeds(RUNS, learning.summarize(RUNS), path)
    assert drawn == {ACC: ["seed 0", "seed 1", "seed 2"], FMT: ["seed 0", "seed 1", "seed 2"]}
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
