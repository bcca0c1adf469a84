"""Issue 36: every reward's score of one completion arrives within 2 s on one core, or it is 0.0 with the reason.

The mechanism is one, in `trl_r1.rewards.base`: a length cap (`max_chars`), lone surrogates replaced, a SIGALRM time
limit on the reward's own in-process work, and every exception a sample causes scored 0.0, logged at WARNING once per
kind. These tests drive it with real rewards and pathological completions (tests/test_reward_red_team_bound.py holds
the red team's blind attacks, run in a child interpreter with a hang guard).
"""

from __future__ import annotations

import logging
import random
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from trl_r1.rewards.base import BOUND_S, DEFAULT_MAX_CHARS, RewardFunction, Score, ScoreTimeLimit, time_limit
from trl_r1.rewards.code import CodeReward
from trl_r1.rewards.format import FormatReward
from trl_r1.rewards.language import LanguageConsistencyReward
from trl_r1.rewards.math import MathAccuracyReward

TESTS = {"language": "python", "timeout_s": 1.0,
         "test_cases": [{"type": "stdin_stdout", "input": "2 3\n", "output": "5\n"}]}
REWARDS = {  # name -> (reward, the columns of its row)
    "format": (FormatReward(), {}),
    "think_format": (FormatReward(require_answer=False), {}),
    "soft_format": (FormatReward(soft=True), {}),
    "math": (MathAccuracyReward(), {"solution": "5"}),
    "code": (CodeReward(timeout_s=1.0), {"verification_info": TESTS}),
    "language": (LanguageConsistencyReward(target_lang="en"), {}),
}
NEAR_CAP = DEFAULT_MAX_CHARS - 100  # attacks just under the cap: the parsers themselves must be fast there


def _fill(unit: str, size: int = NEAR_CAP) -> str:
    return unit * (size // len(unit))


ATTACKS = {
    "nested_think": "<think>" * 20_000 + "x" + "</think>" * 20_000 + "<answer>5</answer>",
    "unclosed_answer_tags": "<think>a</think>" + _fill("<answer>"),
    "tag_like_bait": "<think>a</think><answer>5</answer>" + _fill("< / think"),
    "unclosed_environments": "<think>" + _fill(r"\begin{equation}") + "</think>5",
    "unclosed_display_math": "<think>" + _fill(r"\[") + "</think>5",
    "unclosed_double_dollars": "<think>" + _fill("$$ a ") + "</think>5",
    "unclosed_fences": "<think>x</think><answer>" + _fill("```python ") + "</answer>",
    "unclosed_docstrings_in_code": "<think>```python\n" + _fill('"""') + "\n```</think>5",
    "nul_bytes": "<think>" + _fill("\x00") + "</think><answer>5</answer>",
    "lone_surrogates": "<think>" + _fill("\ud800 word \udfff") + "</think><answer>5\ud800</answer>",
    "over_the_cap": "<think>" + "a" * (2 * DEFAULT_MAX_CHARS) + "</think><answer>5</answer>",
}


@pytest.fixture(scope="module", autouse=True)
def warm_rewards():
    """Boot worker pools and tables once, as a training run's first step does."""
    for reward, columns in REWARDS.values():
        reward(completions=["<think>Two and three make five.</think><answer>5</answer>"],
               **{key: [value] for key, value in columns.items()})


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("name", list(REWARDS))
def test_a_pathological_completion_is_scored_in_time(name, attack, caplog):
    reward, columns = REWARDS[name]
    reasons = {}
    start = time.perf_counter()
    with caplog.at_level(logging.DEBUG, logger="trl_r1"):
        values = reward(completions=[ATTACKS[attack]], log_extra=reasons.__setitem__,
                        **{key: [value] for key, value in columns.items()})
    seconds = time.perf_counter() - start
    assert seconds < BOUND_S, f"{name} on {attack}: {seconds:.2f} s"
    assert len(values) == 1 and isinstance(values[0], float) and 0.0 <= values[0] <= 1.0, values
    if attack == "over_the_cap":
        assert values == [0.0]
        assert reasons[f"{reward.__name__}_reason"][0].startswith("too long: ")


def test_the_cap_is_an_option_of_every_reward_and_none_lifts_it():
    text = "<think>" + "Two and three make five. " * 20_000 + "</think><answer>5</answer>"  # 500k characters
    assert FormatReward()(completions=[text]) == [0.0]
    assert FormatReward(max_chars=None)(completions=[text]) == [1.0]
    assert FormatReward(max_chars=100)(completions=["<think>" + "a" * 100 + "</think><answer>5</answer>"]) == [0.0]
    for cls in (MathAccuracyReward, CodeReward, LanguageConsistencyReward):
        assert cls(max_chars=1234).max_chars == 1234


class Looping(RewardFunction):
    """A scorer stuck in pure Python (a catastrophic regex or a loop over a pathological input)."""

    __name__ = "looping"

    def score(self, sample):
        if sample.text == "loop":  # ten seconds of pure Python (finite, so that main fails instead of hanging)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                pass
        return Score(1.0)


def test_the_time_limit_stops_a_stuck_scorer_and_costs_only_its_sample(caplog):
    reward = Looping()
    reasons = {}
    start = time.perf_counter()
    with caplog.at_level(logging.DEBUG, logger="trl_r1.rewards"):
        assert reward(completions=["ok", "loop", "ok"], log_extra=reasons.__setitem__) == [1.0, 0.0, 1.0]
    assert time.perf_counter() - start < BOUND_S
    assert reasons["looping_reason"][1].startswith("time limit: ")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "time limit" in warnings[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="trl_r1.rewards"):  # the same kind again: DEBUG, not WARNING
        assert reward(completions=["loop"]) == [0.0]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("time limit" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)


def test_the_time_limit_keeps_an_outer_timer():
    """pytest-timeout and a caller's own alarm use the same timer: it is re-armed with its remaining time."""
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    signal.setitimer(signal.ITIMER_REAL, 60.0)
    try:
        assert Looping()(completions=["loop"]) == [0.0]
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]
        handler = signal.getsignal(signal.SIGALRM)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert 55.0 < remaining <= 60.0 and not fired
    assert handler is not None and handler.__name__ == "<lambda>"



def _in_a_thread(function):
    """``function()``'s result and seconds, called on a worker thread (as TRL's async loop or a user's pool would)."""
    with ThreadPoolExecutor(1) as pool:
        start = time.perf_counter()
        result = pool.submit(function).result(timeout=30)
        return result, time.perf_counter() - start


def test_the_time_limit_holds_on_a_worker_thread(caplog):
    """Issue 36, item 2: off the main thread SIGALRM cannot be used; the stuck sample still costs only itself, in time
    (today's main took the full 10 s and scored it 1.0)."""
    reasons = {}
    (values, seconds) = _in_a_thread(lambda: Looping()(completions=["ok", "loop", "ok"], log_extra=reasons.__setitem__))
    assert values == [1.0, 0.0, 1.0]
    assert seconds < BOUND_S
    assert reasons["looping_reason"][1] == "time limit: over the 1.5 s time limit"


def test_a_thread_time_limit_never_fires_after_its_block():
    """A block that ends just before its limit leaves no exception pending to surface later in unrelated code."""
    def run():
        for _ in range(200):
            try:
                with time_limit(0.002):
                    deadline = time.monotonic() + 0.002 * random.random() * 2
                    while time.monotonic() < deadline:
                        pass
            except ScoreTimeLimit:
                pass
        deadline = time.monotonic() + 0.2  # pure Python after the blocks: where a stray exception would land
        while time.monotonic() < deadline:
            pass
        return "clean"

    assert _in_a_thread(run)[0] == "clean"


@pytest.mark.parametrize("error", [RecursionError("deep"), MemoryError(), UnicodeEncodeError("utf-8", "\ud800", 0, 1, "x"),
                                   SystemExit(3), GeneratorExit(), ValueError("bug")],
                         ids=lambda e: type(e).__name__)
def test_an_exception_a_sample_causes_scores_zero_with_its_reason(error):
    class Raising(RewardFunction):
        __name__ = "raising"

        def score(self, sample):
            if sample.text == "bad":
                raise error
            return Score(1.0)

    reasons = {}
    assert Raising()(completions=["bad", "ok"], log_extra=reasons.__setitem__) == [0.0, 1.0]
    assert reasons["raising_reason"][0].startswith(f"error: {type(error).__name__}")


def test_ctrl_c_still_stops_training():
    class Interrupted(RewardFunction):
        __name__ = "interrupted"

        def score(self, sample):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Interrupted()(completions=["x"])


def test_no_verifier_sees_a_lone_surrogate():
    class Encoding(RewardFunction):  # like the sandbox writing the program to a file
        __name__ = "encoding"

        def score(self, sample):
            return Score(float(len(sample.text.encode("utf-8"))))

    assert Encoding()(completions=["a\ud800b", "x\udcff"]) == [3.0, 2.0]  # each surrogate became "?"


def test_a_math_verifier_failure_scores_zero_not_none(monkeypatch):
    """Issue 36: a failure of the verifier on a sample (an exception out of its in-process check) is that sample's
    0.0, and the other samples of the batch are scored; None stays for a row whose gold is unusable."""
    import trl_r1.rewards.math as math_reward

    real = math_reward.prepare_check

    def prepare_check(gold, completion, *args):
        if "deep" in completion:
            raise RecursionError("maximum recursion depth exceeded")
        return real(gold, completion, *args)

    monkeypatch.setattr(math_reward, "prepare_check", prepare_check)
    reasons = {}
    values = MathAccuracyReward()(completions=[r"\boxed{5}", r"deep \boxed{5}", r"\boxed{5}"], solution=["5", "5", "???"],
                                  log_extra=reasons.__setitem__)
    assert values[:2] == [1.0, 0.0]
    assert reasons["math_accuracy_reward_reason"][1] == "error: RecursionError: maximum recursion depth exceeded"
    assert values[2] in (None, 0.0, 1.0)  # an odd gold is the verifier's to judge; it never raises


@pytest.mark.parametrize("threaded", [False, True], ids=["main_thread", "worker_thread"])
def test_the_math_reward_reads_each_answer_within_the_time_limit(monkeypatch, threaded):
    """The math reward's in-process part (reading the answer, the verdicts settled without sympy) runs under the
    reward's time limit per sample: a reading that never ends costs that sample only, in time, on any thread
    (today's main ran it unlimited: 10 s, then scored it)."""
    import trl_r1.rewards.math as math_reward

    real = math_reward.prepare_check

    def prepare_check(gold, completion, *args):
        if "stuck" in completion:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                pass
        return real(gold, completion, *args)

    monkeypatch.setattr(math_reward, "prepare_check", prepare_check)
    reasons = {}

    def score():
        return MathAccuracyReward()(completions=[r"\boxed{5}", r"stuck \boxed{5}", r"\boxed{6}"], solution=["5"] * 3,
                                    log_extra=reasons.__setitem__)

    values, seconds = _in_a_thread(score) if threaded else (score(), None)
    assert values == [1.0, 0.0, 0.0]
    assert reasons["math_accuracy_reward_reason"][1] == "time limit: over the 1.5 s time limit"
    assert seconds is None or seconds < BOUND_S + 0.5  # the two other samples' verdicts come on top of the stuck 1.5 s
