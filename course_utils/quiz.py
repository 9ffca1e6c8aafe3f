"""Self-check quizzes: multiple-choice questions answered with widgets that say right or wrong and why.

``show_quiz(questions)`` displays one widget per question and, below them, the
same questions with their answers in collapsed HTML, readable without a kernel
(on GitHub, in a static render, or when widgets are unavailable).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as widgets
from IPython.display import HTML, display


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
        ok, text = feedback(question, choices.value)
        colour = "green" if ok else "#b00"
        result.value = f"<span style='color:{colour}'>{html.escape(text)}</span>"

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


def show_quiz(questions: list[Question]) -> None:
    """Display the quiz widgets, then the static answers."""
    if not questions:
        raise ValueError("show_quiz needs at least one question")
    display(widgets.VBox([question_widget(q, i + 1) for i, q in enumerate(questions)]))
    display(HTML(static_answers(questions)))
