"""Quiz questions give the right verdict and explanation, by widget and in static form."""

import pytest

from course_utils.helpers.quiz import Question, feedback, question_widget, static_answers

Q = Question(
    prompt="Which axis does the softmax run over?",
    options=("queries", "keys", "features"),
    answer=1,
    why="Each query's weights over the keys sum to 1.",
    wrong_why=("Then each key's weights over the queries would sum to 1.", None, "Features are not positions."),
)


def test_feedback_right_and_wrong():
    ok, text = feedback(Q, 1)
    assert ok and text.startswith("Right.") and Q.why in text
    ok, text = feedback(Q, 0)
    assert not ok and "over the queries" in text and "The answer is: keys" in text
    ok, text = feedback(Q, 2)
    assert not ok and "Features are not positions" in text


def test_feedback_rejects_out_of_range_choice():
    with pytest.raises(ValueError, match="choice 3"):
        feedback(Q, 3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"options": ("only one",), "answer": 0}, "at least 2 options"),
        ({"options": ("a", "b"), "answer": 2}, "answer index 2"),
        ({"options": ("a", "b"), "answer": 0, "wrong_why": (None,)}, "wrong_why has 1"),
    ],
)
def test_bad_questions_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Question(prompt="p", why="w", **kwargs)


def test_widget_says_right_or_wrong_when_checked():
    box = question_widget(Q, 3)
    title, choices, button, result = box.children
    assert "Q3." in title.value
    button.click()
    assert "Pick an option" in result.value
    choices.value = 0
    button.click()
    assert "Not quite" in result.value
    choices.value = 1
    button.click()
    assert "Right." in result.value


def test_static_answers_hide_the_answer_in_details():
    text = static_answers([Q])
    assert "<details><summary>Answer</summary>keys." in text
    assert text.count("<li>") == 4  # the question and its three options


# --- Readable on both JupyterLab themes, and shown once ---------------------------------------------------

# Backgrounds of a notebook's output area: JupyterLab's light theme (--jp-layout-color0 white) and its
# dark theme (--jp-layout-color0 #111111, --jp-layout-color1 #212121).
THEME_BACKGROUNDS = {"light": ["#ffffff"], "dark": ["#111111", "#212121"]}


def _luminance(colour: str) -> float:
    """WCAG 2 relative luminance of a #rrggbb colour."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_contrast_formula_matches_known_values():
    assert contrast("#ffffff", "#000000") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_the_verdict_colours_read_on_both_jupyterlab_themes():
    """The verdict is drawn on its own background, whatever the theme: text against label >= 4.5:1
    (WCAG AA). The old colours (green, #b00 text on the theme's background) fail on the dark theme."""
    from course_utils.helpers.quiz import VERDICT_COLOURS

    for ok, (text, label) in VERDICT_COLOURS.items():
        assert contrast(text, label) >= 4.5, (ok, text, label)
    assert min(contrast("#008000", bg) for bg in THEME_BACKGROUNDS["dark"]) < 4.5  # what the test guards against
    assert min(contrast("#bb0000", bg) for bg in THEME_BACKGROUNDS["dark"]) < 4.5


def test_the_feedback_colours_only_the_verdict_label():
    import re

    from course_utils.helpers.quiz import VERDICT_COLOURS

    box = question_widget(Q, 1)
    _, choices, button, result = box.children
    for choice, ok in ((0, False), (1, True)):
        choices.value = choice
        button.click()
        styled = re.findall(r"<span style='([^']*)'>([^<]*)</span>", result.value)
        assert len(styled) == 1 and styled[0][1] in ("Right.", "Not quite.")
        text, label = VERDICT_COLOURS[ok]
        assert f"color:{text}" in styled[0][0] and f"background:{label}" in styled[0][0]
        assert result.value.count("color") == 1  # the explanation keeps the theme's text colour


def test_show_quiz_displays_one_output_whose_html_is_the_static_answers(monkeypatch):
    from course_utils.helpers import quiz

    shown = []
    monkeypatch.setattr(quiz, "display", lambda *objs: shown.extend(objs))
    quiz.show_quiz([Q])
    assert len(shown) == 1  # not the widget and then the answer list
    bundle = shown[0]._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # JupyterLab draws the widget ...
    assert bundle["text/html"].endswith(static_answers([Q]))  # ... a static render the answers
    assert bundle["text/plain"].startswith("Interactive quiz (1 questions)")
