"""The grader's transport (grading/transport.py, grading/channel.py): plain data both ways,
never pickle; proxies that call across a pipe; malformed, oversized or missing answers refused."""

from __future__ import annotations

import io
import os
import sys
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from course_utils.grading.channel import Endpoint, Garbled
from course_utils.grading.transport import ChannelClosed, Codec, Opaque, RemoteError, TimedOut, TransportError, pack, unpack


def round_trip(value, codec=None):
    doc, blobs = (codec or Codec()).flatten(value)
    return Codec().rebuild(*unpack(io.BytesIO(pack(doc, blobs)).read))


TENSORS = [torch.randn(3, 2), torch.randn(2, 3, dtype=torch.float64).t(), torch.tensor(2.5, dtype=torch.float16),
           torch.randn(4, dtype=torch.bfloat16), torch.tensor([[True, False]]), torch.arange(6, dtype=torch.int8),
           torch.arange(3, dtype=torch.uint8), torch.zeros(0, 5), torch.randn(2, dtype=torch.complex64),
           torch.tensor([float("nan"), float("inf"), -0.0])]
TENSORS += [torch.tensor([1.0, -2.0]).to(getattr(torch, n)) for n in ("float8_e4m3fn", "complex32", "uint16")
            if hasattr(torch, n)]


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().reshape(-1).view(torch.uint8)


@pytest.mark.parametrize("tensor", TENSORS, ids=lambda t: f"{t.dtype}{tuple(t.shape)}")
def test_tensors_of_every_dtype_come_back_bit_for_bit(tensor):
    back = round_trip(tensor)
    assert type(back) is torch.Tensor and back.dtype == tensor.dtype and back.shape == tensor.shape
    assert torch.equal(_bits(back), _bits(tensor))
    _bits(back)[:1] = 0  # writable: the student's code may change it in place


def test_requires_grad_travels_and_parameters_arrive_as_tensors():
    back = round_trip([torch.nn.Parameter(torch.ones(2)), torch.ones(2)])
    assert [type(t) for t in back] == [torch.Tensor, torch.Tensor]
    assert back[0].requires_grad and not back[1].requires_grad


def test_plain_values_keep_their_types():
    value = [None, True, 3, 2.5, float("nan"), "text", 1 + 2j, torch.Size([2, 3]), torch.bfloat16,
             np.float32(1.5), np.int64(7), np.bool_(True), np.arange(4, dtype=np.uint16).reshape(2, 2),
             (1, (2, [3])), {"a": 1, 4: (5,), (1, 2): "pair"}]
    back = round_trip(value)
    assert [type(v) for v in back] == [type(v) for v in value]
    assert back[3] == 2.5 and np.isnan(back[4]) and back[7] == torch.Size([2, 3]) and back[8] is torch.bfloat16
    assert back[9].dtype == np.float32 and back[11] is np.True_ and back[12].dtype == np.uint16
    assert back[13] == (1, (2, [3])) and back[14] == {"a": 1, 4: (5,), (1, 2): "pair"}
    assert list(back[14]) == ["a", 4, (1, 2)]


def test_other_objects_arrive_as_opaque_stand_ins_with_their_type_name():
    class Broken:
        def __repr__(self):
            raise RuntimeError("no repr")

    back = round_trip([object(), {1, 2}, Broken(), np.array([object()]), "x" * 10])
    assert all(isinstance(v, Opaque) for v in back[:4])
    assert [type(v).__name__ for v in back[:4]] == ["object", "set", "Broken", "ndarray"]
    assert repr(back[1]) == "{1, 2}" and repr(back[2]) == "<Broken>"
    assert not isinstance(back[0], (torch.Tensor, np.ndarray, list, dict, str))


def test_exceptions_keep_class_name_and_message():
    class ShapeMistake(Exception):
        pass

    back = round_trip([NotImplementedError("later"), ValueError("bad n"), ShapeMistake("no"), SystemExit(3),
                       KeyboardInterrupt(), UnicodeDecodeError("utf-8", b"x", 0, 1, "bad")])
    assert type(back[0]) is NotImplementedError and str(back[0]) == "later"
    assert type(back[1]) is ValueError and str(back[1]) == "bad n"
    assert type(back[2]).__name__ == "ShapeMistake" and isinstance(back[2], RemoteError) and str(back[2]) == "no"
    # a student's SystemExit or KeyboardInterrupt must not stop the grader: a plain Exception of that name here
    assert type(back[3]).__name__ == "SystemExit" and isinstance(back[3], Exception) and str(back[3]) == "3"
    assert type(back[4]).__name__ == "KeyboardInterrupt" and isinstance(back[4], Exception)
    assert type(back[5]).__name__ == "UnicodeDecodeError" and "bad" in str(back[5])


def _frame(doc, blobs=()):
    return pack(doc, list(blobs))


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


@pytest.mark.parametrize("data", [
    b"not a frame\n{}",
    b"[5]\n{abc]",
    b"[3, -1]\nnull",
    b"[" + b"1," * 60000 + b"1]\n",
    _frame({"$": "pickle", "blob": 0}, [b"x"]),
    _frame({"$": "ndarray", "blob": 0}, [_npy(np.array([object()], dtype=object))]),
    _frame({"$": "ndarray", "blob": 3}, [_npy(np.zeros(2))]),
    _frame({"$": "tensor", "dtype": "float32", "blob": 0}, [_npy(np.zeros(2, dtype=np.float64))]),
    _frame({"$": "tensor", "dtype": "object", "blob": 0}, [_npy(np.zeros(2))]),
    _frame({"$": "ndarray", "blob": 0}, [b"\x93NUMPY garbage"]),
    _frame({"$": "dict", "items": [[[1], 2]]}),
    _frame({"$": "size", "items": [-1]}),
    _frame({"$": "fixture", "class": "os", "id": 0, "spec": None}),
    _frame({"no": "kind"}),
    _frame([[[[[[[[]]]]]]]] + [{"$": "tuple"}]),
    b"[100000]\n" + b"[" * 100000,
], ids=lambda d: d[:30].decode("latin-1"))
def test_malformed_messages_raise_one_clear_error(data):
    with pytest.raises(TransportError):
        Codec().rebuild(*unpack(io.BytesIO(data).read))


def test_oversized_messages_are_refused_on_both_sides():
    doc, blobs = Codec().flatten(torch.zeros(1000))
    with pytest.raises(TransportError, match="over the limit"):
        pack(doc, blobs, limit=1000)
    frame = pack(doc, blobs)
    with pytest.raises(TransportError, match="over the limit"):
        unpack(io.BytesIO(frame).read, limit=1000)


# -- proxies over a real pipe -------------------------------------------------------------------

class Doubler(torch.nn.Module):
    def __init__(self, width: int, heads: int = 2):
        super().__init__()
        self.num_heads = heads
        self.W_q = torch.nn.Linear(width, width)

    def forward(self, x):
        return 2 * self.W_q(x)


def student_functions():
    def scale_in_place(x, factor=2.0):
        x *= factor
        return None

    def not_done(n):
        raise NotImplementedError("Your turn")

    def exits(n):
        raise SystemExit(1)

    def uses_layer(layer, x):
        return layer(x + 1)

    def returns_function(n):
        return lambda: n

    def reads(obj, name):
        return getattr(obj, name)

    return {"scale_in_place": scale_in_place, "not_done": not_done, "exits": exits, "Doubler": Doubler,
            "uses_layer": uses_layer, "returns_function": returns_function, "reads": reads}


@pytest.fixture
def remote():
    """(grader's endpoint, {name: Remote}) with a 'worker' endpoint answering in a thread."""
    to_worker, from_worker = os.pipe(), os.pipe()
    worker = Endpoint(to_worker[0], from_worker[1], student_side=True)
    grader = Endpoint(from_worker[0], to_worker[1])
    worker.exports[0] = student_functions
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    grader.deadline = time.monotonic() + 30
    reply, codec = grader.request({"op": "call", "id": 0, "args": [], "kwargs": {}})
    yield grader, reply["value"]
    os.close(to_worker[1])
    thread.join(5)
    for fd in (to_worker[0], from_worker[0], from_worker[1]):
        os.close(fd)


def test_remote_calls_copy_in_place_changes_back(remote):
    _, fns = remote
    x = torch.ones(3)
    assert fns["scale_in_place"](x, factor=3.0) is None
    assert torch.equal(x, torch.full((3,), 3.0))
    assert fns["scale_in_place"].__name__ == "scale_in_place" and type(fns["scale_in_place"]).__name__ == "function"


def test_remote_exceptions_and_a_student_systemexit(remote):
    _, fns = remote
    with pytest.raises(NotImplementedError, match="Your turn"):
        fns["not_done"](3)
    with pytest.raises(Exception) as info:
        fns["exits"](3)
    assert type(info.value).__name__ == "SystemExit"


def test_a_remote_class_its_instance_state_dict_attributes_and_sub_modules(remote):
    _, fns = remote
    layer = fns["Doubler"](4, heads=2)
    assert type(layer).__name__ == "Doubler" and layer.num_heads == 2
    state = layer.state_dict()
    assert set(state) == {"W_q.weight", "W_q.bias"} and type(state["W_q.weight"]) is torch.Tensor
    x = torch.randn(3, 4)
    expected = 2 * (x @ state["W_q.weight"].T + state["W_q.bias"])
    assert torch.allclose(layer(x), expected, atol=1e-6)
    assert torch.allclose(layer.W_q(x), expected / 2, atol=1e-6)
    with pytest.raises(AttributeError):
        layer.__globals__  # noqa: B018 - dunders never travel


def test_nothing_of_the_grader_can_be_called_or_read_from_the_worker(remote):
    """Data only crosses: a callable the grader hands over arrives inert (an Opaque), so the worker can neither
    call it, nor read its methods (a module's compile, to_folder...), nor its data."""
    _, fns = remote

    class Recorder:
        kind = "leaks"

        def __init__(self):
            self.calls = 0

        def __call__(self, x):
            self.calls += 1
            return x * 10

        def compile(self, backend=None):
            self.calls += 100

    recorder = Recorder()
    with pytest.raises(TypeError, match="not callable"):
        fns["uses_layer"](recorder, torch.zeros(2))
    for name in ("compile", "kind", "__call__", "to_folder"):
        with pytest.raises(AttributeError):
            fns["reads"](recorder, name)
    module = torch.nn.Linear(2, 2)
    with pytest.raises(AttributeError):
        fns["reads"](module, "compile")
    assert recorder.calls == 0
    back = fns["returns_function"](5)  # the worker's own callables stay callable: the grader asks, the worker answers
    assert type(back).__name__ == "function" and back() == 5


def test_a_request_from_the_worker_ends_the_conversation():
    to_worker, from_worker = os.pipe(), os.pipe()
    grader = Endpoint(from_worker[0], to_worker[1])
    grader.deadline = time.monotonic() + 5
    assert grader.export(print) is None  # the grader exports nothing
    forged = Endpoint(to_worker[0], from_worker[1], student_side=True)
    forged.send({"op": "call", "id": 0, "args": [], "kwargs": {}})
    with pytest.raises(Garbled, match="only data crosses"):
        grader.request({"op": "call", "id": 0, "args": [], "kwargs": {}})
    with pytest.raises(Garbled):
        grader.answer({"op": "getattr", "id": 0, "name": "x"}, grader.codec())
    for fd in (*to_worker, *from_worker):
        os.close(fd)


def test_fixtures_travel_as_specs_and_bring_their_record_back():
    fixtures = types.ModuleType("fake.checkers.fixtures")

    class Layer:
        def __init__(self, scale):
            self.scale, self.inputs = scale, []

        def to_spec(self):
            return {"scale": self.scale}

        @classmethod
        def from_spec(cls, spec):
            return cls(spec["scale"])

        def __call__(self, x):
            self.inputs.append(x)
            return x * self.scale

        def record(self):
            return self.inputs

        def absorb(self, record):
            self.inputs.extend(record)

    Layer.__module__ = fixtures.__name__
    fixtures.FIXTURES = {"layer": Layer}  # listed under its fixture_name, as checkers/fixtures.py does
    Layer.fixture_name = "layer"
    to_worker, from_worker = os.pipe(), os.pipe()
    worker = Endpoint(to_worker[0], from_worker[1], student_side=True, fixtures=fixtures)
    grader = Endpoint(from_worker[0], to_worker[1])
    worker.exports[0] = lambda layer, x: layer(x + 1) + layer(x)
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    grader.deadline = time.monotonic() + 30
    from course_utils.grading.transport import remote_from

    fn = remote_from({"id": 0, "type": "function", "name": "f"}, grader)
    layer = Layer(3.0)
    assert torch.equal(fn(layer, torch.zeros(2)), torch.full((2,), 3.0))
    assert [t.tolist() for t in layer.inputs] == [[1.0, 1.0], [0.0, 0.0]]
    # the grader never rebuilds a fixture from what the worker sends
    with pytest.raises(TransportError):
        grader.codec().rebuild({"$": "fixture", "class": "layer", "id": 0, "spec": {"$": "dict", "items": []}}, [])
    # a fixture always travels as its spec: nothing marks one to be called back in the grader's process
    secret = Layer(5.0)
    secret.by_reference = True
    assert torch.equal(fn(secret, torch.zeros(2)), torch.full((2,), 5.0))
    assert len(secret.inputs) == 2  # recorded in the worker, absorbed here as data
    os.close(to_worker[1])
    thread.join(5)


def test_a_silent_or_vanished_worker_is_a_timeout_or_a_closed_channel():
    a, b = os.pipe(), os.pipe()
    grader = Endpoint(a[0], b[1])
    grader.deadline = time.monotonic() + 0.3
    with pytest.raises(TimedOut):
        grader.request({"op": "call", "id": 0, "args": [], "kwargs": {}})
    os.close(a[1])
    grader.deadline = time.monotonic() + 5
    with pytest.raises(ChannelClosed):
        grader.receive()
    os.write(b[1], b"")  # the write end still works; a full pipe with a deadline times out instead of blocking
    grader.deadline = time.monotonic() + 0.3
    with pytest.raises(TimedOut):
        grader.send(torch.zeros(2**20))
    for fd in (a[0], b[0], b[1]):
        os.close(fd)


def test_no_pickle_anywhere():
    import ast

    for module in (Codec.__module__, Endpoint.__module__):
        tree = ast.parse(Path(sys.modules[module].__file__).read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        assert not {"pickle", "marshal", "dill", "cloudpickle"} & names, module
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
            if call.func.attr in ("load", "save") and getattr(call.func.value, "id", "") == "np":
                assert any(k.arg == "allow_pickle" and k.value.value is False for k in call.keywords), module


def test_a_course_module_is_rebuilt_in_the_worker_and_only_its_record_comes_back():
    """09b's block travels as its init arguments and weights: what the answer does to it (compile it with a
    backend of its own, call it, change its weights) happens to the worker's copy; the grader's block is
    untouched and learns only the count of forward calls."""
    from course_utils.helpers.checkers import fixtures

    to_worker, from_worker = os.pipe(), os.pipe()
    worker = Endpoint(to_worker[0], from_worker[1], student_side=True, fixtures=fixtures)
    grader = Endpoint(from_worker[0], to_worker[1])
    seen = []

    def answer(block, x):
        seen.append(block)
        block.compile(backend=lambda gm, inputs: gm.forward)
        with torch.no_grad():
            for p in block.parameters():
                p.zero_()
        return block(x)[0]

    worker.exports[0] = answer
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    grader.deadline = time.monotonic() + 60
    from course_utils.grading.transport import remote_from

    given = fixtures.course_module("TransformerBlock", {"d_model": 8, "num_heads": 2, "d_ff": 16})
    before = {k: v.clone() for k, v in given.state_dict().items()}
    fn = remote_from({"id": 0, "type": "function", "name": "answer"}, grader)
    out = fn(given, torch.randn(1, 3, 8))
    assert type(out) is torch.Tensor and out.shape == (1, 3, 8)
    assert seen and seen[0] is not given  # the worker's own copy, built from the course's class
    assert given.forward_calls == 1 and all(torch.equal(v, before[k]) for k, v in given.state_dict().items())
    os.close(to_worker[1])
    thread.join(5)
