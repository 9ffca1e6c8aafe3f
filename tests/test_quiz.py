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
