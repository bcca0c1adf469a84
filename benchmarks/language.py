"""Language-consistency reward: accuracy and throughput, ours vs simple py3langid references, in one run.

Data: benchmarks/data/language_cases.jsonl, hand-labelled chains of thought in 20 languages (pure, mixed by
sentence and by clause, same-script pairs, zh/ja, math- and code-heavy, prose hidden in LaTeX/code,
full-width text, no tags). Each case lists its words per language; the label is target words / all words
(a word is a space-separated token with a letter; Chinese, Japanese and Thai were segmented by hand).
Each case is also stretched to a ~2k-token completion (its reasoning repeated to >= 8 KB of UTF-8) for the
throughput figures and a long-text MAE.

References (both use py3langid 0.4.0, all its languages):
* per-word: every whitespace token of the reasoning classified alone; share labelled as the target;
* whole-text: 1.0 if the whole reasoning is labelled as the target, else 0.0 (open-r1 PR #683, torchforge).

Run: OMP_NUM_THREADS=1 python benchmarks/language.py [--reference-sample 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from trl_r1.verifiers.format import extract_reasoning
from trl_r1.verifiers.language import consistency, normalize_language
from trl_r1.verifiers.language.identify import clear_word_caches, identifier

CASES = Path(__file__).parent / "data" / "language_cases.jsonl"
LONG_BYTES = 8000  # ~2k tokens


def per_word_reference(completion: str, target: str) -> float:
    words = [w for w in extract_reasoning(completion).split() if any(ch.isalpha() for ch in w)]
    if not words:
        return 0.0
    return sum(identifier().classify(w)[0] == target for w in words) / len(words)


def whole_text_reference(completion: str, target: str) -> float:
    reasoning = extract_reasoning(completion)
    return float(bool(reasoning.strip()) and identifier().classify(reasoning)[0] == target)


def stretched(completion: str) -> str:
    reasoning = extract_reasoning(completion)
    copies = max(1, -(-LONG_BYTES // max(1, len(reasoning.encode()))))
    return "<think>" + "\n".join([reasoning] * copies) + "</think>\n<answer>done</answer>"


def throughput(score, samples) -> float:
    """Completions per second of this process's CPU time (wall time is meaningless on a shared machine)."""
    start = time.process_time()
    for completion, target in samples:
        score(completion, target)
    return len(samples) / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-sample", type=int, default=20, help="long completions timed for the slow per-word reference")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    start = time.process_time()
    identifier()
    load_s = time.process_time() - start
    assert all(normalize_language(c["target"]) == c["target"] for c in cases)
    print(f"{len(cases)} hand-labelled cases, {len({c['target'] for c in cases})} target languages; model load {load_s:.2f} CPU s")
    long_cases = [(stretched(c["completion"]), c["target"], c["label"]) for c in cases]
    samples = [(text, target) for text, target, _ in long_cases]
    sizes = [len(text.encode()) for text, _ in samples]
    print(f"Throughput on one core, completions per CPU second ({len(samples)} completions of {min(sizes)}-{max(sizes)} bytes, ~2k tokens)")
    cold = throughput(consistency, samples)  # first: builds the per-script classifiers, fills the word cache
    warm = throughput(consistency, samples)
    uncached = throughput(lambda completion, target: (clear_word_caches(), consistency(completion, target)), samples)
    sample = samples[:: max(1, len(samples) // args.reference_sample)][: args.reference_sample]
    per_word = throughput(per_word_reference, sample)
    whole = throughput(whole_text_reference, samples)
    print(f"  ours (first pass, empty word cache) {cold:8.1f}   (target >= 100)")
    print(f"  ours (second pass)                  {warm:8.1f}")
    unique = statistics.mean(len(set(extract_reasoning(text).split())) for text, _ in samples)
    print(f"  ours (word cache cleared each time) {uncached:8.1f}   (~{unique:.0f} distinct tokens per completion here)")
    vocabulary = sorted({w for c in cases for w in extract_reasoning(c["completion"]).split() if w.isalpha() and w.isascii()})
    text = ". ".join(" ".join(vocabulary[i:i + 8]) for i in range(0, len(vocabulary), 8))
    new = throughput(lambda completion, target: (clear_word_caches(), consistency(completion, target)), [(text, "en")] * 5)
    known = throughput(consistency, [(text, "en")] * 5)
    per_word_us = (1 / new - 1 / known) / len(vocabulary) * 1e6
    print(f"  cost of a word new to the process: {per_word_us:.0f} us (a 2k-token completion has ~300-500 distinct words)")
    print(f"  per-word reference ({len(sample)} completions)  {per_word:8.1f}   ours/ref = {cold / per_word:.1f}x")
    print(f"  whole-text reference                {whole:8.1f}   ours/ref = {cold / whole:.2f}x")

    methods = {"ours": consistency, "per-word": per_word_reference, "whole-text": whole_text_reference}
    errors = {name: [abs(f(c["completion"], c["target"]) - c["label"]) for c in cases] for name, f in methods.items()}
    ours_long = [abs(consistency(text, target) - label) for text, target, label in long_cases]

    print("\nMean absolute error vs hand labels (lower is better)")
    for name in methods:
        ratio = "" if name == "ours" else f"   ours/ref = {statistics.mean(errors['ours']) / statistics.mean(errors[name]):.3f}"
        print(f"  {name:<11} {statistics.mean(errors[name]):.4f}{ratio}")
    print(f"  ours on ~2k-token versions: {statistics.mean(ours_long):.4f}   (target <= 0.035)")
    by_kind = defaultdict(list)
    for case, error in zip(cases, errors["ours"]):
        by_kind[case["kind"]].append(error)
    print("  ours by kind: " + ", ".join(f"{kind} {statistics.mean(e):.3f} (n={len(e)})" for kind, e in sorted(by_kind.items())))
    worst = sorted(zip(errors["ours"], (c["id"] for c in cases)), reverse=True)[:5]
    print("  ours, largest errors: " + ", ".join(f"{case_id} {error:.3f}" for error, case_id in worst))


if __name__ == "__main__":
    main()
