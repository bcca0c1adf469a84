"""Learning, for real: the tiny recipes shortened to CI size must still show R1's two effects.

- RL after the cold start raises held-out accuracy beyond noise (the 95% intervals of the two evaluations do not
  overlap). The same run with the advantages' sign flipped, or with the rewards zeroed, must *not*: so this test
  fails if the trainer stops following the reward, not only if the code crashes.
- R1-Zero: RL from the base model, with format + accuracy rewards and no cold start, makes the base model use
  the <think>/<answer> format it rarely used, from the reward alone, and solve more held-out problems.
"""

import shutil
from pathlib import Path

import pytest
import yaml

from trl_r1 import trainers
from trl_r1.pipeline import run_recipe
from trl_r1.pipeline.stages import read_record

ROOT = Path(__file__).resolve().parents[1]
ACCURACY = "math_accuracy_reward"


class FlippedAdvantagesGRPOTrainer(trainers.R1GRPOTrainer):
    """Sabotage: every advantage negated, so that training pushes away from rewarded completions."""

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        output["advantages"] = -output["advantages"]
        return output


RL_STEPS = 40  # of the main job's 80


def ci_recipe(run_dir: Path) -> dict:
    """recipes/tiny/pipeline.yaml up to RL, with half the RL steps: the same task, model, cold start, learning
    rates and held-out evaluation (so the cold start is the main job's, seed 0)."""
    data = yaml.safe_load((ROOT / "recipes/tiny/pipeline.yaml").read_text())
    data["run_dir"] = str(run_dir)
    for stage in ("rejection_sampling", "final_sft"):
        data.pop(stage)
    data["rl"]["max_steps"] = RL_STEPS
    return data


@pytest.fixture(scope="module")
def cold_started(tmp_path_factory) -> Path:
    """The cold start of the CI recipe, run once for every RL variant below."""
    run_dir = tmp_path_factory.mktemp("learning") / "run"
    data = ci_recipe(run_dir)
    data.pop("rl")
    run_recipe(data, echo=lambda _: None)
    return run_dir


# The fast tier runs the learning check itself; the sabotaged controls and R1-Zero run in the full tier (`slow`).
@pytest.mark.parametrize("sabotage", [None, pytest.param("flipped_advantages", marks=pytest.mark.slow),
                                      pytest.param("zeroed_rewards", marks=pytest.mark.slow)])
def test_rl_raises_held_out_accuracy_beyond_noise_and_sabotage_does_not(cold_started, tmp_path, monkeypatch,
                                                                          sabotage):
    run_dir = tmp_path / "run"
    shutil.copytree(cold_started, run_dir)  # the cold start is done (same fingerprint): only RL runs
    data = ci_recipe(run_dir)
    if sabotage == "flipped_advantages":
        monkeypatch.setattr(trainers, "R1GRPOTrainer", FlippedAdvantagesGRPOTrainer)
    if sabotage == "zeroed_rewards":
        for reward in data["rl"]["rewards"]:
            reward["weight"] = 0.0
    lines: list[str] = []
    report = run_recipe(data, echo=lines.append)
    assert "[cold_start] done earlier, skipped" in lines
    before, after = report["evaluation"]["cold_start"], report["evaluation"]["rl"]
    beyond_noise = after[f"{ACCURACY}/ci95"][0] > before[f"{ACCURACY}/ci95"][1]
    gain = after[ACCURACY] - before[ACCURACY]
    if sabotage is None:
        assert beyond_noise and gain >= 0.08, (before, after)
        # the training curve rises too, not only the held-out number
        rewards = [e[f"rewards/{ACCURACY}/mean"] for e in _history(run_dir / "rl") if f"rewards/{ACCURACY}/mean" in e]
        assert rewards[-1] > rewards[0] + 0.05, rewards
    else:
        assert not beyond_noise and gain < 0.05, (sabotage, before, after)


@pytest.mark.slow
def test_r1_zero_learns_the_format_from_reward_alone(tmp_path):
    data = yaml.safe_load((ROOT / "recipes/tiny/zero.yaml").read_text())
    data["run_dir"] = str(tmp_path / "zero")
    data["rl"]["max_steps"] = RL_STEPS
    report = run_recipe(data, echo=lambda _: None)
    assert set(data) & {"cold_start", "final_sft"} == set()  # nothing but RL touches the base model
    base, rl = report["evaluation"]["base"], report["evaluation"]["rl"]
    assert base["format_reward"] < 0.3 and rl["format_reward"] > 0.8, (base, rl)
    # and the accuracy reward did its part: more held-out problems solved, though little next to the main job
    # (this base model rarely finishes an answer). The size of the rise depends on the seed and the library
    # versions (seed 0, 40 steps: 0.033 -> 0.071 when this test was written, 0.046 -> 0.060 with transformers
    # 5.24.0), so only its sign is asserted here; benchmarks/learning.py measures it across seeds (docs/benchmarks.md)
    assert rl[ACCURACY] > base[ACCURACY], (base, rl)
    assert read_record(tmp_path / "zero" / "rl").status == "done"


def _history(stage_dir: Path) -> list[dict]:
    from trl_r1.pipeline.report import log_history

    return log_history(stage_dir)
