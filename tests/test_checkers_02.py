"""The checker of lesson 02's offset_share: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""


from course_utils.helpers.checkers import check_offset_share

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def test_02_a_mean_without_the_zero_weight_queries_is_not_called_argmax(capsys):
    def nonzero_only(w, k):
        values = w.diagonal(k)
        return values[values > 0].mean()

    _all_wrong(check_offset_share, nonzero_only, "zero weight", absent=("argmax", "STRONGEST"))
