"""Objects the checkers hand to student code, described as plain data (the contract with the
grader: ``checkers/__init__.py``).

A checker may pass the student's function only plain data (tensors, arrays, numbers, strings,
tuples, lists, dicts) or a *fixture*: an instance of a class here that

- describes itself as plain data: ``to_spec()`` -> dict, and ``from_spec(spec)`` builds an equal one
  (a grader rebuilds it in the process where the student's code runs);
- if it records what the student's code did with it, hands the record back as plain data:
  ``record()`` -> dict, and ``absorb(record)`` adds a record made by a copy to this original.

Every fixture class is listed in :data:`FIXTURES` under its ``fixture_name``;
``build(name, spec)`` makes one from its name and spec.

- :class:`LeakLayer` (05's ``leaks_future``): a toy self-attention layer ``x (n, 4) -> (n, 4)`` that
  records how the student changed its inputs;
- :class:`CourseModule` (09b's ``pre_norm_block``): a course ``nn.Module`` (from a fixed list, plain
  init arguments, a ``state_dict``) that records calls of its own ``forward``.

A grader sends only the spec: the worker builds the object from the course's own class and sends
back arrays (the answer) and the record. What a fixture records is the student's process's word:
good for naming an honest mistake, never the only ground of a "correct".
"""

from __future__ import annotations

import functools
from typing import ClassVar

import torch
from torch import nn

from ...core.transformer import TransformerBlock

FIXTURES: dict[str, type[Fixture]] = {}


class Fixture:
    """An object that describes itself as plain data (see the module docstring)."""

    fixture_name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("fixture_name"):
            FIXTURES[cls.fixture_name] = cls

    def to_spec(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_spec(cls, spec: dict) -> Fixture:
        raise NotImplementedError

    def record(self) -> dict:
        return {}

    def absorb(self, record: dict) -> None:
        return None


def build(name: str, spec: dict) -> Fixture:
    """The fixture ``FIXTURES[name].from_spec(spec)`` (a ``KeyError`` for an unknown name)."""
    return FIXTURES[name].from_spec(spec)


# --- 05: layers for the leak test ----------------------------------------------------------------

LAYER_KINDS = ("causal", "running mean", "unmasked", "extra key", "small leak", "mean leak")


@functools.lru_cache(maxsize=1)
def _toy_weights() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(55)
    return tuple(torch.randn(4, 4, generator=g) / 2 for _ in range(3))


def _toy_attention(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    W_q, W_k, W_v = _toy_weights()
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    return (Q @ K.T / 2).masked_fill(~mask, float("-inf")).softmax(-1) @ V


def _causal(n: int) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool).tril()


_MIX = {kind: code for kind, code in zip(LAYER_KINDS, (
    (0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 0, 0), (0, 0, 1e-3, 0), (0, 0, 0, 1)))}  # mean, all, sum, mean


def _toy_layer(x: torch.Tensor, mix: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
    """The toy layer from numbers alone: (running mean?, unmasked?, leak of the sum, leak of the mean), extra key."""
    n = x.shape[0]
    if mix[0]:
        return x.cumsum(0) / torch.arange(1, n + 1)[:, None]
    mask = torch.ones(n, n, dtype=torch.bool) if mix[1] else _causal(n)
    if extra.numel():
        mask[int(extra[0]) % n, int(extra[1]) % n] = True
    return _toy_attention(x, mask) + float(mix[2]) * x.sum(0) + float(mix[3]) * x.mean(0)


class LeakLayer(Fixture):
    """A layer ``x (n, 4) -> (n, 4)`` for ``leaks_future(attn_fn, x)``, and a record of its calls.

    ``kind``: ``"causal"`` (masked self-attention: no leak), ``"running mean"`` (output t = mean of
    x[0..t]: no leak), ``"unmasked"`` (attention without a mask), ``"extra key"`` (causal, plus query
    ``key[0]`` may see the future key ``key[1]``; negative numbers count from the end), ``"small leak"``
    (causal + 1e-3 * the sum over the sequence), ``"mean leak"`` (causal + the mean over the sequence).
    ``x`` is the input the test is about: each call on an input of x's shape records how much each
    position differs from x (``changes``); ``calls`` counts the calls.

    It travels as numbers (``to_spec``): the worker gets a :class:`ToyLayer`, which computes the same
    layer and has no ``kind``. Its numbers are in the student's process, where an answer could read
    them; the grader promises that no object of its own is reachable, not that a fixture is secret.
    """

    fixture_name = "LeakLayer"

    def __init__(self, kind: str, x: torch.Tensor, key: tuple[int, int] | None = None) -> None:
        if kind not in LAYER_KINDS:
            raise ValueError(f"kind must be one of {LAYER_KINDS}, got {kind!r}")
        self.kind, self.x, self.key = kind, x.detach().clone(), None if key is None else tuple(key)
        self.calls, self.changes = 0, []

    def layer(self, x: torch.Tensor) -> torch.Tensor:
        spec = self.to_spec()
        return _toy_layer(x, spec["mix"], spec["extra"])

    def __call__(self, inp):
        self.calls += 1
        if isinstance(inp, torch.Tensor) and inp.shape == self.x.shape:
            diff = (inp.detach().float() - self.x.float()).abs()
            if diff.max() > 0:
                self.changes.append(diff.amax(-1))  # (n,): how much each position was changed
        return self.layer(inp)

    def changed_positions(self) -> set[int]:
        return {t for change in self.changes for t in change.nonzero().flatten().tolist()}

    def smallest_change(self) -> float:
        return min(change.max().item() for change in self.changes)

    def to_spec(self) -> dict:
        extra = self.key if self.kind == "extra key" else ()
        return {"x": self.x.clone(), "mix": torch.tensor(_MIX[self.kind], dtype=torch.float64),
                "extra": torch.tensor(extra, dtype=torch.int64)}

    @classmethod
    def from_spec(cls, spec: dict) -> ToyLayer:
        return ToyLayer(spec["x"], spec["mix"], spec["extra"])

    def absorb(self, record: dict) -> None:
        self.calls += int(record["calls"])
        self.changes += [c for c in record["changes"] if isinstance(c, torch.Tensor) and c.shape == self.x.shape[:1]]


class ToyLayer:
    """What a :class:`LeakLayer` is in the worker: the same layer from its numbers, recording its calls."""

    def __init__(self, x: torch.Tensor, mix: torch.Tensor, extra: torch.Tensor) -> None:
        self._x, self._mix, self._extra = x.detach().clone(), mix, extra
        self.calls, self.changes = 0, []

    def __call__(self, inp):
        self.calls += 1
        if isinstance(inp, torch.Tensor) and inp.shape == self._x.shape:
            diff = (inp.detach().float() - self._x.float()).abs()
            if diff.max() > 0:
                self.changes.append(diff.amax(-1))
        return _toy_layer(inp, self._mix, self._extra)

    def record(self) -> dict:
        return {"calls": self.calls, "changes": [c.clone() for c in self.changes]}


# --- 09b: course modules handed to the student -----------------------------------------------------

COURSE_MODULES: dict[str, type[nn.Module]] = {"TransformerBlock": TransformerBlock}


class CourseModule(Fixture):
    """Mixed into a course ``nn.Module`` class (one of :data:`COURSE_MODULES`): the module as plain data
    (its class name, init arguments, dtype, ``state_dict``), and a count of calls of its own forward
    (an answer that runs the module itself hands its work to the course's code)."""

    fixture_name = "CourseModule"
    course_class: ClassVar[str] = ""

    def _setup(self, init: dict) -> None:
        self.init_arguments, self.forward_calls = dict(init), 0

    def forward(self, *args, **kwargs):
        self.forward_calls += 1
        return super().forward(*args, **kwargs)

    def to_spec(self) -> dict:
        dtype = next(self.parameters()).dtype
        return {"class": self.course_class, "init": dict(self.init_arguments), "dtype": str(dtype).replace("torch.", ""),
                "training": self.training, "state": {k: v.detach().clone() for k, v in self.state_dict().items()}}

    @classmethod
    def from_spec(cls, spec: dict) -> CourseModule:
        return course_module(spec["class"], spec["init"], spec["state"], getattr(torch, spec["dtype"]), spec["training"])

    def record(self) -> dict:
        return {"forward_calls": self.forward_calls}

    def absorb(self, record: dict) -> None:
        self.forward_calls += int(record["forward_calls"])


@functools.lru_cache(maxsize=None)
def _module_class(name: str) -> type:
    base = COURSE_MODULES[name]
    return type(name, (CourseModule, base), {"course_class": name, "__module__": __name__, "__qualname__": name})


def course_module(name: str, init: dict, state: dict | None = None, dtype: torch.dtype = torch.float32,
                  training: bool = False) -> CourseModule:
    """An instance of the course class ``name`` built with ``init`` (plain keyword arguments), its
    parameters from ``state``, in ``dtype``, in eval mode unless ``training``; a :class:`CourseModule`."""
    with torch.random.fork_rng(devices=[]):  # the caller's random numbers stay as they were
        module = _module_class(name)(**init)
    module._setup(init)
    module = module.to(dtype)
    if state is not None:
        module.load_state_dict(state)
    return module.train(training)
