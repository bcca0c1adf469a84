"""The run report: a per-stage metrics table, reward / length / loss curves as PNG, and a terminal summary.

Everything is read back from the run directory (each stage's `stage.json` and TRL's `trainer_state.json`), so
`write_report` works on a finished, interrupted or partly skipped run alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..algorithms.intervals import paired_gain_interval
from .fingerprint import StageRecord, read_record

REPORT_MD, REPORT_JSON = "report.md", "report.json"
CRITIC_METRICS = ("value_loss", "explained_variance")  # R1PPOTrainer's critic (verl's critic/vf_loss, vf_explained_var)
CURVE_LABELS = {"reward": "reward (weighted sum of the reward functions)"}
CURVES = {"rewards": "curves_reward.png", "length": "curves_length.png", "loss": "curves_loss.png",
          "evaluation": "evaluation.png"}


def log_history(stage_dir: Path) -> list[dict[str, Any]]:
    """The per-step logs TRL saved for a stage (empty if it has none)."""
    try:
        return json.loads((stage_dir / "trainer_state.json").read_text()).get("log_history", [])
    except (OSError, ValueError):
        return []


def series(history: list[dict[str, Any]], key: str) -> list[tuple[int, float]]:
    """(step, value) pairs of one logged metric.

    >>> series([{"step": 1, "loss": 2.0}, {"step": 2}, {"step": 3, "loss": 1.5}], "loss")
    [(1, 2.0), (3, 1.5)]
    """
    return [(int(e["step"]), float(e[key])) for e in history if isinstance(e.get(key), (int, float)) and "step" in e]


def stage_summary(record: StageRecord, history: list[dict[str, Any]]) -> dict[str, Any]:
    """One row of the metrics table: first and last values of the curves that matter for the stage kind."""
    row: dict[str, Any] = {"stage": record.name, "status": record.status, "seconds": round(record.seconds, 1),
                           "steps": record.metrics.get("global_step"), "seed": record.metrics.get("seed")}
    for key, label in (("loss", "loss"), ("reward", "reward"), ("completions/mean_length", "length"),
                       ("value_loss", "value_loss"), ("explained_variance", "explained_variance"), ("kl", "kl")):
        points = series(history, key)
        if points:
            row[f"{label}_first"], row[f"{label}_last"] = points[0][1], points[-1][1]
    for key in sorted({k for e in history for k in e if k.startswith("rewards/") and k.endswith("/mean")}):
        points = series(history, key)
        row[f"{key[len('rewards/'):-len('/mean')]}_first"], row[f"{key[len('rewards/'):-len('/mean')]}_last"] = \
            points[0][1], points[-1][1]
    rs = record.metrics.get("rejection_sampling")
    if rs:
        row["accepted"] = record.outputs.get("num_accepted")
        row["generated"] = rs.get("generated", rs.get("num_generated"))
        row["prompts"], row["prompts_with_accepted"] = rs.get("num_prompts"), rs.get("prompts_with_accepted")
        row["rejections"] = {reason: n for reason, n in rs.get("rejections", {}).items() if n}
    if record.metrics.get("long_examples"):  # the SFT examples dropped for exceeding max_length
        row["long_examples"] = record.metrics["long_examples"]
    if record.evaluation:
        row["evaluation"] = record.evaluation
        row["evaluation_seed"] = (record.evaluation_settings or {}).get("sampling", {}).get("seed")
    return row


def seeds_sentence(rows: list[dict[str, Any]]) -> str:
    """'Seeds: cold_start 42, rl 42 (evaluated with 42)': what reproduces each stage's sampling and training."""
    parts = [f"{row['stage']} {_cell(row.get('seed'))}"
             + (f" (evaluated with {row['evaluation_seed']})" if row.get("evaluation_seed") is not None else "")
             for row in rows]
    return "Seeds: " + ", ".join(parts) + "."


def dropped_sentence(row: dict[str, Any]) -> str | None:
    """'dropped 3 of 40 examples longer than 4096 tokens', for an SFT stage that dropped any."""
    long = row.get("long_examples")
    if not long or not long.get("dropped"):
        return None
    return f"dropped {long['dropped']} of {long['examples']} examples longer than {long['max_length']} tokens"


def write_report(run_dir: str | Path, stage_names: list[str], base_evaluation: dict[str, float] | None = None,
                 stage_dirs: dict[str, Path] | None = None, seen_in_training: int = 0) -> dict:
    """Write report.md, report.json and the PNG curves into `run_dir`; return the report as a dict.

    Each stage is read from `stage_dirs[name]` (default `run_dir/<name>`; a single-stage command writes into
    `run_dir` itself). `seen_in_training`: how many evaluation prompts are also in a stage's training data; the
    scores keep every prompt (the same set before and after each stage) but are then not called held-out."""
    run_dir = Path(run_dir)
    rows, histories = [], {}
    for name in stage_names:
        stage_dir = Path((stage_dirs or {}).get(name, run_dir / name))
        record = read_record(stage_dir)
        if record is None:
            continue
        histories[name] = log_history(stage_dir)
        rows.append(stage_summary(record, histories[name]))
    evaluations = {"base": base_evaluation} if base_evaluation else {}
    evaluations.update({r["stage"]: r["evaluation"] for r in rows if r.get("evaluation")})
    report = {"stages": rows, "evaluation": evaluations, "evaluation_seen_in_training": seen_in_training,
              "curves": _plot(run_dir, histories, evaluations)}
    (run_dir / REPORT_JSON).write_text(json.dumps(report, indent=2, default=str))
    (run_dir / REPORT_MD).write_text(markdown(report))
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: the stage table, the held-out evaluation table, and the curve images."""
    lines = ["# Run report", "", "`reward` is the weighted sum of the stage's reward functions (TRL's `reward`); "
             "PPO stages add their critic's `value_loss` and `explained_variance` in the sentences below.", "",
             "| stage | status | time (s) | steps | loss | reward | length | accepted |",
             "|---|---|---|---|---|---|---|---|"]
    for row in report["stages"]:
        lines.append(f"| {row['stage']} | {row['status']} | {row['seconds']} | {_cell(row.get('steps'))} | "
                     f"{_trend(row, 'loss')} | {_trend(row, 'reward')} | {_trend(row, 'length')} | "
                     f"{_cell(row.get('accepted'))} |")
    if report["evaluation"]:
        seen = report.get("evaluation_seen_in_training", 0)
        lines += ["", f"## {'Held-out evaluation' if not seen else 'Evaluation (not held-out)'}", "",
                  *evaluation_table(report["evaluation"], seen=seen)]
    dropped = [f"- {row['stage']}: {dropped_sentence(row)}" for row in report["stages"] if dropped_sentence(row)]
    if dropped:
        lines += ["", "Examples dropped for exceeding `max_length` (`long_examples: truncate` cuts them instead):", "",
                  *dropped]
    lines += ["", seeds_sentence(report["stages"])]
    lines += ["", "What each stage changed:", ""] + [f"- {s}" for s in stage_changes(report)]
    lines += sample_lines(report["evaluation"])
    if report["curves"]:
        lines += ["", "## Curves", ""] + [f"![{name}]({path})" for name, path in report["curves"].items()]
    return "\n".join(lines) + "\n"


def evaluation_table(evaluations: dict[str, dict], first_column: str = "after", seen: int = 0) -> list[str]:
    """The held-out evaluation as Markdown lines: one row per evaluated model (a stage, or `trl-r1 evaluate`'s
    model), the reward means with their 95% interval, pass@k of the first reward, length and truncation."""
    rewards = reward_metrics(evaluations)
    k = _k(evaluations)
    header = [f"{m} (95% CI)" for m in rewards] + [f"{m} pass@{k}" for m in rewards[:1] if k] + \
        ["mean length", "truncated"]
    lines = [f"Mean reward over k = {k or '?'} samples per prompt (pass@1) on {scope_sentence(evaluations, seen)}, "
             "and pass@k (a prompt counts if any of its k samples scores 1).", "",
             f"| {first_column} | " + " | ".join(header) + " |", "|---|" + "---|" * len(header)]
    for stage, values in evaluations.items():
        cells = [_with_interval(values, m) for m in rewards]
        cells += [_cell(values.get(f"{m}/pass@{k}")) for m in rewards[:1] if k]
        cells += [_cell(values.get("mean_length")), _cell(values.get("truncated_ratio"))]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    return lines


def held_out_prompts(evaluations: dict[str, dict]) -> int | None:
    """How many held-out prompts the evaluation scored (from its per-prompt scores)."""
    return next((len(v) for e in evaluations.values() for key, v in e.items()
                 if key.endswith("/per_prompt") and isinstance(v, list)), None)


def scope_sentence(evaluations: dict[str, dict], seen: int = 0) -> str:
    """n held-out prompts (or how many of them were seen in training), and what the intervals cover (prompts,
    within this run's one seed).

    >>> scope_sentence({"rl": {"acc_reward/per_prompt": [1.0, 0.0, 1.0]}})
    'n = 3 held-out prompts; its 95% bootstrap interval is over prompts within this run (one seed): it does not include seed-to-seed variation (across-seed ranges: benchmarks/learning.py --seeds)'
    >>> scope_sentence({"rl": {"acc_reward/per_prompt": [1.0, 0.0, 1.0]}}, seen=2)[:96]
    'n = 3 evaluation prompts, 2 of them also in the training data (not held-out: partly a measure of'
    """
    n = held_out_prompts(evaluations)
    prompts = (f"{n if n is not None else '?'} evaluation prompts, {seen} of them also in the training data (not "
               "held-out: partly a measure of memory)" if seen else f"{n if n is not None else '?'} held-out prompts")
    return (f"n = {prompts}; its 95% bootstrap interval is over prompts within "
            "this run (one seed): it does not include seed-to-seed variation (across-seed ranges: "
            "benchmarks/learning.py --seeds)")


def sample_lines(evaluations: dict[str, dict]) -> list[str]:
    """The same held-out prompts' first completion after each evaluated stage (Markdown), before -> after.

    >>> print("\\n".join(sample_lines({"base": {"samples": [{"prompt": "What is 1 + 2?", "completion": "Three.",
    ...     "rewards": {"acc_reward": 0.0}}]}, "rl": {"samples": [{"prompt": "What is 1 + 2?",
    ...     "completion": "<think>1 + 2 is 3.</think><answer>3</answer>", "rewards": {"acc_reward": 1.0}}]}})))
    <BLANKLINE>
    ## Held-out samples
    <BLANKLINE>
    The first sampled completion of the same held-out prompts after each evaluated stage, with its rewards.
    <BLANKLINE>
    ### 1. What is 1 + 2?
    <BLANKLINE>
    base (acc_reward 0):
    <BLANKLINE>
    ```text
    Three.
    ```
    <BLANKLINE>
    rl (acc_reward 1):
    <BLANKLINE>
    ```text
    <think>1 + 2 is 3.</think><answer>3</answer>
    ```
    """
    shown = {stage: e["samples"] for stage, e in evaluations.items() if e and e.get("samples")}
    if not shown:
        return []
    lines = ["", "## Held-out samples", "",
             "The first sampled completion of the same held-out prompts after each evaluated stage, with its rewards."]
    for i in range(max(len(samples) for samples in shown.values())):
        prompt = next(samples[i]["prompt"] for samples in shown.values() if i < len(samples))
        lines += ["", f"### {i + 1}. {prompt}"]
        for stage, samples in shown.items():
            if i < len(samples) and samples[i]["prompt"] == prompt:
                rewards = ", ".join(f"{name} {_cell(v) if v is not None else 'n/a'}"
                                    for name, v in samples[i]["rewards"].items())
                lines += ["", f"{stage} ({rewards}):", "", "```text", samples[i]["completion"].replace("```", "'''"),
                          "```"]
    return lines


def evaluation_lines(evaluations: dict[str, dict], seen: int = 0) -> list[str]:
    """The held-out evaluation in a few terminal lines: each reward's mean [95% CI] and pass@k per model."""
    k = _k(evaluations)
    name = "evaluation" if seen else "held-out"
    lines = [f"{name}: k = {k or '?'} samples per prompt, {scope_sentence(evaluations, seen)}"]
    for metric in reward_metrics(evaluations):
        values = "  ".join(f"{stage}={_with_interval(e, metric)}" for stage, e in evaluations.items())
        lines.append(f"{name} {metric} [95% CI]: {values}")
        if k and any(f"{metric}/pass@{k}" in e for e in evaluations.values()):
            values = "  ".join(f"{stage}={_cell(e.get(f'{metric}/pass@{k}'))}" for stage, e in evaluations.items())
            lines.append(f"{name} {metric} pass@{k}: {values}")
    return lines


def terminal_summary(report: dict[str, Any]) -> str:
    """A few lines for the end of `trl-r1 run`: what each stage did and how held-out metrics moved."""
    lines = ["", "=" * 72, "trl-r1 run summary", "=" * 72]
    for row in report["stages"]:
        parts = [f"{row['stage']:<19}{row['status']:<6}{row['seconds']:>8.1f}s"]
        for label in ("loss", "reward", "length"):
            if f"{label}_last" in row:
                parts.append(f"{label} {_trend(row, label)}")
        if row.get("accepted") is not None:
            parts.append(f"accepted {row['accepted']}")
        if dropped_sentence(row):
            parts.append(dropped_sentence(row))
        lines.append("  ".join(parts))
    evaluations = report["evaluation"]
    if evaluations:
        lines.append("-" * 72)
        lines += evaluation_lines(evaluations, report.get("evaluation_seen_in_training", 0))
    lines.append("-" * 72)
    lines += stage_changes(report)
    lines.append("=" * 72)
    return "\n".join(lines)


def reward_metrics(evaluations: dict[str, dict]) -> list[str]:
    """The reward means in the evaluations, accuracy-like ones first (format last)."""
    names = {k for e in evaluations.values() for k in e if k.endswith("reward") and "/" not in k}
    return sorted(names, key=lambda n: (n.startswith("format"), n))


def stage_changes(report: dict[str, Any]) -> list[str]:
    """One sentence per stage saying what it changed. An evaluated stage: how its held-out scores moved from the
    previous evaluation, and whether the move is beyond noise: the 95% paired bootstrap interval of the per-prompt
    gain excludes 0 (`intervals.paired_gain_interval`; without per-prompt scores: the two 95% intervals do not
    overlap). Rejection
    sampling: what it kept and why it rejected the rest. Any other stage: what its own training curves did.

    >>> stage_changes({"evaluation": {
    ...     "base": {"math_accuracy_reward": 0.1, "math_accuracy_reward/ci95": [0.05, 0.15]},
    ...     "rl": {"math_accuracy_reward": 0.5, "math_accuracy_reward/ci95": [0.42, 0.58]}},
    ...     "stages": [{"stage": "rl", "status": "done", "seconds": 9.0, "steps": 80}]})
    ['rl: math_accuracy_reward 0.1 -> 0.5 (+0.4, beyond noise).']
    >>> stage_changes({"evaluation": {
    ...     "base": {"acc_reward": 0.4, "acc_reward/ci95": [0.3, 0.5], "acc_reward/per_prompt": [0.0] * 6 + [1.0] * 4},
    ...     "rl": {"acc_reward": 0.5, "acc_reward/ci95": [0.4, 0.6], "acc_reward/per_prompt": [1.0] + [0.0] * 5 + [1.0] * 4}},
    ...     "stages": [{"stage": "rl", "status": "done", "seconds": 9.0, "steps": 80}]})
    ['rl: acc_reward 0.4 -> 0.5 (+0.1, paired 95% interval [0, 0.3], within noise).']
    """
    evaluations = report["evaluation"]
    metrics = reward_metrics(evaluations)
    sentences, previous = [], evaluations.get("base")
    for row in report["stages"]:
        values = evaluations.get(row["stage"])
        moves = []
        for metric in metrics if values and previous else []:
            if metric in values and metric in previous:
                before, after = previous[metric], values[metric]
                moves.append(f"{metric} {_cell(before)} -> {_cell(after)} ({after - before:+.3g}, "
                             f"{_significance(previous, values, metric)})")
        if moves:
            sentence = "; ".join(moves)
        elif row.get("accepted") is not None:
            sentence = _rejection_sampling_change(row)
        else:
            sentence = _training_change(row, evaluated=bool(values))
            if values:  # evaluated, with no earlier evaluation to compare with
                sentence += ("; evaluation " if report.get("evaluation_seen_in_training") else "; held-out ") + ", ".join(f"{m} {_with_interval(values, m)}" for m in metrics
                                                      if m in values)
        if moves and "value_loss_first" in row:  # an evaluated PPO stage: its critic still gets a word
            sentence += "; critic " + ", ".join(f"{m} {_trend(row, m)}" for m in CRITIC_METRICS if f"{m}_first" in row)
        sentences.append(f"{row['stage']}: {sentence}.")
        previous = values or previous
    return sentences


def _rejection_sampling_change(row: dict[str, Any]) -> str:
    """What a rejection-sampling stage kept, out of what, and every rejection reason with its count (kept +
    rejected = generated).

    >>> _rejection_sampling_change({"accepted": 30, "generated": 120, "prompts": 40, "prompts_with_accepted": 25,
    ...                             "rejections": {"malformed": 10, "incorrect:math_accuracy_reward": 75,
    ...                                            "truncated": 4}})
    'kept 30 of 120 samples (25.0%) from 40 prompts (25 with at least one kept);
     rejected as incorrect:math_accuracy_reward (75), malformed (10), truncated (4), no reason recorded (1)'
    """
    accepted, generated = row["accepted"], row.get("generated")
    sentence = f"kept {accepted} of {generated} samples ({accepted / generated:.1%})" if generated else \
        f"kept {accepted} samples"
    if row.get("prompts") is not None:
        sentence += f" from {row['prompts']} prompts"
        if row.get("prompts_with_accepted") is not None:
            sentence += f" ({row['prompts_with_accepted']} with at least one kept)"
    reasons = sorted((row.get("rejections") or {}).items(), key=lambda item: -item[1])
    if generated and accepted + sum(n for _, n in reasons) < generated:  # every sample is counted once
        reasons.append(("no reason recorded", generated - accepted - sum(n for _, n in reasons)))
    if reasons:
        sentence += "; rejected as " + ", ".join(f"{reason} ({n})" for reason, n in reasons)
    return sentence


def _training_change(row: dict[str, Any], *, evaluated: bool = False) -> str:
    """What a stage did by its own logged curves (first -> last value, on its training batches, which the reward
    names share with the held-out columns). `evaluated`: its held-out figures follow (no base to compare with), so
    it does not say there are none.

    >>> _training_change({"status": "done", "seconds": 12.0, "steps": 50, "loss_first": 2.1, "loss_last": 0.4})
    '50 steps, no held-out evaluation; on its training batches: loss 2.1 -> 0.4'
    >>> _training_change({"status": "done", "seconds": 12.0, "steps": 50, "loss_first": 2.1, "loss_last": 0.4},
    ...                  evaluated=True)
    '50 steps; on its training batches: loss 2.1 -> 0.4'
    >>> _training_change({"status": "running", "seconds": 3.0, "steps": None})
    'running (not finished) after 3.0 s, no held-out evaluation and no logged metrics'
    """
    if row["status"] != "done":
        done = f"{row['status']} (not finished) after {row['seconds']} s"
    else:
        done = f"{row['steps']} steps" if row.get("steps") else f"done in {row['seconds']} s"
    trends = [f"{key[:-len('_first')]} {_trend(row, key[:-len('_first')])}" for key in row if key.endswith("_first")]
    done += "" if evaluated else ", no held-out evaluation"
    if trends:
        return f"{done}; on its training batches: " + ", ".join(trends)
    return done if evaluated else f"{done} and no logged metrics"


def _significance(previous: dict[str, Any], values: dict[str, Any], metric: str) -> str:
    paired = paired_gain_interval(previous.get(metric + "/per_prompt") or [], values.get(metric + "/per_prompt") or [])
    if paired is not None:
        beyond = paired[0] > 0 or paired[1] < 0
        return f"paired 95% interval [{_cell(paired[0])}, {_cell(paired[1])}], " + \
            ("beyond noise" if beyond else "within noise")
    before, after = previous.get(metric + "/ci95"), values.get(metric + "/ci95")
    if not before or not after:
        return "no interval"
    return "within noise" if before[0] <= after[1] and after[0] <= before[1] else "beyond noise"


def _k(evaluations: dict[str, dict]) -> int | None:
    for values in evaluations.values():
        for key in values:
            if "/pass@" in key:
                return int(key.rsplit("@", 1)[1])
    return None


def _with_interval(values: dict[str, Any], metric: str) -> str:
    interval = values.get(f"{metric}/ci95")
    text = _cell(values.get(metric))
    return f"{text} [{_cell(interval[0])}, {_cell(interval[1])}]" if interval and text else text


def _trend(row: dict[str, Any], label: str) -> str:
    if f"{label}_first" not in row:
        return ""
    return f"{_cell(row[f'{label}_first'])} -> {_cell(row[f'{label}_last'])}"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _plot(run_dir: Path, histories: dict[str, list[dict[str, Any]]], evaluations: dict[str, dict]) -> dict[str, str]:
    """Draw the curves that have data; returns {curve: file name}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = {}
    reward_keys = sorted({k for h in histories.values() for e in h for k in e
                          if k == "reward" or (k.startswith("rewards/") and k.endswith("/mean"))})
    plots = {
        "rewards": (reward_keys, "reward (training batches; `reward` = weighted sum of the rewards)"),
        "length": (["completions/mean_length"], "mean completion length (tokens)"),
        "loss": (["loss"], "training loss"),
    }
    for curve, (keys, ylabel) in plots.items():
        fig, ax = plt.subplots(figsize=(7, 4))
        has_data = False
        for stage, history in histories.items():
            if curve == "loss" and any("reward" in e for e in history):
                continue  # RL losses are not comparable to SFT cross-entropy
            for key in keys:
                points = series(history, key)
                if points:
                    has_data = True
                    ax.plot(*zip(*points), marker=".", label=f"{stage}: {CURVE_LABELS.get(key, key)}")
        if has_data:
            ax.set_xlabel("step"), ax.set_ylabel(ylabel), ax.grid(alpha=0.3), ax.legend(fontsize=7)
            fig.tight_layout()
            fig.savefig(run_dir / CURVES[curve], dpi=100)
            drawn[curve] = CURVES[curve]
        plt.close(fig)
    metrics = reward_metrics(evaluations)
    if metrics:
        fig, ax = plt.subplots(figsize=(7, 4))
        stages = list(evaluations)
        for metric in metrics:
            means = [evaluations[s].get(metric, float("nan")) for s in stages]
            lows = [(evaluations[s].get(metric + "/ci95") or [m, m])[0] for s, m in zip(stages, means)]
            highs = [(evaluations[s].get(metric + "/ci95") or [m, m])[1] for s, m in zip(stages, means)]
            line, = ax.plot(stages, means, marker="o", label=f"{metric} (95% CI)")
            ax.fill_between(stages, lows, highs, color=line.get_color(), alpha=0.2)
        ax.set_ylabel("held-out mean reward"), ax.set_ylim(-0.05, 1.05), ax.grid(alpha=0.3), ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(run_dir / CURVES["evaluation"], dpi=100)
        drawn["evaluation"] = CURVES["evaluation"]
        plt.close(fig)
    return drawn
