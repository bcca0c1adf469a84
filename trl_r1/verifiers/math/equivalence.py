"""Mathematical equivalence of two canonical answers with sympy (runs inside a worker process).

LaTeX is parsed by `latex2sympy2_extended` (the common subset by `fast_reader`, which builds the same objects). The comparison cascade, gold first:

* structure decides the kind: a tuple ``(1,-2)`` is ordered, a set ``\\{1,2\\}`` is not, and neither equals the
  other; a bare list ``1, 2`` matches either (in order for a tuple); intervals compare endpoints and openness;
  an inequality in one variable is compared as the set it describes; matrices compare shape and entries;
* an assignment (``x=5``, ``f(x)=...``, ``x\\in[1,2)``) is compared by its right-hand side when the other side
  is not an equation; two equations are equivalent when one's ``lhs - rhs`` is a non-zero constant multiple of
  the other's (``y=2x+3`` and ``2x-y+3=0``);
* numbers compare exactly when both are rational, else at 40 digits with a *relative* tolerance of 1e-20 (so
  1/2004! and 1/2006! stay different), confirmed at 120 digits (so a near miss such as ``\\sqrt{10^{50}+1}`` for
  ``10^{25}`` fails); a decimal answer never matches an irrational gold by default (``1.414`` for ``\\sqrt{2}``),
  only under ``approximations="rounded"`` (correctly rounded, at least 4 significant digits) or to the decimal
  places the question asked for (`screening.approximates`); a decimal gold matches the exact value it rounds;
* a matrix written as arithmetic (``2\\begin{pmatrix}1\\\\2\\end{pmatrix}``, a negated matrix, a sum or a difference)
  is the matrix it denotes; a product or power of matrices restates a calculation and does not parse;
* an answer whose only variable is ``i`` against a constant gold reads ``i`` as the imaginary unit (``e^{i\\pi}+1`` is 0);
* expressions with variables are compared at fixed sample points (positive and negative), then by
  `sympy.simplify` when too few points evaluate.

This module may be slow on hostile input; callers run it under the hard time limit of `pool.WorkerPool`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy
from antlr4.atn.PredictionMode import PredictionMode
from sympy.matrices.expressions import MatAdd, MatMul, MatrixExpr
from latex2sympy2_extended import latex2sympy
from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy
from latex2sympy2_extended.math_normalization import NormalizationConfig, normalize_latex

from . import exact, fast_reader
from .screening import approximates, parse_number, split_top_level

PARSE_CONFIG = NormalizationConfig(basic_latex=True, units=False, malformed_operators=True, nits=False, boxed="none")
DIGITS = 40  # working precision of numeric comparisons
MAX_DECIMAL_DIGITS = 1_000  # a longer decimal answer to an irrational gold is refused, not checked for rounding
RELATIVE_TOLERANCE = sympy.Float("1e-20", DIGITS)
CONFIRM_DIGITS = 120  # exact values that agree to RELATIVE_TOLERANCE are confirmed at this precision ...
CONFIRM_TOLERANCE = sympy.Float("1e-100", CONFIRM_DIGITS)  # ... so sqrt(10^{50}+1) is not 10^{25}
SAMPLE_POINTS = tuple(sympy.Rational(p.numerator, p.denominator) for p in exact.SAMPLE_POINTS)
_IMAGINARY = sympy.Symbol("i")


class Unparseable(ValueError):
    """The text is not LaTeX that latex2sympy can read."""


@dataclass(frozen=True)
class BareList:
    """A comma list written without brackets (``1, 2``): a tuple to an ordered gold, a set to an unordered one."""

    items: tuple


def verdict(gold: str, pred: str, approximations: str | int = "reject") -> tuple[bool | None, str | None]:
    """(equivalent, reason): None with a reason when the gold does not parse; False when the answer does not.
    `approximations` decides a decimal answer for an irrational gold (`screening.approximates`).

    >>> verdict(r"\\frac{\\sqrt{2}}{2}", r"\\frac{1}{\\sqrt{2}}")
    (True, None)
    >>> verdict("(1,-2)", r"\\{1,-2\\}")
    (False, None)
    """
    try:
        gold_value = parse(gold)
    except Unparseable as exc:
        return None, f"gold does not parse: {exc}"
    try:
        pred_value = parse(pred)
    except Unparseable as exc:
        return False, f"answer does not parse: {exc}"
    complex_gold = _IMAGINARY in _free_symbols(gold_value)
    if complex_gold or not _free_symbols(gold_value) and _free_symbols(pred_value) == {_IMAGINARY}:  # e^{i\pi}+1
        gold_value, pred_value = _as_complex(gold_value), _as_complex(pred_value)
    gold_number = parse_number(gold)
    if gold_number is not None and gold_number.decimals is not None and isinstance(pred_value, sympy.Expr):
        return bool(equal(pred_value, gold_value, gold, "rounded")), None  # a decimal gold: the exact answer rounded?
    return bool(equal(gold_value, pred_value, pred, approximations)), None


@lru_cache(maxsize=512)
def parse(text: str):
    """Parse a canonical answer: a `BareList` of parsed items, or a sympy object with exact decimals."""
    items = split_top_level(text)
    if len(items) > 1:
        return BareList(tuple(parse(item) for item in items))
    for word, join in (("\\lor", sympy.Or), ("\\land", sympy.And)):  # inequalities joined by "or" / "and"
        if word in text:  # (see `screening.canonical`)
            conditions = [parse(part) for part in text.split(word)]
            if all(isinstance(c, sympy.core.relational.Relational) for c in conditions):
                return join(*conditions)
    if text.count("\\pm") == 1 and "\\mp" not in text:  # \frac{-1\pm\sqrt{5}}{2}: the set of both signs
        both = parse(text.replace("\\pm", "+")), parse(text.replace("\\pm", "-"))
        if all(isinstance(value, sympy.Expr) for value in both):
            return sympy.FiniteSet(*both)
    try:
        value = _latex_to_sympy(text)
    except Exception as exc:  # the ANTLR parser raises many types; all mean "not readable"
        raise Unparseable(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:120]) from None
    if not isinstance(value, (sympy.Basic, sympy.MatrixBase)):
        raise Unparseable(f"parsed to a {type(value).__name__}")
    if isinstance(value, MatrixExpr):  # 2\begin{pmatrix}1\\2\end{pmatrix}, -A, A+B: the matrix it denotes
        if not _linear_combination(value):
            raise Unparseable("a product, power or inverse of matrices: the calculation, not its result")
        try:
            value = value.doit().as_explicit()
        except Exception as exc:  # shapes that do not add
            raise Unparseable(f"matrix arithmetic: {type(exc).__name__}") from None
    if isinstance(value, sympy.MatrixBase):
        return value.applyfunc(_exact_decimals) if value.has(sympy.Float, sympy.UnevaluatedExpr) else value
    return _exact_decimals(value)


def _linear_combination(value) -> bool:
    """Whether a matrix expression only scales, negates, adds and subtracts matrices (what writing a result in
    another form takes); a product of two matrices or a power is the asked calculation restated."""
    if isinstance(value, sympy.MatrixBase):
        return True
    if isinstance(value, MatMul):
        matrices = [arg for arg in value.args if isinstance(arg, (MatrixExpr, sympy.MatrixBase))]
        return len(matrices) == 1 and _linear_combination(matrices[0])
    if isinstance(value, MatAdd):
        return all(_linear_combination(arg) for arg in value.args)
    return False


def _exact_decimals(value):
    """Decimals as the rationals written (0.5 is 1/2), percent factors as their exact values."""
    exact = {u: u.args[0] for u in value.atoms(sympy.UnevaluatedExpr)}  # 25\% is 25 * Unevaluated(1/100)
    exact.update({f: sympy.Rational(str(f)) for f in value.atoms(sympy.Float)})  # decimals as written
    return value.xreplace(exact) if exact else value


class _SLLParser(_Latex2Sympy):
    """latex2sympy with ANTLR's fast SLL prediction (10-20x faster on brackets and intervals than the default LL).

    ANTLR guarantees that SLL either returns the tree LL would return or reports a syntax error, so the usual
    two-stage strategy (`_latex_to_sympy`) gives latex2sympy's exact results.
    """

    def create_parser(self, latex_str):
        parser = super().create_parser(latex_str)
        parser._interp.predictionMode = PredictionMode.SLL
        return parser


def _latex_to_sympy(text: str):
    """latex2sympy's reading of `text`: by `fast_reader` where it reads the text (the same object, without ANTLR's
    5-70 ms of prediction DFA for a new token shape), else by the ANTLR parser."""
    normalized = normalize_latex(text, PARSE_CONFIG)
    value = fast_reader.read(normalized)
    return value if value is not None else _antlr_to_sympy(text, normalized)


def _antlr_to_sympy(text: str, normalized: str | None = None):
    """latex2sympy's ANTLR parse: SLL prediction first; only on a syntax error pay for the full LL parse."""
    try:
        return _SLLParser().parse(normalize_latex(text, PARSE_CONFIG) if normalized is None else normalized)
    except Exception:  # SLL reports a syntax error: LL decides (and raises if the text is really invalid)
        return latex2sympy(text, normalization_config=PARSE_CONFIG)


def equal(gold, pred, pred_text: str = "", approximations: str | int = "reject") -> bool:
    """Whether a parsed prediction equals a parsed gold (see the module docstring for the rules)."""
    if _is_assignment(pred) and not isinstance(gold, sympy.Eq):  # x \in \{1,2\} against 1, 2
        pred = pred.rhs
    elif _is_assignment(gold) and not isinstance(pred, sympy.Eq):
        gold = gold.rhs
    gold, pred = _vector_as_tuple(gold, pred), _vector_as_tuple(pred, gold)
    gold, pred = _singleton_as_element(gold, pred), _singleton_as_element(pred, gold)
    if isinstance(gold, BareList) or isinstance(pred, BareList):
        return _lists_equal(gold, pred)
    if isinstance(gold, sympy.MatrixBase) or isinstance(pred, sympy.MatrixBase):
        return (
            isinstance(gold, sympy.MatrixBase) and isinstance(pred, sympy.MatrixBase) and gold.shape == pred.shape
            and all(equal(g, p) for g, p in zip(gold, pred))
        )
    if gold == pred:
        return True
    if isinstance(gold, sympy.Eq) or isinstance(pred, sympy.Eq):
        return _equations_equal(gold, pred, pred_text, approximations)
    if _is_condition(gold) or _is_condition(pred):
        gold_set, pred_set = _as_set(gold), _as_set(pred)
        return gold_set is not None and pred_set is not None and equal(gold_set, pred_set)
    if isinstance(gold, sympy.Tuple) or isinstance(pred, sympy.Tuple):
        return _tuples_equal(gold, pred)
    if isinstance(gold, sympy.Interval) and isinstance(pred, sympy.Interval):
        return (gold.left_open, gold.right_open) == (pred.left_open, pred.right_open) and all(
            _expressions_equal(g, p) for g, p in ((gold.start, pred.start), (gold.end, pred.end))
        )
    if isinstance(gold, (sympy.FiniteSet, sympy.Union)) and isinstance(pred, (sympy.FiniteSet, sympy.Union)):
        same_kind = isinstance(gold, sympy.Union) == isinstance(pred, sympy.Union)  # latex2sympy subclasses FiniteSet
        return same_kind and _unordered_equal(gold.args, pred.args)
    if isinstance(gold, sympy.Expr) and isinstance(pred, sympy.Expr):
        return _expressions_equal(gold, pred, pred_text, approximations)
    return False


def _vector_as_tuple(value, other):
    """A one-row or one-column matrix as a tuple when the other side is a tuple or list (a vector as (1, 2))."""
    if isinstance(value, sympy.MatrixBase) and 1 in value.shape and (isinstance(other, BareList) or _tuple_items(other)):
        return sympy.Tuple(*value)
    return value


def _singleton_as_element(value, other):
    """A one-element set as its element when the other side is a plain expression (``\\{2\\}`` and ``2``)."""
    if isinstance(value, sympy.FiniteSet) and len(value.args) == 1 and isinstance(other, sympy.Expr):
        return value.args[0]
    return value


def _lists_equal(gold, pred) -> bool:
    """A bare list against a list, tuple or set: in order when either side is a tuple, else as sets."""
    gold_items = gold.items if isinstance(gold, BareList) else _tuple_items(gold) or _set_items(gold)
    pred_items = pred.items if isinstance(pred, BareList) else _tuple_items(pred) or _set_items(pred)
    if gold_items is None or pred_items is None:
        return False
    if _tuple_items(gold) or _tuple_items(pred):
        return len(gold_items) == len(pred_items) and all(equal(g, p) for g, p in zip(gold_items, pred_items))
    return _unordered_equal(gold_items, pred_items)


def _tuple_items(value) -> tuple | None:
    """A tuple's items; an open interval ``(a,b)`` reads as the pair ``(a,b)`` (LaTeX cannot tell them apart)."""
    if isinstance(value, sympy.Tuple):
        return value.args
    if isinstance(value, sympy.Interval) and value.left_open and value.right_open:
        return (value.start, value.end)
    return None


def _set_items(value) -> tuple | None:
    return value.args if isinstance(value, sympy.FiniteSet) else None


def _unordered_equal(gold_items, pred_items) -> bool:
    """A one-to-one matching of equal items (greedy is exact here: equality is transitive); an item written twice
    in a set or unordered list counts once, as in a set."""
    gold_items, pred_items = list(dict.fromkeys(gold_items)), list(dict.fromkeys(pred_items))
    if len(gold_items) != len(pred_items):
        return False
    remaining = list(pred_items)
    for g in gold_items:
        match = next((i for i, p in enumerate(remaining) if equal(g, p)), None)
        if match is None:
            return False
        remaining.pop(match)
    return not remaining


def _tuples_equal(gold, pred) -> bool:
    gold_items, pred_items = _tuple_items(gold), _tuple_items(pred)
    return (
        gold_items is not None and pred_items is not None and len(gold_items) == len(pred_items)
        and all(equal(g, p) for g, p in zip(gold_items, pred_items))
    )


def _is_assignment(value) -> bool:
    return isinstance(value, sympy.Eq) and (value.lhs.is_Symbol or isinstance(value.lhs, sympy.core.function.AppliedUndef))


def _equations_equal(gold, pred, pred_text: str, approximations: str | int) -> bool:
    if isinstance(gold, sympy.Eq) and isinstance(pred, sympy.Eq):
        if _is_assignment(gold) and gold.lhs == pred.lhs:
            return equal(gold.rhs, pred.rhs, pred_text, approximations)
        return _proportional(gold.lhs - gold.rhs, pred.lhs - pred.rhs)
    if _is_assignment(gold):
        return equal(gold.rhs, pred, pred_text, approximations)
    if _is_assignment(pred):
        return equal(gold, pred.rhs)
    return False


def _proportional(f, g) -> bool:
    """Whether g = c*f for a non-zero constant c (same equation), checked at the sample points."""
    if not isinstance(f, sympy.Expr) or not isinstance(g, sympy.Expr) or f.free_symbols != g.free_symbols:
        return False
    if not f.free_symbols:
        return _close(f, g)
    ratios = []
    for k in range(len(SAMPLE_POINTS)):
        f_value, g_value = _at_point(f, k), _at_point(g, k)
        if f_value is None or g_value is None:
            continue
        if (f_value == 0) != (g_value == 0):
            return False
        if g_value != 0:
            ratios.append(f_value / g_value)
    return len(ratios) >= 2 and all(_close(r, ratios[0]) for r in ratios)


def _is_condition(value) -> bool:
    return isinstance(value, (sympy.core.relational.Relational, sympy.And, sympy.Or)) and not isinstance(value, sympy.Eq)


def _as_set(value):
    """An inequality in one variable, or in one function's value (``0<f(x)<1``: its range), as the set it describes;
    sets and intervals as themselves."""
    if isinstance(value, sympy.Set):
        return value
    applied = value.atoms(sympy.core.function.AppliedUndef) if _is_condition(value) else set()
    if len(applied) == 1:
        try:
            value = value.xreplace({applied.pop(): sympy.Dummy("value")})
        except AttributeError:  # latex2sympy's patched And, rebuilt from terms that collapse to one relation
            return None
    if _is_condition(value) and len(value.free_symbols) == 1:
        bounds = _bounds_set(value)
        if bounds is not None:
            return bounds
        try:
            return value.as_set()
        except Exception:  # sympy cannot solve it: not comparable as a set
            return None
    return None


def _bounds_set(condition):
    """The set a condition made only of linear bounds on its one variable describes (``0<x\\le2``, ``-2\\le-x<0``,
    ``x\\ne5``, joined by "and" and "or"), built directly: what sympy's `as_set` returns for it, without its solver
    (which checks periodicity with `simplify`, 50-300 ms a condition); None for any other condition, left to sympy."""
    if isinstance(condition, (sympy.And, sympy.Or)):
        parts = [_bounds_set(arg) for arg in condition.args]
        if any(part is None for part in parts):
            return None
        return (sympy.Intersection if isinstance(condition, sympy.And) else sympy.Union)(*parts)
    if not isinstance(condition, sympy.core.relational.Relational) or isinstance(condition, sympy.Eq):
        return None
    (symbol,) = condition.free_symbols
    difference = condition.lhs - condition.rhs  # a*x + b, compared with 0
    constant, term = difference.as_independent(symbol, as_Add=True)
    slope = term / symbol
    if slope.free_symbols or not all(v.is_extended_real and v.is_finite for v in (slope, constant)) or slope.is_zero:
        return None
    operator = condition.rel_op
    if slope.is_negative:
        operator = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}[operator]
    elif not slope.is_positive:
        return None
    bound = -constant / slope
    if operator == "!=":
        return sympy.Union(sympy.Interval.open(-sympy.oo, bound), sympy.Interval.open(bound, sympy.oo))
    closed = operator in ("<=", ">=")
    if operator in ("<", "<="):
        return sympy.Interval(-sympy.oo, bound, True, not closed)
    return sympy.Interval(bound, sympy.oo, not closed, True)


def _free_symbols(value) -> set:
    if isinstance(value, BareList):
        return set().union(*(_free_symbols(item) for item in value.items))
    return set(getattr(value, "free_symbols", ()))


def _as_complex(value):
    """Read the symbol ``i`` as the imaginary unit (used when the gold is a complex number)."""
    if isinstance(value, BareList):
        return BareList(tuple(_as_complex(item) for item in value.items))
    return value.subs(_IMAGINARY, sympy.I) if hasattr(value, "subs") else value


def _expressions_equal(gold, pred, pred_text: str = "", approximations: str | int = "reject") -> bool:
    if not isinstance(gold, sympy.Expr) or not isinstance(pred, sympy.Expr):
        return gold == pred
    gold, pred = _summed(gold), _summed(pred)
    symbols = gold.free_symbols | pred.free_symbols
    if not symbols:
        decimal = parse_number(pred_text)  # a decimal answer to an irrational gold: as the policy allows, never "close"
        integer_asked = approximations == 0 and decimal is not None and decimal.value.denominator == 1  # 6 for 2\pi
        if decimal is None or decimal.decimals is None and not integer_asked or gold.doit().is_Rational:  # \sin(\pi/6) is 0.5
            return _close(gold, pred)
        if approximations == "reject" or decimal.significant > MAX_DECIMAL_DIGITS:  # too long: costs more than it proves
            return False
        value = gold.evalf(max(DIGITS, decimal.significant + 10))  # more digits than the decimal shows
        return bool(value.is_real) and approximates(decimal, sympy.Rational(value), approximations)
    agree = 0
    for k in range(len(SAMPLE_POINTS)):
        g, p = _at_point(gold, k, symbols), _at_point(pred, k, symbols)
        if g is None or p is None:
            continue
        if not _close(g, p):
            return False
        agree += 1
    if agree >= 2:
        return True
    return sympy.simplify(gold - pred) == 0


def _summed(expr):
    """Sums and products in closed form where sympy finds one (milliseconds), so they are not summed numerically at
    every sample point (``\\sum_{k=1}^{n} k`` took 0.75 s of CPU that way, past the latency bound on a loaded machine)."""
    if not expr.has(sympy.Sum, sympy.Product):
        return expr
    try:
        return expr.doit(deep=False) if isinstance(expr, (sympy.Sum, sympy.Product)) else expr.replace(
            lambda e: isinstance(e, (sympy.Sum, sympy.Product)), lambda e: e.doit())
    except Exception:  # sympy gives up on the closed form: summed numerically as before
        return expr


def _at_point(expr, k: int, symbols=None):
    """The value of `expr` with every variable set to a different sample point (None when not finite)."""
    symbols = sorted(symbols or expr.free_symbols, key=str)
    point = {s: SAMPLE_POINTS[(k + i) % len(SAMPLE_POINTS)] + i for i, s in enumerate(symbols)}
    try:
        value = expr.subs(point).evalf(DIGITS)
    except Exception:  # undefined at this point
        return None
    return value if value.is_number and value.is_finite else None


def _close(a, b) -> bool:
    """Equal numbers: exact for rationals and infinities, else relative difference below 1e-20 at 40 digits."""
    a, b = sympy.sympify(a).doit(), sympy.sympify(b).doit()  # 2^{100} is parsed unevaluated: make it an Integer
    if any(x.has(sympy.zoo, sympy.nan) for x in (a, b)):  # undefined (12:00 parses as 12/0): never equal
        return False
    if a.is_Rational and b.is_Rational or not (a.is_finite and b.is_finite):
        return bool(a == b)
    a_value, b_value = a.evalf(DIGITS), b.evalf(DIGITS)
    if not (a_value.is_number and b_value.is_number):
        return bool(sympy.simplify(a - b) == 0)
    if not _within(a_value, b_value, RELATIVE_TOLERANCE):
        return False
    if a.has(sympy.Float) or b.has(sympy.Float):  # values at sample points: their 40 digits are all there is
        return True
    return _within(a.evalf(CONFIRM_DIGITS), b.evalf(CONFIRM_DIGITS), CONFIRM_TOLERANCE)  # a near miss below 1e-20


def _within(a_value, b_value, tolerance) -> bool:
    scale = max(abs(a_value), abs(b_value))
    return bool(scale == 0 or abs(a_value - b_value) <= tolerance * scale)
