"""Numbers written in words: "forty-two", "one hundred and five", "minus three", "three quarters", "two point five",
"the fifth".

`spelled_number` reads a whole answer that is a number in words (nothing else but a trailing noun it counts:
"seven apples", "the fifth term") and `digits_for_words` rewrites each number phrase in a sentence as digits, so the
rest of the verifier compares ``42`` whichever way it was written. Only complete phrases are read: a word that is
no number, or words that do not form one number ("five five", "forty twelve"), leave the text as it is.
"""

from __future__ import annotations

import re
from decimal import Decimal

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {  # the short scale, as English math texts use it
    name: 10 ** (3 * (i + 1)) for i, name in enumerate(
        ("thousand", "million", "billion", "trillion", "quadrillion", "quintillion", "sextillion", "septillion",
         "octillion", "nonillion", "decillion"))
}
_ORDINALS = {  # the ordinal word -> the cardinal word it ends a number with ("twenty-first" is "twenty-one")
    "first": "one", "second": "two", "third": "three", "fourth": "four", "fifth": "five", "sixth": "six",
    "seventh": "seven", "eighth": "eight", "ninth": "nine", "tenth": "ten", "eleventh": "eleven", "twelfth": "twelve",
    **{f"{w[:-1] if w.endswith('e') else w}th": w for w in _UNITS if w.endswith("teen")},
    **{w[:-1] + "ieth": w for w in _TENS}, "hundredth": "hundred",
    **{f"{w}th": w for w in _SCALES},
}
_DENOMINATORS = {  # "three quarters", "two thirds", "five eighths"; "seconds" and "thousandths" stay out
    "half": 2, "halves": 2, "quarter": 4, "quarters": 4,
    **{f"{ordinal}{plural}": _UNITS.get(word) or _TENS.get(word) or 100
       for ordinal, word in _ORDINALS.items() if word not in ("one", "two", *_SCALES) for plural in ("", "s")},
}
_NUMBER_WORD = "|".join(sorted({*_UNITS, *_TENS, "hundred", *_SCALES, *_ORDINALS, *_DENOMINATORS, "point", "over"}, key=len,
                               reverse=True))
_JOIN = r"(?:\s*-\s*|\s+(?:and\s+(?:an?\s+)?)?)"  # "forty-two", "one hundred and five", "one and a half"
_PHRASE = re.compile(  # a run of number words, possibly signed, "a"/"an" before a scale or a fraction
    rf"(?i)\b(?:(?:negative|minus)\s+)?(?:an?\s+(?=(?:hundred|thousand|million|billion|trillion|half|quarter)\b))?"
    rf"(?:{_NUMBER_WORD})\b(?:{_JOIN}(?:{_NUMBER_WORD})\b)*"
)
OPERATOR_WORDS = (  # words after a number that change its value ("seven squared" is 49, "seven dozen" 84): never the
    # bare number, so they are refused rather than taken for what it counts
    r"(?:squared|cubed|factorial|inverse|reciprocal|roots?|powers?|dozens?|scores?|gross|"
    rf"(?:{'|'.join(_SCALES)})ths?)"
)
PRONOUN_AFTER = (  # words after "one"/"seven" that make it a pronoun or a count of something else ("one of them")
    r"(?:of\s+(?:the|these|those|them|its|our|all)|that|which|who|whom|whose|such|among|amongst)"
)
_NOT_A_NOUN = (  # words after a number that relate it to something rather than name what it counts ("five times x")
    r"(?:and|or|not|is|in|out|of|over|per|to|from|times|divided|plus|minus|more|less|fewer|than|by|each|greater|"
    rf"smaller|larger|bigger|higher|lower|that|which|who|whom|whose|such|among|amongst|{OPERATOR_WORDS})"
)
NOT_BARE_AFTER = re.compile(rf"(?i)\s+(?:{OPERATOR_WORDS}|{PRONOUN_AFTER})\b")  # a number followed by these is no value
OPERATED_DIGITS = re.compile(  # digits an operator word or "of the" follows: "7 squared" is 49, "1 of the options" none
    rf"(?i)(?<![\w.])\d+(?:\.\d+)?\s+(?:{OPERATOR_WORDS}|of\s+(?:the|these|those|them))\b"
)
_NOUN = rf"(?P<noun>(?:\s+(?!{_NOT_A_NOUN}\b|(?:{_NUMBER_WORD})\b)[a-z]+){{0,2}})"  # "apples", "square units", "term"
_WHOLE = re.compile(  # an answer that is one number in words, possibly with "the" or "a" and the noun it counts
    rf"(?i)(?P<number>(?:(?:the|an?)\s+)?(?:(?:negative|minus)\s+)?(?:{_NUMBER_WORD})\b"
    rf"(?:(?:{_JOIN}|\s*,\s+)(?:{_NUMBER_WORD})\b)*){_NOUN}"
)
_SCALED = re.compile(  # digits with a sign or a scale in words: "minus 3", "2.5 million", "3 thousand apples"
    rf"(?i)(?P<sign>(?:negative|minus)\s+)?(?P<digits>\d+(?:\.\d+)?)(?:\s+(?P<scale>{'|'.join(_SCALES)}))?{_NOUN}"
)
_DIGIT_ORDINAL = re.compile(r"(?i)(?:the\s+)?(?P<digits>\d+)(?:\^\{?(?:\\(?:text|mathrm)\{)?)?(?:st|nd|rd|th)\}?\}?(?P<noun>(?:\s+[a-z]+)?)")  # "the 5th term"
_WRAPPER = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
MAX_PHRASE_WORDS = 24  # "nine hundred ninety-nine million ... and ninety-nine" stays under it


def _cardinal(words: list[str]) -> int | None:
    """The integer the words name ("one hundred and five" -> 105), or None when they are not one number.

    Groups under a thousand ("twenty-five hundred", "three hundred and twelve") followed by decreasing scales.
    """
    if words == ["zero"]:
        return 0
    total, last_scale, i = 0, None, 0
    while i < len(words):
        group, i = _group(words, i)
        if group is None:
            return None
        scale = _SCALES.get(words[i]) if i < len(words) else None
        if scale is None:
            if i < len(words):
                return None
            return total + group
        if last_scale is not None and scale >= last_scale:
            return None
        total, last_scale, i = total + group * scale, scale, i + 1
        if i < len(words) and words[i] == "and":  # "one thousand and five"
            i += 1
            if i == len(words):
                return None
    return total if last_scale is not None else None


def _group(words: list[str], i: int) -> tuple[int | None, int]:
    """A number under ten thousand at `words[i]` (below a hundred, optionally times a hundred plus below a hundred)."""
    first, i = _below_hundred(words, i)
    if i < len(words) and words[i] == "hundred":
        if first is None or first == 0:
            return None, i
        i += 1
        if i < len(words) and words[i] == "and":
            i += 1
        rest, after = _below_hundred(words, i)
        if rest is None and after == i and i > 0 and words[i - 1] == "and":
            return None, i
        return first * 100 + (rest or 0), after
    return (None if first == 0 and i < len(words) else first), i


def _below_hundred(words: list[str], i: int) -> tuple[int | None, int]:
    """A number below a hundred at `words[i]`: "seven", "seventeen", "seventy", "seventy seven"."""
    if i < len(words) and words[i] in _TENS:
        tens = _TENS[words[i]]
        if i + 1 < len(words) and words[i + 1] in _UNITS and 0 < _UNITS[words[i + 1]] < 10:
            return tens + _UNITS[words[i + 1]], i + 2
        return tens, i + 1
    if i < len(words) and words[i] in _UNITS:
        return _UNITS[words[i]], i + 1
    return None, i


def _fraction(count: int, denominator: int, sign: str) -> str:
    return f"{sign}\\frac{{{count}}}{{{denominator}}}"


def _value(phrase: str, ordinals: bool = True) -> str | None:
    """The number a phrase of number words names, as the verifier writes it (``105``, ``-\\frac{3}{4}``, ``5``).

    "the fifth" is 5, "a fifth" and "one fifth" are 1/5, "twenty-first" is 21 (an ordinal only when `ordinals`:
    in a sentence "the fifth step" names no value).
    """
    text = phrase.lower().strip()
    if re.search(rf"(?<!\w)(?!(?:{'|'.join(_SCALES)}),)\w+\s*,", text):
        return None  # a comma only follows a scale ("one thousand, two hundred"); "forty, two" is a list
    hyphened = re.search(r"-\s*([a-z]+)$", text)  # "twenty-third" is an ordinal, "twenty thirds" a fraction
    words = [w for w in re.split(r"[\s,-]+", text) if w]
    if not words or len(words) > MAX_PHRASE_WORDS:
        return None
    article = words.pop(0) if words[0] in ("the", "a", "an") else ""
    sign = "-" if words and words[0] in ("negative", "minus") else ""
    words = words[1:] if sign else words
    if not words or article and sign:
        return None
    if "point" in words:  # "two point five", "point seven five": a decimal, its digits one word each
        whole, digits = words[: words.index("point")], words[words.index("point") + 1:]
        integer = _cardinal(whole) if whole else 0
        if article or integer is None or not digits or any(_UNITS.get(w, 10) > 9 for w in digits):
            return None
        return f"{sign}{integer}.{''.join(str(_UNITS[w]) for w in digits)}"
    last = words[-1]
    if article == "the" or not article and last in _ORDINALS and (len(words) == 1 or hyphened and words[-2] in _TENS):
        if not ordinals or sign or last not in _ORDINALS:
            return None
        value = _cardinal((words[:-1] or ["one"]) + [_ORDINALS[last]] if _ORDINALS[last] in ("hundred", *_SCALES)
                          else words[:-1] + [_ORDINALS[last]])
        count = _cardinal(words[:-2]) if value is None and len(words) > 2 and not article else None
        if count:  # "one twenty-fourth", "five thirty-seconds": a fraction over a compound ordinal
            return _fraction(count, _TENS[words[-2]] + _UNITS[_ORDINALS[last]], "")
        return None if value is None else str(value)
    if "over" in words:  # "three over four"
        numerator, denominator = _cardinal(words[: words.index("over")]), _cardinal(words[words.index("over") + 1:])
        return _fraction(numerator, denominator, sign) if numerator is not None and denominator and not article else None
    if last in _DENOMINATORS:
        whole, numerator = None, words[:-1]
        if article:
            numerator = ["one", *numerator]
        if "and" in numerator:  # "two and three quarters", "one and a half"
            split = len(numerator) - 1 - numerator[::-1].index("and")
            whole, numerator = _cardinal(numerator[:split]), numerator[split + 1:]
            if whole is None:
                return None
        if not numerator and last not in ("half", "quarter"):
            return None  # "tenths" alone names no number
        denominator = _DENOMINATORS[last]
        if hyphened and len(numerator) > 1 and numerator[-1] in _TENS:  # "five thirty-sixths" is 5/36
            denominator, numerator = denominator + _TENS[numerator[-1]], numerator[:-1]
        count = 1 if numerator in ([], ["a"], ["an"]) else _cardinal(numerator)
        if count is None or count == 0 or whole is not None and count >= denominator:
            return None
        return _fraction(count + (whole or 0) * denominator, denominator, sign)
    if article and words[0] not in ("hundred", *_SCALES):
        return None  # "a seven" is no number; "a hundred" is
    value = _cardinal(["one", *words] if article else words)
    return None if value is None else f"{sign}{value}"


def _noun(match: re.Match) -> str:
    return " ".join(match["noun"].split())


def spelled_number(text: str) -> str | None:
    """The value of an answer that is a number in words, possibly with the noun it counts, else None.

    >>> spelled_number(r"\\text{forty-two}"), spelled_number("one hundred and five apples"), spelled_number("minus seven")
    ('42', '105 apples', '-7')
    >>> spelled_number("three quarters"), spelled_number("the fifth term"), spelled_number("one and a half")
    ('\\\\frac{3}{4}', '5', '\\\\frac{3}{2}')
    >>> spelled_number("five five"), spelled_number("a circle"), spelled_number("one in four"), spelled_number("2.5 million")
    (None, None, None, '2500000')
    """
    plain = _WRAPPER.sub(r"\1", text).replace("$", "").replace("**", "").strip().rstrip(".!").strip()
    scaled = _SCALED.fullmatch(plain)
    if scaled and (scaled["sign"] or scaled["scale"]):
        value = Decimal(scaled["digits"]) * _SCALES.get((scaled["scale"] or "").lower(), 1)
        number = f"{'-' if scaled['sign'] else ''}{value.normalize():f}"
        return f"{number} {_noun(scaled)}".strip()
    ordinal = _DIGIT_ORDINAL.fullmatch(plain)
    if ordinal and not re.match(rf"(?i)\s*(?:{_NOT_A_NOUN})\b", ordinal["noun"]):
        return ordinal["digits"]
    match = _WHOLE.fullmatch(plain)
    value = match and _value(match["number"])
    if not value:
        return None
    noun = _noun(match)
    if value.lstrip("-").isdigit() and not re.search(rf"(?i)^the\b|(?:{'|'.join(_ORDINALS)})$", match["number"]):
        return f"{value} {noun}".strip()  # a cardinal and what it counts: "105 apples"
    return value if len(noun.split()) <= (0 if "frac" in value else 1) else None  # "the fifth term", "three quarters"


def digits_for_words(text: str, lone_one: bool = True) -> str:
    """`text` with each phrase of number words that names one cardinal or fraction written as digits; a "one" alone
    only when `lone_one` (after an answer, "let me check this one" is a pronoun, not a new value).

    >>> digits_for_words("there are forty-two apples and three quarters of a pie")
    'there are 42 apples and \\\\frac{3}{4} of a pie'
    """
    def replace(match: re.Match) -> str:
        value = _value(match.group(), ordinals=False)
        if value is None or not lone_one and value == "1" or NOT_BARE_AFTER.match(text, match.end()):
            return match.group()  # "seven squared", "one of the options" stay words: neither is the number
        return value

    return _PHRASE.sub(replace, text)
