"""Throughput and latency of the sandboxed code verifier vs a plain unsandboxed subprocess runner, and what
verifying costs the trainer's own process (honest and adversarial programs).

The reference runs each test as ``python3 -I -c program`` in a local subprocess (no isolation at all), over the
same number of worker threads. Both judge the same jobs (trivial programs, 5 stdio tests each) and must
agree on every pass fraction. CPU counts every process involved (trainer, judges, sandboxes, tests): the
judges are ended inside the timed part so that their CPU is counted. Run:
``OMP_NUM_THREADS=1 python benchmarks/sandbox.py [--jobs 200 --workers 2]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from trl_r1.verifiers.code import isolation_problem, outputs_match, run_tests, run_tests_batch
from trl_r1.verifiers.code.runner import close_idle_judges
from trl_r1.verifiers.code.sandbox import SANDBOX_PYTHON


def make_jobs(n: int, tests_per_job: int = 5) -> list[dict]:
    """Trivial stdio programs; every third one is wrong, so both runners have something to reject."""
    jobs = []
    for i in range(n):
        program = "a, b = map(int, input().split())\nprint(a + b)" if i % 3 else "a, b = map(int, input().split())\nprint(a - b)"
        tests = [{"type": "stdio", "input": f"{k} {i}", "output": str(k + i)} for k in range(1, tests_per_job + 1)]
        jobs.append({"program": program, "tests": tests, "timeout_s": 5.0})
    return jobs


def plain_subprocess_runner(job: dict) -> float:
    """The unsafe reference: one unsandboxed interpreter per test, output compared like ours."""
    passed = 0
    for test in job["tests"]:
        try:
            done = subprocess.run([SANDBOX_PYTHON, "-I", "-c", job["program"]], input=test["input"], capture_output=True,
                                  text=True, timeout=job["timeout_s"])
        except subprocess.TimeoutExpired:
            continue
        passed += done.returncode == 0 and outputs_match(done.stdout, test["output"])
    return passed / len(job["tests"])


def cpu_seconds() -> float:
    """CPU time of this process and of every (reaped) descendant: sandboxes, supervisors, tests."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(function, jobs: list[dict], workers: int) -> tuple[float, float, list[float], list[float]]:
    """(seconds, CPU seconds, per-job latencies, pass fractions) for `function(job)` over `workers` threads."""
    latencies: list[float] = []

    def run(job):
        started = time.perf_counter()
        result = function(job)
        latencies.append(time.perf_counter() - started)
        return result

    started, cpu = time.perf_counter(), cpu_seconds()
    with ThreadPoolExecutor(workers) as pool:
        fractions = list(pool.map(run, jobs))
    return time.perf_counter() - started, cpu_seconds() - cpu, latencies, fractions


def ours(jobs: list[dict], workers: int) -> tuple[float, float, list[float], list[float]]:
    """`timed` for run_tests_batch, from fresh judges to ended ones (batch latency is shared by its jobs)."""
    close_idle_judges()
    started, cpu = time.perf_counter(), cpu_seconds()
    reports = run_tests_batch(jobs, workers=workers)
    close_idle_judges()
    seconds = time.perf_counter() - started
    return seconds, cpu_seconds() - cpu, [], [r.pass_fraction for r in reports]


def trainer_cost(jobs: list[dict], workers: int) -> tuple[float, float]:
    """(CPU ms, RSS growth MiB) of the trainer's own process per program (judges and sandboxes excluded)."""
    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    before, rss = resource.getrusage(resource.RUSAGE_SELF), rss_mib()
    run_tests_batch(jobs, workers=workers)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu / len(jobs) * 1e3, rss_mib() - rss


ADVERSARIAL = [  # each asks the judge to decode, drain or survive something large or malformed
    {"program": "def f():\n    return ['x' * 1000 for _ in range(15_000)]\n",  # ~15 MiB per reply
     "tests": [{"type": "assert", "code": "assert f() == []"}] * 2, "timeout_s": 20},
    {"program": "import json, os, sys, time\ndef f():\n    m = sys.hash_info.modulus\n"
                "    d = json.dumps({'value': ['set'] + [['int', hex(i * m)] for i in range(200_000)]}).encode()\n"
                "    os.write(4, len(d).to_bytes(4, 'big') + d)\n    time.sleep(30)\n",  # hash collisions
     "tests": [{"type": "assert", "code": "assert f() == set()"}], "timeout_s": 1},
    {"program": "def f():\n    while True:\n        yield 'x' * 4096\n", "tests": [{"type": "assert", "code": "assert list(f())"}]},
    {"program": "import os\ndef f():\n    os.write(4, b'\\x00\\x00\\x00\\x05junk!')\n    return 1",
     "tests": [{"type": "assert", "code": "assert f() == 1"}] * 3},
    {"program": "while True:\n    print('x' * 4096)", "tests": [{"type": "stdio", "input": "", "output": "x"}], "timeout_s": 1},
]


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1.0, help="timeout of the latency-under-timeouts run")
    args = parser.parse_args()
    problem = isolation_problem()
    if problem:
        raise SystemExit(f"sandbox unavailable: {problem}")
    jobs = make_jobs(args.jobs)
    run_tests(jobs[0]["program"], jobs[0]["tests"])  # warm-up: the seccomp filter is compiled once per process
    _, _, ours_lat, _ = timed(lambda job: run_tests(job["program"], job["tests"]).pass_fraction, jobs[:50], args.workers)
    ours_s, ours_cpu, _, fractions = ours(jobs, args.workers)
    ref_s, ref_cpu, ref_lat, ref = timed(plain_subprocess_runner, jobs, args.workers)
    assert fractions == ref, "the sandboxed and the plain runner disagree"
    cores = len(os.sched_getaffinity(0))
    print(f"{args.jobs} programs x 5 stdio tests, {args.workers} workers, {cores} cores, "
          f"load average {os.getloadavg()[0]:.1f} (wall-clock rates fall when other work shares the cores)")
    for name, seconds, cpu, latencies in [("sandboxed (judge+bwrap+seccomp)", ours_s, ours_cpu, ours_lat),
                                           ("plain subprocess (unsafe)", ref_s, ref_cpu, ref_lat)]:
        per_program_ms = cpu / args.jobs * 1e3
        print(f"  {name}: {args.jobs / seconds:6.1f} programs/s  p50 {statistics.median(latencies) * 1e3:6.1f} ms"
              f"  p99 {p99(latencies) * 1e3:6.1f} ms  CPU {per_program_ms:5.1f} ms/program"
              f" (= {args.workers * 1e3 / per_program_ms:5.1f} programs/s on {args.workers} idle cores)")
    print(f"  ratio ours/plain: throughput {ref_s / ours_s:.2f}x, CPU per program {ref_cpu / ours_cpu:.2f}x less"
          " (latencies of ours: 50 programs through run_tests)")
    # latency when the test hits its limit: one looping test per program
    asserts = [{"program": f"def add(a, b):\n    return a {'+' if i % 3 else '-'} b",
                "tests": [{"type": "assert", "code": f"assert add({k}, {i}) == {k + i}"} for k in range(1, 6)]}
               for i in range(args.jobs)]
    assert_s, assert_cpu, _, assert_fractions = ours(asserts, args.workers)
    assert assert_fractions == fractions
    per_program_ms = assert_cpu / args.jobs * 1e3
    print(f"  the same programs with 5 assert tests each: {args.jobs / assert_s:6.1f} programs/s  CPU {per_program_ms:5.1f}"
          f" ms/program (= {args.workers * 1e3 / per_program_ms:5.1f} programs/s on {args.workers} idle cores)")
    honest_ms, honest_rss = trainer_cost(jobs[:20], args.workers)
    adversarial = ADVERSARIAL * 2
    attack_ms, attack_rss = trainer_cost(adversarial, args.workers)
    tests_per_attack = sum(len(job["tests"]) for job in adversarial) / len(adversarial)
    print(f"  the trainer's own process per program: honest {honest_ms:.2f} ms CPU (RSS {honest_rss:+.1f} MiB over 20),"
          f" adversarial {attack_ms:.2f} ms CPU (RSS {attack_rss:+.1f} MiB over {len(adversarial)});"
          f" per test: honest {honest_ms / len(jobs[0]['tests']):.2f} ms, adversarial {attack_ms / tests_per_attack:.2f} ms")
    looping = [{"program": "x = input()\nwhile x == 'loop':\n    pass\nprint(x)",
                "tests": [{"type": "stdio", "input": "loop", "output": "loop"}], "timeout_s": args.timeout}] * (4 * args.workers)
    _, _, latencies, fractions = timed(lambda job: run_tests(job["program"], job["tests"], timeout_s=job["timeout_s"]).pass_fraction,
                                       looping, args.workers)
    assert fractions == [0.0] * len(looping)
    print(f"  looping program, {args.timeout:.1f} s limit: latency per program p50 {statistics.median(latencies):.3f} s,"
          f" max {max(latencies):.3f} s (target: limit + 0.5 s)")

if __name__ == "__main__":
    main()
