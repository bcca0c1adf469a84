"""Issue 36, throughput: a sympy worker warms latex2sympy's parser before its first task, with the same verdicts.

latex2sympy's ANTLR parser builds its prediction DFA on demand; a cold worker paid 5-50 ms of each early parse for
it (most of a check on the cheap benchmark sets). `warm_up.warm_parser` builds it at boot; ANTLR's DFA is a cache,
so every parse, and so every verdict, is the one a cold worker gives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from trl_r1.verifiers.math.pool import WorkerPool

ROOT = Path(__file__).resolve().parents[1]

# answers of shapes the warm-up list does not hold verbatim, and a few it does; each parse's full structure is compared
PROBES = [r"\frac{3\sqrt{5}}{7}", r"4\sqrt{27}", r"\tan(\frac{60\pi}{180})", r"(2,\infty)\cup(-\infty,-1)", r"x\ge-7",
          r"\begin{bmatrix}1&2\\3&4\end{bmatrix}", r"y=3+2x", r"\{2,-2\}", r"e^{-1}", "12cm^2+1", r"\sin^2x",
          r"1+2*I", "Part(a):5", r"\lessapprox5", r"13\to12", r"0<g(t)^2\le2", r"\frac{864\pi}{3}", "2.71828"]

_PARSE_ALL = """
import json, sys
import sympy
from trl_r1.verifiers.math.equivalence import Unparseable, parse
from latex2sympy2_extended.gen.antlr4_13_2.PSParser import PSParser
warm = sys.argv[1] == "warm"
if warm:
    from trl_r1.verifiers.math.warm_up import warm_parser
    warm_parser()
states = sum(len(dfa._states) for dfa in PSParser.decisionsToDFA)
out = []
for text in json.loads(sys.argv[2]):
    try:
        value = parse(text)
        out.append(sympy.srepr(value) if isinstance(value, (sympy.Basic, sympy.MatrixBase)) else repr(value))
    except Unparseable as exc:
        out.append("unparseable: " + str(exc))
print(json.dumps({"states": states, "parses": out, "cache": parse.cache_info().currsize}))
"""


def _parse_in_fresh_process(mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-c", _PARSE_ALL, mode, json.dumps(PROBES)], capture_output=True,
                            text=True, env=env, timeout=300, check=True)
    return json.loads(result.stdout)


def test_a_warm_parser_reads_every_answer_as_a_cold_one_does():
    cold, warm = _parse_in_fresh_process("cold"), _parse_in_fresh_process("warm")
    assert warm["parses"] == cold["parses"]  # the same sympy structure, and the same refusals
    assert sum(p.startswith("unparseable") for p in cold["parses"]) >= 2  # refusals are compared too
    assert cold["states"] == 0 and warm["states"] > 500  # counted before the probes: the warm-up built the DFA


def test_the_warm_up_forgets_its_parses():
    """Only the parser's DFA is kept: the warm-up answers take no room in the worker's parse cache."""
    from trl_r1.verifiers.math.equivalence import parse
    from trl_r1.verifiers.math.warm_up import warm_parser

    warm_parser()
    assert parse.cache_info().currsize == 0


def test_a_worker_runs_its_warm_up_before_it_serves():
    pool = WorkerPool("faulthandler:is_enabled", workers=1, spares=1, warm_up="faulthandler:enable")
    try:
        assert pool.run([()], timeout_s=60) == [("ok", True)]
    finally:
        pool.close()


def test_a_failed_warm_up_leaves_the_worker_serving():
    pool = WorkerPool("operator:add", workers=1, spares=1, warm_up="json:loads")  # TypeError: no argument
    try:
        assert pool.run([(1, 2)], timeout_s=60) == [("ok", 3)]
    finally:
        pool.close()


def test_start_waits_until_workers_and_spares_are_ready():
    """A caller that starts the pool first (a trainer, the benchmark) has no worker booting beside its first tasks."""
    pool = WorkerPool("operator:add", workers=1, spares=2, warm_up="time:sleep")  # fails (no argument): still ready
    try:
        pool.start()
        assert all(w.ready for w in pool._pool + pool._spares) and len(pool._pool + pool._spares) == 3
        begin = time.monotonic()
        assert pool.run([(2, 3)], timeout_s=60) == [("ok", 5)]
        assert time.monotonic() - begin < 5.0  # nothing to boot any more
    finally:
        pool.close()
