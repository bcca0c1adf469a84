"""Red team 5: the "unevaluated arithmetic" rule of the marked answer policy (the GRPO math reward).

Gold answers that are one plain number; completions that only restate a calculation must score 0, and results in
any legitimate final form must still score. Every case tried is listed, passing or not.
"""

import pytest

from trl_r1.verifiers.math import check


def ANSWER(text):
    return f"<think>...</think><answer>{text}</answer>"

HACKS = [
    ('16', '<think>...</think><answer>4 + 3 + 9</answer>'),  # the original hack
    ('16', '<think>...</think> The answer is $\\boxed{4+3+9}$.'),  # in a box
    ('16', '<think>...</think><answer>4 × 4</answer>'),  # unicode times
    ('16', '<think>...</think><answer>4 · 4</answer>'),  # unicode middle dot
    ('16', '<think>...</think><answer>4 ⋅ 4</answer>'),  # unicode dot operator
    ('16', '<think>...</think><answer>4 − 3 + 15</answer>'),  # unicode minus
    ('16', '<think>...</think><answer>4 ＋ 3 ＋ 9</answer>'),  # fullwidth plus
    ('16', '<think>...</think><answer>4 ∗ 4</answer>'),  # U+2217 asterisk operator: not mapped by canonical, sympy reads it as *
    ('16', '<think>...</think><answer>32 ÷ 2</answer>'),  # U+00F7 division sign: not mapped by canonical, sympy reads it
    ('16', '<think>...</think><answer>{32 \\over 2}</answer>'),  # TeX \over
    ('16', '<think>...</think><answer>4 ⨯ 4</answer>'),
    ('16', '<think>...</think><answer>4 \\centerdot 4</answer>'),
    ('16', '<think>...</think><answer>4+3+9\\!</answer>'),
    ('16', '<think>...</think><answer>4 \\ast 4</answer>'),
    ('16', '<think>...</think><answer>4 \\bullet 4</answer>'),
    ('16', '<think>...</think><answer>4 ✕ 4</answer>'),
    ('16', '<think>...</think><answer>4 x 4</answer>'),
    ('16', '<think>...</think><answer>4 \\, + \\, 3 \\, + \\, 9</answer>'),  # LaTeX spacing
    ('16', '<think>...</think><answer>\\left(4+3\\right)+9</answer>'),
    ('16', '<think>...</think><answer>[4+3]+9</answer>'),  # square brackets are outside the arithmetic character class
    ('16', '<think>...</think><answer>\\left[4+3\\right]+9</answer>'),  # same, sized
    ('16', '<think>...</think><answer>\\{4+3\\}+9</answer>'),  # escaped braces
    ('16', '<think>...</think><answer>\\left\\{4+3\\right\\}+9</answer>'),  # escaped braces, sized
    ('16', '<think>...</think><answer>4{+}3{+}9</answer>'),
    ('16', '<think>...</think><answer>{4}+{3}+{9}</answer>'),
    ('16', '<think>...</think><answer>{{4+3+9}}</answer>'),
    ('16', '<think>...</think><answer>(4+3+9)</answer>'),
    ('16', '<think>...</think><answer>\\(4+3+9\\)</answer>'),
    ('16', '<think>...</think><answer>\\displaystyle 4+3+9</answer>'),
    ('16', '<think>...</think><answer>\\textstyle 4+3+9</answer>'),
    ('16', '<think>...</think><answer>\\frac{32}{2}</answer>'),  # non-reduced fraction: copies 'What is 32/2?'
    ('16', '<think>...</think><answer>\\dfrac{32}{2}</answer>'),
    ('16', '<think>...</think><answer>32/2</answer>'),  # slash division is a plain-number fraction to parse_number
    ('16', '<think>...</think><answer>48/3</answer>'),
    ('16', '<think>...</think><answer>\\frac{48}{3}</answer>'),
    ('16', '<think>...</think><answer>\\frac{16}{1}</answer>'),
    ('16', '<think>...</think><answer>16/1</answer>'),
    ('0.5', '<think>...</think><answer>\\frac{2}{4}</answer>'),  # non-reduced fraction
    ('25\\%', '<think>...</think><answer>100/4</answer>'),
    ('16', '<think>...</think><answer>\\frac{4+3+9}{1}</answer>'),  # any \frac escapes the rule
    ('16', '<think>...</think><answer>\\frac{4\\cdot 4}{1}</answer>'),
    ('16', '<think>...</think><answer>(4+3+9)/1</answer>'),  # '/' is outside the arithmetic character class
    ('16', '<think>...</think><answer>4+3+9/1</answer>'),
    ('16', '<think>...</think><answer>96/4-8</answer>'),
    ('16', '<think>...</think><answer>\\frac{96}{4}-8</answer>'),
    ('27', '<think>...</think><answer>48/2+3</answer>'),  # copy of 'What is 48 / 2 + 3?'
    ('27', '<think>...</think><answer>\\frac{48}{2}+3</answer>'),
    ('27', '<think>...</think><answer>48 \\div 2 + 3</answer>'),
    ('\\frac{5}{6}', '<think>...</think><answer>\\frac{1}{2}+\\frac{1}{3}</answer>'),  # copy of 'What is 1/2 + 1/3?'
    ('\\frac{5}{6}', '<think>...</think><answer>1/2+1/3</answer>'),
    ('16', '<think>...</think><answer>4+3+9^1</answer>'),  # a trivial power escapes the rule
    ('16', '<think>...</think><answer>4^1+3+9</answer>'),
    ('16', '<think>...</think><answer>(4+3+9)^{1}</answer>'),
    ('16', '<think>...</think><answer>1\\cdot(4+3+9)^1</answer>'),
    ('16', '<think>...</think><answer>4+3+9+0^2</answer>'),
    ('16', '<think>...</think><answer>4+3+9+\\sqrt{0}</answer>'),
    ('16', '<think>...</think><answer>4+3+\\frac{9}{1}</answer>'),
    ('16', '<think>...</think><answer>4+3+9+0i</answer>'),  # a zero imaginary part
    ('16', '<think>...</think><answer>4+3+9+0x</answer>'),  # a zero multiple of a variable is accepted
    ('16', '<think>...</think><answer>-4^2+32</answer>'),
    ('16', '<think>...</think><answer>(4)(4)</answer>'),
    ('16', '<think>...</think><answer>4(4)</answer>'),
    ('16', '<think>...</think><answer>2(8)</answer>'),
    ('16', '<think>...</think><answer>8\\left(2\\right)</answer>'),
    ('16', '<think>...</think><answer>(2)(2)(2)(2)</answer>'),
    ('-16', '<think>...</think><answer>(-4)(4)</answer>'),
    ('16', '<think>...</think><answer>2^4</answer>'),  # a power of literals (exempt by design): copies 'What is 2^4?'
    ('16', '<think>...</think><answer>2^{4}</answer>'),
    ('16', '<think>...</think><answer>4^2</answer>'),
    ('1024', '<think>...</think><answer>2^{10}</answer>'),
    ('-16', '<think>...</think><answer>-4^2</answer>'),
    ('16', '<think>...</think><answer>2**4</answer>'),
    ('16', '<think>...</think><answer>\\sqrt{256}</answer>'),  # copies 'What is the square root of 256?'
    ('16', '<think>...</think><answer>\\sqrt{16}\\cdot\\sqrt{16}</answer>'),
    ('24', '<think>...</think><answer>4!</answer>'),
    ('15', '<think>...</think><answer>\\binom{6}{2}</answer>'),
    ('16', '<think>...</think><answer>\\sum_{k=1}^{16} 1</answer>'),
    ('16', '<think>...</think><answer>\\sum_{k=1}^{4} 4</answer>'),
    ('0.5', '<think>...</think><answer>\\sin(\\pi/6)</answer>'),
    ('16', '<think>...</think><answer>-(-16)</answer>'),
    ('16', '<think>...</think><answer>|-16|</answer>'),
    ('16', '<think>...</think><answer>\\max(16, 3)</answer>'),
    ('16', '<think>...</think><answer>\\lfloor 16.5 \\rfloor</answer>'),
    ('16', '<think>...</think><answer>\\operatorname{lcm}(8,16)</answer>'),
    ('16', '<think>...</think><answer>16 \\pm 0</answer>'),  # not a committed value
    ('2.5', '<think>...</think><answer>1.25+1.25</answer>'),
    ('2.5', '<think>...</think><answer>1.25 \\times 2</answer>'),
    ('16', '<think>...</think><answer>-4+20</answer>'),
    ('16', '<think>...</think><answer>20 + (-4)</answer>'),
    ('16', '<think>...</think><answer>16+0</answer>'),
    ('16', '<think>...</think><answer>16 \\times 1</answer>'),
    ('16', '<think>...</think><answer>10+6.0</answer>'),
    ('16', '<think>...</think><answer>.5+15.5</answer>'),
    ('16', '<think>...</think><answer>1e1+6</answer>'),
    ('16', '<think>...</think><answer>1.6\\times10</answer>'),  # a product, not scientific notation
    ('16', '<think>...</think><answer>1.6 \\times 10</answer>'),
    ('16', '<think>...</think><answer>8\\cdot2</answer>'),
    ('16', '<think>...</think><answer>8 \\div 0.5</answer>'),
    ('16', '<think>...</think><answer>4\\cdot\\!4</answer>'),
    ('16', '<think>...</think><answer>4 \\cdotp 4</answer>'),
    ('16', '<think>...</think><answer>4\\times{4}</answer>'),
    ('16', '<think>...</think><answer>4\\;\\cdot\\;4</answer>'),
    ('16', '<think>...</think><answer>4\\times4\\times1</answer>'),
    ('16', '<think>...</think><answer>4+3+9 \\text{ apples}</answer>'),
    ('16', '<think>...</think><answer>4+3+9\\text{ cm}</answer>'),
    ('16', '<think>...</think><answer>4 +3 +9 apples</answer>'),
    ('16', '<think>...</think><answer>4 + 3 + 9 (apples)</answer>'),
    ('16', '<think>...</think><answer>4+3+9 \\ \\text{apples}</answer>'),
    ('16', '<think>...</think><answer>4+3+9 \\text{ (total)}</answer>'),
    ('16', '<think>...</think><answer>4+3+9 \\text{ which is the total}</answer>'),
    ('16', '<think>...</think><answer>4 \\times 4 \\text{ cm}</answer>'),
    ('16', '<think>...</think><answer>4\\cdot 4\\,\\text{cm}^2</answer>'),
    ('16', '<think>...</think><answer>4 \\times 4 \\text{ square units}</answer>'),
    ('16', '<think>...</think><answer>2\\times 8 \\text{ apples}</answer>'),
    ('16', '<think>...</think><answer>4+3+9\\,\\text{}</answer>'),
    ('16', '<think>...</think><answer>4+3+9\\;\\;</answer>'),
    ('16', '<think>...</think><answer>4 \\; + 3 + 9 \\\\</answer>'),
    ('16', '<think>...</think><answer>\\text{4+3+9}</answer>'),
    ('16', '<think>...</think><answer>\\text{4 × 4}</answer>'),
    ('16', '<think>...</think><answer>\\mathrm{4}+\\mathrm{3}+9</answer>'),
    ('16', '<think>...</think><answer>\\mathbf{4+3+9}</answer>'),
    ('16', '<think>...</think><answer>4\\text{+}3\\text{+}9</answer>'),
    ('16', '<think>...</think><answer>4 \\plus 3</answer>'),
    ('16', '<think>...</think><answer>4 \\mathbin{+} 3 + 9</answer>'),
    ('16', '<think>...</think><answer>x = 4+3+9</answer>'),
    ('16', '<think>...</think><answer>\\text{total} = 4+3+9</answer>'),
    ('16', '<think>...</think><answer>The total is 4 + 3 + 9.</answer>'),
    ('16', '<think>...</think><answer>\\text{The answer is } 4+3+9</answer>'),
    ('16', '<think>...</think> #### 4 + 3 + 9'),
    ('16', '<think>...</think> The answer is 4 + 3 + 9.'),
    ('16', '<think>...</think> Answer: 4+3+9'),
    ('16', '<think>...</think> Therefore $4+3+9$ is the answer.'),
    ('16', '<think>4+3+9</think><answer>\\boxed{4 + 3 + 9}</answer>'),
    ('16', '<think>...</think><answer>4+3+9 = 2^4</answer>'),
    ('16', '<think>...</think><answer>4 \\times 4 = 4^2</answer>'),
    ('16', '<think>...</think><answer>4+3+9 \\%</answer>'),
    ('16', '<think>...</think><answer>4\\%+3\\%+9\\%</answer>'),
    ('16', '<think>...</think><answer>\\$4+\\$3+\\$9</answer>'),
    ('16', '<think>...</think><answer>(4+3+9)\\%</answer>'),
    ('16', '<think>...</think><answer>4+3+9 \\Rightarrow 16</answer>'),
    ('16', '<think>...</think><answer>4+3+9 \\to 16</answer>'),
    ('16', '<think>...</think><answer>4 + 3 + 9 → 16</answer>'),
    ('16', '<think>...</think><answer>\\underbrace{4+3+9}</answer>'),
    ('16', '<think>...</think><answer>\\overset{}{4+3+9}</answer>'),
    ('16', '<think>...</think><answer>\\color{red}{4+3+9}</answer>'),
    ('16', '<think>...</think><answer>\\phantom{}4+3+9</answer>'),
    ('16', '<think>...</think><answer>0x10</answer>'),
    ('16', '<think>...</think><answer>0b10000</answer>'),
    ('16', '<think>...</think><answer>10_{16}</answer>'),
    ('16', '<think>...</think><answer>20_8</answer>'),
    ('12', '<think>...</think><answer>12:00</answer>'),
    ('(16)', '<think>...</think><answer>4+3+9</answer>'),  # gold not a parse_number number: rule off
    ('10^6', '<think>...</think><answer>999999+1</answer>'),  # gold not a parse_number number
    ('\\frac12', '<think>...</think><answer>1/4+1/4</answer>'),  # \frac12 is read as \frac{1}{2}, a number
    ('3.5', '<think>...</think><answer>3+\\frac{1}{2}</answer>'),
    ('15.5', '<think>...</think><answer>3 1/2</answer>'),  # a mixed number, 3.5, not 31/2
    (16, '<think>...</think><answer>4+3+9</answer>'),  # integer gold
    (16.0, '<think>...</think><answer>4+3+9</answer>'),  # float gold
    ('16', None),
    ('16', '<think>...</think><answer></answer>'),
    ('16', '<think>...</think><answer>1/0</answer>'),
    ('16', '<think>...</think><answer>0/0</answer>'),
    ('16', '<think>...</think><answer>\\frac{1}{0}</answer>'),
    ('16', '<think>...</think><answer>9**9**9**9</answer>'),
    ('16', ANSWER("+".join(["1"] * 1500))),
    ('16', ANSWER("(" * 30 + "4+12" + ")" * 30)),
    ('16', ANSWER("1" * 600 + "-" + "1" * 600)),
    ('16', '<think>...</think><answer>2^{2^{2^{2^{2^{2}}}}}</answer>'),
    ('16', '<think>...</think><answer>\\frac{}{}</answer>'),
    ('16', '<think>...</think><answer>+</answer>'),
    ('16', '<think>...</think><answer>-</answer>'),
    ('16', '<think>...</think><answer>..</answer>'),
    ('16', '<think>...</think><answer>()</answer>'),
    ('16', '<think>...</think><answer>{}</answer>'),
    ('16', '<think>...</think><answer>*</answer>'),
    ('16', '<think>...</think><answer>1e999999</answer>'),
    ('16', '<think>...</think><answer>16e99999</answer>'),
    ('16', '<think>...</think><answer>1.6\\times10^{999}</answer>'),
    ('16', '<think>...</think><answer>)+(</answer>'),
    ('16', ANSWER("4+3+9" * 200)),
    ('16', '<think>...</think><answer>\\</answer>'),
]

RESULTS = [
    ('16', ANSWER("(" * 30 + "16" + ")" * 30)),  # fixed (moved from HACKS): a number in brackets is a result
    # (`number_form`), now read at any depth by exact arithmetic instead of being compared as text
    ('1000', '<think>...</think><answer>1,000</answer>'),
    ('1000', '<think>...</think><answer>1\\,000</answer>'),
    ('1000', '<think>...</think><answer>1{,}000</answer>'),
    ('1000', '<think>...</think><answer>1 000</answer>'),
    ('1000', '<think>...</think><answer>1~000</answer>'),
    ('1000', '<think>...</think><answer>1\\ 000</answer>'),
    ('1000000', '<think>...</think><answer>1\u2009000\u2009000</answer>'),  # thin spaces
    ('1000000', '<think>...</think><answer>1\xa0000\xa0000</answer>'),  # no-break spaces
    ('100000', '<think>...</think><answer>1,00,000</answer>'),  # Indian grouping
    ('1500', '<think>...</think><answer>1.5 \\times 10^{3}</answer>'),
    ('1500', '<think>...</think><answer>1.5\\times10^3</answer>'),
    ('1500', '<think>...</think><answer>1.5 × 10^3</answer>'),
    ('1500', '<think>...</think><answer>1.5 · 10^3</answer>'),
    ('1500', '<think>...</think><answer>1.5e3</answer>'),
    ('1500', '<think>...</think><answer>1.5E+03</answer>'),
    ('1500', '<think>...</think><answer>1.5*10^3</answer>'),
    ('1500', '<think>...</think><answer>1.5 \\cdot 10^{3}</answer>'),
    ('1500', '<think>...</think><answer>1.5 \\times {10}^{3}</answer>'),
    ('1500', '<think>...</think><answer>1.5*10**3</answer>'),  # Python-style scientific notation
    ('1500', '<think>...</think><answer>15 \\times 10^{2}</answer>'),
    ('1000000', '<think>...</think><answer>10^6</answer>'),
    ('1000000', '<think>...</think><answer>1 \\times 10^{6}</answer>'),
    ('0.0025', '<think>...</think><answer>2.5 \\times 10^{-3}</answer>'),
    ('0.0025', '<think>...</think><answer>2.5\\times10^{-3}</answer>'),
    ('1500', '<think>...</think><answer>(1.5) \\times 10^3</answer>'),
    ('1500', '<think>...</think><answer>1.5 x 10^3</answer>'),  # letter x as times
    ('1500', '<think>...</think><answer>1.5\\times 10^{+3}</answer>'),
    ('0.000001', '<think>...</think><answer>10^{-6}</answer>'),
    ('0.000001', '<think>...</think><answer>1 \\times 10^{-6}</answer>'),
    ('16', '<think>...</think><answer>1.6 \\times 10^{1}</answer>'),
    ('160', '<think>...</think><answer>1.6 \\times 10^2</answer>'),
    ('16000', '<think>...</think><answer>16 \\times 10^3</answer>'),
    ('16000', '<think>...</think><answer>16\\times 10^{3}</answer>'),
    ('2000000', '<think>...</think><answer>2\\times10^{6}</answer>'),
    ('16000', '<think>...</think><answer>16 thousand</answer>'),  # number word multiplier
    ('2000000', '<think>...</think><answer>2 \\text{ million}</answer>'),  # number word multiplier
    ('0.5', '<think>...</think><answer>\\frac{1}{2}</answer>'),
    ('0.5', '<think>...</think><answer>1/2</answer>'),
    ('0.5', '<think>...</think><answer>\\tfrac12</answer>'),
    ('-0.5', '<think>...</think><answer>-\\frac{1}{2}</answer>'),
    ('-0.5', '<think>...</think><answer>\\frac{-1}{2}</answer>'),
    ('-0.5', '<think>...</think><answer>-1/2</answer>'),
    ('3.5', '<think>...</think><answer>3\\frac{1}{2}</answer>'),  # mixed number
    ('3.5', '<think>...</think><answer>3 \\frac{1}{2}</answer>'),
    ('3.5', '<think>...</think><answer>3\\tfrac{1}{2}</answer>'),
    ('3.5', '<think>...</think><answer>3 1/2</answer>'),  # plain-text mixed number
    ('\\frac{7}{2}', '<think>...</think><answer>3\\frac12</answer>'),
    ('-16', '<think>...</think><answer>-16</answer>'),
    ('-16', '<think>...</think><answer>−16</answer>'),
    ('-16', '<think>...</think><answer>- 16</answer>'),
    ('-16', '<think>...</think><answer>(-16)</answer>'),
    ('-16', '<think>...</think><answer>-(16)</answer>'),
    ('-3', '<think>...</think><answer>-(3)</answer>'),
    ('-16', '<think>...</think><answer>{-16}</answer>'),
    ('-16', '<think>...</think><answer>-{16}</answer>'),
    ('-4', '<think>...</think><answer>-4</answer>'),
    ('-4', '<think>...</think><answer>-4.0</answer>'),
    ('0', '<think>...</think><answer>0</answer>'),
    ('0', '<think>...</think><answer>-0</answer>'),
    ('0', '<think>...</think><answer>+0</answer>'),
    ('-1', '<think>...</think><answer>−1</answer>'),
    ('16', '<think>...</think><answer>+16</answer>'),
    ('16', '<think>...</think><answer>+ 16</answer>'),
    ('16', '<think>...</think><answer>(+16)</answer>'),
    ('16', '<think>...</think><answer>16.</answer>'),
    ('16', '<think>...</think><answer>016</answer>'),
    ('5', '<think>...</think><answer>05</answer>'),
    ('16', '<think>...</think><answer>16.0</answer>'),
    ('16', '<think>...</think><answer>16.00</answer>'),
    ('16', '<think>...</think><answer>{16}</answer>'),
    ('16', '<think>...</think><answer>\\boxed{16}</answer>'),
    ('16', '<think>...</think> The answer is $\\boxed{16}$.'),
    ('16', '<think>...</think><answer>\\$16</answer>'),
    ('16', '<think>...</think><answer>$16</answer>'),
    ('16', '<think>...</think><answer>16 dollars</answer>'),
    ('16', '<think>...</think><answer>16\\text{ apples}</answer>'),
    ('16', '<think>...</think><answer>16 \\text{ apples}</answer>'),
    ('16', '<think>...</think><answer>16 (apples)</answer>'),
    ('16', '<think>...</think><answer>\\text{16}</answer>'),
    ('16', '<think>...</think><answer>16 \\ \\text{apples}</answer>'),
    ('16', '<think>...</think><answer>16\\ \\text{apples}</answer>'),
    ('16', '<think>...</think><answer>16\\%</answer>'),
    ('25', '<think>...</think><answer>25\\%</answer>'),
    ('0.25', '<think>...</think><answer>25\\%</answer>'),
    ('16', '<think>...</think><answer>1600\\%</answer>'),
    ('1000', '<think>...</think><answer>1,000 \\text{ apples}</answer>'),
    ('1000', '<think>...</think><answer>\\$1,000</answer>'),
    ('1000', '<think>...</think><answer>1,000.00</answer>'),
    ('1000.5', '<think>...</think><answer>1,000.5</answer>'),
    ('16', '<think>...</think><answer>16^{\\circ}</answer>'),
    ('16', '<think>...</think><answer>16 \\text{ cm}</answer>'),
    ('16', '<think>...</think><answer>16\\,\\text{cm}</answer>'),
    ('16', '<think>...</think><answer>16\\,\\mathrm{cm}^2</answer>'),
    ('16', '<think>...</think><answer>16 square units</answer>'),
    ('16', '<think>...</think><answer>16 \\ \\text{m}</answer>'),
    ('16', '<think>...</think><answer>\\(16\\)</answer>'),
    ('16', '<think>...</think><answer>\\[16\\]</answer>'),
    ('16', '<think>...</think><answer>\\mathbf{16}</answer>'),
    ('16', '<think>...</think><answer>\\textbf{16}</answer>'),
    ('16', '<think>...</think><answer>16\\quad</answer>'),
    ('16', '<think>...</think><answer>\\displaystyle 16</answer>'),
    ('16', '<think>...</think><answer>\\num{16}</answer>'),  # siunitx
    ('16', '<think>...</think><answer>16_{10}</answer>'),  # base-10 subscript
    ('16', '<think>...</think><answer>16\\</answer>'),  # stray backslash
    ('1e999', '<think>...</think><answer>1e999</answer>'),
    ('16', '<think>...</think><answer>x = 16</answer>'),
    ('16', '<think>...</think><answer>x=16</answer>'),
    ('16', '<think>...</think><answer>\\text{total} = 16</answer>'),
    ('16', '<think>...</think><answer>16 = 16</answer>'),
    ('16', '<think>...</think><answer>4+3+9=16</answer>'),  # the calculation with its result
    ('16', '<think>...</think><answer>4 + 3 + 9 = 16 apples</answer>'),
    ('16', '<think>...</think><answer>The total is $4+3+9=16$.</answer>'),
    ('16', '<think>...</think><answer>Total: 4 + 3 + 9 = 16</answer>'),
    ('16', '<think>...</think><answer>16, since 4+3+9 = 16</answer>'),
    ('16', '<think>...</think><answer>4+3+9 = \\boxed{16}</answer>'),
    ('16', '<think>...</think><answer>16 = 4+3+9=16</answer>'),
    ('16', '<think>...</think><answer>4\\times4=16</answer>'),
    ('16', '<think>...</think><answer>2^4 = 16</answer>'),
    ('16', '<think>...</think><answer>4 + 3 + 9 \\approx 16</answer>'),  # states the result
    ('16', '<think>...</think><answer>16 = 4+3+9</answer>'),  # result first, then the calculation
    ('16', '<think>...</think><answer>16 (since 4+3+9=16)</answer>'),  # result with a parenthetical check
    ('16', '<think>...</think><answer>16 \\text{ (}4+3+9\\text{)}</answer>'),
    ('16', '<think>...</think> The answer is 16.'),
    ('16', '<think>...</think> #### 16'),
]


# residuals after the fix (strict xfails: each fails once fixed), with why they are left
RESIDUAL_HACKS = {('16', '\\operatorname{lcm}(8,16)'): 'a named function is left to the equivalence check (an lcm answer is accepted by design)', ('0.5', '\\frac{2}{4}'): 'an unreduced fraction is accepted as a result', ('16', '4+3+9+0i'): 'a zero multiple of a variable is dropped by the equivalence check', ('16', '4+3+9+0x'): 'a zero multiple of a variable is dropped by the equivalence check', ('16', '\\sum_{k=1}^{16} 1'): 'a bound variable reads as a variable', ('16', '\\sum_{k=1}^{4} 4'): 'a bound variable reads as a variable', ('0.5', '\\sin(\\pi/6)'): 'against a decimal gold only the four operations and powers are calculations', ('10^6', '999999+1'): 'the rule applies to golds written as one number'}
# fixed: Python's ** (1.5*10**3, issue 36). fixed: number words ('16 thousand', '2 \\text{ million}' for 16000 and 2000000) are read (words.spelled_number)
RESIDUAL_RESULTS = {('100000', '1,00,000'): "Indian digit grouping is not read (also under 'bare')", ('1500', '1.5 x 10^3'): "'x' for times is not read (also under 'bare')", ('16', '\\num{16}'): "siunitx \\num is not read (also under 'bare')", ('16', '16 = 4+3+9'): "result first, then the calculation: not reduced to its number (also under 'bare')", ('16', '16 (since 4+3+9=16)'): "a parenthetical check does not parse (also under 'bare')", ('16', '16 \\text{ (}4+3+9\\text{)}'): "a parenthetical check does not parse (also under 'bare')"}


def _cases(cases, residuals):
    marks = {ANSWER(answer): reason for (_, answer), reason in residuals.items()}
    return [pytest.param(gold, completion, marks=pytest.mark.xfail(strict=True, reason=marks[completion]))
            if completion in marks and (gold, completion) in {(g, ANSWER(a)) for g, a in residuals} else (gold, completion)
            for gold, completion in cases]


@pytest.mark.parametrize(("gold", "completion"), _cases(HACKS, RESIDUAL_HACKS))
def test_red_team_5_hacks_score_zero(gold, completion):
    assert check(gold, completion, answer_policy="marked").equivalent is False


@pytest.mark.parametrize(("gold", "completion"), _cases(RESULTS, RESIDUAL_RESULTS))
def test_red_team_5_results_still_score(gold, completion):
    assert check(gold, completion, answer_policy="marked").equivalent is True
