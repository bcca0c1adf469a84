"""Matrices and vectors written another way than the gold: scaled, negated, added, decimals for fractions, another
bracket style, a tuple for a column. One wrong entry, a wrong scalar or a wrong shape must still fail, and a product
or power of matrices (the asked calculation restated) is no result."""

import pytest

from trl_r1.verifiers.math import check

COLUMN = r"\begin{pmatrix}2\\4\end{pmatrix}"
SQUARE = r"\begin{pmatrix}1&2\\3&4\end{pmatrix}"


def boxed(answer: str) -> str:
    return f"<think>...</think> The answer is $\\boxed{{{answer}}}$."


RIGHT = [
    (COLUMN, r"2\begin{pmatrix}1\\2\end{pmatrix}"),  # a scalar times a vector
    (COLUMN, r"2 \cdot \begin{pmatrix}1\\2\end{pmatrix}"),
    (COLUMN, r"\begin{pmatrix}1\\2\end{pmatrix} \cdot 2"),
    (COLUMN, r"4\begin{pmatrix}\frac12\\1\end{pmatrix}"),
    (SQUARE, r"\frac12 \begin{bmatrix}2&4\\6&8\end{bmatrix}"),  # a fraction times a matrix, another bracket style
    (SQUARE, r"\dfrac{1}{2}\left[\begin{array}{cc}2&4\\6&8\end{array}\right]"),
    (r"\begin{pmatrix}-1\\-2\end{pmatrix}", r"-\begin{pmatrix}1\\2\end{pmatrix}"),  # a negated vector
    (r"\begin{pmatrix}4\\6\end{pmatrix}", r"\begin{pmatrix}1\\2\end{pmatrix}+\begin{pmatrix}3\\4\end{pmatrix}"),  # a sum
    (r"\begin{pmatrix}1\\3\end{pmatrix}", r"2\begin{pmatrix}1\\2\end{pmatrix}-\begin{pmatrix}1\\1\end{pmatrix}"),
    (r"\begin{pmatrix}\frac12\\1\end{pmatrix}", r"\begin{pmatrix}0.5\\1\end{pmatrix}"),  # a decimal for a fraction
    (r"\begin{pmatrix}0.5&0.25\end{pmatrix}", r"\begin{pmatrix}\frac{1}{2}&\frac{1}{4}\end{pmatrix}"),
    (r"\begin{pmatrix}1\\2\end{pmatrix}", r"\begin{bmatrix}1\\2\end{bmatrix}"),
    ("(2,4)", r"2\begin{pmatrix}1\\2\end{pmatrix}"),  # a column against a tuple gold (accepted as written, too)
    (r"\begin{pmatrix}2x\\4x\end{pmatrix}", r"2x\begin{pmatrix}1\\2\end{pmatrix}"),
    ("-2", r"\begin{vmatrix}1&2\\3&4\end{vmatrix}"),  # vmatrix is a determinant
]

WRONG = [
    (COLUMN, r"2\begin{pmatrix}1\\3\end{pmatrix}"),  # one entry off after scaling
    (COLUMN, r"3\begin{pmatrix}1\\2\end{pmatrix}"),  # the wrong scalar
    (COLUMN, r"\begin{pmatrix}2\\4\end{pmatrix}+1"),  # a scalar does not add to a matrix
    (COLUMN, r"2+\begin{pmatrix}0\\2\end{pmatrix}"),
    (COLUMN, r"\begin{pmatrix}2&4\end{pmatrix}"),  # a row for a column
    (COLUMN, r"2\begin{pmatrix}1&2\end{pmatrix}"),
    (SQUARE, r"\begin{pmatrix}1&2\\3&5\end{pmatrix}"),  # one wrong entry
    (SQUARE, r"\frac12\begin{pmatrix}2&4\\6&9\end{pmatrix}"),
    (SQUARE, r"\begin{pmatrix}1&2&3&4\end{pmatrix}"),  # the entries in another shape
    (SQUARE, r"-\begin{pmatrix}1&2\\3&4\end{pmatrix}"),  # the negated matrix
    (SQUARE, r"\begin{pmatrix}1&2\\3&4\end{pmatrix}^{T}"),
    (SQUARE, r"\begin{vmatrix}1&2\\3&4\end{vmatrix}"),  # a determinant is a number, not the matrix
    (r"\begin{pmatrix}4\\6\end{pmatrix}", r"\begin{pmatrix}1\\2\end{pmatrix}+\begin{pmatrix}3&4\end{pmatrix}"),  # shapes that do not add
    (r"\begin{pmatrix}\frac13\\1\end{pmatrix}", r"\begin{pmatrix}0.33\\1\end{pmatrix}"),  # a rounded entry is not the fraction
    (r"\begin{pmatrix}3\\7\end{pmatrix}", r"\begin{pmatrix}1&2\\3&4\end{pmatrix}\begin{pmatrix}1\\1\end{pmatrix}"),  # a product restated
    (r"\begin{pmatrix}-2&1\\\frac32&-\frac12\end{pmatrix}", r"\begin{pmatrix}1&2\\3&4\end{pmatrix}^{-1}"),  # an inverse restated
    ("(2,4)", r"2\begin{pmatrix}1\\3\end{pmatrix}"),
]


@pytest.mark.parametrize(("gold", "answer"), RIGHT)
def test_a_matrix_written_another_way_is_the_gold(gold, answer):
    assert check(gold, boxed(answer), answer_policy="marked").equivalent is True


@pytest.mark.parametrize(("gold", "answer"), WRONG)
def test_a_different_matrix_fails(gold, answer):
    assert check(gold, boxed(answer), answer_policy="marked").equivalent is False
    assert check(gold, boxed(answer), answer_policy="bare").equivalent is False
