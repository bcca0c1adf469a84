"""Worker processes with a hard wall-clock limit per task, usable from any thread.

math-verify's SIGALRM timeouts work only in the main thread, have one-second granularity and cannot stop C-level
work (big-integer arithmetic, printing a power tower). Here each check runs in a worker process; a worker that
exceeds the limit is killed (SIGKILL stops any computation) and replaced, and only its task fails.

Workers are fresh interpreters (``python -c "...; _serve(target, memory)"``) talking over pipes, not
`multiprocessing` children: nothing of the caller is inherited (threads, CUDA, locks) and the caller's script is
never re-imported, so no ``if __name__ == "__main__"`` guard is needed. The pool keeps `SPARE_WORKERS` spare
workers booting or booted and puts a ready one in a killed worker's place, so timeouts in a row (each boots a new
spare, which takes a second or two on a loaded machine) do not make the next task wait for an interpreter to start.

A process forked from the caller (DataLoader workers, ``multiprocessing``'s fork start method) does not share
the caller's workers: after a fork the child forgets them (closing only its copies of their pipes) and boots its
own on first use. A worker exits when the process that started it is gone (even after a SIGKILL), so an orphan
never keeps computing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from ...registry import resolve_import_path

WALL_BACKSTOP = 10.0  # a task is killed after this many times its limit in wall-clock time, whatever its CPU time
SPARE_WORKERS = 2  # one spare let two timeouts in a row make the next verdict wait 2.1 s for a booting worker
BOOT_TIMEOUT_S = 120.0  # a worker that is not ready by then is broken (import error, exhausted machine)
_READY = "ready"
_WARM = "warm"  # the worker's warm-up is done (sent once, after `_READY`, between results)
PARENT_POLL_S = 0.5  # how often a worker checks that the process that started it is alive
_WORKER_MAIN = (f"import sys; from {__name__} import _serve; "
                "_serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the directory holding `trl_r1`


def _serve(target: str, memory_limit_bytes: int, parent_pid: int, warm_up: str = "") -> None:
    """Worker main: load `module:function`, then answer each task with ("ok", result) or ("error", reason); while
    no task waits, take the next step of the `warm_up` generator if any, and report `_WARM` when it is done."""
    _die_with_parent(parent_pid)
    replies = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # stray prints of the checked code go to stderr, not into the reply pipe
    tasks = Connection(0, writable=False)
    function = resolve_import_path(target)
    if memory_limit_bytes:
        _limit_memory(memory_limit_bytes)
    steps = _warm_up_steps(warm_up)
    try:
        replies.send(_READY)
        if steps is None:
            replies.send(_WARM)
    except OSError:  # the caller exited while this worker booted (a spare at interpreter exit)
        return
    while True:
        if steps is not None and not tasks.poll():  # idle: one step (a task waits for one step at most)
            try:
                next(steps)
                continue
            except StopIteration:
                pass
            except Exception as exc:  # a warm-up is an optimisation: a worker whose warm-up failed still serves
                print(f"worker warm-up failed: {type(exc).__name__}: {exc}"[:200], file=sys.stderr)
            steps = None
            try:
                replies.send(_WARM)
            except OSError:
                return
        try:
            args = tasks.recv()
        except (EOFError, OSError):
            return
        try:
            message = ("ok", function(*args))
        except MemoryError:
            message = ("error", "out of memory")
        except RecursionError:
            message = ("error", "recursion too deep")
        except Exception as exc:  # a bug or a sympy failure costs this task only
            message = ("error", f"{type(exc).__name__}: {exc}"[:200])
        try:
            replies.send(message)
        except OSError:
            return


def _warm_up_steps(warm_up: str) -> Iterator | None:
    """The steps of the `warm_up` generator function (``module:function``), None when there is none or it fails."""
    if not warm_up:
        return None
    try:
        return iter(resolve_import_path(warm_up)())
    except Exception as exc:
        print(f"worker warm-up failed: {type(exc).__name__}: {exc}"[:200], file=sys.stderr)
        return None


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker exit when the process that started it is gone, even in the middle of C-level work.

    On Linux the kernel sends SIGKILL (PR_SET_PDEATHSIG; it fires when the *thread* that started the worker
    exits, which is why `_spawn` starts workers from one long-lived thread). Elsewhere a thread polls the parent.
    """
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        armed = sys.platform.startswith("linux") and libc.prctl(1, signal.SIGKILL) == 0  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        armed = False
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        threading.Thread(target=_poll_parent, args=(parent_pid,), daemon=True).start()


def _poll_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


_spawner: ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def _spawn(*args, **kwargs) -> subprocess.Popen:
    """`subprocess.Popen` from one long-lived thread, so that a worker's death signal is not set off when the
    (possibly short-lived) thread that asked for it exits."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="math-verifier-spawner")
        spawner = _spawner
    return spawner.submit(subprocess.Popen, *args, **kwargs).result()


def _limit_memory(extra_bytes: int) -> None:
    """Cap the worker's address space at its current size plus `extra_bytes` (giant integers raise MemoryError).

    Only the soft limit is lowered, never above an inherited hard limit (``ulimit -v``, a scheduler's cap): an
    unprivileged process may not raise its hard limit, and a lower inherited limit already protects the node.
    """
    import resource

    with open("/proc/self/statm") as statm:
        current = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = current + extra_bytes
    for limit in (soft, hard):
        if limit != resource.RLIM_INFINITY:
            wanted = min(wanted, limit)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class _Worker:
    def __init__(self, target: str, memory_limit_bytes: int, warm_up: str = ""):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")])))
        self.process = _spawn(
            [sys.executable, "-c", _WORKER_MAIN, target, str(memory_limit_bytes), str(os.getpid()), warm_up],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True,
            process_group=0,  # a terminal's Ctrl-C reaches the caller alone (which ends it); no worker traceback
        )
        self.tasks = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self.replies = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        self.ready = False
        self.warm = False
        self.started = time.monotonic()

    def cpu_seconds(self) -> float | None:
        """CPU time the worker has used so far (Linux /proc), None where it cannot be read."""
        try:
            with open(f"/proc/{self.process.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime + stime
        except (OSError, IndexError, ValueError):
            return None

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self.close_pipes()

    def close_pipes(self) -> None:
        self.tasks.close()
        self.replies.close()


class WorkerPool:
    """Run ``module:function(*args)`` for many tasks on `workers` processes, each task under a hard `timeout_s`.

    The limit is the worker's CPU time (Linux; wall-clock time elsewhere), so a task that waited for a CPU on a
    loaded machine is not killed for it; a wall-clock limit (`WALL_BACKSTOP` times the limit unless the caller
    sets a tighter one) kills it regardless.

    `run` returns, per task, ("ok", result), ("timeout", reason) or ("error", reason), in task order. It is
    thread-safe (calls are serialised) and starts the workers on first use. A pool owns processes and is not
    picklable: reach it through a module-level accessor, as `trl_r1.verifiers.math` does. `warm_up` names a
    generator function (``module:function``) whose steps each worker takes while idle, after it reports ready: work
    that makes later tasks faster, which never delays a task by more than one step nor a spare's readiness.

    >>> pool = WorkerPool("operator:add", workers=1)
    >>> pool.run([(1, 2), ("a", 1)], timeout_s=60)
    [('ok', 3), ('error', 'TypeError: can only concatenate str (not "int") to str')]
    >>> pool.close()
    """

    def __init__(
        self, target: str, workers: int, memory_limit_bytes: int = 2 << 30, spares: int = SPARE_WORKERS,
        warm_up: str | None = None,
    ):
        self.target = target
        self.warm_up = warm_up or ""
        self.workers = max(1, int(workers))
        self.spares = max(1, int(spares))
        self.memory_limit_bytes = memory_limit_bytes
        self._pool: list[_Worker] = []
        self._spares: list[_Worker] = []
        self._lock = threading.Lock()
        _POOLS.add(self)

    def _forget_after_fork(self) -> None:
        """In a forked child: drop the parent's workers without touching them (only our copies of their pipes
        close), so the child boots its own and the parent's keep serving the parent."""
        for worker in self._pool + self._spares:
            worker.close_pipes()
            worker.process.returncode = 0  # not ours to reap
        self._pool, self._spares, self._lock = [], [], threading.Lock()

    def _replace(self, worker: _Worker) -> None:
        """Kill a worker and put a spare in its place, a ready one if any (the oldest booting one if none); boot a
        new spare."""
        worker.kill()
        spare = next((w for w in self._spares if w.ready), self._spares[0])
        self._spares.remove(spare)
        self._pool[self._pool.index(worker)] = spare
        self._spares.append(_Worker(self.target, self.memory_limit_bytes, self.warm_up))

    def start(self) -> None:
        """Boot the workers and spares and wait until all are ready and warmed up, so that nothing boots or warms
        up beside the first tasks (a benchmark's, a training run's first step); `run` boots them itself when this
        was not called, and a worker serves tasks while it warms up."""
        with self._lock:
            self._boot()
            give_up_warming = time.monotonic() + BOOT_TIMEOUT_S  # a warm-up is an optimisation: not waited for forever
            while any(not w.ready for w in self._pool + self._spares) or (
                time.monotonic() < give_up_warming and any(not w.warm for w in self._pool + self._spares)
            ):
                self._collect({}, [], warming=True)

    def _boot(self) -> None:
        while len(self._pool) < self.workers:
            self._pool.append(_Worker(self.target, self.memory_limit_bytes, self.warm_up))
        while len(self._spares) < self.spares:
            self._spares.append(_Worker(self.target, self.memory_limit_bytes, self.warm_up))

    def run(self, tasks: list[tuple], timeout_s: float, wall_limit_s: float | None = None) -> list[tuple[str, Any]]:
        """Each task under `timeout_s` of CPU time and `wall_limit_s` of wall-clock time (default `WALL_BACKSTOP`
        times `timeout_s`; a caller with a latency bound sets it)."""
        wall_limit = WALL_BACKSTOP * timeout_s if wall_limit_s is None else wall_limit_s
        with self._lock:
            self._boot()
            results: list[tuple[str, Any] | None] = [None] * len(tasks)
            queue = deque(range(len(tasks)))
            running: dict[_Worker, list] = {}  # worker: [task index, deadline, wall start, CPU start]
            while queue or running:
                for worker in list(self._pool):
                    if queue and worker.ready and worker not in running:
                        index = queue.popleft()
                        try:
                            worker.tasks.send(tasks[index])
                        except OSError:  # died while idle: retry the task on a new worker
                            queue.appendleft(index)
                            self._replace(worker)
                            continue
                        now = time.monotonic()
                        running[worker] = [index, now + min(timeout_s, wall_limit), now, worker.cpu_seconds()]
                self._collect(running, results)
                now = time.monotonic()
                for worker, (index, deadline, started, cpu_start) in list(running.items()):
                    if now < deadline:
                        continue
                    cpu_now = worker.cpu_seconds()
                    used = cpu_now - cpu_start if cpu_now is not None and cpu_start is not None else now - started
                    if used < timeout_s and now < started + wall_limit:  # waited for a CPU, not computing
                        running[worker][1] = min(now + max(timeout_s - used, 0.05), started + wall_limit)
                        continue
                    del running[worker]
                    limit = f"{timeout_s:g}s" if used >= timeout_s else f"{wall_limit:g}s wall-clock"
                    results[index] = ("timeout", f"over the {limit} limit")
                    self._replace(worker)
            return results

    def _collect(self, running: dict, results: list, warming: bool = False) -> None:
        """Wait for the next message (a result, a worker becoming ready, or warm if `warming`) or the nearest
        deadline."""
        booting = [w for w in self._pool + self._spares if not w.ready]
        if warming:
            booting += [w for w in self._pool + self._spares if w.ready and not w.warm]
        deadlines = [task[1] for task in running.values()] + [w.started + BOOT_TIMEOUT_S for w in booting]
        listening = {w.replies: w for w in booting + list(running)}
        for conn in wait(list(listening), timeout=max(0.0, min(deadlines) - time.monotonic())):
            worker = listening[conn]
            try:
                message = conn.recv()
            except (EOFError, OSError):
                if worker not in running:
                    raise RuntimeError(f"a math verifier worker failed to start: {self.target}") from None
                index = running.pop(worker)[0]
                self._replace(worker)  # reaps it, so its exit code is known
                results[index] = ("error", f"worker died (exit code {worker.process.returncode})")
                continue
            if message == _READY:
                worker.ready = True
            elif message == _WARM:
                worker.warm = True
            else:
                index = running.pop(worker)[0]
                results[index] = message
        if any(not w.ready and time.monotonic() > w.started + BOOT_TIMEOUT_S for w in booting):
            raise RuntimeError(f"a math verifier worker did not start within {BOOT_TIMEOUT_S:g}s")

    def close(self) -> None:
        with self._lock:
            for worker in self._pool + self._spares:
                worker.kill()
            self._pool.clear()
            self._spares.clear()


_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


def _forget_pools_after_fork() -> None:
    global _spawner, _spawner_lock
    _spawner, _spawner_lock = None, threading.Lock()  # the spawner thread did not survive the fork
    for pool in list(_POOLS):
        pool._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)
