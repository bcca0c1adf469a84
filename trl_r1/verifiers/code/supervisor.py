"""The trusted supervisor that runs inside the sandbox (started as ``python3 -I -S -c <this file>``).

It is started before any untrusted code exists in the sandbox, imports only the standard library, and
then serves the host over length-prefixed JSON frames on fds 10 (in) and 11 (out):

* ``load``: receive the program; C++ is compiled here once (under limits), Python is compiled per test.
* ``run``: fork a fresh child per test, so every test sees a fresh copy of the program. stdio tests feed
  stdin and capture stdout under a byte cap; assert tests run the program's top-level code in the child,
  which then answers ``call`` / ``getattr`` requests that the host relays while evaluating the test itself
  (expected values never enter the sandbox). At the wall-clock deadline, on an output overflow, or when
  the test ends, every other process in the sandbox's PID namespace is killed and the scratch directory
  wiped, so nothing carries over to the next test.

This file must stay self-contained: it is sent as source text, not imported from the host's package.
It also runs unsandboxed when the caller opted in to unsafe execution (``isolated`` false); it then kills
only the test's process group instead of every process it may signal.
"""

import atexit
import json
import os
import resource
import select
import signal
import struct
import sys
import time
import traceback  # imported up front: a program that used up its file descriptors cannot import it later
import types

CONTROL_IN, CONTROL_OUT = 10, 11
RPC_CHILD_IN, RPC_CHILD_OUT = 3, 4  # the assert child's request/reply fds
HEADER = struct.Struct(">I")
# Frames to the host start with one byte saying who wrote them, so a test cannot forge the supervisor's.
SUPERVISOR_FRAME, CHILD_FRAME = b"S", b"C"
MAX_FRAME = 64 << 20
STDERR_TAIL = 4096
EXIT_DRAIN_S = 0.1  # after the test's process exits, how long to keep reading pipes its children may hold


def read_exact(fd, n):
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_frame(fd):
    (size,) = HEADER.unpack(read_exact(fd, HEADER.size))
    if size > MAX_FRAME:
        raise EOFError
    return json.loads(read_exact(fd, size))


def frame_bytes(obj, kind=b""):
    data = kind + json.dumps(obj).encode()
    return HEADER.pack(len(data)) + data


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send_frame(fd, obj):
    write_all(fd, frame_bytes(obj))


class Supervisor:
    def __init__(self, config):
        self.isolated = config["isolated"]
        self.scratch = config["scratch"]
        self.limits = config["limits"]
        self.language = None
        self.binary = None
        self.source = None
        self.build_dir = os.path.join(self.scratch, ".build")
        self.tests_run = 0
        self.work_dir = None

    # ---------------------------------------------------------------- child set-up (runs after fork)
    def _child_limits(self, timeout_s):
        mem = self.limits["memory_mb"] << 20
        cpu = int(timeout_s) + 1
        for limit, value in (
            (resource.RLIMIT_AS, mem), (resource.RLIMIT_DATA, mem), (resource.RLIMIT_CPU, cpu),
            (resource.RLIMIT_FSIZE, self.limits["file_size_mb"] << 20), (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_NOFILE, self.limits["nofile"]),
        ):
            resource.setrlimit(limit, (value, value))

    def _child_fds(self, fds):
        """Install `fds` as 0, 1, 2 (and 3, 4), close everything else, including the control channel."""
        high = [os.dup(fd) for fd in fds]
        for target, fd in enumerate(high):
            os.dup2(fd, target)
        os.closerange(len(fds), 1 << 16)

    def _exec_python(self, mode):
        """Run the program as ``__main__`` in this fresh fork, then exit like the interpreter would."""
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        sys.argv = ["main.py"]
        code = 0
        try:
            exec(compile(self.source, "main.py", "exec"), main.__dict__)
            if mode == "assert":
                serve_calls(main.__dict__)
        except SystemExit as exc:
            code = exit_code(exc.code)
        except BaseException as exc:
            traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)  # from the program's frame on
            code = 1
        code = finish_interpreter(code)
        os._exit(code)

    def _spawn(self, mode, timeout_s):
        """Fork the test's child; return (pid, stdin_w, stdout_r, stderr_r, rpc_w, rpc_r)."""
        self.tests_run += 1  # a fresh working directory per test, even if a test made its last one undeletable
        self.work_dir = os.path.join(self.scratch, "test-%d" % self.tests_run)
        os.makedirs(self.work_dir)
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        rpc = (os.pipe(), os.pipe()) if mode == "assert" else None
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                os.chdir(self.work_dir)
                if mode == "assert":
                    null = os.open(os.devnull, os.O_RDWR)
                    self._child_fds([null, null, stderr_w, rpc[0][0], rpc[1][1]])
                else:
                    self._child_fds([stdin_r, stdout_w, stderr_w])
                self._child_limits(timeout_s)
                if self.language == "python":
                    self._exec_python(mode)
                os.execv(self.binary, [self.binary])
            except BaseException:
                pass
            os._exit(127)
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
        rpc_w = rpc_r = None
        if rpc:
            os.close(rpc[0][0])
            os.close(rpc[1][1])
            rpc_w, rpc_r = rpc[0][1], rpc[1][0]
        if mode == "assert":
            os.close(stdin_w)
            os.close(stdout_r)
            stdin_w = stdout_r = None
        return pid, stdin_w, stdout_r, stderr_r, rpc_w, rpc_r

    # ---------------------------------------------------------------- host commands
    def load(self, request):
        self.language = request["language"]
        self.source = request["source"]
        if self.language == "python":
            return {"ok": True}
        os.makedirs(self.build_dir, exist_ok=True)
        source_path = os.path.join(self.build_dir, "main.cpp")
        with open(source_path, "w") as f:
            f.write(self.source)
        self.binary = os.path.join(self.build_dir, "main")
        command = request["compile"] + [source_path, "-o", self.binary]
        result = self._run_command(command, request["compile_timeout_s"])
        result["ok"] = result["returncode"] == 0 and not result["timed_out"] and os.path.exists(self.binary)
        return result

    def _run_command(self, command, timeout_s):
        """Run a trusted tool (the compiler) under the same limits, for at most `timeout_s` seconds."""
        stderr_r, stderr_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                null = os.open(os.devnull, os.O_RDWR)
                self._child_fds([null, null, stderr_w])
                compile_mem = self.limits["compile_memory_mb"] << 20
                cpu = int(timeout_s) + 1
                for limit, value in ((resource.RLIMIT_AS, compile_mem), (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_CORE, 0)):
                    resource.setrlimit(limit, (value, value))
                os.execv(command[0], command)
            except BaseException:
                pass
            os._exit(127)
        os.close(stderr_w)
        watch = Watch(pid, None, None, stderr_r, None, None, time.monotonic() + timeout_s, 0)
        watch.wait()
        self._cleanup(pid)
        return watch.report()

    def run(self, request):
        mode, timeout_s = request["mode"], float(request["timeout_s"])
        pid, stdin_w, stdout_r, stderr_r, rpc_w, rpc_r = self._spawn(mode, timeout_s)
        data = request.get("stdin", "").encode("utf-8", "surrogateescape") if mode == "stdio" else b""
        watch = Watch(pid, stdin_w, stdout_r, stderr_r, rpc_w, rpc_r,
                      time.monotonic() + timeout_s, int(request.get("max_output", 1 << 20)), data)
        watch.wait()
        self._cleanup(pid)
        return watch.report()

    def _cleanup(self, pid):
        """Kill whatever the test left running and wipe its scratch files."""
        if self.isolated:
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                try:
                    os.kill(-1, signal.SIGKILL)  # every process of this PID namespace we may signal, not us
                except ProcessLookupError:
                    break
                reap_all()
                time.sleep(0.0005)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        reap_all()
        if self.work_dir:
            remove_tree(self.work_dir)

    def serve(self):
        while True:
            try:
                request = recv_frame(CONTROL_IN)
            except (EOFError, OSError, ValueError):
                return
            op = request.get("op")
            if op == "load":
                reply = self.load(request)
            elif op == "run":
                reply = self.run(request)
            else:
                continue  # a late "end" or call for a test that already ended
            write_all(CONTROL_OUT, frame_bytes(reply, SUPERVISOR_FRAME))


class Watch:
    """Drive one child to its end: feed stdin, drain stdout/stderr under caps, relay assert calls, kill at the deadline."""

    def __init__(self, pid, stdin_w, stdout_r, stderr_r, rpc_w, rpc_r, deadline, max_output, stdin_data=b""):
        self.pid, self.deadline, self.max_output = pid, deadline, max_output
        self.pending = memoryview(stdin_data)
        self.stdin_w, self.stdout_r, self.stderr_r, self.rpc_w, self.rpc_r = stdin_w, stdout_r, stderr_r, rpc_w, rpc_r
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.rpc_buffer = bytearray()
        self.status = None
        self.timed_out = self.output_exceeded = False
        self.started = time.monotonic()
        self.ended = None
        self.calls = 0

    def _close(self, name):
        fd = getattr(self, name)
        if fd is not None:
            os.close(fd)
            setattr(self, name, None)

    def wait(self):
        if not self.pending:
            self._close("stdin_w")
        for fd in (self.stdin_w, self.stdout_r, self.stderr_r, self.rpc_r, CONTROL_IN if self.rpc_r else None):
            if fd is not None:
                os.set_blocking(fd, False)
        while True:
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
            if self.rpc_r is not None:
                readers.append(CONTROL_IN)
            writers = [self.stdin_w] if self.stdin_w is not None else []
            if not readers and not writers:
                time.sleep(min(remaining, 0.001))
                continue
            timeout = min(remaining, 0.05) if self.status is None else remaining
            ready_r, ready_w, _ = select.select(readers, writers, [], timeout)
            for fd in ready_w:
                self._feed()
            for fd in ready_r:
                if fd == CONTROL_IN:
                    if not self._relay_request():
                        self.ended = True
                        break
                else:
                    self._drain(fd)
            if self.ended or self.output_exceeded:
                break
        if self.rpc_r is not None:
            os.set_blocking(CONTROL_IN, True)
        self.wall_s = time.monotonic() - self.started
        self._kill()
        for name in ("stdin_w", "stdout_r", "stderr_r", "rpc_w", "rpc_r"):
            self._close(name)

    def _poll_exit(self):
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, 255 << 8
        if pid:
            self.status = status
            self._close("stdin_w")
            self._close("rpc_w")

    def _kill(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                _, self.status = os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                self.status = 9

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
        if fd == self.rpc_r:
            if not chunk:
                self._close("rpc_r")
                return
            self.rpc_buffer += chunk
            self._forward_replies()
            return
        if not chunk:
            self._close("stdout_r" if fd == self.stdout_r else "stderr_r")
            return
        if fd == self.stdout_r:
            self.stdout += chunk
            if len(self.stdout) > self.max_output:
                self.output_exceeded = True
        else:
            self.stderr += chunk
            del self.stderr[: max(0, len(self.stderr) - STDERR_TAIL)]

    def _forward_replies(self):
        """Pass complete frames from the assert child to the host, unparsed (the host decodes strictly)."""
        while len(self.rpc_buffer) >= HEADER.size:
            (size,) = HEADER.unpack(self.rpc_buffer[: HEADER.size])
            if size > MAX_FRAME:
                self.output_exceeded = True
                return
            if len(self.rpc_buffer) < HEADER.size + size:
                if len(self.rpc_buffer) > self.max_output + HEADER.size:
                    self.output_exceeded = True
                return
            frame = bytes(self.rpc_buffer[: HEADER.size + size])
            del self.rpc_buffer[: HEADER.size + size]
            if size > self.max_output:
                self.output_exceeded = True
                return
            write_all(CONTROL_OUT, HEADER.pack(size + 1) + CHILD_FRAME + frame[HEADER.size:])

    def _relay_request(self):
        """Forward one host frame to the child; ``end`` closes the test. Returns False when the test is over."""
        os.set_blocking(CONTROL_IN, True)
        try:
            request = recv_frame(CONTROL_IN)
        finally:
            os.set_blocking(CONTROL_IN, False)
        if request.get("op") == "end":
            return False
        if self.rpc_w is None:
            return True  # the child is gone; its exit status answers the host
        self.calls += 1
        try:
            os.set_blocking(self.rpc_w, True)
            write_all(self.rpc_w, frame_bytes(request))
        except OSError:
            self._close("rpc_w")
        return True

    def report(self):
        status = self.status if self.status is not None else 0
        return {
            "op": "done",
            "returncode": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "timed_out": self.timed_out,
            "output_exceeded": self.output_exceeded,
            "ended_by_host": bool(self.ended),
            "stdout": self.stdout.decode("utf-8", "replace"),
            "stderr": self.stderr.decode("utf-8", "replace"),
            "wall_s": self.wall_s,
        }


def remove_tree(path):
    """``shutil.rmtree`` without importing shutil (which would slow every sandbox start)."""
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files + dirs:
            target = os.path.join(root, name)
            try:
                os.rmdir(target) if name in dirs and not os.path.islink(target) else os.unlink(target)
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def reap_all():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return


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
    """What CPython does at exit: join non-daemon threads, run atexit, flush stdio."""
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


# ---------------------------------------------------------------- assert tests: the child's side of the calls
def encode(value, handles, depth=0, plain_only=False):
    """Plain data to a tagged JSON tree; anything else becomes an opaque handle the host cannot compare.

    With `plain_only`, return None instead of making a handle (to tell plain data from objects).
    """
    kind = type(value)
    if depth > 200:
        raise ValueError("nesting too deep")
    if value is None:
        return ["none"]
    if kind is bool:
        return ["bool", value]
    if kind is int:
        return ["int", hex(value)]
    if kind is float:
        return ["float", value.hex()]
    if kind is complex:
        return ["complex", value.real.hex(), value.imag.hex()]
    if kind is str:
        return ["str", value]
    if kind is bytes:
        return ["bytes", value.decode("latin-1")]
    if kind in (list, tuple, set, frozenset):
        items = [encode(v, handles, depth + 1, plain_only) for v in list(value)]
        return None if None in items else [kind.__name__] + items
    if kind is dict:
        pairs = [[encode(k, handles, depth + 1, plain_only), encode(v, handles, depth + 1, plain_only)]
                 for k, v in list(value.items())]
        return None if any(None in pair for pair in pairs) else ["dict"] + pairs
    if plain_only:
        return None
    handles.append(value)
    return ["handle", len(handles) - 1]


def decode(tree, handles):
    tag = tree[0]
    if tag == "handle":
        return handles[tree[1]]
    if tag == "none":
        return None
    if tag == "bool":
        return bool(tree[1])
    if tag == "int":
        return int(tree[1], 16)
    if tag == "float":
        return float.fromhex(tree[1])
    if tag == "complex":
        return complex(float.fromhex(tree[1]), float.fromhex(tree[2]))
    if tag == "str":
        return tree[1]
    if tag == "bytes":
        return tree[1].encode("latin-1")
    if tag == "dict":
        return {decode(k, handles): decode(v, handles) for k, v in tree[1:]}
    items = [decode(v, handles) for v in tree[1:]]
    return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)


def serve_calls(namespace):
    """Announce the program's top-level names, then answer the host's calls until it ends the test.

    Functions, classes and other objects are announced as handles; plain data only by name (``value``),
    so the host reads its current value at each use; modules by their module name.
    """
    handles = []
    names = {}
    for name, value in list(namespace.items()):
        if name.startswith("__"):
            continue
        if type(value).__name__ == "module":
            names[name] = ["module", getattr(value, "__name__", name)]
            continue
        tree = encode(value, handles, plain_only=True)
        names[name] = ["value"] if tree is not None else encode(value, handles)
    send_frame(RPC_CHILD_OUT, {"ready": names})
    while True:
        try:
            request = recv_frame(RPC_CHILD_IN)
        except (EOFError, OSError):
            os._exit(0)
        try:
            op = request["op"]
            if op == "getglobal":
                value = namespace[request["name"]]
            elif op == "getattr":
                value = getattr(handles[request["target"]], request["name"])
            else:
                args = [decode(a, handles) for a in request["args"]]
                kwargs = {k: decode(v, handles) for k, v in request["kwargs"]}
                value = handles[request["target"]](*args, **kwargs)
            reply = {"value": encode(value, handles)}
        except Exception as exc:
            reply = {"error": type(exc).__name__, "message": str(exc)[:500]}
        send_frame(RPC_CHILD_OUT, reply)


def main():
    config = json.loads(sys.argv[1])
    os.dup2(0, CONTROL_IN)
    os.dup2(1, CONTROL_OUT)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    if config["isolated"]:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: tests cannot open our /proc/<pid>/fd or mem
    nproc = config["nproc"]
    if nproc is not None:  # counted per host uid: the host sizes it for the uid this sandbox runs as
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    Supervisor(config).serve()


if __name__ == "__main__":
    main()
