"""benchmarks/data/math_fresh.jsonl (issue 30's fresh set): its builder reproduces the committed file, the set keeps
the shape it promises, and benchmarks/math_verifier.py's per-family table counts what it says."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRESH = ROOT / "benchmarks" / "data" / "math_fresh.jsonl"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("math_verifier_bench", ROOT / "benchmarks" / "math_verifier.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_builder_reproduces_the_committed_file(tmp_path):
    out = tmp_path / "fresh.jsonl"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "data" / "build_math_fresh.py"), str(out)],
                   check=True, capture_output=True)
    assert out.read_bytes() == FRESH.read_bytes()


def test_the_set_has_the_promised_shape(bench):
    cases = bench.load_cases(FRESH)
    assert len(cases) >= 500
    assert 0.40 <= sum(not c["label"] for c in cases) / len(cases) <= 0.50
    families = {c["family"] for c in cases}
    assert families == {"words", "matrix", "cheap", "box", "other"}
    for family in families:  # right and wrong answers in every family
        assert {c["label"] for c in cases if c["family"] == family} == {True, False}
    for case in cases:
        assert {"gold", "completion", "label", "kind", "source", "answer_policy"} <= set(case)
        assert case["answer_policy"] in ("marked", "bare")


def test_family_table_counts_false_positives_and_negatives(bench, capsys):
    rows = [{"gold": "7", "completion": "", "label": label, "kind": "k", "family": family}
            for family, label in [("words", True), ("words", True), ("words", False), ("words", False), ("box", False)]]
    ours = ([True, False, True, False, False], [0.1, 0.2, 0.3, 0.4, 0.5])
    theirs = ([True, True, False, False, True], [1.0, 1.0, 1.0, 1.0, 2.5])
    bench.print_by_family(rows, ours, theirs)
    lines = {line.split(" | ")[0].strip("| "): line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")}
    assert lines["words"] == ("| words | 4 | 2 | 50.0% | 100.0% | 50.0% (1) | 0.0% (0) | 50.0% (1) | 0.0% (0) "
                              "| 0.40 | 1.00 |")
    assert lines["box"] == "| box | 1 | 1 | 100.0% | 0.0% | 0.0% (0) | 100.0% (1) | 0.0% (0) | 0.0% (0) | 0.50 | 2.50 |"
    assert lines["all"].startswith("| all | 5 | 3 | 60.0% | 80.0% | 33.3% (1) | 33.3% (1) | 50.0% (1) | 0.0% (0) |")
