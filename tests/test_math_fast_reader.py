"""Issue 36, throughput: `fast_reader` reads the common LaTeX subset to the very object latex2sympy builds, or refuses.

latex2sympy's ANTLR parse (its prediction DFA built on demand for each new token shape) was ~80% of a worker's time
on the symbolic benchmark sets. The fast reader replaces it where it answers; the contract is parity: the same
sympy tree (classes, argument order, `srepr`) as latex2sympy gives for the same text, or None. Checked on every
text the benchmark sets send to the parser and on generated expressions over the subset's grammar.
"""

from __future__ import annotations

import glob
import json
import random
import time
from pathlib import Path

import pytest
import sympy
from latex2sympy2_extended.math_normalization import normalize_latex

from trl_r1.verifiers.math import Verdict, prepare_check
from trl_r1.verifiers.math import equivalence
from trl_r1.verifiers.math.equivalence import PARSE_CONFIG, _antlr_to_sympy
from trl_r1.verifiers.math.fast_reader import MAX_DEPTH, read

ROOT = Path(__file__).resolve().parents[1]


def _structure(value):
    """Everything parity means: each node's class and its arguments in their stored order, down to the leaves'
    `srepr` (a number's value and precision, a symbol's name and assumptions)."""
    if isinstance(value, sympy.MatrixBase):
        return type(value), value.shape, tuple(_structure(item) for item in value)
    if isinstance(value, sympy.Basic) and value.args:  # (srepr of a node sorts its terms, evaluating them)
        return type(value), tuple(_structure(arg) for arg in value.args)
    if isinstance(value, sympy.Rational):  # (srepr would print the digits of a huge integer)
        return type(value), value.p, value.q
    if isinstance(value, sympy.Float):
        return type(value), value._mpf_, value._prec
    if isinstance(value, sympy.Basic):
        return type(value), sympy.srepr(value)
    return type(value), repr(value)


def _disagreements(texts) -> tuple[int, list[str]]:
    """(texts the fast reader answers, those where its answer is not latex2sympy's)."""
    answered, wrong = 0, []
    for text in texts:
        fast = read(normalize_latex(text, PARSE_CONFIG))
        if fast is None:
            continue
        answered += 1
        try:
            reference = _antlr_to_sympy(text)
        except Exception as exc:  # latex2sympy refuses a text the fast reader read: a disagreement
            reference = exc
        if isinstance(reference, Exception) or _structure(fast) != _structure(reference):
            wrong.append(f"{text!r}: fast {sympy.srepr(fast)} latex2sympy {reference!r}"[:300])
    return answered, wrong


def _corpus_texts() -> list[str]:
    """Every distinct text `equivalence.parse` hands the parser for the sympy tasks of every benchmark set (golds
    and answers, both answer policies, both approximation policies)."""
    texts: dict[str, None] = {}
    tasks = set()
    for path in sorted(glob.glob(str(ROOT / "benchmarks" / "data" / "math*.jsonl"))):
        for line in open(path):
            if not line.strip():
                continue
            case = json.loads(line)
            for policy in ("marked", "bare"):
                for approximations in ("reject", "rounded"):
                    task = prepare_check(case["gold"], case["completion"], policy, approximations, case.get("question"))
                    if not isinstance(task, Verdict):
                        tasks.add(task[:2])
    real = equivalence._latex_to_sympy
    equivalence.parse.cache_clear()
    try:  # record the texts; a stand-in value lets parse reach every part it would hand the parser
        equivalence._latex_to_sympy = lambda text: texts.setdefault(text) or sympy.Integer(0)
        for gold, answer in sorted(tasks):
            for text in (gold, answer):
                try:
                    equivalence.parse(text)
                except Exception:
                    pass
    finally:
        equivalence._latex_to_sympy = real
        equivalence.parse.cache_clear()
    return list(texts)


def test_the_fast_reader_gives_latex2sympys_tree_on_every_benchmark_text():
    texts = _corpus_texts()
    assert len(texts) > 1500
    answered, wrong = _disagreements(texts)
    assert not wrong, wrong[:20]
    print(f"fast reader answers {answered}/{len(texts)} = {answered / len(texts):.1%} of the benchmark texts")
    assert answered / len(texts) > 0.85


# -- generated expressions over the subset's grammar, with spacing and brace variants

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCIKXYZ"
_GREEK = ["\\pi", "\\alpha", "\\theta", "\\lambda", "\\omega", "\\phi"]
_FUNCTIONS = ["\\sin", "\\cos", "\\tan", "\\cot", "\\sec", "\\csc", "\\ln", "\\log", "\\exp", "\\arcsin", "\\arctan"]


def _space(rng: random.Random) -> str:
    return rng.choice(["", "", "", " ", "  ", "\\,", "\\;"])


def _atom(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.35:
        return str(rng.choice([0, 1, 2, 3, 5, 7, 10, 12, 100, rng.randint(0, 9999)]))
    if kind < 0.45:
        return rng.choice(["0.5", ".25", "1.75", "3.0", "0.125", "007", "2.50"])
    if kind < 0.75:
        return rng.choice(_LETTERS)
    if kind < 0.9:
        return rng.choice(_GREEK)
    return rng.choice(["\\infty", "e", "i", "I"])


def _exponent(rng: random.Random, depth: int) -> str:
    if rng.random() < 0.5:
        return rng.choice(["2", "3", "n", "x", "10", "-1", "\\pi", "23", "0.5"])
    return "{" + _expression(rng, depth + 1) + "}"


def _factor(rng: random.Random, depth: int) -> str:
    kind = rng.random() if depth < 2 else 0.0
    s = _space(rng)
    if kind < 0.4:
        text = _atom(rng)
    elif kind < 0.5:
        text = "(" + s + _expression(rng, depth + 1) + s + ")"
    elif kind < 0.55:
        text = "{" + _expression(rng, depth + 1) + "}"
    elif kind < 0.65:
        frac = rng.choice(["\\frac", "\\dfrac", "\\tfrac"])
        if rng.random() < 0.15:
            text = frac + str(rng.randint(1, 9)) + str(rng.randint(1, 9))
        else:
            text = frac + "{" + _expression(rng, depth + 1) + "}{" + s + _expression(rng, depth + 1) + "}"
    elif kind < 0.72:
        root = "[" + rng.choice(["3", "n", "4"]) + "]" if rng.random() < 0.3 else ""
        text = "\\sqrt" + root + "{" + _expression(rng, depth + 1) + "}"
    elif kind < 0.85:
        name = rng.choice(_FUNCTIONS)
        if rng.random() < 0.2:
            name += rng.choice(["^2", "^{2}", "^{-1}", "^3"])
        if name.startswith("\\log") and rng.random() < 0.3:
            name += rng.choice(["_2", "_{10}", "_{b}"])
        argument = _factor(rng, depth + 1) if rng.random() < 0.5 else "(" + _expression(rng, depth + 1) + ")"
        text = name + rng.choice(["", " "]) + argument
    elif kind < 0.9:
        text = "\\binom{" + _expression(rng, depth + 1) + "}{" + _atom(rng) + "}"
    elif kind < 0.93:
        text = _atom(rng) + "(" + _atom(rng) + ")"
    elif kind < 0.96:
        text = "|" + _expression(rng, depth + 1) + "|"
    else:
        text = _atom(rng) + "!"
    if rng.random() < 0.2:
        text += "^" + _exponent(rng, depth)
    return text


def _term(rng: random.Random, depth: int) -> str:
    parts = [_factor(rng, depth)]
    while rng.random() < 0.35 and len(parts) < 3:
        joint = rng.choice(["", "", " ", "\\cdot", "\\times", "*", "/", "\\div"])
        parts.append(joint + _space(rng) + _factor(rng, depth))
    text = "".join(parts)
    return ("-" if rng.random() < 0.15 else "") + text


def _expression(rng: random.Random, depth: int = 0) -> str:
    parts = [_term(rng, depth)]
    while rng.random() < 0.4 and len(parts) < 3:
        parts.append(rng.choice(["+", "-"]) + _space(rng) + _term(rng, depth))
    return _space(rng).join(parts)


def _set(rng: random.Random) -> str:
    items = [_expression(rng, 1) for _ in range(rng.choice([1, 2, 2, 2, 3]))]
    opening, closing = rng.choice([("(", ")"), ("[", "]"), ("(", "]"), ("[", ")"), ("\\{", "\\}"),
                                   ("\\left(", "\\right)")])
    return opening + ("," + _space(rng)).join(items) + closing


def _answer(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.6:
        return _expression(rng)
    if kind < 0.75:
        relation = rng.choice(["=", "<", ">", "\\le", "\\leq", "\\ge", "\\geq", "\\ne", "\\neq", "\\lt", "\\gt"])
        text = _expression(rng) + relation + _expression(rng)
        if rng.random() < 0.3:
            text += rng.choice(["<", "\\le", "="]) + _expression(rng)
        return text
    if kind < 0.9:
        sets = [_set(rng) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        prefix = rng.choice(["", "", "", "x\\in", "t \\in ", "\\theta\\in", "I\\in", "2x\\in"])
        return prefix + "\\cup".join(sets)
    rows = rng.choice([1, 2, 3])
    columns = rng.choice([1, 2, 3])
    kind = rng.choice(["pmatrix", "bmatrix", "matrix"])
    body = "\\\\".join("&".join(_term(rng, 2) for _ in range(columns)) for _ in range(rows))
    prefix = rng.choice(["", "", "2", "-", "\\frac{1}{2}", "3\\cdot"])
    return prefix + "\\begin{" + kind + "}" + body + "\\end{" + kind + "}"


def _check_generated(seed: int, count: int) -> None:
    rng = random.Random(seed)
    texts = list(dict.fromkeys(_answer(rng) for _ in range(count)))
    answered, wrong = _disagreements(texts)
    assert not wrong, wrong[:20]
    print(f"fast reader answers {answered}/{len(texts)} generated texts")
    assert answered > 0.4 * len(texts)  # the comparison is not vacuous


def test_the_fast_reader_gives_latex2sympys_tree_on_generated_expressions():
    _check_generated(seed=36, count=300)


@pytest.mark.slow  # ~70 s: latex2sympy's cold parse of each new random shape is most of it
def test_the_fast_reader_gives_latex2sympys_tree_on_2000_more_generated_expressions():
    _check_generated(seed=3636, count=2200)


def test_latex2sympys_quirks_are_kept_not_fixed():
    assert read("2(3)") == 5  # a mixed number, as latex2sympy reads 2\frac{1}{2}
    assert sympy.srepr(read("1/2x")) == sympy.srepr(_antlr_to_sympy("1/2x"))  # 1/(2x)
    assert read("\\sin x\\cdot y") == sympy.sin(sympy.Symbol("x") * sympy.Symbol("y"))
    assert read("\\log 8") == sympy.log(8, 10, evaluate=False)


@pytest.mark.parametrize("text", [
    "x_1", "f(x,y)", "f(\\pi)", "x^2(3)", "f(x)(y)", "||x|-1|", "|x|^{2}", "dx", "d \\cdot x", "2tr", "\\mathbb{R}", "I^2", "x^T", "25\\%", "1,000", "x^{\\circ}",
    "2^3^2", "\\gamma", "E", "{1}", "{x+1}", "\\sqrt2", "\\frac12", "|x|y|z|", "\\left(1\\right.",
])
def test_shapes_outside_the_subset_are_refused(text):
    assert read(text) is None


def test_deep_or_long_input_is_refused_quickly_without_recursion_errors():
    start = time.process_time()
    for text in ("(" * 5000 + "1" + ")" * 5000, "-" * 5000 + "1", "{" * 3000 + "x" + "}" * 3000,
                 "\\frac{" * 2000 + "1" + "}{2}" * 2000, "\\sqrt{" * 2000 + "2" + "}" * 2000, "+".join(["1"] * 900)):
        assert read(text) is None or text.startswith("1+")
    assert read("(" * (MAX_DEPTH + 2) + "1" + ")" * (MAX_DEPTH + 2)) is None
    assert read("(" * (MAX_DEPTH - 2) + "1" + ")" * (MAX_DEPTH - 2)) == 1
    assert time.process_time() - start < 1.0


def test_the_parse_of_a_read_text_is_unchanged():
    for text in ("\\frac{1+\\sqrt{5}}{2}", "(1,2]", "\\{1,2\\}", "0<x\\le2", "y=\\frac{1}{2}x+\\frac{5}{2}",
                 "\\frac{1}{11}\\begin{pmatrix}3&-1\\\\-5&2\\end{pmatrix}", "0.25x"):
        assert read(normalize_latex(text, PARSE_CONFIG)) is not None
        fast = equivalence.parse(text)
        equivalence.parse.cache_clear()
        real = equivalence.fast_reader.read
        try:
            equivalence.fast_reader.read = lambda text: None
            slow = equivalence.parse(text)
        finally:
            equivalence.fast_reader.read = real
            equivalence.parse.cache_clear()
        assert _structure(fast) == _structure(slow)


def test_numbers_are_latex2sympys_numbers_at_the_same_precision():
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    from trl_r1.verifiers.math.fast_reader import _number

    rng = random.Random(7)
    texts = ["0", "00", "007", ".5", "0.25", "2.50", "000.5", "3.14159265358979323846264338327950288"]
    for _ in range(1500):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
        cut = rng.randint(0, len(digits) - 1)
        texts.append(digits if rng.random() < 0.5 else digits[:cut] + "." + digits[cut:])
    for text in texts:
        assert _structure(_number(text)) == _structure(_Latex2Sympy().parse_number(text)), text


# shapes where latex2sympy's grammar reads LaTeX its own way: each is read as it reads it, or refused
TRICKY = [
    "2(3)", "2(3)(4)", "-2(3)", "2\\frac{1}{2}", "-2\\frac{1}{2}", "2\\frac{-1}{2}", "1/2x", "1/2(x+1)", "2^3^2", "x^23",
    "x^2.5", "2.5.3", "1 000", ".5x", "007", "e", "2e", "e^x", "e^{-1}", "e^2x", "e(2)", "ex", "xe^x", "e^x^2", "I", "2I",
    "I^2", "I!", "i^2", "\\pi", "\\Pi", "\\pi x", "\\pix", "\\infty", "-\\infty", "x!", "(x+1)!", "x!!", "\\sin x",
    "\\sin(x)", "\\sin(x)y", "\\sin x y", "\\sin x\\cdot y", "\\sin x/2", "\\sin 2x+1", "\\sin(x)^2", "\\sin^2x",
    "\\sin^{-1}x", "\\arcsin^{-1}x", "\\sin^0x", "\\sin x\\cos x", "\\sin\\sin x", "\\sin x e", "\\sin x\\sqrt{2}",
    "\\sin x f(y)", "\\sin -x", "\\sin x^2", "\\sin\\frac{\\pi}{2}", "\\ln x", "\\ln(x)", "\\log x", "\\log_2 8",
    "\\log_{2}{8}", "\\log_{2}(8)", "\\log_28", "\\log^2_2 8", "\\log_2^2 8", "\\exp x", "\\exp(x)^2", "\\sqrt{2}",
    "\\sqrt[3]{2}", "\\sqrt[n]{x}", "\\sqrt{2}^2", "\\frac{1}{0}", "1/0", "\\frac{x}{y}", "\\frac{1}{2}\\frac{1}{3}",
    "\\binom{5}{2}", "\\binom{n}{2}", "f(x)", "f(2)", "F(x)", "f(0.5)", "f(x)^2", "f(x)(y)", "x(y)", "2x(y)", "ab(c)",
    "x^2(y)", "x^{2}(3)", "2^x(y)", "\\pi(2)", "f(-x)", "f(x+1)", "f(\\pi)", "|x|", "|x|^2", "|x|y", "2|x-1|",
    "|x|+|y|", "x=5", "y=2x+3", "x=y=5", "0<x\\le2", "x\\ne3", "x\\neq3", "x<=3", "x!=3", "x==3", "x\\lt3",
    "2x=5", "(x)", "((x))", "(1,2)", "(2,1)", "(1,1)", "[1,1]", "[2,1]", "(1,2]", "[1,2)", "[1,2,3]", "(1,2,3)",
    "(1,2,3]", "((1),2)", "({1},2)", "(\\{1\\},2)", "\\{1\\}", "\\{1,2\\}", "\\{2,1,2\\}", "\\{x\\}", "{1}", "{x+1}",
    "{x}+1", "(1,2)\\cup(3,4)", "(1,2)\\cup(3,4)\\cup(5,6)", "(1,2,3)\\cup\\{4\\}", "(1)\\cup(2,3)", "x\\in(1,2)",
    "x\\in\\{1,2\\}", "x\\in(1)", "X\\in[1,2]", "\\theta\\in(0,\\pi)", "x\\in(1,2)\\cup(3,4)", "2\\in(1,3)",
    "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{bmatrix}1\\\\2\\\\\\end{bmatrix}",
    "\\begin{pmatrix}1\\end{bmatrix}", "\\begin{matrix}1&2\\end{matrix}", "2\\begin{pmatrix}1\\\\2\\end{pmatrix}",
    "-\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\frac{1}{2}\\begin{pmatrix}1\\\\2\\end{pmatrix}",
    "\\begin{pmatrix}1\\\\2\\end{pmatrix}+\\begin{pmatrix}3\\\\4\\end{pmatrix}",
    "\\begin{pmatrix}1&2\\\\3\\end{pmatrix}", "\\frac{\\begin{pmatrix}1\\\\2\\end{pmatrix}}{2}", "d", "2d", "d2",
    "d x", "ad", "tr", "t r", "x^T", "x^ T", "x^{T}", "x^{ T}", "x'", "x^\\circ", "12\\%", "٣", "1\u00a0+2", "x\u2003y",
]


def test_tricky_shapes_are_read_as_latex2sympy_reads_them_or_refused():
    answered, wrong = _disagreements([normalize_latex(text, PARSE_CONFIG) for text in TRICKY] + TRICKY)
    assert not wrong, wrong
    assert answered > len(TRICKY)


def test_the_reader_runs_only_on_the_latex2sympy_versions_its_parity_was_checked_on(monkeypatch):
    """It mirrors latex2sympy2_extended's converter: the installed version is one the parity tests passed on (so
    they test the reader, not a disabled one), and another version gets latex2sympy for every text, same verdicts."""
    from importlib.metadata import version

    from trl_r1.verifiers.math import fast_reader

    assert fast_reader.ENABLED, f"latex2sympy2_extended {version('latex2sympy2_extended')} is not in PARITY_CHECKED"
    for installed, checked in (("1.11.0", True), ("1.11.3", True), ("1.10.2", True), ("1.10.0", False),
                               ("1.12.0", False), ("2.0.0", False)):
        monkeypatch.setattr(fast_reader, "version", lambda _name, installed=installed: installed)
        assert fast_reader._parity_checked() is checked, installed
    monkeypatch.setattr(fast_reader, "ENABLED", False)
    assert read("\\frac{1}{2}x+3") is None
    equivalence.parse.cache_clear()
    try:
        assert equivalence.verdict("\\frac{x}{2}+3", "3+0.5x") == (True, None)
        assert equivalence.verdict("\\frac{x}{2}+3", "3-0.5x") == (False, None)
    finally:
        equivalence.parse.cache_clear()


@pytest.mark.parametrize("text", ["(({x}))", "(({1}))", "((({2})))", "x=(({3}))", "x={5}", "x = {5}", "y={2x+1}",
                                  "x={x+1}", "{{1}}", "x={{1}}", "\\{({1})\\}", "y={\\sqrt{2}}"])
def test_a_brace_group_standing_alone_is_left_to_latex2sympy(text):
    """Red team (rt-reader): latex2sympy reads a group standing alone after a bracket, `=` or another brace as a set
    (``x={5}`` is Eq(x, {5})); the reader had read it as the group's value, a different tree and, for ``y={2x+1}``
    against ``2x+1=y``, a different verdict. It refuses them; a group inside an expression (``x={2}+1``) is read."""
    normalized = normalize_latex(text, PARSE_CONFIG)
    assert read(normalized) is None
    assert _structure(read(normalize_latex("x={2}+1", PARSE_CONFIG))) == _structure(_antlr_to_sympy("x={2}+1"))
