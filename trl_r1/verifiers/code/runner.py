"""Judging a program against its tests: test formats, per-test outcomes, and the trainer's side of the judge.

The trainer process never runs, imports or decodes anything a program chose. Each worker thread owns a
judge process (``judge.py``) and sends it jobs; the judge starts the program's sandbox, runs the tests
and answers with one fixed-layout verdict per test (`protocol.pack_verdict`, at most `MAX_VERDICT`
bytes). Reading a verdict costs the trainer a constant, and every wait has a deadline: a judge that is
late, dies, or sends anything malformed is killed, its test fails (0.0, never None), and a fresh judge
takes the job's remaining tests. Expected outputs never enter the sandbox:

* stdio: the judge compares the captured stdout with the expected text.
* assert: the judge runs the (trusted) test snippet with its own builtins. The program's top-level
  functions and objects are bound as proxies: calling one runs it in the sandbox, arguments go in and
  only plain data (None, bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset) comes
  back, decoded by a strict tag parser; anything else comes back as an opaque handle that supports calls,
  attribute access, iteration, ``bool()``, ``len`` and indexing (plain results) but refuses ``==`` and
  arithmetic. Objects with a rigged ``__eq__``, patched builtins or a patched test harness therefore
  cannot make a failing program pass.
"""

from __future__ import annotations

import atexit
import enum
import json
import logging
import marshal
import os
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .languages import resolve_language
from .protocol import STARTED, VERDICT_HEADER, frame, unpack_verdict_header
from .sandbox import SandboxLimits, isolation_problem, seccomp_program

logger = logging.getLogger("trl_r1.verifiers.code")

GRACE_S = 1.0  # how long past a test's limit the judge waits for the supervisor before killing the sandbox
JUDGE_GRACE_S = 3.0  # past that, how long the trainer waits for the judge's verdict (and clean-up) before killing it
JUDGE_START_TIMEOUT_S = 60.0  # a judge process's start (interpreter + imports, on a loaded machine)
JUDGE_MEMORY_MB = 2048  # RLIMIT_AS of a judge, or the inherited hard limit when lower (see `memory_problem`)
JUDGE_MIN_MEMORY_MB = 1024  # decoding the largest reply (16 MiB of nested lists) peaks at about 0.7 GiB in a judge
MAX_IDLE_JUDGES = 16
JUDGE_IDLE_RSS_MB = 256  # a judge that holds more after a job (it decoded large values) is not kept idle
START_TIMEOUT_S = 10.0  # starting a sandbox (bwrap + interpreter); compiling adds `compile_timeout_s`
DEFAULT_MAX_OUTPUT = 8 << 20  # stdout per test: multi-MB outputs (constructive problems) pass
MAX_OUTPUT_BYTES = 10 << 20  # the largest cap: stdout travels JSON-escaped (up to 6x) in one frame of MAX_FRAME
MAX_REPLY_BYTES = 16 << 20  # one value returned to an assert test (a list of 10^6 ints is about 15 MiB encoded)
MAX_ITERATED_BYTES = 4 * MAX_REPLY_BYTES  # items one assert test takes from sandbox iterators (list(endless()))
_DETAIL_CHARS = 200


class Outcome(str, enum.Enum):
    """How one test ended."""

    PASSED = "passed"
    WRONG_ANSWER = "wrong_answer"  # ran to the end, wrong output or a failed assertion
    TIMEOUT = "timeout"  # wall-clock limit (or CPU limit) reached
    CRASH = "crash"  # non-zero exit, uncaught exception, signal, or an exit during an assert test
    LIMIT_EXCEEDED = "limit_exceeded"  # memory, output size, file size
    COMPILE_ERROR = "compile_error"
    ERROR = "error"  # not run: invalid test, empty program, sandbox unavailable


@dataclass(frozen=True)
class TestResult:
    """One test's outcome, a short detail, and the tail of its stderr for debugging."""

    outcome: Outcome
    detail: str = ""
    stderr: str = ""
    wall_s: float = 0.0

    __test__ = False  # not a pytest class

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED


@dataclass(frozen=True)
class TestReport:
    """All tests of one program; `error` says why nothing could run (e.g. no isolation)."""

    results: tuple[TestResult, ...] = ()
    error: str | None = None

    __test__ = False

    @property
    def pass_fraction(self) -> float:
        return sum(r.passed for r in self.results) / len(self.results) if self.results else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    @property
    def outcome_counts(self) -> Counter:
        return Counter(r.outcome.value for r in self.results)


@dataclass(frozen=True)
class TestCase:
    """A normalised test: ``stdio`` (input/output) or ``assert`` (code); `problem` marks an unusable one."""

    kind: str
    input: str = ""
    output: str = ""
    code: str = ""
    problem: str | None = None

    __test__ = False


# ------------------------------------------------------------------------------------------------ test formats
def _text(value: Any) -> str:
    """Test text as valid UTF-8 (lone surrogates replaced), so it can cross the pipe."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return text.encode("utf-8", "replace").decode("utf-8")


def normalize_tests(tests: Any) -> tuple[str | None, list[TestCase]]:
    """(language or None, tests) from a test list, open-r1's ``verification_info``, or their JSON text.

    >>> normalize_tests([{"type": "stdio", "input": "1", "output": "2"}])[1][0].kind
    'stdio'
    >>> lang, cases = normalize_tests({"language": "python", "test_cases": [{"type": "stdin_stdout", "input": "", "output": "x"}]})
    >>> lang, cases[0].output
    ('python', 'x')
    """
    if isinstance(tests, (str, bytes)):
        tests = json.loads(tests)
    language = None
    if isinstance(tests, dict):
        language = tests.get("language")
        tests = tests.get("test_cases", tests.get("tests"))
    if tests is None:
        return language, []
    if not isinstance(tests, (list, tuple)):
        raise ValueError(f"tests must be a list, got {type(tests).__name__}")
    return language, [_normalize_test(t) for t in tests]


def _normalize_test(test: Any) -> TestCase:
    if not isinstance(test, dict):
        return TestCase("invalid", problem=f"a test must be a mapping, got {type(test).__name__}")
    kind = test.get("type") or ("assert" if "code" in test else "stdio")
    if kind in ("stdio", "stdin_stdout"):
        if test.get("output") is None:
            return TestCase("invalid", problem="stdio test without 'output'")
        return TestCase("stdio", input=_text(test.get("input")), output=_text(test.get("output")))
    if kind == "assert":
        if not isinstance(test.get("code"), str) or not test["code"].strip():
            return TestCase("invalid", problem="assert test without 'code'")
        return TestCase("assert", code=test["code"])
    return TestCase("invalid", problem=f"unknown test type {kind!r}")


def outputs_match(actual: str, expected: str) -> bool:
    """Equal after stripping the whole text and each line (CRLF, trailing spaces); every line must match.

    >>> outputs_match("1 2 \\r\\n3\\r\\n\\n", "1 2\\n3")
    True
    >>> outputs_match("1\\n2\\n3", "1\\n2")
    False
    """
    def lines(text: str) -> list[str]:
        return [line.strip() for line in text.strip().split("\n")]

    return lines(actual) == lines(expected)


def _short(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "..."


# ------------------------------------------------------------------------------------------------ public API
def run_tests(
    program: str,
    tests: list[dict] | dict | str,
    *,
    timeout_s: float = 5.0,
    language: str | None = None,
    limits: SandboxLimits | None = None,
    allow_unsafe: bool = False,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT,
    compile_timeout_s: float = 20.0,
) -> TestReport:
    """Run `program` against `tests` in a sandbox; never raises.

    Args:
        program: the source code (Python, or C++ with ``language="cpp"``).
        tests: ``[{"type": "stdio", "input", "output"}, {"type": "assert", "code"}, ...]``, or open-r1's
            ``verification_info`` (``{"language", "test_cases": [{"type": "stdin_stdout", ...}]}``), or its JSON.
        timeout_s: wall-clock limit per test.
        language: overrides the language named by `verification_info` (default Python).
        limits: memory/process/file limits of each test (`SandboxLimits`).
        allow_unsafe: when OS isolation is unavailable, run the program as a plain local subprocess instead
            of refusing. Only for trusted code: the program can then read and write your files.
        max_output_bytes: stdout cap per test, 10 MiB at most (at least 4x the test's stdin is always allowed;
            never derived from the expected output, whose length the cap would reveal). A job's own
            ``max_output_bytes`` key (for example from `verification_info`) takes precedence.
        compile_timeout_s: time limit for compiling a C++ program.

    Example:
        >>> report = run_tests("def add(a, b):\\n    return a + b", [
        ...     {"type": "assert", "code": "assert add(2, 3) == 5"},
        ...     {"type": "assert", "code": "assert add(2, 2) == 5"}])
        >>> report.pass_fraction, [r.outcome.value for r in report.results]
        (0.5, ['passed', 'wrong_answer'])
        >>> run_tests("print(int(input()) * 2)", [{"type": "stdio", "input": "21", "output": "42"}]).pass_fraction
        1.0
    """
    return _run_job({"program": program, "tests": tests, "timeout_s": timeout_s, "language": language},
                    limits or SandboxLimits(), allow_unsafe, max_output_bytes, compile_timeout_s)


def run_tests_batch(
    jobs: list[dict],
    *,
    workers: int | None = None,
    limits: SandboxLimits | None = None,
    allow_unsafe: bool = False,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT,
    compile_timeout_s: float = 20.0,
) -> list[TestReport]:
    """Run many jobs (``{"program", "tests", "timeout_s"?, "language"?}``) over `workers` judges (default:
    `trl_r1.workers.default_workers`, this rank's share of the node's CPUs).

    Threads suffice: each one waits on its own judge process, with the GIL released. Reports come back in order.

    >>> reports = run_tests_batch([{"program": "print(1)", "tests": [{"type": "stdio", "input": "", "output": "1"}]},
    ...                            {"program": "print(2)", "tests": [{"type": "stdio", "input": "", "output": "1"}]}])
    >>> [r.pass_fraction for r in reports]
    [1.0, 0.0]
    """
    from ...workers import default_workers  # here: the judge loads this package on its own, without trl_r1

    limits = limits or SandboxLimits()
    workers = workers or default_workers()
    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=min(workers, len(jobs)), thread_name_prefix="trl-r1-sandbox") as pool:
        return list(pool.map(lambda job: _run_job(job, limits, allow_unsafe, max_output_bytes, compile_timeout_s), jobs))


def _run_job(job: Any, limits: SandboxLimits, allow_unsafe: bool, max_output: int, compile_timeout_s: float) -> TestReport:
    try:
        if not isinstance(job, dict):
            raise ValueError(f"a job must be a mapping, got {type(job).__name__}")
        declared_language, cases = normalize_tests(job.get("tests"))
        language = resolve_language(job.get("language") or declared_language)
        timeout_s = float(job.get("timeout_s") or 5.0)
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        max_output = min(int(job.get("max_output_bytes") or max_output), MAX_OUTPUT_BYTES)
        if not max_output > 0:
            raise ValueError(f"max_output_bytes must be positive, got {max_output}")
    except Exception as exc:
        return TestReport((), f"invalid job: {type(exc).__name__}: {_short(str(exc))}")
    program = job.get("program")
    if not isinstance(program, str) or not program.strip():
        return TestReport(tuple(TestResult(Outcome.ERROR, "no program") for _ in cases), "no program")
    problem = None if allow_unsafe else isolation_problem()
    if problem is not None:
        logger.error("code verifier refuses to run untrusted code: %s (pass allow_unsafe=True to run it unsandboxed)", problem)
        return TestReport(tuple(TestResult(Outcome.ERROR, problem) for _ in cases), f"sandbox unavailable: {problem}")
    problem = memory_problem(limits)
    if problem is not None:
        logger.error("code verifier: %s", problem)
        return TestReport(tuple(TestResult(Outcome.ERROR, problem) for _ in cases), f"verifier error: {problem}")
    request = {"op": "job", "program": program, "language": language.name, "timeout_s": timeout_s,
               "limits": asdict(limits), "unsafe": allow_unsafe and isolation_problem() is not None,
               "max_output": int(max_output), "compile_timeout_s": float(compile_timeout_s)}
    start_budget = START_TIMEOUT_S + (compile_timeout_s if language.compile_command else 0.0) + JUDGE_GRACE_S
    try:
        return TestReport(tuple(_judged(request, cases, start_budget, timeout_s + GRACE_S + JUDGE_GRACE_S)))
    except JudgeUnavailable as exc:  # our side failed before any program ran: not the sample's fault
        logger.error("code verifier: %s", exc)
        return TestReport(tuple(TestResult(Outcome.ERROR, str(exc)) for _ in cases), f"verifier error: {exc}")
    except KeyboardInterrupt:  # a user's Ctrl-C still stops training
        raise
    except BaseException as exc:  # a verifier bug, a SystemExit included, must not reach the trainer
        logger.warning("code verifier failed on a job", exc_info=True)
        return TestReport((), f"verifier error: {type(exc).__name__}: {_short(str(exc))}")


def memory_problem(limits: SandboxLimits) -> str | None:
    """Why the hard memory limits this process inherited (``ulimit -v``/``-d``, a scheduler's cap) are too small
    for the judge or for a test's `limits.memory_mb`; None when they are not.

    No process may raise an inherited hard limit, so the judge and the sandbox lower theirs to it
    (`rlimits.lower_limit`); a program given less memory than its limits promise would fail tests it passes
    elsewhere, so such jobs fail with this reason (a verifier error, not a score) instead.
    """
    tests = "each test is given (SandboxLimits.memory_mb)"
    for kind, name in ((resource.RLIMIT_AS, "address-space (ulimit -v)"), (resource.RLIMIT_DATA, "data (ulimit -d)")):
        hard = resource.getrlimit(kind)[1]
        for needed_mb, whom in ((JUDGE_MIN_MEMORY_MB, "a judge process needs"), (limits.memory_mb, tests)):
            if hard != resource.RLIM_INFINITY and hard < needed_mb << 20:
                return f"the inherited hard {name} limit, {hard >> 20} MiB, is below the {needed_mb} MiB {whom}"
    return None


def _judged(request: dict, cases: list[TestCase], start_budget: float, test_budget: float) -> list[TestResult]:
    """The verdicts of `cases`; a failed judge fails its test, and a fresh one takes the remaining tests."""
    results: list[TestResult] = []
    while len(results) < len(cases):
        remaining = cases[len(results):]
        judge = Judge.acquire()
        try:
            judge.send({**request, "cases": [(c.kind, c.input, c.output, c.code, c.problem) for c in remaining]})
            for _ in remaining:
                results.append(judge.verdict(start_budget, test_budget))
        except JudgeFailed as exc:
            judge.kill()
            results.append(TestResult(Outcome.TIMEOUT if exc.timed_out else Outcome.CRASH, f"the judge {exc}"))
            continue
        except BaseException:
            judge.kill()
            raise
        judge.release()
    return results


# ------------------------------------------------------------------------------------------------ judges
class JudgeUnavailable(RuntimeError):
    """A judge process could not be started (before any program ran)."""


class JudgeFailed(Exception):
    """A judge broke the protocol, died or was late (`timed_out`): the test in progress fails."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


# The judge is loaded from this directory under a private name, with the standard library only (-I):
# the package's __init__ would import more than a judge needs, and trl_r1 may not be importable there.
_JUDGE_BOOT = (
    "import importlib, importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('trl_r1_code_judge', sys.argv[1] + '/__init__.py',"
    " submodule_search_locations=[sys.argv[1]])\n"
    "package = importlib.util.module_from_spec(spec)\nsys.modules[spec.name] = package\n"
    "spec.loader.exec_module(package)\nimportlib.import_module(spec.name + '.judge').main()\n"
)
_OUTCOMES = list(Outcome)


class Judge:
    """The trainer's handle on one judge process: sends it jobs, reads back only fixed-layout verdicts.

    Judges are reused across jobs (an idle pool per trainer process) and killed on any failure.
    """

    _idle: list["Judge"] = []
    _lock = threading.Lock()

    def __init__(self):
        config = {"memory_mb": JUDGE_MEMORY_MB, "seccomp": None if isolation_problem() else seccomp_program()}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-c", _JUDGE_BOOT, str(Path(__file__).resolve().parent)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={}, cwd="/",
                start_new_session=True, close_fds=True)
        except OSError as exc:
            raise JudgeUnavailable(f"cannot start a judge process: {exc}") from None
        self.owner = os.getpid()
        self._in, self._out = self.process.stdin.fileno(), self.process.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        try:
            self.send(config)
            if self._read(VERDICT_HEADER.size, time.monotonic() + JUDGE_START_TIMEOUT_S)[1] != STARTED:
                raise JudgeFailed("did not start")
        except JudgeFailed as exc:
            self.kill()
            raise JudgeUnavailable(f"the judge process {exc}") from None

    @classmethod
    def acquire(cls) -> "Judge":
        with cls._lock:
            while cls._idle:
                judge = cls._idle.pop()
                if judge.owner == os.getpid() and judge.process.poll() is None:
                    return judge
        return cls()

    def release(self) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE_JUDGES and self.owner == os.getpid() and self._rss_mb() < JUDGE_IDLE_RSS_MB:
                self._idle.append(self)
                return
        self.kill()

    def _rss_mb(self) -> float:
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return float("inf")
        return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0.0)

    def send(self, message: dict) -> None:
        """A trusted message (the trainer's own data); a judge that does not take it in time has failed."""
        view = memoryview(frame(marshal.dumps(message, 4)))
        deadline = time.monotonic() + START_TIMEOUT_S + JUDGE_GRACE_S  # it may still be closing its last sandbox
        with selectors.DefaultSelector() as selector:
            selector.register(self._in, selectors.EVENT_WRITE)
            while view:
                if not selector.select(max(0.0, deadline - time.monotonic())) and time.monotonic() >= deadline:
                    raise JudgeFailed("did not take the job in time", timed_out=True)
                try:
                    view = view[os.write(self._in, view):]
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise JudgeFailed(f"did not take the job ({type(exc).__name__})") from None

    def verdict(self, start_budget: float, test_budget: float) -> TestResult:
        """The next test's verdict: the judge has `start_budget` s to start the test, then `test_budget` s."""
        deadline = time.monotonic() + start_budget
        while True:
            try:
                code, detail_size, stderr_size, wall = unpack_verdict_header(self._read(VERDICT_HEADER.size, deadline))
            except ValueError:
                raise JudgeFailed("sent a malformed verdict") from None
            if code == STARTED and not detail_size and not stderr_size:
                deadline = time.monotonic() + test_budget
                continue
            if code >= len(_OUTCOMES):
                raise JudgeFailed("sent a malformed verdict")
            body = self._read(detail_size + stderr_size, deadline)
            return TestResult(_OUTCOMES[code], body[:detail_size].decode("utf-8", "replace"),
                              body[detail_size:].decode("utf-8", "replace"), wall)

    def _read(self, size: int, deadline: float) -> bytes:
        """Exactly `size` bytes (at most a verdict's) before `deadline`."""
        data = bytearray()
        with selectors.DefaultSelector() as selector:
            selector.register(self._out, selectors.EVENT_READ)
            while len(data) < size:
                if not selector.select(max(0.0, deadline - time.monotonic())) and time.monotonic() >= deadline:
                    raise JudgeFailed("did not answer in time", timed_out=True)
                try:
                    chunk = os.read(self._out, size - len(data))
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise JudgeFailed(f"went away ({type(exc).__name__})") from None
                if not chunk:
                    raise JudgeFailed("exited")
                data += chunk
        return bytes(data)

    def kill(self) -> None:
        """End the judge; its sandboxes die with it (bwrap's --die-with-parent, then the PID namespace)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.process.wait()


@atexit.register
def close_idle_judges() -> None:
    """End the idle judge processes (they also end when the trainer process does)."""
    with Judge._lock:
        idle, Judge._idle[:] = list(Judge._idle), []
    for judge in idle:
        if judge.owner == os.getpid():
            judge.kill()
