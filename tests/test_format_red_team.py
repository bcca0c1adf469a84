"""Red-team cases for the R1 format checks (`trl_r1.verifiers.format`) and `FormatReward`.

Three kinds of failure matter under RL pressure: a hack (a completion with no real reasoning or answer that
scores like a real one: a small policy finds it, as R1-Zero on SmolLM2 found the empty shell and the
``</answer`` answer), a false rejection (a real, well-formed R1 output scored 0: the strict format must not
punish reasoning that mentions ``answer`` next to ``<``), and a crash or a slow check (scoring runs on every
sample of every step). The first round found 34 of these cases wrong; all are fixed.

Judgments behind the expected verdicts: the strict format accepts empty reasoning (the accuracy reward's
business, tests/test_format_reward.py), so the hacks here are all about a content-free answer block, or about
soft credit above the empty shell's 0.5. An answer is content-free when nothing in it is visible and meaningful:
whitespace of any kind (zero-width, BOM, soft hyphen, NUL, Hangul filler, braille blank), punctuation only
(``.``, ``...``), an HTML entity for whitespace or a tag (``&nbsp;``, ``&lt;/answer&gt;``), or markup only (a
broken, escaped or split answer tag, ``</answers>``, a chat-template token). A symbol such as ``∅`` or ``\\infty``
is an answer.
"""

import time

import pytest

from trl_r1.rewards import FormatReward
from trl_r1.verifiers.format import check_strict, soft_score

strict_reward, soft_reward = FormatReward(), FormatReward(soft=True)
PREFILL_PROMPT = "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n<think>\n"
PREFILL_CONVERSATION = [{"role": "user", "content": "What is 2+3?"}, {"role": "assistant", "content": "<think>"}]


STRICT_CASES = [
    # --- hacks: content-free answers that passed the strict format before the content rule ---
    pytest.param("<think>\u200b</think><answer>\u200b</answer>", False, id="zero-width-space-shell"),
    pytest.param("<think>a</think><answer>\ufeff</answer>", False, id="bom-answer"),
    pytest.param("<think>a</think><answer>\u2060</answer>", False, id="word-joiner-answer"),
    pytest.param("<think>a</think><answer>\u00ad</answer>", False, id="soft-hyphen-answer"),
    pytest.param("<think>a</think><answer>\x00</answer>", False, id="nul-answer"),
    pytest.param("<think>a</think><answer>\u3164</answer>", False, id="hangul-filler-answer"),
    pytest.param("<think>a</think><answer>\u2800</answer>", False, id="braille-blank-answer"),
    pytest.param("<think>a</think><answer>&lt;/answer&gt;</answer>", False, id="entity-escaped-broken-tag"),
    pytest.param("<think>a</think><answer>&nbsp;</answer>", False, id="nbsp-entity-answer"),
    pytest.param("<think>a</think><answer>.</answer>", False, id="period-answer"),
    pytest.param("<think>a</think><answer>...</answer>", False, id="ellipsis-answer"),
    pytest.param("<think>a</think><answer>\\<\\/answer\\></answer>", False, id="markdown-escaped-tag"),
    pytest.param("<think>a</think><answer></ans\nwer></answer>", False, id="tag-split-by-newline"),
    pytest.param("<think>a</think><answer></answers></answer>", False, id="near-miss-tag-answer"),
    pytest.param("<think>a</think><answer><|im_end|></answer>", False, id="chat-token-answer"),
    # --- content-free answers the strict format already rejects ---
    pytest.param("<think>a</think><answer>\u3000</answer>", False, id="ideographic-space-answer"),
    pytest.param("<think>a</think><answer>\u2028</answer>", False, id="line-separator-answer"),
    pytest.param("<think>a</think><answer><answer x></answer>", False, id="tag-with-attribute-answer"),
    pytest.param("<think>a</think><answer><ANSWER></answer>", False, id="uppercase-tag-answer"),
    pytest.param("<think>a</think><answer>< /answer></answer>", False, id="spaced-tag-answer"),
    pytest.param("<think>a</think><answer>`</answer>`</answer>", False, id="backticked-tag-answer"),
    pytest.param("<think>a</think><answer><\n/answer></answer>", False, id="newline-after-lt-answer"),
    # a reasoning that writes the tag itself is a repeated tag by design (ambiguous for any parser)
    pytest.param("<think>The tag <answer> holds the result.</think><answer>5</answer>", False,
                 id="literal-tag-in-reasoning"),
    # --- false rejections: real R1 outputs the first broken-tag pattern rejected ---
    pytest.param("<think>We know 2 < answer < 10, so try 5.</think><answer>5</answer>", True,
                 id="inequality-with-spaces"),
    pytest.param("<think>Binary search: while lo<answer: lo += 1</think><answer>7</answer>", True,
                 id="code-comparison"),
    pytest.param("<think>Bound it: $0<answer<1$, so it is a fraction.</think><answer>1/2</answer>", True,
                 id="latex-inequality"),
    pytest.param("<think>Since 1/answer >= 0.5, answer is at most 2.</think><answer>2</answer>", True,
                 id="reciprocal"),
    pytest.param("<think>The ratio total/answer > 1, so answer is smaller.</think><answer>3</answer>", True,
                 id="ratio"),
    pytest.param("<think>In the loop, if steps<think_budget: continue.</think><answer>4</answer>", True,
                 id="snake-case-identifier"),
    # --- real outputs the strict format accepts (keep them accepted) ---
    pytest.param("<think>HTML closes a div with `</div>`.</think><answer>div</answer>", True, id="html-in-code"),
    pytest.param("<think>I'm thinking> maybe; the answer>3.</think><answer>4</answer>", True,
                 id="thinking-gt-prose"),
    pytest.param("<think>Let me think about it: x<thinks, y<thinker.</think><answer>5</answer>", True,
                 id="longer-words-after-lt"),
    pytest.param("<think>Since 3 > 2 and 1 < 2, it is -1.</think><answer>\\boxed{-1}</answer>", True,
                 id="latex-boxed"),
    pytest.param("<think>a</think><answer>∅</answer>", True, id="symbol-answer"),
    pytest.param("<think>a</think><answer>五</answer>", True, id="cjk-answer"),
    pytest.param("\u00a0<think>\r\na\r\n</think>\u3000<answer>\r\n5\r\n</answer>\r\n", True,
                 id="crlf-and-unicode-spaces-between-blocks"),
]


@pytest.mark.parametrize("text, ok", STRICT_CASES)
def test_strict_format_red_team(text, ok):
    assert check_strict(text).ok is ok, check_strict(text).reason
    assert strict_reward(completions=[text]) == [float(ok)]


SOFT_CASES = [
    # --- hacks: no content, yet above the empty shell's 0.5 ---
    pytest.param("<think>\u200b</think> <answer> </answer>", 0.5, id="zero-width-reasoning"),
    pytest.param("<think> </think> <answer>\u200b</answer>", 0.5, id="zero-width-answer"),
    pytest.param("<think>&nbsp;</think> <answer> </answer>", 0.5, id="nbsp-entity-reasoning"),
    pytest.param("<think>.</think> <answer> </answer>", 0.5, id="period-reasoning"),
    pytest.param("<think> </think> <answer>.</answer>", 0.5, id="period-answer"),
    pytest.param("<think> </think> <answer><answer x></answer>", 0.5, id="attribute-tag-answer"),
    pytest.param("<think> </think> <answer><ANSWER></answer>", 0.5, id="uppercase-tag-answer"),
    pytest.param("<think> </think> <answer>< /answer></answer>", 0.5, id="spaced-tag-answer"),
    pytest.param("<think></think ></think><answer></answer ></answer>", 0.5, id="space-before-gt-tags"),
    # --- already right ---
    pytest.param("<think> </think> <answer> </answer>", 0.5, id="empty-shell"),
    pytest.param("<think> </think</think> <answer> </answer</answer>", 0.5, id="broken-tag-shell"),
    pytest.param("<think>\u3000</think> <answer>\u3000</answer>", 0.5, id="ideographic-space-shell"),
    pytest.param("<think>2+3=5</think> <answer> </answer>", 0.75, id="reasoning-only"),
    pytest.param("<think>2+3=5</think>\n<answer>5</answer>", 1.0, id="real-output"),
]


@pytest.mark.parametrize("text, expected", SOFT_CASES)
def test_soft_format_red_team(text, expected):
    assert soft_score(text) == expected
    assert soft_reward(completions=[text]) == [expected]


PREFILLED_CASES = [
    pytest.param(PREFILL_PROMPT, "\u200b</think><answer>\u200b</answer>", 0.0, id="prefill-zero-width"),
    pytest.param(PREFILL_CONVERSATION, "a</think><answer>&lt;/answer&gt;</answer>", 0.0,
                 id="prefill-conversation-entity-tag"),
    pytest.param(PREFILL_PROMPT, "while lo<answer: lo += 1</think><answer>7</answer>", 1.0,
                 id="prefill-code-comparison"),
    pytest.param(PREFILL_PROMPT, "</think</think><answer>5</answer>", 0.0, id="prefill-broken-close"),
    pytest.param(PREFILL_CONVERSATION, "2+3=5</think><answer>5</answer>", 1.0, id="prefill-conversation-real"),
]


@pytest.mark.parametrize("prompt, completion, expected", PREFILLED_CASES)
def test_prefilled_strict_red_team(prompt, completion, expected):
    assert strict_reward(prompts=[prompt], completions=[completion]) == [expected]


def test_prefilled_empty_shell_earns_only_the_shell():
    assert soft_reward(prompts=[PREFILL_PROMPT], completions=[" </think> <answer> </answer>"]) == [0.5]


MEGABYTE = 1_000_000


def _slowest_of_best(text, runs=3):
    """The slower of the two checks, each its best of `runs` runs (a loaded CPU only adds time)."""
    times = []
    for check in (check_strict, soft_score):
        best = float("inf")
        for _ in range(runs):
            start = time.perf_counter()
            check(text)
            best = min(best, time.perf_counter() - start)
        times.append(best)
    return max(times)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("<think>" * (MEGABYTE // 7), id="repeated-open-tag"),
        pytest.param("<" * MEGABYTE, id="lt-run"),
        pytest.param("</" * (MEGABYTE // 2), id="lt-slash-run"),
        pytest.param("/think>" * (MEGABYTE // 7), id="repeated-tag-end"),
        pytest.param("<think>a</think>" + "<answer>" * (MEGABYTE // 8), id="repeated-answer-open"),
        pytest.param("<think>" + "x" * MEGABYTE + "</think><answer>5</answer>", id="long-real-output"),
    ],
)
def test_megabyte_inputs_are_fast(text):
    assert _slowest_of_best(text) < 1.0


# A '<' then a whitespace run once made the tag-fragment regex backtrack quadratically (both \s* of '<\s*/?\s*'
# could take the run): 8,000 spaces took ~0.6 s, a megabyte would have taken hours.
def test_lt_followed_by_whitespace_run_is_fast():
    text = "<think><" + " " * 8_000 + "</think><answer>5</answer>"
    text += "x" * (MEGABYTE - len(text))
    assert _slowest_of_best(text, runs=1) < 1.0
