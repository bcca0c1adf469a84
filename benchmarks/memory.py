"""Peak memory of one GRPO step and one SFT step of the real Qwen2.5-0.5B shape, measured on CPU, beside the formula.

Each point runs in its own subprocess (a fresh process, so `ru_maxrss` is that step's peak): the real 0.5B
architecture with random weights (`trl_r1.rehearsal.models`, size `full`), QLoRA (4-bit NF4 + LoRA) or LoRA on
full-precision weights, at several completion lengths; trl-r1's recipe defaults (gradient checkpointing, 8-bit
AdamW) beside stock TRL defaults (no gradient checkpointing, AdamW). Every run is float32 on the CPU.

Printed per point: the process baseline (after imports), the static model size (after loading), the step's
peak, and the formula's CPU estimate (`trl_r1.pipeline.memory`, float32 bytes, no CUDA terms); then the
activation factor fitted on the trl-r1 GRPO points and the formula's error. GPU figures in the recipes are
projections from the same formula (bf16, CUDA context), not measurements.

    nice -n 10 python benchmarks/memory.py            # default points, ~10 minutes on 2 cores
    nice -n 10 python benchmarks/memory.py --quick    # two points
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
PROMPT_TOKENS, BATCH = 64, 4  # as trl_r1.pipeline.memory.BENCH_PROMPT / BENCH_BATCH
GIB = 1024**3
DEFAULT_POINTS = [  # (trainer, mode, completion length, setup)
    ("grpo", "qlora", 128, "trl-r1"), ("grpo", "qlora", 384, "trl-r1"), ("grpo", "qlora", 128, "stock"),
    ("grpo", "lora", 128, "trl-r1"), ("sft", "qlora", 256, "trl-r1"), ("sft", "lora", 256, "trl-r1"),
]


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB


def run_point(model_dir: str, trainer: str, mode: str, length: int, setup: str) -> dict:
    """One step in this process; returns the measurements (called in a child process)."""
    import torch  # noqa: F401
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

    baseline = _rss_gib()
    ours = setup == "trl-r1"
    common = {"output_dir": tempfile.mkdtemp(), "use_cpu": True, "bf16": False, "report_to": "none",
              "max_steps": 1, "save_strategy": "no", "disable_tqdm": True, "per_device_train_batch_size": BATCH,
              "gradient_checkpointing": ours, "optim": "paged_adamw_8bit" if ours else "adamw_torch",
              "model_init_kwargs": {"dtype": "float32"}}
    if mode == "qlora":
        from transformers import BitsAndBytesConfig

        common["model_init_kwargs"]["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype="float32")
    peft = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
    words = " ".join(["seven"] * (PROMPT_TOKENS - 20))
    if trainer == "grpo":
        data = Dataset.from_list([{"prompt": [{"role": "user", "content": f"{words} {i}"}]} for i in range(BATCH)])
        args = GRPOConfig(**common, num_generations=BATCH, max_completion_length=length, beta=0.001,
                          mask_truncated_completions=False, temperature=1.0, logging_steps=1)
        built = GRPOTrainer(model=model_dir, reward_funcs=lambda completions, **_: [0.0] * len(completions),
                            args=args, train_dataset=data, peft_config=peft)
    else:
        reply = " ".join(["seven"] * length)
        data = Dataset.from_list([{"messages": [{"role": "user", "content": words},
                                                {"role": "assistant", "content": reply}]}] * BATCH)
        args = SFTConfig(**common, max_length=PROMPT_TOKENS + length, logging_steps=1)
        built = SFTTrainer(model=model_dir, args=args, train_dataset=data, peft_config=peft)
    static = _rss_gib()
    started = time.perf_counter()
    built.train()
    return {"baseline_gib": baseline, "static_gib": static, "peak_gib": _rss_gib(),
            "seconds": time.perf_counter() - started}


def _settings(mode: str, length: int, setup: str):
    from trl_r1.pipeline.memory import GRPOSettings

    return GRPOSettings(max_prompt_length=PROMPT_TOKENS, max_completion_length=length,
                        per_device_train_batch_size=BATCH, gradient_accumulation_steps=1,
                        load_in_4bit=mode == "qlora", gradient_checkpointing=setup == "trl-r1", dtype_bytes=4)


def formula_cpu_gib(trainer: str, mode: str, length: int, setup: str, factor: float | None = None) -> float:
    """The formula's CPU figure for a point: float32 bytes, no CUDA context or fragmentation terms."""
    from trl_r1.pipeline.memory import estimate_grpo_peak, estimate_sft_peak, model_shapes

    estimate = (estimate_grpo_peak if trainer == "grpo" else estimate_sft_peak)(
        model_shapes()[MODEL], _settings(mode, length, setup), cpu=True, activation_factor=factor)
    return estimate.peak / GIB


def fit_factor(points: list[tuple[tuple, float]]) -> float:
    """The activation factor that makes the formula match the measured peaks on average (least squares)."""
    from trl_r1.pipeline.memory import activation_terms, model_shapes

    xs, ys = [], []
    for point, measured in points:
        _, one_layer = activation_terms(model_shapes()[MODEL], _settings(*point[1:]))
        xs.append(one_layer / GIB)
        ys.append(measured - formula_cpu_gib(*point, factor=0.0))
    return sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two GRPO QLoRA points only")
    parser.add_argument("--only", help="comma-separated indices into the default points, e.g. 0,2")
    parser.add_argument("--point", help=argparse.SUPPRESS)  # internal: run one point (child process)
    parser.add_argument("--model-dir", help="reuse a built full-size model directory")
    args = parser.parse_args()
    if args.point:
        print(json.dumps(run_point(args.model_dir, *json.loads(args.point))))
        return
    from tqdm import tqdm

    from trl_r1.rehearsal.models import build_model

    model_dir = args.model_dir or str(Path(tempfile.gettempdir()) / "trl_r1_bench" / "qwen2.5-0.5b-full")
    print(f"building the real {MODEL} shape (random weights) in {model_dir} ...", file=sys.stderr)
    build_model(MODEL, model_dir, size="full")
    points = DEFAULT_POINTS[:2] if args.quick else DEFAULT_POINTS
    if args.only:
        points = [DEFAULT_POINTS[int(i)] for i in args.only.split(",")]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    rows = []
    for point in tqdm(points, desc="memory points", file=sys.stderr):
        out = subprocess.run([sys.executable, __file__, "--point", json.dumps(point), "--model-dir", model_dir],
                             capture_output=True, text=True, env=env)
        if out.returncode != 0:
            print(f"{point}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        result = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append((point, result))
        print(f"{point}: {json.dumps(result)}", file=sys.stderr, flush=True)  # kept if a later point is cut off
    print(f"| trainer | mode | completion | setup | baseline GiB | static GiB | peak GiB | peak - baseline | "
          f"formula (CPU) | formula / measured | step s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (trainer, mode, length, setup), r in rows:
        measured = r["peak_gib"] - r["baseline_gib"]
        predicted = formula_cpu_gib(trainer, mode, length, setup)
        print(f"| {trainer} | {mode} | {length} | {setup} | {r['baseline_gib']:.2f} | {r['static_gib']:.2f} | "
              f"{r['peak_gib']:.2f} | {measured:.2f} | {predicted:.2f} | {predicted / measured:.2f} | "
              f"{r['seconds']:.0f} |")
    ours = [(p, r) for p, r in rows if p[3] == "trl-r1"]
    fit_points = [(p, r["peak_gib"] - r["baseline_gib"]) for p, r in rows if p[0] == "grpo"]
    if fit_points:
        print(f"\nactivation factor fitted on the GRPO points: {fit_factor(fit_points):.2f} "
              "(trl_r1.pipeline.memory.ACTIVATION_FACTOR)")
        print("CALIBRATION = " + repr([(*p, round(r["peak_gib"] - r["baseline_gib"], 2)) for p, r in rows]))
    if ours:
        errors = [formula_cpu_gib(*p) / (r["peak_gib"] - r["baseline_gib"]) - 1 for p, r in ours]
        print(f"\nformula error on trl-r1 points: mean {sum(errors) / len(errors):+.0%}, "
              f"range {min(errors):+.0%} .. {max(errors):+.0%} (CPU, float32, above the process baseline)")
    stock = {(p[0], p[1], p[2]): r["peak_gib"] for p, r in rows if p[3] == "stock"}
    for (trainer, mode, length, setup), r in ours:
        if (trainer, mode, length) in stock:
            print(f"{trainer} {mode} {length}: trl-r1 defaults / stock TRL peak = "
                  f"{r['peak_gib'] / stock[(trainer, mode, length)]:.2f}")


if __name__ == "__main__":
    main()
