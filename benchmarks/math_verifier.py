"""Math verifier benchmark: trl_r1.verifiers.math against math-verify 0.9.0, side by side, in one run.

    python benchmarks/math_verifier.py [--cases benchmarks/data/math_cases.jsonl] [--show-errors]
    python benchmarks/math_verifier.py --cases benchmarks/data/math_third_party.jsonl   # other projects' suites
    python benchmarks/math_verifier.py --cases benchmarks/data/math_red_team_2.jsonl    # red team 2's probes
    python benchmarks/math_verifier.py --cases benchmarks/data/math_red_team_3.jsonl    # red teams 3 and 4
    python benchmarks/math_verifier.py --cases benchmarks/data/math_red_team_4.jsonl
    python benchmarks/math_verifier.py --cases benchmarks/data/math_fresh.jsonl        # issue 30's fresh set, by family
    python benchmarks/math_verifier.py --cases benchmarks/data/math_fresh_2.jsonl      # its second blind set

Cases are (gold, completion, label) rows: published grader test cases (Math-Verify's tests and issues, the
Hendrycks/Qwen graders) rewritten as model-style completions, MATH-500-style bare-LaTeX golds, GSM8K-style golds
(bare and full ``#### X`` solutions), hedged and multi-valued answers, and pathological inputs, checked with the RL reward's ``answer_policy="marked"``. math-verify gets the gold
wrapped in ``\\boxed{}`` (GSM8K golds cut after ``####`` first), its recommended use.

``math_third_party.jsonl`` holds test cases of other projects' graders (Math-Verify, NeMo-Skills, Qwen2.5-Math,
hendrycks/math, AReaL, TRL, open-r1), each with the repository, commit, file and test it comes from and the
verdict that test asserts. A case whose completion marks its answer (box, answer block, "the answer is") is
checked with ``answer_policy="marked"``; one that is only an answer with ``"bare"`` (the case's
``answer_policy``). Results are printed per source, split into marked and bare cases. A case whose stated verdict is
wrong as a verdict of equivalence is relabelled (``stated_label`` keeps the test's verdict, ``note`` says why; see
``data/collect_third_party.py``), and the totals against the stated verdicts are printed as well.

``math_red_team_2.jsonl`` holds the second red team's 603 probes (source ``red_team_2``; 7 duplicates of cases
already here dropped): MATH/GSM8K/AIME/AMC/Minerva/Olympiad-style answers, R1-style outputs and gaming probes
(hedges around a box, boxes split by layout), each with the red team's label and policy; a ``note`` marks the
labels that are debatable, kept as the red team wrote them.

``math_red_team_3.jsonl`` (438 cases: 351 wrong answers dressed as right ones, 87 honest ones) and
``math_red_team_4.jsonl`` (192 honest R1-style completions, 144 gaming phrasings) are the third and fourth red
teams' fresh cases, written after the verifier; each case appears twice, checked with ``"marked"`` (the RL
reward) and with ``"bare"``.

``math_fresh.jsonl`` (built by ``data/build_math_fresh.py``, deterministic) is a set written for issue 30 by a
helper blind to its fixes: numbers in words, matrices written differently, exact answers that look expensive,
broken boxes and other forms, each family with as many wrong answers and hacks; each case names its ``family``,
and results are printed per family (accuracy, false-positive and false-negative rates, slowest case).
``math_fresh_2.jsonl`` (built by ``data/build_math_fresh_2.py``, deterministic; 995 cases, 448 wrong) is a second
set in the same five families, written by another helper blind to the fixes and to the first set, in other phrasings
and styles (terse, verbose, markdown, ``<think>``/``<answer>`` tags, ChatML, Llama-3 and "User:"/"Human:" turns).

Both sides check the cases one after another in one process each: ours with one sympy worker process
(`workers=1`), math-verify in a child process whose main thread runs its SIGALRM timeouts. math-verify can hang
past its own timeout (Math-Verify#65); a case it has not answered after `--hang-limit` seconds is killed, counted
wrong and charged that many seconds. Printed: accuracy, false positives (share of wrong answers accepted), false
negatives (share of right answers rejected), the slowest case, and cases/s with the ours/math-verify ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

DEFAULT_CASES = Path(__file__).parent / "data" / "math_cases.jsonl"


def load_cases(path: Path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_ours(
    cases: list[dict], timeout_s: float | None, policy: str | None = None, approximations: str = "reject"
) -> tuple[list[bool], list[float]]:
    """Our verdicts one case after another; `policy` None: each case's own `answer_policy` (else "marked"); a
    case's `question`, when it has one, is passed for a rounding it asks for."""
    import trl_r1.verifiers.math as math_verifier
    from trl_r1.verifiers.math import DEFAULT_TIMEOUT_S, check

    timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    math_verifier._pool(None).start()  # the worker and its spares booted before timing, as in a training run
    verdicts, seconds = [], []
    for case in cases:
        start = time.perf_counter()
        answer_policy = policy or case.get("answer_policy", "marked")
        verdict = check(case["gold"], case["completion"], timeout_s, answer_policy, approximations, case.get("question"))
        verdicts.append(bool(verdict.equivalent))
        seconds.append(time.perf_counter() - start)
    return verdicts, seconds


def math_verify_gold(case: dict) -> str:
    """The gold as math-verify is meant to get it: as its own tests pass it, else bare answers wrapped in a box."""
    if "reference_gold" in case:
        return case["reference_gold"]
    gold = case["gold"]
    return "\\boxed{" + (gold.rsplit("####", 1)[1].strip() if "####" in gold else gold) + "}"


def serve_math_verify(path: str, start: int) -> None:
    """Child process: print one JSON line (verdict, seconds) per case from `start` on."""
    import logging

    from math_verify import parse, verify

    logging.disable(logging.WARNING)  # math-verify logs whole predictions on timeouts
    parse(r"\boxed{1}"), parse("warm up")
    for case in load_cases(Path(path))[start:]:
        begin = time.perf_counter()
        try:
            ok = bool(verify(parse(math_verify_gold(case)), parse(case["completion"])))
        except BaseException:  # its TimeoutException derives from BaseException
            ok = False
        print(json.dumps([ok, time.perf_counter() - begin]), flush=True)


def run_math_verify(path: Path, n: int, hang_limit_s: float) -> tuple[list[bool], list[float], int]:
    verdicts: list[bool] = []
    seconds: list[float] = []
    hangs = 0
    while len(verdicts) < n:
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve-math-verify", str(path), str(len(verdicts))],
            stdout=subprocess.PIPE, text=True,
        )
        while len(verdicts) < n:
            ready, _, _ = select.select([child.stdout], [], [], hang_limit_s + 30.0 * (not verdicts))
            line = child.stdout.readline() if ready else ""
            if not line:  # hung (or died) on this case
                child.kill()
                child.wait()
                verdicts.append(False)
                seconds.append(hang_limit_s)
                hangs += 1
                break
            ok, took = json.loads(line)
            verdicts.append(ok)
            seconds.append(took)
        else:
            child.kill()
            child.wait()
    return verdicts, seconds, hangs


def summary(cases: list[dict], verdicts: list[bool], seconds: list[float]) -> dict:
    labels = [c["label"] for c in cases]
    positives, negatives = sum(labels), len(labels) - sum(labels)
    false_positives = sum(v and not y for v, y in zip(verdicts, labels))
    false_negatives = sum(y and not v for v, y in zip(verdicts, labels))
    return {
        "accuracy": sum(v == y for v, y in zip(verdicts, labels)) / len(labels),
        "fp_rate": false_positives / max(negatives, 1),
        "fn_rate": false_negatives / max(positives, 1),
        "fp": false_positives,
        "fn": false_negatives,
        "max_s": max(seconds),
        "cases_per_s": len(cases) / sum(seconds),
    }


def print_by_source(cases: list[dict], ours: list[bool], theirs: list[bool]) -> None:
    """Accuracy and false positives (wrong answers accepted / wrong answers) per source and kind, as a table."""
    print("\n| source | answers | cases | trl_r1 accuracy | math-verify accuracy | trl_r1 FP | math-verify FP |")
    print("|---|---|---:|---:|---:|---:|---:|")
    groups: dict[tuple[str, str], list[int]] = {}
    for i, case in enumerate(cases):
        groups.setdefault((case["source"], case["kind"]), []).append(i)
        groups.setdefault(("all", case["kind"]), []).append(i)
    for (source, kind), index in sorted(groups.items(), key=lambda item: (item[0][0] == "all", item[0])):
        negatives = sum(not cases[i]["label"] for i in index)
        row = [source, kind, str(len(index))]
        for verdicts in (ours, theirs):
            row.append(f"{sum(verdicts[i] == cases[i]['label'] for i in index) / len(index):.1%}")
        for verdicts in (ours, theirs):
            row.append(f"{sum(verdicts[i] and not cases[i]['label'] for i in index)}/{negatives}")
        print("| " + " | ".join(row) + " |")


def print_by_family(cases: list[dict], ours: tuple[list[bool], list[float]],
                    theirs: tuple[list[bool], list[float]]) -> None:
    """Accuracy, false-positive and false-negative rates and the slowest case per family, both sides, as a table."""
    print("\n| family | cases | wrong answers | trl_r1 accuracy | math-verify accuracy | trl_r1 FP | math-verify FP "
          "| trl_r1 FN | math-verify FN | trl_r1 slowest (s) | math-verify slowest (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    groups: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        groups.setdefault(case["family"], []).append(i)
    groups = {family: groups[family] for family in sorted(groups)} | {"all": list(range(len(cases)))}
    for family, index in groups.items():
        subset = [cases[i] for i in index]
        a, b = (summary(subset, [verdicts[i] for i in index], [seconds[i] for i in index])
                for verdicts, seconds in (ours, theirs))
        negatives = sum(not c["label"] for c in subset)
        row = [family, str(len(index)), str(negatives), f"{a['accuracy']:.1%}", f"{b['accuracy']:.1%}"]
        row += [f"{s['fp_rate']:.1%} ({s['fp']})" for s in (a, b)] + [f"{s['fn_rate']:.1%} ({s['fn']})" for s in (a, b)]
        row += [f"{s['max_s']:.2f}" for s in (a, b)]
        print("| " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--timeout", type=float, default=None, help="our per-check hard limit (s; default: the verifier's)")
    parser.add_argument("--hang-limit", type=float, default=30.0, help="seconds before a math-verify case is killed")
    parser.add_argument("--approximations", choices=("reject", "rounded"), default="reject",
                        help="our policy for a decimal answer to an exact gold (issue 36; default: reject)")
    parser.add_argument("--show-errors", action="store_true", help="list the cases each side gets wrong")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    cases = load_cases(args.cases)
    print(f"{len(cases)} cases ({sum(c['label'] for c in cases)} right answers) from {args.cases}")

    ours, ours_s = run_ours(cases, args.timeout, approximations=args.approximations)
    theirs, theirs_s, hangs = run_math_verify(args.cases.resolve(), len(cases), args.hang_limit)
    a, b = summary(cases, ours, ours_s), summary(cases, theirs, theirs_s)
    print(f"\n{'':22}{'trl_r1':>12}{'math-verify':>14}")
    print(f"{'accuracy':22}{a['accuracy']:>12.1%}{b['accuracy']:>14.1%}")
    print(f"{'false positive rate':22}{a['fp_rate']:>12.1%}{b['fp_rate']:>14.1%}   ({a['fp']} vs {b['fp']} cases)")
    print(f"{'false negative rate':22}{a['fn_rate']:>12.1%}{b['fn_rate']:>14.1%}   ({a['fn']} vs {b['fn']} cases)")
    print(f"{'slowest case (s)':22}{a['max_s']:>12.2f}{b['max_s']:>14.2f}   (math-verify hangs killed: {hangs})")
    print(f"{'cases/s':22}{a['cases_per_s']:>12.1f}{b['cases_per_s']:>14.1f}")
    print(f"{'throughput ratio':22}{a['cases_per_s'] / b['cases_per_s']:>12.2f}x")

    relabelled = [c for c in cases if "stated_label" in c]
    if relabelled:  # the figures against the source tests' own verdicts too, so a relabel never hides a result
        stated = [{**c, "label": c.get("stated_label", c["label"])} for c in cases]
        a, b = summary(stated, ours, ours_s), summary(stated, theirs, theirs_s)
        print(f"against the stated verdicts ({len(relabelled)} cases relabelled, each with its reason in `note`): "
              f"accuracy {a['accuracy']:.1%} vs {b['accuracy']:.1%}, false positives {a['fp']} vs {b['fp']}")

    if any("where" in c for c in cases):
        print_by_source(cases, ours, theirs)
    elif all("family" in c for c in cases):
        print_by_family(cases, (ours, ours_s), (theirs, theirs_s))
    else:
        print(f"\n{'accuracy by kind':22}{'trl_r1':>12}{'math-verify':>14}{'cases':>8}")
        for kind, count in Counter(c["kind"] for c in cases).items():
            index = [i for i, c in enumerate(cases) if c["kind"] == kind]
            ours_acc = sum(ours[i] == cases[i]["label"] for i in index) / count
            theirs_acc = sum(theirs[i] == cases[i]["label"] for i in index) / count
            print(f"{kind:22}{ours_acc:>12.1%}{theirs_acc:>14.1%}{count:>8}")
    if args.show_errors:
        for name, verdicts in (("trl_r1", ours), ("math-verify", theirs)):
            print(f"\n{name} errors:")
            for case, verdict in zip(cases, verdicts):
                if verdict != case["label"]:
                    where = f" [{case['where'].split('@')[0]}::{case['where'].split('::')[-1]}]" if "where" in case else (
                        f" [{case['family']}/{case['kind']}]" if "family" in case else "")
                    print(f"  label={case['label']!s:5} gold={case['gold'][:60]!r} completion=...{case['completion'][-80:]!r}{where}")
                    if case.get("note"):
                        print(f"      note: {case['note']}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-math-verify":
        serve_math_verify(sys.argv[2], int(sys.argv[3]))
    else:
        main()
