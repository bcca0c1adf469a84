"""The code verifier's wire formats, in one place for both sides of every boundary (standard library only).

Three processes talk over pipes (see ``docs/code_reward.md``):

* trainer -> judge: ``marshal`` frames (trusted data: the job, the tests).
* judge -> sandbox supervisor: ``marshal`` frames (trusted data: commands, the test's arguments).
* sandbox -> judge: JSON frames (``dump_json``), one byte first saying who wrote them: ``S`` (the trusted
  supervisor) or ``C`` (relayed from an assert test's child: program-controlled, parsed strictly).
* judge -> trainer: fixed-layout verdicts (`pack_verdict`): the only thing the trainer ever reads, so
  what it costs the trainer is bounded whatever the program does.

Every frame is a 4-byte big-endian length, then the payload. The sandbox cannot import this package (it
runs ``/usr/bin/python3`` on a read-only ``/usr``), so ``sandbox.py`` compiles this file's text followed by
``supervisor.py``'s as one script; keep this module free of imports outside the standard library.
"""

import os
import struct

HEADER_SIZE = 4
MAX_FRAME = 64 << 20
# Frames to the judge start with one byte saying who wrote them, so a test cannot forge the supervisor's.
SUPERVISOR_FRAME, CHILD_FRAME = b"S", b"C"
STDERR_TAIL = 4096  # the last bytes of a test's stderr that are kept
DETAIL_BYTES = 256  # a verdict's detail text (UTF-8, truncated)

# ---------------------------------------------------------------- frames
_JSON_ESCAPES = {c: "\\u%04x" % c for c in [*range(32), *range(0xD800, 0xE000)]}
_JSON_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})


def dump_json(value):
    """JSON text of plain data (what ``json.dumps`` gives, without the cost of importing json in the sandbox)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    kind = type(value)
    if kind is str:
        return '"' + value.translate(_JSON_ESCAPES) + '"'
    if kind is int or kind is float:
        return repr(value)
    if kind is list or kind is tuple:
        return "[" + ",".join([dump_json(v) for v in value]) + "]"
    if kind is dict:
        return "{" + ",".join([dump_json(str(k)) + ":" + dump_json(v) for k, v in value.items()]) + "}"
    raise TypeError("not plain data: %s" % kind.__name__)


def frame(payload):
    """`payload` (bytes) with its length header."""
    return len(payload).to_bytes(HEADER_SIZE, "big") + payload


def json_frame(obj, kind=b""):
    return frame(kind + dump_json(obj).encode("utf-8"))


def read_exact(fd, n):
    """Exactly `n` bytes from a blocking fd (EOFError when it closes first)."""
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd):
    """One raw frame (header included) from a trusted writer on a blocking fd."""
    header = read_exact(fd, HEADER_SIZE)
    size = int.from_bytes(header, "big")
    if size > MAX_FRAME:
        raise EOFError
    return header + read_exact(fd, size)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---------------------------------------------------------------- values (assert tests' arguments and results)
# A value crosses the sandbox boundary as a JSON-able tree whose first item names its exact type: ["none"],
# ["bool", b], ["int", hex], ["float", hex], ["complex", real hex, imag hex], ["str", s], ["bytes", latin-1
# text], [container, *item trees], ["dict", [key tree, value tree], ...]. The supervisor adds ["handle", i],
# ["stdlib", type name, tree] and ["sub", i, tree] for the program's other objects (see the judge's decoder);
# in a call, ["ref", i] is the i-th list, dict or set of the call's arguments (numbered in pre-order), so the
# objects the test passed in keep their identity both ways. The judge sends ["stdlib", ...] for Counter,
# OrderedDict, deque, Fraction, Decimal, range and ("iter") generator arguments.
CONTAINERS = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}


def encode_scalar(value):
    """The tree of a None, bool, int, float, complex, str or bytes of exactly that type; None for anything else."""
    kind = type(value)
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
    return None


def decode_scalar(tree):
    """The value of a scalar tree; ValueError (or TypeError) when it is not exactly a well-formed one."""
    tag, size = tree[0], len(tree)
    if tag == "none" and size == 1:
        return None
    if size == 2 and tag == "bool" and type(tree[1]) is bool:
        return tree[1]
    if size == 2 and tag == "int" and type(tree[1]) is str:
        return int(tree[1], 16)
    if size == 2 and tag == "float" and type(tree[1]) is str:
        return float.fromhex(tree[1])
    if size == 3 and tag == "complex" and type(tree[1]) is str and type(tree[2]) is str:
        return complex(float.fromhex(tree[1]), float.fromhex(tree[2]))
    if size == 2 and tag == "str" and type(tree[1]) is str:
        return tree[1]
    if size == 2 and tag == "bytes" and type(tree[1]) is str:
        return tree[1].encode("latin-1")
    raise ValueError("bad node")


# ---------------------------------------------------------------- verdicts (judge -> trainer)
# One per test: magic, outcome code, detail length, stderr length, wall seconds; then detail and stderr.
VERDICT_HEADER = struct.Struct(">BBHHd")
VERDICT_MAGIC = 0xA5
STARTED = 0xFF  # an outcome code meaning "the test's sandbox is up and the test started" (no body)
MAX_VERDICT = VERDICT_HEADER.size + DETAIL_BYTES + STDERR_TAIL


def _clip(text, limit, tail=False):
    data = text.encode("utf-8", "replace") if isinstance(text, str) else b""
    return data[-limit:] if tail else data[:limit]


def pack_verdict(code, detail="", stderr="", wall_s=0.0):
    """A test's verdict as at most `MAX_VERDICT` bytes."""
    detail_bytes, stderr_bytes = _clip(detail, DETAIL_BYTES), _clip(stderr, STDERR_TAIL, tail=True)
    wall = float(wall_s) if isinstance(wall_s, (int, float)) and 0 <= wall_s < 1e9 else 0.0
    return VERDICT_HEADER.pack(VERDICT_MAGIC, code, len(detail_bytes), len(stderr_bytes), wall) + detail_bytes + stderr_bytes


def unpack_verdict_header(data):
    """(code, detail length, stderr length, wall seconds) of a verdict header; ValueError when malformed."""
    magic, code, detail_size, stderr_size, wall = VERDICT_HEADER.unpack(data)
    if magic != VERDICT_MAGIC or detail_size > DETAIL_BYTES or stderr_size > STDERR_TAIL or not 0 <= wall < 1e9:
        raise ValueError("malformed verdict")
    return code, detail_size, stderr_size, wall
