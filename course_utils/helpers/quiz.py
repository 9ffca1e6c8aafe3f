"""Self-check quizzes: multiple-choice questions answered with widgets that say right or wrong and why.

``show_quiz(questions)`` displays one widget per question. Where no widget can be drawn (on
GitHub, on the course website, in any static render) the same output shows the questions with
their answers in collapsed HTML instead: one quiz either way, never both in JupyterLab.

The verdict ("Right." / "Not quite.") is white on a dark green or red label (``VERDICT_COLOURS``):
its contrast does not depend on JupyterLab's light or dark theme; the explanation keeps the
theme's own text colour.

``load_quiz("01")`` reads the questions of one notebook from the question bank
``data/quizzes.json``.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

import ipywidgets as widgets
from IPython.display import display

from ..models.data_files import data_path
from .readable_widgets import ReadableVBox


@dataclass(frozen=True)
class Question:
    """One multiple-choice question.

    Attributes:
        prompt: the question.
        options: the choices, in the order shown.
        answer: index of the right option.
        why: why the right option is right (shown after any answer).
        wrong_why: optional, one explanation per option (None for the right one)
            of why that option is tempting and wrong.
    """

    prompt: str
    options: tuple[str, ...]
    answer: int
    why: str
    wrong_why: tuple[str | None, ...] | None = None

    def __post_init__(self) -> None:
        if len(self.options) < 2:
            raise ValueError(f"a question needs at least 2 options, got {len(self.options)}: {self.prompt!r}")
        if not 0 <= self.answer < len(self.options):
            raise ValueError(f"answer index {self.answer} is not one of the {len(self.options)} options of {self.prompt!r}")
        if self.wrong_why is not None and len(self.wrong_why) != len(self.options):
            raise ValueError(f"wrong_why has {len(self.wrong_why)} entries for {len(self.options)} options of {self.prompt!r}")


def feedback(question: Question, choice: int) -> tuple[bool, str]:
    """Whether option ``choice`` is right, and the explanation to show for it."""
    if not 0 <= choice < len(question.options):
        raise ValueError(f"choice {choice} is not one of the {len(question.options)} options")
    if choice == question.answer:
        return True, f"Right. {question.why}"
    reason = question.wrong_why[choice] if question.wrong_why else None
    right = question.options[question.answer]
    return False, f"Not quite. {reason + ' ' if reason else ''}The answer is: {right}. {question.why}"


# (text, background) of the verdict label: white on dark green / red, above 4.5:1 (WCAG AA) on its
# own background, so the same on JupyterLab's light and dark themes (tests/test_quiz.py measures it).
VERDICT_COLOURS = {True: ("#ffffff", "#1b5e20"), False: ("#ffffff", "#b71c1c")}


def feedback_html(ok: bool, text: str) -> str:
    """The feedback line: the verdict (first word group, up to the first ". ") on its coloured label,
    the explanation in the theme's text colour."""
    verdict, _, rest = text.partition(". ")
    colour, background = VERDICT_COLOURS[ok]
    label = (f"<span style='color:{colour};background:{background};padding:0 0.3em;border-radius:3px;"
             f"font-weight:bold'>{html.escape(verdict)}.</span>")
    return f"{label} {html.escape(rest)}"


def question_widget(question: Question, number: int = 1) -> widgets.VBox:
    """A radio-button question with a Check button and a feedback line."""
    choices = widgets.RadioButtons(
        options=[(text, i) for i, text in enumerate(question.options)], value=None,
        layout=widgets.Layout(width="auto"),
    )
    button = widgets.Button(description="Check", button_style="primary")
    result = widgets.HTML()

    def on_check(_):
        if choices.value is None:
            result.value = "<i>Pick an option first.</i>"
            return
        result.value = feedback_html(*feedback(question, choices.value))

    button.on_click(on_check)
    title = widgets.HTML(f"<b>Q{number}.</b> {html.escape(question.prompt)}")
    return widgets.VBox([title, choices, button, result])


def static_answers(questions: list[Question]) -> str:
    """The questions as HTML with each answer in a collapsed <details> block."""
    parts = ["<div><b>Answers</b> (for reading without a kernel: click to reveal)<ol>"]
    for q in questions:
        options = "".join(f"<li>{html.escape(o)}</li>" for o in q.options)
        parts.append(
            f"<li>{html.escape(q.prompt)}<ol type='a'>{options}</ol>"
            f"<details><summary>Answer</summary>{html.escape(q.options[q.answer])}. "
            f"{html.escape(q.why)}</details></li>"
        )
    parts.append("</ol></div>")
    return "".join(parts)


class QuizBox(ReadableVBox):
    """The quiz's widgets; where they cannot be drawn, its HTML is the questions with folded answers."""

    static_html = ""

    def _repr_mimebundle_(self, **kwargs) -> dict:
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/html"] += self.static_html
        return bundle


def show_quiz(questions: list[Question]) -> None:
    """Display the quiz: widgets in Jupyter; the static answers (``static_answers``) where no widget
    is drawn, as the same output's HTML, so that JupyterLab shows the quiz once."""
    if not questions:
        raise ValueError("show_quiz needs at least one question")
    quiz = QuizBox([question_widget(q, i + 1) for i, q in enumerate(questions)])
    quiz.fallback = (f"Interactive quiz ({len(questions)} questions): run the notebook to answer them here. "
                     "Below, the same questions with their answers to reveal.")
    quiz.static_html = static_answers(questions)
    display(quiz)


# The question bank: data/quizzes.json maps a notebook key ("01", "02", ...) to a list of
# questions, each an object {"prompt", "options", "answer", "why", "wrong_why"}.

QUIZ_FILE = "quizzes.json"
_REQUIRED = ("prompt", "options", "answer", "why")
_FIELDS = _REQUIRED + ("wrong_why",)


def _question_from_entry(entry: object, where: str) -> Question:
    """One JSON entry of the bank as a ``Question``; ValueError saying where and what is wrong."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object with fields {list(_FIELDS)}, got {type(entry).__name__}")
    missing = [f for f in _REQUIRED if f not in entry]
    unknown = sorted(set(entry) - set(_FIELDS))
    if missing or unknown:
        problems = ([f"missing fields {missing}"] if missing else []) + ([f"unknown fields {unknown}"] if unknown else [])
        raise ValueError(f"{where}: {', '.join(problems)} (allowed: {list(_FIELDS)})")
    prompt, options, answer, why = (entry[f] for f in _REQUIRED)
    wrong_why = entry.get("wrong_why")
    for name, text in (("prompt", prompt), ("why", why)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}: {name!r} must be a non-empty string, got {text!r}")
    if not isinstance(options, list) or not all(isinstance(o, str) and o.strip() for o in options):
        raise ValueError(f"{where}: 'options' must be a list of non-empty strings, got {options!r}")
    if len(set(options)) != len(options):
        raise ValueError(f"{where}: two options are identical: {options!r}")
    if not isinstance(answer, int) or isinstance(answer, bool):
        raise ValueError(f"{where}: 'answer' must be the integer index of the right option, got {answer!r}")
    if wrong_why is not None and not isinstance(wrong_why, list):
        raise ValueError(f"{where}: 'wrong_why' must be a list (one entry per option) or null, got {wrong_why!r}")
    try:
        question = Question(prompt, tuple(options), answer, why, None if wrong_why is None else tuple(wrong_why))
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    for i, reason in enumerate(question.wrong_why or ()):
        if i == answer and reason is not None:
            raise ValueError(f"{where}: wrong_why[{i}] must be null, option {i} is the right answer")
        if i != answer and not (isinstance(reason, str) and reason.strip()):
            raise ValueError(f"{where}: wrong_why[{i}] must say why option {i} is wrong, got {reason!r}")
    return question


def load_quiz(notebook: str, name: str = QUIZ_FILE) -> list[Question]:
    """The self-check questions of one notebook, e.g. ``show_quiz(load_quiz("01"))``.

    Reads ``data/<name>`` (default ``data/quizzes.json``): a JSON object mapping notebook keys
    ("01", "02", ...) to lists of questions. Each question is an object with ``prompt`` (string),
    ``options`` (list of strings), ``answer`` (index of the right option), ``why`` (string) and
    optionally ``wrong_why``: one entry per option, null for the right one and a string for each
    wrong one. Only the requested notebook's questions are checked.

    Raises:
        ValueError: the file is missing or not valid JSON, ``notebook`` is not one of its keys
            (the message lists the available ones), or an entry is malformed (the message names
            the notebook, the question number and the problem).
    """
    path = data_path(name)
    try:
        bank = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path.name} is not valid JSON: {err}") from None
    if not isinstance(bank, dict):
        raise ValueError(f"{path.name} must hold a JSON object of notebook keys, got {type(bank).__name__}")
    if notebook not in bank:
        raise ValueError(f"no quiz for notebook {notebook!r} in {path.name}; available: {sorted(bank)}")
    entries = bank[notebook]
    if not isinstance(entries, list) or not entries:
        got = "an empty list" if entries == [] else type(entries).__name__
        raise ValueError(f"{path.name}, notebook {notebook!r}: expected a non-empty list of questions, got {got}")
    return [
        _question_from_entry(entry, f"{path.name}, notebook {notebook!r}, question {i + 1}")
        for i, entry in enumerate(entries)
    ]
