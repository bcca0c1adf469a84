"""Language consistency: the share of target-language words in a chain of thought (DeepSeek-R1 Eq. 7).

R1 defines the reward as ``Num(Words_target) / Num(Words)`` over the CoT and leaves the rest open; trl-r1's
conventions (see docs/rewards.md):

* the CoT is the think block (`extract_reasoning`), the whole text when there are no tags; the answer never counts;
* math, numbers, code and URLs are neutral, but prose hidden in them still counts (`text.prose_text`);
* a word is a token of letters of one script; Han, kana and Thai-like scripts, written without spaces,
  count ~0.6 / 0.55 / 0.2 words per character; single Latin/Greek letters (unless between Latin words:
  "então a resposta", "So I think"), short all-caps names and function names (sin, gcd) are neutral;
* the script decides whenever it can: Han in a sentence with kana is Japanese, else Chinese (a short Han-only
  line without a full stop, a heading or a list item, follows the next CJK sentence); Hangul is Korean; a
  Latin word is never Russian;
* within the target's own script, py3langid (offline) labels chunks of >= 4 words at clause boundaries,
  among that script's languages only; a chunk is non-target only if another language is `ODDS` times
  likelier than the target (short spans are ambiguous; this keeps pure text at ~1.0);
* empty reasoning (no letters or digits) scores 0.0, so that saying nothing never pays; reasoning with no
  words (math or code only) scores 1.0.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..format import extract_reasoning
from .identify import chunk_classifier, identifier
from .languages import (
    PROMPT_LANGUAGES,
    UNITS_PER_CHAR,
    canonical_code,
    equivalents,
    language_scripts,
)
from .text import WORD_OR_BREAK, is_neutral, prose_text, script_runs, words

ODDS = 2.0  # a chunk is another language when that language is this many times likelier than the target
SHORT_ODDS = 6.0  # the same for a sentence shorter than MIN_CHUNK_WORDS ("Okay.", "Donc voilà."): less reliable
MIN_CHUNK_WORDS = 4  # a clause this long is labelled on its own; shorter ones follow their sentence
MAX_CHUNK_WORDS = 12  # longer clauses are cut, so that a language switch without punctuation is still seen
MAX_SENTENCE_WORDS = 64  # words of a sentence that decide its short clauses
JAPANESE_KANA_SHARE = 0.1  # a Han/kana prompt is Japanese when kana makes up this share of its words


@functools.lru_cache(maxsize=1)
def supported_languages() -> dict[str, tuple[str, ...]]:
    """Supported target languages (ISO 639-1 codes where they exist) and the scripts they are written in."""
    return language_scripts(list(dict.fromkeys(identifier().nb_classes)))


def normalize_language(name: object) -> str | None:
    """The canonical code of a language name, code or tag, or None when it is unknown or unsupported.

    >>> [normalize_language(x) for x in ("zh-CN", "zh-Hans", "English", "ja", "pt_BR", "xx", None)]
    ['zh', 'zh', 'en', 'ja', 'pt', None, None]
    """
    return canonical_code(name, supported_languages().keys())


@dataclass(frozen=True)
class Consistency:
    """How much of a chain of thought is in the target language."""

    value: float  # target words / words, in [0, 1]
    target_words: float
    words: float
    reason: str | None = None  # why a rule rather than a ratio decided the value

    @classmethod
    def of(cls, target_words: float, words: float) -> Consistency:
        if not words:
            return cls(1.0, 0.0, 0.0, None)
        return cls(round(min(1.0, target_words / words), 6), target_words, words)  # 1.0 despite float sums


def consistency(completion: str, target_lang: str | None = None, prompt: str | None = None) -> float:
    """Share of target-language words in the chain of thought of `completion`, in [0, 1].

    The target is `target_lang` (a code, tag or name: "en", "zh-CN", "english"), else the language of
    `prompt`. Raises ValueError when the target is unsupported or cannot be detected.

    >>> consistency("<think>Let me add 2 and 3. C'est facile, la somme fait cinq.</think><answer>5</answer>", "en")
    0.4
    >>> consistency("<think>先算 $2+3=5$，所以答案是 5。</think> 5", prompt="2+3 等于多少？")
    1.0
    """
    target = normalize_language(target_lang) if target_lang is not None else detect_language(prompt or "")
    if target is None:
        raise ValueError(f"unsupported target language {target_lang!r}" if target_lang is not None
                         else "cannot detect the target language from the prompt")
    return measure(extract_reasoning(completion), target).value


def measure(reasoning: str, target: str) -> Consistency:
    """Count target-language words in `reasoning` (already extracted) for a canonical `target` code
    (see `normalize_language`; ValueError otherwise)."""
    target_scripts = supported_languages().get(target)
    if target_scripts is None:
        raise ValueError(f"unsupported target language {target!r}; normalize it with normalize_language()")
    if not isinstance(reasoning, str) or not any(ch.isalnum() for ch in reasoning):
        return Consistency(0.0, 0.0, 0.0, "empty reasoning")
    detect_scripts = {s for s in target_scripts if _rivals(s, target)}
    plan = _DetectionPlan()
    target_words = total_words = 0.0
    han = 0.0  # Han words of the current sentence: Japanese if the sentence has kana, else Chinese
    has_kana = False
    short_han, last_cjk = 0.0, "zh"  # short Han-only lines ("**計算**", "- 三桁") follow the next CJK sentence
    clauses: list[list[str]] = [[]]  # the current sentence's words in the target's shared script(s)
    items = WORD_OR_BREAK.findall(prose_text(reasoning) + "\n")
    for i, (word, sentence_end, _) in enumerate(items):
        if word:
            for script, part in script_runs(word):
                if is_neutral(script, part) and not (len(part) == 1 and _letter_in_prose(items, i)):
                    continue
                weight = _word_weight(script, part)
                total_words += weight
                if script in detect_scripts:
                    clauses[-1].append(part)
                elif script == "han":
                    han += weight
                else:
                    has_kana = has_kana or script == "kana"
                    target_words += weight * (script in target_scripts)
        elif sentence_end:
            if has_kana or (han and (han >= MIN_CHUNK_WORDS or sentence_end != "\n")):
                last_cjk = "ja" if has_kana else "zh"
                target_words += (han + short_han) * (target == last_cjk)
                short_han = 0.0
            else:
                short_han += han
            han, has_kana = 0.0, False
            plan.add_sentence([clause for clause in clauses if clause])
            clauses = [[]]
        elif clauses[-1]:
            clauses.append([])
    target_words += short_han * (target == last_cjk)  # or the last one when none follows
    if plan.texts:
        target_words += plan.target_words(target, detect_scripts)
    return Consistency.of(target_words, total_words)


class _DetectionPlan:
    """Which texts the detector labels, and which words follow each label.

    A clause of >= MIN_CHUNK_WORDS words is labelled on its own (cut into pieces of <= MAX_CHUNK_WORDS);
    shorter clauses ("Hmm,", "so,") follow the label of their whole sentence; a sentence shorter than
    MIN_CHUNK_WORDS is labelled alone and needs the larger SHORT_ODDS to count as another language. A clause
    kept as the target without being sure of it (the target not `ODDS` times likelier than any other language)
    follows its sentence when the sentence is another language.
    Every word is labelled from text it is part of, so prose split into short pieces cannot hide.
    """

    def __init__(self):
        self.texts: list[list[str]] = []
        self.odds: list[float] = []  # how many times likelier another language must be than the target
        self.words: list[tuple[int, int, int]] = []  # (text index, words that follow its label, sentence or -1)

    def _add(self, words: list[str], odds: float) -> int:
        self.texts.append(words)
        self.odds.append(odds)
        return len(self.texts) - 1

    def add_sentence(self, clauses: list[list[str]]) -> None:
        sentence = [word for clause in clauses for word in clause]
        if not sentence:
            return
        if len(sentence) < MIN_CHUNK_WORDS:
            self.words.append((self._add(sentence, SHORT_ODDS), len(sentence), -1))
            return
        sentence_label = -1
        for clause in clauses:
            if len(clause) >= MIN_CHUNK_WORDS and len(clause) < len(sentence):
                sentence_label = self._add(sentence[:MAX_SENTENCE_WORDS], ODDS)
                break
        for clause in clauses:
            if len(clause) >= MIN_CHUNK_WORDS:
                pieces = -(-len(clause) // MAX_CHUNK_WORDS)
                size = -(-len(clause) // pieces)
                for start in range(0, len(clause), size):
                    piece = clause[start:start + size]
                    self.words.append((self._add(piece, ODDS), len(piece), sentence_label))
            else:
                if sentence_label < 0:
                    sentence_label = self._add(sentence[:MAX_SENTENCE_WORDS], ODDS)
                self.words.append((sentence_label, len(clause), -1))

    def target_words(self, target: str, scripts: set[str]) -> float:
        """Words whose text the detector does not attribute to another language of the same script."""
        classifier = chunk_classifier(frozenset().union(*(_rivals(s, target) for s in scripts)))
        probabilities = classifier.probabilities(self.texts)
        is_target = [label in equivalents(target) for label in classifier.labels]
        p_other = probabilities[:, [not t for t in is_target]].max(axis=1)
        p_target = probabilities[:, is_target].sum(axis=1)
        keep = p_other <= p_target * np.asarray(self.odds)
        sure = p_target >= p_other * ODDS  # else a clause the target barely wins follows its sentence
        return float(sum(n for text, n, sentence in self.words
                         if keep[text] and (sure[text] or sentence < 0 or keep[sentence])))


def _letter_in_prose(items: list[tuple[str, str, str]], i: int) -> bool:
    """A one-letter Latin word between words ("então a resposta", "w przedziale", "So I think") is a word, not a
    variable; `items` are `WORD_OR_BREAK` matches and the last one is a break."""
    before, after = items[i - 1][0] if i else "", items[i + 1][0]
    return items[i][0].isalpha() and _is_latin_word(after) and (not before or _is_latin_word(before))


def _is_latin_word(token: str) -> bool:
    return len(token) > 1 and token.isalpha() and script_runs(token) == [("latin", token)]


def _rivals(script: str, target: str) -> frozenset[str]:
    """The detector labels that share `script` with the target (empty when the script alone decides)."""
    same_script = frozenset(code for code, scripts in supported_languages().items() if script in scripts)
    return same_script if same_script - equivalents(target) else frozenset()


def detect_language(text: str) -> str | None:
    """The language of a prompt (math, code and URLs ignored), or None when it has no words.

    The dominant script decides when it belongs to one language (kana -> ja, Han -> zh, Hangul -> ko);
    otherwise py3langid picks among that script's common languages (`PROMPT_LANGUAGES`), and English, the
    usual prompt language, wins unless another language is `ODDS` times likelier (short prompts such as
    "Compute the integral." are ambiguous).

    >>> [detect_language(t) for t in ("Combien font 2+3 ?", "Solve for x.", "2+3 等于多少？", "2+3は？", "Сколько будет 2+3?", "2+3")]
    ['fr', 'en', 'zh', 'ja', 'ru', None]
    """
    if not isinstance(text, str):
        return None
    weights: dict[str, float] = {}
    tokens: dict[str, list[str]] = {}
    for script, token in words(prose_text(text)):
        script_or_cjk = "cjk" if script in ("han", "kana") else script
        weights[script_or_cjk] = weights.get(script_or_cjk, 0.0) + _word_weight(script, token)
        tokens.setdefault(script, []).append(token)
    if not weights:
        return None
    script = max(weights, key=weights.get)
    if script == "cjk":
        kana = sum(_word_weight("kana", token) for token in tokens.get("kana", ()))
        return "ja" if kana >= JAPANESE_KANA_SHARE * weights["cjk"] else "zh"
    candidates = frozenset(code for code, scripts in supported_languages().items() if script in scripts)
    if len(candidates) > 1 and candidates & PROMPT_LANGUAGES:
        candidates &= PROMPT_LANGUAGES
    if len(candidates) <= 1:
        return next(iter(candidates), None)
    classifier = chunk_classifier(candidates)
    probabilities = classifier.probabilities([tokens[script]])[0]
    best = int(probabilities.argmax())
    if "en" in candidates and probabilities[best] <= ODDS * probabilities[classifier.labels.index("en")]:
        return "en"
    return classifier.labels[best]


def _word_weight(script: str, token: str) -> float:
    """Words in a token: one, or a share of its characters for scripts written without spaces."""
    return len(token) * UNITS_PER_CHAR[script] if script in UNITS_PER_CHAR else 1.0


__all__ = ["Consistency", "consistency", "detect_language", "measure", "normalize_language", "supported_languages"]
