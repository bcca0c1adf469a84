"""Wall time of the two test tiers, and the 10 slowest tests of each (from pytest's ``--durations``).

Runs ``bash scripts/test.sh`` (the fast tier) and ``bash scripts/test.sh --all`` (the full tier: every test, then
the vLLM suite), exactly as a contributor and CI do, each to a log file, and prints one table. The fast tier's
target is 8 minutes on a 2-core machine, the whole CI (``.ci/run``: the full tier, then the main job) 35 minutes.
Figures depend on the machine and on what else runs there: measure on an idle one, and say whether the model
cache (``~/.cache/trl-r1/tests``, or ``TRL_R1_TEST_CACHE``) was cold (``--cold`` empties a private one first).
Run: ``python benchmarks/test_tiers.py [--tier fast|full|both] [--cold] [--logs DIR]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIERS = {"fast": [], "full": ["--all"]}
_DURATION = re.compile(r"^(?P<seconds>\d+\.\d+)s (?P<when>call|setup|teardown)\s+(?P<test>\S.*)$")
_SUMMARY = re.compile(r"^=+ (?P<summary>.*\b(passed|failed)\b.*) =+$")


def slowest(log: str, count: int = 10) -> list[tuple[float, str]]:
    """The `count` longest phases pytest listed under "slowest durations" (every pytest run in the log).

    >>> slowest("12.50s call     tests/test_a.py::test_x\\n0.20s setup    tests/test_b.py::test_y\\n", 1)
    [(12.5, 'call     tests/test_a.py::test_x')]
    """
    rows = [(float(m["seconds"]), f"{m['when']:<8} {m['test']}")
            for m in map(_DURATION.match, log.splitlines()) if m]
    return sorted(rows, key=lambda row: -row[0])[:count]


def summaries(log: str) -> list[str]:
    """pytest's closing lines ("1153 passed, 2 skipped in 1260.00s"), one per pytest run in the log.

    >>> summaries("x\\n====== 3 passed, 1 skipped in 4.20s ======\\n")
    ['3 passed, 1 skipped in 4.20s']
    """
    return [m["summary"] for m in map(_SUMMARY.match, log.splitlines()) if m]


def run_tier(name: str, logs: Path, env: dict) -> tuple[float, int, str]:
    """Run one tier through scripts/test.sh; its wall seconds, exit status and output."""
    log = logs / f"{name}.log"
    start = time.monotonic()
    with open(log, "w") as out:
        status = subprocess.run(["bash", "scripts/test.sh", *TIERS[name]], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT).returncode
    return time.monotonic() - start, status, log.read_text(errors="replace")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", choices=["fast", "full", "both"], default="both")
    parser.add_argument("--cold", action="store_true", help="start from an empty model cache (a private one)")
    parser.add_argument("--logs", type=Path, default=None, help="where the tiers' logs go (default: a temp dir)")
    args = parser.parse_args()
    logs = args.logs or Path(tempfile.mkdtemp(prefix="trl-r1-tiers-"))
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if args.cold:
        env["TRL_R1_TEST_CACHE"] = str(logs / "model-cache")
        shutil.rmtree(env["TRL_R1_TEST_CACHE"], ignore_errors=True)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; logs in {logs}", flush=True)
    failed = False
    for name in (["fast", "full"] if args.tier == "both" else [args.tier]):
        wall, status, log = run_tier(name, logs, env)
        failed |= status != 0
        print(f"\n{name} tier (bash scripts/test.sh {' '.join(TIERS[name])}): {wall / 60:.1f} min wall, "
              f"exit {status}" + (" (cold model cache)" if args.cold else ""))
        for summary in summaries(log):
            print(f"  pytest: {summary}")
        print("  10 slowest:")
        for seconds, test in slowest(log):
            print(f"  {seconds:8.1f}s  {test}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
