"""The reward protocol shared by every trl-r1 reward.

TRL's `GRPOTrainer` / `RLOOTrainer` call a reward with keyword arguments only: `prompts`, `completions`,
`completion_ids`, every dataset column (one entry per completion), `trainer_state`, `log_extra` and
`log_metric`. Completions are plain strings (standard datasets) or a list of messages whose assistant turn
may carry the reasoning in a separate `reasoning_content` / `thinking` field (tokenizers with a response
schema). `RewardFunction` turns that into a list of `trl_r1.completion.Completion`s, asks the subclass for
one `Score` per sample, and guarantees what a training run needs:

* it never raises: a failure while scoring one sample (any `BaseException`, `SystemExit` included, but
  `KeyboardInterrupt`: a user's Ctrl-C still stops training) becomes `None` for that sample, logged with its reason;
* it never scores silently: every `None` (skip) and every rule-based 0.0 carries a reason, which is counted
  in the Python log, sent to TRL's metrics as `<name>/skipped` and shown in the completions table;
* it is picklable (a plain class, no closures), as TRL's async trainer sends rewards to other processes.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

from ..completion import Completion

logger = logging.getLogger("trl_r1.rewards")

@dataclass(frozen=True)
class Score:
    """One sample's verdict: `value` is a float, or None when the reward does not apply to the sample."""

    value: float | None
    reason: str | None = None  # why the sample was skipped or scored by a fallback rule


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
    code_in_reasoning_ok: ClassVar[bool] = False
    think_prefill_option: ClassVar[bool] = False
    needs_sandbox: bool = False

    def score(self, sample: Completion) -> Score:  # pragma: no cover - subclasses override one of the two
        raise NotImplementedError

    def score_batch(self, samples: list[Completion]) -> list[Score]:
        """Score many samples; override to batch work (worker pools). The default scores one at a time."""
        return [self._safe_score(s) for s in samples]

    def _safe_score(self, sample: Completion) -> Score:
        """One sample's Score, never raising: `score`, or a batch of one for rewards that implement only
        `score_batch` (so a batch that failed still isolates the sample that broke it)."""
        try:
            if type(self).score is RewardFunction.score and type(self).score_batch is not RewardFunction.score_batch:
                (scored,) = self.score_batch([sample])
                return scored
            return self.score(sample)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a reward bug must cost one sample, never the run
            logger.debug("%s failed on a sample", self.__name__, exc_info=True)
            return Score(None, f"error: {type(exc).__name__}: {exc}"[:200])

    def __call__(self, prompts=None, completions=None, completion_ids=None, **kwargs) -> list[float | None]:
        log_metric = kwargs.pop("log_metric", None)
        log_extra = kwargs.pop("log_extra", None)
        kwargs.pop("trainer_state", None)
        kwargs.pop("environments", None)
        completions = list(completions) if completions is not None else []
        n = len(completions)
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
            samples.append(sample)
        todo = [i for i in range(n) if i not in early]
        try:
            scored = self.score_batch([samples[i] for i in todo]) if todo else []
            if len(scored) != len(todo):
                raise RuntimeError(f"score_batch returned {len(scored)} scores for {len(todo)} samples")
        except KeyboardInterrupt:
            raise
        except BaseException:
            logger.warning("%s: batch scoring failed, scoring samples one by one", self.__name__, exc_info=True)
            scored = [self._safe_score(samples[i]) for i in todo]
        results = dict(early)
        results.update(zip(todo, scored))
        scores = [_checked(results[i]) for i in range(n)]
        self._report(scores, log_metric, log_extra)
        return [s.value for s in scores]

    def _report(self, scores: list[Score], log_metric, log_extra) -> None:
        # Failures and skips change what the trainer learns from, so they are logged; rule-based scores
        # (a malformed completion scored 0.0) are routine and go to the debug log and the completions table.
        for level, kind in ((logging.WARNING, "error"), (logging.INFO, "skip"), (logging.DEBUG, "scored")):
            counts = Counter(s.reason.split(":")[0] for s in scores if s.reason and _reason_kind(s) == kind)
            if counts:
                logger.log(level, "%s: %s", self.__name__, ", ".join(f"{k} x{v}" for k, v in counts.most_common()))
        if log_metric is not None and scores:
            log_metric(f"{self.__name__}/skipped", sum(s.value is None for s in scores) / len(scores))
        if log_extra is not None and any(s.reason for s in scores):
            log_extra(f"{self.__name__}_reason", [s.reason or "" for s in scores])


def _reason_kind(score: Score) -> str:
    """How a reason is logged: a scoring failure ("error"), a skip ("skip"), or a rule-based score ("scored")."""
    if score.reason and score.reason.startswith("error"):
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
    return Score(value, score.reason)


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
