"""Sandboxed code-test verifier: run untrusted programs against stdio/assert tests, isolated by the OS.

See ``docs/code_reward.md`` for the test formats, the security model and the limits.
"""

from .languages import Language, resolve_language
from .runner import (
    DEFAULT_MAX_OUTPUT,
    Outcome,
    TestCase,
    TestReport,
    TestResult,
    normalize_tests,
    outputs_match,
    run_tests,
    run_tests_batch,
)
from .sandbox import SandboxLimits, SandboxUnavailable, isolation_problem

__all__ = [
    "run_tests", "run_tests_batch", "TestReport", "TestResult", "TestCase", "Outcome", "SandboxLimits",
    "SandboxUnavailable", "isolation_problem", "normalize_tests", "outputs_match", "Language", "resolve_language",
    "DEFAULT_MAX_OUTPUT",
]
