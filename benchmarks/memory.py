"""Peak memory of one GRPO step and one SFT step of the real Qwen2.5-0.5B shape, measured on CPU, beside the formula.

Each point runs in its own subprocess: the real 0.5B architecture with random weights (`trl_r1.rehearsal.models`,
size `full`), QLoRA (4-bit NF4 + LoRA) or LoRA on full-precision weights, at several completion lengths; trl-r1's
recipe defaults (gradient checkpointing, 8-bit AdamW) beside stock TRL defaults (no gradient checkpointing,
AdamW). Every run is float32 on the CPU. The step's peak is VmHWM reset after loading (`clear_refs`), so the
load peak (reported apart) cannot hide it.

Printed per point: trained tokens (a step must train on real ones), the RSS after loading beside the formula's
weights + LoRA, the bits per 4-bit linear parameter, the load peak, the step's peak and the formula's CPU
estimate; then the constants fitted on the points (`trl_r1.trainers.memory.fit_calibration`), the formula's max
and mean relative error, and trl-r1 vs stock TRL. This CPU table is the formula's secondary check: its primary
calibration is the GPU points of `benchmarks/data/gpu_points.jsonl` (`benchmarks/gpu.py`, docs/memory.md). The
committed measurements are in
`benchmarks/memory_cpu_points.jsonl` (6 of the 8 default points; a QLoRA GRPO step took 20 minutes on the shared
2-core machine).

    nice -n 5 python benchmarks/memory.py --save points.jsonl   # default points: about an hour on 2 busy cores
    nice -n 5 python benchmarks/memory.py --only 0,4 --save points.jsonl
    python benchmarks/memory.py --report benchmarks/memory_cpu_points.jsonl   # the table from saved points
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
PROMPT_TOKENS, BATCH = 64, 4  # as trl_r1.trainers.memory.BENCH_PROMPT / BENCH_BATCH
GIB = 1024**3
DEFAULT_POINTS = [  # (trainer, mode, completion length, setup); QLoRA generation is the slow part on a CPU
    ("grpo", "qlora", 128, "trl-r1"), ("grpo", "lora", 128, "trl-r1"), ("grpo", "lora", 512, "trl-r1"),
    ("grpo", "lora", 128, "stock"), ("sft", "qlora", 256, "trl-r1"), ("sft", "lora", 256, "trl-r1"),
    ("sft", "qlora", 512, "trl-r1"), ("grpo", "qlora", 384, "trl-r1"),
]


def _rss_gib() -> float:
    """The process's peak resident memory so far (`ru_maxrss`: loading included)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB


def _status_gib(field: str) -> float:
    """A `/proc/self/status` figure (VmRSS: now, VmHWM: peak since the last reset, RssFile: mapped files)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024 / GIB
    raise KeyError(field)


def _reset_peak() -> None:
    """Restart VmHWM from the current RSS (Linux `clear_refs` 5), so the step's peak excludes loading."""
    Path("/proc/self/clear_refs").write_text("5")


def linear_bits_per_param(model) -> float | None:
    """Bytes a 4-bit linear weight really takes (packed NF4 + absmax + double-quant state), in bits per parameter."""
    import bitsandbytes as bnb

    stored = params = 0
    for module in model.modules():
        if isinstance(module, bnb.nn.Linear4bit):
            state = module.weight.quant_state
            stored += module.weight.data.nbytes + state.absmax.nbytes + state.code.nbytes
            if state.nested:
                stored += state.state2.absmax.nbytes + state.state2.code.nbytes
            params += module.in_features * module.out_features
    return 8 * stored / params if params else None


def run_point(model_dir: str, trainer: str, mode: str, length: int, setup: str) -> dict:
    """One step in this process; returns the measurements (called in a child process)."""
    import torch  # noqa: F401
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

    baseline = _status_gib("VmRSS")
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
    gc.collect()
    static, load_peak, mapped = _status_gib("VmRSS"), _rss_gib(), _status_gib("RssFile")
    bits = linear_bits_per_param(built.model)
    _reset_peak()
    started = time.perf_counter()
    built.train()
    tokens = next((h["num_tokens"] for h in built.state.log_history if "num_tokens" in h), None)
    return {"baseline_gib": baseline, "static_gib": static, "load_peak_gib": load_peak, "mapped_gib": mapped,
            "bits_per_linear_param": bits, "peak_gib": _status_gib("VmHWM"), "ru_maxrss_gib": _rss_gib(),
            "seconds": time.perf_counter() - started, "num_tokens": tokens}


def run_points(points: list[tuple], model_dir: str, save: str | None) -> list[tuple[tuple, dict]]:
    """Each point in its own child process (so its peak is its own); each result is appended to `save` at once."""
    from tqdm import tqdm

    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    rows = []
    for point in tqdm(points, desc="memory points", file=sys.stderr):
        out = subprocess.run([sys.executable, __file__, "--point", json.dumps(point), "--model-dir", model_dir],
                             capture_output=True, text=True, env=env)
        if out.returncode != 0:
            print(f"{point}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        result = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append((tuple(point), result))
        print(f"{point}: {json.dumps(result)}", file=sys.stderr, flush=True)
        if save:
            with open(save, "a") as f:
                f.write(json.dumps({"point": point, "result": result}) + "\n")
    return rows


def load_points(paths: list[str]) -> list[tuple[tuple, dict]]:
    """Rows saved by `--save` (the last measurement of a point wins)."""
    rows = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            entry = json.loads(line)
            rows[tuple(entry["point"])] = entry["result"]
    return list(rows.items())


def report(rows: list[tuple[tuple, dict]]) -> None:
    """The measured table beside the formula (constants fitted on these rows), its error, trl-r1 vs stock TRL."""
    from trl_r1.trainers.memory import (
        GIB,
        bench_settings,
        calibration_error,
        fit_calibration,
        model_shapes,
        static_bytes,
    )

    points = [(*p, r["peak_gib"] - r["baseline_gib"]) for p, r in rows]
    constants = fit_calibration(points)
    formula = {tuple(row[:4]): row[5] for row in calibration_error(points, constants)}
    print("| trainer | mode | completion | setup | trained tokens | model GiB measured (formula) | 4-bit bits/param | "
          "load peak GiB | step peak GiB | step peak - baseline | formula (CPU) | error | step s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for point, r in rows:
        weights, lora = static_bytes(model_shapes()[MODEL], bench_settings(*point[1:]))
        bits = f"{r['bits_per_linear_param']:.3f}" if r.get("bits_per_linear_param") else "-"
        measured, predicted = r["peak_gib"] - r["baseline_gib"], formula[point]
        print(f"| {' | '.join(map(str, point))} | {r.get('num_tokens') or '-'} | "
              f"{r['static_gib'] - r['baseline_gib']:.2f} ({(weights + lora) / GIB:.2f}) | {bits} | "
              f"{r['load_peak_gib']:.2f} | {r['peak_gib']:.2f} | {measured:.2f} | {predicted:.2f} | "
              f"{predicted / measured - 1:+.0%} | {r['seconds']:.0f} |")
    errors = [abs(predicted / measured - 1) for *_, measured, predicted in calibration_error(points, constants)]
    print(f"\nfitted: ACTIVATION_FACTOR = {constants[0]:.2f}, CPU_OVERHEAD_GIB = {constants[1]:.2f} "
          "(trl_r1.trainers.memory)")
    print("CALIBRATION = " + repr([(*p[:4], round(p[4], 2)) for p in points]))
    print(f"formula error with these constants: max {max(errors):.0%}, mean {sum(errors) / len(errors):.0%} over "
          f"{len(errors)} points (CPU, float32: the step's peak RSS above the process baseline)")
    stock = {p[:3]: r["peak_gib"] for p, r in rows if p[3] == "stock"}
    for p, r in rows:
        if p[3] == "trl-r1" and p[:3] in stock:
            print(f"{' '.join(map(str, p[:3]))}: trl-r1 defaults / stock TRL peak = {r['peak_gib'] / stock[p[:3]]:.2f}")
    print("A secondary check: the formula is calibrated on the GPU points of benchmarks/data/gpu_points.jsonl "
          "(docs/memory.md); the recipe headers' GPU figures are its projections.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two points only")
    parser.add_argument("--only", help="comma-separated indices into the default points, e.g. 0,2")
    parser.add_argument("--point", help=argparse.SUPPRESS)  # internal: run one point (child process)
    parser.add_argument("--model-dir", help="reuse a built full-size model directory")
    parser.add_argument("--save", help="append each point's measurements to this JSON-lines file")
    parser.add_argument("--report", nargs="+", metavar="FILE", help="print the table from --save files, run nothing")
    args = parser.parse_args()
    if args.point:
        print(json.dumps(run_point(args.model_dir, *json.loads(args.point))))
        return
    if args.report:
        report(load_points(args.report))
        return
    from trl_r1.rehearsal.models import build_model

    model_dir = args.model_dir or str(Path(tempfile.gettempdir()) / "trl_r1_bench" / "qwen2.5-0.5b-full")
    print(f"building the real {MODEL} shape (random weights) in {model_dir} ...", file=sys.stderr)
    build_model(MODEL, model_dir, size="full")
    points = DEFAULT_POINTS[:2] if args.quick else DEFAULT_POINTS
    if args.only:
        points = [DEFAULT_POINTS[int(i)] for i in args.only.split(",")]
    report(run_points(points, model_dir, args.save))


if __name__ == "__main__":
    main()
