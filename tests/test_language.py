"""Language-consistency verifier and reward: one test per rule of R1's "share of target-language words in the CoT"."""

import logging
import pickle

import pytest

from trl_r1.rewards import get_reward_func
from trl_r1.rewards.language import (
    LanguageConsistencyReward,
    language_consistency_reward,
)
from trl_r1.verifiers.language import (
    consistency,
    detect_language,
    measure,
    normalize_language,
)

EN = "We add the two numbers and then we divide the total by two."
FR = "On additionne les deux nombres puis on divise le total par deux."
DE = "Wir addieren die beiden Zahlen und teilen die Summe durch zwei."
ZH = "我们先把两个数相加，然后把总和除以二。"
JA = "まず二つの数を足して、それから合計を二で割ります。"


def test_only_the_think_block_counts():
    assert consistency(f"{FR}<think>{EN}</think>{FR}", "en") == 1.0
    assert consistency(f"<think>{FR}</think><answer>{EN}</answer>", "en") == 0.0


def test_answer_block_never_counts_even_without_think_tags():
    assert consistency(f"{EN}<answer>{FR} {FR}</answer>", "en") == 1.0


def test_without_tags_the_whole_text_counts():
    assert consistency(f"{EN} {FR}", "en") == pytest.approx(12 / 24, abs=0.05)


def test_prefilled_think_reads_the_text_before_the_closing_tag():
    assert consistency(f"{FR}</think><answer>{EN}</answer>", "fr") == 1.0


def test_empty_reasoning_scores_zero():
    for text in ("<think></think><answer>5</answer>", "<think>  ...  </think>5", ""):
        assert consistency(text, "en") == 0.0
    assert measure("", "en").reason == "empty reasoning"


def test_math_numbers_and_code_are_neutral():
    math_heavy = (
        "<think>Let $f(x) = x^2 - 4x + 3$, so $$f(x) = (x-2)^2 - 1$$ and \\[\\int_0^1 f = \\frac{4}{3}\\].\n"
        "```python\ndef total(xs):\n    return sum(x * x for x in xs)\n```\n"
        "Then 12 * 7 = 84, sin x < 1, and AB = 5 cm in triangle ABC.</think>"
    )
    assert consistency(math_heavy, "en") == 1.0
    chinese = f"<think>{ZH} 设 $f(x)=x^2$，在 △ABC 中 AB = 5 cm，`sum(xs)` 的值是 12。</think>"
    assert consistency(chinese, "zh") == 1.0
    assert consistency("<think>$$2+3=5$$ `print(5)` 42</think>", "ja") == 1.0  # no words at all: nothing off-target


@pytest.mark.parametrize("hidden", [
    f"$$x = 5 \\quad \\text{{{FR}}}$$",
    "$x = \\mathrm{bonjour} + \\operatorname{additionne} + nombres$",
    f"```python\nx = 5  # {FR}\n```",
    f'```python\nprint("{FR}")\n```',
    f"`{FR}`",
    f"`f({FR}) + g(x)`",
    f"```\n{FR}\n```",
    f"```python\n{FR}\n```",
], ids=["text-in-math", "mathrm-and-bare-words", "code-comment", "code-string", "inline-code", "inline-call",
        "untagged-fence", "prose-in-python-fence"])
def test_prose_hidden_in_math_or_code_still_counts(hidden):
    score = consistency(f"<think>{EN}\n{hidden}\n{EN}</think>", "en")
    assert score < 0.9


def test_identifiers_and_keywords_in_code_do_not_count_against_the_target():
    code = "```python\nimport math\nfor number in numbers:\n    result = math.sqrt(number)\n```"
    assert consistency(f"<think>{ZH}\n{code}\n{ZH}</think>", "zh") == 1.0
    assert consistency(f"<think>{ZH} 用 `import numpy as np` 和 `for i in range(n)` 计算。</think>", "zh") == 1.0


def test_mixed_languages_give_the_share_of_words():
    assert consistency(f"<think>{EN} {FR}</think>", "en") == pytest.approx(0.5, abs=0.05)
    assert consistency(f"<think>{EN} {EN} {EN} {DE}</think>", "de") == pytest.approx(0.25, abs=0.05)
    assert consistency(f"<think>{ZH}{EN}</think>", "zh") == pytest.approx(17 * 0.6 / (17 * 0.6 + 13), abs=0.02)


def test_same_script_languages_are_told_apart():
    text = f"<think>{EN}\n{DE}\n{FR}</think>"
    assert [consistency(text, lang) for lang in ("en", "de", "fr")] == pytest.approx([13 / 36, 11 / 36, 12 / 36], abs=0.03)
    assert consistency(f"<think>{EN} Okay, right. {EN}</think>", "en") == 1.0
    assert consistency(f"<think>{DE} Okay. {DE}</think>", "de") == 1.0  # a lone loanword is not a switch


def test_han_is_japanese_in_sentences_with_kana_else_chinese():
    assert consistency(f"<think>{JA}</think>", "ja") == 1.0
    assert consistency(f"<think>{JA}</think>", "zh") == 0.0
    assert consistency(f"<think>{ZH}</think>", "ja") == 0.0
    assert consistency(f"<think>{ZH}{JA}</think>", "zh") == pytest.approx(0.4, abs=0.1)
    # a full-width "？" ends the sentence even without a space: the Chinese question stays Chinese
    assert consistency("<think>这是什么？我们来算一下吧。これは何ですか？答えは五です。</think>", "zh") == pytest.approx(
        11 * 0.6 / (11 * 0.6 + 3 * 0.6 + 10 * 0.55), abs=0.01)


def test_cyrillic_languages_are_told_apart():
    ru = "Сначала сложим два числа, а потом разделим сумму на два."
    uk = "Спочатку додамо два числа, а потім поділимо суму на два."
    assert consistency(f"<think>{ru}</think>", "ru") == 1.0
    assert consistency(f"<think>{ru}</think>", "uk") == 0.0
    assert consistency(f"<think>{uk}</think>", "uk") == 1.0
    assert consistency(f"<think>{uk}</think>", "ru") == 0.0
    assert consistency(f"<think>{ru} {EN}</think>", "ru") == pytest.approx(0.5, abs=0.1)


def test_full_width_letters_are_normalised():
    assert consistency("<think>Ｔｈｅ　ａｎｓｗｅｒ　ｉｓ　ｆｉｖｅ　ｂｅｃａｕｓｅ　ｔｗｏ　ｐｌｕｓ　ｔｈｒｅｅ．</think>", "en") == 1.0
    assert consistency(f"<think>{ZH}ｔｈｅ　ｓｕｍ　ｉｓ　ｆｉｖｅ</think>", "zh") < 0.8


def test_language_aliases():
    assert [normalize_language(x) for x in ("en", "EN", "english", "en-US", "zh-CN", "zh-Hans", "zh_TW", "cmn",
                                             "中文", "pt-BR", "Deutsch", "fa", "farsi")] == [
        "en", "en", "en", "en", "zh", "zh", "zh", "zh", "zh", "pt", "de", "fa", "fa"]
    assert normalize_language("klingon") is None and normalize_language(7) is None
    assert consistency(f"<think>{ZH}</think>", "zh-Hans") == 1.0
    with pytest.raises(ValueError, match="unsupported"):
        consistency(f"<think>{EN}</think>", "tlh")
    with pytest.raises(ValueError, match="normalize_language"):
        measure(EN, "english")


def test_prompt_language_detection():
    assert [detect_language(p) for p in (
        "What is 2 + 3?", "Combien font $2 + 3$ ?", "Wie viel ist 2 + 3?", "2+3 等于多少？", "2+3は何ですか？",
        "2 + 3은 무엇입니까?", "Сколько будет 2 + 3?", "ما هو ناتج 2 + 3؟", "2 + 3 कितना होता है?", "$2+3$", "",
    )] == ["en", "fr", "de", "zh", "ja", "ko", "ru", "ar", "hi", None, None]


def test_short_prompts_are_not_taken_for_rare_languages():
    short = ["Solve for x.", "Compute the integral.", "Evaluate 3+5", "Factor $x^2-1$.", "Implement binary search",
             "Let n be a positive integer. Find n."]
    assert {detect_language(p) for p in short} == {"en"}
    assert [detect_language(p) for p in ("Calcula la derivada.", "Oblicz całkę.", "Bereken de som.")] == ["es", "pl", "nl"]


def test_target_comes_from_the_column_then_the_option_then_the_prompt():
    completion = f"<think>{FR}</think><answer>7</answer>"
    kwargs = dict(prompts=["What is 3 + 4?"], completions=[completion])
    assert LanguageConsistencyReward()(**kwargs) == [0.0]  # detected from the English prompt
    assert LanguageConsistencyReward(target_lang="fr")(**kwargs) == [1.0]
    assert LanguageConsistencyReward(target_lang="en")(**kwargs, language=["fr"]) == [1.0]
    assert LanguageConsistencyReward(target_lang="fr")(**kwargs, lang=["en"]) == [0.0]
    assert LanguageConsistencyReward(lang_column="locale")(**kwargs, locale=["fr-FR"]) == [1.0]
    assert LanguageConsistencyReward(target_lang="fr")(**kwargs, language=[None]) == [1.0]  # empty column: option


def test_unknown_or_undetectable_language_skips_with_a_reason(caplog):
    reward = LanguageConsistencyReward()
    logged = {}
    with caplog.at_level(logging.INFO, logger="trl_r1.rewards"):
        scores = reward(prompts=["2 + 3 = ?", "Q"], completions=[f"<think>{EN}</think>"] * 2,
                        language=[None, "klingon"], log_extra=logged.__setitem__)
    assert scores == [None, None]
    reasons = logged["language_consistency_reward_reason"]
    assert reasons[0].startswith("no target language") and reasons[1] == "unsupported language 'klingon'"
    with pytest.raises(ValueError, match="unsupported target_lang"):
        LanguageConsistencyReward(target_lang="klingon")


def test_bad_input_never_raises():
    reward = LanguageConsistencyReward(target_lang="en")
    huge = "<think>" + (EN + " 12345 $x^2$ ") * 6_000 + "</think>"  # longer than MAX_CHARS and max_chars
    scores = reward(
        prompts=[None, 5, [{"role": "user", "content": None}], "hi", "hi", "hi"],
        completions=[None, 42, [{"role": "assistant", "content": None}], f"<think>{EN}", huge, "\x00\ud800<think>"],
    )
    assert scores[:3] == [None, None, 0.0] and scores[3] == 1.0 and scores[4] == 0.0 and scores[5] == 0.0
    # without the reward's length cap, the verifier measures the first MAX_CHARS characters
    assert LanguageConsistencyReward(target_lang="en", max_chars=None)(completions=[huge]) == [1.0]
    assert consistency(None, "en") == 0.0


def test_conversational_completions_and_separate_reasoning_field():
    completion = [{"role": "assistant", "reasoning_content": FR, "content": f"<answer>{EN}</answer>"}]
    prompt = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Combien font 3 + 4 ?"}]
    assert language_consistency_reward(prompts=[prompt], completions=[completion]) == [1.0]


def test_reward_is_registered_picklable_and_named():
    reward = pickle.loads(pickle.dumps(LanguageConsistencyReward(target_lang="zh-CN", lang_column="lang")))
    assert (reward.target_lang, reward.lang_column) == ("zh-CN", "lang")
    assert reward(completions=[f"<think>{ZH}</think>"]) == [1.0]
    assert get_reward_func("language") is language_consistency_reward
    assert get_reward_func("language_consistency", target_lang="de").target_lang == "de"
    assert language_consistency_reward.__name__ == "language_consistency_reward"


def test_word_features_match_py3langid_exactly():
    from collections import Counter

    from py3langid.langid import visit_counts

    from trl_r1.verifiers.language.identify import _feature_automaton, chunk_classifier

    words = ["hello", "Straße", "сумма", "संख्या", "x" * 100, "l'équation", "a"]
    encoded = [f" {w} ".encode() for w in words]
    rows, features = chunk_classifier(frozenset({"en", "de"}))._visits(encoded)
    for i, data in enumerate(encoded):
        assert Counter(features[rows == i].tolist()) == visit_counts(*_feature_automaton(), data)


def test_a_full_word_cache_is_cleared_without_changing_scores(monkeypatch):
    from trl_r1.verifiers.language import identify

    text = f"<think>{EN} {FR} {DE} {EN}</think>"
    expected = consistency(text, "en")
    monkeypatch.setattr(identify, "MAX_CACHED_WORDS", 8)
    assert consistency(text, "en") == expected
    assert consistency(f"<think>{FR} {EN}</think>", "en") == pytest.approx(0.5, abs=0.05)


def test_identifiers_in_prose_are_neutral():
    """Code names outside backticks (calls, indexing, snake_case, attributes, assignments) are code, not English."""
    assert consistency("<think>定义 dp[i] 表示前 i 个元素的最大和，调用 is_prime(n) 和 stack.append(x)，"
                       "结果存到 result_list，令 left = 0，right = n - 1。</think>", "zh") == 1.0
    assert consistency("<think>Заведём массив prefix_sum и вызовем solve() для каждого запроса.</think>", "ru") == 1.0
    # prose still counts: in parentheses, in long snake_case, and in calls with spaced arguments
    assert consistency("<think>我们先求和（the sum of all terms）。</think>", "zh") < 0.7
    assert consistency("<think>我们先求和。the_sum_of_all_terms_here</think>", "zh") < 0.8
    assert consistency("<think>我们先求和，f(add all the numbers together)。</think>", "zh") < 0.7
    for hidden in ("so.the.answer.is.five.now", "the_answer_is_five_now(x)", "the_answer_is_five_now = 5"):
        assert consistency(f"<think>我们先求和。{hidden}</think>", "zh") < 0.6, hidden


def test_short_han_only_lines_follow_the_next_cjk_sentence():
    """Headings and noun lines ("**計算**", "三桁") have no kana but belong to the Japanese around them."""
    ja = "<think>**問題整理**\n三角形の面積を求めます。\n**方針**\n底辺と高さを使います。\n**結論**\n答えは十二です。</think>"
    assert consistency(ja, "ja") == 1.0
    assert consistency(ja, "zh") == 0.0
    assert consistency("<think>**分析**\n我们先求出两个数的和。</think>", "zh") == 1.0
    assert consistency("<think>答えは十二です。\n結論</think>", "ja") == 1.0  # none follows: the last one
    assert consistency("<think>**分析**\nThe sum.\n我们先求出两个数的和。</think>", "zh") == pytest.approx(7.2 / 9.2, abs=0.01)
    # a sentence with a full stop is a sentence, however short: Chinese, whatever follows
    assert consistency("<think>所以。これは正しい答えです。答案是五。</think>", "zh") == pytest.approx(3.6 / 9.2, abs=0.01)


def test_plain_portuguese_is_not_taken_for_galician():
    assert consistency("<think>Primeiro vamos calcular o volume do cubo.</think>", "pt") == 1.0


def test_one_letter_words_between_words_count():
    """Articles, conjunctions and prepositions ("a", "e", "é", "y", "w", "I") are words; variables are not."""
    mixed = ("<think>Primeiro vamos calcular o volume do cubo. The edge is three, so the volume is twenty seven. "
             "Então a resposta é vinte e sete.</think>")
    assert consistency(mixed, "pt") == pytest.approx(14 / 24, abs=0.01)
    assert consistency("<think>Liczby podzielne przez trzy w przedziale od jednego do stu. "
                       "So I think there are thirty three.</think>", "pl") == pytest.approx(10 / 17, abs=0.01)
    assert consistency("<think>设 a 和 b 是正整数，且 x 是整数。</think>", "zh") == 1.0


def test_ambiguous_clauses_follow_their_sentence():
    """Short clauses are weak evidence between close languages: a Russian sentence in a Ukrainian CoT is Russian."""
    uk = "Знайдемо корені квадратного рівняння за теоремою Вієта."
    ru = "Сумма корней равна пяти, а произведение равно шести, значит корни два и три."
    assert consistency(f"<think>{uk} {ru}</think>", "uk") == pytest.approx(7 / 20, abs=0.01)


def test_unclosed_math_openers_are_read_in_linear_time():
    """Issue 36 (red team): 10,000 unclosed ``\\begin{equation}`` took 6.6 s, as the math regex rescanned to the end
    from each; formulas are now cut with `str.find`, and what closes still counts as math."""
    import time

    from trl_r1.verifiers.language.text import prose_text

    for unit in (r"\begin{equation}", r"\begin{align*}", r"\[", r"\(", "$$ a "):
        start = time.perf_counter()
        prose_text(unit * (200_000 // len(unit)))
        assert time.perf_counter() - start < 0.5, unit
    for word in ("a", "ä"):  # a long word in code, retried from each letter by the prose-run regex: 13 s for 20,000
        start = time.perf_counter()
        prose_text("```python\n" + word * 200_000 + "\n```")
        assert time.perf_counter() - start < 0.5, word
    # the same formulas as the regex it replaces (which backtracked), on ordinary and broken math
    import re

    from trl_r1.verifiers.language.text import _math_spans

    old = re.compile(
        r"\$\$[\s\S]*?\$\$|\\\[[\s\S]*?\\\]|\\\([\s\S]*?\\\)"
        r"|\\begin\{(equation|align|gather|multline|eqnarray|math|displaymath|array|cases)(\*?)\}[\s\S]*?\\end\{\1\2\}"
        r"|\$(?=[^\s$])(?:[^$\n]|\n(?!\s*\n))*?(?<=[^\s\\$])\$(?!\d)")
    texts = [r"Bonjour $x$ et \begin{align*}y = \text{tout}\end{align*} puis \[ ouvert $$a$$ \(b\)",
             r"costs $5 and $10, $$ unclosed $x$ \begin{align}a\end{align*} \begin{cases}b\end{cases}",
             "$a\n\n$ $ b$ $c\\$ d$ \\[ \\] $$ $$ $$", r"\( \[ \) \] \begin{math}\end{math}$x$9 $y$"]
    for text in texts:
        assert [(s, e) for s, e, math in _math_spans(text) if math] == [m.span() for m in old.finditer(text)], text


def test_a_time_limit_inside_the_word_cache_leaves_it_consistent(monkeypatch):
    """The reward's time limit (issue 36) can stop the classifier between bytecodes: words must not stay cached
    with zero vectors (every later sample with them would be scored wrong, silently)."""
    from trl_r1.rewards.base import ScoreTimeLimit
    from trl_r1.verifiers.language.identify import ChunkClassifier

    classifier = ChunkClassifier(["en", "fr"])
    expected = ChunkClassifier(["en", "fr"]).probabilities([["bonjour", "monde"]])

    def interrupted(encoded):
        raise ScoreTimeLimit("over the 1.5 s time limit")

    with monkeypatch.context() as patch:
        patch.setattr(classifier, "_visits", interrupted)
        with pytest.raises(ScoreTimeLimit):
            classifier.probabilities([["bonjour", "monde"]])
    assert "bonjour" not in classifier._ids
    assert classifier.probabilities([["bonjour", "monde"]]).tolist() == expected.tolist()
