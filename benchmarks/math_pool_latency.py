"""Latency of an ordinary math verdict right after checks killed at the wall-clock limit, with one spare worker
(the pool before) and with `pool.SPARE_WORKERS` (now), measured in one run:

    python benchmarks/math_pool_latency.py [--rounds 3]

Each round: two checks that sympy cannot finish within the 1.8 s wall-clock limit (their workers are killed and
replaced), then an ordinary check that needs sympy (``2(x+1)`` for ``2x+2``), which needs a ready worker; also
``check("7", "\\\\boxed{7}")`` (settled without a worker). No verdict may take 2 s.
"""

from __future__ import annotations

import argparse
import time

from trl_r1.verifiers import math as math_verifier
from trl_r1.verifiers.math import check
from trl_r1.verifiers.math.pool import SPARE_WORKERS, WorkerPool

SLOW = [  # sympy runs past the limit on both (a closed form of a high power sum; a sum of rational terms)
    ("\\frac{n(n+1)}{2}", "\\boxed{\\sum_{k=1}^{n} k^{300}}"),
    ("1", "\\boxed{\\sum_{k=1}^{n} \\frac{1}{k^{7}(k+1)^{9}}}"),
]


def timed(gold: str, completion: str) -> tuple[float, str | None]:
    started = time.perf_counter()
    verdict = check(gold, completion, answer_policy="marked")
    return time.perf_counter() - started, verdict.reason


def measure(spares: int, rounds: int) -> tuple[list[float], list[float]]:
    """Seconds of each verdict after a kill (the second slow case, the ordinary ones), per round, on a fresh
    one-worker pool with `spares`."""
    for pool in math_verifier._pools.values():
        pool.close()
    math_verifier._pools[1] = WorkerPool(f"{math_verifier.__name__}.equivalence:verdict", 1, spares=spares,
                                         warm_up=f"{math_verifier.__name__}.warm_up:warm_parser")  # as the verifier's
    timed("5", "\\boxed{x+5-x}")  # boots the pool (a one-off cost, not a verdict's)
    time.sleep(5)  # the spares finish booting
    second_slow, ordinary = [], []
    for _ in range(rounds):
        for gold, completion in SLOW:
            seconds, reason = timed(gold, completion)
            print(f"  spares={spares} slow case: {seconds:.2f} s ({reason})")
        second_slow.append(seconds)
        for gold, completion in (("2x+2", "\\boxed{2(x+1)}"), ("7", "\\boxed{7}")):
            seconds, reason = timed(gold, completion)
            ordinary.append(seconds)
            print(f"  spares={spares} {completion} after two kills: {seconds:.2f} s")
        time.sleep(3)  # the replacements boot before the next round
    return second_slow, ordinary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for spares in (1, SPARE_WORKERS):
        second_slow, ordinary = measure(spares, args.rounds)
        label = "one spare (before)" if spares == 1 else f"{spares} spares (now)"
        print(f"{label}, max over {args.rounds} rounds: second slow case {max(second_slow):.2f} s, "
              f"ordinary verdict after two kills {max(ordinary):.2f} s")


if __name__ == "__main__":
    main()
