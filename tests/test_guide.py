"""The generated tables of the instructor guide and the README (course_utils/authoring/guide.py, from the course map)."""

import pytest

from course_utils.authoring import guide


def test_every_notebook_has_its_own_row_with_a_plan():
    table = guide.notebook_table({})
    rows = [line for line in table.splitlines()[2:]]
    names = sorted(p.stem for p in (guide.ROOT / "notebooks").glob("[0-9][0-9]*.ipynb"))
    assert [row.split("`")[1] for row in rows] == names
    assert all("| ? |" not in row for row in rows)
    outcomes = [row.rsplit("|", 2)[-2].strip() for row in rows]
    assert len(set(outcomes)) == len(outcomes), "two notebooks share their learning outcomes"


def test_a_benchmark_keeps_01_and_01b_apart_and_prefers_the_solution():
    table = "\n".join([
        "| notebooks/01_scaled_dot_product_attention.ipynb | 10.2 | 300 |",
        "| notebooks/01b_scaling_and_masks.ipynb | 20.7 | 310 |",
        "| notebooks/solutions/01b_scaling_and_masks.ipynb | 25.0 | 320 |",
    ])
    assert guide.parse_benchmark(table) == {"01": "10 s, 300 MiB", "01b": "25 s, 320 MiB"}


def test_a_file_that_is_not_a_course_notebook_is_refused():
    with pytest.raises(ValueError, match="starts with its number"):
        guide.notebook_key("notes.ipynb")


def test_the_instructor_guides_table_is_up_to_date():
    text = guide.GUIDE.read_text(encoding="utf-8")
    expected = guide.notebook_table(guide.current_runtimes(text))
    assert guide.between(text, guide.TABLE) == expected, (
        "INSTRUCTORS.md's notebook table differs from the course map: run `python -m course_utils.authoring.guide`")


def test_the_readmes_table_is_up_to_date_and_read_by_the_site():
    from course_utils.authoring import site

    text = guide.README.read_text(encoding="utf-8")
    assert guide.between(text, guide.TABLE) == guide.readme_table(), (
        "README.md's notebook table differs from the course map: run `python -m course_utils.authoring.guide`")
    rows = site.readme_rows(text)
    assert [row.path for row in rows] == [f"notebooks/{e.stem}.ipynb" for e in guide.NOTEBOOKS]
    assert all(row.teaches for row in rows)


def test_every_core_lesson_fits_one_sitting():
    """A core lesson reads in at most 45 minutes by the guide's own estimate (issue: one sitting)."""
    from course_utils.helpers.course_map import NOTEBOOKS

    long = {e.key: guide.reading_minutes(guide.ROOT / "notebooks" / "solutions" / f"{e.stem}.ipynb")
            for e in NOTEBOOKS if e.kind.startswith("core")}
    assert all(minutes <= 45 for minutes in long.values()), {k: m for k, m in long.items() if m > 45}
