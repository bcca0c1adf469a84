"""The R1 think/answer structure: parsing, strict and soft checks, and answer/reasoning extraction.

R1's template asks for ``<think> reasoning </think> <answer> answer </answer>``. This module is pure text
processing (no TRL import) and is shared by the completion type (`trl_r1.completion`), the format reward, the
math verifier (which reads the answer block), the language reward (which reads the reasoning block) and the
dataset builders (which split traces with `parse_trace`).

One prefill rule holds everywhere: ``think_prefilled=True`` means the chat template wrote the opening
``<think>`` (so the completion starts inside the reasoning), False that it did not, and None that it is unknown,
in which case a ``</think>`` with no ``<think>`` before it is read as prefilled. A caller that knows the
prompt (the format reward) decides it and passes a bool; one that does not (a served model) passes None.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE = "<think>", "</think>", "<answer>", "</answer>"
_TAG = re.compile(r"</?(?:think|answer)>")
# Tag-like fragments, any case and spacing: "</think", "</answer >", "< answer>", "<Answer>", "/think>". Prose
# and code that merely mention the words ("2 < answer < 10", "1/answer >= 0.5", "lo<answer") do not match.
_TAG_LIKE = re.compile(r"<\s*/\s*(?:think|answer)\b[^<>]*>?|<\s*(?:think|answer)\s*>"
                       r"|(?<![\w)\]}])/\s*(?:think|answer)\s*>", re.IGNORECASE)
_MARKUP = re.compile(r"<[^<>]*>")
# Letters that render as blank (Hangul and braille fillers): no content, whatever their Unicode category says.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_STRICT_ORDER = [THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE]


@dataclass(frozen=True)
class FormatVerdict:
    """Result of a strict structure check: `ok`, the parts found, and why it failed."""

    ok: bool
    reasoning: str | None = None
    answer: str | None = None
    reason: str | None = None


def prompt_prefills_think(prompt: object) -> bool:
    """True when the prompt already ends with the opening ``<think>``: a plain-text prompt (a template that
    prefills it), or a conversational one whose last message is an assistant turn ending with it (TRL continues a
    final assistant message, ``continue_final_message``, so the model writes on from the prefill).

    >>> prompt_prefills_think("<|im_start|>assistant\\n<think>\\n")
    True
    >>> prompt_prefills_think([{"role": "user", "content": "hi"}])
    False
    >>> prompt_prefills_think([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<think>"}])
    True
    """
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict) and prompt[-1].get("role") == "assistant":
        prompt = prompt[-1].get("content")
    return isinstance(prompt, str) and prompt.rstrip().endswith(THINK_OPEN)


def with_think_prefix(text: str, think_prefilled: bool) -> str:
    """The completion as if the prefilled ``<think>`` had been generated (so one parser serves both cases)."""
    return THINK_OPEN + text if think_prefilled else text


@dataclass(frozen=True)
class Trace:
    """A completion split into its reasoning and its final answer (what `parse_trace` returns)."""

    reasoning: str
    answer: str

    @property
    def content(self) -> str:
        """The SFT target: the reasoning in a think block, then the final answer.

        >>> Trace(" 2+3=5 ", "<answer>5</answer>").content
        '<think>2+3=5</think>\\n<answer>5</answer>'
        """
        return f"{THINK_OPEN}{self.reasoning.strip()}{THINK_CLOSE}\n{self.answer.strip()}"


def parse_trace(content: str, reasoning: str | None = None, think_prefilled: bool | None = None) -> Trace:
    """Split a completion into reasoning and answer, from inline ``<think>`` tags or a separate reasoning field.

    `think_prefilled` follows the module's prefill rule. Raises ValueError, with the reason, when there is no
    reasoning block or no answer after it (e.g. a truncated completion).

    >>> parse_trace("<think>2+3=5</think> <answer>5</answer>")
    Trace(reasoning='2+3=5', answer='<answer>5</answer>')
    >>> parse_trace("2+3=5</think>The answer is 5.").answer
    'The answer is 5.'
    >>> parse_trace("The answer is 5.", reasoning="2+3=5").reasoning
    '2+3=5'
    >>> parse_trace("<think>2+3 is")
    Traceback (most recent call last):
    ...
    ValueError: unclosed think block
    """
    if reasoning:
        if not content.strip():
            raise ValueError("no answer after the reasoning")
        return Trace(reasoning.strip(), content.strip())
    text = content.lstrip()
    close = text.find(THINK_CLOSE)
    prefilled = think_prefilled if think_prefilled is not None else (close != -1 and THINK_OPEN not in text[:close])
    if prefilled:
        text = with_think_prefix(text, True)
        close += len(THINK_OPEN)
    if not text.startswith(THINK_OPEN):
        raise ValueError("no think block at the start")
    if close == -1:
        raise ValueError("unclosed think block")
    answer = text[close + len(THINK_CLOSE):].strip()
    if not answer:
        raise ValueError("no answer after the reasoning")
    return Trace(text[len(THINK_OPEN):close].strip(), answer)


def _has_malformed_tag(text: str) -> bool:
    """Whether the text holds a tag-like fragment that is not an exact tag (R1-Zero on SmolLM2 wrote
    ``<think> </think</think> <answer> </answer</answer>``: blocks whose only content was a broken tag).

    >>> _has_malformed_tag("<think>a</think><answer>5</answer>"), _has_malformed_tag("<answer> </answer</answer>")
    (False, True)
    >>> _has_malformed_tag("I think x > 3, so the answer is 5"), _has_malformed_tag("< think>")
    (False, True)
    """
    return any(m.group() not in _STRICT_ORDER for m in _TAG_LIKE.finditer(text))


def _has_content(block: str) -> bool:
    """Whether a block says anything: a letter, digit or symbol once HTML entities are decoded and markup,
    escapes and broken tags are dropped. Invisible characters (zero-width spaces, fillers), punctuation alone
    and escaped tags are empty: a policy under RL pressure finds each of them.

    >>> [_has_content(b) for b in ("16", "\u200b", "&lt;/answer&gt;", "...", "∅")]
    [True, False, False, False, True]
    """
    text = _TAG_LIKE.sub("", _MARKUP.sub("", html.unescape(block).replace("\\", "")))
    return any(unicodedata.category(c)[0] in "LNS" and c not in _BLANK_LETTERS for c in text)


def check_strict(text: str, *, require_answer: bool = True) -> FormatVerdict:
    """Strict R1 structure: exactly one think block, then exactly one non-empty answer block, nothing else.

    Only whitespace may surround and separate the blocks; repeated, nested, unclosed or out-of-order tags
    fail. With `require_answer=False` (the paper strictly requires only the think tags) the text after
    ``</think>`` must be a non-empty final answer, either bare text or one answer block.

    >>> check_strict("<think>2+3=5</think>\\n<answer>5</answer>").ok
    True
    >>> check_strict("<think>a</think><answer>5</answer> trailing").reason
    'text outside the blocks'
    >>> check_strict("<think>a</think> The answer is 5.", require_answer=False).answer
    'The answer is 5.'
    >>> check_strict("<think> </think</think><answer> </answer</answer>").reason
    'malformed tag'
    """
    if not isinstance(text, str):
        return FormatVerdict(False, reason="not text")
    if _has_malformed_tag(text):
        return FormatVerdict(False, reason="malformed tag")
    tags = [(m.group(), m.start(), m.end()) for m in _TAG.finditer(text)]
    names = [t[0] for t in tags]
    bare_answer = not require_answer and names == _STRICT_ORDER[:2]
    if names != _STRICT_ORDER and not bare_answer:
        return FormatVerdict(False, reason=_tag_problem(names, require_answer))
    (_, _, think_start), (_, think_end, close_end) = tags[0], tags[1]
    if text[: tags[0][1]].strip():
        return FormatVerdict(False, reason="text outside the blocks")
    reasoning = text[think_start:think_end]
    if bare_answer:
        answer = text[close_end:].strip()
        if not _has_content(answer):
            return FormatVerdict(False, reasoning=reasoning, reason="empty answer")
        return FormatVerdict(True, reasoning=reasoning, answer=answer)
    (_, answer_open, answer_start), (_, answer_end, end) = tags[2], tags[3]
    if text[close_end:answer_open].strip() or text[end:].strip():
        return FormatVerdict(False, reason="text outside the blocks")
    answer = text[answer_start:answer_end].strip()
    if not _has_content(answer):
        return FormatVerdict(False, reasoning=reasoning, reason="empty answer")
    return FormatVerdict(True, reasoning=reasoning, answer=answer)


def _tag_problem(names: list[str], require_answer: bool) -> str:
    """Name the first structural problem in a tag sequence (for logs)."""
    if not names:
        return "no tags"
    for tag in _STRICT_ORDER:
        if names.count(tag) > 1:
            return f"repeated {tag}"
    if THINK_OPEN not in names or THINK_CLOSE not in names:
        return "unclosed or missing think block"
    if require_answer and (ANSWER_OPEN not in names or ANSWER_CLOSE not in names):
        return "missing or unclosed answer block"
    return "tags out of order"


def soft_score(text: str) -> float:
    """Partial credit, 0.25 per well-placed tag, for shaping early training.

    A tag earns its 0.25 when it appears exactly once and in R1 order after the previously credited tag:
    ``<think>`` at the very start, ``</think>`` after it, ``<answer>`` after that, ``</answer>`` at the end. A
    closing tag earns only around a non-empty block, and full credit is the strict format's alone: otherwise a
    policy settles on the empty shell ``<think> </think> <answer> </answer>`` (a small model copies it from a
    prompt that names the tags), as R1-Zero on SmolLM2 did: every sample at the shell's score, no group with a
    reward difference left to learn from, the strict format at 0.

    >>> soft_score("<think>a</think><answer>5</answer>")
    1.0
    >>> soft_score("<think>a</think> 5")
    0.5
    >>> soft_score("<think>a<think>b</think>")
    0.25
    >>> soft_score("<think> </think> <answer> </answer>"), soft_score("<think>a</think><answer></answer>")
    (0.5, 0.75)
    >>> soft_score("<think>a</think> so <answer>5</answer>")  # every tag in place, text between the blocks
    0.75
    >>> soft_score("<think> </think</think> <answer> </answer</answer>")  # blocks of broken tags are empty
    0.5
    """
    if not isinstance(text, str):
        return 0.0
    stripped = text.strip()
    names = [m.group() for m in _TAG.finditer(stripped)]
    score, position = 0.0, 0
    for tag in _STRICT_ORDER:
        if names.count(tag) != 1:
            continue
        at = stripped.find(tag)
        placed = at >= position
        if tag == THINK_OPEN:
            placed = at == 0
        elif tag in (THINK_CLOSE, ANSWER_CLOSE):  # a block of broken tags alone is empty too
            placed = placed and _has_content(stripped[position:at])
            if tag == ANSWER_CLOSE:
                placed = placed and stripped.endswith(ANSWER_CLOSE)
        if placed:
            score += 0.25
            position = at + len(tag)
    if score == 1.0 and not check_strict(stripped).ok:
        return 0.75
    return score


def extract_reasoning(text: str) -> str:
    """The chain of thought: the think block, the text before a lone ``</think>``, else the whole text.

    >>> extract_reasoning("<think>because</think><answer>5</answer>")
    'because'
    >>> extract_reasoning("prefilled reasoning</think> 5")
    'prefilled reasoning'
    """
    if not isinstance(text, str):
        return ""
    close = text.find(THINK_CLOSE)
    if close == -1:
        open_ = text.find(THINK_OPEN)
        return text[open_ + len(THINK_OPEN):] if open_ != -1 else _without_answer(text)
    open_ = text.rfind(THINK_OPEN, 0, close)
    return text[open_ + len(THINK_OPEN) if open_ != -1 else 0: close]


def _without_answer(text: str) -> str:
    """A tag-less text minus any answer block (the answer is not part of the chain of thought)."""
    return re.sub(r"(?s)<answer>.*?(</answer>|$)", " ", text)


def _last_answer_block(text: str) -> str | None:
    """The last complete answer block, as ``re.findall(r"(?s)<answer>(.*?)</answer>", text)[-1]`` finds it, in
    linear time: that regex rescans to the end from every unclosed ``<answer>``, and a degenerate completion
    repeating the tag 10,000 times took seconds to score.

    >>> _last_answer_block("<answer>1</answer> <answer>2<answer>3</answer> <answer>4")
    '2<answer>3'
    """
    last, position = None, 0
    while (start := text.find(ANSWER_OPEN, position)) != -1:
        end = text.find(ANSWER_CLOSE, start + len(ANSWER_OPEN))
        if end == -1:
            break
        last, position = text[start + len(ANSWER_OPEN):end], end + len(ANSWER_CLOSE)
    return last


def extract_answer(text: str) -> str:
    """The final-answer part: the last answer block, else the text after the last ``</think>``, else all.

    >>> extract_answer("<think>x</think><answer> 42 </answer>")
    '42'
    >>> extract_answer("<think>x</think>So it is \\\\boxed{7}.")
    'So it is \\\\boxed{7}.'
    """
    if not isinstance(text, str):
        return ""
    block = _last_answer_block(text)
    if block is not None:
        return block.strip()
    close = text.rfind(THINK_CLOSE)
    if close != -1:
        return text[close + len(THINK_CLOSE):].strip()
    open_ = text.rfind(ANSWER_OPEN)  # an unclosed answer block still holds the answer
    return text[open_ + len(ANSWER_OPEN):].strip() if open_ != -1 else text.strip()
