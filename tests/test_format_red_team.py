"""Red-team cases for the R1 format checks (`trl_r1.verifiers.format`) and `FormatReward`.

Three kinds of failure matter under RL pressure: a hack (a completion with no real reasoning or answer that
scores like a real one: a small policy finds it, as R1-Zero on SmolLM2 found the empty shell and the
``</answer`` answer), a false rejection (a real, well-formed R1 output scored 0: the strict format must not
punish reasoning that mentions ``answer`` next to ``<``), and a crash or a slow check (scoring runs on every
sample of every step). A case the current code gets wrong is an ``xfail(strict=True)`` naming the defect, so
the fix flips it to a pass and the marker must then go.

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


def invisible(reason):
    return pytest.mark.xfail(strict=True, reason=f"hack: {reason}; str.strip() keeps it, so the block counts as "
                                                 "non-empty")


def false_rejection(reason):
    return pytest.mark.xfail(strict=True, reason=f"false rejection: {reason}")


def hack(reason):
    return pytest.mark.xfail(strict=True, reason=f"hack: {reason}")


STRICT_CASES = [
    # --- hacks: content-free answers that pass the strict format today ---
    pytest.param("<think>\u200b</think><answer>\u200b</answer>", False, id="zero-width-space-shell",
                 marks=invisible("U+200B ZERO WIDTH SPACE (Cf) is invisible")),
    pytest.param("<think>a</think><answer>\ufeff</answer>", False, id="bom-answer",
                 marks=invisible("U+FEFF BOM (Cf) is invisible")),
    pytest.param("<think>a</think><answer>\u2060</answer>", False, id="word-joiner-answer",
                 marks=invisible("U+2060 WORD JOINER (Cf) is invisible")),
    pytest.param("<think>a</think><answer>\u00ad</answer>", False, id="soft-hyphen-answer",
                 marks=invisible("U+00AD SOFT HYPHEN (Cf) is invisible")),
    pytest.param("<think>a</think><answer>\x00</answer>", False, id="nul-answer",
                 marks=invisible("NUL (Cc) is a control character")),
    pytest.param("<think>a</think><answer>\u3164</answer>", False, id="hangul-filler-answer",
                 marks=invisible("U+3164 HANGUL FILLER (Lo) renders blank")),
    pytest.param("<think>a</think><answer>\u2800</answer>", False, id="braille-blank-answer",
                 marks=invisible("U+2800 BRAILLE PATTERN BLANK (So) renders blank")),
    pytest.param("<think>a</think><answer>&lt;/answer&gt;</answer>", False, id="entity-escaped-broken-tag",
                 marks=hack("the answer is an HTML-escaped '</answer>', the entity twin of the '</answer' hack; "
                            "the malformed-tag rule does not unescape entities")),
    pytest.param("<think>a</think><answer>&nbsp;</answer>", False, id="nbsp-entity-answer",
                 marks=hack("'&nbsp;' is whitespace written as an entity")),
    pytest.param("<think>a</think><answer>.</answer>", False, id="period-answer",
                 marks=hack("a lone '.' carries no answer (punctuation only)")),
    pytest.param("<think>a</think><answer>...</answer>", False, id="ellipsis-answer",
                 marks=hack("'...' carries no answer (punctuation only)")),
    pytest.param("<think>a</think><answer>\\<\\/answer\\></answer>", False, id="markdown-escaped-tag",
                 marks=hack("a markdown-escaped '</answer>' is a tag-like fragment, but the backslashes hide it "
                            "from _TAG_START/_TAG_END")),
    pytest.param("<think>a</think><answer></ans\nwer></answer>", False, id="tag-split-by-newline",
                 marks=hack("'</ans\\nwer>' is a broken answer tag split by a newline, invisible to the "
                            "malformed-tag patterns")),
    pytest.param("<think>a</think><answer></answers></answer>", False, id="near-miss-tag-answer",
                 marks=hack("the answer is markup only ('</answers>', a near-miss of the closing tag)")),
    pytest.param("<think>a</think><answer><|im_end|></answer>", False, id="chat-token-answer",
                 marks=hack("the answer is a chat-template token, not an answer")),
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
    # --- false rejections: real R1 outputs the strict format rejects today ---
    pytest.param("<think>We know 2 < answer < 10, so try 5.</think><answer>5</answer>", True,
                 id="inequality-with-spaces",
                 marks=false_rejection("'< answer' in prose matches _TAG_START (it allows spaces after '<')")),
    pytest.param("<think>Binary search: while lo<answer: lo += 1</think><answer>7</answer>", True,
                 id="code-comparison", marks=false_rejection("code 'lo<answer:' matches _TAG_START")),
    pytest.param("<think>Bound it: $0<answer<1$, so it is a fraction.</think><answer>1/2</answer>", True,
                 id="latex-inequality", marks=false_rejection("LaTeX '$0<answer<1$' matches _TAG_START")),
    pytest.param("<think>Since 1/answer >= 0.5, answer is at most 2.</think><answer>2</answer>", True,
                 id="reciprocal", marks=false_rejection("'1/answer >=' matches _TAG_END ('/' then the name then "
                                                        "'>')")),
    pytest.param("<think>The ratio total/answer > 1, so answer is smaller.</think><answer>3</answer>", True,
                 id="ratio", marks=false_rejection("'total/answer >' matches _TAG_END")),
    pytest.param("<think>In the loop, if steps<think_budget: continue.</think><answer>4</answer>", True,
                 id="snake-case-identifier",
                 marks=false_rejection("'<think_budget' matches _TAG_START: its lookahead (?![a-z]) lets '_' and "
                                       "digits end the name")),
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
    pytest.param("<think>\u200b</think> <answer> </answer>", 0.5, id="zero-width-reasoning",
                 marks=invisible("a zero-width space makes the think block non-empty, so </think> earns "
                                        "0.25")),
    pytest.param("<think> </think> <answer>\u200b</answer>", 0.5, id="zero-width-answer",
                 marks=invisible("a zero-width space makes the answer block non-empty, so </answer> earns "
                                        "0.25")),
    pytest.param("<think>&nbsp;</think> <answer> </answer>", 0.5, id="nbsp-entity-reasoning",
                 marks=hack("'&nbsp;' (whitespace as an entity) earns </think> its 0.25")),
    pytest.param("<think>.</think> <answer> </answer>", 0.5, id="period-reasoning",
                 marks=hack("a lone '.' earns </think> its 0.25")),
    pytest.param("<think> </think> <answer>.</answer>", 0.5, id="period-answer",
                 marks=hack("a lone '.' earns </answer> its 0.25")),
    pytest.param("<think> </think> <answer><answer x></answer>", 0.5, id="attribute-tag-answer",
                 marks=hack("removing only the '<answer' prefix of a malformed tag leaves 'x>' as content")),
    pytest.param("<think> </think> <answer><ANSWER></answer>", 0.5, id="uppercase-tag-answer",
                 marks=hack("removing only '<ANSWER' leaves '>' as content")),
    pytest.param("<think> </think> <answer>< /answer></answer>", 0.5, id="spaced-tag-answer",
                 marks=hack("removing only '< /answer' leaves '>' as content")),
    pytest.param("<think></think ></think><answer></answer ></answer>", 0.5, id="space-before-gt-tags",
                 marks=hack("removing only '</think' and '</answer' leaves ' >' in both blocks: 0.75 for an "
                            "empty shell")),
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
    pytest.param(PREFILL_PROMPT, "\u200b</think><answer>\u200b</answer>", 0.0, id="prefill-zero-width",
                 marks=invisible("the prefilled path inherits the zero-width answer")),
    pytest.param(PREFILL_CONVERSATION, "a</think><answer>&lt;/answer&gt;</answer>", 0.0,
                 id="prefill-conversation-entity-tag",
                 marks=hack("the prefilled path inherits the entity-escaped '</answer>' answer")),
    pytest.param(PREFILL_PROMPT, "while lo<answer: lo += 1</think><answer>7</answer>", 1.0,
                 id="prefill-code-comparison", marks=false_rejection("'lo<answer:' matches _TAG_START")),
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
    assert _slowest_of_best(text) < 0.2


@pytest.mark.xfail(strict=True, reason="slowness: _TAG_START's '<\\s*/?\\s*' is ambiguous on a whitespace run "
                                       "after '<' (both \\s* can take it), so the regex backtracks quadratically: "
                                       "8,000 spaces take ~0.6 s, 20,000 take 4 s, a megabyte would take hours")
def test_lt_followed_by_whitespace_run_is_fast():
    text = "<think><" + " " * 8_000 + "</think><answer>5</answer>"
    text += "x" * (MEGABYTE - len(text))
    assert _slowest_of_best(text, runs=1) < 0.2
