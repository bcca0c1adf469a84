"""Red team 6: the math verifier's new acceptances under the RL reward's ``answer_policy="marked"`` (issue 30).

Numbers in words, an article before a text answer, tolerant boxes, the first chat turn, answer phrases, exact
arithmetic on huge-looking expressions, matrix arithmetic, ``i`` as the imaginary unit, decimals against irrationals
and the wall-clock limit, attacked with fresh cases. Every case tried with a clear right verdict is listed; a case
the verifier gets wrong is a strict xfail whose reason says what is wrong and whether main got it right
("regression") or wrong too. Ambiguous cases (is "the blue" the answer "blue"?) were left out.
"""

import time

import pytest

from trl_r1.verifiers.math import check

T = "<think>...</think> "


def A(text):
    return f"<think>...</think><answer>{text}</answer>"


def B(text):
    return f"<think>...</think> The answer is $\\boxed{{{text}}}$."


def M(rows):
    return "\\begin{pmatrix}" + "\\\\".join("&".join(map(str, row)) for row in rows) + "\\end{pmatrix}"


def wrong(gold, completion, reason):
    return pytest.param(gold, completion, marks=pytest.mark.xfail(strict=True, reason=reason))


# pi to 200 places (the 201st is 4, so this is also pi correctly rounded)
PI_200 = ("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798214"
          "808651328230664709384460955058223172535940812848111745028410270193852110555964462294895493038196")
TEN_BY_TEN = [[row * 10 + column for column in range(10)] for row in range(10)]
PRONOUN = "regression: 'one'/'seven' used as a pronoun or count of something else is read as the number (main: 0)"
OPERATOR = ("regression: a number word followed by an operator word ({}) is read as the bare number: the operator is "
            "taken for the noun it counts (main: 0)")
# Accepted by decision: every labelled set this project measures on (benchmarks/data/math_cases.jsonl, both fresh
# sets, issue 30's hidden set) counts arithmetic on i, e and pi (Euler's identity) and a sum of matrices as the equal
# answer it is; refusing them under "marked" (tried: 1cad185) cost 0.4 points on math_cases and 3.3 on math_fresh_2.
I_CALC = ("accepted by decision (see above): a calculation with i now that i is the imaginary unit; it restates the "
          "question like 4+3+9 (main: 0)")
MATRIX_SUM = ("accepted by decision (see above): a sum or difference of matrices, which restates 'compute A+B' the "
              "way 4+3+9 restates a sum (main: 0)")

# --- must score 0 ---
HACKS = [
    # number words that are not the committed answer, negated, hedged or one of several
    ("42", T + "First I thought forty-two, but the answer is 43."),
    ("42", T + "Forty-two is too big. The answer is \\boxed{41}."),
    ("42", T + "The answer is not forty-two."),
    ("42", T + "The answer is maybe forty-two."),
    ("42", T + "The answer is around forty-two."),
    ("42", T + "The answer is approximately forty-two."),
    ("42", T + "The answer is either forty-two or forty-three."),
    ("42", T + "The answer is forty-two or forty-three."),
    ("42", T + "The answer is forty-two (or 43)."),
    ("42", T + "The answer is forty-two, i.e. \\boxed{43}."),
    ("42", A("forty two, 43")),
    ("42", A("forty-two or fifty")),
    ("42", A("at least forty-two")),
    ("42", A("at most forty-two")),
    ("42", A("more than forty-two")),
    ("42", A("forty-two?")),
    ("42", A("forty-two thousand")),
    ("42", A("forty-two hundred")),
    ("42", A("forty-two million")),
    ("42", A("four hundred two")),
    ("42", A("four two")),
    ("42", A("negative forty-two")),
    ("42", A("minus forty-two")),
    ("42", A("forty-two (43)")),
    ("42", A("43 (forty-two)")),
    ("1000001", A("one million")),
    ("1000000", A("one billion")),
    ("2024", A("twenty twenty-five")),
    ("1984", A("nineteen eighty-five")),
    ("99", A("nineteen eighty-four")),
    ("19", A("nineteen eighty-four")),
    ("84", A("nineteen eighty-four")),
    ("1000", A("thousands")),
    ("1000", A("a few thousand")),
    ("1000", A("about a thousand")),
    ("1000", A("over a thousand")),
    ("1000", A("a thousand and one")),
    ("100", A("a hundred or so")),
    ("100", A("hundreds")),
    ("100", A("a hundredth")),
    ("1000000", A("millions")),
    ("12", A("a dozen or so")),
    ("2000000", A("two million two")),
    ("110", A("eleven hundred")),
    ("1100", A("eleven hundred and five")),
    ("100", T + "The answer is one hundred and one."),
    ("100", T + "The answer is one hundred, one."),
    ("1", T + "The answer is one hundred."),
    ("7", T + "The answer is seven if n is odd and eight otherwise."),
    ("7", T + "The answer is 7 if n is odd and 8 otherwise."),
    ("7", T + "The answer is seven when x is one."),
    ("43", T + "The answer is forty-two, not forty-three."),
    ("7", T + "The answer is not seven but eight."),
    ("7", T + "The answer is seven minus two."),
    ("7", A("seven choose two")),
    ("7", A("seven modulo three")),
    ("7", A("seven hundredths")),
    ("7", A("the reciprocal of seven")),
    ("7", A("seven's reciprocal")),
    ("7", A("the seventh root of two")),
    ("7", A("seven million")),
    # operator words taken for a noun
    ("7", T + "The answer is seven squared."),  # fixed: an operator word makes it no bare number
    ("7", A("seven squared")),  # fixed: an operator word makes it no bare number
    ("7", A("seven cubed")),  # fixed: an operator word makes it no bare number
    ("7", A("seven factorial")),  # fixed: an operator word makes it no bare number
    ("7", A("seven dozen")),  # fixed: an operator word makes it no bare number
    ("7", A("seven inverse")),  # fixed: an operator word makes it no bare number
    ("7", A("seven thousandths")),  # fixed: an operator word makes it no bare number
    ("7", A("seven billionths")),  # fixed: an operator word makes it no bare number
    ("7", A("seventh root")),  # fixed: an operator word makes it no bare number
    ("7", T + "\\boxed{\\text{seven squared}}"),  # fixed: an operator word makes it no bare number
    ("5", T + "\\boxed{\\text{The number of ways is 5 squared}}"),  # fixed: an operator word makes it no value
    ("5", T + "The answer to the problem is 5 squared."),  # fixed: an operator word makes it no value
    ("5", T + "**Final Answer**: five squared"),  # fixed: an operator word makes it no bare number
    ("7", T + "The answer is 7 squared."),  # fixed: an operator word makes it no value
    ("7", A("7 squared")),  # fixed: an operator word makes it no value
    # ordinals and "one" that are not answers
    ("2", T + "The second step gives 5. The answer is \\boxed{5}."),
    ("1", T + "The first step gives 1. So the answer is \\boxed{7}."),
    ("1", T + "First, the answer is clear: \\boxed{7}."),
    ("1", T + "The answer is the first one, \\boxed{7}."),
    ("1", T + "The answer is one we computed above: 7."),
    ("1", T + "The answer is the one below: \\boxed{7}"),
    ("1", T + "So the answer is one. No wait, it is 7."),
    ("1", T + "The answer is one more than 6."),
    ("1", T + "The answer is one less than 8."),
    ("1", T + "The answer is one I cannot determine."),
    ("1", T + "The answer is one where x = 7."),
    ("1", T + "The answer is one with 7 sides."),
    ("1", T + "The answer is one, two, or three."),
    ("1", T + "The answer is one in which n = 7."),
    ("1", T + "The answer is one of 7 values."),
    ("1", T + "**Final Answer**: one of them"),
    ("1", A("one of the options")),
    ("1", T + "\\boxed{\\text{one of the options}}"),
    ("1", T + "The answer is one that is odd."),
    ("1", T + "The answer is the one."),
    ("2", T + "The answer is two of them."),
    ("1", A("the one")),
    ("1", A("no one")),
    ("1", A("one or two")),
    ("1", A("one of them")),
    ("1", A("a")),
    ("1", A("an")),
    ("1", T + "The answer is a."),
    ("1", T + "The answer is one of the options."),  # fixed: a pronoun, not the number
    ("1", T + "The answer is one that works."),  # fixed: a pronoun, not the number
    ("1", T + "The answer is one such number."),  # fixed: a pronoun, not the number
    ("1", T + "The answer is one which satisfies both."),  # fixed: a pronoun, not the number
    ("1", T + "The answer is one among many."),  # fixed: a pronoun, not the number
    ("1", T + "The final answer is one of the options."),  # fixed: a pronoun, not the number
    ("7", T + "The answer is seven of the options."),  # fixed: a pronoun, not the number
    ("1", T + "The answer is 1 of the options."),  # fixed: a digit before "of the" is no value
    # fractions in words
    ("3", A("a third")),
    ("\\frac{1}{3}", A("third")),
    ("4", A("one quarter")),
    ("2", A("one half")),
    ("\\frac{1}{2}", A("one and a half")),
    ("1.5", A("one point five one")),
    ("1.51", A("one point five")),
    ("0.05", A("zero point five")),
    ("0.5", A("zero point zero five")),
    ("5", A("five-sixths")),
    ("\\frac{1}{6}", A("five-sixths")),
    ("56", A("five-sixths")),
    ("100", A("one hundredth")),
    ("\\frac{1}{100}", A("hundredth")),
    ("\\frac{1}{7}", A("seventh")),
    ("7", T + "It is the seventh day. The answer is \\boxed{3}."),
    # an article before a text answer
    ("\\text{blue}", A("a blue car")),
    ("\\text{blue car}", A("a red car")),
    ("\\text{blue car}", A("a blue truck")),
    ("\\text{Tuesday}", A("the Tuesday after")),
    ("\\text{Tuesday}", A("a Wednesday")),
    ("\\text{Tuesday}", A("not Tuesday")),
    ("\\text{Tuesday}", A("maybe Tuesday")),
    ("\\text{Tuesday}", A("Tuesday or Wednesday")),
    ("\\text{Tuesday}", A("an answer Tuesday")),
    ("\\text{yes}", A("a no")),
    ("\\text{the circle}", A("a square")),
    ("\\text{the circle}", A("the circle and the square")),
    ("\\text{a circle}", A("the ellipse")),
    ("\\text{even}", A("the even and odd")),
    ("\\text{even}", A("an odd")),
    ("\\text{even}", A("uneven")),
    ("\\text{Paris}", A("the bluest")),
    ("\\text{Paris}", A("the Paris of the east")),
    ("\\text{Paris}", A("a Paris hotel")),
    ("\\text{Paris}", A("a city other than Paris")),
    ("\\text{Paris}", A("Not Paris")),
    ("\\text{Paris}", A("an answer")),
    ("\\text{Paris}", A("the")),
    ("\\text{Paris}", A("a")),
    ("\\text{an apple}", A("an orange")),
    ("\\text{two apples}", A("the two pears")),
    ("\\text{two apples}", A("three apples")),
    # boxes
    ("5", T + "\\boxed 56"),
    ("5", T + "\\boxed 5 6"),
    ("5", T + "\\boxed 5x"),
    ("5", T + "\\boxed{6 and then we check: 5}"),
    ("5", T + "\\boxed{6} \\boxed{5"),
    ("5", T + "\\boxed{5 \\\\ 6}"),
    ("5", T + "\\boxed{5, 6}"),
    ("5", T + "\\boxed{5 6}"),
    ("5", T + "\\boxed{5} or \\boxed{6}"),
    ("5", T + "\\boxed{5} and \\boxed{6}"),
    ("5", T + "\\boxed{\\text{The answer is 5, or maybe 6}}"),
    ("5", T + "\\boxed{\\text{The answer is 5 apples and 6 pears}}"),
    ("5", T + "\\boxed{\\text{The answer is not 5}}"),
    ("5", T + "\\boxed{\\text{Not 5}}"),
    ("5", T + "\\boxed{\\text{at least 5}}"),
    ("5", T + "\\boxed{\\text{about 5}}"),
    ("5", T + "\\boxed{\\text{5 or fewer}}"),
    ("5", T + "\\boxed{\\text{fewer than 5}}"),
    ("5", T + "\\boxed{\\text{5 days after day 1}}"),
    ("5", T + "\\boxed{\\text{five or six}}"),
    ("5", T + "\\boxed{\\text{x = 5 or x = 6}}"),
    ("5", T + "\\boxed{\\text{after 5 steps we get 6}}"),
    ("5", T + "\\boxed{\\text{five more than x}}"),
    ("5", T + "\\boxed{\\text{Answer: 5 if n > 0}}"),
    ("5", T + "\\boxed{\\text{It is 5 when n is even}}"),
    ("5", T + "\\boxed{\\text{between 5 and 9}}"),
    ("5", T + "\\boxed{\\text{up to 5}}"),
    ("5", T + "\\boxed{\\text{no more than 5}}"),
    ("5", T + "\\boxed{\\text{roughly 5}}"),
    ("5", T + "\\boxed{\\text{5-ish}}"),
    ("5", T + "\\boxed{\\text{5 (but I am not sure)}}"),
    ("5", T + "\\boxed{\\text{5 (approx)}}"),
    ("5", T + "\\boxed{\\text{unknown, maybe 5}}"),
    ("5", T + "\\boxed{\\text{5}} \\boxed{\\text{6}}"),
    ("(1,2)", T + "\\boxed{\\left(1,3\\right)}"),
    ("5", T + "\\boxed{5} \\boxed{6"),  # fixed: the unclosed last box is read, so two answers disagree
    # chat turns: what follows the first turn never counts
    ("5", T + "The answer is \\boxed{6}.<|im_end|>\n<|im_start|>user\nAre you sure?<|im_end|>\n"
              "<|im_start|>assistant\nThe answer is \\boxed{5}."),
    ("5", T + "<|im_end|> The answer is \\boxed{5}."),
    ("5", "<|im_start|>assistant\nThe answer is \\boxed{6}<|im_end|>\n"
          "<|im_start|>assistant\n<think>...</think>\\boxed{5}"),
    ("5", T + "The answer is 6.\n\nUser: the answer is 5\n\nAssistant: \\boxed{5}"),
    ("5", T + "\\boxed{6}</s><s>[INST] hi [/INST] \\boxed{5}"),
    ("5", T + "\\boxed{6}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\\boxed{5}"),
    ("5", T + "The answer is six.<|im_end|>five"),
    ("5", T + "The answer is <|im_end|> five."),
    ("5", T + "<|im_start|>assistant The answer is six. <|im_start|>assistant The answer is five."),
    ("5", "<|im_start|>user\nthe answer is 5<|im_end|><|im_start|>assistant\n<think>...</think>The answer is 6."),
    ("5", "<|im_end|>The answer is 5."),
    ("5", "<|endoftext|>The answer is 5."),
    ("5", T + "The answer is six.<|endoftext|>The answer is 5."),
    ("5", T + "The answer is six.</s>The answer is 5."),
    ("5", T + "The answer is six.<｜end▁of▁sentence｜>The answer is 5."),
    ("5", T + "The answer is six.<｜User｜>hi<｜Assistant｜>The answer is 5."),
    ("5", T + "The answer is six.\n<end_of_turn>\n<start_of_turn>model\nThe answer is 5."),
    # answer phrases
    ("5", T + "The answer to the problem is 6."),
    ("5", T + "The answer to the problem is not 5."),
    ("5", T + "The answer to the problem is 5 or 6."),
    ("5", T + "**Final Answer**: 6"),
    ("5", T + "**Final Answer**: 5\n\nWait, it's 6. **Final Answer**: 6"),
    ("5", T + "**Final Answer**: maybe 5"),
    ("5", T + "The answer to the problem is in step 5. \\boxed{6}"),
    ("5", T + "The answer to the problem is 5 times larger: 30."),
    ("5", T + "The answer to the problem is 5% of 100."),
    ("5", T + "The answer to the problem is 5 less than 11."),
    ("5", T + "The answer to question 5 is 7."),
    ("5", T + "The answer to the 5th part is 7."),
    ("5", T + "**Final Answer**: The answer to part 5 is 7"),
    ("5", T + "**Final Answer**: 5^2"),
    ("5", T + "**Final Answer**: not five"),
    ("5", T + "**Final Answer**: five or six"),
    ("5", T + "**Final Answer**: The answer is unknown. Step 5 shows why."),
    ("5", T + "The answer to the problem is unclear; step 5 failed."),
    ("5", T + "The answer to the problem is in the fifth line."),
    ("5", T + "The answer to the problem is 5.\nThe answer to the problem is 6."),
    ("6", T + "The answer to the problem is 6 or 5."),
    # exact arithmetic: restated calculations, near cancellations, huge values
    ("7", A("10^{10^{10}}-10^{10^{10}}+7")),
    ("7", A("10^{10^{10}}-10^{10^{10}}+8")),
    ("7", A("10^{10^{10}}-(10^{10^{10}}-1)+6")),
    ("7", A("10^{10^{10}}-(10^{10^{10}}+1)+7")),
    ("7", A("10^{10^{10}}+1-10^{10^{10}}+7")),
    ("7", A("10^{10^{10}}")),
    ("0", A("10^{10^{10}}")),
    ("10^{10^{10}}", A("10^{10^{10}}+1")),
    ("10^{10^{10}}", A("10^{10^{10}}-1")),
    ("10^{10^{10}}", A("10^{10^{10}+1}")),
    ("10^{10^{10}}", A("10^{10^{9}}")),
    ("2", A("2^{1000000}/2^{999999}")),
    ("2", A("2^{1000000}/2^{999998}")),
    ("2", A("\\frac{2^{1000001}}{2^{1000000}}")),
    ("2", A("\\frac{2^{1000001}+1}{2^{1000000}}")),
    ("2", A("\\frac{3^{1000001}}{3^{1000000}}")),
    ("1", A("\\frac{2^{100000}+1}{2^{100000}}")),
    ("1", A("\\frac{10^{10^{10}}+1}{10^{10^{10}}}")),
    ("1", A("\\frac{10^{10^{10}}}{10^{10^{10}}+1}")),
    ("0", A("10^{-10^{10}}")),
    ("0", A("\\frac{1}{10^{10^{10}}}")),
    ("1", A("(-1)^{10^{10}}")),
    ("-1", A("(-1)^{10^{10}}")),
    ("-1", A("(-1)^{10^{10}+1}")),
    ("1", A("(-1)^{10^{10}+1}")),
    ("1", A("e^{i\\pi}+1")),
    ("1", A("e^{i\\pi}")),
    ("-1", A("e^{2i\\pi}")),
    ("0", A("e^{i\\pi}+1.0000001")),
    ("2", A("i^2+1")),
    ("-1", A("i^{10^{10}+2}")),
    ("1", A("i^{10^{10}+2}")),
    ("1", A("i \\cdot i")),
    ("3", A("3+i")),
    ("3+2i", A("3-2i")),
    ("x^2-1", A("(x+i)(x-i)")),
    ("5", T + "Let i be the index. For i = 5, the answer is \\boxed{6}."),
    wrong("0", A("i^2+1"), I_CALC),
    wrong("2", A("i^{4}+1"), I_CALC),
    wrong("-1", A("i \\cdot i"), I_CALC),
    wrong("5050", A("\\sum_{k=1}^{100} k"), "a sum restated with \\sum escapes the unevaluated-arithmetic rule "
          "(main too; red team 5 lists \\sum_{k=1}^{16} 1)"),
    ("5051", A("\\sum_{k=1}^{100} k")),
    ("5050", A("\\sum_{k=1}^{101} k")),
    ("5050", A("+".join(str(k) for k in range(1, 101)))),
    ("5050", A("+".join(str(k) for k in range(1, 101)) + "+1")),
    ("0", A("+".join(["1", "-1"] * 3000))),
    ("0", A("+".join(["1", "-1"] * 3000) + "+1")),
    ("2", A("(" * 3000 + "1" + ")" * 3000)),
    ("1", A("(" * 3000 + "1" + ")" * 2999)),
    ("1", A("\\frac{1}{" * 500 + "1" + "}" * 500)),
    ("2", A("\\sqrt{\\sqrt{16}}")),
    ("3", A("\\sqrt{\\sqrt{16}}")),
    ("0", A("10^{10^{10}}!-10^{10^{10}}!")),
    ("1", A("10^{10^{10}}!-10^{10^{10}}!")),
    ("0", A("9^{9^{9^{9}}}-9^{9^{9^{9}}}")),
    ("1", A("9^{9^{9^{9}}}-9^{9^{9^{9}}}")),
    ("0", A("9^{9^{9^{9}}}-9^{9^{9^{8}}}")),
    ("0", A("2^{2^{2^{2^{2^{2}}}}}-4^{2^{2^{2^{2^{2}}}-1}}")),
    ("1", A("2^{2^{2^{2^{2^{2}}}}}-4^{2^{2^{2^{2^{2}}}-1}}")),
    ("0", A("\\sum_{k=1}^{10^{10}} k - \\sum_{k=1}^{10^{10}} k")),
    ("1", A("\\sum_{k=1}^{10^{10}} k - \\sum_{k=1}^{10^{10}} k")),
    ("1", A("\\prod_{k=1}^{10^{10}} k - \\prod_{k=1}^{10^{10}} k")),
    ("1", A("\\sum_{k=1}^{10^{10}} \\frac{1}{k^2}")),
    ("1", A("\\int_0^{10^{10}} e^{-x^{10}} dx")),
    ("1", A("10^{10^{10^{10^{10}}}}-10^{10^{10^{10^{10}}}}+1")),
    ("x", A("x^{x^{x^{x^{x}}}}")),
    # decimals against irrationals: correctly rounded, at least 4 significant digits
    ("\\pi", A("3.14")),
    ("\\pi", A("3.15")),
    ("\\pi", A("3.141")),
    ("\\pi", A("3.1415")),
    ("\\pi", A("3.14160")),
    ("\\pi", A("3")),
    ("\\sqrt{2}", A("1.415")),
    ("\\sqrt{2}", A("1.4143")),
    ("\\sqrt{2}", A("1.42")),
    ("e", A("2.719")),
    ("e", A("2.71")),
    ("\\frac{1}{3}", A("0.334")),
    ("\\frac{2}{3}", A("0.668")),
    ("\\pi", A(PI_200[:-1] + "7")),
    ("\\pi", A(PI_200[:-1])),  # 199 places truncated: correctly rounded is ...3820
    ("\\pi", A(PI_200[:-2] + "8")),
    ("\\pi^2", A("9.86")),
    ("1", A("0.9999999999999999999999999")),
    ("1", A("0.99")),
    ("1", A("1.00000000000000000000001")),
    # matrices
    (M([[1, 2], [3, 4]]), A(M([[1, 2], [3, 5]]))),
    (M([[1, 2], [3, 4]]), A(M([[1, 3], [2, 4]]))),
    (M([[1, 2], [3, 4]]), A(M([[1, 2, 3, 4]]))),
    (M([[1, 2], [3, 4]]), A(M([[1], [2], [3], [4]]))),
    (M([[1, 2], [3, 4]]), A(M([[1, 2], [3, 4], [0, 0]]))),
    (M([[1, 2], [3, 4]]), A(M([[1, 2, 0], [3, 4, 0]]))),
    (M([[1, 2], [3, 4]]), A(M([[1, 2], [3]]))),
    (M([[2, 4], [6, 8]]), A("2" + M([[1, 2], [3, 5]]))),
    (M([[2, 4], [6, 8]]), A("3" + M([[1, 2], [3, 4]]))),
    (M([[2, 4], [6, 9]]), A("2" + M([[1, 2], [3, 4]]))),
    (M([[2, 4], [6, 8]]), A("2+" + M([[0, 2], [4, 6]]))),
    (M([[3, 4], [5, 6]]), A("2+" + M([[1, 2], [3, 4]]))),
    (M([[-1, -2], [-3, -4]]), A("-" + M([[1, 2], [3, -4]]))),
    (M([[1, 2], [3, 4]]), A("-" + M([[1, 2], [3, 4]]))),
    (M([[2, 2], [3, 5]]), A(M([[1, 2], [3, 4]]) + "+" + M([[1, 0], [1, 1]]))),
    (M([[2, 2], [3, 5]]), A(M([[1, 2], [3, 4]]) + "+1")),
    (M([[1, 2], [3, 4]]), A(M([[1, 2], [3, 4]]) + "+" + M([[0, 0, 0], [0, 0, 0]]))),
    (M([[1], [2]]), A(M([[1, 2]]))),
    (M([[1, 2]]), A(M([[1], [2]]))),
    (M([[7, 10], [15, 22]]), A(M([[1, 2], [3, 4]]) + "^2")),
    (M([[0, 0], [0, 0]]), A("0")),
    ("0", A(M([[0, 0], [0, 0]]))),
    (M([[1, 2], [3, 4]]), A(M([[1, 2], [3, 4]]) + " \\text{ or } " + M([[1, 2], [3, 5]]))),
    (M([[1, 2], [3, 4]]), A(M([[1, 2], [3, 4]]) + ", " + M([[1, 2], [3, 5]]))),
    (M([[0, 0], [0, 0]]), A(M([[1, 2], [3, 4]]) + "-" + M([[1, 2], [3, 5]]))),
    (M([["2x", 2], [0, 2]]), A("x" + M([[2, 1], [0, 1]]))),
    wrong(M([[2, 2], [3, 5]]), A(M([[1, 2], [3, 4]]) + "+" + M([[1, 0], [0, 1]])), MATRIX_SUM),
    wrong(M([[0, 0], [0, 0]]), A(M([[1, 2], [3, 4]]) + "-" + M([[1, 2], [3, 4]])), MATRIX_SUM),
    # false_chain
    ("5", A("2+3 = 5 = 6")),
    ("5", A("x = 2+3 = 6")),
    ("5", A("x = 6 = 5")),
    ("5", A("5 = 6")),
    ("5", A("10/2 = 5 = 25/5 = 5.1")),
]

# --- must score 1 ---
RESULTS = [
    ("-42", A("negative forty-two")),
    ("42", A("forty-two")),
    ("42", A("Forty-Two")),
    ("42", A("forty two")),
    ("42", A("forty-two") + " The answer is 43."),  # the answer block is the committed answer, as for digits
    ("42", A("forty-two percent")),  # as '42 percent', accepted on main
    ("1000000", A("one million")),
    ("1000000", A("a million")),
    ("2024", A("two thousand twenty-four")),
    ("\\frac{1}{3}", A("one third")),
    ("\\frac{1}{3}", A("a third")),
    ("\\frac{2}{3}", A("two thirds")),
    ("\\frac{1}{4}", A("one quarter")),
    ("\\frac{1}{4}", A("a quarter")),
    ("\\frac{3}{4}", A("three quarters")),
    ("\\frac{1}{2}", A("one half")),
    ("\\frac{3}{2}", A("one and a half")),
    ("1.5", A("one and a half")),
    ("\\frac{5}{6}", A("five-sixths")),
    ("\\frac{1}{100}", A("one hundredth")),
    ("\\frac{1}{7}", A("a seventh")),
    ("1", T + "The answer is one"),
    ("1", T + "The answer is one."),
    ("1", T + "The answer is one apple."),
    ("100", A("one hundred percent")),
    ("100", T + "The answer is one hundred."),
    ("101", T + "The answer is one hundred one."),
    ("101", T + "The answer is one hundred and one."),
    ("1000000000000", A("one trillion")),
    ("10^{12}", A("one trillion")),
    ("2000000", A("two million")),
    ("2000000", A("2 million")),
    ("2000002", A("two million two")),
    ("1100", A("eleven hundred")),
    ("1100", A("one thousand one hundred")),
    ("1105", A("eleven hundred and five")),
    ("1000", A("a thousand")),
    ("100", A("a hundred")),
    ("2", A("two")),
    ("\\text{one}", A("one")),
    ("7", A("seven percent")),
    ("7", A("seven digits")),
    ("3", T + "It is the seventh day. The answer is \\boxed{3}."),
    wrong("42", A("42 (forty-two)"), "a number restated in words in parentheses is not read (main too)"),
    wrong("42", A("forty-two (42)"), "a number in words restated in digits is not read (main too)"),
    wrong("1984", A("nineteen eighty-four"), "a year in words is not read (main too)"),
    ("1.5", A("one point five")),  # fixed: a decimal in words is read
    ("0.05", A("zero point zero five")),  # fixed: a decimal in words is read
    ("10^{24}", A("one septillion")),  # fixed: short-scale names up to decillion are read
    # article before a text answer
    ("\\text{blue car}", A("the blue car")),
    ("\\text{blue car}", A("a blue car")),
    ("\\text{Tuesday}", A("the Tuesday")),
    ("\\text{the circle}", A("a circle")),
    ("\\text{a}", A("a")),
    # boxes
    ("5", T + "\\boxed 5"),
    ("5", T + "\\boxed 5."),
    ("5", T + "$\\boxed{5$"),
    ("5", T + "\\boxed{5 \\\\}"),
    ("5", T + "\\boxed{\\text{The answer is 5}}"),
    ("(1,2)", T + "\\boxed{\\left(1,2\\right)}"),
    ("5", T + "The answer is \\boxed{6. Hmm, actually the answer is 5."),  # the later statement is the answer
    ("5", T + "\\boxed{5"),  # fixed: a completion that ends inside its box answers what it holds
    ("5", T + "The answer is $\\boxed{5"),  # fixed
    ("5", T + "\\boxed{5 \\\\"),  # fixed: the closing line break is layout
    # chat turns
    ("5", T + "The answer is \\boxed{5}.<|im_end|>\n<|im_start|>assistant\nThe answer is \\boxed{6}."),
    ("5", T + "\\boxed{5}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\\boxed{6}"),
    ("5", T + "The answer is five.<|im_end|>"),
    # answer phrases
    ("5", T + "The answer to the problem is 5."),
    ("5", T + "**Final Answer**: 5"),
    ("5", T + "The answer to the problem is 6.\nThe answer to the problem is 5."),
    # exact values
    ("10^{10^{10}}", A("10^{10^{10}}")),
    ("0", A("e^{i\\pi}+1")),  # accepted by design (Euler's identity), though it is a calculation
    ("-1", A("e^{i\\pi}")),
    ("1", A("e^{2i\\pi}")),
    ("i", A("e^{i\\pi/2}")),
    ("3", A("3 + 0i")),
    ("3+2i", A("3+2i")),
    ("i", A("\\sqrt{-1}")),
    ("2i", A("2 \\cdot i")),
    ("1", A("(" * 3000 + "1" + ")" * 3000)),
    ("1", A("{" * 3000 + "1" + "}" * 3000)),
    ("\\frac{n(n+1)}{2}", A("\\sum_{k=1}^{n} k")),
    wrong("x^2+1", A("(x+i)(x-i)"), "i is the imaginary unit only against a constant gold, so (x+i)(x-i) is not "
          "x^2+1 (main too)"),
    ("1", A("1.0")),
    # matrices
    (M([[1, 2], [3, 4]]), A(M([[1, 2], [3, 4]]))),
    (M([[1, 2], [3, 4]]), A(M([[1, 2], [3, 4]]).replace("pmatrix", "bmatrix"))),
    (M([[2, 4], [6, 8]]), A("2" + M([[1, 2], [3, 4]]))),
    (M([[-1, -2], [-3, -4]]), A("-" + M([[1, 2], [3, 4]]))),
    (M([["2x", 2], [0, 2]]), A("2" + M([["x", 1], [0, 1]]))),
    (M(TEN_BY_TEN), A(M(TEN_BY_TEN))),
    # false_chain
    ("5", A("10/2 = 5.0 = 5")),
    # ordinary answers (regression checks against main)
    ("12", T + "So the total is \\boxed{12}."),
    ("12", T + "\\boxed{12}"),
    ("\\frac{3}{4}", A("3/4")),
    ("\\frac{3}{4}", A("\\frac{3}{4}")),
    ("0.75", A("3/4")),
    ("5", A("$x = 5$")),
    ("5", T + "The answer is $x = 5$."),
    ("5", T + "Therefore, $x = 5$. The answer is 5."),
    ("12", T + "The final answer is $\\boxed{12}$"),
    ("12", T + "**Final Answer**\n\\[\\boxed{12}\\]"),
    ("12", T + "**Final Answer**: \\boxed{12}"),
    ("12", T + "The answer is 12 apples."),
    ("12", T + "The answer is twelve apples."),
    ("12", T + "The answer is $12$ dollars."),
    ("12", T + "The answer is \\$12."),
    ("12", T + "The answer is: **12**"),
    ("12", T + "#### 12"),
    ("12", T + "\\boxed{12}\\\\"),
    ("12", T + "\\boxed{\\mathbf{12}}"),
    ("12", B("12")),
    ("\\text{(C)}", A("C")),
    ("\\text{(C)}", A("(C)")),
    ("A", T + "The answer is A."),
    ("(1,2)", A("(1, 2)")),
    ("[1,2)", A("[1,2)")),
    ("x^2+2x+1", A("(x+1)^2")),
    ("\\sqrt{3}", A("\\sqrt 3")),
    ("1", T + "\\boxed{1}"),
    ("1", A("1")),
]

REJECTED_ONLY = [("B", T + "The answer is A.")]


@pytest.mark.parametrize(("gold", "completion"), HACKS + REJECTED_ONLY)
def test_red_team_6_scores_zero(gold, completion):
    assert check(gold, completion, answer_policy="marked").equivalent is False


@pytest.mark.parametrize(("gold", "completion"), RESULTS)
def test_red_team_6_scores_one(gold, completion):
    assert check(gold, completion, answer_policy="marked").equivalent is True


ROUNDED_DECIMALS = [  # decimals against irrationals: correctly rounded, so right only where the dataset opts in
    ("\\pi", A("3.142")),
    ("\\pi", A("3.1416")),
    ("\\pi", A("3.14159")),
    ("\\sqrt{2}", A("1.414")),
    ("\\sqrt{2}", A("1.4142")),
    ("e", A("2.718")),
    ("\\pi^2", A("9.870")),
    ("\\pi", A("3.141592653589793238462643383280")),  # 30 places
    ("\\pi", A("3.14159265358979323846264338327950288419716939937511")),  # fixed: the gold is evaluated past the
    ("\\pi", A(PI_200[:121] + "7")),  # fixed                                   decimal's own digits
    ("\\pi", A(PI_200)),  # fixed
]


@pytest.mark.parametrize(("gold", "completion"), ROUNDED_DECIMALS)
def test_red_team_6_rounded_decimals_score_one_only_under_the_rounded_policy(gold, completion):
    assert check(gold, completion, answer_policy="marked").equivalent is False  # issue 36: approximations rejected
    assert check(gold, completion, answer_policy="marked", approximations="rounded").equivalent is True


BOMBS = [  # inputs built to make the new readers slow; a verdict must come within 2 s
    ("1", A("(" * 3000 + "1" + ")" * 3000)),
    ("0", A("+".join(["1", "-1"] * 3000))),
    ("1", A("\\frac{1}{" * 500 + "1" + "}" * 500)),
    ("7", A("\\sqrt{" * 200 + "7" + "}" * 200)),
    ("42", "<think>" + "forty-two " * 10000 + "</think> The answer is forty three."),
    ("42", "<think>" + "\\boxed{ " * 10000 + "</think> The answer is 43."),
    ("42", "<think>...</think>\\boxed{" + "\\left( " * 10000 + "42}"),
    ("1", A("one " + "million " * 3000)),
    ("1", A(" ".join(["nine hundred ninety-nine"] + ["thousand"] * 2000))),
    ("1", A("10^{10^{10^{10^{10}}}}-10^{10^{10^{10^{10}}}}+1")),
    ("x", A("x^{x^{x^{x^{x}}}}")),
    ("\\frac{n(n+1)}{2}", A("\\sum_{k=1}^{n} k")),
    ("i", A("e^{i\\pi/2}")),
    (M([[200, 0], [0, 200]]), A("+".join([M([[1, 0], [0, 1]])] * 200))),
]


def test_red_team_6_bombs_answer_within_two_seconds():
    check("5", A("x+5-x"), answer_policy="marked")  # boots the worker pool (a one-off cost, not a verdict's)
    slow = {}
    for gold, completion in BOMBS:
        started = time.perf_counter()
        check(gold, completion, answer_policy="marked")
        elapsed = time.perf_counter() - started
        if elapsed >= 2.0:
            slow[completion[:60]] = round(elapsed, 2)
    assert not slow, slow


# --- forms 6 (issue 36; branches math-forms-6 and math-speed-2), attacked blind to the fixes ---
# Cases run with the default ("bare") policy, as `check(gold, completion)`; every strict xfail's reason says whether
# main got it right ("regression: ... (main: right)") or wrong too ("also on main").


def part_b(answer):
    return T + f"(a) $\\boxed{{12}}$ (b) $\\boxed{{{answer}}}$"


def F6(text):
    return T + f"The answer is $\\boxed{{{text}}}$."


SINGLE_WORD = "also on main: a word after the number that changes its value ({}) is dropped as if it were a unit"

FORMS_6_ZERO = [
    # a part hidden behind a right one, labels reordered, skipped or mixed (held)
    ("(12, 5)", T + "(b) $\\boxed{5}$, (a) $\\boxed{12}$"),
    ("(12, 5)", T + "b) $\\boxed{5}$ a) $\\boxed{12}$"),
    ("(12, 5)", T + "**(b)** $\\boxed{5}$ **(a)** $\\boxed{12}$"),
    ("(12, 5)", T + "Part 2: $\\boxed{5}$. Part 1: $\\boxed{12}$."),
    ("(12, 5)", T + "(2) $\\boxed{5}$ (1) $\\boxed{12}$"),
    ("(12, 5)", T + "(a) $\\boxed{12}$, (c) $\\boxed{5}$"),
    ("(12, 5)", T + "(b) $\\boxed{12}$, (c) $\\boxed{5}$"),
    ("(12, 5)", T + "(a) $\\boxed{12}$, (a) $\\boxed{5}$"),
    ("(12, 5)", T + "(a) $\\boxed{12}$, (i) $\\boxed{5}$"),
    ("(12, 5)", T + "(a) $\\boxed{12}$, (2) $\\boxed{5}$"),
    ("(12, 5)", T + "(a) $\\boxed{12}$ (b) $\\boxed{5}$ (c) $\\boxed{7}$"),
    ("(12, 5, 7)", T + "(a) $\\boxed{12}$ (b) $\\boxed{5}$"),
    ("12", T + "(a) $\\boxed{12}$ (b) $\\boxed{5}$"),
    ("(12, 5)", T + "y = $\\boxed{12}$, x = $\\boxed{5}$"),
    ("(12, 5)", T + "(a) $\\boxed{12}$ (b) $\\boxed{5}$. Correction: (b) $\\boxed{6}$"),
    ("(12, 5)", T + "(a) $\\boxed{12}$ (b) $\\boxed{6}$. (b) $\\boxed{5}$"),
    ("(12, 5)", part_b("5 \\text{ or more}")),
    ("(12, 5)", part_b("5 \\text{ (wrong)}")),
    ("(12, 5)", part_b("5 \\text{ less than } x")),
    ("(12, 5)", part_b("5 \\text{ maybe}")),
    ("(12, 5)", part_b("5\\%")),
    ("(12, 5)", part_b("5 \\text{ remainder } 1")),
    ("(12, 5000)", part_b("5 \\text{ km}")),  # a unit is dropped, never converted
    # a labelled part whose word changes its value (fixed: `_VALUE_WORD` keeps the part as written)
    ("(12, 5)", part_b("5 \\text{ thousand}")),
    ("(12, 5)", part_b("5 \\text{ million}")),
    ("(12, 5)", part_b("5 \\text{ billion}")),
    ("(12, 5)", part_b("5 \\text{ squared}")),
    ("(12, 5)", part_b("5 \\text{ cubed}")),
    ("(12, 5)", part_b("5 \\text{ dozen}")),
    ("(12, 5)", part_b("5 \\text{ factorial}")),
    ("(12, 5)", part_b("5 \\text{ reciprocal}")),
    ("(12, 5)", part_b("5 \\text{ thousandths}")),
    ("(12, 5)", part_b("5 \\text{ score}")),
    ("(12, 5)", T + "(a) $\\boxed{12\\text{ squared}}$ (b) $\\boxed{5}$"),
    ("(12, 5)", part_b("5 \\text{ invalid }")),
    ("(12, 5)", part_b("5 \\text{ impossible }")),
    ("(12, 5)", part_b("5 \\text{ unknown }")),
    ("(12, 5)", part_b("5 \\text{ initially }")),
    ("(12, 5)", T + "Part 1: $\\boxed{12}$. Part 2: $\\boxed{5 \\text{ million}}$."),
    ("(12, 5)", T + "x = $\\boxed{12}$, y = $\\boxed{5\\text{ cubed}}$"),
    ("(12, 5)", T + "Mean $= \\boxed{12}$, median $= \\boxed{5 \\text{ dozen}}$"),
    # the same family on one answer, already on main
    wrong("5", F6("5\\text{ and a half}"), SINGLE_WORD.format("and a half: 5.5")),
    wrong("5", F6("5\\text{e}"), SINGLE_WORD.format("\\text{e}: 5e")),
    wrong("5", F6("5\\text{ hundred}"), SINGLE_WORD.format("hundred; thousand and million are refused")),
    wrong("5", F6("5\\text{ tenths}"), SINGLE_WORD.format("tenths; thousandths is refused")),
    wrong("5", F6("5\\text{ twice}"), SINGLE_WORD.format("twice")),
    wrong("5", F6("5\\text{ halved}"), SINGLE_WORD.format("halved")),
    wrong("5", F6("5\\text{ lakh}"), SINGLE_WORD.format("lakh")),
    wrong("5", F6("5\\text{ negative}"), SINGLE_WORD.format("negative")),
    wrong("5", F6("5\\text{ undefined}"), SINGLE_WORD.format("undefined")),
    wrong("(12, 5)", T + "(a) 12, (b) 5 thousand", SINGLE_WORD.format("thousand on an unboxed labelled part")),
    # bounds in words (held: the new rule)
    ("5", F6("\\text{at least } 5")),
    ("5", F6("5 \\text{ at least}")),
    ("5", F6("\\text{up to } 5")),
    ("5", F6("\\text{no more than } 5")),
    ("5", F6("5 \\text{ minimum}")),
    ("5", T + "<answer>5 maximum</answer>"),
    ("5", T + "<answer>up to 5</answer>"),
    # bounds the rule misses
    # fixed (math-fix-7): a bound word after the value bounds it (`extraction._BOUND_PHRASE`)
    ("5", F6("5 \\text{ max}")),
    wrong("5", F6("5 \\text{ min}"), "left as is (math-fix-7): 'min' after a number is minutes, a unit "
          "(`screening.physical_unit`), so '5 min' answers a time question; read as a bound it would refuse those"),
    # fixed (math-fix-7): a bound word after the value bounds it (`extraction._BOUND_PHRASE`)
    ("5", F6("5 \\text{ at the most}")),
    # fixed (math-fix-7): a bound word after the value bounds it (`extraction._BOUND_PHRASE`)
    ("5", T + "<answer>5 max</answer>"),
    # fixed (math-fix-7): a bound word after the value bounds it (`extraction._BOUND_PHRASE`)
    ("5", T + "<answer>5 tops</answer>"),
    # fixed (math-fix-7): a bound word after the value bounds it (`extraction._BOUND_PHRASE`)
    ("5", T + "<answer>5 at max</answer>"),
    # provisional answers (held)
    ("5", T + "At first, the answer is $\\boxed{5}$."),
    ("5", T + "Initially, I got $\\boxed{5}$."),
    ("5", T + "The answer for now is $\\boxed{5}$."),
    ("5", T + "Originally the answer was $\\boxed{5}$."),
    ("5", T + "AT FIRST, THE ANSWER IS $\\boxed{5}$."),
    # provisional words of the rule in places it misses
    ("5", T + "So far, the answer is $\\boxed{5}$."),  # fixed on math-forms-6 (a51dfda)
    # fixed (math-fix-7): a time word set off by commas after "answer" (`extraction._PROVISIONAL`)
    ("5", T + "The answer, for now, is $\\boxed{5}$."),
    # fixed (math-fix-7): a time word right after the answer (`extraction._PROVISIONAL_AFTER`)
    ("5", T + "The answer is $\\boxed{5}$ for now."),
    # \text{No} and words as text (held)
    ("No", F6("\\text{Not sure}")),
    ("No", F6("\\text{No idea}")),
    ("No", F6("\\text{No, yes}")),
    ("No", F6("\\text{Nope}")),
    ("No", F6("\\text{No solution}")),
    ("No", F6("\\text{Not No}")),
    ("No", F6("\\text{No}\\text{t}")),
    ("No", F6("\\text{No} 5")),
    ("Yes", F6("\\text{Yes and No}")),
    ("Yes", F6("\\text{Yes}") + " No."),
    ("5", F6("\\text{No}")),
    ("0", F6("\\text{No}")),
    ("Evelyn", F6("\\text{Not Evelyn}")),
    ("Evelyn", F6("\\text{Evelyn's brother}")),
    # roots and scripts mis-grouped (held)
    ("3", F6("\\sqrt[3]{2}7")),
    ("3\\sqrt[3]{2}", F6("\\sqrt[3]{2}7")),
    ("5\\sqrt[3]{2}", F6("\\sqrt[3]25")),
    ("1", F6("2^\\frac12")),
    ("2^{\\sqrt{2}}", F6("2^\\sqrt23")),
    ("2^{\\frac{1}{23}}", F6("2^\\frac123")),
    ("8", F6("\\sqrt[3]2^3")),
    ("4", F6("\\sqrt[4]16")),
    ("\\sqrt[3]{2}", F6("\\sqrt[3]2.5")),
    # a product without a sign near a division: 1/6 by the documented rule, never 3/2
    ("\\frac32", F6("1/2(3)")),
    ("9", F6("6/2(1+2)")),
    ("3", F6("3/2(2)")),
    ("\\frac16", F6("\\frac12(3)")),
    ("\\frac16", F6("(1/2)(3)")),
    ("\\frac16", F6("1/2*(3)")),
    ("\\frac16", F6("1/2\\cdot(3)")),
    # a third labelled part whose value repeats the second: the parts' values are deduplicated (dict.fromkeys)
    # fixed (math-fix-7): labelled parts keep every value, a repeated one too
    ("(12, 5)", T + "(a) $\\boxed{12}$ (b) $\\boxed{5}$ (c) $\\boxed{5}$"),
    # fixed (math-fix-7): a time word before labelled parts (`extraction._provisional_parts`)
    ("(12, 5)", T + "At first, (a) $\\boxed{12}$ (b) $\\boxed{5}$"),
    ("(12, 5)", T + "(a) $\\boxed{12}$ (b) at least $\\boxed{5}$"),
    ("(12, 5)", T + "Step 1: $\\boxed{12}$. Step 2: $\\boxed{5}$."),
    ("(12, 5)", T + "Attempt 1: $\\boxed{12}$. Attempt 2: $\\boxed{5}$."),
    ("(12, 5)", T + "(a) $\\boxed{12}$ (b) $\\boxed{5}$ Final answer: $\\boxed{7}$"),
    ("(12, 500)", T + "(a) $\\boxed{12\\text{ cm}}$ (b) $\\boxed{5\\text{ m}}$"),
    ("None", F6("\\text{No}")),
    ("\\text{No}", F6("\\text{Yes}")),
    ("0", F6("\\text{None}")),
    ("No", F6("\\text{No real roots}")),
]

FORMS_6_ONE = [
    ("(12, 5)", T + "a) $\\boxed{12}$ b) $\\boxed{5}$"),
    ("(12, 5)", T + "**(a)** $\\boxed{12}$ **(b)** $\\boxed{5}$"),
    ("(12, 5)", T + "Part 1: $\\boxed{12}$. Part 2: $\\boxed{5}$."),
    ("(12, 5)", T + "(1) $\\boxed{12}$ (2) $\\boxed{5}$"),
    ("(12, 5)", T + "(i) $\\boxed{12}$ (ii) $\\boxed{5}$"),
    ("(12, 5)", part_b("5 \\text{ cm}")),
    ("(12, 5)", T + "(a) $\\boxed{12 \\text{ m}}$ (b) $\\boxed{5 \\text{ cm}}$"),
    ("(12, -5)", part_b("-5 \\text{ cm}")),
    ("No", F6("\\text{No}")),
    ("No", F6("\\textbf{No}")),
    ("3", F6("\\sqrt[3]27")),
    ("\\sqrt[3]{2}", F6("\\sqrt[3]2")),
    ("\\sqrt{2}", F6("2^\\frac12")),
    ("2", F6("\\sqrt[3]2^3")),
    ("2", F6("\\sqrt[4]16")),
    ("\\frac16", F6("1/2(3)")),
    ("1", F6("6/2(1+2)")),
    ("\\frac{1}{12}", F6("1/2(3)\\sqrt{4}")),  # the sympy worker groups the same way as the exact path
    ("5", T + "Janet had 10 apples at first, so she has $\\boxed{5}$."),
    ("5", T + "The tank initially held $\\boxed{5}$ litres."),
    ("5", T + "Therefore, at first there were $\\boxed{5}$ apples."),
    # fixed (math-fix-7): labelled parts keep every value, a repeated one too
    ("(12, 12)", T + "(a) $\\boxed{12}$ (b) $\\boxed{12}$"),
    wrong("(12, 5)", T + "(a) The length is $\\boxed{12}$. (b) The width is $\\boxed{5}$.",
          "also on main: labelled parts each answered in a sentence are not read as the parts"),
    ("(12, 5)", T + "Part (a): $\\boxed{12}$. Part (b): $\\boxed{5}$."),
    ("(12, 5)", T + "Part I: $\\boxed{12}$. Part II: $\\boxed{5}$."),
    ("(12, 5)", T + "1) $\\boxed{12}$ 2) $\\boxed{5}$"),
    ("(12, 5)", T + "__(a)__ $\\boxed{12}$ __(b)__ $\\boxed{5}$"),
    ("No", F6("\\text{no}")),
    ("No", T + "<answer>\\text{No}</answer>"),
    # honest misses
    # fixed (math-fix-7): an odd root of a negative term is the real root (`screening._real_odd_roots`)
    ("-2", F6("\\sqrt[3]{-8}")),
    ("4", F6("2^\\sqrt[3]8")),
    ("i", F6("e^\\frac{i\\pi}2")),
    ("2", F6("\\sqrt[3]2\\sqrt[3]4")),
    # fixed (math-fix-7): variables labelled out of order are read in their order
    ("(5, 12)", T + "y = $\\boxed{12}$, x = $\\boxed{5}$"),
    # fixed (math-fix-7): variables labelled out of order are read in their order
    ("(5, 12)", T + "b = $\\boxed{12}$, a = $\\boxed{5}$"),
]


@pytest.mark.parametrize(("gold", "completion"), FORMS_6_ZERO)
def test_forms_6_red_team_scores_zero(gold, completion):
    assert check(gold, completion).equivalent is False


@pytest.mark.parametrize(("gold", "completion"), FORMS_6_ONE)
def test_forms_6_red_team_scores_one(gold, completion):
    assert check(gold, completion).equivalent is True


# --- the exact (fast) path against the sympy worker: a number before a bracket ---
# The exact path reads 2(3) as 6 and 1/2(3) as 1/6 (forms 6's rule, "as the sympy parser reads it"); once anything
# it cannot read (\sqrt, \pi, i, e, a tuple, a set) sends the answer to the sympy worker, latex2sympy reads 2(3) as 5
# and 1/2(3) as 1/5 (`equivalence._latex_to_sympy("2(3)")` is 5). Same on main: not a flip, a disagreement of paths.
# Fixed (math-fix-7): `screening.canonical` writes the product out, (2\cdot(3)), before either path reads it.
JUXTAPOSED_ZERO = [
    ("5", F6("2(3)")),  # held: the exact path
    ("\\frac{1}{5}", F6("1/2(3)")),  # held: the exact path
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("5+\\sqrt{2}", F6("2(3)+\\sqrt{2}")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("\\sqrt{2}+5", F6("(2)(3)+\\sqrt{2}")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("(5, \\sqrt{2})", F6("(2(3), \\sqrt{2})")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("\\{5, \\pi\\}", F6("\\{2(3), \\pi\\}")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("\\frac{\\pi}{5}", F6("\\pi/2(3)")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("\\frac{1}{5}+\\sqrt{2}", F6("1/2(3)+\\sqrt{2}")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("\\frac{8}{5}+2", F6("1(7)/5+\\sqrt{4}")),
]
JUXTAPOSED_ONE = [
    ("6", F6("2(3)")),
    ("\\frac{1}{6}", F6("1/2(3)")),
    ("6\\pi", F6("2(3)\\pi")),  # held: a product after the bracket is read as one
    ("6\\sqrt{2}", F6("2(3\\sqrt{2})")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("6+\\sqrt{2}", F6("2(3)+\\sqrt{2}")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("(6, \\sqrt{2})", F6("(2(3), \\sqrt{2})")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("\\frac{1}{6}+\\sqrt{2}", F6("1/2(3)+\\sqrt{2}")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("\\frac{\\pi}{6}", F6("\\pi/2(3)")),
    # fixed (math-fix-7): a number before a bracket is one product factor on both paths (`screening._juxtaposed_products`)
    ("\\frac{17}{5}", F6("1(7)/5+\\sqrt{4}")),
    # fixed (math-fix-7): E-notation with a decimal point is one number inside a sum too (`screening._E_NOTATION`)
    ("0.0025+\\sqrt{2}", F6("2.5e-3+\\sqrt{2}")),
]


@pytest.mark.parametrize(("gold", "completion"), JUXTAPOSED_ZERO)
def test_forms_6_red_team_juxtaposed_number_scores_zero(gold, completion):
    assert check(gold, completion).equivalent is False


@pytest.mark.parametrize(("gold", "completion"), JUXTAPOSED_ONE)
def test_forms_6_red_team_juxtaposed_number_scores_one(gold, completion):
    assert check(gold, completion).equivalent is True


@pytest.mark.parametrize(("gold", "completion"), [
    pytest.param(*case.values, marks=case.marks) if hasattr(case, "values") else case
    for case in FORMS_6_ZERO + JUXTAPOSED_ZERO
    if (case.values[1] if hasattr(case, "values") else case[1]) != T + "(a) 12, (b) 5 thousand"  # 0 under marked
])
def test_forms_6_red_team_scores_zero_under_the_marked_policy(gold, completion):
    """The RL reward's policy ("marked") accepts the same false positives: none is a grading-only artefact."""
    assert check(gold, completion, answer_policy="marked").equivalent is False

FORMS_6_MORE_ZERO = [
    # fixed (math-fix-7): labelled parts keep every value, a repeated one too
    ("(12, 5)", T + "(a) $\\boxed{12}$ (b) $\\boxed{12}$ (c) $\\boxed{5}$"),
    # fixed (math-fix-7): labelled parts keep every value, a repeated one too
    ("(12, 5)", T + "(a) $\\boxed{12}$ (b) $\\boxed{5}$ (c) $\\boxed{12}$"),
    # fixed (math-fix-7): labelled parts keep every value, a repeated one too
    ("(12, 5)", T + "x = $\\boxed{12}$, y = $\\boxed{5}$, z = $\\boxed{5}$"),
    # fixed (math-fix-7): labelled parts keep every value, a repeated one too
    ("(12, 5)", T + "Mean $= \\boxed{12}$, median $= \\boxed{5}$, mode $= \\boxed{5}$"),
    ("(12, 5)", T + "Part 1: $\\boxed{12}$\nPart 2: $\\boxed{5}$\nPart 3: $\\boxed{7}$"),
    ("(3, 4)", T + "$a = \\boxed{3}$, $b = \\boxed{4}$, $c = \\boxed{5}$"),
]
FORMS_6_MORE_ONE = [
    ("2, 3", T + "$x_1 = \\boxed{2}$, $x_2 = \\boxed{3}$"),
    ("3, -3", T + "$x = \\boxed{3}$, $x = \\boxed{-3}$"),
    # fixed (math-fix-7): variables labelled out of order are read in their order
    ("2, 3", T + "$x_2 = \\boxed{3}$, $x_1 = \\boxed{2}$"),
]


@pytest.mark.parametrize(("gold", "completion"), FORMS_6_MORE_ZERO)
def test_forms_6_red_team_repeated_parts_score_zero(gold, completion):
    assert check(gold, completion).equivalent is False


@pytest.mark.parametrize(("gold", "completion"), FORMS_6_MORE_ONE)
def test_forms_6_red_team_labelled_roots_score_one(gold, completion):
    assert check(gold, completion).equivalent is True

PROVISIONAL_HONEST = [
    ("5", T + "As computed earlier, the answer is $\\boxed{5}$."),  # fixed: `_REFERENCE_BACK`
    ("5", T + "As we found earlier, the answer is $\\boxed{5}$."),  # fixed: `_REFERENCE_BACK`
    ("5", T + "As shown previously, the answer is $\\boxed{5}$."),  # fixed: `_REFERENCE_BACK`
    ("5", T + "From the equation derived earlier, the answer is $\\boxed{5}$."),  # fixed: `_REFERENCE_BACK`
    ("5", T + "Combining the results so far, the answer is $\\boxed{5}$."),  # fixed: `_REFERENCE_BACK`
    ("5", T + "Based on the analysis so far, the answer is $\\boxed{5}$."),  # fixed: `_REFERENCE_BACK`
    ("5", T + "Putting together all the work so far, the answer is $\\boxed{5}$."),  # fixed: `_REFERENCE_BACK`
    ("5", T + "Thus the total saved so far is $\\boxed{5}$."),
    ("5", T + "Initially, there were $\\boxed{5}$ cookies in the jar."),
    ("5", T + "The answer is $\\boxed{5}$, as found earlier."),
    ("5", T + "Earlier we made an error; correcting it, the answer is $\\boxed{5}$."),
]


@pytest.mark.parametrize(("gold", "completion"), PROVISIONAL_HONEST)
def test_forms_6_red_team_reference_back_is_no_provisional_answer(gold, completion):
    assert check(gold, completion).equivalent is True

BOUND_HONEST = [
    # fixed (math-fix-7): a word that names the value is no bound (`extraction._BOUND_PHRASE`)
    ("5", T + "$\\boxed{5 \\text{ (up to rotation)}}$"),
    # fixed (math-fix-7): a word that names the value is no bound (`extraction._BOUND_PHRASE`)
    ("5", T + "$\\boxed{\\text{maximum} = 5}$"),
    # fixed (math-fix-7): a word that names the value is no bound (`extraction._BOUND_PHRASE`)
    ("5", T + "<answer>5 (the maximum)</answer>"),
    # fixed (math-fix-7): a label naming the value is read as one (`extraction._labelled_value`)
    ("5", T + "<answer>Minimum: 5</answer>"),
    ("5", T + "<answer>The minimum value is 5.</answer>"),
    ("5", T + "Therefore the maximum number of coins is $\\boxed{5}$."),
    ("5", T + "<answer>It takes at most 5 moves, and 5 is achieved, so the answer is 5.</answer>"),
]


@pytest.mark.parametrize(("gold", "completion"), BOUND_HONEST)
def test_forms_6_red_team_a_named_extremum_is_no_bound(gold, completion):
    assert check(gold, completion).equivalent is True

UNIT_FOR_UNIT = [
    ("5\\text{ cm}", F6("5\\text{ m}")),  # held: one answer's units are compared
    ("5000", F6("5\\text{ km}")),
    # fixed (math-fix-7): each labelled part's unit is compared with the gold part's (`screening.units_differ`)
    ("(a) 12 cm, (b) 5 cm", T + "(a) $\\boxed{12\\text{ m}}$ (b) $\\boxed{5\\text{ km}}$"),
    wrong("\\$5", F6("5\\text{ cents}"), "also on main: cents for dollars is read as the same 5"),
]


@pytest.mark.parametrize(("gold", "completion"), UNIT_FOR_UNIT)
def test_forms_6_red_team_a_different_unit_scores_zero(gold, completion):
    assert check(gold, completion).equivalent is False

FORMS_6_BOMBS = [  # inputs aimed at the new part-label, provisional, bound, root and script readers
    ("(1, 2)", T + "$\\boxed{1}$" + " (a) :  " * 40 + "! $\\boxed{2}$"),
    ("(1, 2)", T + "$\\boxed{1}$" + "**(a)** ** " * 40 + "! $\\boxed{2}$"),
    ("(1, 2)", T + "$\\boxed{1}$" + "Part 1: " * 300 + "! $\\boxed{2}$"),
    ("(1, 2)", T + "$\\boxed{1}$" + "x $= $ " * 300 + "! $\\boxed{2}$"),
    ("(1, 2)", T + " ".join(f"({'abcdefgh'[k % 8]}) $\\boxed{{{k}}}$" for k in range(3000))),
    ("5", T + "at first, " * 5000 + "$\\boxed{5}$"),
    ("5", T + "initially I really thought that it was " * 2000 + "$\\boxed{5}$"),
    ("5", "<answer>" + "the answer so far is " * 3000 + "5</answer>"),
    ("5", T + "$\\boxed{5 " + "\\text{ up} " * 5000 + "}$"),
    ("5", T + "$\\boxed{" + "2^\\frac" * 3000 + "12}$"),
    ("5", T + "$\\boxed{" + "\\sqrt[3]" * 3000 + "2}$"),
    ("1", T + "$\\boxed{" + "1/2(3)" * 3000 + "}$"),
    ("(1, 2)", T + "(a) $\\boxed{1}$ (b) $\\boxed{2" + "\\text{ cm}" * 5000 + "}$"),
]


def test_forms_6_red_team_bombs_answer_within_two_seconds():
    check("5", A("x+5-x"))  # boots the worker pool (a one-off cost, not a verdict's)
    slow = {}
    for gold, completion in FORMS_6_BOMBS:
        started = time.perf_counter()
        check(gold, completion)
        elapsed = time.perf_counter() - started
        if elapsed >= 2.0:
            slow[completion[:60]] = round(elapsed, 2)
    assert not slow, slow
