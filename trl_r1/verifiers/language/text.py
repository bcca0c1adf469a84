"""Turning a chain of thought into countable words: NFKC, neutral math/code/URLs, script-tagged tokens.

Math, numbers and code count neither for nor against the target language, but prose hidden in them still
counts, because under RL anything neutral becomes a hiding place: ``\\text{}`` in LaTeX, long letter runs in
math, code comments, string literals with spaces, prose-like lines in code blocks, prose in backticks, and
any non-ASCII letters in code all stay in the text that is measured.
"""

from __future__ import annotations

import re
import unicodedata

# Unicode blocks of each script (letters and combining marks inside them are taken).
_SCRIPT_RANGES = {
    "han": [(0x3005, 0x3007), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF)],
    "kana": [(0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F)],
    "hangul": [(0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xAC00, 0xD7FF)],
    "latin": [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x2AF), (0x300, 0x36F), (0x1E00, 0x1EFF), (0x2C60, 0x2C7F),
              (0xA720, 0xA7FF)],
    "greek": [(0x370, 0x3FF), (0x1F00, 0x1FFF)],
    "cyrillic": [(0x400, 0x52F), (0x1C80, 0x1C8F), (0x2DE0, 0x2DFF), (0xA640, 0xA69F)],
    "armenian": [(0x530, 0x58F)],
    "hebrew": [(0x590, 0x5FF)],
    "arabic": [(0x600, 0x6FF), (0x750, 0x77F), (0x8A0, 0x8FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)],
    "devanagari": [(0x900, 0x97F), (0xA8E0, 0xA8FF)],
    "bengali": [(0x980, 0x9FF)], "gurmukhi": [(0xA00, 0xA7F)], "gujarati": [(0xA80, 0xAFF)],
    "oriya": [(0xB00, 0xB7F)], "tamil": [(0xB80, 0xBFF)], "telugu": [(0xC00, 0xC7F)],
    "kannada": [(0xC80, 0xCFF)], "malayalam": [(0xD00, 0xD7F)], "sinhala": [(0xD80, 0xDFF)],
    "thai": [(0xE00, 0xE7F)], "lao": [(0xE80, 0xEFF)], "tibetan": [(0xF00, 0xFFF)], "myanmar": [(0x1000, 0x109F)],
    "georgian": [(0x10A0, 0x10FF), (0x1C90, 0x1CBF)], "ethiopic": [(0x1200, 0x139F)], "khmer": [(0x1780, 0x17FF)],
}


# Script codes: `str.translate` maps a word to one letter per character, which tells its script(s) at C speed.
_CODES = {
    "han": "H", "kana": "K", "hangul": "G", "latin": "L", "greek": "E", "cyrillic": "C", "armenian": "M",
    "hebrew": "W", "arabic": "A", "devanagari": "D", "bengali": "B", "gurmukhi": "P", "gujarati": "J",
    "oriya": "O", "tamil": "T", "telugu": "U", "kannada": "N", "malayalam": "Y", "sinhala": "S", "thai": "I",
    "lao": "Q", "tibetan": "R", "myanmar": "V", "georgian": "X", "ethiopic": "Z", "khmer": "F",
    "other": "k",  # letters of any other script: they count as non-target words
}
SCRIPT_OF_CODE = {code: name for name, code in _CODES.items()}
_ASTRAL_HAN = (0x20000, 0x3134F)  # CJK extensions B-H


def _script_table() -> dict[int, str]:
    """Code point -> script code, for every letter and combining mark (joiners map to themselves)."""
    table = {}
    for name, ranges in _SCRIPT_RANGES.items():
        for lo, hi in ranges:
            table.update((c, _CODES[name]) for c in range(lo, hi + 1) if unicodedata.category(chr(c))[0] in "LM")
    table.update((c, _CODES["other"]) for c in range(0x10000) if c not in table and unicodedata.category(chr(c))[0] == "L")
    table.update((c, "H") for c in range(_ASTRAL_HAN[0], _ASTRAL_HAN[1] + 1))
    return table


_SCRIPT_TABLE = _script_table()


def _bmp_class(codes) -> str:
    """A regex class of BMP code points as ranges (`re` tests such a class in constant time)."""
    runs: list[list[int]] = []
    for code in sorted(c for c in codes if c < 0x10000):
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "[" + "".join(re.escape(chr(lo)) + ("-" + re.escape(chr(hi)) if hi > lo else "") for lo, hi in runs) + "]"


_LETTER = _bmp_class(_SCRIPT_TABLE)
# One scan finds words (a digit glued in front marks a unit or a coefficient, "5kg", "3x"; apostrophes and the
# Persian zero-width non-joiner stay inside words), sentence ends and clause ends, in order.
WORD_OR_BREAK = re.compile(
    rf"(\d?{_LETTER}+(?:['’\u200c]{_LETTER}+)*|[\U{_ASTRAL_HAN[0]:08x}-\U{_ASTRAL_HAN[1]:08x}]+)"
    r"|([.!?؟।۔](?=\s|[^\x00-\x7f])|[。\n])"  # "?" of "什么？我们" (NFKC made it ASCII) ends a sentence too
    r"|([,;:،؛，、；：])"
)
_SCRIPT_RUN = re.compile(r"(.)\1*")


def script_runs(word: str) -> list[tuple[str, str]]:
    """(script, part) for each run of one script in a word ("日本語のテキスト" is Han then kana).

    >>> script_runs("日本語のテキスト")
    [('han', '日本語'), ('kana', 'のテキスト')]
    >>> script_runs("c'est")
    [('latin', "c'est")]
    """
    if word[0].isdigit():  # glued to a number: a unit or coefficient in Latin/Greek ("5kg", "3x"), else a word ("5個")
        runs = script_runs(word[1:])
        return runs[1:] if runs and runs[0][0] in ("latin", "greek") else runs
    if word.isascii():
        return [("latin", word)]
    codes = word.translate(_SCRIPT_TABLE)
    first = codes[0]
    if codes.count(first) + codes.count("'") + codes.count("’") + codes.count("\u200c") == len(codes):
        return [(SCRIPT_OF_CODE.get(first, "other"), word)]
    return [(SCRIPT_OF_CODE[m.group(1)], word[m.start():m.end()]) for m in _SCRIPT_RUN.finditer(codes)
            if m.group(1) in SCRIPT_OF_CODE]


def words(text: str) -> list[tuple[str, str]]:
    """(script, word) for each word of a text, with neutral tokens left out.

    >>> words("c'est 日本語のテキスト, Ελλάδα x 5kg ABC sin 42 3个")
    [('latin', "c'est"), ('han', '日本語'), ('kana', 'のテキスト'), ('greek', 'Ελλάδα'), ('han', '个')]
    """
    return [run for word, _, _ in WORD_OR_BREAK.findall(text) if word for run in script_runs(word) if not is_neutral(*run)]



# Function and operator names that are math, not prose, wherever they appear.
MATH_NAMES = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp lim max min sup inf arg det dim "
    "ker gcd lcm mod deg sgn cov tr diag proj const erf".split()
)

UNITS = frozenset("mm cm dm km mg kg ms ml dl cl mph kmh kwh hz khz mhz ghz".split())
_NEUTRAL_NAMES = MATH_NAMES | UNITS

_CODE_PUNCTUATION = re.compile(r"[=(){}\[\];<>]|->|::|\+\+|&&|\|\|")
# Lines of code that read like words ("for number in numbers:", "import math as m").
_CODE_STATEMENT = re.compile(
    r"\s*(?:for|if|elif|else|while|def|class|return|import|from|with|try|except|finally|raise|assert|yield|"
    r"let|const|var|function|fn|pub|public|private|static|int|void|struct|enum|case|switch|using|package|func)\b"
    r"|.*:\s*$"
)
_PROSE_WORD = re.compile(r"[^\W\d_]{2,}")
# words separated by spaces only; a run starts at a word's first letter and takes whole words (possessive), or a
# long word without a space after it is retried from each of its letters (quadratic: 13 s for 20,000 letters)
_PROSE_RUN = re.compile(r"(?<![^\W\d_])[^\W\d_]{2,}+(?:[ ]+[^\W\d_]{2,}+)+")
_NON_ASCII_LETTERS = re.compile(r"[^\W\d_a-zA-Z]+")
_CODE_TEXT = re.compile(
    r'(?P<string>"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')'
    r"|(?P<comment>(?:#|//|--)(?![A-Za-z!])[^\n]*|/\*[\s\S]*?\*/|<!--[\s\S]*?-->)"
)
_PROSE_FENCES = frozenset({"", "text", "txt", "plaintext", "plain", "markdown", "md"})
_FENCE = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n?([\s\S]*?)(?:```|\Z)")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_URL = re.compile(r"\bhttps?://\S+|\bwww\.\S+")
# Inline $...$ follows pandoc: no space just inside the dollars, no digit right after the closing one
# (so "costs $5 and $10" is prose). Display math and LaTeX environments may span lines.
# Openers are found by one regex and closers by `str.find` (`_math_spans`): a lazy ``[\s\S]*?`` to the closer
# rescans to the end from every unclosed opener, seconds for 10,000 unclosed ``\begin{equation}``.
_MATH_OPENER = re.compile(
    r"\$\$|\\\[|\\\(|\\begin\{(equation|align|gather|multline|eqnarray|math|displaymath|array|cases)(\*?)\}|\$(?=[^\s$])"
)
_INLINE_MATH = re.compile(r"\$(?=[^\s$])(?:[^$\n]|\n(?!\s*\n))*?(?<=[^\s\\$])\$(?!\d)")
_MATH_CLOSERS = {"$$": "$$", "\\[": "\\]", "\\(": "\\)"}
# Identifiers written in prose ("定义 dp[i]", "调用 is_prime(n)", "stack.append(c)", "nums.length", "令 left = 0"):
# a name before a call (short arguments) or an index, a snake_case name, a dotted attribute, a name touching "=",
# "+" or a comparison. ASCII only, so prose in other scripts never hides here, and a name has at most three
# snake_case parts and three dotted parts, so "the_sum_of_all_terms" or "so.the.answer.is.five" still counts.
_NAME_REST = r"[A-Za-z0-9]*(?:_[A-Za-z0-9]+){0,2}"
_NAME = rf"[A-Za-z_]{_NAME_REST}"
_IDENTIFIER = re.compile(  # each alternative starts with a letter or an operator, so that the scan stays fast
    rf"([=+<]) ?{_NAME}(?![\w.])"
    rf"|[A-Za-z_](?<![\w.][A-Za-z_])(?:{_NAME_REST}(?:\.{_NAME}){{0,2}}(?:\([\w.,+*/%-]{{0,12}}\)(?![\w.])|(?=[(\[]))"
    rf"|[A-Za-z0-9]*(?:_[A-Za-z0-9]+){{1,2}}(?![\w.])|{_NAME_REST}(?:\.[a-z_]{_NAME_REST}){{1,2}}(?![\w.])"
    rf"|{_NAME_REST}(?= ?(?:[=<>+]|!=)))",
    re.ASCII,
)
_CODE_SIGN = re.compile(r"[_(\[=+<>]|\.[a-z_]")  # every `_IDENTIFIER` match is on a line with one of these
_TEXT_COMMAND = re.compile(r"\\(?:text\w*|mbox|hbox|emph|intertext)\s*\{([^{}]*)\}")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_MATH_WORD = re.compile(r"[^\W\d_]+")

MAX_CHARS = 400_000  # longer reasoning is measured on its first MAX_CHARS characters (bounded time per sample)


def looks_like_prose(text: str, min_words: int) -> bool:
    """Words rather than code: at least `min_words` words, no code punctuation (``= ( ) ; { }`` ...), and not
    a statement ("import numpy as np", "for x in xs:")."""
    return not (_CODE_PUNCTUATION.search(text) or _CODE_STATEMENT.match(text)) and len(_PROSE_WORD.findall(text)) >= min_words


def code_prose(code: str, min_words: int = 4) -> str:
    """The prose in a piece of code: comments, string literals with spaces or non-ASCII letters, prose-like
    lines, runs of `min_words` plain words outside statements, and non-ASCII letters anywhere (identifiers,
    keywords and short expressions stay neutral).

    >>> code_prose('x = f("bonjour tout le monde")  # somme des carrés\\nreturn x')
    'bonjour tout le monde\\n somme des carrés'
    >>> code_prose("f(la somme des nombres) + g(x)")
    'la somme des nombres'
    """
    pieces: list[str] = []

    def keep(match: re.Match) -> str:
        body = match.group().strip("\"'#/*-<>!")
        if match.lastgroup == "comment" or " " in body.strip() or _NON_ASCII_LETTERS.search(body):
            pieces.append(body)
        return " "

    rest = _CODE_TEXT.sub(keep, code)
    for line in rest.splitlines():
        if looks_like_prose(line, min_words):
            pieces.append(line)
        else:
            runs = [] if _CODE_STATEMENT.match(line) else _PROSE_RUN.findall(line)
            pieces.extend([run for run in runs if len(run.split()) >= min_words] or _NON_ASCII_LETTERS.findall(line))
    return "\n".join(pieces)


def math_prose(math: str) -> str:
    r"""The prose in a LaTeX formula: ``\text{...}``-style arguments, long letter runs that are not function
    names (``\mathrm{bonjour}`` or bare ``bonjour``), and letters of scripts other than Latin and Greek.

    >>> math_prose(r"$x = \frac{a}{b} \text{ where } \sin x > 0 \mathrm{d}x, \mathrm{bonjour}$")
    'where bonjour'
    """
    pieces = [m.strip() for m in _TEXT_COMMAND.findall(math)]
    rest = _COMMAND.sub(" ", _TEXT_COMMAND.sub(" ", math))
    for word in _MATH_WORD.findall(rest):
        if not (word.isascii() or "\u0370" <= word[0] <= "\u03ff") or (len(word) >= 4 and word.lower() not in MATH_NAMES):
            pieces.append(word)
    return " ".join(p for p in pieces if p)


def prose_text(text: str) -> str:
    """The text to measure: NFKC-normalised (full-width letters become ASCII), with code, math and URLs
    replaced by the prose they hide.

    >>> prose_text("Ｔｈｅ sum $\\sum_{i=1}^{n} i$ is `n*(n+1)/2`, see https://x.org/a.").split()
    ['The', 'sum', 'is', ',', 'see']
    """
    text = unicodedata.normalize("NFKC", text[:MAX_CHARS])
    if "`" in text:
        text = _FENCE.sub(lambda m: _fenced(m.group(1).lower(), m.group(2)), text)
        text = _INLINE_CODE.sub(lambda m: _apart(m.group(1) if looks_like_prose(m.group(1), 3) else code_prose(m.group(1), 3)), text)
    if "://" in text or "www." in text:
        text = _URL.sub(" ", text)
    if "$" in text or "\\" in text:
        text = "".join(_apart(math_prose(text[start:end])) if math else text[start:end]
                       for start, end, math in _math_spans(text))
        text = _COMMAND.sub(" ", text)
    # identifiers go (an operator stays); lines without a sign of code are skipped, ~7x faster
    return "\n".join(_IDENTIFIER.sub(r"\1 ", line) if _CODE_SIGN.search(line) else line for line in text.split("\n"))


def _math_spans(text: str) -> list[tuple[int, int, bool]]:
    r"""The text cut into (start, end, is_math) spans: ``$$...$$``, ``\[...\]``, ``\(...\)``, the display
    environments and pandoc's inline ``$...$``, leftmost first, each to its first closer, in linear time (a closer
    not found after one opener is not searched for again).

    >>> text = r"a $x$ b \begin{align*}z\end{align*} \[open"
    >>> [text[start:end] for start, end, math in _math_spans(text) if math]
    ['$x$', '\\begin{align*}z\\end{align*}']
    """
    spans: list[tuple[int, int, bool]] = []
    unclosed: set[str] = set()
    done = position = 0
    while (opener := _MATH_OPENER.search(text, position)) is not None:
        start = opener.start()
        if opener.group(1):
            closer = f"\\end{{{opener.group(1)}{opener.group(2)}}}"
        else:
            closer = _MATH_CLOSERS.get(opener.group())
        if closer is None:  # inline $...$: bounded by the next dollar or blank line
            inline = _INLINE_MATH.match(text, start)
            end = inline.end() if inline else -1
        else:
            found = -1 if closer in unclosed else text.find(closer, opener.end())
            end = found + len(closer) if found != -1 else -1
            if found == -1:
                unclosed.add(closer)
        if end == -1:
            position = start + 1
            continue
        if start > done:
            spans.append((done, start, False))
        spans.append((start, end, True))
        done = position = end
    if done < len(text):
        spans.append((done, len(text), False))
    return spans


def _apart(prose: str) -> str:
    """Prose found in math or code, as sentences of their own (a space when there is none, so that the
    sentence around a formula stays one sentence)."""
    return "\n" + prose + "\n" if prose.strip() else " "


def _fenced(language: str, body: str) -> str:
    """A fenced block: prose as is when untagged or tagged text/markdown and it reads as prose, else its code prose."""
    return _apart(body if language in _PROSE_FENCES and looks_like_prose(body, 3) else code_prose(body))


def is_neutral(script: str, word: str) -> bool:
    """Tokens that are math or names rather than words: single Latin/Greek letters (variables), short
    all-caps tokens (points, acronyms: ABC, GCD), function names and units. (Latin/Greek letters glued to a
    number, "5kg", "3x", are dropped by `script_runs`.)

    >>> [w for w in ("x", "ABC", "sin", "cm", "Ab", "le") if is_neutral("latin", w)]
    ['x', 'ABC', 'sin', 'cm']
    """
    return script in ("latin", "greek") and (
        len(word) == 1 or (len(word) <= 4 and word.isupper()) or word.lower() in _NEUTRAL_NAMES
    )
