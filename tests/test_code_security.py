"""Attacks on the code verifier, one class per test, each checking the host afterwards.

Where an attack is harmless to run unsandboxed, the same program is first run with ``allow_unsafe=True``
forced (a plain local subprocess) to prove that the attack works without the sandbox; the sandboxed run
must then contain it. Every test ends by checking that no process of the sandbox uids is left on the host.
"""

import os
import secrets
import signal
import socket
import subprocess
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


def sandbox_processes():
    return host_processes(lambda uid, cmd: UID_FIRST <= uid < UID_FIRST + UID_COUNT)


@pytest.fixture(autouse=True)
def nothing_left_behind():
    yield
    deadline = time.monotonic() + 3.0
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
        assert report.results[0].detail.endswith("got \"['LANG', 'MALLOC_ARENA_MAX', 'PATH', 'PWD']\"")
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
    assert time.monotonic() - started < 2 * (1.0 + 1.0)
    time.sleep(0.2)
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

    def stop_supervisor():
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            found = host_processes(lambda uid, cmd: UID_FIRST <= uid < UID_FIRST + UID_COUNT and cmd.startswith("/usr/bin/python3"))
            if len(found) >= 2:  # the supervisor and the test's child (a fork of it): the test is running
                os.kill(min(found)[0], signal.SIGSTOP)
                return
            time.sleep(0.01)

    stopper = threading.Thread(target=stop_supervisor)
    stopper.start()
    started = time.monotonic()
    report = run_tests("import time\nx = input()\ntime.sleep(0.3)\nprint(x)", [stdio("a", "a"), stdio("b", "b")], timeout_s=1.0)
    stopper.join()
    assert [r.outcome.value for r in report.results] == ["timeout", "passed"]
    assert time.monotonic() - started < 1.0 + runner.GRACE_S + 2.0


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
