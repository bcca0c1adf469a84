"""Math accuracy reward for TRL trainers: 1.0 when the final answer is equivalent to the gold answer."""

from __future__ import annotations

from ..completion import Completion
from ..verifiers.math import (
    ANSWER_POLICIES, APPROXIMATIONS, DEFAULT_TIMEOUT_S, SympyTask, Verdict, finish_checks, prepare_check,
)
from .base import DEFAULT_MAX_CHARS, RewardFunction, Score


class MathAccuracyReward(RewardFunction):
    """1.0 when the completion's final answer is mathematically equivalent to the gold answer, else 0.0.

    The answer is the ``<answer>`` block, else the last ``\\boxed{}``, else a final "the answer is ..." statement;
    hedged or multi-valued answers score 0.0 (see `trl_r1.verifiers.math`). A sample whose gold is missing or
    unusable scores None, so GRPO leaves it out; the reason is logged and sent to TRL's metrics.

    Args:
        gold_column: dataset column holding the gold answer (a bare or boxed answer, a boxed solution, or GSM8K's
            ``... #### 72``).
        fallback_columns: columns tried in order when `gold_column` is absent or empty for a sample.
        timeout_s: hard limit of one sympy check in its worker's CPU seconds (wall-clock off Linux), and in wall-clock seconds `max(timeout_s, MAX_WALL_S)` (1.8 s: no verdict takes 2 s); a check past it is killed and scores 0.0.
        answer_policy: "marked" (default, R1): the answer must be marked (answer block, box, "the answer is",
            "Answer:", "####"), so a number in prose never scores; "bare": a completion that is nothing but an
            answer, or closes with an answer line (``Answer $9$``), counts too (SFT'd models, non-R1 prompts).
        workers: worker processes for sympy checks (default: half of this rank's CPUs, at most 8; see `trl_r1.workers`).
        approximations: "reject" (default, issue 36): a decimal for an exact gold it does not equal scores 0.0
            (``1.414`` for ``\\sqrt{2}``), unless the prompt asks for that rounding; "rounded": a correctly rounded
            decimal with 4 significant digits scores 1.0 (datasets whose golds are rounded).
        max_chars: completions longer than this many characters score 0.0 unread, with the reason (default
            `DEFAULT_MAX_CHARS`, 262,144: 64k tokens; None: no cap). Part of the 2 s bound of `trl_r1.rewards.base`.

    Example:
        >>> reward = MathAccuracyReward()
        >>> reward(completions=["<think>...</think><answer>\\\\frac{1}{2}</answer>", "So 0.5 maybe."],
        ...        solution=["\\\\boxed{0.5}", "0.5"])
        [1.0, 0.0]
        >>> reward(completions=[[{"role": "assistant", "content": "The answer is 1,234."}]], answer=["1234"])
        [1.0]
        >>> reward(completions=["The answer is 3."], solution=[""])
        [None]
        >>> reward(completions=["-5", "Answer $-5$"], solution=["-5", "-5"])  # unmarked: no reward for RL
        [0.0, 0.0]
        >>> MathAccuracyReward(answer_policy="bare")(completions=["-5", "Answer $-5$"], solution=["-5", "-5"])
        [1.0, 1.0]
    """

    __name__ = "math_accuracy_reward"
    reference_option = "gold_column"

    def __init__(
        self,
        gold_column: str = "solution",
        fallback_columns: tuple[str, ...] = ("answer",),
        timeout_s: float = DEFAULT_TIMEOUT_S,
        workers: int | None = None,
        answer_policy: str = "marked",
        approximations: str = "reject",
        max_chars: int | None = DEFAULT_MAX_CHARS,
    ):
        self.max_chars = max_chars
        if answer_policy not in ANSWER_POLICIES:
            raise ValueError(f"answer_policy must be one of {ANSWER_POLICIES}, got {answer_policy!r}")
        if approximations not in APPROXIMATIONS:
            raise ValueError(f"approximations must be one of {APPROXIMATIONS}, got {approximations!r}")
        self.approximations = approximations
        self.gold_column = gold_column
        self.fallback_columns = tuple(fallback_columns)
        self.timeout_s = timeout_s
        self.workers = workers
        self.answer_policy = answer_policy

    @property
    def reference_columns(self) -> tuple[str, ...]:
        """The gold-answer columns, any one will do (declared for the pipeline's data checks)."""
        return (self.gold_column, *self.fallback_columns)

    def gold(self, sample: Completion):
        """The sample's gold answer: the first of `gold_column`, `fallback_columns` that is present and non-empty."""
        for column in (self.gold_column, *self.fallback_columns):
            value = sample.columns.get(column)
            if value is not None and value != "":
                return value
        return None

    def score_batch(self, samples: list[Completion]) -> list[Score]:
        """Each sample's answer read and settled in process within the reward's time limit (`bounded`, on any
        thread), then what only sympy decides, in the worker pool under its own hard limits."""
        columns = "/".join((self.gold_column, *self.fallback_columns))
        scores = [Score(None, f"missing gold: no value in column {columns}")] * len(samples)
        prepared: dict[int, Verdict | SympyTask] = {}
        for i, sample in enumerate(samples):
            gold = self.gold(sample)
            if gold is None:
                continue
            item = self.bounded(prepare_check, gold, sample.text, self.answer_policy, self.approximations,
                                sample.prompt_text)
            if isinstance(item, Score):  # over the time limit, or broke the verifier: this sample's 0.0
                scores[i] = item
            else:
                prepared[i] = item
        verdicts = finish_checks(list(prepared.values()), self.workers, self.timeout_s)
        for i, verdict in zip(prepared, verdicts):
            scores[i] = Score(None if verdict.equivalent is None else float(verdict.equivalent), verdict.reason)
        return scores

math_accuracy_reward = MathAccuracyReward()
