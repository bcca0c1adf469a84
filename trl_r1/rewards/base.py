"""The reward protocol shared by every trl-r1 reward.

TRL's `GRPOTrainer` / `RLOOTrainer` call a reward with keyword arguments only: `prompts`, `completions`,
`completion_ids`, every dataset column (one entry per completion), `trainer_state`, `log_extra` and
`log_metric`. Completions are plain strings (standard datasets) or a list of messages whose assistant turn
may carry the reasoning in a separate `reasoning_content` / `thinking` field (tokenizers with a response
schema). `RewardFunction` turns that into a list of `trl_r1.completion.Completion`s, asks the subclass for
one `Score` per sample, and guarantees what a training run needs:

* it never raises: a failure while scoring one sample (any `BaseException`, `SystemExit`, `GeneratorExit`,
  `RecursionError`, `MemoryError` and `UnicodeError` included, but `KeyboardInterrupt`: a user's Ctrl-C still
  stops training) scores that sample 0.0, as the sample caused it; `None` means only that the reward does not
  apply (no gold, no tests, no target language);
* it is bounded (issue 36): a sample's score arrives within `BOUND_S` (2 s) on one core, or it is 0.0 with the
  reason. One mechanism serves every reward: a completion longer than `max_chars` (`DEFAULT_MAX_CHARS`, an option
  of every reward) scores 0.0 unread; lone surrogates (undecodable bytes) become ``?`` before any verifier sees the
  text; and the reward's own in-process work on one sample (`score`, or what a batch reward runs through
  `bounded`) is stopped at `time_limit_s` (`DEFAULT_TIME_LIMIT_S`) on whatever thread calls the reward (`time_limit`:
  a SIGALRM timer in the main thread, a timer thread raising in the scoring thread elsewhere). Work in other processes is
  bounded there: sympy checks in killed workers, programs by the sandbox's limits;
* it never scores silently: every `None` (skip) and every rule-based 0.0 carries a reason, which is counted
  in the Python log, sent to TRL's metrics as `<name>/skipped` and shown in the completions table. A failure
  (error, time limit, size cap) is logged at WARNING the first time its kind is seen, then at DEBUG, and so is a
  batch the reward cannot score at all (none of its reference columns), with the columns seen and the key that
  fixes it;
* it is picklable (a plain class, no closures), as TRL's async trainer sends rewards to other processes.
"""

from __future__ import annotations

import ctypes
import logging
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ..completion import Completion

logger = logging.getLogger("trl_r1.rewards")

BOUND_S = 2.0  # issue 36: every reward's score of one completion arrives within this, on one core
# R1 generates at most 32,768 tokens; 262,144 characters is 64k tokens at 4 characters a token. Longer text is a
# degenerate sample (a repetition loop) or an attack, and the pure-Python parsers stay well inside BOUND_S below it.
DEFAULT_MAX_CHARS = 262_144
DEFAULT_TIME_LIMIT_S = 1.5  # the in-process part of one sample; BOUND_S leaves 0.5 s for the batch's overhead
_T = TypeVar("_T")

@dataclass(frozen=True)
class Score:
    """One sample's verdict: `value` is a float, or None when the reward does not apply to the sample."""

    value: float | None
    reason: str | None = None  # why the sample was skipped or scored by a fallback rule
    failed: bool = False  # the sample broke the reward (error, time limit, size cap): 0.0, logged at WARNING once


class ScoreTimeLimit(BaseException):
    """Raised by `time_limit` inside a reward's own code when one sample's scoring runs past its limit (a
    BaseException, so that a verifier's ``except Exception`` cannot swallow it)."""


def failure(reason: str) -> Score:
    """The 0.0 of a sample that broke the reward's bound or raised, with its reason."""
    return Score(0.0, reason[:200], failed=True)


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise `ScoreTimeLimit` in the body once `seconds` of wall-clock time have passed, on any thread.

    In the main thread on POSIX a SIGALRM timer, which Python also checks inside the regex engine. Elsewhere (TRL's
    async rewards run on its event-loop thread, a user may score from a thread pool), or when a handler Python did
    not install holds SIGALRM, a timer thread raises the exception in the scoring thread (`_thread_time_limit`),
    which Python checks between bytecodes: pure-Python parsing stops in time, one long C call finishes first. An
    outer SIGALRM timer (pytest-timeout, a caller's own limit) is kept: when it is due first it is left alone,
    otherwise it is re-armed with its remaining time afterwards.

    >>> with time_limit(0.05):
    ...     while True:
    ...         pass
    Traceback (most recent call last):
    ...
    trl_r1.rewards.base.ScoreTimeLimit: over the 0.05 s time limit
    """
    if seconds is None:
        yield
        return
    if (not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGALRM) is None):
        with _thread_time_limit(seconds):
            yield
        return
    outer_delay, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if outer_delay and outer_delay <= seconds:  # the outer timer fires first anyway
        yield
        return
    armed = True

    def expire(signum: int, frame: object) -> None:
        if armed:
            raise ScoreTimeLimit(f"over the {seconds:g} s time limit")

    start = time.monotonic()
    outer_handler = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, outer_handler)
        if outer_delay:
            signal.setitimer(signal.ITIMER_REAL, max(outer_delay - (time.monotonic() - start), 1e-3), outer_interval)


@contextmanager
def _thread_time_limit(seconds: float) -> Iterator[None]:
    """`time_limit` for any thread: a `threading.Timer` makes CPython raise `ScoreTimeLimit` in this thread
    (``PyThreadState_SetAsyncExc``). A lock orders the timer against the body's end, so an exception the timer set
    that has not been raised yet is withdrawn there and never surfaces after the limited block."""
    thread_id = ctypes.c_ulong(threading.get_ident())
    lock = threading.Lock()
    state = {"armed": True, "fired": False}

    def expire() -> None:
        with lock:
            if state["armed"]:
                state["fired"] = True
                _set_async_exc(thread_id, ctypes.py_object(ScoreTimeLimit))

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    try:
        timer.start()  # inside the try: a short limit can expire before start() returns
        yield
    except ScoreTimeLimit as exc:
        if exc.args:  # an inner limit's own, with its message
            raise
        raise ScoreTimeLimit(f"over the {seconds:g} s time limit") from None
    finally:
        with lock:
            state["armed"] = False
            if state["fired"]:
                _set_async_exc(thread_id, None)  # withdraw it if still pending (a no-op once raised)
        timer.cancel()


_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc


class RewardFunction:
    """Base class of trl-r1's rewards: TRL's keyword call in, `list[float | None]` out, never raises.

    Subclasses set `__name__` (the name TRL shows in `rewards/<name>/mean`) and implement `score_batch`
    (or `score` for one sample at a time). They also declare what they are, so that the pipeline and the
    dataset builders ask instead of testing classes or names:

    * `role`: "correctness" (verifies the answer: math, code), "format" (the think/answer structure) or
      "style" (how the reasoning reads: language consistency). A builder accepts a sample only when some
      correctness reward scored it.
    * `required_columns`: dataset columns without which the reward cannot apply (a sample missing one is
      skipped with that reason); `reference_columns`: columns it reads its reference from, any one will do.
    * `code_in_reasoning_ok`: a sample this reward scores is a code task, so code blocks in its reasoning are
      fine (R1's readability filter drops them elsewhere).
    * `think_prefill_option`: the reward takes a `think_prefilled` option, which the pipeline sets when the chat
      template prefills ``<think>``.
    * `needs_sandbox`: the reward runs programs in the OS sandbox (the preflight checks that it works here).

    Plain functions passed as rewards have none of these and count as correctness rewards (`declared`).
    """

    __name__: ClassVar[str] = "reward"
    role: ClassVar[str] = "correctness"
    required_columns: ClassVar[tuple[str, ...]] = ()
    reference_columns: tuple[str, ...] = ()
    reference_option: ClassVar[str | None] = None  # the option that names the reference column, for warnings
    code_in_reasoning_ok: ClassVar[bool] = False
    think_prefill_option: ClassVar[bool] = False
    needs_sandbox: bool = False
    max_chars: int | None = DEFAULT_MAX_CHARS  # longer completions score 0.0 unread (None: no cap)
    time_limit_s: float | None = DEFAULT_TIME_LIMIT_S  # in-process time per sample (see `time_limit`)

    def warm_up(self) -> None:
        """Load what scoring needs once per process (tables, models), before the first sample's time limit starts;
        called on every call, so it must be cached. The default loads nothing."""

    def score(self, sample: Completion) -> Score:  # pragma: no cover - subclasses override one of the two
        raise NotImplementedError

    def score_batch(self, samples: list[Completion]) -> list[Score]:
        """Score many samples; override to batch work (worker pools). The default scores one at a time."""
        return [self._safe_score(s) for s in samples]

    def bounded(self, function: Callable[..., _T], *args: Any, timed: bool = True) -> _T | Score:
        """``function(*args)`` for one sample within `time_limit_s` (unless not `timed`), or that sample's failure
        Score (time limit or any exception but KeyboardInterrupt). Batch rewards run their per-sample parsing
        through it."""
        try:
            with time_limit(self.time_limit_s if timed else None):
                return function(*args)
        except KeyboardInterrupt:
            raise
        except ScoreTimeLimit as exc:
            return failure(f"time limit: {exc}")
        except BaseException as exc:  # a sample that breaks the reward costs that sample, never the run
            logger.debug("%s failed on a sample", self.__name__, exc_info=True)
            return failure(f"error: {type(exc).__name__}: {exc}")

    def _safe_score(self, sample: Completion) -> Score:
        """One sample's Score, never raising: `score` within the time limit, or a batch of one for rewards that
        implement only `score_batch` (so a batch that failed still isolates the sample that broke it; their
        out-of-process work has its own limits, and a timer must not interrupt a worker pool's bookkeeping)."""
        if type(self).score is RewardFunction.score and type(self).score_batch is not RewardFunction.score_batch:
            return self.bounded(self._score_alone, sample, timed=False)
        return self.bounded(self.score, sample)

    def _score_alone(self, sample: Completion) -> Score:
        """A batch of one."""
        (scored,) = self.score_batch([sample])
        return scored

    def __call__(self, prompts=None, completions=None, completion_ids=None, **kwargs) -> list[float | None]:
        log_metric = kwargs.pop("log_metric", None)
        log_extra = kwargs.pop("log_extra", None)
        kwargs.pop("trainer_state", None)
        kwargs.pop("environments", None)
        completions = list(completions) if completions is not None else []
        n = len(completions)
        self._check_columns(kwargs, n)
        samples: list[Completion | None] = []
        early: dict[int, Score] = {}
        for i, completion in enumerate(completions):
            try:
                sample = Completion.from_trl(completion, prompt=_item(prompts, i),
                                             completion_ids=_item(completion_ids, i),
                                             columns={k: _item(v, i) for k, v in kwargs.items()})
            except TypeError as exc:
                samples.append(None)
                early[i] = Score(None, f"bad completion: {exc}")
                continue
            missing = [c for c in self.required_columns if sample.columns.get(c) is None]
            if missing:
                early[i] = Score(None, f"missing column {missing[0]!r}")
            elif (oversize := self._oversize(sample)) is not None:
                early[i] = oversize
            samples.append(sample)
        todo = [i for i in range(n) if i not in early]
        try:
            if todo:
                self.warm_up()
            scored = self.score_batch([samples[i] for i in todo]) if todo else []
            if len(scored) != len(todo):
                raise RuntimeError(f"score_batch returned {len(scored)} scores for {len(todo)} samples")
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            self._log_once(f"batch failed: {type(exc).__name__}", f"{self.__name__}: batch scoring failed "
                           f"({type(exc).__name__}: {exc}), scoring samples one by one", exc_info=True)
            scored = [self._safe_score(samples[i]) for i in todo]
        results = dict(early)
        results.update(zip(todo, scored))
        scores = [_checked(results[i]) for i in range(n)]
        self._report(scores, log_metric, log_extra)
        return [s.value for s in scores]

    def _oversize(self, sample: Completion) -> Score | None:
        """The failure of a completion over `max_chars`; otherwise None, after replacing lone surrogates (text
        decoded with ``surrogateescape``, or a broken tokenizer) with ``?``, which no encoder downstream accepts."""
        size = len(sample.content) + len(sample.reasoning or "")
        if self.max_chars is not None and size > self.max_chars:
            return failure(f"too long: {size} characters over the reward's max_chars={self.max_chars}")
        sample.content = _encodable(sample.content)
        if sample.reasoning is not None:
            sample.reasoning = _encodable(sample.reasoning)
        return None

    def _check_columns(self, columns: dict[str, Any], n: int) -> None:
        """Warn (once per set of columns) when the batch has none of the columns the reward reads its reference
        from, or lacks a required one: the reward then skips every sample, which TRL shows only as a mean of None."""
        wanted = [c for c in self.required_columns if c not in columns]
        if not wanted and self.reference_columns and not any(c in columns for c in self.reference_columns):
            wanted = list(self.reference_columns)
        if not wanted or not n:
            return
        option = self.reference_option
        fix = (f"name the column with {option}= ({type(self).__name__}({option}=...), or the reward's entry in a "
               f"recipe: `rewards: [{{name: ..., {option}: <column>}}]`) or rename the dataset column"
               if option else "rename the dataset column")
        self._log_once(f"no column: {sorted(columns)}",
                       f"{self.__name__} cannot score this batch: it reads {' or '.join(map(repr, wanted))}, and the batch has "
                       f"the columns {sorted(columns) or 'none'}; {fix}. Every sample scores None.")

    def _log_once(self, key: str, message: str, exc_info: bool = False) -> None:
        """`message` at WARNING the first time this reward meets `key`, then at DEBUG."""
        warned = self.__dict__.setdefault("_warned", set())
        level = logging.DEBUG if key in warned else logging.WARNING
        warned.add(key)
        logger.log(level, "%s", message, exc_info=exc_info)

    def _report(self, scores: list[Score], log_metric, log_extra) -> None:
        # Failures change what the trainer learns from: each kind at WARNING the first time, then at DEBUG. Skips
        # are counted at INFO; rule-based scores (a malformed completion scored 0.0) are routine and go to the
        # debug log and the completions table.
        for score in scores:
            if score.failed or _reason_kind(score) == "error":
                kind = ": ".join(score.reason.split(": ")[:2])
                self._log_once(f"failed: {kind}", f"{self.__name__}: a sample scored {score.value} ({score.reason}); "
                                                  "later ones of this kind are logged at DEBUG")
        for level, kind in ((logging.INFO, "skip"), (logging.DEBUG, "scored")):
            counts = Counter(s.reason.split(":")[0] for s in scores if s.reason and _reason_kind(s) == kind)
            if counts:
                logger.log(level, "%s: %s", self.__name__, ", ".join(f"{k} x{v}" for k, v in counts.most_common()))
        if log_metric is not None and scores:
            log_metric(f"{self.__name__}/skipped", sum(s.value is None for s in scores) / len(scores))
        if log_extra is not None and any(s.reason for s in scores):
            log_extra(f"{self.__name__}_reason", [s.reason or "" for s in scores])


def _encodable(text: str) -> str:
    """The text with lone surrogates replaced by ``?`` (a no-op copy-free check for ordinary text)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def _reason_kind(score: Score) -> str:
    """How a reason is logged: a scoring failure ("error"), a skip ("skip"), or a rule-based score ("scored")."""
    if score.failed or (score.reason and score.reason.startswith("error")):
        return "error"
    return "skip" if score.value is None else "scored"


def _item(values: Any, i: int) -> Any:
    """The i-th entry of a per-sample column (None when the column is absent or too short)."""
    if values is None:
        return None
    try:
        return values[i]
    except (IndexError, KeyError, TypeError):
        return None


def _checked(score: Any) -> Score:
    """Coerce a subclass's return value into a finite Score (NaN/inf are bugs: skip them, with a reason)."""
    if not isinstance(score, Score):
        score = Score(score)
    if score.value is None:
        return score
    try:
        value = float(score.value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a broken __float__ is a reward bug too, never the trainer's crash
        return Score(None, f"error: non-numeric score ({type(exc).__name__}: {exc})")
    if value != value or value in (float("inf"), float("-inf")):
        return Score(None, f"error: non-finite score {value}")
    return Score(value, score.reason, score.failed)


def declared(reward: Any, attribute: str) -> Any:
    """What a reward declares (`role`, `required_columns`, `reference_columns`, `code_in_reasoning_ok`,
    `think_prefill_option`, `needs_sandbox`), with `RewardFunction`'s defaults for plain reward functions.

    >>> declared(lambda completions, **kw: [1.0] * len(completions), "role")
    'correctness'
    """
    return getattr(reward, attribute, getattr(RewardFunction, attribute))


def column_problems(reward: Any, columns: list[str]) -> list[str]:
    """Why ``reward`` cannot score rows with ``columns``: each `required_columns` entry missing, or none of its
    `reference_columns` present. Checked by the trainers (`R1GRPOTrainer`, `R1PPOTrainer`) and the pipeline alike.

    >>> class NeedsUnit:
    ...     required_columns = ("unit",)
    >>> column_problems(NeedsUnit(), ["prompt"])
    ["reward 'NeedsUnit' needs a 'unit' column; the dataset has ['prompt']"]
    """
    name = getattr(reward, "__name__", type(reward).__name__)
    problems = [f"reward {name!r} needs a {column!r} column; the dataset has {columns}"
                for column in declared(reward, "required_columns") if column not in columns]
    references = declared(reward, "reference_columns")
    if references and not set(references) & set(columns):
        problems.append(f"reward {name!r} reads its reference from one of the columns {list(references)}; the "
                        f"dataset has {columns} (map one with solution_column)")
    return problems
