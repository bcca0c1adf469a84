"""Exact arithmetic on numbers at bounded cost, in the calling process: the value of ``10^{10^{10}}-10^{10^{10}}+7``,
``2^{1000000}/2^{999999}``, a sum of thousands of terms, a number in hundreds of brackets.

sympy is too slow or unsafe for such answers (`screening.pathology` keeps them from it), yet their value is plain.
`exact_value` reads a canonical answer made only of numbers, ``+ - * / ^ !``, ``\\cdot``, ``\\times``, ``\\div``,
``\\frac`` and brackets, in one left-to-right pass with explicit stacks (no recursion, so any nesting depth), and
computes with `fractions.Fraction`. A power too large to write out is kept as a product of prime-power atoms
(``10^{10^{10}}`` is ``2^{10^{10}} 5^{10^{10}}``), so equal huge parts cancel exactly and ``2^{1000000}/2^{999999}``
is 2. Every number is capped (`MAX_BITS`), as are the bits computed in all, exponents and the number of distinct
huge terms; past a cap, or
on anything it does not read (a variable, a root, ``3\\frac{1}{2}``, ``2^34``), the answer is None: undecided, left
to the other rules. A value is returned only when it is an exact rational, so an answer is never accepted on an
estimate.

>>> exact_value(r"10^{10^{10}}-10^{10^{10}}+7"), exact_value(r"\\frac{2^{1000000}}{2^{999999}}")
(Fraction(7, 1), Fraction(2, 1))
>>> exact_value(r"10^{10^{10}}") is None, exact_value("x+1") is None
(True, True)
"""

from __future__ import annotations

import math
import re
import threading
from fractions import Fraction

MAX_CHARS = 20_000  # a longer answer is undecided (about 4,000 terms; the pass costs about 5 us a character)
MAX_BITS = 16_384  # a written-out number (numerator or denominator) past this many bits: undecided
MAX_DIGITS = 4_000  # a longer literal: undecided (Python reads at most 4,300 digits into an int)
MAX_WORK_BITS = 4_000_000  # the bits of all numbers computed for one answer past this: undecided (bounds the time)
ATOM_BITS = 256  # a power past this many bits stays a product of prime-power atoms
MAX_EXPONENT_BITS = 128  # an atom's exponent past this: undecided (no tower grows unchecked)
MAX_TERMS = 32  # distinct huge terms of a sum past this: undecided
MAX_SMALL_POWER = 8  # a sum with huge terms is raised to at most this power by multiplying out
MAX_FACTORIAL = 2_000
_SMALL_PRIMES = tuple(p for p in range(2, 1000) if all(p % q for q in range(2, math.isqrt(p) + 1)))
_TOKEN = re.compile(r"\d*\.\d+|\d+|\\(?:frac|cdot|times|div)(?![a-zA-Z])|[-+*/^!()\[\]{}]")
_WRITTEN_ARITHMETIC = re.compile(r"(?:[\d\s.+\-*/^!()\[\]{}]|\\(?:[dt]?frac|cdot|times|div|left|right|[,;: !])(?![a-zA-Z]))*")
_OPENERS = {"(": ")", "[": "]", "{": "}"}
SAMPLE_POINTS = (Fraction(13, 10), Fraction(-27, 10), Fraction(31, 7), Fraction(-5, 11))  # where variables are set
# (`equivalence` samples at the same points, so both decide alike)
_VARIABLE_ARITHMETIC = re.compile(  # arithmetic with one-letter variables (no e or i: constants to the parser)
    r"(?:[\d.+\-*/^()\[\]{}]|\\(?:frac|cdot|times)(?![a-zA-Z])|[a-df-hj-zA-DF-HJ-Z](?![a-zA-Z\d.({\[]))+")
_DIVISOR = re.compile(r"/(?:\d+(?:\.\d+)?|[a-zA-Z]|\([^()]*\)|\{[^{}]*\})(?:\^(?:\d|\{[^{}]*\}))?")
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "juxtaposed": 2.5, "neg": 3, "^": 4}  # 1/2(3) is 1/(2*3), as the parser reads 1/2(x)


class _Undecided(Exception):
    """The answer is outside what this evaluator reads, or past a cost cap."""


# A value is a dict {monomial: coefficient}: monomial a sorted tuple of (base, exponent) atoms, base a positive
# integer (a small prime or a cofactor without small prime factors), coefficient a non-zero Fraction.
# The empty monomial holds the rational part.


_work = threading.local()  # bits computed so far for the answer being read (per thread: rewards run in threads)


def _check(value: Fraction) -> Fraction:
    numerator, denominator = value.numerator.bit_length(), value.denominator.bit_length()
    _work.bits += numerator + denominator
    if max(numerator, denominator) > MAX_BITS or _work.bits > MAX_WORK_BITS:
        raise _Undecided("number too large")
    return value


def _factor(n: int) -> dict[int, int]:
    """Prime powers of `n` for primes below 1000, and the cofactor as one base."""
    factors: dict[int, int] = {}
    for p in _SMALL_PRIMES:
        if n == 1:
            break
        while n % p == 0:
            n //= p
            factors[p] = factors.get(p, 0) + 1
    if n > 1:
        factors[n] = factors.get(n, 0) + 1
    return factors


def _monomial(atoms: dict[int, int]) -> tuple:
    return tuple(sorted((b, e) for b, e in atoms.items() if e))


def _normalize(coefficient: Fraction, atoms: dict[int, int]) -> tuple[tuple, Fraction]:
    """A term with every atom small enough to write out folded into its coefficient."""
    kept = {}
    for base, exponent in atoms.items():
        if not exponent:
            continue
        if abs(exponent) * base.bit_length() <= ATOM_BITS:
            coefficient = _check(coefficient * Fraction(base) ** exponent)
        elif exponent.bit_length() > MAX_EXPONENT_BITS:
            raise _Undecided("exponent too large")
        else:
            kept[base] = exponent
    return _monomial(kept), coefficient


def _add(a: dict, b: dict) -> dict:
    total = dict(a)
    for monomial, coefficient in b.items():
        value = _check(total.get(monomial, 0) + coefficient)
        if value:
            total[monomial] = value
        else:
            total.pop(monomial, None)
    if len(total) > MAX_TERMS:
        raise _Undecided("too many huge terms")
    return total


def _multiply(a: dict, b: dict) -> dict:
    product: dict = {}
    for m1, c1 in a.items():
        for m2, c2 in b.items():
            atoms = dict(m1)
            for base, exponent in m2:
                atoms[base] = atoms.get(base, 0) + exponent
            product = _add(product, dict([_normalize(_check(c1 * c2), atoms)]))
    return product


def _rational(value: dict) -> Fraction | None:
    """The value written out as a Fraction, or None when it holds a power too large to write out."""
    total = Fraction(0)
    for monomial, coefficient in value.items():
        for base, exponent in monomial:
            if abs(exponent) * base.bit_length() > MAX_BITS:
                return None
            coefficient = _check(coefficient * Fraction(base) ** exponent)
        total = _check(total + coefficient)
    return total


def _power_of_term(monomial: tuple, coefficient: Fraction, exponent: int) -> dict:
    if coefficient == 0:
        if exponent <= 0:
            raise _Undecided("zero to a non-positive power")
        return {}
    sign = -1 if coefficient < 0 and exponent % 2 else 1
    magnitude = abs(coefficient)
    atoms: dict[int, int] = {}
    bits = max(magnitude.numerator.bit_length(), magnitude.denominator.bit_length())
    if abs(exponent) * bits <= ATOM_BITS:
        new_coefficient = sign * magnitude ** exponent
    else:
        new_coefficient = Fraction(sign)
        for part, direction in ((magnitude.numerator, 1), (magnitude.denominator, -1)):
            for base, count in _factor(part).items():
                atoms[base] = atoms.get(base, 0) + direction * count * exponent
    for base, count in monomial:
        atoms[base] = atoms.get(base, 0) + count * exponent
    monomial, new_coefficient = _normalize(_check(new_coefficient), atoms)
    return {monomial: new_coefficient} if new_coefficient else {}


def _power(base: dict, exponent: dict) -> dict:
    power = _rational(exponent)
    if power is None or power.denominator != 1 or power.numerator.bit_length() > MAX_EXPONENT_BITS:
        raise _Undecided("exponent is not a moderate integer")
    n = power.numerator
    if not base:
        if n <= 0:
            raise _Undecided("zero to a non-positive power")
        return {}
    if len(base) == 1:
        (monomial, coefficient), = base.items()
        return _power_of_term(monomial, coefficient, n)
    written = _rational(base)
    if written is not None:
        return _power_of_term((), written, n)
    if 0 <= n <= MAX_SMALL_POWER:
        result = {(): Fraction(1)}
        for _ in range(n):
            result = _multiply(result, base)
        return result
    raise _Undecided("a sum with huge terms to a large power")


def _divide(a: dict, b: dict) -> dict:
    if len(b) != 1:
        written = _rational(b)
        if written is None:
            raise _Undecided("division by a sum with huge terms")
        b = {(): written} if written else {}
    if not b:
        raise _Undecided("division by zero")
    return _multiply(a, _power(b, {(): Fraction(-1)}))


def _factorial(value: dict) -> dict:
    n = _rational(value)
    if n is None or n.denominator != 1 or not 0 <= n <= MAX_FACTORIAL:
        raise _Undecided("factorial of a large or non-integer value")
    return {(): _check(Fraction(math.factorial(int(n))))}


def _apply(operator: str, values: list) -> None:
    if operator == "neg":
        values.append({m: -c for m, c in values.pop().items()})
        return
    right, left = values.pop(), values.pop()
    if operator == "+":
        values.append(_add(left, right))
    elif operator == "-":
        values.append(_add(left, {m: -c for m, c in right.items()}))
    elif operator in ("*", "juxtaposed"):
        values.append(_multiply(left, right))
    elif operator == "/":
        values.append(_divide(left, right))
    else:
        values.append(_power(left, right))


def _tokens(text: str) -> list[str]:
    """Tokens with ``\\frac{a}{b}`` as ``((a)/(b))``, braces as parentheses and ``\\cdot``, ``\\times``, ``\\div`` as
    ``*`` and ``/``; undecided on any other character, a mixed number (``3\\frac{1}{2}``) or a TeX one-token
    exponent that reads two ways (``2^34``, ``2^-1``)."""
    raw = []
    position = 0
    for match in _TOKEN.finditer(text):
        if match.start() != position:
            raise _Undecided(f"unread text {text[position:match.start()]!r}")
        raw.append(match.group())
        position = match.end()
    if position != len(text) or not raw:
        raise _Undecided("unread text")
    tokens: list[str] = []
    closers: list[str] = []  # the closing bracket expected for each open one, with what it emits
    expect_denominator = False
    closed_exponent = -1  # where the last braced exponent closed
    for i, token in enumerate(raw):
        previous = raw[i - 1] if i else ""
        if expect_denominator and token != "{":
            raise _Undecided("\\frac without a braced denominator")
        if token == "\\frac":
            if previous[:1].isdigit() or previous == ".":
                raise _Undecided("a mixed number")
            if raw[i + 1: i + 2] != ["{"]:
                raise _Undecided("\\frac without a braced numerator")
            tokens.append("(")
            closers.append("frac")
            continue
        if token == "^" and (previous == "" or raw[i - 2: i - 1] == ["^"] or closed_exponent == i - 1):
            raise _Undecided("a double exponent (2^3^2) reads two ways")
        if token in _OPENERS:
            if expect_denominator:
                expect_denominator = False
                closers.append("denominator")
                tokens.append("(")
            elif previous == "\\frac":
                closers[-1] = "numerator"
                tokens.append("(")
            else:
                closers.append(_OPENERS[token] + ("^" if previous == "^" else ""))
                tokens.append("(")
            continue
        if token in ")]}":
            if not closers:
                raise _Undecided("unbalanced")
            kind = closers.pop()
            if kind == "numerator" and token == "}":
                tokens += [")", "/"]
                expect_denominator = True
            elif kind == "denominator" and token == "}":
                tokens += [")", ")"]
            elif kind[0] == token:
                tokens.append(")")
                if kind.endswith("^"):
                    closed_exponent = i
            else:
                raise _Undecided("unbalanced")
            continue
        if previous == "^" and token not in _OPENERS and not (len(token) == 1 and token.isdigit()):
            raise _Undecided("an unbraced exponent that reads two ways")
        if token == "!" and (raw[i - 2: i - 1] == ["^"] or previous == "!"):
            raise _Undecided("a factorial after an unbraced exponent, or n!!, reads two ways")
        tokens.append({"\\cdot": "*", "\\times": "*", "\\div": "/"}.get(token, token))
    if closers or expect_denominator:
        raise _Undecided("unbalanced")
    return tokens


def _evaluate(text: str) -> dict:
    """Shunting-yard evaluation of the tokens; implicit multiplication only before an opening bracket, binding tighter
    than ``*`` and ``/`` (``1/2(3)`` is 1/6, as latex2sympy reads ``1/2(x)``)."""
    values: list[dict] = []
    operators: list[str] = []
    previous = None  # "value" after a number, ")" or "!"; None at the start, after "(" or an operator
    for token in _tokens(text):
        if token == "(":
            if previous == "value":  # 2(3+4), (1)(2): a product without a sign binds before a division
                _push_binary("juxtaposed", operators, values)
            operators.append("(")
            previous = None
        elif token == ")":
            if previous != "value":
                raise _Undecided("empty or unfinished brackets")
            while operators[-1] != "(":
                _apply(operators.pop(), values)
            operators.pop()
            previous = "value"
        elif token == "!":
            if previous != "value" or not values:
                raise _Undecided("a factorial of nothing")
            values.append(_factorial(values.pop()))
        elif token in "+-" and previous is None:
            if token == "-":
                operators.append("neg")
        elif token in _PRECEDENCE:
            if previous != "value":
                raise _Undecided("an operator without an operand")
            _push_binary(token, operators, values)
            previous = None
        else:
            if previous == "value":
                raise _Undecided("two numbers side by side")
            if len(token) > MAX_DIGITS:
                raise _Undecided("a literal too long")
            values.append({(): Fraction(token)} if Fraction(token) else {})
            previous = "value"
    if previous != "value":
        raise _Undecided("an unfinished expression")
    while operators:
        _apply(operators.pop(), values)
    return values[0]


def _push_binary(operator: str, operators: list[str], values: list) -> None:
    precedence = _PRECEDENCE[operator]
    while operators and operators[-1] != "(":
        top = _PRECEDENCE[operators[-1]]
        if top > precedence or (top == precedence and operator != "^"):
            _apply(operators.pop(), values)
        else:
            break
    operators.append(operator)


def arithmetic_only(text: str) -> bool:
    """Whether an answer as written holds only numbers, operations, brackets and spacing: what `exact_value` may
    read however long it is (up to `MAX_CHARS`).

    >>> arithmetic_only(r"1 + 2 + \\left(\\frac{3}{4}\\right)"), arithmetic_only("x + 1")
    (True, False)
    """
    return len(text) <= MAX_CHARS and _WRITTEN_ARITHMETIC.fullmatch(text) is not None


def exact_value(text: str) -> Fraction | None:
    """The exact rational value of a canonical arithmetic answer, or None when undecided (see the module docstring).

    >>> exact_value(r"\\frac{1}{2}+0.25\\cdot2^{-1}"), exact_value("((((7))))"), exact_value(r"3\\frac{1}{2}") is None
    (Fraction(5, 8), Fraction(7, 1), True)
    """
    if len(text) > MAX_CHARS or not re.search(r"\d", text):
        return None
    _work.bits = 0
    try:
        return _rational(_evaluate(text))
    except (_Undecided, ZeroDivisionError, IndexError):
        return None


def sampled_equal(gold: str, pred: str) -> bool | None:
    """Whether two canonical answers that are rational functions of one-letter variables (``x^2+2x+1``,
    ``(x+1)^2``, ``\\frac{x+1}{x-1}``) are equal, decided by exact values at `SAMPLE_POINTS` as sympy's worker
    decides them (its 40-digit values compared there), without its parse (5-10 ms a side); None for anything
    else: no variable in the gold, another symbol or function, a point where either is undefined, or a ``/``
    followed by a product written without a sign (``1/2x``: the parser reads 1/(2x), left to it).

    >>> sampled_equal("x^2+2x+1", "(x+1)^2"), sampled_equal("x^2-1", "(x-1)^2"), sampled_equal("x^2", "1/2x") is None
    (True, False, True)
    """
    texts = (gold, pred)
    if any(len(text) > 200 or not _VARIABLE_ARITHMETIC.fullmatch(text) for text in texts):
        return None
    for text in texts:
        for slash in re.finditer("/", text):  # a divisor read alike by both: nothing multiplies it implicitly
            divisor = _DIVISOR.match(text, slash.start())
            if divisor is None or re.match(r"[\w.({\[\\]", text[divisor.end():]):
                return None
    letters = [set(re.findall(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", text))) for text in texts]
    if not letters[0]:
        return None
    symbols = sorted(letters[0] | letters[1])
    for k in range(len(SAMPLE_POINTS)):
        point = {s: SAMPLE_POINTS[(k + i) % len(SAMPLE_POINTS)] + i for i, s in enumerate(symbols)}
        written = {s: f"({'-' if v < 0 else ''}\\frac{{{abs(v.numerator)}}}{{{v.denominator}}})" for s, v in point.items()}
        values = [exact_value(re.sub(r"\\[a-zA-Z]+|[a-zA-Z]", lambda m: written.get(m.group(), m.group()), text))
                  for text in texts]
        if None in values:
            return None
        if values[0] != values[1]:
            return False
    return True
