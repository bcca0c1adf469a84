"""A sympy worker's parser warmed while it waits for tasks, so few answers pay for the parser's start-up.

latex2sympy's ANTLR parser predicts each rule from lookahead through a DFA that it builds on demand and keeps for
the life of the process (shared by every parse). A cold worker spends 5-50 ms of each early parse building DFA
states (``ParserATNSimulator.computeTargetState``) and then 0.3-1 ms per parse once its answers' shapes are known.
A training run's workers warm up over their first few hundred checks; a fresh worker (a new run, a spare that
replaces a killed one) would pay for it in the middle of a GRPO step. `warm_parser` parses one answer of each
common shape, one at a time while the worker is idle (`pool.WorkerPool`'s ``warm_up``: a task waits for one
parse at most, and a spare is ready as soon as it has booted, so the 2 s bound after a timeout is unchanged).

The DFA is a cache of the grammar's decisions: ANTLR returns the same tree however warm it is, so a warm worker
gives every verdict a cold one gives. The answers below are written by token shape (numbers, operators, commands,
brackets, relations, words); common ones such as ``\\pi`` or ``(1,2)`` occur in the benchmark sets as well, but no
parse is kept, only the DFA, which a new answer of the same token shapes uses whatever its values.
"""

from __future__ import annotations

from collections.abc import Iterator

WARM_UP_ANSWERS = (
    # numbers, signs, decimals, percent, scientific notation, digit groups
    "5", "-3", "0.25", "-1.5", ".5", "12\\%", "3.5\\times10^{4}", "1,000", "+7", "2.5e3",
    # the four operations, powers, implicit products, groups
    "2+3", "7-4", "6\\cdot7", "3\\times4", "3*4", "8/3", "8\\div2", "2^{10}", "x^2", "2^{-3}", "x^{1/2}",
    "(2+3)(4-1)", "-(x+1)", "2x", "3xy", "2(x+1)", "\\left(1+2\\right)", "[1+2]", "a^{b^{c}}", "x^{2}y^{3}",
    "2^3^2", "x**2+2*x+1",
    # fractions and roots
    "\\frac{1}{2}", "\\dfrac{3}{4}", "\\tfrac{5}{6}", "-\\frac{7}{8}", "\\frac{x+1}{x-1}", "\\frac12", "\\frac{\\pi}{4}",
    "\\sqrt{2}", "\\sqrt[3]{2}", "2\\sqrt{3}", "\\frac{\\sqrt{2}}{2}", "\\frac{1+\\sqrt{5}}{2}", "\\sqrt{x^2+1}",
    "3-2\\sqrt{2}", "\\frac{-b\\pm\\sqrt{b^2-4ac}}{2a}", "\\sqrt{\\frac{a}{b}}", "\\sqrt2", "\\frac{2}{3}x",
    # constants and functions
    "\\pi", "2\\pi", "\\frac{3\\pi}{2}", "e", "e^{2}", "e^{i\\pi}", "i", "3+4i", "1-2I", "\\infty", "-\\infty",
    "\\sin x", "\\cos(2x)", "\\tan\\theta", "\\sin^2x", "\\cos(x)^3", "\\log 2", "\\ln(x)", "\\log_2 8", "\\log_{10}100",
    "\\exp(x)", "\\arctan 1", "\\arcsin\\frac{1}{2}", "\\cot x", "\\sec x", "|x|", "\\left|x-1\\right|", "n!", "5!",
    "\\binom{10}{3}", "\\dbinom{n}{k}", "\\lfloor x\\rfloor", "\\lceil x\\rceil", "f(x)", "f(2)", "g(t)+h(t)", "x_1",
    "a_{n}", "a_{n+1}", "\\alpha", "\\theta", "\\theta+\\phi", "90^\\circ", "90^{\\circ}", "\\overline{AB}",
    "\\sum_{k=1}^{n}k", "\\prod_{k=1}^{n}k", "\\int_0^1x\\,dx", "\\lim_{x\\to0}x", "\\max(1,2)", "\\gcd(4,6)",
    # relations and conditions
    "x=5", "y=2x+3", "x<3", "x\\le3", "x\\leq3", "x\\leqslant3", "x>3", "x\\ge3", "x\\geq3", "x\\ne3", "x\\neq3",
    "0<x\\le2", "x<-2\\lor x>3", "x>-3\\land x<3", "x\\in[1,2)", "x\\in\\mathbb{R}", "f(x)=x^2", "2x-y+3=0",
    "a=1,b=2", "x^2=4", "x\\approx3", "x\\to1", "1\\Rightarrow2", "a:b",
    # lists, tuples, sets, intervals
    "1,2", "1, 2, 3", "(1,2)", "(1,-2)", "(1,2,3)", "\\{1,2\\}", "\\{1,2,3\\}", "\\left\\{1,2\\right\\}", "\\emptyset",
    "[1,2]", "(0,1]", "[0,\\infty)", "(-\\infty,3)", "(-\\infty,-1)\\cup(2,\\infty)", "[1,2]\\cup[3,4]",
    "\\mathbb{R}", "\\mathbb{R}\\setminus\\{0\\}", "(1,2)\\cap(0,3)", "\\pm2", "\\pm\\sqrt{3}", "(\\frac{1}{2},\\sqrt{3})",
    # matrices
    "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{bmatrix}1\\\\2\\end{bmatrix}", "\\begin{pmatrix}1&0\\end{pmatrix}",
    "2\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{vmatrix}1&2\\\\3&4\\end{vmatrix}",
    # words and text (a worded answer is parsed, and refused, as well)
    "abc", "Theansweris5", "fiveapples", "5apples", "x:5", "\\text{yes}", "\\text{5 apples}", "\\mathrm{cm}",
)


def warm_parser() -> Iterator[None]:
    """Parse each warm-up answer once, a step each (a worker takes the steps while idle: `pool.WorkerPool`). The
    parses go through latex2sympy's ANTLR parser alone, not `equivalence.parse`'s cache nor `fast_reader` (whose
    answers need no DFA): only the parser's DFA is kept, for the answers the fast reader leaves to it."""
    from .equivalence import _antlr_to_sympy

    for text in WARM_UP_ANSWERS:
        try:
            _antlr_to_sympy(text)
        except Exception:  # the parser's verdict on some of them; the DFA is built either way
            pass
        yield
