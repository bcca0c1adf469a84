"""DeepSeek-R1's readability filters for reasoning traces, shared by rejection sampling and distillation.

R1 (§2.3.3) keeps only correct answers and filters out "chain-of-thought with mixed languages, long paragraphs,
and code blocks"; a builder also drops near-duplicates and caps the samples kept per prompt. Every rejection
has a name, so the builders can report how many samples each filter removed. Pure text processing: no TRL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..verifiers.format import Trace

# rejection names, in the order the builders apply the filters
MALFORMED = "malformed"  # no reasoning block, or no final answer after it
INCORRECT = "incorrect"  # a reward below its threshold (recorded as "incorrect:<reward name>")
UNVERIFIED = "unverified"  # no correctness reward could score the sample (e.g. no gold answer, no tests)
MIXED_LANGUAGE = "mixed_language"
LONG_PARAGRAPH = "long_paragraph"
CODE_IN_REASONING = "code_in_reasoning"
NEAR_DUPLICATE = "near_duplicate"
OVER_LIMIT = "max_per_prompt"

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_CODE_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)


def longest_paragraph(text: str) -> int:
    """Characters in the longest blank-line-separated paragraph.

    >>> longest_paragraph("short\\n\\nmuch longer one")
    15
    """
    return max((len(p.strip()) for p in _PARAGRAPH_BREAK.split(text)), default=0)


def has_code_block(text: str) -> bool:
    """True when the text holds a fenced code block (```` ``` ```` or ``~~~``).

    >>> has_code_block("Try:\\n```python\\nprint(1)\\n```")
    True
    >>> has_code_block("x = 3, so `x + 1` is 4")
    False
    """
    return bool(_CODE_FENCE.search(text))


def near_duplicates(texts: list[str], threshold: float) -> list[bool]:
    """Greedy near-duplicate marking: True for a text at least `threshold`-similar to an earlier kept one.

    Similarity is rapidfuzz's normalised Indel similarity (1 - edit distance without substitutions / total
    length), i.e. difflib's ratio computed in C++.

    >>> near_duplicates(["2 plus 3 is 5.", "2 plus 3 is 5!", "3 plus 4 is 7."], 0.9)
    [False, True, False]
    """
    from rapidfuzz.distance import Indel

    kept: list[str] = []
    marks = []
    for text in texts:
        duplicate = any(Indel.normalized_similarity(text, k) >= threshold for k in kept)
        marks.append(duplicate)
        if not duplicate:
            kept.append(text)
    return marks


@dataclass(frozen=True)
class R1Filters:
    """The readability and diversity filters, configured as the builder configs document them.

    `rejection(trace, ...)` judges one trace on its own (language, paragraphs, code); `select(traces)` then
    drops near-duplicates and keeps at most `max_per_prompt` among one prompt's survivors.
    """

    min_language_consistency: float | None = 0.95
    max_paragraph_chars: int | None = 2000
    reject_code_in_reasoning: bool = True
    dedup_threshold: float | None = 0.9
    max_per_prompt: int | None = 4

    def rejection(self, trace: Trace, *, prompt: str | None = None, code_task: bool = False,
                  target_lang: str | None = None) -> str | None:
        """The name of the first filter that rejects the trace, or None when it passes them all.

        The language target is `target_lang`, else the language of the `prompt` text.

        >>> R1Filters(min_language_consistency=None).rejection(Trace("```\\nx=1\\n```", "1"))
        'code_in_reasoning'
        >>> R1Filters(min_language_consistency=None).rejection(Trace("```\\nx=1\\n```", "1"), code_task=True) is None
        True
        """
        if self.min_language_consistency is not None and self._language_share(trace, prompt, target_lang) < (
                self.min_language_consistency):
            return MIXED_LANGUAGE
        if self.max_paragraph_chars is not None and longest_paragraph(trace.reasoning) > self.max_paragraph_chars:
            return LONG_PARAGRAPH
        if self.reject_code_in_reasoning and not code_task and has_code_block(trace.reasoning):
            return CODE_IN_REASONING
        return None

    @staticmethod
    def _language_share(trace: Trace, prompt: str | None, target_lang: str | None) -> float:
        """R1's language consistency of the reasoning; 1.0 when no target language can be told (e.g. "2+3?")."""
        from ..verifiers.language import consistency

        try:
            return consistency(trace.reasoning, target_lang=target_lang, prompt=prompt)
        except ValueError:
            return 1.0

    def select(self, traces: list[Trace]) -> list[str | None]:
        """Per trace of one prompt: None to keep it, else the rejection (near-duplicate or over the cap).

        >>> R1Filters(max_per_prompt=1).select([Trace("a b c", "1"), Trace("a b c", "1"), Trace("x y z", "2")])
        [None, 'near_duplicate', 'max_per_prompt']
        """
        texts = [t.content for t in traces]
        duplicate = near_duplicates(texts, self.dedup_threshold) if self.dedup_threshold is not None else [False] * len(texts)
        verdicts: list[str | None] = []
        kept = 0
        for is_duplicate in duplicate:
            if is_duplicate:
                verdicts.append(NEAR_DUPLICATE)
            elif self.max_per_prompt is not None and kept >= self.max_per_prompt:
                verdicts.append(OVER_LIMIT)
            else:
                verdicts.append(None)
                kept += 1
        return verdicts
