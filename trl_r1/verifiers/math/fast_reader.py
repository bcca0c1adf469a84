"""A fast reader for the LaTeX most answers are made of, giving latex2sympy's own result or refusing.

latex2sympy parses with an ANTLR grammar whose prediction DFA is built on demand: a worker pays 5-70 ms the first
time it meets an answer's token shape and ~0.7 ms a parse after that, most of a sympy check's time. `read` is a
tokenizer and a recursive-descent reader for a subset of that grammar (numbers, letters, Greek letters, \\pi,
\\infty, ``e``, ``i``/``I``, + - * / \\cdot \\times \\div, powers, implicit products, \\frac, \\sqrt, the trigonometric
functions, \\ln, \\log, \\exp, factorials, parentheses and braces, one comparison chain, tuples, intervals, sets
and matrices), applied to the text after latex2sympy's own normalization. Each node is built with the calls
latex2sympy's converter makes for it (its ``add_flat``, ``mul_flat``, mixed-fraction rule, ``Rational`` for an
integer quotient, ``evaluate=False`` constructors), in the same association, so the result is the same object
(`sympy.srepr` and classes equal). Where the grammar's reading is not the obvious one it is followed, not
fixed (``1/2x`` is 1/(2x), ``2(3)`` is 5); where it is ambiguous or depends on ANTLR's prediction (a letter before
``(atom)`` is a function call, ``d`` before a letter is a differential, words such as ``tr`` are tokens of their
own) the reader refuses: `read` returns None and the caller parses with latex2sympy. Parity is checked against
latex2sympy on every text of the benchmark sets and on generated expressions (`tests/test_math_fast_reader.py`).

It mirrors one converter, so it runs only where parity was checked: latex2sympy2_extended 1.10.1 to 1.11.x
(`PARITY_CHECKED`; other versions parse everything with latex2sympy, as before the reader existed).

The reader is depth-bounded (`MAX_DEPTH` nested groups, then it refuses), so deep input falls back to
latex2sympy under the worker's limits instead of raising RecursionError here.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version

import sympy
import sympy.functions.elementary.trigonometric as sympy_trig
from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy, comma_number_regex
from latex2sympy2_extended.logic import And
from latex2sympy2_extended.sets import FiniteSet
from latex2sympy2_extended.symbols import get_symbol

PARITY_CHECKED = ("1.10.1", "1.10.2", "1.11.")  # latex2sympy2_extended versions the parity tests passed on


def _parity_checked() -> bool:
    try:
        installed = version("latex2sympy2_extended")
    except PackageNotFoundError:
        return False
    return any(installed == v or v.endswith(".") and installed.startswith(v) for v in PARITY_CHECKED)


ENABLED = _parity_checked()  # False: every text goes to latex2sympy (a converter this reader was not checked against)
MAX_DEPTH = 40  # nested groups, fractions, roots, functions and signs; deeper text is left to latex2sympy
MAX_CHARS = 500  # a longer text is left to latex2sympy (red team: 2,000 chars of flat products took ~2 s here)

_CONVERTER = _Latex2Sympy()  # its node-building helpers (add_flat, mul_flat, ...) depend on no parse state

_GREEK = frozenset(
    "alpha beta delta Delta epsilon varepsilon zeta eta theta Theta vartheta iota kappa lambda Lambda mu nu xi Xi "
    "omicron pi Pi varpi rho varrho sigma Sigma varsigma tau upsilon Upsilon phi Phi varphi chi psi Psi omega Omega".split()
)  # GREEK_CMD's commands; \gamma and \Gamma are FUNC_GAMMA tokens (not read here)
_TRIG = frozenset("sin cos tan csc sec cot".split())
_FUNCTIONS = _TRIG | {"arc" + name for name in _TRIG} | {"ln", "log", "exp"}
_RELATIONS = {"=": "=", "<": "<", ">": ">", "\\lt": "<", "\\gt": ">", "\\le": "<=", "\\leq": "<=", "\\leqslant": "<=",
              "\\ge": ">=", "\\geq": ">=", "\\geqslant": ">=", "\\ne": "!=", "\\neq": "!="}
_RELATION_CLASSES = {"<": sympy.StrictLessThan, "<=": sympy.LessThan, ">": sympy.StrictGreaterThan,
                     ">=": sympy.GreaterThan, "=": sympy.Eq, "!=": sympy.Ne}
_SKIPPED = frozenset(("\\,", "\\;", "\\:", "\\!", "\\quad", "\\qquad", "\\thinspace", "\\medspace", "\\thickspace"))
_PRODUCTS = {"*": "*", "\\cdot": "*", "\\times": "*", "/": "/", "\\div": "/"}
_MATRIX = re.compile(r"\\(begin|end)\{(matrix|pmatrix|bmatrix)\}")
# words the lexer reads as one token (FUNC_*_NAME, matrix types): a letter run holding one is not a product of letters
_KEYWORDS = re.compile(
    r"arsinh|arcsinh|arcosh|arccosh|artanh|arctanh|gcd|lcm|floor|ceil|eye|zeros|ones|cols|rows|diag|norm|rank|tr"
    r"|rref|hstack|vstack|orth|nullspace|eig|svd|SVD|matrix|array|top|circ|degree"
)
# the lexer's own classes: ASCII digits and the whitespace it skips ([ \t\r\n]), not Unicode's
_TOKEN = re.compile(r"[ \t\r\n]+|\\[a-zA-Z]+|\\\\|\\[{}]|\\[,;:!]|[0-9]*\.[0-9]+|[0-9]+|[a-zA-Z]+|[-+*/^_(){}\[\],=<>&!|]|.", re.S)
_STARTS_COMP = frozenset(("num", "letter", "greek", "infty", "e", "(", "{", "|", "frac", "binom", "sqrt", "func", "matrix"))


class Refused(Exception):
    """The text is outside the subset read here (latex2sympy decides it)."""


def read(text: str):
    """latex2sympy's result for a normalized text (`normalize_latex` with the caller's config), or None when the
    text is outside the subset read here. Never raises.

    >>> read("\\\\frac{1}{2}x+3")
    x/2 + 3
    >>> read("x_1") is None  # subscripts: left to latex2sympy
    True
    """
    if not ENABLED or len(text) > MAX_CHARS or comma_number_regex.match(text):
        return None
    try:
        return _Reader(_tokens(text)).top()
    except Exception:  # Refused, or sympy rejecting a node: latex2sympy decides (and reports) it
        return None


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens as latex2sympy's lexer splits the subset; anything else refuses."""
    tokens = []
    position = 0
    while position < len(text):
        if text.startswith(("\\begin", "\\end"), position):
            match = _MATRIX.match(text, position)
            if match is None:
                raise Refused
            tokens.append(("matrix" if match.group(1) == "begin" else "end", match.group(2)))
            position = match.end()
            continue
        match = _TOKEN.match(text, position)
        piece = match.group()
        position = match.end()
        if piece[0] in " \t\r\n" or piece in _SKIPPED:
            continue
        if piece[0] == "\\" and piece[1:].isalpha():
            name = piece[1:]
            if name in _GREEK:
                tokens.append(("greek", piece))
            elif name in _FUNCTIONS:
                tokens.append(("func", name))
            elif name in ("frac", "binom"):
                tokens.append((name, piece))
            elif name == "sqrt":
                tokens.append(("sqrt", piece))
            elif name in ("infty", "in", "cup"):
                tokens.append((name, piece))
            elif piece in _PRODUCTS:
                tokens.append(("op", _PRODUCTS[piece]))
            elif piece in _RELATIONS:
                tokens.append(("rel", _RELATIONS[piece]))
            else:
                raise Refused
        elif piece[0] in "0123456789." :
            if piece == ".":
                raise Refused
            tokens.append(("num", piece))
        elif piece.isascii() and piece.isalpha():
            if "E" in piece or _KEYWORDS.search(piece):
                raise Refused
            for index, letter in enumerate(piece):
                if letter == "d" and (index + 1 < len(piece) or _differential_follows(text, position)):
                    raise Refused  # DIFFERENTIAL: d before a letter or a command
                tokens.append(("e", letter) if letter == "e" else ("letter", letter))
        elif piece in ("\\{", "\\}"):
            tokens.append((piece, piece))
        elif piece == "\\\\":
            tokens.append(("row", piece))
        elif piece in _PRODUCTS:
            tokens.append(("op", _PRODUCTS[piece]))
        elif piece in "+-":
            tokens.append(("sign", piece))
        elif piece in _RELATIONS:
            if text.startswith(("==", "<=", ">=", "<->", "<=>"), position - 1):
                raise Refused
            tokens.append(("rel", _RELATIONS[piece]))
        elif piece == "!":
            if text.startswith("=", position):
                raise Refused  # != is a relation token
            tokens.append(("!", piece))
        elif piece in "^_(){}[],&|":
            if piece == "^" and text.startswith(("T", "{T}"), position):
                raise Refused  # a transpose token
            tokens.append((piece, piece))
        else:
            raise Refused
    return tokens


def _differential_follows(text: str, position: int) -> bool:
    """Whether a ``d`` ending at `position` starts a DIFFERENTIAL token (``d`` before a letter or a command)."""
    rest = text[position:].lstrip(" \t\r\n")
    return bool(rest) and (rest[0].isalpha() or rest[0] == "\\")


def _is_matrix(value) -> bool:
    return bool(getattr(value, "is_Matrix", False))


class _Reader:
    """Recursive descent over the tokens, one method per grammar rule of latex2sympy's PS.g4 it mirrors."""

    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens = tokens
        self.index = 0
        self.depth = 0
        self.in_abs = False  # between the two bars of |x| (a text with exactly two bars)
        self.bars = sum(kind == "|" for kind, _ in tokens)

    # -- token helpers
    def peek(self, offset: int = 0) -> tuple[str, str]:
        index = self.index + offset
        return self.tokens[index] if index < len(self.tokens) else ("eof", "")

    def take(self, kind: str) -> str:
        token_kind, text = self.peek()
        if token_kind != kind:
            raise Refused
        self.index += 1
        return text

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Refused

    # -- math: a relation chain, a bracketed set or tuple, or an expression
    def top(self):
        if not self.tokens or self.tokens[0][0] == "{" and self._closing(0) == len(self.tokens) - 1:
            raise Refused  # {...} as the whole text is a set to latex2sympy
        kinds = [kind for kind, _ in self.tokens]
        if "in" in kinds or "cup" in kinds:
            return self.membership() if "in" in kinds else self.whole(self.sets())
        value = self.bracketed() if self.peek()[0] in ("(", "[", "\\{") else None
        if value is not None:
            return value
        self.index = 0
        return self.whole(self.relation())

    def whole(self, value):
        if self.peek()[0] != "eof":
            raise Refused
        return value

    def membership(self):
        """``x\\in[1,2)``, ``x\\in\\{1,2\\}``, ``x\\in(-\\infty,1)\\cup(2,\\infty)``: Eq(x, the set), as latex2sympy
        reads \\in (``interpret_contains_as_eq``)."""
        if self.peek(1)[0] != "in" or self.peek()[0] not in ("letter", "greek") or self.peek()[1] == "I":
            raise Refused
        symbol = get_symbol(self.tokens[0][1], None, True)
        self.index = 2
        return self.whole(sympy.Eq(symbol, self.sets(), evaluate=False))

    def sets(self):
        """set atoms joined by \\cup, left to right (convert_set_union: a tuple in a union is the set of its items)."""
        value = self.set_atom(single=False)
        while self.peek()[0] == "cup":
            self.index += 1
            right = self.set_atom(single=False)
            value, right = (FiniteSet(*side) if isinstance(side, sympy.Tuple) else side for side in (value, right))
            value = sympy.Union(value, right, evaluate=False)
        return value

    def bracketed(self):
        """``(a,b)``, ``[a,b)``, ``(a,b,c)``, ``\\{a,b\\}`` spanning the whole text: an interval, tuple or set;
        None when the text is one item in parentheses or not bracketed as a whole (it is then an expression)."""
        if self._closing(0) != len(self.tokens) - 1:
            return None
        return self.set_atom(single=True)

    def set_atom(self, single: bool):
        """interval, ordered_tuple or finite_set; one item in parentheses is None where `single` allows it."""
        opening = self.take(self.peek()[0]) if self.peek()[0] in ("(", "[", "\\{") else None
        if opening is None:
            raise Refused
        items = [self.item()]
        while self.peek()[0] == ",":
            self.index += 1
            items.append(self.item())
        closing = self.take(self.peek()[0]) if self.peek()[0] in (")", "]", "\\}") else None
        if opening == "\\{" or closing == "\\}":
            if opening != closing.replace("}", "{"):
                raise Refused
            return FiniteSet(*items)
        if closing is None or len(items) == 1:
            if single and closing is not None:
                return None
            raise Refused
        if len(items) == 2:
            return _interval(opening == "(", closing == ")", *items)
        if opening == "(" and closing == ")" or opening == "[" and closing == "]":
            return sympy.Tuple(*items)
        raise Refused

    def _closing(self, start: int) -> int:
        """The index of the token closing the bracket at `start` (-1 when none does)."""
        depth = 0
        for index in range(start, len(self.tokens)):
            kind = self.tokens[index][0]
            if kind in ("(", "{", "[", "\\{"):
                depth += 1
            elif kind in (")", "}", "]", "\\}"):
                depth -= 1
                if depth == 0:
                    return index
        return -1

    def item(self):
        """One item of a bracketed list: an expression, but ``{...}`` as a whole item is a set to latex2sympy."""
        if self.peek()[0] == "{" and self.tokens[self._closing(self.index) + 1][0] in (",", ")", "]", "\\}"):
            raise Refused
        return self.expr()

    def relation(self):
        value = self.expr()
        while self.peek()[0] == "rel":
            operator = self.take("rel")
            right = self.expr()
            relation = _RELATION_CLASSES[operator]
            if isinstance(value, And):
                value = And(*value._unsorted_args, relation(value._unsorted_args[-1].rhs, right, evaluate=False))
            elif isinstance(value, sympy.core.relational.Relational):
                value = And(value, relation(value.rhs, right, evaluate=False))
            else:
                value = relation(value, right, evaluate=False)
        return value

    # -- expressions
    def expr(self):
        """additive: left-associative + and - over products (convert_add)."""
        left = self.mp()
        while self.peek()[0] == "sign":
            operator = self.take("sign")
            right = self.mp()
            if _is_matrix(left) or _is_matrix(right):
                left = _CONVERTER.mat_add_flat(left, right if operator == "+" else _CONVERTER.mat_mul_flat(-1, right))
            elif operator == "+":
                left = _CONVERTER.add_flat(left, right)
            else:
                right = -right if hasattr(right, "func") and right.func.is_Number else _CONVERTER.mul_flat(-1, right)
                left = _CONVERTER.add_flat(left, right)
        return left

    def mp(self, nofunc: bool = False):
        """mp: left-associative *, /, \\cdot, \\times, \\div over signed factors (convert_mp)."""
        left = self.unary(nofunc)
        while self.peek()[0] == "op":
            operator = self.take("op")
            right = self.unary(nofunc)
            left = _product(left, operator, right)
        return left

    def unary(self, nofunc: bool = False):
        """unary: signs, then one or more juxtaposed factors (convert_unary, convert_postfix_list)."""
        if self.peek()[0] == "sign":
            self.enter()
            sign = self.take("sign")
            value = self.unary(nofunc)
            self.depth -= 1
            if sign == "+":
                return value
            if _is_matrix(value):
                return _CONVERTER.mat_mul_flat(-1, value)
            if hasattr(value, "func") and value.func.is_Number or getattr(value, "is_Number", False):
                return -value
            return _CONVERTER.mul_flat(-1, value)
        factors = [self.postfix(allow_func=True)]
        while self.peek()[0] in _STARTS_COMP and not (nofunc and self.peek()[0] in ("func", "sqrt", "e")) and not (
                self.in_abs and self.peek()[0] == "|"):
            factors.append(self.postfix(allow_func=not nofunc))
        return _juxtaposed(factors)

    def postfix(self, allow_func: bool):
        """exp postfix_op*: a factor with its powers and factorials."""
        value = self.power(allow_func)
        while self.peek()[0] == "!":
            self.index += 1
            value = sympy.factorial(value, evaluate=False)
        return value

    def power(self, allow_func: bool):
        """exp: comp (^ atom | ^{expr}) — one exponent; a second ^ is left to latex2sympy."""
        start = self.index
        value = self.function_call() if self.peek(1)[0] == "(" else None
        if value is not None and not allow_func:
            raise Refused  # f(x) after \\sin x: where the argument ends is ANTLR's choice
        if value is None:
            value = self.comp(allow_func)
        if self.peek()[0] == "^":
            if self.tokens[start][0] == "letter" and self.tokens[start][1] == "I" and self.index == start + 1:
                raise Refused  # latex2sympy's I^n is I
            self.index += 1
            exponent = self.exponent()
            value = sympy.Pow(value, exponent, evaluate=False)
            if self.peek()[0] in ("^", "!"):
                raise Refused
        if self.peek()[0] in ("(", "[", "{") and self.tokens[start][0] in ("letter", "greek", "infty"):
            self.refuse_function_call()
        return value

    def function_call(self):
        """``f(x)``, ``g(2)``: a letter before one letter or number in parentheses is a function applied to it in
        latex2sympy's grammar (func: atom_expr_no_supexpr, its name as written); None for any other shape."""
        (kind, name), (argument_kind, argument) = self.peek(), self.peek(2)
        if kind != "letter" or argument_kind not in ("letter", "num") or self.peek(3)[0] != ")":
            return None
        self.index += 4
        if argument_kind == "num":
            return sympy.Function(name)(_number(argument))
        return sympy.Function(name)(sympy.I if argument == "I" else get_symbol(argument, None, True))

    def refuse_function_call(self) -> None:
        """A letter before ``(atom)``, ``[...]`` or ``{...}`` may be a function call in latex2sympy's grammar."""
        kind = self.peek()[0]
        if kind != "(":
            raise Refused
        inner = self.peek(1)[0]
        closing = self.peek(2)[0]
        if inner in ("num", "letter", "greek", "infty", "e") and closing in (")", "^", "!"):
            raise Refused
        depth, offset = 0, 1
        while True:  # a comma directly inside: func_common_args
            token = self.peek(offset)[0]
            if token in ("(", "{", "[", "\\{", "matrix"):
                depth += 1
            elif token in (")", "}", "]", "\\}", "end"):
                if depth == 0:
                    return
                depth -= 1
            elif token == "," and depth == 0 or token == "eof":
                raise Refused
            offset += 1

    def exponent(self):
        """supexpr: an atom (a number token, a letter, a Greek letter, \\infty) or a braced expression."""
        kind, text = self.peek()
        if kind == "{":
            return self.braced()
        self.index += 1
        if kind == "num":
            return _number(text)
        if kind == "letter":
            return sympy.I if text == "I" else get_symbol(text, None, True)
        if kind == "greek":
            return get_symbol(text, None, True)
        if kind == "infty":
            return sympy.oo
        raise Refused

    def braced(self):
        self.enter()
        self.take("{")
        value = self.expr()
        self.take("}")
        self.depth -= 1
        return value

    def comp(self, allow_func: bool):
        kind, text = self.peek()
        if kind == "num":
            self.index += 1
            return _number(text)
        if kind == "letter":
            self.index += 1
            return sympy.I if text == "I" else get_symbol(text, None, True)
        if kind == "greek":
            self.index += 1
            return get_symbol(text, None, True)
        if kind == "infty":
            self.index += 1
            return sympy.oo
        if kind == "(":
            self.enter()
            self.index += 1
            value = self.expr()
            self.take(")")
            self.depth -= 1
            return value
        if kind == "{":
            before = self.tokens[self.index - 1][0] if self.index else "bof"
            after = self.peek(self._closing(self.index) + 1 - self.index)[0]
            if before in ("bof", "(", "{", "[", "\\{", ",", "rel") and after in (")", "}", "]", "\\}", ",", "eof"):
                raise Refused  # a group standing alone (``(({x}))``, ``x={5}``, ``{{1}}``): a set to latex2sympy
            return self.braced()
        if kind == "|":
            return self.absolute()
        if kind == "frac":
            self.index += 1
            upper, lower = self.braced(), self.braced()
            if _is_matrix(upper) or _is_matrix(lower):
                return sympy.MatMul(upper, sympy.Pow(lower, -1, evaluate=False), evaluate=False)
            if getattr(upper, "is_Integer", False) and getattr(lower, "is_Integer", False):
                return sympy.Rational(upper, lower)
            return sympy.Mul(upper, sympy.Pow(lower, -1, evaluate=False), evaluate=False)
        if kind == "binom":
            self.index += 1
            upper, lower = self.braced(), self.braced()
            return sympy.binomial(upper, lower)
        if kind == "matrix":
            return self.matrix()
        if not allow_func:
            raise Refused
        if kind == "sqrt":
            self.index += 1
            root = None
            if self.peek()[0] == "[":
                self.enter()
                self.index += 1
                root = self.expr()
                self.take("]")
                self.depth -= 1
            base = self.braced()
            return sympy.Pow(base, sympy.S.Half if root is None else 1 / root, evaluate=False)
        if kind == "e":
            self.index += 1
            if self.peek()[0] == "^":
                self.index += 1
                value = sympy.exp(self.exponent())
                if self.peek()[0] == "^":
                    raise Refused  # e^x^2: left to latex2sympy
                return value
            return sympy.exp(1)
        if kind == "func":
            return self.function()
        raise Refused

    def absolute(self):
        """|x| (abs_group), read only in a text with exactly two bars and no power or subscript after the second
        (a bar before ^{...} or _{...} is an evaluation bar)."""
        if self.bars != 2 or self.in_abs:
            raise Refused
        self.enter()
        self.index += 1
        self.in_abs = True
        value = self.expr()
        self.take("|")
        self.in_abs = False
        self.depth -= 1
        if self.peek()[0] in ("^", "_"):
            raise Refused
        return sympy.Abs(value, evaluate=False)

    def function(self):
        """\\sin x, \\cos^2(x), \\arctan 1, \\ln x, \\log_{2}{8}, \\exp(x): func_normal_single_arg (convert_func). An
        argument in parentheses is the expression inside them (``\\sin(x)y`` is sin(x)*y); one without is a product
        that stops before the next function (``\\sin 2x\\cos x``) and runs over * and / (``\\sin x/2`` is sin(x/2))."""
        self.enter()
        name = self.take("func")
        base = power = None
        if self.peek()[0] == "_" and name == "log":
            self.index += 1
            base = self.exponent()
        if self.peek()[0] == "^":
            self.index += 1
            power = self.exponent()
        if self.peek()[0] in ("_", "^"):
            raise Refused  # a base after the power, or a second power
        if self.peek()[0] == "(":
            self.index += 1
            argument = self.expr()
            self.take(")")
        else:
            argument = self.mp(nofunc=True)
        self.depth -= 1
        if name in ("log", "ln"):
            value = sympy.log(argument, base if base is not None else 10 if name == "log" else sympy.E, evaluate=False)
        elif name == "exp":
            value = sympy.exp(argument, evaluate=False)
        elif name.startswith("arc"):
            value = getattr(sympy_trig, "a" + name[3:])(argument, evaluate=False)
        else:
            if power == -1:
                name, power = "a" + name, None
            value = getattr(sympy_trig, name)(argument, evaluate=False)
        return sympy.Pow(value, power, evaluate=False) if power else value

    def matrix(self):
        kind = self.take("matrix")
        self.enter()
        rows = [[self.expr()]]
        while self.peek()[0] in ("&", "row"):
            separator = self.take(self.peek()[0])
            if separator == "&":
                rows[-1].append(self.expr())
            elif self.peek()[0] != "end":
                rows.append([self.expr()])
        if self.take("end") != kind:
            raise Refused
        self.depth -= 1
        return sympy.Matrix(rows)


def _number(text: str):
    """latex2sympy's parse_number for a NUMBER token (``sympy.Number(text)``, which goes through sympy's expression
    parser, 0.6 ms a number): the same Integer, or the same Float at the precision its digits give."""
    return sympy.Float(text) if "." in text else sympy.Integer(int(text))


def _product(left, operator: str, right):
    """One * or / of convert_mp."""
    if operator == "*":
        if _is_matrix(left) or _is_matrix(right):
            return _CONVERTER.mat_mul_flat(left, right)
        return _CONVERTER.mul_flat(left, right)
    if _is_matrix(left) or _is_matrix(right):
        return sympy.MatMul(left, sympy.Pow(right, -1, evaluate=False), evaluate=False)
    if getattr(left, "is_Integer", False) and getattr(right, "is_Integer", False):
        return sympy.Rational(left, right)
    return sympy.Mul(left, sympy.Pow(right, -1, evaluate=False), evaluate=False)


def _juxtaposed(factors: list):
    """convert_postfix_list: a right fold of implicit products, with the mixed-number rule (``2\\frac{1}{2}`` is
    5/2, and so ``2(3)`` is 5)."""
    value = factors[-1]
    for left in reversed(factors[:-1]):
        if not isinstance(left, (sympy.Expr, sympy.Matrix)):
            raise Refused
        if _is_matrix(left) or _is_matrix(value):
            value = _CONVERTER.mat_mul_flat(left, value)
        elif getattr(left, "is_Integer", False) and getattr(value, "is_Rational", False) and value.p > 0 and value.q > 0:
            value = sympy.Rational(left * value.q - value.p if left < 0 else left * value.q + value.p, value.q)
        else:
            value = _CONVERTER.mul_flat(left, value)
    return value


def _interval(left_open: bool, right_open: bool, left, right):
    """convert_interval: an interval, or the pair when it would be empty."""
    try:
        if left_open and right_open and right <= left or not left_open and not right_open and right < left:
            return sympy.Tuple(left, right)
    except Exception:  # a symbolic comparison: an interval, as latex2sympy builds it
        pass
    return sympy.Interval(left, right, left_open=left_open, right_open=right_open)
