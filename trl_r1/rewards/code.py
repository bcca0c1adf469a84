"""R1's accuracy reward for code: run the completion's program against the sample's tests in a sandbox."""

from __future__ import annotations

import json
import re
from collections import Counter

from ..completion import Completion
from ..verifiers.code import (
    DEFAULT_MAX_OUTPUT,
    SandboxLimits,
    TestReport,
    normalize_tests,
    resolve_language,
    run_tests_batch,
)
from ..verifiers.format import extract_answer
from .base import DEFAULT_MAX_CHARS, RewardFunction, Score

TEST_COLUMNS = ("verification_info", "tests")
_FENCE_TAG = re.compile(r"[ \t]*([\w+#.-]*)")
_LANGUAGE_TAGS = {"python": {"python", "python3", "py", "py3"}, "cpp": {"cpp", "c++", "cxx", "cc", "cpp17", "c++17"}}


def extract_program(text: str, language: str = "python") -> str | None:
    """The program in a completion: the last fenced block of `language` (or untagged) in the answer part.

    The answer part is what `extract_answer` returns (the last ``<answer>`` block, else the text after
    ``</think>``). When it holds no such block, the last one anywhere in the completion counts, so models
    that answer with a bare code block after thinking still get scored. Unclosed fences do not count.

    >>> extract_program("<think>try ```python\\nprint(0)\\n```</think><answer>```python\\nprint(1)\\n```</answer>")
    'print(1)\\n'
    >>> extract_program("Here:\\n```py\\nprint(2)\\n```\\nand a C++ one\\n```cpp\\nint main(){}\\n```")
    'print(2)\\n'
    >>> extract_program("no code") is None
    True
    """
    if not isinstance(text, str):
        return None
    tags = _LANGUAGE_TAGS.get(resolve_language(language).name, set()) | {""}
    for part in (extract_answer(text), text):
        blocks = [code for tag, code in _fenced_blocks(part) if tag.lower() in tags]
        if blocks:
            return blocks[-1]
    return None


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(tag, body) of each closed fenced block, in linear time (``str.find`` only).

    The same blocks as ``re.findall(r"```[ \\t]*([\\w+#.-]*)[^\\n]*\\n(.*?)```", text, re.DOTALL)``, which
    backtracks quadratically on a long fence line without a newline (seconds of trainer CPU per completion).
    """
    blocks = []
    position = 0
    while True:
        start = text.find("```", position)
        line_end = text.find("\n", start + 3) if start >= 0 else -1
        end = text.find("```", line_end + 1) if line_end >= 0 else -1
        if end < 0:  # no later fence can close either
            return blocks
        blocks.append((_FENCE_TAG.match(text, start + 3, line_end).group(1), text[line_end + 1: end]))
        position = end + 3


class CodeReward(RewardFunction):
    """Fraction of the sample's tests the completion's program passes, run in an OS sandbox.

    The tests come from the ``verification_info`` column (open-r1's ``{"language", "test_cases"}``, as a
    mapping or JSON text) or a ``tests`` column (``[{"type": "stdio", "input", "output"}, {"type": "assert",
    "code"}]``). The program is the last fenced code block of the answer part (see `extract_program`).
    A sample without tests, or with an unusable one (no output, unknown type), is skipped (None); one without a
    code block scores 0.0. All programs of a batch
    run in parallel over `workers` sandboxes; failure kinds (timeout, crash, ...) are logged per sample.

    Args:
        binary: 1.0 only when every test passes, else 0.0 (open-r1's ``binary_code_reward``).
        timeout_s: wall-clock limit per test (a ``timeout_s`` in `verification_info` takes precedence).
        workers: parallel judges/sandboxes (default: `trl_r1.workers.default_workers()`, this rank's CPUs).
        language: language of samples whose tests do not name one.
        limits: memory/process/file limits of each test.
        allow_unsafe: run unsandboxed when isolation is unavailable (trusted code only). Otherwise such
            samples are skipped with the reason, and the error is logged.
        max_output_bytes: stdout cap per test (default 8 MiB, at most 10 MiB; a ``max_output_bytes`` in
            `verification_info` takes precedence). It never depends on the expected output.
        max_chars: completions longer than this many characters score 0.0 unread, with the reason (default
            `DEFAULT_MAX_CHARS`, 262,144: 64k tokens; None: no cap). Part of the 2 s bound of `trl_r1.rewards.base`.

    Example:
        >>> completion = "<think>add them</think><answer>```python\\nprint(sum(map(int, input().split())))\\n```</answer>"
        >>> info = {"language": "python", "test_cases": [{"type": "stdin_stdout", "input": "1 2", "output": "3"},
        ...                                               {"type": "stdin_stdout", "input": "2 2", "output": "5"}]}
        >>> code_reward(completions=[completion, "no code", completion], verification_info=[info, info, None])
        [0.5, 0.0, None]
    """

    __name__ = "code_reward"
    reference_columns = TEST_COLUMNS
    code_in_reasoning_ok = True  # a row with tests is a code task: code may appear in its reasoning

    def __init__(self, binary: bool = False, timeout_s: float = 5.0, workers: int | None = None,
                 language: str = "python", limits: SandboxLimits | None = None, allow_unsafe: bool = False,
                 max_output_bytes: int = DEFAULT_MAX_OUTPUT, max_chars: int | None = DEFAULT_MAX_CHARS):
        self.max_chars = max_chars
        self.binary = binary
        self.max_output_bytes = max_output_bytes
        self.timeout_s = timeout_s
        self.workers = workers
        self.language = resolve_language(language).name
        self.limits = limits
        self.allow_unsafe = allow_unsafe
        self.needs_sandbox = not allow_unsafe
        if binary:
            self.__name__ = "binary_code_reward"

    def score_batch(self, samples: list[Completion]) -> list[Score]:
        scores: list[Score | None] = [None] * len(samples)
        jobs, owners = [], []
        for i, sample in enumerate(samples):
            job = self.bounded(self._job, sample)  # the completion's parse, within the reward's time limit
            if isinstance(job, Score):
                scores[i] = job
            else:
                jobs.append(job)
                owners.append(i)
        reports = run_tests_batch(jobs, workers=self.workers, limits=self.limits, allow_unsafe=self.allow_unsafe,
                                  max_output_bytes=self.max_output_bytes)
        for i, report in zip(owners, reports):
            scores[i] = self._score(report)
        return scores

    def _job(self, sample: Completion) -> dict | Score:
        """The sandbox job for a sample, or its Score when there is nothing to run."""
        raw = next((sample.columns[c] for c in TEST_COLUMNS if sample.columns.get(c) is not None), None)
        if raw is None:
            return Score(None, "no tests")
        try:
            if isinstance(raw, (str, bytes)):  # JSON text: parsed here too, for its `timeout_s`
                raw = json.loads(raw)
            declared, cases = normalize_tests(raw)
            language = resolve_language(declared or self.language).name
        except (ValueError, TypeError) as exc:
            return Score(None, f"bad tests: {exc}")
        if not cases:
            return Score(None, "no tests")
        broken = next((case.problem for case in cases if case.problem), None)
        if broken:  # a test that cannot run is the row's fault: scoring it as failed would blame the sample
            return Score(None, f"bad tests: {broken}")
        program = extract_program(sample.text, language)
        if program is None:
            return Score(0.0, "no code block")
        if not program.strip():  # the verifier reports "no program" as an error (None): the sample's fault here
            return Score(0.0, "empty code block")
        settings = raw if isinstance(raw, dict) else {}
        return {"program": program, "tests": raw, "language": language, "timeout_s": settings.get("timeout_s", self.timeout_s),
                "max_output_bytes": settings.get("max_output_bytes")}

    def _score(self, report: TestReport) -> Score:
        if report.error is not None:
            return Score(None, report.error)
        value = (1.0 if report.all_passed else 0.0) if self.binary else report.pass_fraction
        failures = Counter({k: v for k, v in report.outcome_counts.items() if k != "passed"})
        if not failures:
            return Score(value)
        kinds = ", ".join(f"{kind} x{count}" for kind, count in failures.most_common())
        return Score(value, f"{failures.most_common(1)[0][0]}: {kinds} of {len(report.results)} tests")


code_reward = CodeReward()
