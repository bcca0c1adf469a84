"""The preflight's whole-file prompt scan (`trl_r1.data.scan`): rows per second on a generated JSONL file, at two
sizes, and their time ratio (linear in rows: the ratio of the times follows the ratio of the rows).

    python benchmarks/prompt_scan.py --rows 1000000

The tokenizer is the tiny model's byte-level BPE (`trl_r1.toy.tiny.build_tokenizer`, a fast tokenizer like the
real models'), the prompts ~12 words each, one prompt of 12,000 words at the end (the one the scan must find).
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

from trl_r1.data.scan import iter_file_batches, scan_prompts
from trl_r1.toy.tiny import build_tokenizer


def write_rows(path: Path, rows: int) -> None:
    with path.open("w") as handle:
        for i in range(rows - 1):
            handle.write(json.dumps({"prompt": f"Compute {i} plus {i % 97} and give the answer in a box.",
                                     "solution": str(i + i % 97)}) + "\n")
        handle.write(json.dumps({"prompt": "add one " * 6000, "solution": "0"}) + "\n")


def timed(path: Path, tokenizer, rows: int) -> float:
    start = time.perf_counter()
    scan = scan_prompts(iter_file_batches(path), tokenizer, budget=8192, total=rows)
    assert scan.rows == rows and scan.over_budget == 1 and scan.first_over[0] == rows - 1
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    tokenizer = build_tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp, "small.jsonl"), Path(tmp, "large.jsonl")
        write_rows(small, args.rows // 10)
        write_rows(large, args.rows)
        small_s, large_s = timed(small, tokenizer, args.rows // 10), timed(large, tokenizer, args.rows)
    print(f"{args.rows // 10:,} rows: {small_s:.1f} s ({args.rows // 10 / small_s:,.0f} rows/s)")
    print(f"{args.rows:,} rows: {large_s:.1f} s ({args.rows / large_s:,.0f} rows/s)")
    print(f"time ratio {large_s / small_s:.1f} for 10x the rows (linear: ~10)")


if __name__ == "__main__":
    main()
