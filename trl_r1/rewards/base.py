"""The reward protocol shared by every trl-r1 reward.

TRL's `GRPOTrainer` / `RLOOTrainer` call a reward with keyword arguments only: `prompts`, `completions`,
`completion_ids`, every dataset column (one entry per completion), `trainer_state`, `log_extra` and
`log_metric`. Completions are plain strings (standard datasets) or a list of messages whose assistant turn
may carry the reasoning in a separate `reasoning_content` / `thinking` field (tokenizers with a response
schema). `RewardFunction` turns that into a list of `Sample`s, asks the subclass for one `Score` per
sample, and guarantees what a training run needs:

* it never raises: a failure while scoring one sample becomes `None` for that sample, logged with its reason;
* it never scores silently: every `None` (skip) and every rule-based 0.0 carries a reason, which is counted
  in the Python log, sent to TRL's metrics as `<name>/skipped` and shown in the completions table;
* it is picklable (a plain class, no closures), as TRL's async trainer sends rewards to other processes.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

logger = logging.getLogger("trl_r1.rewards")

REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


@dataclass(frozen=True)
class Score:
    """One sample's verdict: `value` is a float, or None when the reward does not apply to the sample."""

    value: float | None
    reason: str | None = None  # why the sample was skipped or scored by a fallback rule


@dataclass
class Sample:
    """One completion, normalised from any of TRL's completion formats."""

    text: str  # the whole completion as the model wrote it; a separate reasoning field is re-wrapped in <think>
    content: str  # the assistant's visible content (without a separate reasoning field)
    reasoning: str | None  # the separate reasoning field (`reasoning_content` / `thinking`), if any
    prompt: Any = None  # the raw prompt (a string or a list of messages)
    columns: dict[str, Any] = field(default_factory=dict)  # this sample's dataset columns
    completion_ids: list[int] | None = None

    @property
    def prompt_text(self) -> str:
        """The prompt as text: a plain prompt itself, or the last user turn of a conversation."""
        return prompt_to_text(self.prompt)


def message_text(message: Any) -> str:
    """The text of a message's `content`, which may be a string or a list of typed parts."""
    content = message.get("content") if isinstance(message, dict) else message
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return str(content)


def prompt_to_text(prompt: Any) -> str:
    """The text of a prompt: a plain string, or the last user message of a conversation."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return message_text(users[-1]) if users else "".join(message_text(m) for m in prompt)
    return str(prompt)


def completion_to_sample(completion: Any) -> Sample:
    """Normalise a completion (str, message list, single message dict) into a Sample.

    >>> s = completion_to_sample([{"role": "assistant", "reasoning_content": "2+3=5", "content": "<answer>5</answer>"}])
    >>> s.text
    '<think>2+3=5</think>\\n<answer>5</answer>'
    >>> completion_to_sample("<think>x</think> 5").reasoning is None
    True

    Raises TypeError for anything that is not text or messages.
    """
    if isinstance(completion, str):
        return Sample(text=completion, content=completion, reasoning=None)
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, list) and all(isinstance(m, dict) for m in completion):
        assistant = [m for m in completion if m.get("role", "assistant") == "assistant"]
        message = assistant[-1] if assistant else (completion[-1] if completion else {})
        content = message_text(message)
        reasoning = next((message[k] for k in REASONING_KEYS if isinstance(message.get(k), str) and message[k]), None)
        text = f"<think>{reasoning}</think>\n{content}" if reasoning is not None else content
        return Sample(text=text, content=content, reasoning=reasoning)
    raise TypeError(f"completion must be a string or a list of messages, got {type(completion).__name__}")


class RewardFunction:
    """Base class of trl-r1's rewards: TRL's keyword call in, `list[float | None]` out, never raises.

    Subclasses set `__name__` (the name TRL shows in `rewards/<name>/mean`) and implement `score_batch`
    (or `score` for one sample at a time). `required_columns` names dataset columns without which the reward
    cannot apply; a sample missing one is skipped with that reason.
    """

    __name__: ClassVar[str] = "reward"
    required_columns: ClassVar[tuple[str, ...]] = ()

    def score(self, sample: Sample) -> Score:  # pragma: no cover - subclasses override one of the two
        raise NotImplementedError

    def score_batch(self, samples: list[Sample]) -> list[Score]:
        """Score many samples; override to batch work (worker pools). The default scores one at a time."""
        return [self._safe_score(s) for s in samples]

    def _safe_score(self, sample: Sample) -> Score:
        try:
            return self.score(sample)
        except Exception as exc:  # a reward bug must cost one sample, never the run
            logger.debug("%s failed on a sample", self.__name__, exc_info=True)
            return Score(None, f"error: {type(exc).__name__}: {exc}"[:200])

    def __call__(self, prompts=None, completions=None, completion_ids=None, **kwargs) -> list[float | None]:
        log_metric = kwargs.pop("log_metric", None)
        log_extra = kwargs.pop("log_extra", None)
        kwargs.pop("trainer_state", None)
        kwargs.pop("environments", None)
        completions = list(completions) if completions is not None else []
        n = len(completions)
        samples: list[Sample | None] = []
        early: dict[int, Score] = {}
        for i, completion in enumerate(completions):
            try:
                sample = completion_to_sample(completion)
            except TypeError as exc:
                samples.append(None)
                early[i] = Score(None, f"bad completion: {exc}")
                continue
            sample.prompt = _item(prompts, i)
            sample.completion_ids = _item(completion_ids, i)
            sample.columns = {k: _item(v, i) for k, v in kwargs.items()}
            missing = [c for c in self.required_columns if sample.columns.get(c) is None]
            if missing:
                early[i] = Score(None, f"missing column {missing[0]!r}")
            samples.append(sample)
        todo = [i for i in range(n) if i not in early]
        try:
            scored = self.score_batch([samples[i] for i in todo]) if todo else []
            if len(scored) != len(todo):
                raise RuntimeError(f"score_batch returned {len(scored)} scores for {len(todo)} samples")
        except Exception:
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
    except (TypeError, ValueError):
        return Score(None, f"error: non-numeric score {score.value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        return Score(None, f"error: non-finite score {value}")
    return Score(value, score.reason)
