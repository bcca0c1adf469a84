"""OS-level isolation for untrusted programs: one bubblewrap sandbox per program, driven over a pipe.

The sandbox (``bwrap``) gets new user, PID, network, IPC, UTS, mount and cgroup namespaces, a read-only
``/usr``, a size-limited tmpfs as its only writable place, an empty environment and a seccomp filter
(no inet/netlink/packet sockets, no descriptor passing, no ptrace, mounts, keyrings, BPF, io_uring, new user
namespaces, no limit or scheduling change to another process...). When the host runs as root, bwrap itself
is started as an unprivileged uid taken from a pool of slots (one per live sandbox, locked across processes
with ``flock``), so the sandbox has no host-root file access and ``RLIMIT_NPROC`` bounds its processes; as an
ordinary user it runs as that user. Inside, the trusted supervisor (``protocol.py`` + ``rlimits.py`` +
``supervisor.py``) forks one child per test under rlimits; see `Sandbox`.
"""

from __future__ import annotations

import fcntl
import functools
import json
import marshal
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .protocol import HEADER_SIZE, MAX_FRAME, frame

# the supervisor is one script: the shared wire codec and limit setter, then the supervisor
# (the sandbox cannot import us)
SUPERVISOR_SOURCE = "\n".join(Path(__file__).with_name(name).read_text()
                              for name in ("protocol.py", "rlimits.py", "supervisor.py"))
SANDBOX_PYTHON = "/usr/bin/python3"  # lives under the read-only /usr bind (a pyenv under /root would not)
UID_FIRST, UID_COUNT = 61000, 1000  # host uids owned by no account, one per live sandbox when we are root
UID_LOCK_DIR = Path(tempfile.gettempdir()) / "trl-r1-sandbox-uids"


class SandboxUnavailable(RuntimeError):
    """OS isolation cannot be set up here (and the caller did not opt in to unsafe execution)."""


class SandboxLost(Exception):
    """The supervisor stopped answering in time (`timed_out`), died, or broke the protocol."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandbox; each test's process gets them afresh."""

    memory_mb: int = 512  # RLIMIT_AS and RLIMIT_DATA of each test process
    nproc: int = 16  # processes and threads of the sandbox (RLIMIT_NPROC on its own uid)
    file_size_mb: int = 16  # RLIMIT_FSIZE: largest file a test may write
    nofile: int = 256  # RLIMIT_NOFILE
    scratch_mb: int = 64  # size of each of the two writable tmpfs, /tmp and /dev/shm (host memory)
    scratch_inodes: int = 16384  # files + directories in each of them (each costs host kernel memory)
    compile_memory_mb: int = 2048  # RLIMIT_AS of the C++ compiler


# ------------------------------------------------------------------------------------------------ seccomp
_DENIED_SYSCALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount", "open_tree", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr", "open_by_handle_at", "name_to_handle_at",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "fanotify_init",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "clock_settime", "clock_adjtime",
    "settimeofday", "adjtimex", "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "vhangup",
    "lookup_dcookie", "personality", "uselib", "iopl", "ioperm",
    # memory outside RLIMIT_AS and state that outlives a test: SysV IPC, POSIX message queues, memfd
    "shmget", "shmat", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "memfd_create", "memfd_secret",
    "process_madvise",  # advice on another process's memory
    # descriptors in flight (SCM_RIGHTS) outlive the processes the supervisor kills after each test: a socket
    # or pty sent to itself keeps its abstract name or its bytes for the next test. Only fd passing needs
    # these (send, sendto and the pipes of asyncio and multiprocessing's fork context do not)
    "sendmsg", "sendmmsg",
)
# (syscall, [(argument index, the value that means "the caller itself")]): anything else is denied
_PRIO_PROCESS, _IOPRIO_WHO_PROCESS = 0, 1
_SELF_ONLY_SYSCALLS = (
    ("prlimit64", [(0, 0)]),
    ("setpriority", [(0, _PRIO_PROCESS), (1, 0)]),  # PRIO_PGRP/PRIO_USER with who 0 reach PID 1 too
    ("ioprio_set", [(0, _IOPRIO_WHO_PROCESS), (1, 0)]),
    ("sched_setaffinity", [(0, 0)]), ("sched_setscheduler", [(0, 0)]), ("sched_setparam", [(0, 0)]),
    ("sched_setattr", [(0, 0)]),
    ("migrate_pages", [(0, 0)]), ("move_pages", [(0, 0)]),  # another's pages moved between NUMA nodes, read back
)


@functools.lru_cache(maxsize=1)
def seccomp_program() -> bytes:
    """The compiled BPF filter given to bwrap: deny dangerous syscalls with EPERM/EACCES, allow the rest."""
    import errno
    import socket

    import pyseccomp as seccomp

    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in _DENIED_SYSCALLS:
        try:
            rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):  # a syscall this kernel/arch does not know
            continue
    # only local (AF_UNIX) sockets: no inet, netlink, packet... even inside the empty network namespace
    rules.add_rule(seccomp.ERRNO(errno.EACCES), "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    # glibc falls back from clone3 to clone only on ENOSYS (EPERM would kill thread creation)
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    # a process may change its own limits and scheduling, never another's: the supervisor (PID 1, same uid)
    # outlives the test, and what a test wrote into it would reach the next test's child (a covert channel)
    for name, args in _SELF_ONLY_SYSCALLS:
        for index, value in args:  # each rule denies one "argument is not what targets the caller"
            try:
                rules.add_rule(seccomp.ERRNO(errno.EPERM), name, seccomp.Arg(index, seccomp.NE, value))
            except (OSError, ValueError, RuntimeError):  # a syscall this kernel/arch does not know
                break
    read_fd, write_fd = os.pipe()
    with os.fdopen(write_fd, "wb") as out:
        rules.export_bpf(out)
    with os.fdopen(read_fd, "rb") as bpf:
        return bpf.read()


# ------------------------------------------------------------------------------------------------ uid slots
class UidSlot:
    """An unprivileged host uid held for one sandbox's lifetime (root only; others keep their own uid)."""

    def __init__(self):
        self.uid: int | None = None
        self._lock_fd: int | None = None
        if os.geteuid() != 0:
            return
        UID_LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
        info = UID_LOCK_DIR.lstat()
        if info.st_uid != 0 or info.st_mode & 0o077 or not UID_LOCK_DIR.is_dir() or UID_LOCK_DIR.is_symlink():
            raise SandboxUnavailable(f"{UID_LOCK_DIR} must be a directory owned by root with mode 0700")
        start = os.getpid() % UID_COUNT  # processes start at different places, so they rarely collide
        for i in range(UID_COUNT):
            uid = UID_FIRST + (start + i) % UID_COUNT
            fd = os.open(UID_LOCK_DIR / str(uid), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._lock_fd = uid, fd
            return
        raise SandboxUnavailable(f"all {UID_COUNT} sandbox uids are in use")

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def _user_task_count(uid: int) -> int:
    """Processes+threads the host already runs as `uid` (RLIMIT_NPROC counts them all)."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


# ------------------------------------------------------------------------------------------------ the sandbox
_BOOTSTRAP = "import marshal, sys; exec(marshal.loads(bytes.fromhex(''.join(sys.argv[1:-1]))))"
ARG_CHUNK = 1 << 16  # Linux refuses any one argument over 128 KiB (MAX_ARG_STRLEN): the bytecode comes in pieces


@functools.lru_cache(maxsize=None)
def supervisor_bytecode(python: str) -> str:
    """The supervisor compiled by `python` itself (as hex): parsing its source costs each sandbox ~5-15 ms."""
    compiler = "import marshal, sys; sys.stdout.write(marshal.dumps(compile(sys.stdin.read(), 'supervisor.py', 'exec')).hex())"
    done = subprocess.run([python, "-I", "-S", "-c", compiler], input=SUPERVISOR_SOURCE, capture_output=True,
                          text=True, env={}, timeout=60, check=True)
    return done.stdout


def supervisor_command(python: str, config: dict) -> list[str]:
    code = supervisor_bytecode(python)
    chunks = [code[i: i + ARG_CHUNK] for i in range(0, len(code), ARG_CHUNK)]
    return [python, "-I", "-S", "-c", _BOOTSTRAP, *chunks, marshal.dumps(config, 4).hex()]


def bwrap_command(limits: SandboxLimits, seccomp_fd: int, inner: list[str]) -> list[str]:
    """The bubblewrap command line that runs `inner` isolated (see the module docstring)."""
    return [
        shutil.which("bwrap") or "bwrap",
        "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--as-pid-1",
        "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
        "--setenv", "MALLOC_ARENA_MAX", "2",  # glibc's per-thread arenas would use up RLIMIT_AS with few threads
        # glibc's thresholds fixed at the values its dynamic ones reach (a fully warmed-up process): otherwise
        # they rise with the largest block PID 1 frees (a test's output), and each test's fork inherits them
        "--setenv", "MALLOC_MMAP_THRESHOLD_", str(32 << 20), "--setenv", "MALLOC_TRIM_THRESHOLD_", str(64 << 20),
        "--hostname", "sandbox",
        "--ro-bind", "/usr", "/usr",
        *(["--tmpfs", "/usr/local", "--remount-ro", "/usr/local"] if os.path.isdir("/usr/local") else []),  # host-local files
        "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
        "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
        "--dev", "/dev",  # no /proc: nothing to learn about the sandbox's processes, their fds or memory
        "--size", str(limits.scratch_mb << 20), "--tmpfs", "/dev/shm",  # bounded: tmpfs pages are host memory
        "--remount-ro", "/dev",
        "--size", str(limits.scratch_mb << 20), "--tmpfs", "/tmp",
        "--chdir", "/tmp",
        "--seccomp", str(seccomp_fd),
        "--", *inner,
    ]


class Sandbox:
    """One running supervisor: isolated in bwrap, or (``unsafe=True``) a plain local subprocess. Driven by
    the judge process (and by `isolation_problem`'s probe); the trainer never reads its frames.

    Frames (`protocol`): ``marshal`` from us (trusted data), JSON from the sandbox after one byte that says
    who wrote it, ``S`` (the supervisor) or ``C`` (relayed from an assert test's child, so untrusted). Every read and write has a deadline, so a stopped or flooding
    sandbox costs its own test only. Use a sandbox from the thread that created it: bwrap's
    ``--die-with-parent`` kills it when that thread ends.
    """

    def __init__(self, limits: SandboxLimits = SandboxLimits(), *, unsafe: bool = False, python: str | None = None,
                 seccomp: bytes | None = None):
        self.limits = limits
        self.unsafe = unsafe
        self._slot: UidSlot | None = None
        self._scratch: str | None = None
        self._buffer = bytearray()
        self.received_bytes = 0  # all frames so far: the host bounds what iterating in one test may take
        config = {"limits": asdict(limits)}
        if unsafe:
            self._scratch = tempfile.mkdtemp(prefix="trl-r1-unsafe-")
            config.update(isolated=False, scratch=self._scratch, nproc=None)
            argv = supervisor_command(python or sys.executable, config)
            self._start(argv, {})
            return
        self._slot = UidSlot()
        uid = self._slot.uid if self._slot.uid is not None else os.getuid()
        nproc = limits.nproc if self._slot.uid is not None else _user_task_count(uid) + limits.nproc
        config.update(isolated=True, scratch="/tmp", nproc=nproc)
        inner = supervisor_command(python or SANDBOX_PYTHON, config)
        read_fd, write_fd = os.pipe()  # bwrap reads the BPF program from this fd
        try:
            os.write(write_fd, seccomp if seccomp is not None else seccomp_program())
            os.close(write_fd)
            write_fd = -1
            user = {"user": uid, "group": uid, "extra_groups": []} if self._slot.uid is not None else {}
            self._start(bwrap_command(limits, read_fd, inner), user, pass_fds=(read_fd,))
        except BaseException:
            self._slot.release()
            raise
        finally:
            os.close(read_fd)
            if write_fd != -1:
                os.close(write_fd)

    def _start(self, argv: list[str], user: dict, pass_fds: tuple[int, ...] = ()) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={},
            cwd="/", start_new_session=True, close_fds=True, pass_fds=pass_fds, **user,
        )
        self._in = self.process.stdin.fileno()
        self._out = self.process.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)

    # -------------------------------------------------------------------------------------------- frames
    def send(self, message: dict, deadline: float) -> None:
        view = memoryview(frame(marshal.dumps(message, 4)))  # plain data from us, so the supervisor needs no json
        with selectors.DefaultSelector() as selector:
            selector.register(self._in, selectors.EVENT_WRITE)
            while view:
                if not selector.select(self._remaining(deadline)):
                    if time.monotonic() >= deadline:
                        raise SandboxLost("the sandbox stopped reading", timed_out=True)
                    continue
                try:
                    view = view[os.write(self._in, view):]
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise SandboxLost(f"the sandbox went away ({exc.__class__.__name__})") from None

    def receive(self, deadline: float) -> tuple[str, object]:
        """The next frame as (``"S"`` or ``"C"``, decoded JSON); raises SandboxLost."""
        with selectors.DefaultSelector() as selector:
            selector.register(self._out, selectors.EVENT_READ)
            while True:
                if len(self._buffer) >= HEADER_SIZE:
                    size = int.from_bytes(self._buffer[:HEADER_SIZE], "big")
                    if not 1 <= size <= MAX_FRAME:
                        raise SandboxLost("malformed frame")
                    if len(self._buffer) >= HEADER_SIZE + size:
                        frame = bytes(self._buffer[HEADER_SIZE: HEADER_SIZE + size])
                        del self._buffer[: HEADER_SIZE + size]
                        self.received_bytes += size
                        try:
                            return chr(frame[0]), json.loads(frame[1:])
                        except (ValueError, RecursionError):
                            raise SandboxLost("malformed frame") from None
                if not selector.select(self._remaining(deadline)) and time.monotonic() >= deadline:
                    raise SandboxLost("the sandbox did not answer in time", timed_out=True)
                try:
                    chunk = os.read(self._out, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise SandboxLost("the sandbox exited")
                self._buffer += chunk

    def request(self, message: dict, deadline: float) -> dict:
        """Send a command and return the supervisor's reply (relayed child frames here are a protocol error)."""
        self.send(message, deadline)
        kind, reply = self.receive(deadline)
        if kind != "S" or not isinstance(reply, dict):
            raise SandboxLost("unexpected frame from the sandbox")
        return reply

    @staticmethod
    def _remaining(deadline: float) -> float:
        return max(0.0, deadline - time.monotonic())

    # -------------------------------------------------------------------------------------------- end
    def close(self) -> None:
        """End the sandbox so that every process in it is reaped, not left as a zombie for the host's init.

        A healthy supervisor exits when its input closes, and bwrap then exits in order. A stuck one: killing
        the PID namespace's init makes the kernel kill and reap everything inside, and bwrap (our child)
        reaps that init. Killing bwrap's process group is the last resort.
        """
        process = getattr(self, "process", None)
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            process.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            if not self.unsafe:
                for init in _children(process.pid):
                    _kill(init)
            try:
                process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        _kill(-process.pid)  # the process group: bwrap, or the unsafe supervisor and what it started
        process.wait()
        self.process = None
        if self._slot is not None:
            self._slot.release()
            self._slot = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill(pid: int) -> None:
    """SIGKILL a process (or a group, for a negative pid) that may already be gone."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _bwrap_error() -> str:
    """What bwrap itself says when it cannot build the sandbox (our sandboxes discard its stderr)."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, seccomp_program())
        os.close(write_fd)
        slot = UidSlot()
        user = {"user": slot.uid, "group": slot.uid, "extra_groups": []} if slot.uid is not None else {}
        try:
            done = subprocess.run(bwrap_command(SandboxLimits(), read_fd, ["/usr/bin/true"]), capture_output=True,
                                  text=True, env={}, timeout=10, pass_fds=(read_fd,), **user)
        finally:
            slot.release()
    except (OSError, subprocess.SubprocessError, SandboxUnavailable) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        os.close(read_fd)
    message = done.stderr.strip() or f"exit status {done.returncode}"
    hint = " (user namespaces disabled? In Docker, allow them in the seccomp profile)" if "namespace" in message else ""
    return message + hint


ISOLATION_RETRY_S = 30.0  # how long a failed probe's answer stands before the next caller probes again
_isolation_lock = threading.Lock()
_isolation_works = False  # a probe succeeded: kept for the process
_isolation_failure: tuple[float, str] | None = None  # (when, why) of the last failed probe


def isolation_problem() -> str | None:
    """Why OS isolation does not work here (None when it does). A success is kept for the process; a failure
    may be transient (a loaded node, a caller short of descriptors), so it stands for `ISOLATION_RETRY_S` and
    is then probed again. Concurrent callers wait for one probe."""
    global _isolation_works, _isolation_failure
    if _isolation_works:
        return None
    with _isolation_lock:
        if _isolation_works:
            return None
        if _isolation_failure is not None and time.monotonic() - _isolation_failure[0] < ISOLATION_RETRY_S:
            return _isolation_failure[1]
        problem = probe_isolation()
        if problem is None:
            _isolation_works = True
        else:
            _isolation_failure = (time.monotonic(), problem)
        return problem


def probe_isolation() -> str | None:
    """Why OS isolation does not work here (None when it does), by starting one real sandbox."""
    if sys.platform != "linux":
        return f"bubblewrap isolation needs Linux (this is {sys.platform})"
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if not os.path.exists(SANDBOX_PYTHON):
        return f"{SANDBOX_PYTHON} is missing (the sandbox runs Python programs with the system interpreter)"
    try:
        seccomp_program()
    except (ImportError, OSError, RuntimeError) as exc:
        return f"cannot build the seccomp filter ({exc}); install libseccomp2 and `pip install pyseccomp`"
    try:
        supervisor_bytecode(SANDBOX_PYTHON)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{SANDBOX_PYTHON} cannot compile the sandbox supervisor ({exc})"
    try:
        with Sandbox() as sandbox:
            deadline = time.monotonic() + 10.0
            sandbox.request({"op": "load", "language": "python", "source": "print(6 * 7)"}, deadline)
            reply = sandbox.request({"op": "run", "mode": "stdio", "timeout_s": 5.0, "stdin": ""}, deadline)
    except (SandboxLost, SandboxUnavailable, OSError) as exc:
        return f"bubblewrap could not start a sandbox ({exc}): {_bwrap_error()}"
    if reply.get("stdout", "").strip() != "42":
        return f"the sandbox probe failed: {reply}"
    return None
