"""Dates as people write them, to be read into ISO 8601: a seq2seq task whose answer needs reordering.

``tuesday 24 november 2026``, ``nov 24, 2026``, ``24/11/2026`` all become ``2026-11-24``;
``3.7.89`` becomes ``1989-07-03``. Characters are the tokens, in and out.

Every input has exactly one answer:

- dates run from 1950-01-01 to 2049-12-31;
- numeric forms are always day first; month first only with a month name;
- two-digit years follow a pivot: 50-99 -> 19xx, 00-49 -> 20xx.

Because the data is generated, the source span that decides each output character is
known: the year field for the four year digits, the month field (a number or a name)
for the two month digits, the day field for the two day digits. The two ``-`` of the
output and ``<eos>`` are decided by the output format alone: they have no span.

Token ids: ``PAD_ID = 0``, ``SOS_ID = 1``, ``EOS_ID = 2`` (as in the reversal task),
then the characters of ``CHARS``. Shapes: ``N`` examples, ``T_in`` source length (padded),
``T_OUT = 11`` target length (10 characters and ``<eos>``). Built in notebook 04b.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

import torch
from torch import Tensor

from ..core.validation import (
    is_int, require_device, require_instance, require_int, require_positive_int, require_same_device_and_dtype, require_tensor, shape_of,
)
from ..core.validation import require_weights  # issue 33 (trust): bad input
from .seq2seq_data import EOS_ID, PAD_ID, SPECIAL_TOKENS, ReversalData, pad_batch, token_ids

FIRST, LAST = dt.date(1950, 1, 1), dt.date(2049, 12, 31)
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Each written form: a name and a format with the fields {weekday}, {wkd} (3 letters),
# {d} / {dd} (day, without / with a leading zero), {m} / {mm}, {mon} (3 letters),
# {month} (full name), {yy} (two digits), {yyyy}.
FORMS: dict[str, str] = {
    "weekday d month yyyy": "{weekday} {d} {month} {yyyy}",  # tuesday 24 november 2026
    "wkd, d mon yyyy": "{wkd}, {d} {mon} {yyyy}",  # tue, 24 nov 2026 (as in e-mail headers)
    "d mon yyyy": "{d} {mon} {yyyy}",  # 24 nov 2026
    "mon d, yyyy": "{mon} {d}, {yyyy}",  # nov 24, 2026
    "month d, yyyy": "{month} {d}, {yyyy}",  # november 24, 2026
    "dd/mm/yyyy": "{dd}/{mm}/{yyyy}",  # 24/11/2026
    "d.m.yy": "{d}.{m}.{yy}",  # 3.7.89
    "dd-mon-yy": "{dd}-{mon}-{yy}",  # 24-nov-26
}
FORM_NAMES: tuple[str, ...] = tuple(FORMS)
_FIELD_OF = {"d": "day", "dd": "day", "m": "month", "mm": "month", "mon": "month", "month": "month",
             "yy": "year", "yyyy": "year", "weekday": "weekday", "wkd": "weekday"}
# Each format cut once into (field key, the literal text after it) pairs: "{d}.{m}.{yy}" ->
# [("", ""), ("d", "."), ("m", "."), ("yy", "")]; render walks these instead of re-reading the format.
_PIECES: dict[str, list[tuple[str, str]]] = {
    form: [("", fmt.split("{")[0])] + [tuple(part.split("}", 1)) for part in fmt.split("{")[1:]]
    for form, fmt in FORMS.items()
}

CHARS = "".join(sorted(set("0123456789 ,./-" + "".join(MONTHS) + "".join(WEEKDAYS))))
VOCAB: list[str] = list(SPECIAL_TOKENS) + list(CHARS)
CHAR_TO_ID = {c: i for i, c in enumerate(VOCAB) if i >= len(SPECIAL_TOKENS)}
T_OUT = 11  # "yyyy-mm-dd" and <eos>
# Which field decides each output position: 0-3 year, 5-6 month, 8-9 day; the dashes and <eos> none.
OUTPUT_FIELDS: tuple[str | None, ...] = ("year",) * 4 + (None,) + ("month",) * 2 + (None,) + ("day",) * 2 + (None,)
HELDOUT_SEED = 2026  # the held-out dates are the same for every training seed
NUM_DAYS = (LAST - FIRST).days + 1


def full_year(two_digits: int) -> int:
    """The pivot: 50-99 -> 1950-1999, 00-49 -> 2000-2049. Built in notebook 04b."""
    if not is_int(two_digits) or not 0 <= two_digits <= 99:
        raise ValueError(f"two_digits must be a whole number between 0 and 99 (a two-digit year), got {two_digits!r}")
    return 1900 + two_digits if two_digits >= 50 else 2000 + two_digits


def render(date: dt.date, form: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """The text of ``date`` written in ``form``, and where each field lies in it.

    Returns:
        the text and ``{field: (start, end)}`` (character positions, end excluded) for the
        fields ``day``, ``month``, ``year`` and, where written, ``weekday``. Used in notebook 04b.
    """
    if not isinstance(date, dt.date) or isinstance(date, dt.datetime):
        raise TypeError(f"date must be a datetime.date such as date(2026, 11, 24), got {type(date).__name__} {date!r}")
    if not isinstance(form, str) or form not in FORMS:
        raise ValueError(f"unknown form {form!r}; the forms are {list(FORM_NAMES)}")
    if not FIRST <= date <= LAST:
        raise ValueError(f"date must lie between {FIRST} and {LAST} (the task's dates), got {date}")
    weekday, month = WEEKDAYS[date.weekday()], MONTHS[date.month - 1]
    values = {
        "weekday": weekday, "wkd": weekday[:3],
        "d": str(date.day), "dd": f"{date.day:02d}", "m": str(date.month), "mm": f"{date.month:02d}",
        "mon": month[:3], "month": month, "yy": f"{date.year % 100:02d}", "yyyy": str(date.year),
    }
    text, fields = "", {}
    for key, literal in _PIECES[form]:
        if key:
            value = values[key]
            fields[_FIELD_OF[key]] = (len(text), len(text) + len(value))
            text += value
        text += literal
    return text, fields


def output_spans(fields: dict[str, tuple[int, int]]) -> list[tuple[int, int] | None]:
    """The source span ``(start, end)`` that decides each of the ``T_OUT`` output positions (None: no span).

    ``fields`` as ``render`` returns them. Built in notebook 04b.
    """
    if not isinstance(fields, dict) or not {"day", "month", "year"} <= set(fields):
        raise ValueError(f"fields must be a dict with the spans of 'day', 'month' and 'year' (as render returns), got {fields!r}")
    return [None if name is None else fields[name] for name in OUTPUT_FIELDS]


@dataclass(frozen=True)
class DateExample:
    """One example: the date, its written form, the text, the ISO answer and the field spans. Used in notebook 04b."""

    date: dt.date
    form: str
    text: str
    iso: str
    fields: dict[str, tuple[int, int]]


def example(date: dt.date, form: str) -> DateExample:
    """The ``DateExample`` of ``date`` written in ``form``. Used in notebook 04b."""
    text, fields = render(date, form)
    return DateExample(date, form, text, date.isoformat(), fields)


def encode(text: str) -> list[int]:
    """Token ids of the characters of ``text``. Used in notebook 04b."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    unknown = sorted(set(text) - set(CHAR_TO_ID))
    if unknown:
        raise ValueError(f"text has characters outside the vocabulary: {unknown}")
    return [CHAR_TO_ID[c] for c in text]


def decode(ids) -> str:
    """The text of a 1-D sequence of ids, stopping at the first ``<eos>`` and skipping ``<pad>``. Used in notebook 04b.

    ``ids``: a 1-D integer tensor or a list of integers in ``0 .. len(VOCAB) - 1``.
    """
    out = []
    for i in token_ids("ids", ids, len(VOCAB)):
        if i == EOS_ID:
            break
        if i >= len(SPECIAL_TOKENS):
            out.append(VOCAB[i])
    return "".join(out)


@dataclass
class DateData(ReversalData):
    """Padded date examples for the course's seq2seq models and training loop.

    Attributes (besides ``src (N, T_in)``, ``tgt (N, T_OUT)``, ``lengths (N,)``):
        forms: the index into ``FORM_NAMES`` of each example ``(N,)``.
        spans: the deciding span of each output position ``(N, T_OUT, 2)``, ``-1`` where it has none.

    ``subset`` keeps the whole target: unlike a reversal target, a date's answer is not
    one token longer than its source (``3.7.89`` has 6 characters, its answer 11 tokens). Used in notebook 04b.
    """

    forms: Tensor = None
    spans: Tensor = None

    def subset(self, index: Tensor) -> DateData:
        """The examples at ``index`` ``(k,)``, sources trimmed to the longest of them, targets whole."""
        index = self._check_index(index)
        t_in = int(self.lengths[index].max())
        return DateData(self.src[index, :t_in], self.tgt[index], self.lengths[index],
                        self.forms[index], self.spans[index])

    def to(self, device: torch.device | str) -> DateData:
        """The same data on ``device``."""
        device = require_device(device)
        return DateData(self.src.to(device), self.tgt.to(device), self.lengths.to(device),
                        self.forms.to(device), self.spans.to(device))

    def texts(self) -> list[str]:
        """The source text of every example."""
        return [decode(s[:n]) for s, n in zip(self.src, self.lengths)]


def span_tensor(examples: list[DateExample]) -> Tensor:
    """``(N, T_OUT, 2)`` long: the deciding span of each output position, ``[-1, -1]`` where it has none.

    Used in notebook 04b.
    """
    _check_examples(examples)
    rows = [[(-1, -1) if s is None else s for s in output_spans(e.fields)] for e in examples]
    return torch.tensor(rows, dtype=torch.long).reshape(len(examples), T_OUT, 2)


def _check_examples(examples: list[DateExample]) -> None:
    if not isinstance(examples, (list, tuple)) or not examples or not all(isinstance(e, DateExample) for e in examples):
        raise ValueError(f"examples must be a non-empty list of DateExample, got {type(examples).__name__} {examples!r:.80}")


def to_data(examples: list[DateExample]) -> DateData:
    """Pad a list of examples into a ``DateData``. Used in notebook 04b."""
    _check_examples(examples)
    sources = [encode(e.text) for e in examples]
    return DateData(
        src=pad_batch(sources),
        tgt=pad_batch([encode(e.iso) + [EOS_ID] for e in examples]),
        lengths=torch.tensor([len(s) for s in sources], dtype=torch.long),
        forms=torch.tensor([FORM_NAMES.index(e.form) for e in examples], dtype=torch.long),
        spans=span_tensor(examples),
    )


def random_examples(num: int, seed: int, exclude: set[dt.date] | frozenset = frozenset()) -> list[DateExample]:
    """``num`` examples with dates uniform over 1950-2049 (none in ``exclude``) and the forms in turn
    (example ``i`` has form ``i % 8``, so every form has the same share). Own ``random.Random(seed)``.
    Used in notebook 04b."""
    require_positive_int(num=num)
    require_int(seed=seed)
    if not isinstance(exclude, (set, frozenset)) or not all(isinstance(d, dt.date) for d in exclude):
        raise ValueError(f"exclude must be a set of datetime.date, got {type(exclude).__name__}")
    if len(exclude) >= NUM_DAYS:
        raise ValueError(f"exclude leaves no date to draw: it holds {len(exclude)} of the {NUM_DAYS} days")
    rng, out = random.Random(int(seed)), []
    while len(out) < num:
        date = FIRST + dt.timedelta(days=rng.randrange(NUM_DAYS))
        if date not in exclude:
            out.append(example(date, FORM_NAMES[len(out) % len(FORM_NAMES)]))
    return out


def heldout_examples(num: int = 1000) -> list[DateExample]:
    """The fixed held-out set (always ``HELDOUT_SEED``): ``num`` examples on distinct dates. Used in notebook 04b."""
    require_positive_int(num=num)
    if num > NUM_DAYS:
        raise ValueError(f"num must be at most the {NUM_DAYS} days from {FIRST} to {LAST}, got {num}")
    rng = random.Random(HELDOUT_SEED)
    days = rng.sample(range(NUM_DAYS), num)
    return [example(FIRST + dt.timedelta(days=d), FORM_NAMES[i % len(FORM_NAMES)]) for i, d in enumerate(days)]


def make_date_data(num_train: int = 8000, num_heldout: int = 1000, seed: int = 0) -> tuple[DateData, DateData]:
    """Training and held-out data; no held-out date occurs in training, in any written form. Used in notebook 04b."""
    require_positive_int(num_train=num_train, num_heldout=num_heldout)
    heldout = heldout_examples(num_heldout)
    train = random_examples(num_train, seed, exclude={e.date for e in heldout})
    return to_data(train), to_data(heldout)


# --- Reading the model ---------------------------------------------------------------


@torch.no_grad()
def decode_with_weights(model: torch.nn.Module, data: ReversalData, batch_size: int = 500) -> tuple[Tensor, Tensor | None]:
    """Greedy predictions ``(N, T_OUT)`` and their attention weights ``(N, T_OUT, T_in)`` (None without attention).

    The weights are the ones the model used while writing its own answer (no teacher forcing). Used in notebook 04b.
    """
    if not isinstance(model, torch.nn.Module) or not callable(getattr(model, "greedy_decode", None)):
        raise TypeError(f"model must be one of the course's seq2seq models (with greedy_decode), got {type(model).__name__}")
    require_instance("data", data, ReversalData)
    require_positive_int(batch_size=batch_size)
    model.eval()
    device = next(model.parameters()).device
    t_out, t_in = data.tgt.shape[1], data.src.shape[1]
    preds, weights = [], []
    for start in range(0, len(data), batch_size):
        src, lengths = data.src[start:start + batch_size].to(device), data.lengths[start:start + batch_size].to(device)
        tokens, w = model.greedy_decode(src, lengths, max_len=t_out)
        preds.append(tokens.cpu())
        weights.append(None if w is None else w.cpu())
    if weights[0] is None:
        return torch.cat(preds), None
    return torch.cat(preds), torch.cat([torch.nn.functional.pad(w, (0, t_in - w.shape[2])) for w in weights])


def alignment_hits(weights: Tensor, spans: Tensor) -> tuple[Tensor, Tensor]:
    """Whether each output position's largest weight falls inside its deciding span.

    Args:
        weights: ``(N, T_out, T_in)``; spans: ``(N, T_out, 2)``, ``-1`` where a position has no span.

    Returns:
        hits ``(N, T_out)`` bool and ``has_span`` ``(N, T_out)`` bool (only those positions count). Built in notebook 04b.
    """
    require_tensor("weights", weights, floating=True)
    require_weights("weights", weights)  # an argmax over NaN would count as a hit
    require_tensor("spans", spans, integer=True)
    require_same_device_and_dtype(False, weights=weights, spans=spans)
    if weights.dim() != 3 or spans.shape != (*weights.shape[:2], 2):
        raise ValueError(f"need weights (N, T_out, T_in) and spans (N, T_out, 2), got {tuple(weights.shape)} and {tuple(spans.shape)}")
    top = weights.argmax(dim=-1)
    has_span = spans[..., 0] >= 0
    return has_span & (top >= spans[..., 0]) & (top < spans[..., 1]), has_span


def alignment_accuracy(weights: Tensor, spans: Tensor) -> float:
    """Fraction of the output positions with a span whose largest weight falls inside it, pooled over examples.

    ValueError if no position has a span (there is nothing to measure). Built in notebook 04b.
    """
    hits, has_span = alignment_hits(weights, spans)
    counted = int(has_span.sum())
    if counted == 0:
        raise ValueError(f"spans mark no output position with a span (all -1, shape {shape_of(spans)}): "
                         "alignment accuracy is undefined there")
    return int(hits.sum()) / counted


def by_form(data: DateData, pred: Tensor, weights: Tensor | None = None) -> dict[str, dict[str, float]]:
    """Per written form: ``exact`` match accuracy and, given weights, ``alignment`` accuracy. Used in notebook 04b.

    ``pred (N, T_OUT)`` token ids as ``decode_with_weights`` returns them; ``weights (N, T_OUT, T_in)`` or None.
    """
    require_instance("data", data, DateData)
    require_tensor("pred", pred, integer=True)
    if pred.shape != data.tgt.shape:
        raise ValueError(f"pred must have the targets' shape {shape_of(data.tgt)} (N, T_OUT), got {shape_of(pred)}")
    require_same_device_and_dtype(False, pred=pred, tgt=data.tgt)
    right = ((pred == data.tgt) | (data.tgt == PAD_ID)).all(dim=1)
    out = {}
    for i, name in enumerate(FORM_NAMES):
        rows = data.forms == i
        if not rows.any():
            continue
        out[name] = {"exact": right[rows].float().mean().item()}
        if weights is not None:
            out[name]["alignment"] = alignment_accuracy(weights[rows], data.spans[rows])
    return out
