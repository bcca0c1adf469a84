"""R1's language-consistency reward for TRL trainers: the share of target-language words in the CoT."""

from __future__ import annotations

import functools
from typing import Any

from ..completion import Completion
from ..verifiers.format import extract_reasoning
from ..verifiers.language import detect_language, measure, normalize_language
from .base import DEFAULT_MAX_CHARS, RewardFunction, Score

# Dataset columns read for the per-sample target language when the configured `lang_column` is absent.
LANG_COLUMNS = ("language", "lang")


class LanguageConsistencyReward(RewardFunction):
    """Share of target-language words in the chain of thought, in [0, 1] (DeepSeek-R1, Eq. 7).

    The chain of thought is the think block (the whole completion without tags; the answer never counts).
    Math, numbers, code and URLs are neutral, prose hidden in them still counts, and empty reasoning scores
    0.0 (conventions: `trl_r1.verifiers.language`). R1 adds it with weight 1 to the accuracy reward.

    The target language of a sample comes from, in order: its dataset column `lang_column` (else
    ``language`` or ``lang``), the `target_lang` option, the language detected in the prompt's last user
    turn. Codes are ISO 639-1 ("en", "zh"); tags and names are accepted ("zh-CN", "zh-Hans", "pt_BR",
    "cmn", "english", "中文"). A sample whose language is unknown or unsupported, or whose prompt has no
    words to detect a language from, is skipped (None, reason logged). Prompt detection is unreliable for
    translation-style prompts: give multilingual datasets a language column.

    Args:
        target_lang: the language of every sample without a language column (None: detect from the prompt).
        lang_column: the dataset column holding each sample's target language.
        max_chars: completions longer than this many characters score 0.0 unread, with the reason (default
            `DEFAULT_MAX_CHARS`, 262,144: 64k tokens; None: no cap). Part of the 2 s bound of `trl_r1.rewards.base`.

    Example:
        >>> reward = LanguageConsistencyReward()
        >>> reward(
        ...     prompts=["What is 2+3?", "2+3 等于多少？", "Combien font 2+3 ?"],
        ...     completions=[
        ...         "<think>Two plus three is five, so $2+3=5$.</think><answer>5</answer>",
        ...         "<think>二加三等于五。Let me double check this one.</think><answer>5</answer>",
        ...         "<think></think><answer>5</answer>",
        ...     ],
        ... )
        [1.0, 0.375, 0.0]
        >>> LanguageConsistencyReward(target_lang="de")(completions=["Zwei plus drei ist fünf."], language=["xx"])
        [None]
    """

    __name__ = "language_consistency_reward"
    role = "style"

    def __init__(self, target_lang: str | None = None, lang_column: str = "language",
                 max_chars: int | None = DEFAULT_MAX_CHARS):
        self.max_chars = max_chars
        if target_lang is not None and normalize_language(target_lang) is None:
            raise ValueError(f"unsupported target_lang {target_lang!r}; use an ISO 639-1 code such as 'en' or 'zh'")
        self.target_lang = target_lang
        self.lang_column = lang_column

    def _target(self, sample: Completion) -> tuple[str | None, str | None]:
        """The sample's canonical target language, or None and why."""
        column: Any = next((sample.columns[c] for c in (self.lang_column, *LANG_COLUMNS) if sample.columns.get(c)), None)
        if column is not None:
            code = normalize_language(column)
            return (code, None) if code else (None, f"unsupported language {column!r}")
        if self.target_lang is not None:
            return normalize_language(self.target_lang), None
        code = detect_language(sample.prompt_text)
        return (code, None) if code else (None, "no target language: no language column or option, no words in the prompt")

    def warm_up(self) -> None:
        _load_language_tables()

    def score(self, sample: Completion) -> Score:
        target, reason = self._target(sample)
        if target is None:
            return Score(None, reason)
        result = measure(extract_reasoning(sample.text), target)
        return Score(result.value, result.reason)


@functools.lru_cache(maxsize=1)
def _load_language_tables() -> None:
    """Build the language identifier's tables (about 2 s, once per process) outside a sample's time limit."""
    detect_language("Warming up the language identifier.")
    measure("Warming up the language identifier.", "en")


language_consistency_reward = LanguageConsistencyReward()
