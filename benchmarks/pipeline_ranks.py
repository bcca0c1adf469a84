"""`trl-r1 run` with 1 and with N processes, one run each: where the time goes, and what the extra ranks buy.

Runs the same shortened four-stage recipe (QLoRA defaults on the toy reasoner: cold start -> GRPO -> rejection
sampling -> final SFT, held-out evaluation after the final SFT) once in one process and once with
`--num_processes N` (DDP; gloo on CPU), and prints per stage: the data-parallel part (training, every rank) and
the main-process parts the other ranks wait for (the hand-off: adapter merge; the evaluation; the whole of
rejection sampling), read back from each `stage.json`, plus the wall time of each run including process start.
The N-rank run trains N times the samples per step (the per-device batch is the same), so the fair training
figure is seconds per sample, printed with the N / 1 ratio.

CPU figures say little about GPUs: on CPU the ranks share the cores, so data parallelism buys nothing here; the
point is the main-process share and the launch overhead, which do not shrink with more ranks.

Run: `OMP_NUM_THREADS=1 python benchmarks/pipeline_ranks.py [--num_processes 2] [--seed 0]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from trl_r1.toy import build_tiny_model
from trl_r1.toy.toy_reasoner import build_toy_reasoner

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = "trl_r1.toy.toy_reasoner:toy_prompts"
TRAINING = ("cold_start", "rl", "final_sft")


def recipe(run_dir: Path, base: str, seed: int) -> dict:
    return {
        "run_dir": str(run_dir), "model": {"model_name_or_path": base, "dtype": "float32"},
        "training": {"use_cpu": True, "report_to": "none", "disable_tqdm": True, "save_strategy": "steps",
                     "save_steps": 2, "logging_steps": 1, "learning_rate": 1e-5, "seed": seed},
        "cold_start": {"dataset_name": "trl_r1.toy.arithmetic:cold_start_dataset",
                       "dataset_kwargs": {"num_rows": 32}, "max_steps": 4, "per_device_train_batch_size": 2,
                       "max_length": 96},
        "rl": {"dataset_name": PROMPTS, "max_steps": 4, "per_device_train_batch_size": 4, "num_generations": 4,
               "max_completion_length": 24},
        "rejection_sampling": {"num_samples": 2, "max_new_tokens": 40, "batch_size": 4, "seed": seed,
                               "min_language_consistency": None},
        "final_sft": {"max_steps": 4, "per_device_train_batch_size": 2, "max_length": 96},
        "evaluation": {"dataset_name": PROMPTS, "num_prompts": 8, "num_samples": 1, "max_new_tokens": 40,
                       "stages": ["final_sft"]},
    }


def run(run_dir: Path, base: str, seed: int, num_processes: int) -> tuple[float, dict[str, dict]]:
    path = run_dir.with_suffix(".yaml")
    path.write_text(yaml.safe_dump(recipe(run_dir, base, seed)))
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "trl_r1.cli", "run", str(path), "--num_processes", str(num_processes)],
                   check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - began
    return wall, {name: json.loads((run_dir / name / "stage.json").read_text())
                  for name in (*TRAINING, "rejection_sampling")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_processes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = str(build_toy_reasoner(tmp / "toy", build_tiny_model(tmp / "tiny"), seed=args.seed))
        results = {n: run(tmp / f"ranks{n}", base, args.seed, n) for n in (1, args.num_processes)}
    n = args.num_processes
    print(f"{'':<34}{'1 rank':>10}{f'{n} ranks':>10}{'ratio':>8}")

    def row(label: str, one: float, many: float) -> None:
        print(f"{label:<34}{one:>10.2f}{many:>10.2f}{many / one if one else float('nan'):>8.2f}")

    (wall_1, stages_1), (wall_n, stages_n) = results[1], results[n]
    for name in TRAINING:
        one, many = stages_1[name], stages_n[name]
        samples_1 = one["metrics"]["train"]["train_samples_per_second"]
        samples_n = many["metrics"]["train"]["train_samples_per_second"]
        row(f"{name}: training s (every rank)", one["seconds"], many["seconds"])
        row(f"{name}: s per 1000 samples", 1000 / samples_1, 1000 / samples_n)
        parts = ("record", "evaluation") if one.get("evaluation") else ("record",)  # evaluated: final_sft
        for part in parts:
            row(f"{name}: {part} s (main only)", one["metrics"]["main_process_seconds"][part],
                many["metrics"]["main_process_seconds"][part])
    row("rejection_sampling s (main only)", stages_1["rejection_sampling"]["seconds"],
        stages_n["rejection_sampling"]["seconds"])
    row("whole run, wall s (incl. start)", wall_1, wall_n)


if __name__ == "__main__":
    main()
