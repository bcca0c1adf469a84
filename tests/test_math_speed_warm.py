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

import pytest

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
    for _ in warm_parser():
        pass
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


def test_the_warm_up_keeps_no_parse():
    """Only the parser's DFA is kept: the warm-up answers take no room in the worker's parse cache."""
    from trl_r1.verifiers.math.equivalence import parse
    from trl_r1.verifiers.math.warm_up import WARM_UP_ANSWERS, warm_parser

    parse.cache_clear()
    assert sum(1 for _ in warm_parser()) == len(WARM_UP_ANSWERS)  # one step per answer
    assert parse.cache_info().currsize == 0


WARM_UPS = """
import time

def slow():
    for _ in range(400):
        time.sleep(0.25)
        yield

def short():
    yield
    yield

def broken():
    raise ValueError("no warm-up today")
    yield

def not_a_generator():
    return None
"""


@pytest.fixture
def warm_ups(tmp_path):
    path = tmp_path / "warm_ups.py"
    path.write_text(WARM_UPS)
    return str(path)


def test_a_task_waits_for_one_warm_up_step_at_most(warm_ups):
    """The warm-up runs while the worker is idle: a task sent in the middle of a 100 s warm-up is answered after the
    step in progress (0.25 s), and a spare is ready as soon as it has booted, not after its warm-up."""
    pool = WorkerPool("operator:add", workers=1, spares=1, warm_up=f"{warm_ups}:slow")
    try:
        begin = time.monotonic()
        assert pool.run([(1, 2)], timeout_s=60) == [("ok", 3)]  # boots the worker: ready before its warm-up ends
        assert pool.run([(2, 3)], timeout_s=60) == [("ok", 5)]
        # boot (a bare interpreter: under a second here, a few on a loaded 2-core box) and two tasks, far from the
        # 100 s warm-up (a 10 s one left a loaded machine's boot too little room)
        assert time.monotonic() - begin < 50.0
        assert not pool._pool[0].warm  # answered while the warm-up is still running, on a machine of any speed
    finally:
        pool.close()


@pytest.mark.parametrize("warm_up", ["short", "broken", "not_a_generator"])
def test_start_waits_until_workers_and_spares_are_ready_and_warm(warm_ups, warm_up):
    """A caller that starts the pool first (a trainer, the benchmark) has nothing booting or warming up beside its
    first tasks; a warm-up that fails leaves the worker serving (it is an optimisation)."""
    pool = WorkerPool("operator:add", workers=1, spares=2, warm_up=f"{warm_ups}:{warm_up}")
    try:
        pool.start()
        workers = pool._pool + pool._spares
        assert len(workers) == 3 and all(w.ready and w.warm for w in workers)
        assert pool.run([(2, 3)], timeout_s=60) == [("ok", 5)]
    finally:
        pool.close()


def test_a_pool_without_warm_up_is_warm_when_ready():
    pool = WorkerPool("operator:add", workers=1, spares=1)
    try:
        pool.start()
        assert all(w.ready and w.warm for w in pool._pool + pool._spares)
    finally:
        pool.close()
