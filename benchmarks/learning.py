"""Does the recipe learn, on every seed? N seeds of a pipeline recipe, held-out rewards per stage across seeds.

R1's claim is that RL with verifiable rewards makes a model solve more unseen problems and that rejection-sampling
SFT keeps the gain. One run shows little: this runs a recipe under N seeds (each seed changes the model's
initialisation, the order and slips of the training data, and every trainer's and sampler's randomness; the
held-out problems and their evaluation stay fixed) and prints, per stage, every evaluated held-out reward's mean,
std and 95% interval across seeds (Student t) with pass@k at the evaluation's k (accuracy, and the format reward
that is R1-Zero's main metric), and the stage's wall time; then each seed's rewards with their gains, and each
seed's wall time per stage with its run's wall / CPU time. Every number is CPU-measured; nothing is a formula.

Run (the main job's recipe, 3 seeds one after the other; a run took 166-204 s of CPU time on one thread on seeds
0-6, docs/quickstart.md):

    OMP_NUM_THREADS=1 python benchmarks/learning.py recipes/tiny/pipeline.yaml --seeds 0 1 2

The real-model recipes (SmolLM2-135M-Instruct from its wheel, docs/real_model.md) run the same way, the R1
pipeline and R1-Zero:

    python benchmarks/learning.py recipes/smollm2-135m-instruct/pipeline.yaml --seeds 0 1 2
    python benchmarks/learning.py recipes/smollm2-135m-instruct/zero.yaml --seeds 0 1 2

A gain is printed with the 95% paired bootstrap interval of its per-prompt differences (the same held-out
prompts before and after), which is what says whether a seed's gain is beyond its noise.

`--jobs 2` runs two seeds at once (wall times then overstate a lone run); `--set SECTION.KEY=VALUE` overrides
recipe keys as `trl-r1 run --set` does. Outputs: `<out>/seed-<s>/` (each run with its report), `<out>/learning.json` and
`<out>/learning.png` (each held-out reward after each stage, a line per seed with its 95% interval).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from trl_r1.algorithms.intervals import paired_gain_interval
from trl_r1.pipeline.report import reward_metrics

# two-sided 95% Student t quantiles for n - 1 degrees of freedom (n seeds), so no scipy is needed
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def seeded_recipe(data: dict[str, Any], seed: int, run_dir: Path) -> dict[str, Any]:
    """The recipe with every seed it has set to `seed` (model init, trainers, samplers, training-data order and
    slips); the evaluation (held-out problems and its sampling seed) is left as is.

    >>> r = seeded_recipe({"model": {"tiny": {}}, "cold_start": {"dataset_kwargs": {"sample_seed": 0}},
    ...                    "evaluation": {"dataset_kwargs": {}}}, 3, Path("out"))
    >>> r["model"]["tiny"]["seed"], r["training"]["seed"], r["cold_start"]["dataset_kwargs"]["sample_seed"]
    (3, 3, 3)
    >>> "sample_seed" in r["evaluation"]["dataset_kwargs"], r["run_dir"]
    (False, 'out')
    """
    data = json.loads(json.dumps(data))
    data["run_dir"] = str(run_dir)
    if isinstance(data.get("model", {}).get("tiny"), dict):
        data["model"]["tiny"]["seed"] = seed
    data.setdefault("training", {})["seed"] = seed
    for name in ("cold_start", "rl", "rejection_sampling", "final_sft"):
        section = data.get(name)
        if not isinstance(section, dict):
            continue
        if "sample_seed" in section.get("dataset_kwargs", {}):
            section["dataset_kwargs"]["sample_seed"] = seed
        if name == "rejection_sampling":
            section["seed"] = seed
    return data


def run_seed(recipe: dict[str, Any], seed: int, out: Path, overrides: list[str]) -> dict[str, Any]:
    """One `trl-r1 run` of the seeded recipe in a subprocess; its report plus wall and CPU seconds."""
    run_dir = out / f"seed-{seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "recipe.yaml"
    path.write_text(yaml.safe_dump(seeded_recipe(recipe, seed, run_dir), sort_keys=False))
    reuse_base_evaluation(out, run_dir)
    command = [sys.executable, "-m", "trl_r1.cli", "run", str(path)] + [a for o in overrides for a in ("--set", o)]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    began = time.perf_counter()
    with open(run_dir / "run.log", "w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    code = proc.returncode = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"seed {seed}: trl-r1 run exited {code}; see {run_dir / 'run.log'}")
    report = json.loads((run_dir / "report.json").read_text())
    return {"seed": seed, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "evaluation": report["evaluation"],
            "stages": {row["stage"]: row for row in report["stages"]}}


def reuse_base_evaluation(out: Path, run_dir: Path) -> None:
    """Offer another seed's base evaluation to this run: the runner keeps it only if its key (base model,
    evaluation settings, rewards) matches, i.e. for a pretrained base, whose evaluation the seed does not change;
    a tiny model built per seed is evaluated again."""
    import shutil

    target = run_dir / "base_evaluation.json"
    found = sorted(p for p in out.glob("seed-*/base_evaluation.json") if p != target)
    if found and not target.exists():
        shutil.copyfile(found[0], target)


def t_interval(values: list[float]) -> dict[str, Any]:
    """Mean, std and the two-sided 95% Student t interval of the mean across seeds (no interval from one seed).

    >>> r = t_interval([0.5, 0.7])
    >>> r["mean"], round(r["std"], 4), [round(x, 3) for x in r["ci95"]]
    (0.6, 0.1414, [-0.671, 1.871])
    """
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": mean, "std": 0.0, "ci95": [math.nan, math.nan]}
    std = statistics.stdev(values)
    half = T95.get(len(values) - 1, 1.96) * std / math.sqrt(len(values))
    return {"mean": mean, "std": std, "ci95": [mean - half, mean + half]}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per stage (`base` first, evaluated before any stage runs), across seeds: every held-out reward's mean, std,
    95% t-interval and mean pass@k, under `rewards` (absent for a stage that is not evaluated), and the stage's
    wall seconds per seed, under `seconds` (absent for `base`)."""
    first = runs[0]
    stages = [s for s in first["evaluation"] if s not in first["stages"]] + list(first["stages"])
    out: dict[str, Any] = {}
    for stage in stages:
        row: dict[str, Any] = {}
        if all(stage in r["stages"] for r in runs):
            row["seconds"] = [r["stages"][stage]["seconds"] for r in runs]
        evaluations = [r["evaluation"].get(stage) or {} for r in runs]
        rewards = {}
        for metric in reward_metrics({stage: evaluations[0]}):
            if not all(metric in e for e in evaluations):
                continue
            values = [e[metric] for e in evaluations]
            rewards[metric] = {**t_interval(values), "values": values, "range": [min(values), max(values)]}
            for key in evaluations[0]:
                if key.startswith(metric + "/pass@"):
                    rewards[metric][key.rsplit("/", 1)[1]] = statistics.fmean(e.get(key, math.nan) for e in evaluations)
        if rewards:
            row["rewards"] = rewards
        out[stage] = row
    return out


def format_tables(runs: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    """The summary across seeds (every held-out reward of every stage, and each stage's wall time), then each seed's
    rewards with their per-run intervals and gains, then each seed's wall time per stage and its run's wall / CPU."""
    pass_k = next((k for row in summary.values() for r in row.get("rewards", {}).values() for k in r
                   if k.startswith("pass@")), "pass@k")
    lines = [f"held-out rewards across {len(runs)} seeds: mean over k samples per prompt (pass@1), its std, range "
             "(min-max over seeds) and 95% interval across seeds (Student t),",
             f"{pass_k} (mean over seeds); each stage's wall time, mean (min-max) over seeds. A run's own report gives "
             "an interval over prompts within that one seed; the range here is what another seed can give.",
             f"{'after':<20}{'reward':<24}{'mean':>7}{'std':>7}{'range':>14}{'95% interval':>18}{pass_k:>8}"
             f"{'wall s':>18}"]
    for stage, row in summary.items():
        seconds = row.get("seconds")
        wall = f"{statistics.fmean(seconds):.0f} ({min(seconds):.0f}-{max(seconds):.0f})" if seconds else "-"
        rewards = row.get("rewards") or {"(not evaluated)": None}
        for i, (metric, r) in enumerate(rewards.items()):
            cells = f"{'':>7}{'':>7}{'':>14}{'':>18}{'':>8}" if r is None else \
                f"{r['mean']:>7.3f}{r['std']:>7.3f}{_range(r['range']):>14}{_interval(r['ci95']):>18}" \
                f"{r.get(pass_k, math.nan):>8.3f}"
            lines.append(f"{stage if i == 0 else '':<20}{metric:<24}{cells}{wall if i == 0 else '':>18}".rstrip())
    for metric in reward_metrics({s: row["rewards"] for s, row in summary.items() if "rewards" in row}):
        stages = [s for s, row in summary.items() if metric in row.get("rewards", {})]
        gains = [(a, b) for a, b in (("cold_start", "rl"), ("base", "rl"), ("rl", "final_sft"))
                 if a in stages and b in stages]
        lines += ["", f"per seed: {metric} after each stage [that run's 95% bootstrap interval over prompts], gains "
                  "[paired 95% bootstrap interval over prompts]",
                  f"{'seed':<6}" + "".join(f"{s:>22}" for s in stages) + "".join(f"{b + '-' + a:>26}" for a, b in gains)]
        for run in runs:
            e = run["evaluation"]
            cells = "".join(f"{e[s][metric]:.3f} {_interval(e[s].get(metric + '/ci95'), 2)}".rjust(22) for s in stages)
            lines.append(f"{run['seed']:<6}{cells}" + "".join(_gain(e[a], e[b], metric).rjust(26) for a, b in gains))
    timed = [s for s, row in summary.items() if "seconds" in row]
    lines += ["", "per seed: wall seconds of each stage, and of the whole run with its CPU seconds",
              f"{'seed':<6}" + "".join(f"{s:>20}" for s in timed) + f"{'run wall s':>12}{'run cpu s':>11}"]
    for run in runs:
        lines.append(f"{run['seed']:<6}" + "".join(f"{run['stages'][s]['seconds']:>20.0f}" for s in timed)
                     + f"{run['wall_s']:>12.0f}{run['cpu_s']:>11.0f}")
    walls, cpus = [r["wall_s"] for r in runs], [r["cpu_s"] for r in runs]
    lines.append(f"\nwall time per run: {min(walls):.0f}-{max(walls):.0f} s; CPU time per run: {min(cpus):.0f}-"
                 f"{max(cpus):.0f} s (with OMP_NUM_THREADS=1 a run uses one core: on a quiet machine its wall time is "
                 "about its CPU time)")
    return "\n".join(lines)


def plot_seeds(runs: list[dict[str, Any]], summary: dict[str, Any], path: Path) -> dict[str, list[str]]:
    """One panel per held-out reward: its value after each evaluated stage, a line per seed with that run's 95%
    interval over prompts, so seeds that agree or diverge show at a glance. Returns {reward: [line labels]}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = [stage for stage, row in summary.items() if "rewards" in row]
    metrics = list(dict.fromkeys(m for stage in stages for m in summary[stage]["rewards"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.5 * len(metrics), 3.6), squeeze=False)
    drawn: dict[str, list[str]] = {}
    for ax, metric in zip(axes[0], metrics):
        for i, run in enumerate(runs):
            shown = [s for s in stages if metric in run["evaluation"].get(s, {})]
            values = [run["evaluation"][s][metric] for s in shown]
            bounds = [run["evaluation"][s].get(metric + "/ci95") or [v, v] for s, v in zip(shown, values)]
            errors = [[v - b[0] for v, b in zip(values, bounds)], [b[1] - v for v, b in zip(values, bounds)]]
            xs = [stages.index(s) + (i - (len(runs) - 1) / 2) * 0.05 for s in shown]
            ax.errorbar(xs, values, yerr=errors, marker="o", capsize=3, label=f"seed {run['seed']}")
            drawn.setdefault(metric, []).append(f"seed {run['seed']}")
        ax.set_xticks(range(len(stages)), stages)
        ax.set_title(metric, fontsize=9)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("held-out mean reward (95% interval)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return drawn


def _gain(before: dict[str, Any], after: dict[str, Any], metric: str) -> str:
    """The gain, with the paired interval of its per-prompt differences when both evaluations kept them.

    >>> before = {"acc": 0.4, "acc/per_prompt": [0.0] * 6 + [1.0] * 4}
    >>> _gain(before, {"acc": 0.5, "acc/per_prompt": [1.0] + [0.0] * 5 + [1.0] * 4}, "acc")
    '+0.100 [+0.00, +0.30]'
    """
    gain = f"{after[metric] - before[metric]:+.3f}"
    paired = paired_gain_interval(before.get(metric + "/per_prompt") or [], after.get(metric + "/per_prompt") or [])
    return gain if paired is None else f"{gain} [{paired[0]:+.2f}, {paired[1]:+.2f}]"


def _range(bounds: list[float]) -> str:
    """``0.650-0.770``: the lowest and highest value over seeds."""
    return f"{bounds[0]:.3f}-{bounds[1]:.3f}"


def _interval(bounds: list[float] | None, digits: int = 3) -> str:
    low, high = bounds or (math.nan, math.nan)
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipe", nargs="?", default="recipes/tiny/pipeline.yaml")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds to run (default 0 1 2)")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run at once (default 1)")
    parser.add_argument("--out", default=None, help="output directory (default: a new temporary one)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = parser.parse_args(argv)
    recipe = yaml.safe_load(Path(args.recipe).read_text())
    out = Path(args.out or tempfile.mkdtemp(prefix="trl-r1-learning-"))
    print(f"{args.recipe}: seeds {args.seeds}, {args.jobs} at a time, runs in {out}", flush=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(lambda s: run_seed(recipe, s, out, args.set), args.seeds))
    summary = summarize(runs)
    print("\n" + format_tables(runs, summary))
    (out / "learning.json").write_text(json.dumps({"recipe": args.recipe, "runs": runs, "summary": summary}, indent=2))
    plot_seeds(runs, summary, out / "learning.png")
    print(f"\nwritten: {out / 'learning.json'}, {out / 'learning.png'} (each reward per stage, a line per seed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
