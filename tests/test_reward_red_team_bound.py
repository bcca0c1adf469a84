"""Red team (issue 36, item 1): pathological completions against every reward and the math public API.

Written blind to the fixes. The contract (issue 36): whatever a completion holds, each call returns within
`BOUND_S` (2 s) of wall-clock time, never raises, and scores 0.0 (not None) when the sample caused the
failure; None only when the reward does not apply (an unusable gold, no target language).

Each call runs in one long-lived child interpreter (`_Runner`) that times it with `time.perf_counter`; the
parent waits at most `HANG_S` and kills the child's whole process group past it, so a hang (a catastrophic
regex, sympy on a power tower, a recursion in C) fails its case instead of blocking the suite. The child
warms every reward once before the first timed call, as a training run would have (worker pools booted).

Cases that fail on main today carry ``xfail(strict=True)`` with what was seen, so they flip when fixed.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable

import pytest

BOUND_S = 2.0  # issue 36: every reward's score of one completion arrives within 2 s
HANG_S = 8.0  # past this the child is killed and the case fails as a hang
REPO = Path(__file__).resolve().parents[1]

# The child: builds each target once (a reward instance from its class and options, or a function), warms it,
# then answers (target, options, args, kwargs) with (value, error, seconds).
_CHILD = r"""
import os, sys, time, logging, threading
from multiprocessing.connection import Connection
logging.disable(logging.CRITICAL)
replies = Connection(os.dup(1), readable=False)
os.dup2(2, 1)
tasks = Connection(0, writable=False)
from trl_r1.registry import resolve_import_path
built = {}
def target_of(path, options):
    key = (path, repr(sorted((options or {}).items())))
    if key not in built:
        obj = resolve_import_path(path)
        built[key] = obj(**options) if options is not None else obj
    return built[key]
WARM = {
    "trl_r1.verifiers.math:check": (("\\frac{1}{2}", "\\boxed{\\sin(\\pi/6)}"), {}),
    "trl_r1.rewards.math:MathAccuracyReward": ((), {"completions": ["\\boxed{\\sin(\\pi/6)}"], "solution": ["\\frac{1}{2}"]}),
    "trl_r1.rewards.code:CodeReward": ((), {"completions": ["```python\nprint(int(input())+1)\n```"],
        "verification_info": [{"language": "python", "test_cases": [{"type": "stdin_stdout", "input": "1", "output": "2"}]}]}),
    "trl_r1.rewards.language:LanguageConsistencyReward": ((), {"completions": ["<think>Two plus three is five.</think>5"], "prompts": ["What is 2+3?"]}),
}
for path, (args, kwargs) in WARM.items():
    options = None if path.endswith(":check") else {}
    target_of(path, options)(*args, **kwargs)
replies.send("ready")
while True:
    try:
        path, options, args, kwargs, threaded = tasks.recv()
    except EOFError:
        break
    function = target_of(path, options)
    outcome = {}
    def run():
        start = time.perf_counter()
        try:
            outcome["value"], outcome["error"] = function(*args, **kwargs), None
        except BaseException as exc:
            outcome["value"], outcome["error"] = None, f"{type(exc).__name__}: {exc}"[:300]
        outcome["seconds"] = time.perf_counter() - start
    if threaded:  # as TRL's async loop or a user's thread pool calls it: no SIGALRM there
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
    else:
        run()
    value, error, seconds = outcome["value"], outcome["error"], outcome["seconds"]
    try:
        replies.send((value, error, seconds))
    except Exception as exc:
        replies.send((None, f"unpicklable result: {exc}", seconds))
"""


class _Runner:
    """One child interpreter that runs calls under a hang guard; restarted after a hang."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def _start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
        self.process = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env, cwd=REPO, start_new_session=True)
        self.tasks = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self.replies = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        if not self.replies.poll(120) or self.replies.recv() != "ready":
            raise RuntimeError("red-team child did not start")

    def stop(self) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
            self.tasks.close()
            self.replies.close()
            self.process.stdin.close()
            self.process.stdout.close()
            self.process = None

    def call(self, path: str, options: dict | None, *args: Any, threaded: bool = False,
             **kwargs: Any) -> tuple[Any, str | None, float]:
        """(value, error, seconds) of ``target(*args, **kwargs)``, in the child's main thread or (`threaded`) a new
        thread; error "hang" when it took over HANG_S."""
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self._start()
        try:
            self.tasks.send((path, options, args, kwargs, threaded))
            if self.replies.poll(HANG_S):
                return self.replies.recv()
        except (EOFError, OSError, pickle.PicklingError) as exc:
            self.stop()
            return None, f"child died: {exc}", float("inf")
        self.stop()
        return None, "hang", HANG_S


@pytest.fixture(scope="module")
def runner():
    r = _Runner()
    yield r
    r.stop()


# ---------------------------------------------------------------------------------------------------------------
# targets and expectations

CHECK = "trl_r1.verifiers.math:check"
VERIFY = "trl_r1.verifiers.math:verify"
CHECK_BATCH = "trl_r1.verifiers.math:check_batch"
MATH = "trl_r1.rewards.math:MathAccuracyReward"
FORMAT = "trl_r1.rewards.format:FormatReward"
CODE = "trl_r1.rewards.code:CodeReward"
LANGUAGE = "trl_r1.rewards.language:LanguageConsistencyReward"


@dataclass
class Case:
    """One attack: the call, and what its result must satisfy besides the time bound and not raising."""

    id: str
    path: str
    options: dict | None
    args: tuple
    kwargs: dict
    accept: Callable[[Any], bool]
    wanted: str  # the accepted results, in words, for the failure message
    fails_today: str | None = None  # why it is xfail on main


def zero(value: Any) -> bool:
    """A reward's list of one 0.0 (a float, not None)."""
    return isinstance(value, list) and len(value) == 1 and isinstance(value[0], float) and value[0] == 0.0


def scored(value: Any) -> bool:
    """A reward's list of one float in [0, 1] (not None): the sample is scored, whatever the score."""
    return isinstance(value, list) and len(value) == 1 and isinstance(value[0], float) and 0.0 <= value[0] <= 1.0


def zero_or_one(value: Any) -> bool:
    """A reward's list of one 0.0 or 1.0 (a float, not None)."""
    return isinstance(value, list) and len(value) == 1 and value[0] in (0.0, 1.0) and isinstance(value[0], float)


def true_or_false(value: Any) -> bool:
    """`check`'s Verdict saying True or False, not None."""
    return getattr(value, "equivalent", "missing") in (True, False)


def any_reward(value: Any) -> bool:
    """A reward's list of one float or None (the reward may not apply; e.g. an unusable gold)."""
    return isinstance(value, list) and len(value) == 1 and (value[0] is None or isinstance(value[0], float))


def not_equivalent(value: Any) -> bool:
    """`check`'s Verdict saying False (the sample's answer is wrong or unreadable), not None."""
    return getattr(value, "equivalent", "missing") is False


def verdict(value: Any) -> bool:
    """Any Verdict (True, False or None): for pathological golds, where None means the gold is unusable."""
    return getattr(value, "equivalent", "missing") in (True, False, None)


def math_case(id, completion, gold="5", fails_today=None, accept=zero, wanted="[0.0]", **options):
    return Case(id, MATH, options, (), {"completions": [completion], "solution": [gold]}, accept, wanted, fails_today)


def check_case(id, completion, gold="5", fails_today=None, accept=not_equivalent, wanted="Verdict(False)",
               path=CHECK, policy="marked"):
    return Case(id, path, None, (gold, completion), {"answer_policy": policy}, accept, wanted, fails_today)


def format_case(id, completion, fails_today=None, accept=zero, wanted="[0.0]", **options):
    return Case(id, FORMAT, options, (), {"completions": [completion]}, accept, wanted, fails_today)


def language_case(id, completion, fails_today=None, accept=scored, wanted="[float in 0..1]", prompt=None, **options):
    options = {"target_lang": "en", **options} if prompt is None else options
    kwargs = {"completions": [completion]} | ({"prompts": [prompt]} if prompt is not None else {})
    return Case(id, LANGUAGE, options, (), kwargs, accept, wanted, fails_today)


STDIO = {"language": "python", "timeout_s": 1.0,
         "test_cases": [{"type": "stdin_stdout", "input": "2 3\n", "output": "5\n"}]}


def code_case(id, completion, fails_today=None, accept=zero, wanted="[0.0]", tests=STDIO):
    # timeout_s 1.0 per test (in the tests themselves): the bound is the test's own limit plus the reward's overhead
    return Case(id, CODE, {"timeout_s": 1.0}, (), {"completions": [completion], "verification_info": [tests]},
                accept, wanted, fails_today)


def fenced(program: str) -> str:
    return f"<think>I will read two numbers and print their sum.</think>\n<answer>\n```python\n{program}\n```\n</answer>"


# ---------------------------------------------------------------------------------------------------------------
# the attacks

MB = 1_000_000
DEEP = 5_000


def nest(open_: str, close: str, core: str = "5", depth: int = DEEP) -> str:
    return open_ * depth + core + close * depth


INVALID_UTF8 = (b"\xff\xfe\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\xbc" * 20_000)

MATH_ATTACKS = [
    # depth: every construct the extractor or sympy walks recursively
    ("nested_boxed", nest(r"\boxed{", "}"), True),
    ("nested_boxed_wrong", nest(r"\boxed{", "}", "6"), False),
    ("nested_fbox", nest(r"\fbox{", "}"), True),
    ("nested_braces_in_box", r"\boxed{" + nest("{", "}") + "}", True),
    ("nested_frac", r"\boxed{" + r"\frac{1}{" * 3000 + "2" + "}" * 3000 + "}", False),
    ("nested_left_paren", r"\boxed{" + r"\left(" * DEEP + "5" + r"\right)" * DEEP + "}", True),
    ("nested_plain_parens", r"\boxed{" + "(" * DEEP + "5" + ")" * DEEP + "}", True),
    ("nested_sqrt", r"\boxed{" + r"\sqrt{" * 3000 + "25" + "}" * 3000 + "}", False),
    ("nested_text", r"\boxed{" + r"\text{" * DEEP + "5" + "}" * DEEP + "}", True),
    ("nested_answer_tags", "<think>x</think>" + "<answer>" * DEEP + "5" + "</answer>" * DEEP, True),
    ("nested_think_tags", "<think>" * DEEP + "x" + "</think>" * DEEP + r"<answer>\boxed{6}</answer>", False),
    ("nested_dollars", r"\boxed{" + "$" * 20_000 + "5" + "$" * 20_000 + "}", True),
    ("unclosed_boxes", r"\boxed{" * 20_000 + "5", True),
    ("unbalanced_close", r"\boxed{5" + "}" * 100_000, True),
    ("nested_exponent", r"\boxed{" + "2^{" * 3000 + "2" + "}" * 3000 + "}", False),
    ("nested_subscripts", r"\boxed{x" + "_{x" * 3000 + "}" * 3000 + "}", False),
    ("nested_matrix", r"\boxed{" + r"\begin{pmatrix}" * 2000 + "5" + r"\end{pmatrix}" * 2000 + "}", True),
    # backtracking bait: a long run that a regex of `extraction` rescans from every position (found by probing)
    ("digits_after_also", r"\boxed{6} also " + "1" * 50_000, False),
    ("spaces_after_is", "The answer is" + " " * 50_000 + r"\boxed{6}", False),
    ("unclosed_inline_math", r"\(" * 50_000 + " The answer is 6", False),
    ("unclosed_display_math", r"\[" * 50_000 + " The answer is 6", False),
    ("final_answer_stars", "final answer" + "*" * 50_000 + "6", False),
    ("condition_words", r"\boxed{6} when " + "if " * 50_000, False),
    ("remark_unclosed_paren", "The answer is 6 (" + "a" * 3_000, False),  # 1,000 letters: 1 s; 2,000: 7 s
    # width: many boxes, terms, digits
    ("ten_thousand_boxes", r"\boxed{6} " * 10_000, False),
    ("thousand_boxes_then_gold", r"\boxed{6} " * 1_000 + r"The answer is \boxed{6}.", False),
    ("hundred_thousand_terms", r"\boxed{" + "+".join(["1"] * 100_000) + "}", False),
    ("term_sum_long", r"\boxed{" + "+".join(["x"] * 20_000) + "}", False),
    ("product_long", r"\boxed{" + "*".join(["x"] * 5_000) + "}", False),
    ("million_digits", r"\boxed{" + "9" * MB + "}", False),
    ("long_decimal", r"\boxed{5." + "0" * 200_000 + "1}", False),
    ("many_equals", r"\boxed{" + "=".join(["6"] * 20_000) + "}", False),
    ("many_commas", r"\boxed{" + ",".join(["6"] * 50_000) + "}", False),
    ("long_set", r"\boxed{\{" + ",".join(str(i) for i in range(20_000)) + r"\}}", False),
    ("long_interval_union", r"\boxed{" + r"\cup".join(f"({i},{i + 1})" for i in range(5_000)) + "}", False),
    ("many_statements", "The answer is 6. " * 50_000, False),
    ("many_dollar_spans", "$6$ " * 100_000 + "The answer is $6$.", False),
    ("many_answer_blocks", "<answer>6</answer>" * 50_000, False),
    ("many_hedges", (r"maybe \boxed{6} or perhaps " * 20_000), False),
    # size
    ("megabyte_think_then_wrong", "<think>" + "Let me think again. " * 60_000 + "</think>" + r"\boxed{6}", False),
    ("megabyte_prose_no_answer", "word " * 250_000, False),
    ("megabyte_in_box", r"\boxed{" + "a" * MB + "}", False),
    ("megabyte_latex_commands", r"\boxed{" + r"\alpha" * 200_000 + "}", False),
    ("megabyte_spaces_in_box", r"\boxed{" + " " * MB + "6}", False),
    ("megabyte_newlines", "\n" * MB + r"\boxed{6}", False),
    # encoding
    ("nul_bytes", "\x00" * 100_000 + r"\boxed{6}" + "\x00" * 100_000, False),
    ("nul_in_box", r"\boxed{5" + "\x00" * 10_000 + "1}", True),
    ("lone_surrogates", "\ud800\udfff" * 50_000 + r"\boxed{6\ud800}", False),
    ("invalid_utf8_surrogateescape", INVALID_UTF8.decode("utf-8", "surrogateescape") + r"\boxed{6}", False),
    ("invalid_utf8_replace", INVALID_UTF8.decode("utf-8", "replace") + r"\boxed{6}", False),
    ("rtl_override_in_box", "\u202e" + r"\boxed{\u202e6\u202d}" * 10_000, False),
    ("zero_width_in_box", r"\boxed{" + "\u200b\u200d\ufeff" * 100_000 + "6}", False),
    ("combining_marks", r"\boxed{6" + "\u0301" * 200_000 + "}", False),
    ("fullwidth_digits", r"\boxed{" + "６" * 100_000 + "}", False),
    # sympy bait: values that are cheap to write and ruinous to evaluate
    ("power_tower", r"\boxed{9^{9^{9^{9}}}}", False),
    ("power_tower_python", r"\boxed{9**9**9**9}", False),
    ("power_tower_ten", r"\boxed{" + "^".join(["9"] * 10) + "}", False),
    ("big_factorial", r"\boxed{(10^{100})!}", False),
    ("factorial_chain", r"\boxed{100000!!!!}", False),
    ("factorial_of_factorial", r"\boxed{(9!)!}", False),
    ("huge_binomial", r"\boxed{\binom{10^{12}}{10^{6}}}", False),
    ("huge_exponent_minus", r"\boxed{10^{10^{10}} - 10^{10^{10}} + 6}", False),
    ("deep_sum_symbolic", r"\boxed{\sum_{k=1}^{10^{12}} k^{k}}", False),
    ("integral_bait", r"\boxed{\int_0^{10^{9}} e^{x^{2}}\sin(x^{x})\,dx}", False),
    ("limit_bait", r"\boxed{\lim_{n\to\infty}\left(1+\frac{1}{n}\right)^{n^{n}}}", False),
    ("huge_matrix", r"\boxed{\begin{pmatrix}" + r"\\".join("&".join(["x"] * 60) for _ in range(60)) + r"\end{pmatrix}}",
     False),
    ("nested_trig", r"\boxed{" + r"\sin(" * 500 + "x" + ")" * 500 + "}", False),
    ("polynomial_expansion", r"\boxed{(x+y+z+w)^{200}}", False),
    ("huge_root", r"\boxed{\sqrt[10^{9}]{10^{10^{9}}}}", False),
    ("float_overflow", r"\boxed{1e999999999}", False),
    ("scientific_tower", r"\boxed{5 \times 10^{10^{10^{10}}}}", False),
    ("symbolic_gold_vs_tower", r"\boxed{2^{2^{2^{2^{2^{2}}}}}}", False),
]


def _math_cases() -> list[Case]:
    cases = []
    for name, completion, right in MATH_ATTACKS:
        if right:  # the answer inside the attack is the gold's value: scoring it either way is fine, in time
            cases.append(math_case(f"math_reward::{name}", completion, accept=zero_or_one, wanted="[0.0 or 1.0]"))
            cases.append(check_case(f"check::{name}", completion, accept=true_or_false, wanted="Verdict(True/False)"))
        else:
            cases.append(math_case(f"math_reward::{name}", completion))
            cases.append(check_case(f"check::{name}", completion))
    return cases


GOLD_ATTACKS = [  # a gold is the dataset's, not the sample's: any verdict, but in time and never raising
    ("gold_nested_boxed", nest(r"\boxed{", "}")),
    ("gold_power_tower", r"9^{9^{9^{9}}}"),
    ("gold_megabyte", "1" * MB),
    ("gold_nul_surrogate", "\x00\ud800" * 1000),
    ("gold_gsm8k_many_hashes", "#### " * 100_000 + "5"),
]

FORMAT_ATTACKS = [
    ("nested_think", "<think>" * 20_000 + "x" + "</think>" * 20_000 + "<answer>5</answer>"),
    ("many_think_blocks", "<think>a</think>" * 100_000 + "<answer>5</answer>"),
    ("many_answer_blocks", "<think>a</think>" + "<answer>5</answer>" * 100_000),
    ("unclosed_tags", "<think>" * 200_000),
    ("tag_like_bait", "<think>a</think><answer>5</answer>" + "< / think" * 100_000),
    ("tag_like_no_close", "</ think " + "x" * MB),
    ("markup_bait", "<think>" + "<" * 200_000 + "</think><answer>5</answer>x"),
    ("markup_no_close", "<think>a</think><answer>5</answer>" + "<a" * 200_000),
    ("answer_unclosed_many", "<think>a</think>" + "<answer>" * 200_000),
    ("megabyte_think", "<think>" + "a" * MB + "</think>x"),
    ("nul_bytes", "<think>\x00" * 50_000 + "</think><answer>\x00</answer>!"),
    ("lone_surrogates", "<think>\ud800</think><answer>\udfff</answer>\ud800"),
    ("invalid_utf8", "<think>" + INVALID_UTF8.decode("utf-8", "surrogateescape") + "</think><answer>5</answer>!"),
    ("rtl_zero_width_tags", "<\u200bthink>\u202ea</\u200dthink><answer>5</answer>" * 20_000 + "!"),
]


def _format_cases() -> list[Case]:
    cases = []
    for name, completion in FORMAT_ATTACKS:
        for option_name, options in (("format", {}), ("think_format", {"require_answer": False}),
                                     ("soft_format", {"soft": True})):
            accept = scored if option_name == "soft_format" else (
                zero if name not in ("megabyte_think", "many_answer_blocks", "many_think_blocks") else scored)
            cases.append(format_case(f"{option_name}::{name}", completion, accept=accept,
                                     wanted="[float]" if accept is scored else "[0.0]", **options))
    return cases


LANGUAGE_ATTACKS = [
    ("megabyte_reasoning", "<think>" + "the cat sat on the mat " * 45_000 + "</think>5"),
    ("megabyte_one_word", "<think>" + "a" * MB + "</think>5"),
    ("megabyte_cjk", "<think>" + "二加三等于五" * 170_000 + "</think>5"),
    ("nested_think", "<think>" * 20_000 + "five" + "</think>" * 20_000),
    ("nul_bytes", "<think>" + "\x00" * MB + "</think>5"),
    ("lone_surrogates", "<think>" + "\ud800 word \udfff" * 50_000 + "</think>5"),
    ("invalid_utf8", "<think>" + INVALID_UTF8.decode("utf-8", "surrogateescape") + "</think>5"),
    ("rtl_zero_width", "<think>" + "\u202eword\u200b\u200d\ufeff" * 100_000 + "</think>5"),
    ("combining_marks", "<think>e" + "\u0301" * 500_000 + "</think>5"),
    ("math_bait", "<think>$" + "x^{" * 50_000 + "}" * 50_000 + "$</think>5"),
    ("code_fence_bait", "<think>" + "```" * 200_000 + "</think>5"),
    ("url_bait", "<think>http://" + "a." * 300_000 + "</think>5"),
    ("many_dollars", "<think>" + "$a" * 300_000 + "</think>5"),
    ("unclosed_environments", "<think>" + r"\begin{equation}" * 10_000 + "</think>5"),  # found by probing
    ("unclosed_starred_environments", "<think>" + r"\begin{align*}" * 10_000 + "</think>5"),
    ("unclosed_display_math", "<think>" + r"\[" * 100_000 + "</think>5"),
    ("unclosed_c_comments", "<think>" + "/*" * 100_000 + "</think>5"),
    ("escaped_quotes", "<think>" + '"' + '\\"' * 100_000 + "</think>5"),
    ("mixed_scripts", "<think>" + "word слово 単語 كلمة " * 40_000 + "</think>5"),
]


def _language_cases() -> list[Case]:
    cases = [language_case(f"language::{name}", completion) for name, completion in LANGUAGE_ATTACKS]
    cases += [  # the prompt decides the target here: None (does not apply) is allowed, but in time
        language_case("language::prompt_megabyte", "<think>five</think>5", prompt="word " * 200_000,
                      accept=any_reward, wanted="[float or None]"),
        language_case("language::prompt_nul_surrogates", "<think>five</think>5", prompt="\x00\ud800" * 200_000,
                      accept=any_reward, wanted="[float or None]"),
    ]
    return cases


CODE_ATTACKS = [
    ("infinite_loop", fenced("while True: pass")),
    ("sleep_forever", fenced("import time\ntime.sleep(10**6)")),
    ("print_megabytes", fenced("import sys\nwhile True: sys.stdout.write('x' * 65536)")),
    ("print_100mb_once", fenced("print('x' * 100_000_000)")),
    ("stderr_flood", fenced("import sys\nwhile True: sys.stderr.write('e' * 65536)")),
    ("memory_bomb", fenced("a = []\nwhile True: a.append(' ' * 10**7)")),
    ("fork_bomb", fenced("import os\nwhile True:\n    try: os.fork()\n    except OSError: pass")),
    ("orphan_child_keeps_pipe", fenced("import os, time\nif os.fork() == 0:\n    time.sleep(60)\nprint(5)")),
    ("kill_parent", fenced("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint(5)")),
    ("kill_group", fenced("import os, signal\nos.killpg(0, signal.SIGKILL)")),
    ("close_stdout_then_loop", fenced("import os\nos.close(1)\nwhile True: pass")),
    ("deep_recursion", fenced("import sys\nsys.setrecursionlimit(10**8)\ndef f(n): return f(n + 1)\nf(0)")),
    ("binary_output", fenced("import sys\nsys.stdout.buffer.write(bytes(range(256)) * 100_000)")),
    ("nul_output", fenced("print('\\x00' * 1_000_000)")),
    ("huge_program", fenced("x = 1\n" * 200_000 + "print(sum(map(int, input().split())) + 1)")),
    ("megabyte_comment", fenced("# " + "a" * MB + "\nprint(6)")),
    ("thousands_of_fences", "<think>x</think><answer>" + "```python\nprint(6)\n```\n" * 20_000 + "</answer>"),
    ("unclosed_fences", "<think>x</think><answer>" + "```python " * 200_000 + "</answer>"),
    ("fence_line_no_newline", "<think>x</think><answer>```" + "p" * MB + "</answer>"),
    ("nul_in_program", fenced("print(6)\x00" * 1000)),
    ("lone_surrogate_in_program", fenced("print('\ud800')")),
    ("invalid_utf8_program", fenced("print(6)  # " + INVALID_UTF8[:1000].decode("utf-8", "surrogateescape"))),
    ("nested_think_around_code", "<think>" * 20_000 + "```python\nprint(6)\n```" + "</think>" * 20_000),
    ("exit_code_wrong", fenced("import sys\nprint(6)\nsys.exit(3)")),
    ("read_stdin_forever", fenced("import sys\nwhile True: sys.stdin.read()")),
    ("compile_bomb", fenced("x = " + "(" * 100_000 + ")" * 100_000)),
    ("exponent_bomb_const_fold", fenced("x = 9 ** 9 ** 9\nprint(6)")),
]


CODE_RIGHT_OUTPUT = {"orphan_child_keeps_pipe", "kill_parent"}  # these print the right sum: any score, in time

ASSERTS = {"language": "python", "timeout_s": 1.0, "test_cases": [{"type": "assert", "code": "assert add(2, 3) == 5"}]}
# Functions whose result games or breaks an assert test: each must score 0.0, in time.
ASSERT_ATTACKS = [
    ("eq_always_true", "class A:\n    def __eq__(self, other): return True\n    __hash__ = None\ndef add(a, b): return A()"),
    ("int_subclass_eq", "class I(int):\n    def __eq__(self, other): return True\ndef add(a, b): return I(0)"),
    ("eq_returns_truthy_list", "class A(list):\n    def __eq__(self, other): return [True]\ndef add(a, b): return A()"),
    ("eq_loops", "class A:\n    def __eq__(self, other):\n        while True: pass\ndef add(a, b): return A()"),
    ("bool_raises_systemexit", "class A:\n    def __bool__(self): raise SystemExit\n    def __eq__(self, other): return self\n"
                               "def add(a, b): return A()"),
    ("repr_loops", "class A:\n    def __repr__(self):\n        while True: pass\n    def __eq__(self, other): return False\n"
                   "def add(a, b): return A()"),
    ("deep_nested_result", "def add(a, b):\n    x = 5\n    for _ in range(100_000): x = [x]\n    return x"),
    ("self_referencing_result", "def add(a, b):\n    x = []\n    x.append(x)\n    return x"),
    ("huge_int_result", "def add(a, b): return 10 ** (10 ** 6)"),
    ("infinite_generator", "def add(a, b):\n    while True: yield 5"),
    ("os_exit_in_call", "import os\ndef add(a, b): os._exit(0)"),
    ("patch_assertion_error", "import builtins\nbuiltins.AssertionError = type('E', (Exception,), {})\n"
                              "def add(a, b): return 0"),
    ("recursion_in_call", "def add(a, b): return add(a, b)"),
    ("memory_in_call", "def add(a, b):\n    x = []\n    while True: x.append(' ' * 10**7)"),
]


def _code_cases() -> list[Case]:
    return [code_case(f"code::{name}", completion, **({"accept": scored, "wanted": "[float]"}
                                                       if name in CODE_RIGHT_OUTPUT else {}))
            for name, completion in CODE_ATTACKS] + [
        code_case(f"code_assert::{name}", fenced(program), tests=ASSERTS) for name, program in ASSERT_ATTACKS]


def _api_cases() -> list[Case]:
    cases = [
        check_case("verify::nested_boxed", nest(r"\boxed{", "}", "6"), path=VERIFY,
                   accept=lambda v: v is False, wanted="False"),
        check_case("verify::nested_boxed_bare_policy", nest(r"\boxed{", "}", "6"), path=VERIFY, policy="bare",
                   accept=lambda v: v is False, wanted="False"),
        check_case("check::nested_boxed_bare_policy", nest(r"\boxed{", "}", "6"), policy="bare"),
        check_case("check::megabyte_bare_policy", "6 " * 500_000, policy="bare"),
        check_case("check::bare_policy_nul_lines", "\x00\n" * 200_000 + "6", policy="bare"),
        Case("check_batch::mixed_attacks", CHECK_BATCH, None,
             ([("5", nest(r"\boxed{", "}", "6")), ("5", r"\boxed{9^{9^{9^{9}}}}"), ("5", r"\boxed{6}" * 10_000),
               ("5", "\ud800" * 1000)],), {"answer_policy": "marked"},
             lambda v: isinstance(v, list) and len(v) == 4 and all(not_equivalent(x) for x in v),
             "4 x Verdict(False)"),
    ]
    for name, gold in GOLD_ATTACKS:
        cases.append(check_case(f"check::{name}", r"\boxed{5}", gold=gold, accept=verdict, wanted="a Verdict"))
        cases.append(math_case(f"math_reward::{name}", r"\boxed{5}", gold=gold, accept=any_reward,
                               wanted="[float or None]"))
    return cases


# Cases still failing, each with the failure observed (a strict xfail that flips when fixed). All 28 seen failing at
# commit 996c9ce (RecursionError on nested boxes, regexes backtracking over long runs in the math extraction and the
# language verifier) pass since issue 36 and are plain tests now.
FAILS_TODAY: dict[str, str] = {}

ALL_CASES = _math_cases() + _api_cases() + _format_cases() + _language_cases() + _code_cases()


def _param(case: Case):
    reason = FAILS_TODAY.get(case.id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in ALL_CASES])
def test_pathological_completion_is_bounded(runner, case: Case):
    value, error, seconds = runner.call(case.path, case.options, *case.args, **case.kwargs)
    assert error is None, f"{case.id}: raised or hung: {error}"
    assert seconds < BOUND_S, f"{case.id}: took {seconds:.2f} s (bound {BOUND_S} s)"
    assert case.accept(value), f"{case.id}: got {value!r:.200}, wanted {case.wanted}"


# The slowest attacks of each reward, timed on main (issue 36, item 2): each is scored off the main thread too, where
# a SIGALRM timer cannot run.
SLOWEST = ["math_reward::nested_boxed_wrong", "math_reward::nested_boxed", "check::lone_surrogates",
           "check_batch::mixed_attacks", "math_reward::gold_nested_boxed", "math_reward::unclosed_boxes",
           "math_reward::power_tower", "language::invalid_utf8", "code::infinite_loop", "code::fork_bomb",
           "code::deep_recursion", "code_assert::memory_in_call"]


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.id in SLOWEST], ids=lambda c: c.id)
def test_slowest_attacks_are_bounded_on_a_worker_thread(runner, case: Case):
    value, error, seconds = runner.call(case.path, case.options, *case.args, threaded=True, **case.kwargs)
    assert error is None, f"{case.id}: raised or hung: {error}"
    assert seconds < BOUND_S, f"{case.id}: took {seconds:.2f} s on a worker thread (bound {BOUND_S} s)"
    assert case.accept(value), f"{case.id}: got {value!r:.200}, wanted {case.wanted}"


def test_case_ids_are_unique():
    ids = [case.id for case in ALL_CASES]
    assert len(ids) == len(set(ids))
    assert set(FAILS_TODAY) <= set(ids), sorted(set(FAILS_TODAY) - set(ids))
    assert set(SLOWEST) <= set(ids), sorted(set(SLOWEST) - set(ids))
