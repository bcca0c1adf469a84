"""Does the recipe learn, on every seed? N seeds of a pipeline recipe, held-out accuracy per stage across seeds.

R1's claim is that RL with verifiable rewards makes a model solve more unseen problems and that rejection-sampling
SFT keeps the gain. One run shows little: this runs a recipe under N seeds (each seed changes the model's
initialisation, the order and slips of the training data, and every trainer's and sampler's randomness; the
held-out problems and their evaluation stay fixed) and prints, per evaluated stage, the held-out accuracy's mean,
std and 95% interval across seeds (Student t), pass@k at the evaluation's k, then each seed's row with its gains
and wall / CPU time. Every number is CPU-measured; nothing is a formula.

Run (the main job's recipe, 3 seeds one after the other; each ran in about 200 s of CPU time, one thread):

    OMP_NUM_THREADS=1 python benchmarks/learning.py recipes/tiny/pipeline.yaml --seeds 0 1 2

`--jobs 2` runs two seeds at once (wall times then overstate a lone run); `--set SECTION.KEY=VALUE` overrides
recipe keys as `trl-r1 run --set` does. Outputs: `<out>/seed-<s>/` (each run with its report) and `<out>/learning.json`.
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

# two-sided 95% Student t quantiles for n - 1 degrees of freedom (n seeds), so no scipy is needed
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
ACCURACY = "math_accuracy_reward"


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


def summarize(runs: list[dict[str, Any]], metric: str = ACCURACY) -> dict[str, Any]:
    """Per evaluated stage: mean, std, 95% t-interval of `metric` across seeds, and mean pass@k.

    >>> s = summarize([{"evaluation": {"rl": {"acc": 0.5, "acc/pass@4": 0.8}}},
    ...                {"evaluation": {"rl": {"acc": 0.7, "acc/pass@4": 0.9}}}], "acc")
    >>> s["rl"]["mean"], round(s["rl"]["std"], 4), [round(x, 3) for x in s["rl"]["ci95"]], round(s["rl"]["pass@4"], 3)
    (0.6, 0.1414, [-0.671, 1.871], 0.85)
    """
    stages = [s for s in runs[0]["evaluation"] if all(metric in r["evaluation"].get(s, {}) for r in runs)]
    out = {}
    for stage in stages:
        values = [r["evaluation"][stage][metric] for r in runs]
        mean = statistics.fmean(values)
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        half = T95.get(len(values) - 1, 1.96) * std / math.sqrt(len(values)) if len(values) > 1 else float("nan")
        row = {"mean": mean, "std": std, "ci95": [mean - half, mean + half], "values": values}
        for key in runs[0]["evaluation"][stage]:
            if key.startswith(metric + "/pass@"):
                row[key.rsplit("/", 1)[1]] = statistics.fmean(r["evaluation"][stage].get(key, math.nan) for r in runs)
        out[stage] = row
    return out


def print_tables(runs: list[dict[str, Any]], summary: dict[str, Any], metric: str = ACCURACY) -> None:
    stages = list(summary)
    print(f"\nheld-out {metric} across {len(runs)} seeds (mean over k samples per prompt; interval: 95% Student t)")
    print(f"{'after':<12}{'mean':>8}{'std':>8}{'95% interval':>20}{'pass@k':>10}")
    for stage, row in summary.items():
        pass_k = next(((k, v) for k, v in row.items() if k.startswith("pass@")), ("pass@k", math.nan))
        interval = f"[{row['ci95'][0]:.3f}, {row['ci95'][1]:.3f}]"
        print(f"{stage:<12}{row['mean']:>8.3f}{row['std']:>8.3f}{interval:>20}{pass_k[1]:>10.3f}  ({pass_k[0]})")
    gains = [(a, b) for a, b in (("cold_start", "rl"), ("base", "rl"), ("rl", "final_sft")) if a in stages and b in stages]
    print("\nper seed: " + metric + " after each stage [per-run 95% bootstrap interval], gains, time")
    header = f"{'seed':<6}" + "".join(f"{s:>24}" for s in stages) + "".join(f"{b + '-' + a:>20}" for a, b in gains)
    print(header + f"{'wall s':>9}{'cpu s':>9}")
    for run in runs:
        cells = []
        for stage in stages:
            e = run["evaluation"][stage]
            ci = e.get(metric + "/ci95") or [math.nan, math.nan]
            cells.append(f"{e[metric]:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]")
        line = f"{run['seed']:<6}" + "".join(f"{c:>24}" for c in cells)
        line += "".join(f"{run['evaluation'][b][metric] - run['evaluation'][a][metric]:>+20.3f}" for a, b in gains)
        print(line + f"{run['wall_s']:>9.0f}{run['cpu_s']:>9.0f}")
    walls = [r["wall_s"] for r in runs]
    cpus = [r["cpu_s"] for r in runs]
    print(f"\nwall time per run: {min(walls):.0f}-{max(walls):.0f} s; CPU time per run: {min(cpus):.0f}-{max(cpus):.0f} s "
          f"(with OMP_NUM_THREADS=1 a run uses one core: on a quiet machine its wall time is about its CPU time)")


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
    print_tables(runs, summary)
    (out / "learning.json").write_text(json.dumps({"recipe": args.recipe, "runs": runs, "summary": summary}, indent=2))
    print(f"\nwritten: {out / 'learning.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
