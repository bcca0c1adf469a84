"""The trusted supervisor that runs inside the sandbox (started as ``python3 -I -S -c <this file>``).

It starts before any untrusted code exists in the sandbox, as the PID namespace's init (so processes in
the sandbox cannot signal it; there is no /proc in which to find its descriptors or memory). It serves
the host over length-prefixed frames on fds 10 (in, ``marshal`` from the trusted host) and 11 (out,
JSON, which the host parses strictly):

* ``load``: receive the program; C++ is compiled here once (under limits), Python per test.
* ``run``: fork a fresh child per test, so every test sees a fresh copy of the program. stdio tests feed
  stdin and capture stdout under a byte cap; assert tests run the program's top-level code in the child,
  which then answers ``call`` / ``getattr`` / ``iterate`` / ``getitem`` / ``isinstance`` / ``getglobal`` requests
  and the plain-result ones (``PLAIN_RESULTS``: ``bool``, ``len``, ``str``, ``int``...) that the host relays
  while evaluating the test itself (expected values never enter the sandbox). At the deadline, on an output overflow, or
  when the test ends, every other process in the sandbox is killed and the test's directory removed; if the
  test changed what the next test's process would start with (our limits, priority, CPUs; the PID and tmpfs
  inode counters), the reply says the sandbox is not clean, and the judge replaces it.

The sandbox cannot import the package: the judge sends ``protocol.py`` and ``rlimits.py`` followed by this file as
bytecode compiled by the sandbox's interpreter, so the frame codec is the one the judge uses. It imports only what starts fast: ``json``, ``signal``, ``traceback`` would
double the interpreter's start-up time, which is paid once per program. With ``isolated`` false (the caller opted in to unsafe execution) it runs as a
plain local process and kills only the test's process group.
"""

import _operator
import _signal
import atexit
import marshal
import os
import resource
import select
import sys
import time

if __package__:  # imported as a module (for reading); in the sandbox protocol.py's and rlimits.py's text precede it
    from .protocol import (
        CHILD_FRAME,
        CONTAINERS,
        HEADER_SIZE,
        STDERR_TAIL,
        SUPERVISOR_FRAME,
        decode_scalar,
        encode_scalar,
        json_frame,
        read_frame,
        write_all,
    )
    from .rlimits import lower_limit

CONTROL_IN, CONTROL_OUT = 10, 11
RPC_CHILD_IN, RPC_CHILD_OUT = 3, 4  # an assert test's child: requests in, replies out
INODE_POLL_S = 0.02  # how often the scratch directories' inode counts are read while a test runs
EXIT_DRAIN_S = 0.1  # after the test's process exits, how long to keep reading pipes its children may hold
SIGKILL = 9
RLIM_NLIMITS = 16  # Linux's resource limits, RLIMIT_CPU (0) to RLIMIT_RTTIME (15), whatever this Python names


# ---------------------------------------------------------------- the supervisor
class Supervisor:
    def __init__(self, config):
        self.isolated = config["isolated"]
        self.scratch = config["scratch"]
        self.limits = config["limits"]
        self.language = self.source = self.binary = None
        self.tests_run = 0
        self.scratch_dirs = [self.scratch] + (["/dev/shm"] if self.isolated else [])
        self.started_ns = time.time_ns()  # the scratch directories' times after each wipe
        self.inherited = inherited_state()  # what each test's child inherits from us: no test may change it
        self.marks = None  # the PID and inode counters when the test started (isolated only)
        self.trim_heap = heap_trimmer() if self.isolated else None

    def serve(self):
        while True:
            try:
                request = marshal.loads(read_frame(CONTROL_IN)[HEADER_SIZE:])
            except (EOFError, OSError, ValueError):
                return
            op = request.get("op")
            if op == "load":
                reply = self.load(request)
            elif op == "run":
                reply = self.run(request)
            else:
                continue  # a late "end" or call for a test that already ended
            write_all(CONTROL_OUT, json_frame(reply, SUPERVISOR_FRAME))
            if self.trim_heap is not None:  # each test forks our heap: give back what this test's data grew
                del request, reply
                self.trim_heap(0)

    def load(self, request):
        self.language, self.source = request["language"], request["source"]
        if self.language == "python":
            return {"ok": True}
        build_dir = os.path.join(self.scratch, ".build")
        os.makedirs(build_dir, exist_ok=True)
        source_path, binary_path = os.path.join(build_dir, "main.cpp"), os.path.join(build_dir, "main")
        with open(source_path, "w", encoding="utf-8", errors="replace") as f:  # a lone surrogate is not our crash
            f.write(self.source)
        pid, stderr_r = self._fork_compiler(request["compile"] + [source_path, "-o", binary_path], request["compile_timeout_s"])
        watch = Watch(pid, None, None, stderr_r, None, None, time.monotonic() + request["compile_timeout_s"], 0)
        watch.wait()
        report = watch.report()
        report["ok"] = report["returncode"] == 0 and not report["timed_out"] and os.path.exists(binary_path)
        if report["ok"]:  # kept in memory and written afresh for each test, which can then change only its copy
            with open(binary_path, "rb") as f:
                self.binary = f.read()
        self._cleanup(pid)
        return report

    def run(self, request):
        mode, timeout_s = request["mode"], float(request["timeout_s"])
        pid, stdin_w, stdout_r, stderr_r, rpc_w, rpc_r = self._fork_test(mode, timeout_s)
        data = request.get("stdin", "").encode("utf-8", "replace") if mode == "stdio" else b""
        watch = Watch(pid, stdin_w, stdout_r, stderr_r, rpc_w, rpc_r,
                      time.monotonic() + timeout_s, int(request.get("max_output", 1 << 20)), data,
                      self.scratch_dirs if self.isolated else (), self.limits.get("scratch_inodes", 0))
        watch.wait()
        report = watch.report()
        report["clean"] = self._cleanup(pid)  # else the judge replaces the sandbox before the next test
        return report

    # ------------------------------------------------------------ children (the code after fork runs in the child)
    def _fork_test(self, mode, timeout_s):
        """Fork the test's child; return (pid, stdin_w, stdout_r, stderr_r, rpc_w, rpc_r), unused ends None."""
        self.tests_run += 1  # a fresh directory per test, even if a test made its last one undeletable
        work_dir = os.path.join(self.scratch, "test-%d" % self.tests_run)
        os.makedirs(work_dir)
        if self.binary is not None:
            binary_path = os.path.join(work_dir, "main")
            fd = os.open(binary_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755)
            write_all(fd, self.binary)
            os.close(fd)
        stderr_r, stderr_w = os.pipe()
        if mode == "assert":
            (request_r, request_w), (reply_r, reply_w) = os.pipe(), os.pipe()
            child_fds, ours = [None, None, stderr_w, request_r, reply_w], [None, None, stderr_r, request_w, reply_r]
        else:
            (stdin_r, stdin_w), (stdout_r, stdout_w) = os.pipe(), os.pipe()
            child_fds, ours = [stdin_r, stdout_w, stderr_w], [stdin_w, stdout_r, stderr_r, None, None]
        inodes = [fresh_inode(directory) for directory in self.scratch_dirs] if self.isolated else []  # before it runs
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                _signal.signal(_signal.SIGINT, _signal.default_int_handler)  # as in a plain interpreter
                os.chdir(work_dir)
                null = os.open(os.devnull, os.O_RDWR)
                install_fds([null if fd is None else fd for fd in child_fds])
                mem = self.limits["memory_mb"] << 20
                set_limits([(resource.RLIMIT_AS, mem), (resource.RLIMIT_DATA, mem),
                            (resource.RLIMIT_CPU, int(timeout_s) + 1),
                            (resource.RLIMIT_FSIZE, self.limits["file_size_mb"] << 20),
                            (resource.RLIMIT_NOFILE, self.limits["nofile"])])
                if self.language == "python":
                    run_python_program(self.source, mode)
                os.execv(binary_path, [binary_path])
            finally:
                os._exit(127)
        for fd in child_fds:
            if fd is not None:
                os.close(fd)
        if self.isolated:
            self.marks = [pid] + inodes  # the child's PID is the PID counter's mark
        return (pid, *ours)

    def _fork_compiler(self, command, timeout_s):
        """Start a trusted tool (the compiler) on the untrusted source, under its own limits."""
        stderr_r, stderr_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                null = os.open(os.devnull, os.O_RDWR)
                install_fds([null, null, stderr_w])
                set_limits([(resource.RLIMIT_AS, self.limits["compile_memory_mb"] << 20),
                            (resource.RLIMIT_CPU, int(timeout_s) + 1)])
                os.execv(command[0], command)
            finally:
                os._exit(127)
        os.close(stderr_w)
        return pid, stderr_r

    def _cleanup(self, pid):
        """Kill whatever the test left running, reap it, remove every file tests wrote; True when all is gone."""
        if self.isolated:
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                try:
                    os.kill(-1, SIGKILL)  # everything in this PID namespace but us (its init)
                except ProcessLookupError:
                    break
                reap_all()
                time.sleep(0.0005)
        else:
            try:
                os.killpg(pid, SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        reap_all()
        clean = True
        for directory in self.scratch_dirs:
            try:  # all a test wrote, so nothing carries over to the next
                os.chmod(directory, 0o1777 if self.isolated else 0o700)
                for name in os.listdir(directory):
                    remove_tree(os.path.join(directory, name))
                clean = clean and not os.listdir(directory)
                os.utime(directory, ns=(self.started_ns, self.started_ns))  # the directory's own metadata is state too
            except OSError:
                clean = False
            try:
                for attribute in os.listxattr(directory):
                    os.removexattr(directory, attribute)
                clean = clean and not os.listxattr(directory)
            except OSError as exc:
                clean = clean and exc.errno == 95  # EOPNOTSUPP: no extended attributes to carry state
        return clean and self._nothing_carried()

    def _nothing_carried(self):
        """Whether the next test's child starts as this one's did: the limits, priority and CPUs it inherits
        from us (seccomp already denies changing another process's), and, isolated, the PID and tmpfs inode
        counters, which only move forward: a test that forked, made a thread or created a file moved them,
        and could tell the next test how far (a covert channel). Then the judge starts a fresh sandbox,
        whose counters start where this one's did. A handful of syscalls and one fork per test."""
        if inherited_state() != self.inherited:
            return False
        if not self.isolated or self.marks is None:
            return True
        try:
            probe = os.fork()
            if probe == 0:
                os._exit(0)
            os.waitpid(probe, 0)
            now = [probe] + [fresh_inode(directory) for directory in self.scratch_dirs]
        except OSError:
            return False
        return now == [mark + 1 for mark in self.marks]  # our own probes since the marks, nothing else


class Watch:
    """Drive one child to its end: feed stdin, drain stdout/stderr under caps, relay assert calls, kill at the deadline."""

    def __init__(self, pid, stdin_w, stdout_r, stderr_r, rpc_w, rpc_r, deadline, max_output, stdin_data=b"",
                 scratch_dirs=(), max_inodes=0):
        self.pid, self.deadline, self.max_output = pid, deadline, max_output
        self.scratch_dirs, self.max_inodes = scratch_dirs, max_inodes  # tmpfs --size does not count inodes
        self.inodes_exceeded = False
        self.pending = memoryview(stdin_data)
        self.stdin_w, self.stdout_r, self.stderr_r, self.rpc_w, self.rpc_r = stdin_w, stdout_r, stderr_r, rpc_w, rpc_r
        self.stdout, self.stderr, self.rpc_buffer = bytearray(), bytearray(), bytearray()
        self.status = None
        self.timed_out = self.output_exceeded = self.ended_by_host = False
        self.started = time.monotonic()
        self.wall_s = 0.0
        try:
            self.exit_r = os.pidfd_open(pid)  # readable when the child exits: no polling
        except (AttributeError, OSError):  # kernels before 5.3: poll waitpid instead
            self.exit_r = None

    def wait(self):
        relaying = self.rpc_r is not None  # an assert test: the host's requests arrive on CONTROL_IN meanwhile
        if not self.pending:
            self._close("stdin_w")
        for fd in (self.stdin_w, self.stdout_r, self.stderr_r, self.rpc_r):
            if fd is not None:
                os.set_blocking(fd, False)
        while not (self.ended_by_host or self.output_exceeded or self.inodes_exceeded):
            if self.status is None:
                self._poll_exit()
                if self.status is not None:  # what it left running may hold the pipes: drain briefly, no more
                    self.deadline = min(self.deadline, time.monotonic() + EXIT_DRAIN_S)
            if self.status is not None and self.stdout_r is None and self.stderr_r is None:
                break
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self.timed_out = self.status is None
                break
            readers = [fd for fd in (self.stdout_r, self.stderr_r, self.rpc_r) if fd is not None]
            if relaying:
                readers.append(CONTROL_IN)
            if self.status is None and self.exit_r is not None:
                readers.append(self.exit_r)
            writers = [self.stdin_w] if self.stdin_w is not None else []
            poll_s = remaining if self.exit_r is not None or self.status is not None else min(remaining, 0.01)
            if self.max_inodes:
                poll_s = min(poll_s, INODE_POLL_S)
                self._check_inodes()
            ready_r, ready_w, _ = select.select(readers, writers, [], poll_s)
            if ready_w:
                self._feed()
            for fd in ready_r:
                if fd == CONTROL_IN:
                    self._relay_request()
                elif fd != self.exit_r:  # an exit is picked up by _poll_exit at the top of the loop
                    self._drain(fd)
        self.wall_s = time.monotonic() - self.started
        if self.status is None:
            try:
                os.kill(self.pid, SIGKILL)
                _, self.status = os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                self.status = SIGKILL
        for name in ("stdin_w", "stdout_r", "stderr_r", "rpc_w", "rpc_r", "exit_r"):
            self._close(name)

    def _check_inodes(self):
        """Files and directories in the scratch tmpfs cost host kernel memory that their size limit does not count."""
        for directory in self.scratch_dirs:
            try:
                info = os.statvfs(directory)
            except OSError:
                continue
            if info.f_files - info.f_ffree > self.max_inodes:
                self.inodes_exceeded = True

    def _close(self, name):
        fd = getattr(self, name)
        if fd is not None:
            os.close(fd)
            setattr(self, name, None)

    def _poll_exit(self):
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, 255 << 8
        if pid:
            self.status = status
            self._close("stdin_w")
            self._close("rpc_w")

    def _feed(self):
        try:
            written = os.write(self.stdin_w, self.pending[:65536])
        except BlockingIOError:
            return
        except BrokenPipeError:  # the program stopped reading its input: that is its right
            written = len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            self._close("stdin_w")

    def _drain(self, fd):
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self._close({self.stdout_r: "stdout_r", self.stderr_r: "stderr_r", self.rpc_r: "rpc_r"}[fd])
        elif fd == self.rpc_r:
            self.rpc_buffer += chunk
            self._forward_replies()
        elif fd == self.stdout_r:
            self.stdout += chunk
            self.output_exceeded = len(self.stdout) > self.max_output
        else:
            self.stderr += chunk
            del self.stderr[: max(0, len(self.stderr) - STDERR_TAIL)]

    def _forward_replies(self):
        """Pass complete frames from the child to the host, marked as the child's and not parsed here."""
        while len(self.rpc_buffer) >= HEADER_SIZE:
            size = int.from_bytes(self.rpc_buffer[:HEADER_SIZE], "big")
            if size > self.max_output:
                self.output_exceeded = True
                return
            if len(self.rpc_buffer) < HEADER_SIZE + size:
                return
            frame = CHILD_FRAME + bytes(self.rpc_buffer[HEADER_SIZE: HEADER_SIZE + size])
            del self.rpc_buffer[: HEADER_SIZE + size]
            write_all(CONTROL_OUT, len(frame).to_bytes(HEADER_SIZE, "big") + frame)

    def _relay_request(self):
        """Forward one host request to the child; ``end`` closes the test."""
        frame = read_frame(CONTROL_IN)  # blocking: the host writes whole frames
        if marshal.loads(frame[HEADER_SIZE:]).get("op") == "end":
            self.ended_by_host = True
        elif self.rpc_w is not None:  # else the child is gone, and its exit status answers the host
            try:
                write_all(self.rpc_w, frame)
            except OSError:
                self._close("rpc_w")

    def report(self):
        status = self.status or 0
        return {
            "op": "done",
            "returncode": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "timed_out": self.timed_out,
            "output_exceeded": self.output_exceeded,
            "inodes_exceeded": self.inodes_exceeded,
            "ended_by_host": self.ended_by_host,
            "stdout": self.stdout.decode("utf-8", "replace"),
            "stderr": self.stderr.decode("utf-8", "replace"),
            "wall_s": self.wall_s,
        }


# ---------------------------------------------------------------- helpers (also used after fork)
def install_fds(fds):
    """Make `fds` the child's 0, 1, 2 (3, 4) and close every other descriptor, the control channel included."""
    high = [os.dup(fd) for fd in fds]
    for target, fd in enumerate(high):
        os.dup2(fd, target)
    os.closerange(len(fds), 1 << 16)


def set_limits(limits):
    """Lock each limit at its value, or at the lower hard limit the sandbox inherited (never raised)."""
    for limit, value in limits + [(resource.RLIMIT_CORE, 0)]:
        lower_limit(limit, value, lock=True)


def inherited_state():
    """This process's resource limits, nice value, CPU affinity and scheduling policy (its children inherit them)."""
    return ([resource.getrlimit(kind) for kind in range(RLIM_NLIMITS)], os.getpriority(os.PRIO_PROCESS, 0),
            os.sched_getaffinity(0), os.sched_getscheduler(0), os.sched_getparam(0))


def fresh_inode(directory):
    """The inode number a tmpfs gives a new entry in `directory` (its per-mount counter), by making one."""
    path = os.path.join(directory, ".counter")
    os.mkdir(path)
    try:
        return os.stat(path).st_ino
    finally:
        os.rmdir(path)


def heap_trimmer():
    """glibc's ``malloc_trim`` (the heap's free top back to the OS, so a test's output does not change the
    address space the next test's fork inherits), through ``_ctypes`` alone: ``ctypes`` costs 2 ms per start."""
    import _ctypes

    class Int(_ctypes._SimpleCData):
        _type_ = "i"

    class Function(_ctypes.CFuncPtr):
        _flags_, _restype_ = _ctypes.FUNCFLAG_CDECL, Int

    return Function(_ctypes.dlsym(_ctypes.dlopen(None), "malloc_trim"))


def reap_all():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return


def remove_tree(path):
    """``shutil.rmtree`` without importing shutil, after giving back the owner's permissions a test took away
    (its files are ours: same uid, and nothing in the sandbox can change an owner)."""
    if os.path.islink(path) or not os.path.isdir(path):
        try:
            os.unlink(path)
        except OSError:
            pass
        return
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    for root, dirs, files in os.walk(path):
        for name in dirs:  # top-down: a directory is opened up before os.walk lists it
            target = os.path.join(root, name)
            try:
                if not os.path.islink(target):
                    os.chmod(target, 0o700)
            except OSError:
                pass
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            target = os.path.join(root, name)
            try:
                os.unlink(target) if os.path.islink(target) else os.rmdir(target)
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


# ---------------------------------------------------------------- the Python program's side (in the test's child)
class Quitter:
    """``exit()`` and ``quit()`` as the ``site`` module defines them (the supervisor runs with ``-S``)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "Use %s() or Ctrl-D (i.e. EOF) to exit" % self.name

    def __call__(self, code=None):
        raise SystemExit(code)


def run_python_program(source, mode):
    """Run the program in this fresh fork (then serve assert calls), and exit like CPython.

    A stdio program runs as ``__main__``; for assert tests the program is a module named ``solution``, as
    in HumanEval's and EvalPlus's harnesses, so its ``if __name__ == "__main__":`` block does not run.
    """
    name = "__main__" if mode == "stdio" else "solution"
    main = type(sys)(name)
    main.__dict__["__builtins__"] = __builtins__
    sys.modules[name] = main
    sys.argv = ["main.py"]
    builtins = sys.modules["builtins"]
    builtins.exit, builtins.quit = Quitter("exit"), Quitter("quit")
    code = 0
    try:
        exec(compile(source, "main.py", "exec"), main.__dict__)
        if mode == "assert":
            serve_calls(main.__dict__)
    except SystemExit as exc:
        code = exit_code(exc.code)
    except BaseException as exc:
        exc = exc.with_traceback(exc.__traceback__.tb_next)  # report from main.py on, not from this frame
        sys.__excepthook__(type(exc), exc, exc.__traceback__)  # CPython's own report, no traceback import
        code = 1
    os._exit(finish_interpreter(code))


def exit_code(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except BaseException:
        pass
    return 1


def finish_interpreter(code):
    """What CPython does at exit: join non-daemon threads, run atexit handlers, flush stdio."""
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        code = exit_code(exc.code)
    except BaseException:
        code = code or 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            code = code or 120
    return code


class Handles(list):
    """The objects the host holds handles to; one index per object, so equal handles mean the same object."""

    def __init__(self):
        super().__init__()
        self.index = {}

    def of(self, value):
        i = self.index.get(id(value))
        if i is None:
            i = self.index[id(value)] = len(self)
            self.append(value)
        return i


MUTABLE = (list, dict, set)


def encode(value, handles, depth=0, plain_only=False, refs=None, top=False):
    """Plain data to a tagged tree; anything else becomes an opaque handle the host cannot compare.

    With `plain_only`, return None instead of making a handle (to tell plain data from objects). `refs`
    maps the id of each list, dict and set the host passed in this call to its index: such an object is
    sent as ``["ref", i]`` (the host's own object, so identity and aliasing stay true), except at the `top`.
    """
    if depth > 200:
        raise ValueError("nesting too deep")
    scalar = encode_scalar(value)
    if scalar is not None:
        return scalar
    kind = type(value)
    if refs is not None and not top and kind in MUTABLE and id(value) in refs:
        return ["ref", refs[id(value)]]
    if kind in (list, tuple, set, frozenset):
        items = [encode(v, handles, depth + 1, plain_only, refs) for v in list(value)]
        return None if None in items else [kind.__name__] + items
    if kind is dict:
        pairs = [[encode(k, handles, depth + 1, plain_only, refs), encode(v, handles, depth + 1, plain_only, refs)]
                 for k, v in list(value.items())]
        return None if any(None in pair for pair in pairs) else ["dict"] + pairs
    stdlib = stdlib_value(value, kind)
    if stdlib is not None:
        return ["stdlib", kind.__name__, encode(stdlib, handles, depth + 1)]
    if plain_only:
        return None
    handle = handles.of(value)
    for base, plain in _PLAIN_BASES:  # Counter, namedtuple, IntEnum...: their plain value, read by the base type
        if isinstance(value, base):
            return ["sub", handle, encode(plain(value), handles, depth + 1)]
    return ["handle", handle]


def stdlib_value(value, kind):
    """The plain value of a Counter, OrderedDict, deque, Fraction or Decimal (the host rebuilds the same type),
    read with the type's own code; None for any other type. Modules the program did not import are not."""
    collections, fractions, decimal = [sys.modules.get(name) for name in ("collections", "fractions", "decimal")]
    if collections is not None and kind is collections.OrderedDict:
        return dict(collections.OrderedDict.items(value))  # in the OrderedDict's order
    if collections is not None and kind is collections.Counter:
        return dict.copy(value)
    if collections is not None and kind is collections.deque:
        return list(collections.deque.__iter__(value))
    if fractions is not None and kind is fractions.Fraction:
        return [value.numerator, value.denominator]
    if decimal is not None and kind is decimal.Decimal:
        return decimal.Decimal.__str__(value)
    return None


# How to read a subclass's value with the base type's own code (a subclass cannot override these calls).
_PLAIN_BASES = (
    (int, int.__int__), (float, float.__float__), (str, str.__str__), (bytes, lambda v: bytes(memoryview(v))),
    (list, list.copy), (tuple, lambda v: tuple(tuple.__iter__(v))), (dict, dict.copy),
    (set, lambda v: set(set.__iter__(v))), (frozenset, lambda v: frozenset(frozenset.__iter__(v))),
)


def decode(tree, handles, originals):
    """The host's arguments (trusted), from the same tagged tree; each list, dict and set is appended to
    `originals` in the order the host numbered them (``["ref", i]`` is the same object again)."""
    tag = tree[0]
    if tag == "handle":
        return handles[tree[1]]
    if tag == "ref":
        return originals[tree[1]]
    if tag == "stdlib":
        return stdlib_rebuild(tree[1], decode(tree[2], handles, []))  # numbered apart, as the host does
    if tag == "list":
        value = []
        originals.append(value)
        value.extend([decode(v, handles, originals) for v in tree[1:]])
        return value
    if tag == "set":
        value = set()
        originals.append(value)
        value.update([decode(v, handles, originals) for v in tree[1:]])
        return value
    if tag == "dict":
        value = {}
        originals.append(value)
        for k, v in tree[1:]:
            key = decode(k, handles, originals)
            value[key] = decode(v, handles, originals)
        return value
    if tag in CONTAINERS:
        return CONTAINERS[tag]([decode(v, handles, originals) for v in tree[1:]])
    return decode_scalar(tree)


def stdlib_rebuild(name, plain):
    """A standard-library value the test passed in (Counter, deque, Fraction, range...), built from plain data."""
    if name in ("Counter", "OrderedDict", "deque"):
        import collections
        return getattr(collections, name)(plain)
    if name == "Fraction":
        import fractions
        return fractions.Fraction(*plain)
    if name == "Decimal":
        import decimal
        return decimal.Decimal(plain)
    if name == "range":
        return range(*plain)
    if name == "iter":  # a generator the test passed in
        return iter(plain)
    raise ValueError("unknown type " + str(name))


def snapshot(originals, handles, refs):
    """Each list, dict and set the host passed in, encoded with references to the others."""
    return [encode(o, handles, refs=refs, top=True) for o in originals]


# What a test may ask of an object and get back as plain data, computed by the object's own methods: truth,
# length, text (str, repr, f-strings) and numbers (int, float, as an index). Each result is of exactly the
# built-in type (a str subclass's __eq__ never reaches the test). Not `in`: the test's value would be handed to
# the object, which would decide the membership the test asserts (the host iterates the object instead).
PLAIN_RESULTS = {
    "bool": lambda target, request: bool(target),
    "len": lambda target, request: len(target),
    "str": lambda target, request: str.__str__(str(target)),
    "repr": lambda target, request: str.__str__(repr(target)),
    "format": lambda target, request: str.__str__(format(target, request["spec"])),
    "int": lambda target, request: int.__int__(int(target)),
    "float": lambda target, request: float.__float__(float(target)),
    "index": lambda target, request: int.__int__(_operator.index(target)),
}


def serve_calls(namespace):
    """Announce the program's top-level names, then answer the host's requests until it ends the test.

    Functions, classes and other objects are announced as handles; plain data only by name (``value``),
    so the host reads its current value at each use; modules by their module name.
    """
    handles = Handles()
    names = {}
    for name, value in list(namespace.items()):
        if name.startswith("__"):
            continue
        if type(value) is type(sys):
            names[name] = ["module", getattr(value, "__name__", name)]
            continue
        names[name] = ["value"] if encode(value, handles, plain_only=True) is not None else encode(value, handles)
    write_all(RPC_CHILD_OUT, json_frame({"ready": names}))
    while True:
        try:
            request = marshal.loads(read_frame(RPC_CHILD_IN)[HEADER_SIZE:])
        except (EOFError, OSError, ValueError):
            os._exit(0)
        try:
            op = request["op"]
            if op == "getglobal":
                value = namespace[request["name"]]
            elif op == "getattr":
                value = getattr(handles[request["target"]], request["name"])
            elif op == "setattr":
                value = setattr(handles[request["target"]], request["name"], decode(request["value"], handles, []))
            elif op in PLAIN_RESULTS:
                value = PLAIN_RESULTS[op](handles[request["target"]], request)
            elif op == "isinstance":
                value = isinstance(decode(request["value"], handles, []), handles[request["target"]])
            elif op == "getitem":
                value = handles[request["target"]][decode(request["key"], handles, [])]
            elif op == "iterate":  # a container's items, or the next `count` items of an iterator
                target = handles[request["target"]]
                iterator = iter(target)
                container = iterator is not target
                value = []
                for item in iterator:
                    value.append(item)
                    if not container and len(value) >= request["count"]:
                        break
                write_all(RPC_CHILD_OUT, json_frame({"value": encode(value, handles), "container": container}))
                continue
            else:
                originals = []
                args = [decode(a, handles, originals) for a in request["args"]]
                kwargs = {k: decode(v, handles, originals) for k, v in request["kwargs"]}
                refs = {id(o): i for i, o in enumerate(originals)}
                before = snapshot(originals, handles, refs)
                value = handles[request["target"]](*args, **kwargs)
                after = snapshot(originals, handles, refs)
                reply = {"value": encode(value, handles, refs=refs),  # and the host's objects the call changed
                         "mutated": [[i, tree] for i, tree in enumerate(after) if tree != before[i]]}
                write_all(RPC_CHILD_OUT, json_frame(reply))
                continue
            reply = {"value": encode(value, handles)}
        except Exception as exc:
            reply = {"error": type(exc).__name__, "message": str(exc)[:500],
                     "bases": [base.__name__ for base in type(exc).__mro__[1:]]}  # class Invalid(ValueError)
        write_all(RPC_CHILD_OUT, json_frame(reply))


def main():
    config = marshal.loads(bytes.fromhex(sys.argv[-1]))
    os.dup2(0, CONTROL_IN)
    os.dup2(1, CONTROL_OUT)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # the namespace's init ignores what it has no handler for
    if config["nproc"] is not None:  # counted per host uid: the host sized it for the uid this sandbox runs as
        lower_limit(resource.RLIMIT_NPROC, config["nproc"], lock=True)
    Supervisor(config).serve()


if __name__ == "__main__":
    main()
