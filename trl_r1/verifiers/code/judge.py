"""The judge: a process of its own between the trainer and the sandbox, which runs every test of a job.

The trainer (``runner.py``) never reads what a program sends. It starts one judge per worker and hands it
jobs; the judge starts the program's sandbox, talks to its supervisor, runs the (trusted) assert snippets
against proxies of the program's objects, decodes every value the program returns, compares stdio output,
and sends back one fixed-layout verdict per test (`protocol.pack_verdict`). Whatever the program makes the
judge do (decode huge or hash-colliding values, break the protocol, stall) happens in this process, under
its own memory limit and the trainer's per-test deadline, and costs only the test in progress.

The judge loads no module a program names: assert snippets see the program's modules only as the judge's
own import of a fixed list of standard-library modules (`TEST_MODULES`), imported before any job.
"""

from __future__ import annotations

import ast
import builtins
import collections
import decimal
import fractions
import importlib
import itertools
import marshal
import os
import resource
import sys
import time
import types
from collections import deque
from dataclasses import dataclass
from typing import Any

from .languages import Language, resolve_language
from .protocol import (
    CONTAINERS,
    HEADER_SIZE,
    STARTED,
    decode_scalar,
    encode_scalar,
    pack_verdict,
    read_frame,
    write_all,
)
from .rlimits import lower_limit
from .runner import (
    GRACE_S,
    MAX_ITERATED_BYTES,
    MAX_REPLY_BYTES,
    START_TIMEOUT_S,
    Outcome,
    TestCase,
    TestResult,
    _short,
    outputs_match,
)
from .sandbox import Sandbox, SandboxLimits, SandboxLost, SandboxUnavailable


# ------------------------------------------------------------------------------------------------ assert proxies
class SandboxEnded(BaseException):
    """The program's process ended during an assert test (BaseException: test code cannot catch it)."""

    def __init__(self, done: dict | None):
        super().__init__("the program's process ended")
        self.done = done


class RemoteError(Exception):
    """An exception raised inside the sandbox whose type is not a built-in exception."""


class RemoteObject:
    """An object that lives in the sandbox: it can be called, its attributes read and it can be iterated.

    Iterating brings its items back like any returned value (so ``list(gen())``, ``next(gen)`` and
    ``sorted(map_object)`` work): a container's all at once, an iterator's in growing chunks, so that
    ``islice`` over an endless generator ends. Truth tests, ``len``, indexing, ``str``/``repr``/f-strings and
    ``int``/``float``/use as an index are the object's own, computed in the sandbox (``while node:`` over a
    linked list), and their plain result (an exact ``str``, ``int``...) is what the test sees, like a method's.
    Comparisons, hashing by value, arithmetic and ``in`` (done by iterating, compared here) are not the
    object's: they would hand the test's expected value to the object, and an object whose ``__eq__`` or
    ``__contains__`` always holds must not satisfy an assertion.
    """

    __slots__ = ("_session", "_handle")

    def __init__(self, session: "_AssertSession", handle: int):
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_handle", handle)

    def __call__(self, *args, **kwargs):
        session = self._session
        originals: list = []  # the test's lists, dicts and sets passed in, numbered as the sandbox will
        refs: dict[int, int] = {}
        message = {"op": "call", "target": self._handle, "args": [session.encode(a, refs=(originals, refs)) for a in args],
                   "kwargs": [[k, session.encode(v, refs=(originals, refs))] for k, v in kwargs.items()]}
        reply = session.exchange(message)
        value = session.decode(reply["value"], originals=originals)
        mutated = reply.get("mutated")
        if not isinstance(mutated, list):
            raise RemoteError("malformed reply from the sandbox")
        updates = []
        for change in mutated:  # in-place changes at any depth (nums.sort(), t[0].append(1)) show in the test's objects
            if not (isinstance(change, list) and len(change) == 2 and type(change[0]) is int
                    and 0 <= change[0] < len(originals)):
                raise RemoteError("malformed reply from the sandbox")
            updates.append((originals[change[0]], session.decode(change[1], originals=originals, fresh_top=True)))
        for target, contents in updates:
            _update_in_place(target, contents)
        return value

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._session.request({"op": "getattr", "target": self._handle, "name": name})

    def __iter__(self):
        return self._session.iterate(self._handle)

    def __next__(self):
        for item in self._session.iterate(self._handle, single=True):
            return item
        raise StopIteration

    def _plain(self, op: str, **extra):  # the object's own answer, as plain data (see the supervisor's PLAIN_RESULTS)
        return self._session.request({"op": op, "target": self._handle, **extra})

    def __bool__(self):
        return self._plain("bool")

    def __len__(self):
        return self._plain("len")

    def __str__(self):
        return self._plain("str")

    def __repr__(self):
        return self._plain("repr")

    def __format__(self, spec):
        return self._plain("format", spec=spec)

    def __int__(self):
        return self._plain("int")

    def __float__(self):
        return self._plain("float")

    def __index__(self):
        return self._plain("index")

    def __getitem__(self, key):
        return self._session.request({"op": "getitem", "target": self._handle, "key": self._session.encode(key)})

    def __instancecheck__(self, instance):  # isinstance(node, Node) with the program's class
        try:
            value = self._session.encode(instance)
        except TypeError:  # a host object (a lambda, a module) is no instance of the program's classes
            return False
        return self._session.request({"op": "isinstance", "target": self._handle, "value": value})

    def __setattr__(self, name, value):  # root.left = TreeNode(2): set in the sandbox, by the program's own rules
        if name.startswith("__"):
            raise TypeError("special attributes of objects in the sandbox are read-only from the test")
        self._session.request({"op": "setattr", "target": self._handle, "name": name,
                               "value": self._session.encode(value)})

    def _refuse(self, *args):
        raise TypeError("an object from the sandbox cannot be compared")

    # objects compare by identity by default: refuse instead (arithmetic already raises TypeError, as this
    # class does not define it)
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __hash__ = None  # a set or dict key would use the judge's identity, not the program's __hash__/__eq__



def _update_in_place(target: Any, value: Any) -> None:
    """Give the test's list, dict or set the contents the sandbox's copy has after a call (the items that
    are the test's own objects arrive as themselves, so identity and aliasing stay as in Python)."""
    if type(target) is not type(value) or type(target) not in (list, dict, set):
        raise RemoteError("malformed reply from the sandbox")
    if type(target) is list:
        target[:] = value
    else:
        target.clear()
        target.update(value)


_STDLIB_TYPES = frozenset({"OrderedDict", "Counter", "deque", "Fraction", "Decimal"})


def _rebuild_stdlib(name: str, value: Any) -> Any:
    """The host's own instance of a standard-library type the sandbox sent as plain data (a wrong shape is
    a ValueError): it compares as that type does (an OrderedDict's order counts, a Counter's zeros do not)."""
    if name in ("OrderedDict", "Counter") and type(value) is dict:
        return collections.OrderedDict(value) if name == "OrderedDict" else collections.Counter(value)
    if name == "deque" and type(value) is list:
        return collections.deque(value)
    if (name == "Fraction" and type(value) is list and len(value) == 2 and value[1]
            and all(type(x) is int and x.bit_length() <= 1 << 16 for x in value)):  # gcd of huge ints: host CPU
        return fractions.Fraction(*value)
    if name == "Decimal" and type(value) is str:
        try:
            return decimal.Decimal(value)
        except decimal.InvalidOperation:
            pass
    raise ValueError(f"bad {name}")


MAX_GENERATOR_ITEMS = 1 << 20


def _stdlib_plain(value: Any) -> Any:
    """The plain data a standard-library value the test passes in is rebuilt from in the sandbox, else None."""
    kind = type(value)
    if kind in (collections.Counter, collections.OrderedDict):
        return dict(value)
    if kind is collections.deque:
        return list(value)
    if kind is fractions.Fraction:
        return [value.numerator, value.denominator]
    if kind is decimal.Decimal:
        return str(value)
    if kind is range:
        return [value.start, value.stop, value.step]
    if kind is types.GeneratorType:  # sum(x * x for x in xs): its items, passed in as an iterator
        items = list(itertools.islice(value, MAX_GENERATOR_ITEMS + 1))
        if len(items) > MAX_GENERATOR_ITEMS:
            raise TypeError(f"cannot pass a generator of more than {MAX_GENERATOR_ITEMS} items into the sandbox")
        return items
    return None


def _read_only(self, name, value):
    raise TypeError("values from the sandbox are read-only from the test")


def _plain_view(base: type) -> type:
    """A host-side subclass of `base` for a sandbox object of a subclass of it (Counter, namedtuple, IntEnum).

    Its value is the plain data the sandbox read with the base type's own code, so ``==``, ``len`` and
    hashing are the host's; attributes the base type lacks (a namedtuple's fields, ``most_common``) are
    read from the sandbox object, and copies or pickles are plain `base` values.
    """

    def __getattr__(self, name):
        if name.startswith("__") or name == "_remote":
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "_remote"), name)

    def __reduce__(self):
        return base, (base(self),)

    return type(f"sandboxed_{base.__name__}", (base,), {"__getattr__": __getattr__, "__reduce__": __reduce__,
                                                         "__setattr__": _read_only})


_PLAIN_VIEWS = {base: _plain_view(base) for base in (int, float, str, bytes, list, tuple, dict, set, frozenset)}
_VIEW_TYPES = frozenset(_PLAIN_VIEWS.values())


class _AssertSession:
    """The host side of one assert test: relays calls into the child and decodes replies strictly."""

    def __init__(self, sandbox: Sandbox, deadline: float):
        self.sandbox = sandbox
        self.deadline = deadline
        self.done: dict | None = None  # the supervisor's report, once the test's process ended
        self.lost: SandboxLost | None = None  # the supervisor stopped answering
        self.fetched: dict[int, deque] = {}  # items taken from a sandbox iterator in a chunk, not yet used
        self.iterated_bytes = 0
        self.over_budget = False  # iterating took over MAX_ITERATED_BYTES: the host's memory is at stake
        self.copies: dict[int, tuple] = {}  # containers rebuilt from the sandbox's values, by id
        self._passed: frozenset = frozenset()  # ids of the test's objects passed in the call being decoded
        self._kept: list = []

    def iterate(self, handle: int, single: bool = False):
        """The items of a sandbox object; an iterator's are fetched 1, 2, 4, ... at a time and kept per handle."""
        fetched = self.fetched.setdefault(handle, deque())
        count = 1
        while True:
            while fetched:
                yield fetched.popleft()
            received = self.sandbox.received_bytes
            reply = self.exchange({"op": "iterate", "target": handle, "count": count})
            self.iterated_bytes += self.sandbox.received_bytes - received
            if self.iterated_bytes > MAX_ITERATED_BYTES:
                self.over_budget = True
                raise SandboxEnded(None)
            items = self.decode(reply["value"])
            if type(items) is not list:
                raise RemoteError("malformed reply from the sandbox")
            if reply.get("container") is True:  # not an iterator: each iteration starts afresh
                if single:
                    raise TypeError("an object from the sandbox that is not an iterator")
                yield from items
                return
            if not items:
                return
            fetched.extend(items)
            count = min(2 * count, 4096)

    def request(self, message: dict) -> Any:
        return self.decode(self.exchange(message)["value"])

    def exchange(self, message: dict) -> dict:
        """The child's reply to one request, with a ``value``; an exception raised there is raised here."""
        if self.done is not None or self.lost is not None or self.over_budget:
            raise SandboxEnded(self.done)
        try:
            self.sandbox.send(message, self.deadline)
        except SandboxLost as exc:
            self.lost = exc
            raise SandboxEnded(None) from None
        reply = self.receive()
        if "error" in reply:
            raise _remote_exception(reply.get("error"), reply.get("message"), reply.get("bases"))
        if "value" not in reply:
            raise RemoteError("malformed reply from the sandbox")
        return reply

    def receive(self) -> dict:
        """The child's next frame; the supervisor's ``done`` (the child ended) or silence raises SandboxEnded."""
        try:
            kind, frame = self.sandbox.receive(self.deadline)
        except SandboxLost as exc:  # raised as SandboxEnded, so that the test's `except Exception` cannot hide it
            self.lost = exc
            raise SandboxEnded(None) from None
        if kind == "S":
            self.done = frame if isinstance(frame, dict) else {}
            raise SandboxEnded(self.done)
        if not isinstance(frame, dict):
            raise RemoteError("malformed reply from the sandbox")
        return frame

    def encode(self, value: Any, depth: int = 0, refs: tuple[list, dict] | None = None) -> list:
        """An argument as the child's tagged tree: plain data (exact types), a standard-library value
        (Counter, deque, Fraction, Decimal, range) or a handle the child gave us. With `refs`, each list,
        dict and set is numbered in `refs` (the call's originals) and sent again as ``["ref", i]``."""
        if depth > 200:
            raise ValueError("argument nested too deeply")
        kind = type(value)
        if isinstance(value, RemoteObject):
            return ["handle", object.__getattribute__(value, "_handle")]
        if kind in _VIEW_TYPES:  # a Counter or namedtuple that came out of the sandbox goes back as itself
            return ["handle", object.__getattribute__(object.__getattribute__(value, "_remote"), "_handle")]
        scalar = encode_scalar(value)
        if scalar is not None:
            return scalar
        if kind in (list, dict, set):
            originals, seen = refs if refs is not None else ([], {})
            if id(value) in seen:
                return ["ref", seen[id(value)]]
            seen[id(value)] = len(originals)
            originals.append(value)
            refs = (originals, seen)
        if kind in (list, tuple, set, frozenset):
            return [kind.__name__] + [self.encode(v, depth + 1, refs) for v in value]
        if kind is dict:
            return ["dict"] + [[self.encode(k, depth + 1, refs), self.encode(v, depth + 1, refs)] for k, v in value.items()]
        plain = _stdlib_plain(value)
        if plain is not None:
            return ["stdlib", "iter" if kind is types.GeneratorType else kind.__name__, self.encode(plain, depth + 1)]
        raise TypeError(f"cannot pass a {kind.__name__} into the sandbox (only plain data and sandbox objects)")

    def decode(self, tree: Any, depth: int = 0, originals: list | None = None, fresh_top: bool = False) -> Any:
        """Rebuild plain data from the child's tagged tree; any malformed node is a protocol error.

        ``["ref", i]`` is `originals[i]` (the test's own object passed in this call). Every other container
        is a new object whose identity says nothing about the program's: it is recorded, and ``is``/``id()``
        on it raise TypeError in the test (`_Identity`).
        """
        self._passed = frozenset(map(id, originals or ()))
        self._kept.append(originals)  # their ids stay theirs while copies refer to them
        try:
            return self._decode(tree, depth, originals or [], fresh_top)
        except RemoteError:
            raise
        except (TypeError, ValueError, IndexError, KeyError, OverflowError, RecursionError) as exc:
            raise RemoteError(f"malformed value from the sandbox ({type(exc).__name__})") from None

    def _decode(self, tree: Any, depth: int, originals: list, fresh_top: bool = False) -> Any:
        if not isinstance(tree, list) or not tree or depth > 200:
            raise ValueError("bad node")
        tag, rest = tree[0], tree[1:]
        if tag == "handle" and len(rest) == 1 and type(rest[0]) is int:
            return RemoteObject(self, rest[0])
        if tag == "ref" and len(rest) == 1 and type(rest[0]) is int and 0 <= rest[0] < len(originals):
            return originals[rest[0]]
        if tag == "stdlib" and len(rest) == 2 and rest[0] in _STDLIB_TYPES:
            return self._track(_rebuild_stdlib(rest[0], self._decode(rest[1], depth + 1, originals)))
        if tag == "sub" and len(rest) == 2 and type(rest[0]) is int:
            value = self._decode(rest[1], depth + 1, originals)
            view = _PLAIN_VIEWS[type(value)](value)  # KeyError for None or bool: a protocol error
            object.__setattr__(view, "_remote", RemoteObject(self, rest[0]))
            return self._track(view)
        if tag == "dict":
            if not all(isinstance(pair, list) and len(pair) == 2 for pair in rest):
                raise ValueError("bad dict node")
            value = {self._decode(k, depth + 1, originals): self._decode(v, depth + 1, originals) for k, v in rest}
            return value if fresh_top else self._track(value)
        if tag in CONTAINERS:
            value = CONTAINERS[tag](self._decode(v, depth + 1, originals) for v in rest)
            return value if fresh_top else self._track(value)
        return decode_scalar(tree)

    def _track(self, value: Any) -> Any:
        # kept alive (its id stays its own for the test's lifetime), with the test's objects it is known not
        # to be: those passed in the call it came from (one of them would have come back as a reference)
        self.copies[id(value)] = (value, self._passed)
        return value

    def is_copy(self, value: Any) -> bool:
        """Whether `value` is a container rebuilt from the sandbox (its identity is not the program's)."""
        entry = self.copies.get(id(value))
        return entry is not None and entry[0] is value

    def known_distinct(self, copy: Any, other: Any) -> bool:
        """Whether the sandbox object `copy` was rebuilt from is known not to be the test's object `other`."""
        return not self.is_copy(other) and id(other) in self.copies[id(copy)][1]


class _Identity:
    """``is``, ``is not`` and ``id()`` in the test snippet, answered truthfully or not at all.

    Every value from the sandbox is rebuilt in the judge, so the judge's identity of it says nothing about
    the program's (``clone(n) is not n`` would hold for a clone that returns its input). Sandbox objects
    compare by handle (one handle per object), the test's own lists, dicts and sets come back as themselves,
    and a rebuilt container raises TypeError, failing the test closed.
    """

    def __init__(self, session: _AssertSession):
        self.session = session

    def _handle(self, value: Any) -> int | None:
        if isinstance(value, RemoteObject):
            return object.__getattribute__(value, "_handle")
        if type(value) in _VIEW_TYPES:
            return object.__getattribute__(object.__getattribute__(value, "_remote"), "_handle")
        return None

    def same(self, a: Any, b: Any) -> bool:
        if a is None or b is None or type(a) is bool or type(b) is bool:
            return a is b  # singletons: the same in both processes
        handle_a, handle_b = self._handle(a), self._handle(b)
        if handle_a is not None or handle_b is not None:  # a sandbox object is never one of the test's own
            return handle_a == handle_b
        copy_a, copy_b = self.session.is_copy(a), self.session.is_copy(b)
        if copy_a and copy_b and a is b:  # rebuilt from the same node: the same sandbox object
            return True
        if (copy_a and self.session.known_distinct(a, b)) or (copy_b and self.session.known_distinct(b, a)):
            return False  # deep_copy(a) is not a: had the program returned `a`, it would have come back as `a`
        if copy_a or copy_b:
            raise TypeError("the identity of a value copied out of the sandbox is unknown")
        return a is b

    def id(self, value: Any) -> int:
        if self._handle(value) is not None or self.session.is_copy(value):
            raise TypeError("the identity of a value from the sandbox is unknown")
        return id(value)


class _IdentityRewriter(ast.NodeTransformer):
    """Rewrite ``a is b`` / ``a is not b`` in the test snippet into calls of `_Identity.same`."""

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if not any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return node
        operands = [node.left, *node.comparators]
        names = [f"__trl_operand_{id(node)}_{i}__" for i in range(len(operands))]
        checks = []
        for i, op in enumerate(node.ops):
            left, right = ast.Name(names[i], ast.Load()), ast.Name(names[i + 1], ast.Load())
            if isinstance(op, (ast.Is, ast.IsNot)):
                check = ast.Call(ast.Name("__trl_same__", ast.Load()), [left, right], [])
                if isinstance(op, ast.IsNot):
                    check = ast.UnaryOp(ast.Not(), check)
            else:
                check = ast.Compare(left, [op], [right])
            checks.append(check)
        # (lambda a, b, c: check(a, b) and check(b, c))(x, y, z): each operand evaluated once, in order
        body = checks[0] if len(checks) == 1 else ast.BoolOp(ast.And(), checks)
        function = ast.Lambda(ast.arguments([], [ast.arg(n) for n in names], None, [], [], None, []), body)
        return ast.copy_location(ast.Call(function, operands, []), node)


def _compile_test(code: str):
    tree = _IdentityRewriter().visit(ast.parse(code, "<test>", "exec"))
    return compile(ast.fix_missing_locations(tree), "<test>", "exec")


def _message(exc: BaseException) -> str:
    """An exception's text for the verdict. It may hold the program's objects (``assert ok, node``), whose
    ``str`` is computed in the sandbox and can raise or end the program like any request: then no text."""
    try:
        return _short(str(exc))
    except (Exception, SandboxEnded):
        return "(no message: formatting it failed in the sandbox)"


def _remote_exception(name: Any, message: Any, bases: Any = None) -> Exception:
    """A host exception for one raised in the sandbox: the built-in type of that name or of its nearest
    built-in base class (a program's ``class Invalid(ValueError)`` is caught by ``except ValueError``),
    else RemoteError."""
    text = _short(message) if isinstance(message, str) else ""
    for candidate in [name, *(bases if isinstance(bases, list) else [])]:
        kind = getattr(builtins, candidate, None) if isinstance(candidate, str) else None
        if isinstance(kind, type) and issubclass(kind, (StopIteration, StopAsyncIteration)):
            # as PEP 479 does for generators: else it would end the test's map()/all() early, passing it
            return RuntimeError(f"{name} raised in the sandbox: {text}")
        if isinstance(kind, type) and issubclass(kind, Exception):
            try:
                return kind(text)
            except Exception:
                continue
    return RemoteError(f"{name}: {text}")


# The only modules a test snippet gets from the program's names, imported here before any job: a name the
# program bound to one of these modules (``import heapq as hq``), or a name of one of them whatever the
# program bound to it. Any other module the program announces is not bound (the snippet sees a NameError):
# importing a name a program chose would run code (``lib2to3.__main__``, ``unittest.__main__``...) here.
TEST_MODULES = {name: importlib.import_module(name) for name in (
    "math", "cmath", "re", "random", "string", "collections", "itertools", "functools", "heapq", "bisect",
    "typing", "sys", "os", "copy", "json", "operator", "statistics", "fractions", "decimal", "datetime", "time",
    "numbers", "array", "enum", "dataclasses", "textwrap", "unicodedata", "hashlib", "struct", "collections.abc",
    "posixpath", "io", "base64", "binascii", "calendar", "queue",
)}
_MODULES_TESTS_USE = frozenset({
    "math", "cmath", "re", "random", "string", "collections", "itertools", "functools", "heapq", "bisect",
    "typing", "sys", "os", "copy", "json", "operator", "statistics", "fractions", "decimal", "datetime", "time",
})


class _TestNamespace(dict):
    """The globals the test snippet runs in; the program's plain top-level data is read live on each use."""

    def __init__(self, session: _AssertSession, live_names: set[str]):
        super().__init__(__builtins__=builtins, __name__="__test__")
        self._session = session
        self._live_names = live_names

    def __missing__(self, name: str) -> Any:
        if name in self._live_names:
            return self._session.request({"op": "getglobal", "name": name})
        raise KeyError(name)


def _test_globals(session: _AssertSession, names: dict) -> dict:
    """The namespace the test snippet runs in: the program's top-level names as proxies or live values.

    Names of builtins are not taken from the program (a program cannot redefine ``abs`` for the test),
    and modules are the judge's own, from `TEST_MODULES` only, never the program's object.
    """
    live_names = set()
    bound: dict[str, Any] = {}
    for name, tree in names.items():
        if not isinstance(name, str) or name.startswith("__") or hasattr(builtins, name):
            continue
        if name in _MODULES_TESTS_USE:  # whatever the program bound to this name, the test gets the real module
            bound[name] = TEST_MODULES[name]
        elif isinstance(tree, list) and len(tree) == 2 and tree[0] == "module":
            if isinstance(tree[1], str) and tree[1] in TEST_MODULES:
                bound[name] = TEST_MODULES[tree[1]]
        elif tree == ["value"]:
            live_names.add(name)
        else:
            bound[name] = session.decode(tree)
    namespace = _TestNamespace(session, live_names)
    namespace.update(bound)
    identity = _Identity(session)
    namespace.update(__trl_same__=identity.same, id=identity.id)
    return namespace


# ------------------------------------------------------------------------------------------------ one job
@dataclass
class _Job:
    """One program's tests, run in order; `send` gets ``None`` when a test starts and each TestResult."""

    program: str
    cases: list[TestCase]
    language: Language
    timeout_s: float
    limits: SandboxLimits
    unsafe: bool
    max_output: int
    compile_timeout_s: float
    seccomp: bytes | None
    send: Any
    sandbox: Sandbox | None = None

    def run(self) -> None:
        try:
            for index, case in enumerate(self.cases):
                result, replace = self._result(case)
                if result.outcome is Outcome.COMPILE_ERROR:  # the same source will not compile again
                    for _ in self.cases[index:]:
                        self.send(result)
                    return
                if index == len(self.cases) - 1:  # the job's end: nothing of it outlives its last verdict
                    self._stop()
                self.send(result)  # mid-job, before replacing the sandbox: the clean-up is on the next test's clock
                if replace:
                    self._stop()
        finally:
            self._stop()

    def _result(self, case: TestCase) -> tuple[TestResult, bool]:
        """The case's outcome, and whether the sandbox must be replaced before the next test (whatever goes
        wrong while the test runs fails it and replaces the sandbox)."""
        if case.problem is not None:
            return TestResult(Outcome.ERROR, case.problem), False
        if case.kind == "assert" and not self.language.supports_assert:
            return TestResult(Outcome.ERROR, f"assert tests need Python, not {self.language.name}"), False
        try:
            if self.sandbox is None:
                failure = self._start()
                if failure is not None:
                    return failure, False
            self.send(None)  # the test starts: the trainer's deadline for it runs from here
            result, done = self._run_case(case)
            return result, done.get("clean") is not True  # files the supervisor could not remove: a fresh sandbox
        except (SandboxLost, OSError) as exc:  # the supervisor stopped answering
            return TestResult(Outcome.TIMEOUT if getattr(exc, "timed_out", False) else Outcome.CRASH, str(exc)), True
        except BaseException as exc:  # anything a program can make the judge raise fails its test, nothing more
            return TestResult(Outcome.CRASH, f"judge: {type(exc).__name__}: {_short(str(exc))}"), True

    def _start(self) -> TestResult | None:
        """Start a sandbox and load the program (compiling C++); a TestResult says why that failed."""
        started = time.monotonic()
        budget = START_TIMEOUT_S + (self.compile_timeout_s if self.language.compile_command else 0.0)
        try:
            self.sandbox = Sandbox(self.limits, unsafe=self.unsafe, seccomp=self.seccomp)
            reply = self.sandbox.request({
                "op": "load", "language": self.language.name, "source": self.program,
                "compile": list(self.language.compile_command or ()), "compile_timeout_s": self.compile_timeout_s,
            }, started + budget)
        except (SandboxLost, SandboxUnavailable, OSError) as exc:
            self._stop()
            return TestResult(Outcome.ERROR, f"sandbox failed to start: {exc}", wall_s=time.monotonic() - started)
        if not reply.get("ok"):
            self._stop()
            detail = "compiler timed out" if reply.get("timed_out") else "compilation failed"
            return TestResult(Outcome.COMPILE_ERROR, detail, stderr=str(reply.get("stderr", "")),
                              wall_s=time.monotonic() - started)
        return None

    def _stop(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None

    def _run_case(self, case: TestCase) -> tuple[TestResult, dict]:
        """The test's result and the supervisor's report of the test's process."""
        deadline = time.monotonic() + self.timeout_s + GRACE_S
        if case.kind == "assert":
            return self._run_assert(case, deadline)
        done = self.sandbox.request({
            "op": "run", "mode": "stdio", "timeout_s": self.timeout_s, "stdin": case.input,
            # from what the program sees anyway: a cap set by the expected output would reveal its length
            "max_output": max(self.max_output, 4 * len(case.input)),
        }, deadline)
        failure = _failure(done)
        if failure is not None:
            return failure, done
        if outputs_match(str(done.get("stdout", "")), case.output):
            return TestResult(Outcome.PASSED, wall_s=_wall(done)), done
        detail = f"expected {_short(case.output.strip())!r}, got {_short(str(done.get('stdout', '')).strip())!r}"
        return TestResult(Outcome.WRONG_ANSWER, detail, str(done.get("stderr", "")), _wall(done)), done

    def _run_assert(self, case: TestCase, deadline: float) -> tuple[TestResult, dict]:
        session = _AssertSession(self.sandbox, deadline)
        self.sandbox.send({"op": "run", "mode": "assert", "timeout_s": self.timeout_s,
                           "max_output": max(self.max_output, MAX_REPLY_BYTES)}, deadline)
        verdict: TestResult | None = None
        try:
            ready = session.receive()
            names = ready.get("ready")
            if not isinstance(names, dict):
                raise RemoteError("malformed announcement from the sandbox")
            namespace = _test_globals(session, names)
            exec(_compile_test(case.code), namespace)
        except SandboxEnded:
            pass
        except AssertionError as exc:
            verdict = TestResult(Outcome.WRONG_ANSWER, f"AssertionError: {_message(exc)}".rstrip(": "))
        except SyntaxError as exc:
            verdict = TestResult(Outcome.ERROR, f"the test does not compile: {exc}")
        except Exception as exc:  # the test raised (a remote exception, a refused comparison, a NameError...)
            verdict = TestResult(Outcome.WRONG_ANSWER, f"{type(exc).__name__}: {_message(exc)}")
        if session.done is None and session.lost is None:
            self.sandbox.send({"op": "end"}, deadline)
            while session.done is None and session.lost is None:  # late frames from the child are dropped
                try:
                    session.receive()
                except SandboxEnded:
                    break
                except RemoteError:  # junk from the child after the test: it cannot change the verdict
                    continue
        if session.lost is not None:
            raise session.lost
        done = session.done
        if session.over_budget and done.get("ended_by_host"):
            return TestResult(Outcome.LIMIT_EXCEEDED, f"iterating took over {MAX_ITERATED_BYTES >> 20} MiB from the sandbox",
                              str(done.get("stderr", "")), _wall(done)), done
        if not done.get("ended_by_host"):  # the program's process ended (or was killed) before the test did
            return _failure(done) or TestResult(Outcome.CRASH, "the program exited during the test",
                                                str(done.get("stderr", "")), _wall(done)), done
        if verdict is not None:
            return TestResult(verdict.outcome, verdict.detail, str(done.get("stderr", "")), _wall(done)), done
        return TestResult(Outcome.PASSED, wall_s=_wall(done)), done


def _wall(done: dict) -> float:
    value = done.get("wall_s")
    return float(value) if isinstance(value, (int, float)) else 0.0


def _failure(done: dict) -> TestResult | None:
    """The outcome of a process that did not finish cleanly (None when it exited 0 in time)."""
    stderr = str(done.get("stderr", ""))
    wall = _wall(done)
    if done.get("timed_out"):
        return TestResult(Outcome.TIMEOUT, "time limit exceeded", stderr, wall)
    if done.get("output_exceeded"):
        return TestResult(Outcome.LIMIT_EXCEEDED, "output limit exceeded", stderr, wall)
    if done.get("inodes_exceeded"):
        return TestResult(Outcome.LIMIT_EXCEEDED, "too many files in the scratch space", stderr, wall)
    signal_number = done.get("signal")
    if signal_number is not None:
        if signal_number == 24:  # SIGXCPU
            return TestResult(Outcome.TIMEOUT, "CPU time limit exceeded", stderr, wall)
        if signal_number == 25:  # SIGXFSZ
            return TestResult(Outcome.LIMIT_EXCEEDED, "file size limit exceeded", stderr, wall)
        return TestResult(Outcome.CRASH, f"killed by signal {signal_number}", stderr, wall)
    returncode = done.get("returncode")
    if returncode == 0:
        return None
    last_line = stderr.strip().rsplit("\n", 1)[-1]
    if last_line.startswith("MemoryError"):
        return TestResult(Outcome.LIMIT_EXCEEDED, "memory limit exceeded", stderr, wall)
    if "[Errno 27]" in last_line or "[Errno 28]" in last_line:  # EFBIG / ENOSPC: file size or scratch space
        return TestResult(Outcome.LIMIT_EXCEEDED, "file size or disk limit exceeded", stderr, wall)
    return TestResult(Outcome.CRASH, f"exit status {returncode}", stderr, wall)



# ------------------------------------------------------------------------------------------------ the process
def serve(job_in: int, verdict_out: int) -> None:
    """Run jobs from the trainer until it closes the channel; each test's verdict is sent as it ends."""
    config = marshal.loads(read_frame(job_in)[HEADER_SIZE:])
    lower_limit(resource.RLIMIT_AS, config["memory_mb"] << 20)  # soft only: the sandbox sets its own
    write_all(verdict_out, pack_verdict(STARTED))  # ready
    codes = {outcome: i for i, outcome in enumerate(Outcome)}

    def send(result: TestResult | None) -> None:
        if result is None:
            write_all(verdict_out, pack_verdict(STARTED))
        else:
            write_all(verdict_out, pack_verdict(codes[result.outcome], result.detail, result.stderr, result.wall_s))

    while True:
        try:
            job = marshal.loads(read_frame(job_in)[HEADER_SIZE:])
        except (EOFError, OSError, ValueError):
            return
        _Job(program=job["program"], cases=[TestCase(*case) for case in job["cases"]],
             language=resolve_language(job["language"]), timeout_s=job["timeout_s"],
             limits=SandboxLimits(**job["limits"]), unsafe=job["unsafe"], max_output=job["max_output"],
             compile_timeout_s=job["compile_timeout_s"], seccomp=config["seccomp"], send=send).run()


def main() -> None:
    """Entry point of the judge process: the trainer's pipes become private fds, stdio goes nowhere."""
    job_in, verdict_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # a test snippet that prints or reads cannot touch the verdict channel
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = open(os.devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    try:
        serve(job_in, verdict_out)
    except BaseException:  # the trainer sees the channel close: the test in progress fails
        os._exit(1)
    os._exit(0)
