"""benchmarks/data/math_fresh_2.jsonl (issue 30's second blind set): its builder reproduces the committed file byte
for byte, and the set keeps the shape it promises (size, share of wrong answers, families, fields)."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRESH_2 = ROOT / "benchmarks" / "data" / "math_fresh_2.jsonl"
BUILDER = ROOT / "benchmarks" / "data" / "build_math_fresh_2.py"


def load() -> list[dict]:
    return [json.loads(line) for line in FRESH_2.read_text().splitlines() if line.strip()]


def test_builder_reproduces_the_committed_file(tmp_path):
    out = tmp_path / "fresh_2.jsonl"
    subprocess.run([sys.executable, str(BUILDER), str(out)], check=True, capture_output=True)
    assert out.read_bytes() == FRESH_2.read_bytes()


def test_the_set_has_the_promised_shape():
    cases = load()
    assert len(cases) >= 500
    assert 0.40 <= sum(not c["label"] for c in cases) / len(cases) <= 0.50
    families = Counter(c["family"] for c in cases)
    assert set(families) == {"words", "matrix", "cheap", "box", "other"}
    for family, count in families.items():  # every family sizeable, with right and wrong answers in fair measure
        wrong = sum(not c["label"] for c in cases if c["family"] == family)
        assert count >= 100 and 0.3 <= wrong / count <= 0.6, family
    assert len({(c["gold"], c["completion"]) for c in cases}) == len(cases)  # no duplicate pairs
    for case in cases:
        assert set(case) == {"gold", "completion", "label", "kind", "family", "answer_policy", "source",
                             "expected_from"}
        assert case["answer_policy"] in ("marked", "bare")
        assert isinstance(case["label"], bool) and case["gold"] and case["completion"]
    bare = [c for c in cases if c["answer_policy"] == "bare"]  # "bare" only for completions that are only an answer
    assert bare and all(len(c["completion"]) <= 20 and "\n" not in c["completion"] for c in bare)


def test_spelled_numbers_say_the_value_they_are_labelled_with():
    """The labels of the word cases rest on the builder's spelling; check it where English is unambiguous."""
    import importlib.util
    from fractions import Fraction

    spec = importlib.util.spec_from_file_location("build_math_fresh_2", BUILDER)
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    assert builder.words(105, british=True) == "one hundred and five"
    assert builder.words(2024, british=True) == "two thousand and twenty-four"
    assert builder.words(497069, british=True) == "four hundred and ninety-seven thousand and sixty-nine"
    assert builder.words(3272385) == "three million two hundred seventy-two thousand three hundred eighty-five"
    assert builder.words(-5) == "minus five" and builder.words(0) == "zero" and builder.words(90) == "ninety"
    assert [builder.ordinal(n) for n in (1, 3, 12, 21, 30)] == ["first", "third", "twelfth", "twenty-first",
                                                                  "thirtieth"]
    assert builder.fraction_words(Fraction(3, 4)) == "three quarters"
    assert builder.fraction_words(Fraction(1, 16)) == "one sixteenth"
    assert builder.decimal_words("-40.05") == "negative forty point zero five"
    assert builder.format_decimal(Fraction(-13, 8)) == "-1.625" and builder.format_decimal(Fraction(7)) == "7"
    for case in load():  # template kinds named for wrong answers hold wrong answers only
        if case["kind"].endswith(("_wrong", "_off_by_one", "_one_short", "_near_miss", "_missing", "_off_power")):
            assert case["label"] is False, case
