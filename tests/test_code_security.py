"""Attacks on the code verifier, one class per test, each checking the host afterwards.

Where an attack is harmless to run unsandboxed, the same program is first run with ``allow_unsafe=True``
forced (a plain local subprocess) to prove that the attack works without the sandbox; the sandboxed run
must then contain it. Every test ends by checking that no process of the sandbox uids is left on the host.
"""

import os
import resource
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from trl_r1.verifiers.code import isolation_problem, run_tests, run_tests_batch, runner
from trl_r1.verifiers.code.sandbox import UID_COUNT, UID_FIRST

pytestmark = pytest.mark.skipif(isolation_problem() is not None, reason=f"no sandbox: {isolation_problem()}")


def stdio(input_text, output):
    return {"type": "stdio", "input": input_text, "output": output}


def check(code):
    return {"type": "assert", "code": code}


def unsandboxed(monkeypatch, program, tests, **kwargs):
    """The control run: the same program as a plain local subprocess (as if isolation were missing)."""
    with monkeypatch.context() as patch:
        patch.setattr(runner, "isolation_problem", lambda: "disabled for the control run")
        return run_tests(program, tests, allow_unsafe=True, **kwargs)


def host_processes(predicate):
    """(pid, uid, cmdline) of host processes matching predicate(uid, cmdline)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            uid = entry.stat().st_uid
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if predicate(uid, cmdline):
            found.append((int(entry.name), uid, cmdline))
    return found


def _parent(pid):
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _ours_or_orphaned(pid):
    """Whether a sandbox process was started by this test run (it descends from us) or outlived its sandbox
    (its parent is init): other engineers' concurrent sandboxes on a shared host are neither."""
    me, chain = os.getpid(), pid
    while True:
        parent = _parent(chain)
        if parent == me:
            return True
        if parent <= 1:  # the top of the chain: an orphaned sandbox process, or someone else's tree
            try:
                return UID_FIRST <= Path(f"/proc/{chain}").stat().st_uid < UID_FIRST + UID_COUNT
            except OSError:
                return True  # gone while we looked: the caller polls again
        chain = parent


def sandbox_processes():
    found = host_processes(lambda uid, cmd: UID_FIRST <= uid < UID_FIRST + UID_COUNT)
    return [p for p in found if _ours_or_orphaned(p[0])]


@pytest.fixture(autouse=True)
def nothing_left_behind():
    yield
    deadline = time.monotonic() + 15.0  # how long a loaded machine may take to reap a killed sandbox, not a bound
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_processes() == []


@pytest.fixture
def token():
    return "TOKEN-" + secrets.token_hex(16)


# ------------------------------------------------------------------------------------------------ host files
def test_cannot_read_host_files(monkeypatch, token, tmp_path):
    secret = Path("/tmp") / f"trl-r1-secret-{token}"
    secret.write_text(token)
    secret.chmod(0o644)  # world-readable: only the missing bind keeps it away
    try:
        program = textwrap.dedent(f"""
            import os
            found = []
            for path in [{str(secret)!r}, {__file__!r}, "/etc/shadow", "/etc/passwd", "/root/.bashrc", "/work"]:
                try:
                    found.append(open(path).read() if os.path.isfile(path) else str(os.listdir(path)))
                except OSError as exc:
                    found.append(type(exc).__name__)
            print("{token}" if any("{token}" in text for text in found) else found)
        """)
        tests = [stdio("", token)]
        assert unsandboxed(monkeypatch, program, tests).pass_fraction == 1.0
        report = run_tests(program, tests)
        assert report.results[0].outcome.value == "wrong_answer"
        assert "FileNotFoundError" in report.results[0].detail  # nothing of the host is even visible
    finally:
        secret.unlink()


def test_cannot_write_host_files(monkeypatch, token):
    target = Path("/tmp") / f"trl-r1-pwned-{token}"
    program = textwrap.dedent(f"""
        import sys
        for path in sys.argv[1:] or [{str(target)!r}]:
            try:
                open(path, "w").write("x")
            except OSError:
                pass
        print("done")
    """)
    assert unsandboxed(monkeypatch, program, [stdio("", "done")]).pass_fraction == 1.0
    assert target.exists()  # the control run could write it
    target.unlink()
    inside = program.replace("sys.argv[1:]", f"[{str(target)!r}, '/usr/{token}', '/etc/{token}', '/{token}']")
    assert run_tests(inside, [stdio("", "done")]).pass_fraction == 1.0
    assert not any(Path(p).exists() for p in (target, f"/usr/{token}", f"/etc/{token}", f"/{token}"))


def test_writable_space_is_bounded():
    """tmpfs pages are host memory: /tmp and /dev/shm are size-limited, /dev is read-only."""
    program = textwrap.dedent("""
        out = []
        for directory in ("/dev", "/dev/shm", "/tmp"):
            written = 0
            try:
                for i in range(100):  # 800 MB per directory if nothing stopped it
                    with open(f"{directory}/chunk{i}", "wb") as f:
                        f.write(b"0" * (8 << 20))
                    written += 8
            except OSError as exc:
                out.append(f"{directory}:{exc.errno}:{written <= 64}")
        print(*out)
    """)
    report = run_tests(program, [stdio("", "/dev:30:True /dev/shm:28:True /tmp:28:True")], timeout_s=20)
    assert report.pass_fraction == 1.0, report.results[0].detail  # EROFS, then ENOSPC at 64 MiB


# ------------------------------------------------------------------------------------------------ secrets
def test_cannot_see_the_trainers_environment_or_home(monkeypatch, token):
    monkeypatch.setenv("TRL_R1_TEST_SECRET", token)
    trainer = subprocess.Popen(["sleep", "30"])  # a host process started with the secret in its environment
    try:
        program = textwrap.dedent(f"""
            import os
            seen = [str(os.environ), os.path.expanduser("~"), str(os.path.exists("/root"))]
            for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
                if pid.isdigit():
                    for name in ("environ", "cmdline"):
                        try:
                            seen.append(open(f"/proc/{{pid}}/{{name}}", "rb").read().decode(errors="replace"))
                        except OSError:
                            pass
            print("{token}" if any("{token}" in s for s in seen) else sorted(os.environ))
        """)
        tests = [stdio("", token)]
        assert unsandboxed(monkeypatch, program, tests).pass_fraction == 1.0  # found in /proc/<pid>/environ
        report = run_tests(program, tests)
        assert report.pass_fraction == 0.0
        assert report.results[0].detail.endswith(
            "got \"['LANG', 'MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'PATH', 'PWD']\"")
    finally:
        trainer.kill()
        trainer.wait()


# ------------------------------------------------------------------------------------------------ network
@pytest.fixture
def listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def accepted(server):
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


def test_no_network_not_even_loopback(monkeypatch, listener):
    port = listener.getsockname()[1]
    program = textwrap.dedent(f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=1).sendall(b"hi")
            print("connected")
        except OSError as exc:
            print(exc.errno)
    """)
    tests = [stdio("", "connected")]
    assert unsandboxed(monkeypatch, program, tests).pass_fraction == 1.0
    assert accepted(listener)
    report = run_tests(program, tests)
    assert report.pass_fraction == 0.0 and "got '13'" in report.results[0].detail  # EACCES from seccomp
    assert not accepted(listener)
    families = "import socket\nfor family in (socket.AF_INET6, socket.AF_NETLINK, socket.AF_PACKET):\n" \
               "    try:\n        socket.socket(family, socket.SOCK_RAW if family != socket.AF_INET6 else socket.SOCK_STREAM)\n" \
               "    except OSError as exc:\n        print(exc.errno)\n" \
               "a, b = socket.socketpair()\na.sendall(b'unix ok')\nprint(b.recv(7).decode())"
    assert run_tests(families, [stdio("", "13\n13\n13\nunix ok")]).pass_fraction == 1.0


# ------------------------------------------------------------------------------------------------ processes
def test_daemons_and_fork_bombs_leave_nothing_behind(token):
    daemon = textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/usr/bin/python3", ["/usr/bin/python3", "-c", "import time; time.sleep(60)", "{token}"])
            os._exit(0)
        time.sleep(0.3)
        print("ok")
    """)
    assert run_tests(daemon, [stdio("", "ok")] * 2).pass_fraction == 1.0
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    started = time.monotonic()
    report = run_tests(bomb, [stdio("", "")] * 2, timeout_s=1.0)
    assert [r.outcome.value for r in report.results] == ["timeout", "timeout"]
    assert time.monotonic() - started < 2 * (1.0 + 1.0)  # 2.3-2.4 s here, also beside 4 busy processes on 2 cores
    deadline = time.monotonic() + 15.0  # the daemon dies with its sandbox: wait for its reaping, not a fixed 0.2 s
    while host_processes(lambda uid, cmd: token in cmd) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes(lambda uid, cmd: token in cmd) == []


def test_memory_descriptors_and_cpu_are_limited():
    program = textwrap.dedent("""
        import os, threading
        x = input()
        if x == "memory":
            hog = []
            while True:
                hog.append(bytes(256 << 20))
        if x == "fds":
            while True:
                os.open("/dev/null", os.O_RDONLY)
        if x == "threads":
            for _ in range(8):
                threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()
            threading.Event().wait()
    """)
    report = run_tests(program, [stdio("memory", ""), stdio("fds", ""), stdio("threads", "")], timeout_s=1.0)
    assert [r.outcome.value for r in report.results] == ["limit_exceeded", "crash", "timeout"]
    assert "Too many open files" in report.results[1].stderr
    assert report.results[2].wall_s < 1.0 + 0.5


def test_output_floods_are_capped():
    program = textwrap.dedent("""
        import os, sys
        x = input()
        if x == "stdout":
            while True:
                os.write(1, b"y" * 65536)
        if x == "stderr":
            while True:
                os.write(2, b"e" * 65536)
    """)
    report = run_tests(program, [stdio("stdout", "y"), stdio("stderr", "")], timeout_s=1.0)
    assert [r.outcome.value for r in report.results] == ["limit_exceeded", "timeout"]
    assert report.results[0].wall_s < 1.0 and len(report.results[1].stderr) <= 4096


def test_an_endless_generator_cannot_fill_the_hosts_memory():
    program = "def flood():\n    while True:\n        yield 'x' * 4096\ndef f():\n    return 1\n"
    tests = [check("assert list(flood()) == []"),
             check("try:\n    list(flood())\nexcept BaseException:\n    pass\nassert f() == 1")]  # cannot be caught
    report = run_tests(program, tests, timeout_s=30.0)
    assert [r.outcome.value for r in report.results] == ["limit_exceeded"] * 2
    assert all(r.wall_s < 15 for r in report.results)


def test_cannot_signal_or_stop_the_host_or_the_other_tests():
    bystander = subprocess.Popen(["sleep", "30"])  # a host process whose pid we leak to the program
    try:
        program = textwrap.dedent(f"""
            import os, signal
            x = input()
            if x == "stop-supervisor":
                os.kill(os.getppid(), signal.SIGSTOP)
            if x == "kill-all":
                for pid in [{bystander.pid}, {os.getpid()}, 1]:
                    for sig in (signal.SIGSTOP, signal.SIGKILL):
                        try:
                            os.kill(pid, sig)
                        except OSError:
                            pass
                os.kill(-1, signal.SIGKILL)
            print(x)
        """)
        tests = [stdio("stop-supervisor", "stop-supervisor"), stdio("a", "a"), stdio("kill-all", "kill-all"), stdio("b", "b")]
        started = time.monotonic()
        report = run_tests(program, tests, timeout_s=1.0)
        outcome = [r.outcome.value for r in report.results]
        # the supervisor is the PID namespace's init: signals from inside it are ignored
        assert outcome[0] == "passed" and outcome[1] == "passed" and outcome[3] == "passed"
        assert time.monotonic() - started < 1.0 + runner.GRACE_S + 3.0
        assert bystander.poll() is None
        assert Path(f"/proc/{bystander.pid}/stat").read_text().split()[2] != "T"
    finally:
        bystander.kill()
        bystander.wait()


def test_a_stopped_supervisor_costs_one_test_only():
    """Should anything stop the supervisor, the host's own deadline replaces the sandbox for the next test."""
    import threading

    stopped = []

    def stop_supervisor():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = [p for p in host_processes(lambda uid, cmd: UID_FIRST <= uid < UID_FIRST + UID_COUNT
                                               and cmd.startswith("/usr/bin/python3")) if _ours_or_orphaned(p[0])]
            if len(found) >= 2:  # the supervisor and the test's child (a fork of it): the test is running
                os.kill(min(found)[0], signal.SIGSTOP)
                stopped.append((min(found)[0], time.monotonic()))
                return
            time.sleep(0.01)

    # test "a" runs 2.5 s (it passes unless its supervisor is stopped meanwhile): the stopper's window to find it by
    # scanning /proc (0.3 s was too short for a scan on a loaded machine); the sandbox has no /proc for the test to
    # wait on its supervisor's state instead. 5 s per test: "a" passes in time when nothing stops it, under load too.
    program = "import time\nx = input()\nif x == 'a':\n    time.sleep(2.5)\nprint(x)"
    stopper = threading.Thread(target=stop_supervisor)
    stopper.start()
    started = time.monotonic()
    report = run_tests(program, [stdio("a", "a"), stdio("b", "b")], timeout_s=5.0)
    stopper.join()
    assert len(stopped) == 1 and stopped[0][1] < started + 5.0, "the stopper found no supervisor while test a ran"
    assert [r.outcome.value for r in report.results] == ["timeout", "passed"]
    assert time.monotonic() - started < 5.0 + runner.GRACE_S + 2.0


def test_runs_unprivileged_under_seccomp_without_new_privileges():
    program = textwrap.dedent("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        # PR_GET_NO_NEW_PRIVS, PR_GET_SECCOMP (2: filter mode), PR_CAPBSET_READ of CAP_SYS_ADMIN
        results = [libc.prctl(39, 0, 0, 0, 0), libc.prctl(21, 0, 0, 0, 0), os.getuid() != 0, os.path.exists("/proc/1")]
        for call in (lambda: os.setuid(0), lambda: os.chroot("/tmp")):
            try:
                call()
                results.append("allowed")
            except OSError as exc:
                results.append(exc.errno)
        results.append(libc.ptrace(16, 1, 0, 0))  # PTRACE_ATTACH to the supervisor
        results.append(libc.unshare(0x10000000))  # CLONE_NEWUSER
        results.append(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
        print(*results)
    """)
    # no_new_privs, seccomp filter, not root, no /proc; uid 0 does not exist here (EINVAL), chroot EPERM; the rest -1
    report = run_tests(program, [stdio("", "1 2 True False 22 1 -1 -1 -1")])
    assert report.pass_fraction == 1.0, report.results[0].detail


# ------------------------------------------------------------------------------------------------ forged passes
SQUARE_TESTS = [check("assert f(3) == 9"), check("assert abs(f(4) - 16) < 1e-9"),
                check("def check(candidate):\n    assert candidate(5) == 25\ncheck(f)"),
                check("assert all(map(lambda x: f(x) == x * x, [6, 7])) and list(map(f, [8])) == [64]")]
CHEATS = {
    "always-equal object": "class E:\n    def __eq__(self, other): return True\n    __ne__ = __lt__ = __bool__ = __eq__\n"
                           "    def __sub__(self, other): return 0\n    def __abs__(self): return 0\n"
                           "def f(x):\n    return E()",
    "int subclass": "class I(int):\n    def __eq__(self, other): return True\n    def __sub__(self, other): return I(0)\n"
                    "    def __abs__(self): return 0\n    __hash__ = int.__hash__\ndef f(x):\n    return I(0)",
    "list subclass": "class L(list):\n    def __eq__(self, other): return True\n    __ne__ = __lt__ = __eq__\n"
                     "def f(x):\n    return L()",
    "exit before the tests": "import sys\ndef f(x):\n    return 0\nsys.exit(0)",
    "exit inside the call": "import os\ndef f(x):\n    os._exit(0)",
    "exit at interpreter end": "import atexit, os\natexit.register(lambda: os._exit(0))\ndef f(x):\n    raise SystemExit(0)",
    "patched builtins": "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.AssertionError = KeyError\ndef f(x):\n    return 0",
    "shadowed builtin": "def abs(x):\n    return 0\ndef f(x):\n    return 0",
    "patched harness": "import sys, json\njson.dumps = lambda *a, **k: '{\"value\": [\"bool\", true]}'\n"
                       "frame = sys._getframe()\nwhile frame.f_back:\n    frame = frame.f_back\n"
                       "frame.f_globals['encode'] = lambda *a, **k: ['int', '0x9']\ndef f(x):\n    return 0",
    "forged supervisor frame": "import os, json\ndef f(x):\n    data = b'S' + json.dumps({'op': 'done', 'ended_by_host': True, 'returncode': 0}).encode()\n"
                               "    os.write(4, len(data).to_bytes(4, 'big') + data)\n    return 0",
    "printed markers": "def f(x):\n    print('passed'); print('All tests passed'); return 'passed'",
    "StopIteration ends map() early": "def f(x):\n    raise StopIteration",
    "huge Fraction": "from fractions import Fraction\ndef f(x):\n    v = Fraction(x * x)\n"
                     "    v._numerator, v._denominator = 3 ** 2_000_000, 7 ** 1_500_000  # the host must not gcd them\n"
                     "    return v",
    "raises the expected exception": "def f(x):\n    raise AssertionError('ok')",
    "deep nesting": "def f(x):\n    v = []\n    for _ in range(100000):\n        v = [v]\n    return v",
}


def test_honest_square_passes_every_test():
    assert run_tests("def f(x):\n    return x * x", SQUARE_TESTS).pass_fraction == 1.0


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_failing_program_cannot_forge_a_pass(cheat):
    report = run_tests(CHEATS[cheat], SQUARE_TESTS, timeout_s=2.0)
    assert report.pass_fraction == 0.0, [(r.outcome.value, r.detail) for r in report.results]


def test_stdio_expected_outputs_never_enter_the_sandbox(token):
    program = textwrap.dedent("""
        import gc, os, re
        pattern = re.compile(r"TOKEN-[0-9a-f]{32}")
        texts = [repr(o) for o in gc.get_objects() if isinstance(o, (str, bytes, dict))]
        for root, dirs, files in os.walk("/"):
            dirs[:] = [d for d in dirs if root + d not in ("/usr", "/proc", "/sys", "/dev")]
            for name in files:
                try:
                    texts.append(open(os.path.join(root, name), "rb").read(1 << 20).decode(errors="replace"))
                except OSError:
                    pass
        for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
            for name in ("cmdline", "environ"):
                try:
                    texts.append(open(f"/proc/{pid}/{name}", "rb").read().decode(errors="replace"))
                except OSError:
                    pass
        found = [m for text in texts for m in pattern.findall(text)]
        print(found[0] if found else "nothing")
    """)
    report = run_tests(program, [stdio("", token)])
    assert report.results[0].detail == f"expected '{token}', got 'nothing'"


def test_parallel_attackers_do_not_disturb_honest_jobs():
    honest = {"program": "print(sum(map(int, input().split())))", "tests": [stdio("1 2", "3")] * 3, "timeout_s": 2}
    bomb = {"program": "import os\nwhile True:\n    os.fork()", "tests": [stdio("", "")], "timeout_s": 1}
    flood = {"program": "while True:\n    print('x' * 1000)", "tests": [stdio("", "")], "timeout_s": 1}
    reports = run_tests_batch([bomb, honest, flood, honest, bomb, honest], workers=3)
    assert [r.pass_fraction for r in reports] == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]


def test_sandbox_uid_slots_differ_between_concurrent_sandboxes():
    program = "import os, time\ntime.sleep(0.5)\nprint(os.getuid())"
    jobs = [{"program": program, "tests": [stdio("", "")]} for _ in range(3)]
    reports = run_tests_batch(jobs, workers=3)
    uids = {r.results[0].detail.split("got ")[1] for r in reports}
    assert len(uids) == (3 if os.geteuid() == 0 else 1)


# ------------------------------------------------------------------------------------------------ the trainer's boundary
# Since the judge process: the trainer only reads fixed-layout verdicts, so nothing below may cost it more
# than a constant per test, turn a failing program's 0.0 into None, or raise out of the verifier.
def raw_reply(payload: str) -> str:
    """Program code that writes `payload` (bytes expression) to the judge as if it were the call's reply."""
    return f"import os\n    data = {payload}\n    os.write(4, len(data).to_bytes(4, 'big') + data)\n"


def trainer_cost(function):
    """(result, CPU seconds, RSS growth in MiB) of `function()` in this (the trainer's) process."""
    def rss_mib():
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    before, rss = resource.getrusage(resource.RUSAGE_SELF), rss_mib()
    result = function()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return result, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), rss_mib() - rss


def test_the_judge_never_imports_a_module_the_program_names(tmp_path, monkeypatch):
    names = ["lib2to3.__main__", "unittest.__main__", "venv.__main__", "this"]
    program = "import types, heapq as hq\n" + "".join(f"m{i} = types.ModuleType({n!r})\n" for i, n in enumerate(names)) \
        + "def add(a, b):\n    return a - b\n"
    # control: importing the name the program announces raises SystemExit (what ended the training run)
    done = subprocess.run([sys.executable, "-c", "import importlib\ntry:\n    importlib.import_module('lib2to3.__main__')\n"
                           "except SystemExit:\n    print('SystemExit')"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.stdout.strip() == "SystemExit"
    monkeypatch.chdir(tmp_path)
    reports = run_tests_batch([{"program": program, "tests": [check("assert add(2, 3) == 5"),
                                                              check("assert hq.nsmallest(1, [3, 1]) == [1]"),
                                                              check("assert m0 is not None")]}])
    assert [r.outcome.value for r in reports[0].results] == ["wrong_answer", "passed", "wrong_answer"]
    assert "NameError" in reports[0].results[2].detail and list(tmp_path.iterdir()) == []


def test_hash_colliding_values_cost_the_judge_not_the_trainer():
    modulus = sys.hash_info.modulus  # every multiple of it hashes to 0
    forged = raw_reply("json.dumps({'value': ['set'] + [['int', hex(i * %d)] for i in range(200_000)]}).encode()" % modulus)
    program = f"import json, time\ndef f():\n    {forged}    time.sleep(30)\ndef g():\n    return 1\n"
    # control: decoding such values in-process takes quadratic time
    started = time.process_time()
    set(range(6000))
    distinct = time.process_time() - started
    started = time.process_time()
    set(i * modulus for i in range(6000))
    assert time.process_time() - started > 20 * max(distinct, 1e-4)
    honest = {"program": "def g():\n    return 1", "tests": [check("assert g() == 1")] * 4, "timeout_s": 2.0}
    attack = {"program": program, "tests": [check("assert f() == set()"), check("assert g() == 1")], "timeout_s": 1.0}
    reports, cpu, rss = trainer_cost(lambda: run_tests_batch([attack, honest], workers=2))
    assert [r.outcome.value for r in reports[0].results] == ["timeout", "passed"]  # a fresh judge takes test 2
    assert reports[0].error is None and reports[1].pass_fraction == 1.0
    assert cpu < 0.5 and rss < 32, (cpu, rss)


@pytest.mark.parametrize("junk", [
    "b'\\xff not json'", "b'[1, 2, 3]'", "b'{\"value\": [\"set\", [\"nope\"]]}'",
    "json.dumps({'value': ['int', '0x9'], 'mutated': [None]}).encode() + b'trailing junk'",
    "b'S' + json.dumps({'op': 'done', 'ended_by_host': True, 'returncode': 0}).encode()",
])
def test_junk_frames_score_zero_never_none(junk):
    program = f"import json, os, time\ndef f(x):\n    {raw_reply(junk)}    time.sleep(0.2)\n    return x * x\n" \
              "def g():\n    os.write(4, b'\\x7f\\xff\\xff\\xffjunk')\n    return 1\n"  # a huge header
    # control: the junk reaches the reader of the sandbox's frames (which used to be the trainer: 'verifier error')
    from trl_r1.verifiers.code.sandbox import Sandbox, SandboxLost
    with Sandbox() as sandbox:
        deadline = time.monotonic() + 10
        sandbox.request({"op": "load", "language": "python", "source": program}, deadline)
        sandbox.send({"op": "run", "mode": "assert", "timeout_s": 2.0, "max_output": 1 << 20}, deadline)
        sandbox.receive(deadline)  # the announcement of the program's names
        sandbox.send({"op": "call", "target": 0, "args": [["int", "0x3"]], "kwargs": []}, deadline)
        try:
            kind, reply = sandbox.receive(deadline)
            well_formed = kind == "C" and isinstance(reply, dict) and reply.get("value") == ["int", "0x9"]
        except SandboxLost:
            well_formed = False
        assert not well_formed
    from trl_r1.rewards.code import CodeReward
    extra = {}
    completion = f"<answer>```python\n{program}```</answer>"
    tests = [check("assert f(3) == 9"), check("assert g() == 1\nassert f(2) == 4")]
    assert CodeReward()(completions=[completion], tests=[tests], log_extra=extra.__setitem__) == [0.0], extra


def test_a_judge_that_dies_or_raises_fails_its_test_only():
    """A judge killed mid-test (as by the OOM killer), or a BaseException in it, fails one test; the
    trainer starts a fresh judge for the rest, and nothing escapes the verifier."""
    program = "def f():\n    return 2\ndef boom():\n    raise SystemExit(0)\n"  # ends the program's process: a crash
    tests = [check("assert f() == 2"), check("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"),
             check("raise KeyboardInterrupt"), check("try:\n    boom()\nexcept Exception:\n    pass\nassert f() == 2"),
             check("assert f() == 2")]
    report = run_tests_batch([{"program": program, "tests": tests}])[0]
    assert [r.outcome.value for r in report.results] == ["passed", "crash", "crash", "crash", "passed"], report
    assert report.error is None and "judge" in report.results[1].detail
    # control: in one process, the same KeyboardInterrupt would have ended the caller
    with pytest.raises(KeyboardInterrupt):
        exec(compile(tests[2]["code"], "<test>", "exec"), {})


def test_sysv_ipc_and_memfd_are_denied(monkeypatch):
    program = textwrap.dedent("""
        import ctypes, mmap, os
        libc = ctypes.CDLL(None, use_errno=True)
        out = []
        shm = libc.shmget(0, 1 << 20, 0o1600)  # IPC_PRIVATE, 1 MiB (the attack asked for 1 GiB)
        out.append("shm" if shm >= 0 else ctypes.get_errno())
        if shm >= 0:
            libc.shmctl(shm, 0, None)  # IPC_RMID: the control run must leave nothing on the host
        sem = libc.semget(0, 1, 0o1600)
        out.append("sem" if sem >= 0 else ctypes.get_errno())
        if sem >= 0:
            libc.semctl(sem, 0, 0)
        msg = libc.msgget(0, 0o1600)
        out.append("msg" if msg >= 0 else ctypes.get_errno())
        if msg >= 0:
            libc.msgctl(msg, 0, None)
        try:
            fd = os.memfd_create("x")
            os.ftruncate(fd, 1 << 20)
            mmap.mmap(fd, 1 << 20)[0] = 1
            out.append("memfd")
        except OSError as exc:
            out.append(exc.errno)
        print(*out)
    """)
    control = unsandboxed(monkeypatch, program, [stdio("", "shm sem msg memfd")])
    assert control.pass_fraction == 1.0, control.results[0].detail  # the host's kernel grants them all
    report = run_tests(program, [stdio("", "1 1 1 1")])  # EPERM from seccomp
    assert report.pass_fraction == 1.0, report.results[0].detail


def test_state_is_wiped_between_tests_whatever_the_permissions():
    program = textwrap.dedent("""
        import os, shutil
        x = input()
        if x == "plant":
            for root in ("/tmp", "/dev/shm", "."):
                os.makedirs(f"{root}/keep/inner", exist_ok=True)
                open(f"{root}/keep/inner/state", "w").write("1")
                os.chmod(f"{root}/keep/inner", 0)
                os.chmod(f"{root}/keep", 0o500)
            shutil.rmtree("/tmp/keep", ignore_errors=True)  # control: the program's own uid cannot remove it
            print("planted" if os.path.exists("/tmp/keep") else "removable")
        else:  # the cwd is /tmp/test-N: walking /tmp covers the earlier tests' "." and ".." too
            print([os.path.join(path, name) for root in ("/tmp", "/dev/shm") for path, dirs, files in os.walk(root)
                   for name in dirs + files if name == "keep"] or "clean")
    """)
    report = run_tests(program, [stdio("plant", "planted"), stdio("check", "clean"), stdio("check", "clean")])
    assert [r.outcome.value for r in report.results] == ["passed"] * 3, report


def test_output_caps_reveal_nothing_about_the_expected_output():
    program = "import sys\nsys.stdout.write('y' * (2 << 20))"
    short, long = stdio("", "n"), stdio("", "n" * (3 << 20))
    # control: a cap derived from the expected output (what the verifier did) lets the program tell them apart
    derived = [run_tests(program, [t], max_output_bytes=max(1 << 20, 4 * len(t["output"]))).results[0].outcome.value
               for t in (short, long)]
    assert derived == ["limit_exceeded", "wrong_answer"]
    report = run_tests(program, [short, long], max_output_bytes=1 << 20)
    assert [r.outcome.value for r in report.results] == ["limit_exceeded", "limit_exceeded"]


def test_the_trainers_cost_per_program_is_bounded_whatever_the_program_does():
    """An adversarial batch (huge replies, floods, forged frames, collisions) vs honest programs: the trainer
    pays about the same per program, and the judges did the decoding."""
    big = "def f():\n    return ['x' * 1000 for _ in range(15_000)]\n"  # ~15 MiB reply
    adversarial = [
        {"program": big, "tests": [check("assert len(f()) == 15_000")] * 3, "timeout_s": 20},
        {"program": "def f():\n    while True:\n        yield 'x' * 4096\n", "tests": [check("assert list(f()) == []")]},
        {"program": "while True:\n    print('x' * 4096)", "tests": [stdio("", "x")], "timeout_s": 1},
        {"program": "import os\ndef f():\n    os.write(4, b'\\x00\\x00\\x00\\x05junk!')\n    return 1",
         "tests": [check("assert f() == 1")] * 3},
    ]
    honest = [{"program": "def f():\n    return 1", "tests": [check("assert f() == 1")] * 3}] * len(adversarial)
    runner.close_idle_judges()
    _, honest_cpu, _ = trainer_cost(lambda: run_tests_batch(honest, workers=2))
    baseline = judge_peaks_mib()
    reports, cpu, rss = trainer_cost(lambda: run_tests_batch(adversarial, workers=2))
    assert reports[0].pass_fraction == 1.0 and all(r.pass_fraction == 0.0 for r in reports[1:]), reports
    assert cpu < 0.1 * len(adversarial) + 2 * honest_cpu and rss < 32, (cpu, honest_cpu, rss)
    print(f"trainer: {cpu:.3f} s CPU for {len(adversarial)} adversarial programs ({honest_cpu:.3f} s for as many "
          f"honest ones), RSS {rss:+.1f} MiB; judges' peak RSS {baseline} -> {judge_peaks_mib()} MiB")
    assert max(judge_peaks_mib()) > max(baseline) + 30  # the decoding happened in a judge


def judge_peaks_mib():
    from trl_r1.verifiers.code.runner import Judge
    return [int(line.split()[1]) >> 10 for judge in Judge._idle
            for line in Path(f"/proc/{judge.process.pid}/status").read_text().splitlines() if line.startswith("VmHWM")]


def copied_at_the_boundary(program, test):
    """The control run: the program in-process, but every argument and result copied (as the values crossing
    the sandbox boundary are), with only top-level in-place changes copied back (the old rule)."""
    import copy
    namespace = {}
    exec(program, namespace)

    def copying(function):
        def call(*args):
            copies = copy.deepcopy(args)
            result = function(*copies)
            for arg, changed in zip(args, copies):
                if type(arg) is list and arg != changed:
                    arg[:] = changed
            return copy.deepcopy(result)
        return call
    env = {name: copying(value) if callable(value) else value for name, value in namespace.items()}
    try:
        exec(test, env)
    except AssertionError:
        return False
    return True


IDENTITY_CHEAT = textwrap.dedent("""
    class Node:
        def __init__(self, val):
            self.val = val
    def clone(node):
        return node  # wrong: no copy
    def deep_copy(x):
        return x  # wrong: no copy
""")


def test_identity_checks_are_answered_truthfully_or_fail_closed():
    tests = ["n = Node(1)\nc = clone(n)\nassert c is not n and c.val == 1",
             "a = [1, [2, 3]]\nb = deep_copy(a)\nassert b == a and b is not a and b[1] is not a[1]",
             "n = Node(1)\nassert id(clone(n)) != id(n)"]
    # control: with every value a fresh copy, identity checks hold for a clone that returns its input
    assert copied_at_the_boundary(IDENTITY_CHEAT, tests[0]) and copied_at_the_boundary(IDENTITY_CHEAT, tests[1])
    report = run_tests(IDENTITY_CHEAT, [check(t) for t in tests])
    assert report.pass_fraction == 0.0, [(r.outcome.value, r.detail) for r in report.results]
    # honest programs: sandbox objects compare by handle (one per object), the test's own objects come back as themselves
    honest = textwrap.dedent("""
        import enum
        class Node:
            def __init__(self, val):
                self.val = val
        class Color(enum.Enum):
            RED = 1
        def clone(node):
            return Node(node.val)
        def same(x):
            return x
        def pick(i):
            return Color(i)
        def nothing():
            pass
        import copy
        def deep_copy(x):
            return copy.deepcopy(x)
        CACHE = []
        def cached():
            return CACHE
    """)
    tests = ["n = Node(1)\nc = clone(n)\nassert c is not n and c.val == 1 and same(n) is n",
             "a = [1, [2]]\nassert same(a) is a and same(a)[1] is a[1] and same(a) is not [1, [2]]",
             "assert pick(1) is Color.RED and nothing() is None and pick(1) is not None",
             "assert 0 < 1 is not None is not False",  # chained comparisons keep Python's meaning
             # a copy out of the sandbox has no known identity: fail closed, and hashing an object would
             # use the judge's identity instead of the program's __hash__/__eq__
             "a = [1, [2]]\nb = deep_copy(a)\nassert b == a and b is not a and b[1] is not a[1]",
             "assert cached() is not cached()",  # the same list in the sandbox: unknown here, so a TypeError
             "assert len({clone(Node(1)), clone(Node(1))}) == 2"]
    results = run_tests(honest, [check(t) for t in tests]).results
    assert [r.outcome.value for r in results] == ["passed"] * 5 + ["wrong_answer"] * 2
    assert results[5].detail.startswith("TypeError") and results[6].detail.startswith("TypeError")


def test_in_place_changes_reach_the_test_at_any_depth():
    wrong = textwrap.dedent("""
        def smallest_sorted(t):
            t[0].sort()  # wrong: sorts the caller's list
            return t[0]
        def sorted_values(d):
            d['k'].sort()  # wrong: sorts the caller's list
            return d['k']
        def replace_value(d):
            d['k'] = sorted(d['k'])  # the dict changes, the caller's inner list does not
    """)
    tests = ["t = ([3, 1, 2],)\nassert smallest_sorted(t) == [1, 2, 3]\nassert t[0] == [3, 1, 2]",
             "inner = [3, 1, 2]\nd = {'k': inner}\nassert sorted_values(d) == [1, 2, 3]\nassert inner == [3, 1, 2]",
             "inner = [3, 1, 2]\nd = {'k': inner}\nreplace_value(d)\nassert inner == [1, 2, 3]"]
    # control: with arguments copied and only top-level lists copied back, "must not modify" tests pass
    assert copied_at_the_boundary(wrong, tests[0]) and copied_at_the_boundary(wrong, tests[1])
    report = run_tests(wrong, [check(t) for t in tests])
    assert report.pass_fraction == 0.0, [(r.outcome.value, r.detail) for r in report.results]
    honest = textwrap.dedent("""
        def sort_all(groups):
            for g in groups:
                g.sort()
        def push(state):
            state['stack'].append(len(state['stack']))
        def both(a, b):
            a.append(1)
            return a is b
    """)
    tests = ["g = ([2, 1], [4, 3])\nsort_all(g)\nassert g == ([1, 2], [3, 4])",
             "s = []\nstate = {'stack': s}\npush(state)\npush(state)\nassert s == [0, 1] and state['stack'] is s",
             "a = []\nassert both(a, a) and a == [1]\nb = []\nassert not both(b, [])"]
    assert [r.outcome.value for r in run_tests(honest, [check(t) for t in tests]).results] == ["passed"] * 3


def test_scratch_directory_metadata_is_reset_between_tests():
    program = textwrap.dedent("""
        import os
        seen = []
        for d in ("/tmp", "/dev/shm"):
            try:
                seen.append(os.getxattr(d, "user.k").decode())
            except OSError:
                pass
            seen.append(str(os.stat(d).st_mtime_ns == 123456789000000042))
            if input() == "set":
                os.setxattr(d, "user.k", b"carried")
                os.utime(d, ns=(123456789000000042, 123456789000000042))
                seen.append("set:" + os.getxattr(d, "user.k").decode() + str(os.stat(d).st_mtime_ns == 123456789000000042))
        print(" ".join(seen))
    """)
    report = run_tests(program, [stdio("set\nset", "x"), stdio("get\nget", "False False")])
    # control: within a test both the xattr and the time stick (tmpfs supports user xattrs)
    assert report.results[0].detail.endswith("got 'False set:carriedTrue False set:carriedTrue'"), report.results[0].detail
    assert report.results[1].outcome.value == "passed", report.results[1].detail


def test_the_supervisor_ignores_sigint_and_host_local_files_are_hidden():
    program = textwrap.dedent("""
        import os, signal, sys, time
        if input() == "init":
            os.kill(1, signal.SIGINT)  # the supervisor is PID 1 of the namespace
            time.sleep(0.2)
        else:
            os.kill(os.getpid(), signal.SIGINT)  # control: SIGINT is delivered as in a plain interpreter
        print(os.listdir("/usr/local"))
    """)
    report = run_tests(program, [stdio("init", "[]"), stdio("self", "[]"), stdio("init", "[]")])
    assert [r.outcome.value for r in report.results] == ["passed", "crash", "passed"]
    assert "KeyboardInterrupt" in report.results[1].stderr


def test_scratch_inodes_are_bounded():
    program = textwrap.dedent("""
        import os
        n = int(input())
        for i in range(n):
            os.mkdir("/dev/shm/%x" % i)
        print(len(os.listdir("/dev/shm")))
    """)
    # control: a few thousand entries are fine; empty directories cost no tmpfs bytes, only kernel memory
    report = run_tests(program, [stdio("2000", "2000"), stdio("10000000", "")], timeout_s=5.0)
    assert [r.outcome.value for r in report.results] == ["passed", "limit_exceeded"]
    # the inode cap, not the 5 s limit, stopped it (a wall-clock bound tighter than the limit failed under load)
    assert report.results[1].detail == "too many files in the scratch space" and report.results[1].wall_s < 5.0


# Red team (round 3): tests of one job share the sandbox's PID 1 and tmpfs, so a test can leave state in what
# the supervisor's wipe does not reset and a later test can read it back. Each forges a pass of a test that
# the same program fails when that test runs alone.
CARRIERS = {
    # prlimit(2) on the supervisor (same uid): soft limits it never resets, inherited by the next test's child
    "supervisor rlimits": textwrap.dedent("""
        import resource
        _SLOTS = [10, 15]  # RLIMIT_LOCKS, RLIMIT_RTTIME: hard limit unlimited, soft limit free to choose
        def remember(n):
            for r in _SLOTS:
                resource.prlimit(1, r, ((n & ((1 << 62) - 1)) + 1, resource.prlimit(1, r)[1]))
                n >>= 62
        def recall():
            n = 0
            for r in reversed(_SLOTS):
                n = (n << 62) | (resource.getrlimit(r)[0] - 1)
            return n
    """),
    # the tmpfs inode counter of /tmp, never reset by removing files: n creations move it by n
    "tmpfs inode numbers": textwrap.dedent("""
        import os
        def _ino():
            open("p", "w").close()
            n = os.stat("p").st_ino
            os.unlink("p")
            return n
        _START = _ino()
        def remember(n):
            for _ in range(n):
                open("x", "w").close()
                os.unlink("x")
        def recall():  # the supervisor's own entries per test (test-N directory, counter probes) and this probe
            return _START - 8
    """),
    # the PID namespace's counter: n forks in one test move the next test's PID by n
    "pid numbers": textwrap.dedent("""
        import os
        def remember(n):
            for _ in range(n):
                child = os.fork()
                if child == 0:
                    os._exit(0)
                os.waitpid(child, 0)
        def recall():
            return os.getpid() - 4  # the first test's process, its forks, the supervisor's probe fork, this one
    """),
}


@pytest.mark.parametrize("carrier", sorted(CARRIERS))
def test_no_state_carries_across_tests_through_pid_1_or_kernel_counters(carrier):
    program = CARRIERS[carrier]
    tests = [check("assert remember(1994) == 'MCMXCIV'"), check("assert recall() == 1994")]
    # control: on its own, the second test fails (the program computes nothing); that the two together
    # forged a pass before the fix, and do in one sandbox kept as it is, see the two tests below
    assert run_tests(program, tests[1:], timeout_s=5.0).pass_fraction == 0.0
    report = run_tests(program, tests, timeout_s=5.0)
    assert [r.outcome.value for r in report.results] == ["wrong_answer", "wrong_answer"], report


def in_one_sandbox(program, inputs, seccomp=None):
    """stdio runs of `program` in one sandbox, as a job's tests run (the judge would replace a sandbox whose
    supervisor says it is not clean; here it is kept): (stdout, the supervisor's "clean") per run."""
    from trl_r1.verifiers.code.sandbox import Sandbox
    with Sandbox(seccomp=seccomp) as sandbox:
        deadline = time.monotonic() + 30
        sandbox.request({"op": "load", "language": "python", "source": program}, deadline)
        replies = [sandbox.request({"op": "run", "mode": "stdio", "timeout_s": 5.0, "stdin": text}, deadline)
                   for text in inputs]
    return [(reply["stdout"].strip(), reply["clean"]) for reply in replies]


def without_self_only_rules(monkeypatch):
    """The seccomp filter without its rules that keep limit and scheduling calls to the caller (the old filter)."""
    from trl_r1.verifiers.code import sandbox
    monkeypatch.setattr(sandbox, "_SELF_ONLY_SYSCALLS", ())
    return sandbox.seccomp_program.__wrapped__()


def test_a_test_changes_its_own_limits_and_scheduling_never_pid_1s(monkeypatch):
    program = textwrap.dedent("""
        import os, resource
        CPUS = os.sched_getaffinity(0)
        OWN = [lambda: resource.setrlimit(15, (7, resource.getrlimit(15)[1])), lambda: os.nice(1),
               lambda: os.setpriority(os.PRIO_PROCESS, 0, 2), lambda: os.sched_setaffinity(0, CPUS),
               lambda: os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0)),
               lambda: resource.prlimit(0, 10, (7, resource.getrlimit(10)[1]))]
        PID_1 = [lambda: resource.prlimit(1, 15, (7, resource.RLIM_INFINITY)),
                 lambda: os.setpriority(os.PRIO_PROCESS, 1, 3), lambda: os.sched_setaffinity(1, CPUS),
                 lambda: os.sched_setscheduler(1, os.SCHED_BATCH, os.sched_param(0)),
                 lambda: os.sched_setparam(1, os.sched_param(0))]
        GROUP_OR_USER = [lambda: os.setpriority(os.PRIO_PGRP, 0, 3), lambda: os.setpriority(os.PRIO_USER, 0, 3)]
        def attempt(change):
            try:
                change()
                return "ok"
            except OSError as exc:
                return str(exc.errno)
        print(*[attempt(change) for change in {"pid 1": PID_1, "all": OWN + PID_1 + GROUP_OR_USER}[input()]])
    """)
    # control: the old filter let a test change PID 1's (only PID 1's calls: the others would reach the uid's
    # processes outside the sandbox when the host is not root)
    assert in_one_sandbox(program, ["pid 1"], without_self_only_rules(monkeypatch))[0][0] == "ok " * 4 + "ok"
    assert in_one_sandbox(program, ["all"]) == [("ok " * 6 + "1 " * 6 + "1", True)]  # EPERM but on itself


@pytest.mark.parametrize("carrier", ["prlimit", "nice", "affinity", "scheduler", "fork", "thread", "file", "shm"])
def test_the_supervisor_replaces_a_sandbox_whose_next_test_would_start_differently(monkeypatch, carrier):
    """Defence in depth behind seccomp (the old filter here) for PID 1's state, and the only defence for
    the PID and tmpfs inode counters: a test that moved anything the next one inherits is not clean."""
    if carrier == "affinity" and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no affinity to change")
    program = textwrap.dedent("""
        import os, resource, threading
        carrier = input()
        if carrier == "prlimit":
            resource.prlimit(1, 15, (1994, resource.RLIM_INFINITY))
        elif carrier == "nice":
            os.setpriority(os.PRIO_PROCESS, 1, 5)
        elif carrier == "affinity":
            os.sched_setaffinity(1, {min(os.sched_getaffinity(0))})
        elif carrier == "scheduler":
            os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))
        elif carrier == "fork":
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        elif carrier == "thread":
            thread = threading.Thread(target=int)
            thread.start()
            thread.join()
        elif carrier in ("file", "shm"):
            path = "x" if carrier == "file" else "/dev/shm/x"
            open(path, "w").close()
            os.unlink(path)
        elif carrier == "read":
            print(resource.getrlimit(15)[0], os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)),
                  os.sched_getscheduler(0), os.getpid(), os.stat(".").st_ino,
                  os.stat(open("/dev/shm/y", "w").name).st_ino)
    """)
    seccomp = without_self_only_rules(monkeypatch)
    (_, honest_clean), (baseline, _) = in_one_sandbox(program, ["none", "read"], seccomp)
    assert honest_clean  # an honest test costs no new sandbox
    (_, clean), (carried, _) = in_one_sandbox(program, [carrier, "read"], seccomp)
    assert carried != baseline  # control: in a sandbox kept as it is, the next test sees the change
    assert not clean  # so the judge replaces it


@pytest.mark.xfail(strict=True, reason="known limit (docs/code_reward.md, residual channels): whether the sandbox "
                                       "was replaced after a test carries one bit to the next test")
def test_no_bit_carries_across_tests_through_the_sandbox_being_replaced():
    program = textwrap.dedent("""
        import os
        def remember(bit):
            if not bit:  # a fork moves the PID counter: the judge starts the next test in a fresh sandbox
                pid = os.fork()
                if pid == 0:
                    os._exit(0)
                os.waitpid(pid, 0)
        def recall():
            return int(os.getpid() != 2)  # the first test's process in a fresh sandbox is PID 2
    """)
    tests = [check("assert remember(1) == 'I'"), check("assert recall() == 1")]
    assert run_tests(program, tests[1:]).pass_fraction == 0.0  # control: on its own, the second test fails
    report = run_tests(program, tests)
    assert [r.outcome.value for r in report.results] == ["wrong_answer", "wrong_answer"], report



@pytest.mark.xfail(strict=True, reason="known limit (red team 3): a test's duration is read by the next test against "
                                       "a timestamp fixed when the sandbox started (bwrap's /dev): several bits per test")
def test_no_value_carries_across_tests_through_how_long_a_test_took():
    program = textwrap.dedent("""
        import os, time
        SLOT = 1.0  # 0.25 s: a loaded machine's start of the next test could take longer than a slot (strict xfail)
        def elapsed():  # since bwrap made /dev, i.e. since the sandbox started (no test can change it)
            return (time.time_ns() - os.stat("/dev").st_mtime_ns) / 1e9
        def to_roman(n):  # implements nothing: ends when (n + 1) slots have passed since the sandbox started
            time.sleep(max(0.0, (n + 1) * SLOT + 0.02 - elapsed()))
            return "?"
        def from_roman(s):
            return int(elapsed() // SLOT) - 1
    """)
    tests = [check("assert to_roman(3) == 'III'"), check("assert from_roman('III') == 3")]
    assert run_tests(program, tests[1:]).pass_fraction == 0.0  # control: on its own, the second test fails
    report = run_tests(program, tests)
    assert [r.outcome.value for r in report.results] == ["wrong_answer", "wrong_answer"], report

def test_honest_objects_format_and_convert_as_in_a_plain_interpreter():
    program = textwrap.dedent("""
        class V:
            def __init__(self, v):
                self.v = v
            def __str__(self):
                return "V(%d)" % self.v
            __repr__ = __str__
            def __format__(self, spec):
                return format(self.v, spec)
            def __int__(self):
                return self.v
            def __float__(self):
                return self.v / 2
            def __index__(self):
                return self.v
            def __iter__(self):  # `in` iterates the object and compares here (a __contains__ would decide it)
                yield self.v
    """)
    tests = [check("assert str(V(3)) == 'V(3)'"), check("assert repr([V(3)]) == '[V(3)]'"), check("assert 3 in V(3)"),
             check("assert int(V(3)) == 3"), check("assert f'{V(3)}|{V(3):>3}' == '3|  3' and '%s' % V(3) == 'V(3)'"),
             check("assert float(V(3)) == 1.5 and [10, 20, 30, 40][V(3)] == 40 and hex(V(3)) == '0x3'")]
    assert copied_at_the_boundary(program, "\n".join(t["code"] for t in tests))  # control: they pass in-process
    report = run_tests(program, tests)
    assert report.pass_fraction == 1.0, [(r.outcome.value, r.detail) for r in report.results]


def test_an_objects_text_numbers_and_membership_cannot_forge_a_pass():
    program = textwrap.dedent("""
        class S(str):
            def __eq__(self, other):
                return True
            __hash__ = str.__hash__
        class Rigged:
            def __str__(self):
                return S("no")
            __repr__ = __str__
            def __format__(self, spec):
                return S("no")
            def __contains__(self, x):
                return True
        def f():
            return Rigged()
    """)
    tests = [check("assert str(f()) == 'yes'"), check("assert repr(f()) == 'yes'"), check("assert f'{f()}' == 'yes'"),
             check("assert 'x' in f()")]
    assert all(copied_at_the_boundary(program, t["code"]) for t in tests)  # control: each passes in-process
    report = run_tests(program, tests)
    assert report.pass_fraction == 0.0, [(r.outcome.value, r.detail) for r in report.results]


def test_an_objects_text_in_a_failure_message_fails_its_test_only():
    """``assert ok, node`` formats the program's object for the verdict: in the sandbox, under its limits."""
    program = textwrap.dedent("""
        import os
        class V:
            def __str__(self):
                return "V!"
        class Raises:
            def __str__(self):
                raise ValueError("no text")
        class Exits:
            def __str__(self):
                os._exit(0)
        class Huge:
            def __str__(self):
                return "x" * (20 << 20)
    """)
    tests = [check(f"assert False, {name}()") for name in ("V", "Raises", "Exits", "Huge", "V")]
    report = run_tests(program, tests)
    assert [(r.outcome.value, r.detail) for r in report.results] == [
        ("wrong_answer", "AssertionError: V!"),
        ("wrong_answer", "AssertionError: (no message: formatting it failed in the sandbox)"),
        ("crash", "the program exited during the test"), ("limit_exceeded", "output limit exceeded"),
        ("wrong_answer", "AssertionError: V!")]


# Red team (round 3): each test's process is a fork of the supervisor, which buffered, framed and freed the
# previous test's output: glibc raised its dynamic mmap threshold to the largest block PID 1 freed, kept the
# freed heap, and each fork inherited both (7-13 bits per job). What a test can see of PID 1's heap: the mmap
# threshold, the address space left under RLIMIT_AS, where blocks of glibc's heap land.
HEAP_VIEW = textwrap.dedent("""
    import sys
    data = input()
    if data == "?":
        keep, heap, threshold = [], id(bytes(4096)), 0
        try:
            for size in range(128 << 10, 33 << 20, 64 << 10):
                keep.append(bytes(size))
                if abs(id(keep[-1]) - heap) > 1 << 40:  # mmapped: at or above the threshold inherited from PID 1
                    threshold = size >> 20
                    break
        except MemoryError:  # none below 32 MiB was mmapped: the threshold is fixed at glibc's maximum
            threshold = 32
        del keep
        low, high = 0, 1 << 30  # the largest block RLIMIT_AS still allows, to 64 KiB
        while high - low > 1 << 16:
            middle = (low + high) // 2
            try:
                bytes(middle)
                low = middle
            except MemoryError:
                high = middle
        heap = id(bytes(600))  # a block of glibc's heap (pymalloc serves 512 bytes and less)
        print(threshold, low >> 16, *[(id(bytes(size)) - heap) >> 4 for size in (2000, 40000, 1 << 20, 8 << 20)])
    else:
        sys.stdout.write("x" * (int(data) << 20))
""")


def test_no_state_carries_across_tests_through_pid_1s_heap():
    tests = [stdio("3", "nothing"), stdio("?", "3")]  # the red team's carrier: the threshold read back
    assert run_tests(HEAP_VIEW, tests[1:], timeout_s=5.0).pass_fraction == 0.0  # control: on its own, it fails
    report = run_tests(HEAP_VIEW, tests, timeout_s=5.0)
    assert [r.outcome.value for r in report.results] == ["wrong_answer", "wrong_answer"], report
    # glibc's thresholds are fixed for the sandbox and PID 1 trims its heap after each reply: the next test's
    # view is the same whatever the previous test printed (before: threshold 0 / 3 / 6, and less space left)
    views = [in_one_sandbox(HEAP_VIEW, [size, "?"])[1] for size in ("0", "3", "6")]
    assert views[0] == views[1] == views[2] and views[0][1], views


# Red team (round 3): a descriptor in flight (sent over a unix socket, never received) outlives the processes
# the supervisor kills after a test, and with it what it refers to. Each program prints the errno of the
# call that fails ("1": EPERM from seccomp for sendmsg); (program, what test 1 plants, what test 2 reads back).
IN_FLIGHT_CARRIERS = {
    # the network namespace outlives the test: an abstract unix socket whose only reference is its own
    # descriptor in flight keeps its name after its process is killed, until a unix socket is closed (the
    # kernel's garbage collector then runs); the next test probes the names with sendto
    "an abstract unix socket in flight": (textwrap.dedent("""
        import array, socket
        data = input()
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) if data == "?" else None  # closing one runs the GC
        try:
            for k in range(8):
                name = b"\\0bit%d" % k
                if data == "?":
                    try:
                        probe.sendto(b"", name)
                        print(k, end=" ")
                    except OSError:  # no such name: this bit was 0
                        pass
                elif int(data) >> k & 1:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                    s.bind(name)
                    fds = array.array("i", [s.fileno()])
                    s.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)], 0, name)
                    s.close()
        except OSError as exc:
            print(exc.errno, end="")
        print()
    """), "37", "0 2 5"),  # 37 = 0b100101
    # the same, keeping a pty's master in flight: the next test opens /dev/pts/0 and reads any bytes written to it
    "a pty kept in flight": (textwrap.dedent("""
        import array, os, socket, tty
        data = input()
        try:
            if data == "?":
                print(os.read(os.open("/dev/pts/0", os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK), 100).decode())
            else:
                master, slave = os.openpty()
                tty.setraw(slave)
                os.write(master, data.encode())
                keep = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                keep.bind(b"\\0keep")
                fds = array.array("i", [master, slave, keep.fileno()])
                keep.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)], 0, b"\\0keep")
                os._exit(0)  # without closing a unix socket, which would run the kernel's garbage collector
        except OSError as exc:
            print(exc.errno)
    """), "1994", "1994"),
}


def with_descriptor_passing(monkeypatch):
    """The seccomp filter that still allowed sendmsg/sendmmsg (the old filter)."""
    from trl_r1.verifiers.code import sandbox
    monkeypatch.setattr(sandbox, "_DENIED_SYSCALLS",
                        tuple(name for name in sandbox._DENIED_SYSCALLS if name not in ("sendmsg", "sendmmsg")))
    return sandbox.seccomp_program.__wrapped__()


@pytest.mark.parametrize("carrier", sorted(IN_FLIGHT_CARRIERS))
def test_no_descriptor_kept_in_flight_carries_state_to_the_next_test(monkeypatch, carrier):
    program, secret, expected = IN_FLIGHT_CARRIERS[carrier]
    # control: under the old filter the next test reads the secret back, and the supervisor saw nothing to replace
    assert in_one_sandbox(program, [secret, "?"], with_descriptor_passing(monkeypatch)) == [("", True),
                                                                                          (expected, True)]
    report = run_tests(program, [stdio(secret, "1"), stdio("?", expected)], timeout_s=5.0)
    assert [r.outcome.value for r in report.results] == ["passed", "wrong_answer"], report  # sendmsg: EPERM


def test_asyncio_and_a_multiprocessing_pool_work_in_the_sandbox():
    """What honest programs use sockets and pipes for (asyncio's self-pipe and streams, a forked Pool's
    queues) needs no descriptor passing."""
    program = textwrap.dedent("""
        import asyncio, multiprocessing, socket

        def square(x):
            return x * x

        async def echo():
            ours, theirs = socket.socketpair()
            reader, writer = await asyncio.open_connection(sock=ours)
            loop = asyncio.get_running_loop()
            loop.call_soon_threadsafe(lambda: None)  # through the loop's self-pipe
            await loop.run_in_executor(None, theirs.sendall, b"ping\\n")
            line = await reader.readline()
            writer.close()
            theirs.close()
            return line.decode().strip()

        with multiprocessing.get_context("fork").Pool(2) as pool:
            print(sum(pool.map(square, range(10))), asyncio.run(echo()))
    """)
    report = run_tests(program, [stdio("", "285 ping")], timeout_s=10.0)
    assert report.pass_fraction == 1.0, report.results[0]
