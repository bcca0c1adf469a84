"""Issue 36, throughput: the math verifier settles by rule what sympy would conclude slowly, and never pays twice.

Each rule here replaces a slow sympy path by a cheap one with the same verdicts; the tests pin the verdicts against
sympy's and show that the slow path is not taken.
"""

from __future__ import annotations

import pytest
import sympy

import trl_r1.verifiers.math as math_verifier
from trl_r1.verifiers.math import Verdict, check, prepare_check
from trl_r1.verifiers.math.equivalence import _bounds_set, parse, verdict
from trl_r1.verifiers.math.exact import sampled_equal
from trl_r1.verifiers.math.screening import bounds_set, canonical, not_one_value, quick_verdict

CONDITIONS = [
    "x<3", r"x\le3", "3<x", r"3\ge x", r"x\ne3", r"x>\sqrt{2}", r"-\pi<x<\pi", r"x<-2\lor x>3", r"x>-3\land x<3",
    r"0<x\le2", r"-2\le-x<0", r"0<2x\le4", r"2x+1>3", r"-3x\le6", r"\frac{x}{2}<1", r"x\ne1\land x\ne2", "5<x<3",
    r"x\le2\lor x\ge1",
]


@pytest.mark.parametrize("text", CONDITIONS)
def test_bounds_set_is_what_sympy_solves(text):
    condition = parse(text)
    assert _bounds_set(condition) == condition.as_set()


@pytest.mark.parametrize("text", [r"x^2<1", r"|x|\le1", r"x<\infty", r"\sin(x)>0"])
def test_other_conditions_are_left_to_sympy(text):
    assert _bounds_set(parse(text)) is None


def test_inequalities_are_compared_without_sympys_solver(monkeypatch):
    """The solver took 50-300 ms a condition (it checks periodicity with `simplify`); bounds need none of it."""

    def no_solver(self):
        raise AssertionError("sympy's inequality solver was called")

    monkeypatch.setattr(sympy.logic.boolalg.Boolean, "as_set", no_solver)
    assert verdict("(0,2]", r"0<x\le2") == (True, None)
    assert verdict("(0,2]", r"0<g(t)\le2") == (True, None)  # a function's range
    assert verdict("(0,2]", r"-2\le-g(t)<0") == (True, None)
    assert verdict("(0,2]", r"0\le g(t)\le2") == (False, None)
    assert verdict(r"x\le3", "x<3") == (False, None)
    assert verdict(r"(-\infty,-2)\cup(3,\infty)", r"x<-2\lor x>3") == (True, None)


SHAPES = [("5", "5,6", "a list of several values"), ("5", "6, 5", "a list of several values"),
          ("12", r"x\ge12", "a relation, not a value"), ("5", r"x\ne5", "a relation, not a value"),
          ("5", r"4<x<6", "a relation, not a value"), ("5", "Likely5", "words, not a value"),
          ("42", "Tomhas42", "words, not a value"), ("5", "wrong", "words, not a value")]


@pytest.mark.parametrize("gold,answer,reason", SHAPES)
def test_shapes_that_never_equal_a_number_agree_with_sympy(gold, answer, reason):
    assert quick_verdict(gold, answer) == (False, reason)
    assert verdict(gold, answer) == (False, None)  # what the worker concludes, after a parse


@pytest.mark.parametrize("answer", [r"\sqrt{25}", "ie5", r"5\text{(x<3)}", "2x", "x-x+5", "e^{2}"])
def test_shapes_that_may_equal_a_number_are_left_to_sympy(answer):
    assert not_one_value(answer) is None


def test_a_shape_rule_decides_in_process():
    assert prepare_check("5", r"The answer is \boxed{5, 6}.", "marked") == Verdict(False, "a list of several values")
    assert prepare_check("5", r"The answer is \boxed{x \geq 5}.", "marked") == Verdict(False, "a relation, not a value")


class _CountingPool:
    def __init__(self, outcome):
        self.outcome, self.calls = outcome, 0

    def run(self, tasks, timeout_s, wall_limit_s=None):
        self.calls += 1
        return [self.outcome] * len(tasks)


def test_a_sympy_verdict_is_remembered(monkeypatch):
    """A GRPO group shares one gold and often one answer; every epoch asks the same prompts: a task decided once
    costs no worker round trip and no parse again."""
    monkeypatch.setattr(math_verifier, "_decided", math_verifier._DecidedTasks(2))
    pool = _CountingPool(("ok", (True, None)))
    monkeypatch.setattr(math_verifier, "_pool", lambda workers: pool)
    for _ in range(3):
        assert check(r"2\sqrt{3}", r"\boxed{\sqrt{12}}").equivalent is True
    assert pool.calls == 1
    check(r"\sqrt{2}", r"\boxed{2/\sqrt{2}}"), check(r"\pi", r"\boxed{4\arctan 1}")  # two more: the first is forgotten
    check(r"2\sqrt{3}", r"\boxed{\sqrt{12}}")
    assert pool.calls == 4


def test_a_timeout_is_not_remembered(monkeypatch):
    """A timeout depends on the machine's load: the next time the task is checked again."""
    monkeypatch.setattr(math_verifier, "_decided", math_verifier._DecidedTasks(8))
    pool = _CountingPool(("timeout", "over the 1.5s limit"))
    monkeypatch.setattr(math_verifier, "_pool", lambda workers: pool)
    for _ in range(2):
        assert check(r"2\sqrt{3}", r"\boxed{\sqrt{12}}") == Verdict(False, "timeout: over the 1.5s limit")
    assert pool.calls == 2


RATIONAL_FUNCTIONS = [("x^2+2x+1", "(x+1)^2", True), ("x^2-1", "(x-1)(x+1)", True), ("x^2-1", "(x-1)^2", False),
                      ("x^3-3x", "x*(x^2-3)", True), (r"\frac{x+1}{x-1}", "(x+1)/(x-1)", True),
                      ("x^2+y^2", "y^2+x^2", True), ("x^2+y^2", "x^2+z^2", False),
                      ("2x/3", r"\frac{2}{3}x", True), ("1/x", "x^{-1}", True), ("x", "5", False),
                      ("x^2+2x+1", "x^2+2*x-1", False), (r"\frac{x}{2}", "0.5x", True)]


@pytest.mark.parametrize("gold,answer,equivalent", RATIONAL_FUNCTIONS)
def test_rational_functions_are_sampled_in_process_as_sympy_samples_them(gold, answer, equivalent):
    assert sampled_equal(gold, answer) is equivalent
    assert verdict(gold, answer) == (equivalent, None)


@pytest.mark.parametrize("gold,answer", [("x^2", "1/2x"), ("x", "1/(x+(1))x"), ("x", r"x\div2x"),
                                         ("x^2", "x(x)"), ("e^2", "e^2"), ("xy", "yx"),
                                         (r"\sqrt{x}", r"\sqrt{x}"), ("x_1", "x_1"), ("x", r"\frac{1}{x-1.3}+x")])
def test_what_the_parser_may_read_otherwise_is_left_to_it(gold, answer):
    """``1/2x`` is 1/(2x) to latex2sympy, e and i are constants, ``x(x)`` may be a function; a point where a side
    is undefined (1.3 is a sample point) is left to sympy as well."""
    assert sampled_equal(gold, answer) is None


SETS = [(r"x\le3", r"3\ge x", True), (r"x\le3", "x<3", False), (r"(-\infty,3]", r"x\le3", True),
        (r"[5,\infty)", "x>5", False), (r"(0,2]", r"0<t\le2", True), (r"x\neq3", r"x\ne3", True),
        (r"x\ne3", r"x\ne-3", False), (r"3<x<5", r"3\lt x\lt6", False), (r"n\le10", r"n\leqslant10", True),
        (r"x\le3", "3", False), (r"[5,\infty)", "5", False), ("5<x<3", "7<y<6", True)]


@pytest.mark.parametrize("gold,answer,equivalent", SETS)
def test_plain_bounds_compare_in_process_as_sympys_sets(gold, answer, equivalent):
    gold, answer = canonical(gold), canonical(answer)
    assert quick_verdict(gold, answer) == (equivalent, None)
    assert verdict(gold, answer) == (equivalent, None)


@pytest.mark.parametrize("text", ["(1,2)", r"0<g(t)\le2", r"x<\infty", r"1\ne x<3", r"x<-2\lor x>3", r"e<3", r"x<\frac{1}{0}"])
def test_other_conditions_and_pairs_have_no_bounds_set(text):
    assert bounds_set(canonical(text)) is None


def test_a_gold_is_read_once_for_its_group(monkeypatch):
    """A GRPO group's completions share one gold: it is extracted and made canonical once, not per completion."""
    reads, read = [], math_verifier.gold_answer
    monkeypatch.setattr(math_verifier, "gold_answer", lambda gold: reads.append(gold) or read(gold))
    math_verifier._read_gold.cache_clear()
    answers = [r"\boxed{72}", r"\boxed{71}", "The answer is 72.", r"\boxed{72, 73}"] * 2
    verdicts = [prepare_check("Natalia sold 48 clips.\n#### 72", answer, "marked") for answer in answers]
    assert [v.equivalent for v in verdicts] == [True, False, True, False] * 2
    assert len(reads) == 1
