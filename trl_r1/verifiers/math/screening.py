"""Cheap, sympy-free steps that run in the calling process: canonical text, plain numbers, screening.

Most real answers are settled here in microseconds: identical canonical text, plain numbers (integers with
thousands separators, decimals, percents, scientific notation, integer fractions) compared exactly with
`fractions.Fraction`, multiple-choice letters and short text answers; and, with the verdict sympy would reach
after a 5-300 ms parse, what cannot equal a plain number by its shape (`not_one_value`), conditions and intervals
with plain bounds (`bounds_set`) and rational functions of one-letter variables (`exact.sampled_equal`). What is
left goes to sympy in a worker process. Inputs that would make sympy or Python's big integers run away are recognised by rule first and
compared as canonical text instead (see `pathology`), so they cost microseconds, not a timeout.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from .exact import exact_value, sampled_equal

MAX_MATH_CHARS = 400  # longer answers are compared as text: no real final answer is that long
MAX_NESTING = 12  # deeper bracket nesting is compared as text (deep recursion in the parser)
MAX_LITERAL_DIGITS = 400  # longer integer literals are compared digit for digit (exact, no sympy)
MAX_LOG10 = 20_000  # powers estimated above 10**MAX_LOG10 are compared as text (towers; also a sum bound ^{10^6})
MAX_FACTORIAL = 2_000  # n! for larger literal n is compared as text
MIN_ROUNDED_DIGITS = 4  # under approximations="rounded", a decimal matches an exact value with this many significant digits
APPROXIMATIONS = ("reject", "rounded")  # a decimal answer for an exact gold it does not equal: wrong, or right if correctly rounded
_PLACE_WORDS = {"tenth": 1, "hundredth": 2, "thousandth": 3, "ten-thousandth": 4, "ten thousandth": 4, "cent": 2,
                "whole number": 0, "integer": 0, "unit": 0, "dollar": 0, "percent": 0}
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_ASKED_ROUNDING = re.compile(  # "round to the nearest hundredth", "to 3 decimal places", "to the nearest 0.01"
    r"(?i)\bnearest\s+(?P<word>ten[- ]thousandth|tenth|hundredth|thousandth|cent|whole\s+number|integer|unit|dollar|percent)s?\b|"
    r"\b(?P<count>\d|one|two|three|four|five|six)\s+decimal\s+(?:places?|digits?)\b|"
    r"\bnearest\s+0\.(?P<zeros>0*)1\b"
)

_SPACING = re.compile(r"(?<!\\)\\[,;: ]|\\quad|\\qquad|~|\\displaystyle|\\limits|\\m?left(?=[^a-zA-Z])|\\m?right(?=[^a-zA-Z])|\\middle")
_TEXT_COMMANDS = re.compile(r"\\(?:mathrm|textbf|textit|textrm|textnormal|mathbf|mathit|mbox|operatorname)\s*\{")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree")
_TRIG_DEGREES = re.compile(  # \sin 30^\circ: an angle in degrees inside a trig function is x*pi/180
    r"(\\(?:sin|cos|tan|cot|sec|csc)(?:\^\{?\d\}?)?)\s*(\(?)\s*(-?\d+(?:\.\d+)?)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°|\\degree)"
)
_TRAILING_UNIT = re.compile(
    r"(?:(?<=[\d})])|(?<=\\pi))\s*\\text\{[^{}]*\}(?:\^\{?[23]\}?)?$"  # 5\text{ cm}^2, 4\pi\text{ cm}^2
    r"|(?<=\d)\s+[a-zA-Z]{2,}(?:\s+[a-zA-Z]{2,}){0,2}(?:\^\{?[23]\}?)?$"  # 12 square units, 4 cm^2
    r"|(?<=\d)\s*[a-zA-Z]+/[a-zA-Z]+(?:\^\{?[23]\}?)?$"  # a rate: 72 km/h, 9.8 m/s^2
    r"|(?<=\d)\s+[gmsLlhKNJWV](?:\^\{?[23]\}?)?$"  # a one-letter SI unit after a space: 8 L, 1500 g, 5 m^2
    r"|(?<=\d)\s*\([a-zA-Z ]{2,}\)$"  # 18 (dollars)
)
_NOT_A_UNIT = re.compile(  # words a trailing "unit" cannot hold: a judgement, hedge or condition ("5 (wrong)", "5 (I think)")
    r"(?i)\b(?:i|we|you|it|is|am|are|was|be|not|no|if|when|unless|for|or|maybe|think|believe|guess|sure|wrong|"
    r"incorrect|false|true|correct|right|checked|verified|unverified|approx\w*|estimated?|about|around|lol|"
    r"case|roughly|likely|hopefully|probably|possibly|nearly)\b"
)
_UNICODE = {"π": "\\pi ", "√": "\\sqrt", "∞": "\\infty ", "−": "-", "–": "-", "×": "\\times ", "·": "\\cdot ",
            "⋅": "\\cdot ", "≤": "\\le ", "≥": "\\ge ", "≠": "\\ne ", "÷": "\\div ", "∗": "*", "✕": "\\times ",
            "⨯": "\\times ", "⁄": "/", "±": "\\pm ", "∓": "\\mp ",
            "⩽": "\\le ", "⩾": "\\ge ", "≦": "\\le ", "≧": "\\ge "}
_VULGAR = {ch: Fraction(unicodedata.numeric(ch)).limit_denominator(10) for ch in "½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅐⅛⅜⅝⅞⅑⅒"}
_VULGAR_FRACTION = re.compile(f"(\\d?)\\s?([{''.join(_VULGAR)}])(\\s?\\d)?")  # 3½, ½, ½ 3
_SUPERSCRIPT = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻ⁿ]+")  # x², 10³³, x⁻¹: a run of superscript characters is one exponent
_SUPERSCRIPT_TEXT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻ⁿ", "0123456789+-n")
_RADICAL = re.compile(r"([√∛∜])\s?(\d+(?:\.\d+)?|[a-zA-Z]|\\pi|\{[^{}]*\}|\([^()]*\))")  # √13, √(x+1), ∛2, √{2}
_RADICAL_INDEX = {"√": "", "∛": "[3]", "∜": "[4]"}
_PYTHON_POWER = re.compile(r"(?<=[\w)\]}.])\s?\*\*\s?(?=[-\w(\\{])")  # x**2 (Python/sympy), not markdown **bold**
_MODULUS = re.compile(  # "2 \\pmod 7", "2 \\pmod{7}", "2 (\\bmod 7)", "2 (mod 7)": a residue stated with its modulus
    r"(?<=[\w}])\s?(?:\\pmod\s?\{?\s?\d+\s?\}?|\(\s?\\?(?:b|)mod\s?\{?\s?\d+\s?\}?\s?\)|\\(?:bmod|mod)\s?\{?\s?\d+\s?\}?)$"
)
_PYTHON_SQRT = re.compile(r"(?<![\\a-zA-Z])sqrt\s?\(([^()]*)\)")  # sqrt(2)
_SYMPY_PRINTING = (  # what sympy's str() and Python print: sympy.pi, Rational(1, 3), S(1), E, 2j, sin(x)
    (re.compile(r"(?<![\w\\])(?:sympy|sp|math|np|numpy)\."), ""),
    (re.compile(r"(?<![\w\\])Rational\(\s?(-?\d+)\s?,\s?(-?\d+)\s?\)"), r"\\frac{\1}{\2}"),
    (re.compile(r"(?<![\w\\])(?:S|Integer|Float)\(\s?(-?\d+(?:\.\d+)?)\s?\)"), r"\1"),
    (re.compile(r"(?<![\w\\{(])E(?=\s?(?:\*\*|\^|\*))|(?<=\*)E(?![\w])"), "e"),  # E**2, 2*E; a lone E is a letter
    (re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)j(?![\w])"), r"\1i"),
    (re.compile(r"(?<![\w\\])(sin|cos|tan|cot|sec|csc|arcsin|arccos|arctan|sinh|cosh|tanh|ln|log)(?=\s?\()"), r"\\\1"),
    (re.compile(r"(?<![\w\\])a(sin|cos|tan)(?=\s?\()"), r"\\arc\1"),
)
_NULL_DELIMITER = re.compile(  # \left( 12 \right. : a sized pair whose one side is the null delimiter "." holds one bracket
    r"\\left\s?(?:[(\[]|\\\{)\s?((?:[^()\[\]{}]|\{(?:[^{}]|\{[^{}]*\})*\})*?)\s?\\right\s?\.|"
    r"\\left\s?\.\s?((?:[^()\[\]{}]|\{(?:[^{}]|\{[^{}]*\})*\})*?)\s?\\right\s?(?:[)\]]|\\\})"
)
_PLAIN_PI = re.compile(r"(?<![\\a-zA-Z])pi(?![a-zA-Z])")  # pi/2 written without LaTeX (math-verify#69)
_PLAIN_EXP = re.compile(r"(?<![\\a-zA-Z])exp\(([^()]*)\)")  # exp(16)
_WORDED = (  # answers written in words that have a symbol: \text{all real numbers} is \mathbb{R}
    (re.compile(r"(?i)^(?:\\text\{)?\s*(?:the\s+set\s+of\s+)?all\s+real\s+numbers\s*\}?$"), r"\\mathbb{R}"),
    (re.compile(r"(?i)^(?:\\text\{)?\s*(?:positive\s+)?infinity\s*\}?$"), r"\\infty"),
    (re.compile(r"(?i)^(?:\\text\{)?\s*(?:does\s+not\s+exist|DNE)\s*\}?$"), r"\\text{DNE}"),
)
_ARRAY_MATRIX = re.compile(  # an array in brackets (or alone) is a matrix
    r"(?:\\m?left)?[\[(]?\s*\\begin\{array\}\{[lcr|\s]*\}(.*?)\\end\{array\}\s*(?:\\m?right)?[\])]?", re.S
)
_DOTS_REPEATING = re.compile(r"(?<![\d.])(\d*)\.(\d*?)(\d)\3{2,}\s*(?:\\[lc]?dots|\.\.\.)")  # 0.999\ldots, 0.1666...
_PART_LABEL = re.compile(r"(?:^|(?<=,))\s*\((?:[a-h]|i{1,3}|iv|vi{0,3})\)\s*")  # (a), (ii) before each part
_SET_MINUS_INTERVAL = re.compile(  # \mathbb{R}\setminus[-2,3]: the reals outside an interval, as a union
    r"\\mathbb\s*\{?R\}?\s*(?:\\setminus|\\backslash|-)\s*(?:\\left)?([(\[])\s*(-?\d+(?:\.\d+)?|[a-zA-Z])\s*,\s*"
    r"(-?\d+(?:\.\d+)?|[a-zA-Z])\s*(?:\\right)?([)\]])"
)
_TEX_TOKEN = r"(\d|[a-zA-Z]|\\(?:pi|alpha|beta|gamma|theta|phi|tau|infty)(?![a-zA-Z]))"  # a one-token argument TeX reads without braces
_FRAC_TOKENS = re.compile(rf"\\frac\s?{_TEX_TOKEN}\s?{_TEX_TOKEN}")
_FRAC_TOKEN_GROUP = re.compile(rf"\\frac\s?{_TEX_TOKEN}\s?\{{")
_FRAC_GROUP_TOKEN = re.compile(rf"\\frac\s?\{{([^{{}}]*)\}}\s?{_TEX_TOKEN}")
_SQRT_DIGITS = re.compile(r"\\sqrt\s?(\d+)(?![.\d])")  # \sqrt13 is the root of 13 as every writer means it (TeX would take 1)
_SET_MINUS_POINT = re.compile(r"\\mathbb\{R\}\s*\\setminus\s*\\\{\s*(-?\d+(?:\.\d+)?)\s*\\\}")  # \mathbb{R}\setminus\{0\}
_REPEATING = re.compile(r"(?<![\d.])(\d*)\.(\d*)\\overline\{(\d+)\}")  # 0.1\overline{6}
_TEXT_NUMBER = re.compile(r"\\text\{\s*([-\d.,]+)\s*\}")  # \text{18} is the number 18
_PLAIN_MIXED = re.compile(r"(?<!\d)(\d{1,3}(?:,\d{3})+|\d+)\s+(\d+)\s*/\s*(\d+)")  # 3 1/2, 1,000 1/2
_BETWEEN_TERMS = r"cdot|times|div|pm|mp|[lg]eq?|[lg]t|neq?|approx|[lg]eqslant|lor|land|in|cup|cap|right|rbrace|rangle|end|quad"
_ENDS_A_TERM = re.compile(  # 3 1/2 stands alone before these; before anything else (x, \pi, /, ^) it is parenthesized
    rf"\s*(?:$|[-+*=<>,;:)\]|}}&]|\\\\|\\[}}|]|\\(?:{_BETWEEN_TERMS}|rfloor|rceil)(?![a-zA-Z]))")
_OPENS_A_TERM = re.compile(rf"(?:^|[\s(\[{{,;=<>+*&|-]|\\\\|\\(?:{_BETWEEN_TERMS}|left|lbrace|langle|lfloor|lceil)|\\begin\{{[a-zA-Z*]+\}})$")  # and after these
_LIST_WORD = re.compile(r",?\s*(?:\\text\{\s*(?:and|or)\s*\}|\b(?:and|or)\b)\s*,?")  # "1, 2, and 3" is a list (and "12 and 134" no number)
_OR_WORD = re.compile(r"\\text\{\s*or\s*\}|\bor\b")
_AND_WORD = re.compile(r"\\text\{\s*and\s*\}|\band\b")
_RELATION = re.compile(r"[<>=]|\\[lg]eq?(?![a-zA-Z])|\\[lg]t(?![a-zA-Z])")
_INEQUALITY = re.compile(r"[<>]|\\[lg]eq?(?![a-zA-Z])|\\[lg]t(?![a-zA-Z])")
_AS_WRITTEN = re.compile(r"^\d+_\{?\d+\}?$|^\d+:\d+$")  # 204_5 (base 5), 12:00 (a time): compared as written
_ASSIGNMENT = re.compile(r"^(?:[a-zA-Z](?:_\{?\w+\}?)?|[a-zA-Z](?:\^\{-1\}|')?\([a-zA-Z]\)|m?\\angle ?[A-Z]{1,3})=")
_TUPLE_ASSIGNMENT = re.compile(r"^\((?:[a-zA-Z],)+[a-zA-Z]\)=[^=]+$")  # (x,y)=(2,3)
_CHOICE = re.compile(r"^\(?([A-E])\)?$")
_LABELLED_CHOICE = re.compile(r"^\(([A-E])\)(.+)$", re.S)
_CHOICE_PRED = re.compile(r"^\(?([A-E])(?:\)|\.|:|$)(.*)$", re.S)
_TEXT_GOLD = re.compile(r"^[A-Za-z][A-Za-z\s'\-]*$")
_NUMBER = re.compile(
    r"^(?P<sign>[-+]?)(?P<int>\d{1,3}(?:,\d{3})+|\d*)(?:\.(?P<frac>\d+))?"
    r"(?:(?:e|E|\\text\{[eE]\}|\\times10\^|\\cdot10\^|\*10\^)\{?(?P<exp>[-+]?\d{1,3})\}?)?(?P<pct>%?)$"
)
_FRACTION = re.compile(r"^(?P<sign>-?)(?:\\frac\{(?P<n1>-?\d+)\}\{(?P<d1>-?\d+)\}|(?P<n2>\d+)/(?P<d2>\d+))$")
_MIXED = re.compile(r"(\d+)\\frac(?:\{(\d+)\}\{(\d+)\}|(\d)(\d))")  # 3\frac{1}{2}, 3\frac12: three and a half
_MIXED_NUMBER = re.compile(r"[-+]?" + _MIXED.pattern)


def _vulgar_fraction(match: re.Match) -> str:
    """``½`` as ``\\frac{1}{2}``; after a digit as plain text, so ``3½`` is the mixed number ``3 1/2``; a digit after it
    starts another number (``½ 3`` is not ½·3)."""
    digit_before, symbol, digit_after = match.groups()
    value = _VULGAR[symbol]
    fraction = f" {value.numerator}/{value.denominator}" if digit_before else f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    return digit_before + fraction + (",\0" + digit_after.strip() if digit_after else "")


def _mixed_number(match: re.Match) -> str:
    """``3 1/2`` as LaTeX's mixed number ``3\\frac{1}{2}`` (3.5), not the ``31/2`` that dropping the space makes.

    A three-digit numerator is a digit group (``12 345/7`` is 12345/7), and so is a three-digit whole part after
    one (``1 234 1/2``). Anything else that cannot be a mixed number is split, never glued: a number before it
    (``1 3 1/2``), a decimal (``0.5 1/2``), an improper or zero-led fraction (``3 5/2``). Before a variable, a
    constant, ``/`` or ``^`` it is parenthesized (``3 1/2 x`` is 3.5x; the parser reads ``3\\frac{1}{2}x`` as 1.5x).
    Only a bounded window around the match is read, so a long text costs linear time.

    >>> canonical("3 1/2"), canonical("-3 1/2"), canonical("1,000 1/2"), canonical("3 1/2 x")
    ('3\\\\frac{1}{2}', '-3\\\\frac{1}{2}', '1000\\\\frac{1}{2}', '(3\\\\frac{1}{2})x')
    >>> canonical("12 345/7"), canonical("3 5/2"), canonical("1 3 1/2"), canonical("0.5 1/2")
    ('12345/7', '3, 5/2', '1, 3\\\\frac{1}{2}', '0.5, 1/2')
    """
    whole, numerator, denominator = match.groups()
    text, start, end = match.string, match.start(), match.end()
    before, after = text[max(0, start - 24): start], text[end: end + 12]
    if re.search(r"[\d.]$", before) or re.match(r"\.\d", after):  # a decimal's tail or head: 0.5 1/2, 1 1/2.0
        return f"{whole},\0{numerator}/{denominator}"
    if re.search(r"[_^]$", before):  # a subscript or exponent, then a fraction: x_2 1/2 is x_2 times 1/2
        return f"{{{whole}}}\\cdot{numerator}/{denominator}"
    if not _OPENS_A_TERM.search(before):  # part of a name or of a command's argument: ab1 1/2, \mathrm{x}1 1/2
        return match.group()
    if len(numerator) == 3:
        return match.group()  # a digit group: 1 234/5
    separate = re.search(r"\d\s$", before) and len(whole) != 3  # 1 3 1/2; but 1 234 1/2 is 1234 1/2
    if numerator[0] == "0" or denominator[0] == "0" or (len(numerator), numerator) >= (len(denominator), denominator):
        return f"{whole},\0{numerator}/{denominator}"
    mixed = f"{whole.replace(',', '')}\\frac{{{numerator}}}{{{denominator}}}"
    if re.match(r"\s?\d", after):  # a number follows: another mixed number (a list), else garbage left as written
        if not re.match(r"\s?\d+\s\d+\s?/", after):
            return match.group()
    elif not _ENDS_A_TERM.match(after):
        mixed = f"({mixed})"
    return f",\0{mixed}" if separate else mixed


def canonical(text: str) -> str:
    """A whitespace-free normal form that keeps the meaning: no spacing commands, sizing, degree signs or units;
    unicode math (π, √13, 10³³, x⁻¹, ≤) and plain or Python ``pi`` / ``exp(x)`` / ``sqrt(2)`` / ``x**2`` as LaTeX.

    >>> canonical(r"\\left( 1, -2 \\right)")
    '(1,-2)'
    >>> canonical(r"\\dfrac{3}{4}\\text{ cm}^2")
    '\\\\frac{3}{4}'
    >>> canonical(r"1{,}234 \\text{ apples}")
    '1,234'
    >>> canonical(r"2 \\pi r^2")
    '2\\\\pi r^2'
    >>> canonical("32, 349"), canonical("32,349")
    ('32, 349', '32,349')
    >>> canonical("3√13"), canonical("4.5 × 10³³"), canonical("x**2 + sqrt(2)"), canonical(r"\\left( 12 \\right.")
    ('3\\\\sqrt{13}', '4.5\\\\times10^{33}', 'x^2+\\\\sqrt{2}', '12')
    """
    text = re.sub(r"\s+", " ", re.sub(r"(?<!\\)\\$", "", text.strip()).strip())  # "185\\": a stray backslash ends nothing;
    # one space per run of whitespace, which every rule below reads alike, so no pattern rescans a long run
    labelled = len(_PART_LABEL.findall(text)) > 1
    if labelled:  # "(a) 12, (b) 5": the parts' values, in order (a tuple, below)
        text = _PART_LABEL.sub(" ", text).strip()
    text = _RADICAL.sub(lambda m: f"\\sqrt{_RADICAL_INDEX[m[1]]}{{{m[2][1:-1] if m[2][0] in '({' else m[2]}}}", text)
    text = _SUPERSCRIPT.sub(lambda m: "^{" + m.group().translate(_SUPERSCRIPT_TEXT) + "}", text)
    for symbol, command in _UNICODE.items():
        text = text.replace(symbol, command)
    text = _PYTHON_SQRT.sub(r"\\sqrt{\1}", _PYTHON_POWER.sub("^", text))
    if re.search(r"[A-Za-z]\(|\.|\dj|\bE\b", text):  # only answers that may hold Python/sympy printing
        for printed, latex in _SYMPY_PRINTING:
            text = printed.sub(latex, text)
    text = _MODULUS.sub("", text)
    text = _NULL_DELIMITER.sub(lambda m: m[1] if m[1] is not None else m[2], text)
    text = _VULGAR_FRACTION.sub(_vulgar_fraction, text)
    text = _PLAIN_EXP.sub(r"e^{\1}", _PLAIN_PI.sub(r"\\pi ", text))
    text = _SPACING.sub(" ", re.sub(r"(?<!\\)\\!\s*", "", text))  # "\!" is a negative space: 32,\! 349
    text = re.sub(r"\s+", " ", text)  # spacing commands made runs again
    text = re.sub(r"\\[dtc]frac", r"\\frac", text)
    text = _FRAC_TOKENS.sub(r"\\frac{\1}{\2}", text)  # TeX's one-token arguments: \frac12, \frac\pi3, \frac ab
    text = _FRAC_TOKEN_GROUP.sub(r"\\frac{\1}{", text)  # \frac1{2}
    text = _FRAC_GROUP_TOKEN.sub(r"\\frac{\1}{\2}", text)  # \frac{\pi}3
    text = _SQRT_DIGITS.sub(r"\\sqrt{\1}", text)
    text = _ARRAY_MATRIX.sub(r"\\begin{pmatrix}\1\\end{pmatrix}", text)  # [\begin{array}{cc}...\end{array}]
    text = re.sub(r"\\langle(?![a-zA-Z])", "(", re.sub(r"\\rangle(?![a-zA-Z])", ")", text))  # a vector <1, 2>
    text = re.sub(r"\\varnothing(?![a-zA-Z])|\\empty(?![a-zA-Z])", r"\\emptyset ", text)
    text = _DOTS_REPEATING.sub(r"\1.\2\\overline{\3}", text)
    text = _REPEATING.sub(_repeating_fraction, text)
    text = _SET_MINUS_POINT.sub(r"(-\\infty,\1)\\cup(\1,\\infty)", text)
    text = _SET_MINUS_INTERVAL.sub(_complement_of_interval, text)
    text = _TEXT_COMMANDS.sub(r"\\text{", text)
    text = re.sub(r"\\text\{\s*(lcm|gcd)\s*\}", r"\\operatorname{\1}", text)  # \operatorname{lcm}(6,7) is 42
    for worded, symbol in _WORDED:
        text = worded.sub(symbol, text)
    text = _TRIG_DEGREES.sub(r"\1\2(\\frac{\3\\pi}{180})", text)
    if "\\pi" in text:  # \frac{\pi}{6}^\circ is pi/6 degrees, not pi/6: a degree there is worth pi/180
        text = _DEGREES.sub(r"\\cdot\\frac{\\pi}{180}", text)
    text = _DEGREES.sub("", text).replace("\\%", "%").replace("\\$", "").replace("{,}", ",")
    text = re.sub(r"\\text\{\s*\}", "", text)
    if or_joins_relations(text, _INEQUALITY):  # x<-2 or x>3: a union, kept for the parser as \lor
        text = " \\lor ".join(part.strip() for part in _OR_WORD.split(text))
    elif or_joins_relations(text, _INEQUALITY, _AND_WORD):  # x>-3 and x<3: an intersection
        text = " \\land ".join(part.strip() for part in _AND_WORD.split(text))
    text = _TEXT_NUMBER.sub(r"\1", _LIST_WORD.sub(", ", text))
    text = _without_unit(_without_outer_groups(text))  # {1,3}: a TeX group, not a set
    items = split_top_level(text)
    unitless = [_without_unit(item) for item in items]
    text = ", ".join(unitless) if len(items) > 1 and unitless != items else text  # 9 cm, 4 cm: each part's unit
    text = _PLAIN_MIXED.sub(_mixed_number, text)
    text = re.sub(r"(\\[a-zA-Z]+)\s+(?=[a-zA-Z])", "\\1\0", text)  # keep "\\pi r" from becoming "\\pir"
    text = re.sub(r"(?<=\d),\s+(?=\d)", ",\0", text)  # "32, 349" is a list; "32,349" is a number
    if re.fullmatch(r"[-+\d\s.]+", text):  # "5 6" is two numbers; "1 234" is one
        text = re.sub(r"(?<=\d)\s+(?=\d)(?!\d{3}(?!\d))", ",\0", text)
    text = re.sub(r"\s+", "", text).replace("\0", " ")
    if labelled and len(split_top_level(text)) > 1:  # ordered parts, never an unordered list: (12,5) is not 5, 12
        text = f"({text})"
    if parse_number(text) is None:  # 2.5e-3 alone is parse_number's; in a sum it is the same number
        text = _E_NOTATION.sub(r"\1\\times10^{\2}", text)
    return _juxtaposed_products(_real_odd_roots(text))


_E_NOTATION = re.compile(  # 2.5e-3, 1.2e3, 4E5 in an expression; 2e-3 (2e minus 3, Euler's e) has no decimal point
    r"(?<![\w.\\^])(\d+\.\d+|\d+(?=[eE]\d))[eE]([-+]?\d{1,3})(?![\w.])"
)
_JUXTAPOSED_FACTOR = re.compile(r"(?<![\w.\\^])(?:\d+|\(-?\d+\))(?=\()")  # 2(3), (2)(3); not x_2(8), 0.1(6), f(2)(3)
MAX_RADICAND_CHARS = 200  # a longer negative radicand is left as written: every root is read in constant time
_SCRIPT_START = re.compile(r"\^(?:\{|-?\d|\\?[a-zA-Z])")  # a power on a bracket: ^{...}, ^2, ^-1, ^\pi
_ODD_ROOT_OF_NEGATIVE = re.compile(r"\\sqrt\[([13579]|\d*[13579])\]\{-")


def _closing_brackets(text: str) -> dict[int, int]:
    """Where each ``(`` and ``{`` of `text` closes, in one pass."""
    closing: dict[int, int] = {}
    opened: dict[str, list[int]] = {"(": [], "{": []}
    for index, char in enumerate(text):
        if char in opened:
            opened[char].append(index)
        elif char in ")}":
            stack = opened["(" if char == ")" else "{"]
            if stack:
                closing[stack.pop()] = index
    return closing


def _juxtaposed_products(text: str) -> str:
    """A number right before a bracket multiplies it, as one factor: ``2(3)`` is ``(2\\cdot(3))``, so ``1/2(3)`` is
    1/6 and ``2(3)^2`` is 18 on the sympy path as on the exact one (latex2sympy reads an integer before a number in
    brackets as a mixed number, ``2(3)`` as 5). Written out in one pass: every bracket is matched once.

    >>> _juxtaposed_products("2(3)+1/2(3)"), _juxtaposed_products("(2)(3)(4)^2"), _juxtaposed_products(r"\\log_2(8)")
    ('(2\\\\cdot(3))+1/(2\\\\cdot(3))', '((2)\\\\cdot(3)\\\\cdot(4)^2)', '\\\\log_2(8)')
    """
    factors = list(_JUXTAPOSED_FACTOR.finditer(text))
    if not factors:
        return text
    closing = _closing_brackets(text)
    inserts: list[tuple[int, int, str]] = []  # (position, order: closes before products before opens, text)
    in_a_product: set[int] = set()  # brackets already factors of a product: (3) in (2)(3)(4) opens none of its own
    for factor in factors:
        if factor.start() in in_a_product:
            continue
        position, groups = factor.end(), []
        while position < len(text) and text[position] == "(" and position in closing:
            end = closing[position] + 1
            if "," in text[position:end]:  # (3, 4): a tuple or an interval, not a factor
                break
            script = _SCRIPT_START.match(text, end)
            if script:
                end = closing.get(end + 1, end + 1) + 1 if script.group() == "^{" else end + len(script.group())
            end += text[end: end + 1] == "!"
            groups.append(position)
            position = end
        if groups:
            inserts += [(factor.start(), 2, "("), (position, 0, ")")] + [(group, 1, "\\cdot") for group in groups]
            in_a_product.update(groups)
    pieces, last = [], 0
    for position, _, insert in sorted(inserts):
        pieces += [text[last:position], insert]
        last = position
    return "".join(pieces) + text[last:]


def _real_odd_roots(text: str) -> str:
    """An odd root of a negative term is the real root (``\\sqrt[3]{-8}`` is -2, not sympy's principal complex root):
    written ``(-\\sqrt[3]{8})``. A radicand that is a sum (``\\sqrt[3]{-8+x}``) is left as written.

    >>> _real_odd_roots(r"\\sqrt[3]{-8}"), _real_odd_roots(r"\\sqrt[3]{-8+x}"), _real_odd_roots(r"\\sqrt[4]{-16}")
    ('(-\\\\sqrt[3]{8})', '\\\\sqrt[3]{-8+x}', '\\\\sqrt[4]{-16}')
    """
    roots = list(_ODD_ROOT_OF_NEGATIVE.finditer(text))
    if not roots:
        return text
    closing = _closing_brackets(text)
    pieces, last = [], 0
    for root in roots:
        opened = root.end() - 2
        if opened not in closing or root.start() < last or closing[opened] - opened > MAX_RADICAND_CHARS:
            continue
        radicand = text[root.end(): closing[opened]]
        if re.search(r"[-+]", re.sub(r"\{[^{}]*\}|\([^()]*\)", "", radicand)):  # a sum or a difference
            continue
        pieces += [text[last: root.start()], f"(-\\sqrt[{root[1]}]{{{radicand}}})"]
        last = closing[opened] + 1
    return "".join(pieces) + text[last:]


_LENGTH_MASS_TIME = {  # physical units whose names differ only by a prefix or a plural: "cm" is not "m"
    "m": ("meter", "metre"), "km": ("kilometer", "kilometre"), "cm": ("centimeter", "centimetre"),
    "mm": ("millimeter", "millimetre"), "in": ("inch", "inche"), "ft": ("foot", "feet"), "yd": ("yard",),
    "mi": ("mile",), "g": ("gram",), "kg": ("kilogram",), "mg": ("milligram",), "lb": ("pound", "lbs"),
    "s": ("second", "sec"), "min": ("minute",), "h": ("hour", "hr"), "l": ("liter", "litre"),
    "ml": ("milliliter", "millilitre"), "km/h": ("kph", "kmh"), "m/s": (), "mph": (),
    "deg": ("degree",), "rad": ("radian",),  # an angle: 30 radians is not 30 degrees
}
_UNIT_NAMES = {name: unit for unit, names in _LENGTH_MASS_TIME.items() for name in (unit, *names)}
_POWER_WORDS = {"square": "^2", "sq": "^2", "cubic": "^3", "cu": "^3"}


def physical_unit(text: str) -> str | None:
    """The physical unit an answer ends with, normalised (``5\\sqrt{2}\\text{ cm}`` -> ``cm``, ``4 square
    meters`` -> ``m^2``), or None when it has none we know (a count noun such as "apples" is not one).

    >>> physical_unit(r"5\\sqrt{2}\\text{ cm}"), physical_unit(r"4\\,\\mathrm{m}^2"), physical_unit("12 apples")
    ('cm', 'm^2', None)
    >>> physical_unit(r"30^\\circ"), physical_unit(r"30\\text{ radians}"), physical_unit("30 degrees")
    ('deg', 'rad', 'deg')
    """
    text = _TEXT_COMMANDS.sub(r"\\text{", _SPACING.sub(" ", text.strip()))
    if re.search(rf"(?:{_DEGREES.pattern})\s*$", text):
        return "deg"
    match = _TRAILING_UNIT.search(text)
    if not match:
        return None
    words = re.sub(r"\\text|[{}()\\]", " ", match.group()).lower().split()
    power = ""
    if words and re.fullmatch(r"\^?[23]", words[-1]):
        power = "^" + words.pop()[-1]
    elif words and re.fullmatch(r".*\^[23]", words[-1]):
        power, words[-1] = "^" + words[-1][-1], words[-1][:-2]
    if words and words[0] in _POWER_WORDS:
        power = _POWER_WORDS[words.pop(0)]
    if len(words) != 1:
        return None
    name = words[0].rstrip(".")
    unit = _UNIT_NAMES.get(name) or (_UNIT_NAMES.get(name[:-1]) if name.endswith("s") and len(name) > 3 else None)
    return unit + power if unit else None


def units_differ(gold: str | tuple[str, ...], answer: str | tuple[str, ...]) -> str | None:
    """Why the answer's units are not the gold's, part by part (None when they agree): each labelled part or list
    item's unit (`physical_unit`) against the gold's at the same place; a part without a unit, on either side, is
    compared by value alone, as one answer is. A tuple holds the parts as written (`extraction.Answer.parts`); a
    text is split at its part labels or top-level commas. Parts that do not pair up compare their last units.

    >>> units_differ("(a) 12 cm, (b) 5 cm", (r"12\\text{ m}", r"5\\text{ km}")), units_differ("9 cm, 4 cm", "9 m, 4 cm")
    ('m for cm (part 1)', 'm for cm (part 1)')
    >>> units_differ("(a) 12 cm, (b) 5 cm", ("12", r"5\\text{ cm}")), units_differ("5 cm", "5 m")
    (None, 'm for cm')
    """
    gold_units, answer_units = (
        [physical_unit(part) for part in (side if isinstance(side, tuple) else _unit_parts(side))] for side in (gold, answer))
    if len(gold_units) != len(answer_units) or len(gold_units) == 1:
        gold_units, answer_units = gold_units[-1:], answer_units[-1:]
    for place, (gold_unit, answer_unit) in enumerate(zip(gold_units, answer_units), 1):
        if gold_unit and answer_unit and gold_unit != answer_unit:
            return f"{answer_unit} for {gold_unit}" + (f" (part {place})" if len(gold_units) > 1 else "")
    return None


def _unit_parts(text: str) -> list[str]:
    """The parts of an answer whose units are compared: its labelled parts (``(a) 12 cm, (b) 5 cm``), else the items
    of a list or of one bracketed tuple (``(12\\text{ cm}, 5\\text{ m})``), else the answer itself."""
    text = _SPACING.sub(" ", text).strip()
    if len(_PART_LABEL.findall(text)) > 1:
        return [part.strip(" ,;") for part in _PART_LABEL.split(text) if part.strip(" ,;")]
    if text[:1] in "([" and text[-1:] in ")]" and split_top_level(text) == [text]:
        inner = split_top_level(text[1:-1])
        return inner if len(inner) > 1 else [text]
    return split_top_level(text)


_INDETERMINATE = re.compile(  # forms sympy evaluates (oo**0 is 1) but mathematics leaves undefined; 0^0 is 1
    r"\\infty\^\{?0\}?(?![\d.])|(?<![\d.])1\^\{?\\infty|\\infty-\\infty"
    r"|\\frac\{0\}\{0\}|\\frac\{\\infty\}\{\\infty\}|(?<![\d.])0(?:\\cdot|\\times)\\infty|\\infty(?:\\cdot|\\times)0(?![\d.])"
)


_CLOSED_AT_INFINITY = re.compile(r"\\infty\s*\]|\[\s*-?\s*\\infty")  # [0,\infty]: no real interval holds infinity


def closed_at_infinity(text: str) -> bool:
    """Whether a canonical answer closes an interval at infinity (``[0,\\infty]``), which sympy would read as open:
    a grader marks the bracket wrong.

    >>> closed_at_infinity(r"[0,\\infty]"), closed_at_infinity(r"[0,\\infty)"), closed_at_infinity(r"[-\\infty,2)")
    (True, False, True)
    """
    return _CLOSED_AT_INFINITY.search(text) is not None


def indeterminate(text: str) -> bool:
    """Whether a canonical answer holds an indeterminate form (``\\infty^0``, ``1^\\infty``, ``0/0``); ``0^0`` is 1
    by the convention of combinatorics and power series.

    >>> indeterminate(r"\\infty^0"), indeterminate(r"10^0"), indeterminate(r"\\infty")
    (True, False, False)
    """
    return bool(_INDETERMINATE.search(text))


def _without_unit(text: str) -> str:
    """`text` without the physical unit it ends with (``5\\text{ cm}^2``, ``72 km/h``, ``18 (dollars)``)."""
    unit = _TRAILING_UNIT.search(text)
    unitless = text[: unit.start()].strip() if unit and not _NOT_A_UNIT.search(unit.group()) else ""
    return unitless if unitless and re.search(r"[\w}]", unitless) else text


def _complement_of_interval(match: re.Match) -> str:
    """``\\mathbb{R}\\setminus[a,b]`` as ``(-\\infty,a)\\cup(b,\\infty)``: each end's bracket flips."""
    left, start, end, right = match.groups()
    return f"(-\\infty,{start}{')' if left == '[' else ']'}\\cup{'(' if right == ']' else '['}{end},\\infty)"


def _repeating_fraction(match: re.Match) -> str:
    """``0.1\\overline{6}`` as the exact fraction it denotes (``\\frac{1}{6}``)."""
    whole, fixed, period = match.groups()
    value = int(whole or "0") + Fraction(int(fixed or "0"), 10 ** len(fixed))
    value += Fraction(int(period), (10 ** len(period) - 1) * 10 ** len(fixed))
    return rf"\frac{{{value.numerator}}}{{{value.denominator}}}"


def or_joins_relations(text: str, relation: re.Pattern = _RELATION, word: re.Pattern = _OR_WORD) -> bool:
    """Whether "or" (or `word`) joins relations (``x<-2`` or ``x>3``, ``x=1`` or ``x=3``): a solution set, not a
    hedge."""
    parts = word.split(text)
    return len(parts) > 1 and all(relation.search(part) for part in parts)


def false_chain(text: str) -> bool:
    """Whether a canonical equation chain states two different constants (``12=13``, ``2+2=5``, ``x=4=5``): read
    by its last side it would be a right value reached by a false step, so it is no answer at all.

    >>> false_chain("x=4=5"), false_chain(r"\\frac{1}{2}=0.5"), false_chain("x=2")
    (True, False, False)
    """
    sides, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char in "{([" and 1 or (char in "})]" and -1 or 0)
        if char == "=" and depth == 0 and text[i - 1: i] not in ("<", ">", "!") and text[i + 1: i + 2] != "=":
            sides.append(text[start:i])
            start = i + 1
    values = [v for v in (_constant(side) for side in [*sides, text[start:]]) if v is not None] if sides else []
    return any(abs(a - b) > max(ta, tb) for a, ta in values for b, tb in values)


_POWER_OF_TEN = re.compile(  # 10^6, 2\times10^{3}, (1.5)\times10^3
    r"(?:\(?\d+(?:\.\d+)?\)?(?:\\times|\\cdot|\*))?\{?10\}?\^\{?[-+]?\d+\}?")
_BASE_NUMERAL = re.compile(r"\d+_\{?\d+\}?")  # 16_{10}, 204_5
_PLAIN_CALCULATION = re.compile(r"[\d.\s()\[\]{}+\-*/^]*\d[\d.\s()\[\]{}+\-*/^]*")
_OPERATIONS = re.compile(  # what a calculation on numbers may be written with; any other letter is a variable
    r"\\(?:d?frac|tfrac|sqrt|binom|sum|prod|max|min|lfloor|rfloor|lceil|rceil|times|cdot|div|over|pm|mp|sin|cos|tan|"
    r"log|ln|exp|pi|left|right)(?![a-zA-Z])")  # a named function (\operatorname{lcm}) is not one of them


def number_form(text: str) -> bool:
    """Whether a canonical answer is written as a number: an integer, a decimal, a percentage, a fraction whose
    value is not an integer (``\\frac{32}{2}`` is a division), a mixed number or a power of ten.

    >>> [number_form(t) for t in ("16", "-16", "(-16)", "1,000", "16.0", r"\\frac{3}{4}", "3/4", r"1.5\\times10^{3}",
    ...                           r"10^{6}", r"3\\frac{1}{2}", "25%")]
    [True, True, True, True, True, True, True, True, True, True, True]
    >>> [number_form(t) for t in (r"\\frac12", "14{,}916", r"\\{12\\}", "((((42))))")]
    [True, True, True, True]
    >>> [number_form(t) for t in ("32/2", r"\\frac{16}{1}", "4+3+9", "2^4", r"\\sqrt{256}")]
    [False, False, False, False, False]
    """
    text = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", text.replace("{,}", ","))  # \frac12, 14{,}916
    while True:  # (-16), -(16), -{16}, \{16\}, ((42)): brackets around a number
        inner = re.sub(r"^([-+]?)(?:\((.*)\)|\{(.*)\}|\\\{(.*)\\\})$", r"\1\2\3\4", text)
        if inner == text:
            break
        text = inner
    number = parse_number(text)
    if number is not None:
        return not (_FRACTION.match(text) and number.value.denominator == 1)
    return any(form.fullmatch(text) for form in (_MIXED_NUMBER, _POWER_OF_TEN, _BASE_NUMERAL))


def unevaluated_arithmetic(text: str) -> bool:
    """Whether a canonical answer is a calculation on numbers (``4+3+9``, ``2\\times8``, ``32/2``, ``2^4``,
    ``\\sqrt{256}``) rather than a result: against a gold that is one number, such an answer restates the question.
    Rewarding it lets a policy copy the calculation from the prompt instead of doing it (a reward hack R1-Zero found
    on SmolLM2-135M-Instruct). An answer with a variable in it is not a calculation; a number form
    (`number_form`) is a result.

    >>> [unevaluated_arithmetic(t) for t in ("4+3+9", r"2\\times8", "20-4", "[4+3]+9", "32/2", r"\\frac{32}{2}", "2^4",
    ...                                      "4+3+9^1", r"\\sqrt{256}", r"\\frac{1}{2}+\\frac{1}{3}")]
    [True, True, True, True, True, True, True, True, True, True]
    >>> [unevaluated_arithmetic(t) for t in ("16", r"\\frac{5}{6}", r"1.5\\times10^{3}", "x+1", r"1+\\sqrt{2}x")]
    [False, False, False, False, False]
    """
    if number_form(text) or len(split_top_level(text)) > 1:  # a list is compared item by item, elsewhere
        return False
    return bool(re.search(r"\d", text)) and not re.search(r"[a-zA-Z]", _OPERATIONS.sub("", text))


def repeating_decimal(text: str) -> bool:
    """Whether an answer as written is a repeating decimal (``0.999\\ldots``, ``0.1\\overline{6}``), a number whose
    canonical form is a fraction (so ``\\frac{1}{1}`` there is no division the answer wrote).

    >>> repeating_decimal(r"0.999\\ldots"), repeating_decimal("0.999")
    (True, False)
    """
    return bool(_DOTS_REPEATING.search(text) or _REPEATING.search(text))


def plain_calculation(text: str) -> bool:
    """`unevaluated_arithmetic` narrowed to the four operations and powers on numbers (``1.25+1.25``,
    ``\\frac{5}{2}\\times1``): what still restates the question against a decimal gold, which an exact form with a
    root or a constant (``\\sqrt{2}`` for 1.4142) legitimately answers.

    >>> plain_calculation("1.25+1.25"), plain_calculation(r"\\sqrt{2}"), plain_calculation("2.5")
    (True, False, False)
    """
    plain = re.sub(r"\\(?:times|cdot|div)(?![a-zA-Z])", "*", re.sub(r"\\d?frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text))
    return not number_form(text) and bool(_PLAIN_CALCULATION.fullmatch(plain))


def _constant(side: str) -> tuple[Fraction, Fraction] | None:
    """An arithmetic side's exact value (`exact.exact_value`) and the tolerance its decimals allow, or None if it is
    not arithmetic. A mixed number is three and a half (``3\\frac{1}{2}``), and a number after a bracket multiplies
    it (``1\\frac{1}{2}2`` is 3), so a garbled side is still tested.

    >>> _constant(r"1\\frac{1}{2}^2"), _constant("0.50"), _constant("x+1")
    ((Fraction(9, 4), Fraction(0, 1)), (Fraction(1, 2), Fraction(1, 200)), None)
    """
    side = _MIXED.sub(r"(\1+\2\4/\3\5)", side)
    value = exact_value(re.sub(r"\)(?=[\d.])", ")*", side))
    if value is None:
        return None
    decimals = max((len(d) for d in re.findall(r"\.(\d+)", side)), default=None)
    return value, Fraction(1, 2 * 10**decimals) if decimals else Fraction(0)


def strip_assignment(gold: str, pred: str) -> tuple[str, str]:
    """``x=5`` against ``5``: keep the right-hand side of the one that is an assignment (last part of a chain).

    A side that labels its values (``AB=4,CD=5``, ``|AB|=1``, ``\\frac{NO}{BO}=\\frac{1}{2}``, ``\\lim_{x\\to0}f(x)=1``)
    is reduced to the values when the other side holds no equation.

    >>> strip_assignment("5", "x=2+3=5")
    ('5', '5')
    >>> strip_assignment("y=2x+3", "y=3+2x")
    ('y=2x+3', 'y=3+2x')
    >>> strip_assignment("AB=4,CD=5", "4,5")
    ('4,5', '4,5')
    """
    gold, pred = _chain_ends(gold), _chain_ends(pred)
    gold_sides, pred_sides = _equation_sides(gold), _equation_sides(pred)
    gold_is = bool(_ASSIGNMENT.match(gold)) and "," not in gold or bool(_TUPLE_ASSIGNMENT.match(gold))
    pred_is = bool(_ASSIGNMENT.match(pred)) and "," not in pred or bool(_TUPLE_ASSIGNMENT.match(pred))
    if _TUPLE_ASSIGNMENT.match(gold) and len(pred_sides) > 1 and not _TUPLE_ASSIGNMENT.match(pred):  # against x=1, y=2
        gold = _assignments(gold)
    elif _TUPLE_ASSIGNMENT.match(pred) and len(gold_sides) > 1 and not _TUPLE_ASSIGNMENT.match(gold):
        pred = _assignments(pred)
    if gold_is and len(pred_sides) == 1:
        gold = gold_sides[-1]
    elif (pred_is or _plain_value(pred) and parse_number(gold) is not None) and len(gold_sides) == 1:
        pred = pred_sides[-1]  # also m+n=16+7=23 against 23: the computed value
    elif len(gold_sides) > 1 and len(pred_sides) == 1:
        gold = _stated_values(gold) or gold
    elif len(pred_sides) > 1 and len(gold_sides) == 1:
        pred = _stated_values(pred) or pred
    return gold, pred


def _equation_sides(text: str) -> list[str]:
    """`text` split at its equals signs outside brackets (the ``=`` in ``\\sum_{k=0}^{n}`` is no equation's).

    >>> _equation_sides("x_{k=1}=2+3=5")
    ['x_{k=1}', '2+3', '5']
    """
    sides, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += 1 if char in "([{" else -1 if char in ")]}" else 0
        if char == "=" and depth == 0:
            sides.append(text[start:i])
            start = i + 1
    return sides + [text[start:]]


def _chain_ends(text: str) -> str:
    """``x=5+5+1=11`` as ``x=11``: an assignment chain states the value it ends on."""
    sides = _equation_sides(text)
    if len(sides) > 2 and _ASSIGNMENT.match(text) and "," not in text and not re.search(r"[<>]|\\[lg]e", text):
        return sides[0] + "=" + sides[-1]
    return text


def _stated_values(text: str) -> str | None:
    """The values of ``label=value`` parts (``AB=4,CD=5`` -> ``4,5``), or None unless every part is one.

    A label is a name or a quantity (``AB``, ``|z|``, ``\\frac{NO}{BO}``, ``f(2)``, ``\\lim_{x\\to0}...``); the value
    holds no variable unless the label is a name (``y_1=2x+3``). An equation in one unknown (``x^2=4``, ``2x=10``) states no value.
    """
    groups = [split_top_level(part) for part in text.split(";")]
    if len(groups) > 1 and all(len(items) > 1 and all(_ASSIGNMENT.match(i) for i in items) for items in groups):
        return ",".join("(" + ",".join(i.split("=", 1)[1] for i in items) + ")" for items in groups)  # p=5,q=2;p=7,q=2
    values = []
    for part in text.split(";"):
        for item in split_top_level(part):
            sides = _equation_sides(item)
            lhs, rhs = sides[0], sides[-1]
            if len(sides) == 1 or not lhs:
                return None
            constant = not re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", rhs))
            if not (_ASSIGNMENT.match(item) or constant and _labels_a_quantity(lhs) and parse_number(rhs) != Number(Fraction(0))):
                return None  # "a+b=0" is an equation, not a labelled value
            values.append(rhs)
    return ",".join(values) if values else None


def _labels_a_quantity(lhs: str) -> bool:
    """Whether the left-hand side names a quantity (``AB``, ``m+n``, ``|z|``, ``f(2)``, ``\\frac{NO}{BO}``) rather than
    being an expression in unknowns (``2x``, ``x^2``, ``a+3z``: an equation, not a stated value)."""
    if re.search(r"\d\s*[a-zA-Z(]|[a-z]\s*\^", re.sub(r"\\[a-zA-Z]+|_\{?\w+\}?", "", lhs)):
        return False  # a coefficient or a power of a variable
    if re.search(r"\\(?:lim|sum|prod|int|max|min|log|ln|angle|triangle|overline|frac)\b|[|(_]", lhs):
        return True
    return len(set(re.findall(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", lhs)))) > 1


def split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets, unless the whole text is one bracketed group or a 1,234 number.

    >>> split_top_level("1,-2"), split_top_level("(1,-2)"), split_top_level("12,345")
    (['1', '-2'], ['(1,-2)'], ['12,345'])
    """
    if parse_number(text) is not None:
        return [text]
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0 and text[i - 1: i + 1] != "\\,":
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p] if len(parts) > 1 else [text]


def _assignments(text: str) -> str:
    """``(x,y)=(1,2)`` as ``x=1,y=2`` (unchanged when the sides do not pair up)."""
    names, _, values = text.partition("=")
    names, values = names[1:-1].split(","), values[1:-1].split(",") if values[:1] in "([" else []
    return ",".join(f"{n}={v}" for n, v in zip(names, values)) if len(names) == len(values) else text


def _plain_value(text: str) -> bool:
    """Whether an equation states a quantity's value (``m+n=23``, ``AB=12``, ``|z|=5``), not an equation in one unknown
    (``x^2=4``, ``2x=10``)."""
    sides = _equation_sides(text)
    if len(sides) == 1 or parse_number(sides[-1]) is None:
        return False
    lhs = sides[0]
    return len(set(re.findall(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", lhs)))) != 1 or "(" in lhs or "|" in lhs


@dataclass(frozen=True)
class Number:
    """A plain number as written: its exact value, its shown decimal places (None if exact) and a percent sign."""

    value: Fraction
    decimals: int | None = None
    significant: int = 0
    percent: bool = False

    def candidates(self) -> tuple[Fraction, ...]:
        """Values the number may stand for: ``25%`` is 25 (a "what percent" answer) or 0.25."""
        return (self.value, self.value / 100) if self.percent else (self.value,)


def parse_number(text: str) -> Number | None:
    """A plain number (canonical form) or None: integers with separators, decimals, %, 1.5e3, 3\\times10^{5}, a/b.

    >>> parse_number("1,234.50")
    Number(value=Fraction(2469, 2), decimals=2, significant=6, percent=False)
    >>> parse_number(r"-\\frac{3}{4}").value
    Fraction(-3, 4)
    >>> parse_number("1,2") is None
    True
    >>> parse_number(r"-3\\frac{1}{2}").value  # a mixed number (3 1/2 and 3½ are written so by `canonical`)
    Fraction(-7, 2)
    """
    if len(text) > MAX_LITERAL_DIGITS:
        return None
    mixed = _MIXED_NUMBER.fullmatch(text)
    if mixed:
        whole, numerator, denominator = mixed[1], mixed[2] or mixed[4], mixed[3] or mixed[5]
        if int(denominator) == 0:
            return None
        value = int(whole) + Fraction(int(numerator), int(denominator))
        return Number(-value if text[0] == "-" else value)
    fraction = _FRACTION.match(text)
    if fraction:
        numerator, denominator = int(fraction["n1"] or fraction["n2"]), int(fraction["d1"] or fraction["d2"])
        if denominator == 0:
            return None
        value = Fraction(numerator, denominator)
        return Number(-value if fraction["sign"] else value)
    number = _NUMBER.match(text)
    if not number or not (number["int"] or number["frac"]):
        return None
    digits = number["int"].replace(",", "") + (number["frac"] or "")
    value = Fraction(int(digits or "0"), 10 ** len(number["frac"] or ""))
    if number["exp"]:
        value *= Fraction(10) ** int(number["exp"])
    if number["sign"] == "-":
        value = -value
    decimals = len(number["frac"]) - int(number["exp"] or 0) if number["frac"] else None
    return Number(value, decimals, len(digits.lstrip("0")), bool(number["pct"]))


def asked_places(question: str | None) -> int | None:
    """The decimal places a question asks its answer to be rounded to, or None if it asks for no rounding.

    >>> asked_places("Round your answer to the nearest hundredth."), asked_places("to 3 decimal places")
    (2, 3)
    >>> asked_places("What is 2/3?") is None
    True
    """
    if not isinstance(question, str):
        return None
    asked = _ASKED_ROUNDING.search(question[-5000:])  # the instruction closes a question; a long one is cut
    if asked is None:
        return None
    if asked["word"]:
        return _PLACE_WORDS[" ".join(asked["word"].lower().split())]
    if asked["count"]:
        return int(_NUMBER_WORDS.get(asked["count"].lower(), asked["count"]))
    return len(asked["zeros"]) + 1


def rounds_to(decimal: Number, exact: float | Fraction, places: int | None = None) -> bool:
    """Whether a decimal is the exact value correctly rounded to its shown places: to `places` when a question
    asked for them, else with at least `MIN_ROUNDED_DIGITS` significant digits shown.

    >>> rounds_to(parse_number("0.3333"), Fraction(1, 3)), rounds_to(parse_number("0.333"), Fraction(1, 3))
    (True, False)
    >>> rounds_to(parse_number("0.33"), Fraction(1, 3), places=2), rounds_to(parse_number("0.333"), Fraction(1, 3), places=2)
    (True, False)
    """
    shown = 0 if decimal.decimals is None and places == 0 else decimal.decimals
    if shown is None or (places is None and decimal.significant < MIN_ROUNDED_DIGITS) or places not in (None, shown):
        return False
    half_unit = Fraction(1, 2) * Fraction(10) ** -shown
    scales = (1, 100) if decimal.percent else (1,)
    return any(abs(decimal.value / scale - Fraction(exact)) <= half_unit / scale for scale in scales)


def approximates(decimal: Number, exact: float | Fraction, approximations: str | int) -> bool:
    """Whether an answer's decimal stands for the gold's exact value it does not equal, under the policy
    `approximations`: "reject" (never), "rounded" (correctly rounded, `MIN_ROUNDED_DIGITS` shown) or the
    decimal places a question asked for (correctly rounded to exactly those)."""
    if approximations == "reject":
        return False
    return rounds_to(decimal, exact, None if approximations == "rounded" else approximations)


def numbers_equal(gold: Number, pred: Number, approximations: str | int = "reject") -> bool:
    """Exact equality of plain numbers. A decimal gold is itself rounded: an answer it rounds matches. A decimal
    answer for an exact gold it does not equal matches only as `approximations` allows (see `approximates`)."""
    if gold.percent == pred.percent:  # both or neither a percentage: the values as written
        if gold.value == pred.value:
            return True
    elif any(g == p for g in gold.candidates() for p in pred.candidates()):
        return True
    if gold.decimals is not None and (pred.decimals is None or gold.decimals < pred.decimals):  # 0.0666668 for 0.066666793
        return any(rounds_to(gold, value) for value in pred.candidates())
    if pred.decimals is not None or approximations == 0:  # 0.3563 for .35625, 13.29 for 3840/289; 3 for 3.2 "to the nearest integer"
        return any(approximates(pred, value, approximations) for value in gold.candidates())
    return False


def pathology(text: str) -> str | None:
    """Why an answer must not reach sympy (it could run for minutes or exhaust memory), or None.

    The rule: brackets nested deeper than `MAX_NESTING`, an integer literal over `MAX_LITERAL_DIGITS` digits, a
    power whose estimated size exceeds 10**`MAX_LOG10` (towers), a factorial of a literal over `MAX_FACTORIAL` or
    of another factorial, or over `MAX_MATH_CHARS` characters. Such answers are compared as text.

    >>> pathology(r"5^{(5^{(5^{(5^5)})}-4)}")
    'huge power'
    >>> pathology(r"2^{2^{2^{2}}}") is None
    True
    """
    depth = deepest = 0
    for char in text:
        depth += 1 if char in "{([" else -1 if char in "})]" else 0
        deepest = max(deepest, depth)
    if deepest > MAX_NESTING:
        return "nested too deep"
    if any(len(m) > MAX_LITERAL_DIGITS for m in re.findall(r"\d+", text)):
        return "giant integer"
    if _log10_bound(text) > MAX_LOG10:
        return "huge power"
    if any(int(n) > MAX_FACTORIAL for n in re.findall(r"(\d+)\s*!", text)) or re.search(r"!\s*[)}]\s*!", text):
        return "giant factorial"
    if len(text) > MAX_MATH_CHARS:
        return "too long"
    return None


def _without_outer_groups(text: str) -> str:
    """`text` without the TeX groups that enclose all of it (``{{1,3}}`` -> ``1,3``), in one pass however deep.

    >>> _without_outer_groups("{ {1,3} }"), _without_outer_groups("{1}+{2}")
    ('1,3', '{1}+{2}')
    """
    if not text.startswith("{"):
        return text
    closing, openers = {}, []
    for i, char in enumerate(text):  # bracket pairs as `_group` counts them: ( and { alike
        if char in "{(":
            openers.append(i)
        elif char in "})" and openers:
            closing[openers.pop()] = i
    start, end = 0, len(text) - 1
    while start < end and text[start] == "{" and closing.get(start) == end:
        start, end = start + 1, end - 1
        while start <= end and text[start].isspace():
            start += 1
        while end >= start and text[end].isspace():
            end -= 1
    return text[start: end + 1]


def _group(text: str, start: int) -> tuple[str, int]:
    """The exponent written at `start` (a braced or parenthesised group, else one token) and where it ends."""
    if start >= len(text):
        return "", start
    if text[start] in "{(":
        depth, i = 0, start
        while i < len(text):
            depth += 1 if text[i] in "{(" else -1 if text[i] in "})" else 0
            i += 1
            if depth == 0:
                break
        return text[start + 1: i - 1], i
    token = re.match(r"\d+(?:\.\d+)?|\\?[a-zA-Z]+|.", text[start:]).group()
    return token, start + len(token)


def _log10_bound(text: str) -> float:
    """A rough upper bound on log10 of the largest power in `text` (towers evaluated top-down in log space)."""
    worst = 0.0
    for match in re.finditer(r"\^", text):
        base = re.search(r"(\d+(?:\.\d+)?)\s*[)}]*\s*$", text[max(0, match.start() - 40): match.start()])
        base_log = math.log10(max(float(base.group(1)), 2.0)) if base else 1.0  # a symbol counts as 10
        exponent, _ = _group(text, match.end())
        exponent_log = _log10_bound(exponent) if "^" in exponent else 0.0
        literals = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", exponent)] or [1.0]
        symbolic = re.search(r"[a-zA-Z]", exponent) is not None
        if exponent_log > 300:
            return math.inf
        bound = max(10.0**exponent_log, max(literals), 10.0 if symbolic else 0.0)
        worst = max(worst, bound * base_log)
    return worst


def _unwrap_text(text: str) -> str:
    """``\\text{(B)}`` -> ``(B)``."""
    return re.sub(r"\\text\{([^{}]*)\}", r"\1", text).strip()


def _numeral(text: str) -> tuple[str, str | None]:
    """``1011_{2}`` -> (``1011``, ``2``): the digits as written and the base subscript (None without one)."""
    digits, _, base = text.replace("{", "").replace("}", "").partition("_")
    return digits, base or None


def text_key(text: str) -> str:
    """Letters and digits only, lower-cased: how short text answers are compared."""
    return re.sub(r"[^a-z0-9]", "", _unwrap_text(text).lower())


def is_text_answer(gold: str) -> bool:
    """A gold that is words, not math: wholly inside ``\\text{}``, or letters with a run of 3+ (``Monday``)."""
    inner = re.fullmatch(r"\\text\{([^{}]*)\}", gold)
    if inner:
        return not re.fullmatch(r"[\d\s.,\-+/%()]*", inner.group(1))
    return bool(_TEXT_GOLD.match(gold)) and re.search(r"[A-Za-z]{3,}", gold) is not None and not re.fullmatch(
        r"sin|cos|tan|log|ln|exp|sqrt|pi|infty|inf", gold
    )


def _exact_numbers(gold: str, pred: str, approximations: str | int = "reject") -> bool | None:
    """Both sides as exact rationals (a plain number, or arithmetic `exact.exact_value` settles), compared as
    plain numbers are (a decimal gold matches a correctly rounded exact value); None unless both are.

    >>> _exact_numbers("7", r"10^{10^{10}}-10^{10^{10}}+7"), _exact_numbers("0.3333", r"\\frac{1}{6}\\cdot2")
    (True, True)
    """
    numbers = []
    for text in (gold, pred):
        number = parse_number(text)
        if number is None:
            value = exact_value(text)
            number = None if value is None else Number(value)
        if number is None:
            return None
        numbers.append(number)
    return numbers_equal(*numbers, approximations)


def quick_verdict(gold: str, pred: str, approximations: str | int = "reject") -> tuple[bool | None, str | None]:
    """Decide a (canonical gold, canonical prediction) pair without sympy, or return (None, None) to defer;
    `approximations` as in `approximates`.

    >>> quick_verdict("1234", "1,234.0")
    (True, None)
    >>> quick_verdict("25%", "0.25")
    (True, None)
    >>> quick_verdict(r"\\text{(B)}", "(C)")
    (False, None)
    """
    if gold == pred:
        return True, None
    if _AS_WRITTEN.match(gold) or _AS_WRITTEN.match(pred):  # a base subscript may be left off: 1011_2 is 1011
        (gold_digits, gold_base), (pred_digits, pred_base) = _numeral(gold), _numeral(pred)
        return gold_digits == pred_digits and (gold_base == pred_base or None in (gold_base, pred_base)), None
    choice = _CHOICE.match(_unwrap_text(gold))
    if choice:
        answer = _CHOICE_PRED.match(_unwrap_text(pred))
        single = answer is not None and not re.search(r"\b[A-E]\b", answer.group(2))
        return bool(single and answer.group(1) == choice.group(1)), None
    labelled = _LABELLED_CHOICE.match(_unwrap_text(gold))  # "(A) 5": the letter, or the option's value
    if labelled:
        value = quick_verdict(labelled.group(2), pred, approximations)[0]
        return bool(value) or quick_verdict(f"({labelled.group(1)})", pred)[0], None
    gold_number, pred_number = parse_number(gold), parse_number(pred)
    if gold_number is not None and pred_number is not None:
        return numbers_equal(gold_number, pred_number, approximations), None
    exact = _exact_numbers(gold, pred, approximations)
    if exact is not None:
        return exact, None
    if is_text_answer(gold):
        return text_key(gold) == text_key(pred), None
    for side, text in (("gold", gold), ("answer", pred)):
        reason = pathology(text)
        if reason:
            return False, f"{side} compared as text: {reason}"
    if gold_number is not None:
        reason = not_one_value(pred)
        if reason:
            return False, reason
    gold_set, pred_set = bounds_set(gold), bounds_set(pred)
    if gold_set is not None and (pred_set is not None or pred_number is not None):
        return gold_set == pred_set, None  # a number is no set (the worker finds the same)
    return sampled_equal(gold, pred), None


_RELATION_SIGN = re.compile(r"[<>]|\\(?:[lg]eq?|[lg]t|neq?|[lg]eqslant)(?![a-zA-Z])")
_WORDS_AND_NUMBER = re.compile(r"[A-Za-z']*(?:-?\d+(?:\.\d+)?)?[A-Za-z']*")
_VARIABLE_LETTER = re.compile(r"[A-DF-HJ-Za-df-hj-z]")  # a letter that names no constant (e, i)


def not_one_value(pred: str) -> str | None:
    """Why a canonical answer cannot equal a plain-number gold, read from its shape (what sympy would conclude after
    a 5-300 ms parse): a list of several items (``5,6``), a relation (``x\\ge5``, ``x\\ne5``), or words with at
    most one number (``Likely5``, ``not5``: sympy reads each letter as a variable). None when its shape allows it.

    >>> not_one_value("5,6"), not_one_value(r"x\\ne5"), not_one_value("not5"), not_one_value(r"\\sqrt{25}")
    ('a list of several values', 'a relation, not a value', 'words, not a value', None)
    """
    if len(split_top_level(pred)) > 1:  # sympy reads it as a list: never one number
        return "a list of several values"
    if "\\text" in pred:  # the parser may drop a \text{...}: left to it
        return None
    if _RELATION_SIGN.search(pred):
        return "a relation, not a value"
    if _WORDS_AND_NUMBER.fullmatch(pred) and re.search(r"[A-Za-z]{2}", pred) and _VARIABLE_LETTER.search(pred):
        return "words, not a value"  # a product of variables
    return None


_BOUND = r"-?\d+(?:\.\d+)?|-?\\frac\{\d+\}\{\d+\}"
_CONDITION_VARIABLE = r"[a-df-hj-zA-DF-HJ-Z]"  # one letter that names no constant (e, i)
_RELATION_OPERATOR = {"<": "<", ">": ">", "\\le": "<=", "\\leq": "<=", "\\leqslant": "<=", "\\lt": "<",
                      "\\ge": ">=", "\\geq": ">=", "\\geqslant": ">=", "\\gt": ">", "\\ne": "!=", "\\neq": "!="}
_OPERATOR = r"(<|>|\\(?:leqslant|geqslant|leq|geq|le|ge|lt|gt|neq|ne)(?![a-zA-Z]))\s?"  # a space before a letter
_SIMPLE_CONDITION = re.compile(  # x<3, 3\ge x, -1<x\le\frac{5}{2}
    rf"(?:(?P<low>{_BOUND}){_OPERATOR})?(?P<variable>{_CONDITION_VARIABLE}){_OPERATOR}(?P<high>{_BOUND})"
    rf"|(?P<only>{_BOUND}){_OPERATOR}(?P<variable2>{_CONDITION_VARIABLE})"
)
_SIMPLE_INTERVAL = re.compile(rf"([(\[])(-\\infty|{_BOUND}),(\\infty|{_BOUND})([)\]])")
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
_INFINITY = math.inf


def bounds_set(text: str) -> tuple | None:
    """The set of reals a canonical answer describes when it is a condition on one variable with plain-number
    bounds (``x<3``, ``3\\ge x``, ``-1<x\\le2``, ``x\\ne3``) or an interval with plain-number or infinite ends
    (``[3,\\infty)``, ``(0,2]``): a tuple of (start, start open, end, end open) intervals, what the worker's
    sets compare (`equivalence._bounds_set`); None for anything else. An open interval ``(a,b)`` with finite
    ends, which is also a pair, is left to the worker.

    >>> bounds_set(r"3\\ge x") == bounds_set(r"(-\\infty,3]"), bounds_set(r"x\\ne3")
    (True, ((-inf, True, Fraction(3, 1), True), (Fraction(3, 1), True, inf, True)))
    """
    interval = _SIMPLE_INTERVAL.fullmatch(text)
    if interval:
        opening, start, end, closing = interval.groups()
        if opening == "(" and closing == ")" and "infty" not in start + end:
            return None  # (1,2): a pair as much as an interval
        low, high = (-_INFINITY if start == "-\\infty" else _bound(start)), (_INFINITY if end == "\\infty" else _bound(end))
        if low is None or high is None:
            return None
        return _interval(low, opening == "(" or low == -_INFINITY, high, closing == ")" or high == _INFINITY)
    condition = _SIMPLE_CONDITION.fullmatch(text)
    if condition is None:
        return None
    low, high = -_INFINITY, _INFINITY
    low_open = high_open = True
    relations = []  # (operator, bound) read as "variable OPERATOR bound"
    groups = condition.groupdict()
    ops = [g for g in condition.groups() if g is not None and g in _RELATION_OPERATOR]
    if groups["only"] is not None:
        relations.append((_FLIPPED[_RELATION_OPERATOR[ops[0]]], groups["only"]))
    else:
        if groups["low"] is not None:
            relations.append((_FLIPPED[_RELATION_OPERATOR[ops[0]]], groups["low"]))
        relations.append((_RELATION_OPERATOR[ops[-1]], groups["high"]))
    if len(relations) == 2 and "!=" in (relations[0][0], relations[1][0]):
        return None  # 1\ne x<3: left to the worker
    for operator, bound in relations:
        value = _bound(bound)
        if value is None:  # \frac{1}{0}
            return None
        if operator == "!=":
            return (-_INFINITY, True, value, True), (value, True, _INFINITY, True)
        if operator in ("<", "<=") and value <= high:
            high, high_open = value, operator == "<" or (value == high and high_open)
        elif operator in (">", ">=") and value >= low:
            low, low_open = value, operator == ">" or (value == low and low_open)
    return _interval(low, low_open, high, high_open)


def _bound(text: str) -> Fraction | None:
    number = parse_number(text)
    return None if number is None else number.value


def _interval(low, low_open: bool, high, high_open: bool) -> tuple:
    """One interval as `bounds_set` gives it: () when empty."""
    if low > high or low == high and (low_open or high_open):
        return ()
    return ((low, low_open, high, high_open),)
