"""What the checker tests share (tests/test_checkers_NN.py): call a checker on an answer and read its verdict.

Not a test module (no ``test_`` prefix); the test files import it by name, as pytest puts ``tests/`` on the path.
"""

import math

SEEDS = (0, 1)  # verdicts' default draws


def stub(*args, **kwargs):
    """A task left as the student's stub."""
    raise NotImplementedError("Your turn: replace this line with your code.")


def results_over_seeds(check, fn, capsys, seeds=(0, 1, 2)):
    """The checker's results on draws ``seeds``, its printing swallowed."""
    results = [check(fn, seed=s) for s in seeds]
    capsys.readouterr()
    return results


def all_are(results, status, *words):
    """Every result has ``status`` and names ``words``; none blames the checker."""
    for r in results:
        assert r.status == status, r.message
        assert "bug in the checker" not in r.message
        for word in words:
            assert word in r.message, r.message


def verdicts(check, answer, seeds=SEEDS):
    """True/False per draw."""
    return [check(answer, seed=s) for s in seeds]


def all_wrong(check, answer, words, status="wrong", absent=()):
    """Every draw says ``status`` with ``words`` (and none of ``absent``)."""
    for result in verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def once(check, fn, capsys) -> tuple[bool, str]:
    """The verdict of one call and what it printed."""
    ok = check(fn)
    return ok, capsys.readouterr().out


def verdict_and_output(capsys, checker, fn):
    """The verdict of one call and what it printed (arguments in the order capsys, checker, answer)."""
    ok = checker(fn)
    return ok, capsys.readouterr().out


def passes_every_draw(checker, answer, seeds, capsys):
    """The answer passes every draw of ``seeds``."""
    wrong = [s for s in seeds if not checker(answer, seed=s)]
    assert not wrong, (answer.__name__, wrong[:5], capsys.readouterr().out[-1500:])


def stub_is_not_yet(checker, task, capsys):
    """The stub gets ``[not yet]`` naming the task."""
    result = checker(stub)
    assert result.status == "not done" and capsys.readouterr().out.startswith(f"[not yet] {task}")


def wrong(capsys, result, phrase):
    """A ``[try again]`` verdict naming ``phrase``."""
    out = capsys.readouterr().out
    assert not result and result.status == "wrong", out
    assert out.startswith("[try again]") and phrase in out, out


def rejected(capsys, checker, answer, phrase):
    """``[try again]`` naming ``phrase``."""
    assert not checker(answer)
    out = capsys.readouterr().out
    assert out.startswith("[try again]"), out
    assert phrase.lower() in out.lower(), out


def accepted(capsys, checker, answer):
    """``[correct]``."""
    assert checker(answer), capsys.readouterr().out
    assert capsys.readouterr().out.startswith("[correct]")


def slopes(T, t):
    """The slope of log time against log T between neighbouring lengths."""
    return [math.log(b / a) / math.log(T1 / T0) for T0, T1, a, b in zip(T, T[1:], t, t[1:])]
