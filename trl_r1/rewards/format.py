"""R1 think/answer format rewards for TRL trainers."""

from __future__ import annotations

from ..completion import Completion
from ..verifiers.format import check_strict, prompt_prefills_think, soft_score
from .base import DEFAULT_MAX_CHARS, RewardFunction, Score


class FormatReward(RewardFunction):
    """1.0 when the completion has R1's think/answer structure, else 0.0 (reason logged).

    Args:
        require_answer: require an ``<answer>`` block after the reasoning (R1-Zero's template). With False,
            any non-empty final text after ``</think>`` is accepted (the paper's rule: think tags only).
        think_prefilled: whether the chat template already emitted the opening ``<think>``, so completions
            start inside the reasoning block. None (default) detects it per sample from a plain-text prompt
            that ends with ``<think>``; set True for conversational datasets whose template prefills it
            (e.g. DeepSeek-R1-Distill, Qwen3 thinking mode), or the reward stays at 0.
        soft: give 0.25 per well-placed tag instead of all-or-nothing (shaping for early training).
        max_chars: completions longer than this many characters score 0.0 unread, with the reason (default
            `DEFAULT_MAX_CHARS`, 262,144: 64k tokens; None: no cap). Part of the 2 s bound of `trl_r1.rewards.base`.

    Example:
        >>> reward = FormatReward()
        >>> reward(completions=["<think>2+3=5</think><answer>5</answer>", "5", "<think>a</think><answer>5</answer>!"])
        [1.0, 0.0, 0.0]
        >>> FormatReward()(prompts=["Q: 2+3?\\n<think>"], completions=["2+3=5</think><answer>5</answer>"])
        [1.0]
        >>> FormatReward(soft=True)(completions=[[{"role": "assistant", "content": "<think>a</think> 5"}]])
        [0.5]
    """

    __name__ = "format_reward"
    role = "format"
    think_prefill_option = True

    def __init__(self, require_answer: bool = True, think_prefilled: bool | None = None, soft: bool = False,
                 max_chars: int | None = DEFAULT_MAX_CHARS):
        self.max_chars = max_chars
        self.require_answer = require_answer
        self.think_prefilled = think_prefilled
        self.soft = soft
        if soft:
            self.__name__ = "soft_format_reward"

    def score(self, sample: Completion) -> Score:
        # the format reward knows the prompt, so it decides the prefill itself (never "unknown")
        sample.think_prefilled = (self.think_prefilled if self.think_prefilled is not None
                                  else prompt_prefills_think(sample.prompt))
        text = sample.text
        if self.soft:
            return Score(soft_score(text))
        verdict = check_strict(text, require_answer=self.require_answer)
        return Score(1.0 if verdict.ok else 0.0, verdict.reason)


format_reward = FormatReward()
soft_format_reward = FormatReward(soft=True)
