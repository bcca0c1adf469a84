"""The run report read back from stage records written to disk (synthetic records: no training): one sentence per
stage, evaluated or not, and the held-out 95% intervals and pass@k in the terminal summary."""

import json

from trl_r1.pipeline.report import stage_changes, terminal_summary, write_report
from trl_r1.pipeline.stages import StageRecord, write_record

ACC, FMT = "math_accuracy_reward", "format_reward"


def held_out(acc: float, ci: list[float], pass_k: float, fmt: float) -> dict:
    return {ACC: acc, f"{ACC}/ci95": ci, f"{ACC}/pass@4": pass_k,
            FMT: fmt, f"{FMT}/ci95": [fmt, fmt], f"{FMT}/pass@4": fmt, "mean_length": 30.0, "truncated_ratio": 0.0}


def write_stage(run_dir, record: StageRecord, history: list[dict] | None = None) -> None:
    write_record(run_dir / record.name, record)
    if history is not None:
        (run_dir / record.name / "trainer_state.json").write_text(json.dumps({"log_history": history}))


def test_every_stage_gets_a_sentence_and_the_summary_gives_intervals_and_pass_at_k(tmp_path):
    write_stage(tmp_path, StageRecord("cold_start", "f", "done", metrics={"global_step": 800}, seconds=70.0,
                                      evaluation=held_out(0.41, [0.38, 0.44], 0.9, 1.0)),
                [{"step": 10, "loss": 2.5}, {"step": 800, "loss": 0.62}])
    write_stage(tmp_path, StageRecord("rl", "f", "done", metrics={"global_step": 80}, seconds=90.0,
                                      evaluation=held_out(0.43, [0.40, 0.46], 0.92, 1.0)),
                [{"step": 10, "reward": 0.6, f"rewards/{ACC}/mean": 0.38},
                 {"step": 80, "reward": 0.85, f"rewards/{ACC}/mean": 0.6}])
    stats = {"num_prompts": 400, "generated": 1600, "accepted": 369, "prompts_with_accepted": 310,
             "rejections": {"malformed": 12, f"incorrect:{ACC}": 1100, "mixed_language": 0, "near_duplicate": 119}}
    write_stage(tmp_path, StageRecord("rejection_sampling", "f", "done", outputs={"num_accepted": 369},
                                      metrics={"rejection_sampling": stats}, seconds=20.0))
    write_stage(tmp_path, StageRecord("final_sft", "f", "done", metrics={"global_step": 50}, seconds=15.0),
                [{"step": 10, "loss": 0.5}, {"step": 50, "loss": 0.31}])
    base = held_out(0.0, [0.0, 0.0], 0.0, 0.0)
    report = write_report(tmp_path, ["cold_start", "rl", "rejection_sampling", "final_sft"], base)

    assert stage_changes(report) == [
        f"cold_start: {ACC} 0 -> 0.41 (+0.41, beyond noise); {FMT} 0 -> 1 (+1, beyond noise).",
        f"rl: {ACC} 0.41 -> 0.43 (+0.02, within noise); {FMT} 1 -> 1 (+0, within noise).",
        "rejection_sampling: kept 369 of 1600 samples (23.1%) from 400 prompts (310 with at least one kept); "
        f"rejected as incorrect:{ACC} (1100), near_duplicate (119), malformed (12).",
        "final_sft: 50 steps, no held-out evaluation; on its training batches: loss 0.5 -> 0.31.",
    ]
    summary = terminal_summary(report).splitlines()
    assert f"held-out {ACC} [95% CI]: base=0 [0, 0]  cold_start=0.41 [0.38, 0.44]  rl=0.43 [0.4, 0.46]" in summary
    assert f"held-out {ACC} pass@4: base=0  cold_start=0.9  rl=0.92" in summary
    assert f"held-out {FMT} pass@4: base=0  cold_start=1  rl=1" in summary
    assert summary[-5:-1] == stage_changes(report)  # the sentences close the summary
    markdown = (tmp_path / "report.md").read_text()
    assert "- " + stage_changes(report)[2] in markdown and f"| {ACC} pass@4 |" in markdown


def test_a_run_without_evaluation_still_says_what_each_stage_did(tmp_path):
    """No held-out evaluation anywhere (e.g. a recipe without an `evaluation` section): the sentences come from the
    stages' own curves, and an interrupted stage says so."""
    write_stage(tmp_path, StageRecord("rl", "f", "done", metrics={"global_step": 80}, seconds=90.0),
                [{"step": 10, "reward": 0.2, f"rewards/{ACC}/mean": 0.1},
                 {"step": 80, "reward": 0.7, f"rewards/{ACC}/mean": 0.5}])
    write_stage(tmp_path, StageRecord("final_sft", "f", "running", seconds=4.0))
    report = write_report(tmp_path, ["rl", "final_sft"])
    assert stage_changes(report) == [
        f"rl: 80 steps, no held-out evaluation; on its training batches: reward 0.2 -> 0.7, {ACC} 0.1 -> 0.5.",
        "final_sft: running (not finished) after 4.0 s, no held-out evaluation and no logged metrics.",
    ]
    assert terminal_summary(report).splitlines()[-3:-1] == stage_changes(report)


def test_paired_gains_and_the_same_prompts_before_and_after(tmp_path):
    """With per-prompt scores the verdict comes from the paired interval of the gain, which sees through two
    overlapping intervals; the report shows the same held-out prompts' completions after each evaluated stage."""
    before_scores = [0.0] * 55 + [1.0] * 45
    after_scores = [1.0] * 12 + [0.0] * 43 + [1.0] * 45  # 12 prompts newly solved, none lost
    samples = lambda texts, scores: [{"prompt": f"What is {i} + 1?", "completion": t, "rewards": {ACC: s}}
                                     for i, (t, s) in enumerate(zip(texts, scores))]
    base = {**held_out(0.45, [0.35, 0.55], 0.45, 1.0), f"{ACC}/per_prompt": before_scores,
            "samples": samples(["<think>0 + 1 is 2.</think>\n<answer>2</answer>", "two"], [0.0, 0.0])}
    write_stage(tmp_path, StageRecord("rl", "f", "done", metrics={"global_step": 20}, seconds=90.0, evaluation={
        **held_out(0.57, [0.47, 0.67], 0.57, 1.0), f"{ACC}/per_prompt": after_scores,
        "samples": samples(["<think>0 + 1 is 1.</think>\n<answer>1</answer>", "<answer>2</answer>"], [1.0, 1.0])}))
    report = write_report(tmp_path, ["rl"], base)
    # the two intervals overlap, yet every changed prompt moved up: beyond noise, paired
    assert stage_changes(report)[0].startswith(f"rl: {ACC} 0.45 -> 0.57 (+0.12, paired 95% interval [0.06, 0.18], "
                                               "beyond noise)")
    markdown = (tmp_path / "report.md").read_text()
    section = markdown[markdown.index("## Held-out samples"):]
    assert section.index("### 1. What is 0 + 1?") < section.index("base (") < section.index("rl (")
    assert "<think>0 + 1 is 1.</think>\n<answer>1</answer>" in section and "### 2. What is 1 + 1?" in section
    assert f"rl ({ACC} 1):" in section


def test_a_report_a_researcher_can_cite(tmp_path):
    """n held-out prompts and k stated with the interval's scope; every rejection counted (the counts add up to what
    was generated); the `reward` curve named as the weighted sum; a PPO stage's critic metrics in its sentence."""
    scores = [1.0, 0.0, 1.0, 1.0, 0.0]
    write_stage(tmp_path, StageRecord("rl", "f", "done", metrics={"global_step": 80}, seconds=90.0,
                                      evaluation={**held_out(0.6, [0.2, 1.0], 0.8, 1.0), f"{ACC}/per_prompt": scores}),
                [{"step": 10, "reward": 0.2, "value_loss": 0.9, "explained_variance": -0.3, "kl": 0.0},
                 {"step": 80, "reward": 0.7, "value_loss": 0.1, "explained_variance": 0.6, "kl": 0.02}])
    stats = {"num_prompts": 400, "generated": 1600, "rejections": {"a": 372, "b": 647, "c": 526, "d": 38, "e": 17}}
    write_stage(tmp_path, StageRecord("rejection_sampling", "f", "done", outputs={"num_accepted": 0},
                                      metrics={"rejection_sampling": stats}, seconds=20.0))
    report = write_report(tmp_path, ["rl", "rejection_sampling"])
    markdown = (tmp_path / "report.md").read_text()
    summary = terminal_summary(report)
    for text in (markdown, summary):
        assert "k = 4 samples" in text and "n = 5 held-out prompts" in text
        assert "over prompts within this run (one seed)" in text and "benchmarks/learning.py --seeds" in text
    rejected = stage_changes(report)[1]
    assert "a (372)" in rejected and "d (38)" in rejected and "e (17)" in rejected  # all five, not the top three
    assert "weighted sum of the stage's reward functions" in markdown
    assert "value_loss 0.9 -> 0.1, explained_variance -0.3 -> 0.6" in stage_changes(report)[0]
    evaluated = write_report(tmp_path, ["rl"], held_out(0.2, [0.0, 0.4], 0.4, 1.0))  # compared with a base
    assert stage_changes(evaluated)[0].endswith("critic value_loss 0.9 -> 0.1, explained_variance -0.3 -> 0.6.")


def test_rejection_counts_that_fall_short_say_so():
    from trl_r1.pipeline.report import _rejection_sampling_change

    sentence = _rejection_sampling_change({"accepted": 10, "generated": 100, "rejections": {"malformed": 80}})
    assert sentence.endswith("rejected as malformed (80), no reason recorded (10)")


def test_the_report_names_each_stages_seed_and_the_evaluations(tmp_path):
    """Issue 34: what reproduces each stage's sampling stands in the report."""
    write_stage(tmp_path, StageRecord("rl", "f", "done", metrics={"global_step": 8, "seed": 42},
                                      evaluation=held_out(0.4, [0.3, 0.5], 0.9, 1.0),
                                      evaluation_settings={"sampling": {"seed": 42}}))
    write_stage(tmp_path, StageRecord("rejection_sampling", "f", "done", outputs={"num_accepted": 3},
                                      metrics={"rejection_sampling": {"num_generated": 8}, "seed": 7}))
    write_report(tmp_path, ["rl", "rejection_sampling"])
    assert "Seeds: rl 42 (evaluated with 42), rejection_sampling 7." in (tmp_path / "report.md").read_text()


def test_an_evaluation_seen_in_training_is_never_called_held_out(tmp_path):
    write_stage(tmp_path, StageRecord("rl", "f", "done", evaluation=held_out(0.6, [0.4, 0.8], 0.8, 1.0)))
    clean = write_report(tmp_path, ["rl"], held_out(0.2, [0.0, 0.4], 0.4, 1.0))
    assert "## Held-out evaluation" in (tmp_path / "report.md").read_text() and clean["evaluation_seen_in_training"] == 0
    report = write_report(tmp_path, ["rl"], held_out(0.2, [0.0, 0.4], 0.4, 1.0), seen_in_training=3)
    markdown = (tmp_path / "report.md").read_text()
    assert "Held-out" not in markdown and "3 of them also in the training data" in markdown
    assert json.loads((tmp_path / "report.json").read_text())["evaluation_seen_in_training"] == 3
    assert not any(line.startswith("held-out") for line in terminal_summary(report).splitlines())
