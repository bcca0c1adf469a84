"""Math answer verification: is the final answer of a completion equivalent to the gold answer?

`verify(gold, completion)` reads the completion's committed final answer (answer block, else last ``\\boxed{}``,
else "the answer is ..."; hedged or multi-valued answers are wrong; with ``answer_policy="bare"``, the default
here, also a completion that is nothing but an answer or closes with an answer line, see `extraction`), settles plain numbers, choice letters, text
answers, identical forms and exact arithmetic (see `exact`) in the calling process, and sends the rest to sympy in
worker processes under a hard CPU-time and wall-clock limit (see `pool`). Inputs that would make sympy run away are recognised by rule and compared as
text (see `screening.pathology`). `verify_batch` checks many pairs in parallel. A sympy verdict is remembered
(`DECIDED_TASKS` distinct tasks), so an answer a GRPO group or a later epoch repeats is not parsed again.

>>> verify(r"\\frac{\\pi}{4}", r"<think>...</think> So the angle is \\boxed{\\dfrac{\\pi}{4}}.")
True
>>> verify("72", "Natalia sold 72 clips. The answer is 72.")
True
>>> verify("(1,-2)", r"The answer is \\boxed{(1,-2)} or \\boxed{(1,2)}")
False
>>> verify("", "The answer is 1") is None
True
>>> verify("-5", "-5"), verify("-5", "-5", answer_policy="marked")  # a bare answer: graded, not an RL reward
(True, False)
>>> verify("9", "Adding 4 and 5 gives 9 apples.")  # a number in prose is never the answer
False
>>> verify("16", "<answer>4 + 3 + 9</answer>"), verify("16", "<answer>4 + 3 + 9</answer>", answer_policy="marked")
(True, False)
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ...workers import default_workers
from .exact import arithmetic_only
from .extraction import ANSWER_POLICIES, Answer, final_answer, gold_answer
from .pool import WorkerPool
from .screening import (
    APPROXIMATIONS,
    asked_places,
    canonical,
    closed_at_infinity,
    false_chain,
    indeterminate,
    parse_number,
    plain_calculation,
    quick_verdict,
    repeating_decimal,
    strip_assignment,
    unevaluated_arithmetic,
    units_differ,
)

logger = logging.getLogger("trl_r1.verifiers.math")

DEFAULT_TIMEOUT_S = 1.5  # hard limit of one sympy check in worker CPU seconds (the worker is killed past it)
MAX_WALL_S = 1.8  # and in wall-clock seconds (or the CPU limit if larger): on a loaded machine too, no verdict takes
# 2 s; a check starved of CPU past it fails (the price of the latency bound; the CPU limit alone let a check take 7.7 s)
DECIDED_TASKS = 8_192  # sympy verdicts remembered (a few MB at most: tasks are short canonical texts)
MAX_CACHED_GOLD_CHARS = 10_000  # a longer gold (a whole solution) is read each time, not kept
MAX_ANSWER_CHARS = 5_000  # a longer "final answer" is an essay, not an answer: wrong without reading it


@dataclass(frozen=True)
class Verdict:
    """Whether an answer is equivalent to the gold (None: the gold is unusable), and why, for rule-based outcomes."""

    equivalent: bool | None
    reason: str | None = None


def verify(
    gold: str, completion: str, timeout_s: float = DEFAULT_TIMEOUT_S, answer_policy: str = "bare",
    approximations: str = "reject", question: str | None = None,
) -> bool | None:
    """Whether the completion's final answer is equivalent to `gold`; None when the gold is unusable.

    `answer_policy` is "bare" (default: grading; an unmarked completion that is only an answer counts) or
    "marked" (R1 rewards: the answer must be in an answer block, a box or an answer statement, and be a result:
    a calculation on plain numbers, ``4 + 3 + 9`` for 16, is equivalent but restates the question, which a policy
    learns to exploit, so it scores 0 with its reason).

    `approximations` decides a decimal answer for an exact gold it does not equal (``1.414`` for ``\\sqrt{2}``,
    ``0.3563`` for ``0.35625``): "reject" (default: wrong, as in math-verify; a policy rewarded for it learns to
    approximate instead of solving) or "rounded" (right when correctly rounded with at least 4 significant digits,
    for datasets whose golds are themselves rounded). A `question` that asks for rounding ("to the nearest
    hundredth", "to 3 decimal places") is obeyed: the decimal must be the gold rounded to exactly those places.
    """
    return check(gold, completion, timeout_s, answer_policy, approximations, question).equivalent


def verify_batch(
    pairs: Iterable[tuple[str, str]], workers: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
    answer_policy: str = "bare", approximations: str = "reject", questions: Sequence[str | None] | None = None,
) -> list[bool | None]:
    """`verify` for many (gold, completion) pairs, the sympy checks in parallel on `workers` processes."""
    return [v.equivalent for v in check_batch(pairs, workers, timeout_s, answer_policy, approximations, questions)]


def check(
    gold: str, completion: str, timeout_s: float = DEFAULT_TIMEOUT_S, answer_policy: str = "bare",
    approximations: str = "reject", question: str | None = None,
) -> Verdict:
    """`verify` with the reason for rule-based outcomes (no answer, hedge, unusable gold, timeout)."""
    return check_batch([(gold, completion)], None, timeout_s, answer_policy, approximations, [question])[0]


def check_batch(
    pairs: Iterable[tuple[str, str]], workers: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
    answer_policy: str = "bare", approximations: str = "reject", questions: Sequence[str | None] | None = None,
) -> list[Verdict]:
    """Verdicts for many (gold, completion) pairs (`questions`: the prompt of each, read for a rounding it asks
    for; see `verify`); identical sympy checks run once."""
    _check_options(answer_policy, approximations)
    prepared = [prepare_check(gold, completion, answer_policy, approximations,
                              questions[index] if questions is not None and index < len(questions) else None)
                for index, (gold, completion) in enumerate(pairs)]
    return finish_checks(prepared, workers, timeout_s)


SympyTask = tuple[str, str, str | int]  # canonical (gold, answer, approximations) that only sympy can decide


def prepare_check(
    gold: str, completion: str, answer_policy: str = "bare", approximations: str = "reject",
    question: str | None = None,
) -> Verdict | SympyTask:
    """The in-process part of `check`: a verdict decided without sympy, or the task `finish_checks` sends to a
    worker. Split out so that a caller can bound this part per pair (`trl_r1.rewards.math` runs it under the
    reward's time limit, on any thread); never raises for any text."""
    _check_options(answer_policy, approximations)
    asked = asked_places(question) if question is not None else None
    try:
        return _prepare(gold, completion, answer_policy, approximations if asked is None else asked)
    except Exception as exc:  # a bug the input found: that pair fails with its reason, never the batch
        logger.warning("math verifier error on one pair: %s: %s", type(exc).__name__, exc)
        return Verdict(False, f"verifier error: {type(exc).__name__}")


def finish_checks(
    prepared: Sequence[Verdict | SympyTask], workers: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> list[Verdict]:
    """The verdicts of `prepare_check`'s results: its own verdicts as they are, the sympy tasks decided in the worker
    pool (identical ones once), each within `timeout_s` CPU seconds and `max(timeout_s, MAX_WALL_S)` wall-clock."""
    verdicts: list[Verdict | None] = []
    tasks: dict[SympyTask, list[int]] = {}
    for index, item in enumerate(prepared):
        if isinstance(item, Verdict):
            verdicts.append(item)
        else:
            verdicts.append(None)
            tasks.setdefault(item, []).append(index)
    for task in list(tasks):
        known = _decided.get(task)  # decided by an earlier call
        if known is not None:
            for index in tasks.pop(task):
                verdicts[index] = known
    if tasks:
        outcomes = _pool(workers).run(list(tasks), timeout_s, wall_limit_s=max(timeout_s, MAX_WALL_S))
        for task, indices, (status, value) in zip(tasks, tasks.values(), outcomes):
            verdict = Verdict(*value) if status == "ok" else Verdict(False, f"{status}: {value}")
            if status == "ok":  # a timeout depends on the load, and is not remembered
                _decided.put(task, verdict)
            for index in indices:
                verdicts[index] = verdict
    for verdict in verdicts:
        if verdict.reason and verdict.equivalent is None:
            logger.info("math gold unusable: %s", verdict.reason)
    return verdicts


def _check_options(answer_policy: str, approximations: str) -> None:
    if answer_policy not in ANSWER_POLICIES:
        raise ValueError(f"answer_policy must be one of {ANSWER_POLICIES}, got {answer_policy!r}")
    if approximations not in APPROXIMATIONS:
        raise ValueError(f"approximations must be one of {APPROXIMATIONS}, got {approximations!r}")


def _prepare(gold: str, completion: str, answer_policy: str, approximations: str | int) -> Verdict | SympyTask:
    """A verdict decided without sympy, or the canonical (gold, answer, approximations) task that needs it."""
    gold_part, gold_canonical = _read_gold(gold) if isinstance(gold, str) and len(gold) <= MAX_CACHED_GOLD_CHARS else (
        _read_gold.__wrapped__(gold))
    if gold_part.text is None:
        return Verdict(None, gold_part.reason)
    allow_or = re.search(r"\bor\b", gold_part.text) is not None
    answer = final_answer(completion, allow_or=allow_or, policy=answer_policy)
    if answer.text is None:
        return Verdict(False, answer.reason)
    if len(answer.text) > MAX_ANSWER_CHARS and not arithmetic_only(answer.text):  # a long sum is still a value
        return Verdict(False, "answer too long")
    units = units_differ(gold_part.parts or gold_part.text, answer.parts or answer.text)  # part by part
    if units:
        return Verdict(False, f"units differ: {units}")
    answer_canonical = canonical(answer.text)
    if false_chain(answer_canonical):
        return Verdict(False, "an equation chain with two different values")
    gold_text, answer_text = strip_assignment(gold_canonical, answer_canonical)
    if indeterminate(answer_text) and not indeterminate(gold_text):
        return Verdict(False, "indeterminate form")
    if closed_at_infinity(answer_text) and not closed_at_infinity(gold_text):
        return Verdict(False, "an interval closed at infinity")
    if answer_policy == "marked" and not repeating_decimal(answer.text) and _calculation(gold_text, answer_text):
        return Verdict(False, "unevaluated arithmetic: the answer is a calculation, not its result")
    equivalent, reason = quick_verdict(gold_text, answer_text, approximations)
    if equivalent is not None:
        return Verdict(equivalent, reason)
    return gold_text, answer_text, approximations


@lru_cache(maxsize=1024)
def _read_gold(gold: object) -> tuple[Answer, str | None]:
    """The gold's answer and its canonical text, read once per gold string: a GRPO group shares one gold."""
    part = gold_answer(gold)
    return part, None if part.text is None else canonical(part.text)


def _calculation(gold_text: str, answer_text: str) -> bool:
    """Whether the answer is a calculation where the gold is one number: against an integer or a fraction any
    calculation on numbers (`screening.unevaluated_arithmetic`); against a decimal or a percentage, an
    approximation that an exact form such as ``\\sqrt{2}`` or ``\\frac{\\pi}{2}`` legitimately answers, only
    the four operations and powers (`screening.plain_calculation`)."""
    number = parse_number(re.sub(r"^\((.*)\)$", r"\1", gold_text))
    if number is None:
        return False
    exact = number.decimals is None and not number.percent
    return unevaluated_arithmetic(answer_text) if exact else plain_calculation(answer_text)


class _DecidedTasks:
    """The sympy verdicts of the last `size` distinct tasks, so a task seen again costs no worker round trip and no
    parse: a GRPO group shares one gold and often one answer (identical tasks within one call run once anyway),
    and every epoch asks the same prompts again. Thread-safe; a verdict is a pure function of its task."""

    def __init__(self, size: int):
        self.size = size
        self._verdicts: OrderedDict[SympyTask, Verdict] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, task: SympyTask) -> Verdict | None:
        with self._lock:
            verdict = self._verdicts.get(task)
            if verdict is not None:
                self._verdicts.move_to_end(task)
            return verdict

    def put(self, task: SympyTask, verdict: Verdict) -> None:
        with self._lock:
            self._verdicts[task] = verdict
            if len(self._verdicts) > self.size:
                self._verdicts.popitem(last=False)


_decided = _DecidedTasks(DECIDED_TASKS)
_pools: dict[int, WorkerPool] = {}
_pools_lock = threading.Lock()


def _pool(workers: int | None) -> WorkerPool:
    """The shared pool with this many workers (started on first use, reused by every later call)."""
    size = workers or default_workers(share=0.5, cap=8)  # sympy checks share this rank's CPUs with the trainer
    with _pools_lock:
        if size not in _pools:
            _pools[size] = WorkerPool(
                f"{__name__}.equivalence:verdict", size, warm_up=f"{__name__}.warm_up:warm_parser"
            )
        return _pools[size]


__all__ = ["ANSWER_POLICIES", "APPROXIMATIONS", "Verdict", "verify", "verify_batch", "check", "check_batch",
           "prepare_check", "finish_checks", "SympyTask", "final_answer", "gold_answer", "DEFAULT_TIMEOUT_S"]
