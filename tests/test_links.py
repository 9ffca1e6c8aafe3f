"""The links between notebooks: every pointer in a markdown cell names a notebook and a section that exist.

Read from the notebooks' JSON only (fast, default tier). What counts as a pointer:

- "notebook 03", "lesson 01b", "notebooks 01–03", "notebooks 09 and 09b": the notebooks exist;
- "notebook 03, section 5", "lesson 03 section 5", "notebook 07's section 4", "section 5 of notebook 03",
  "03 §5", "notebook [03](03_x.ipynb), section 5": notebook 03 has a numbered heading "## 5. ..." (or "### 5.2 ...");
- "section 5", "sections 2 and 3", "§5" with no notebook before it: the same notebook has that heading;
- "[text](03b_x.ipynb)": the linked notebook is in the same folder;
- a notebook named for something it teaches ("notebook 01b (masks ...)", "masks are taught in 01b"): the
  named notebook's headings mention that topic (``TOPICS``).

The lead's stop hook (`XREF` below is its pattern, unchanged) must never find something this test lets through.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ALL = sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((NOTEBOOKS / "solutions").glob("*.ipynb"))

NN = r"\d\d[a-z]?"
SEC = r"\d+(?:\.\d+)*"
WORD = r"(?:[Nn]otebook|[Ll]esson|[Ee]xercise)"
LINK = r"(?:\]?\([^)\s]*\))?"  # "[03](03_x.ipynb)": the number as a link's text
HEADING = re.compile(rf"^#{{2,4}}\s+({SEC})[.\s]", re.M)
# "notebook 03, section 5", "lesson 03's section 5", "notebook [03](x.ipynb) §5", and the same with "section 5 of notebook 03"
NAMED_SECTION = re.compile(rf"{WORD}s?\s+\[?({NN}){LINK}(?:'s)?,?\s+(?:[Ss]ection|§)\s?({SEC})")
SECTION_OF = re.compile(rf"(?:[Ss]ection|§)\s?({SEC})\s+(?:of|in)\s+{WORD}\s+\[?({NN})\b")
SHORT = re.compile(rf"\b({NN})\s?§\s?({SEC})")  # "03 §5", "03b§3"
# "section 5", "sections 2 and 3", "sections 2–4", "§5" (of the notebook it is in)
OWN = re.compile(rf"(?:[Ss]ections?\s+|§\s?)({SEC}(?:(?:,\s*|\s+and\s+|\s+or\s+|\s*[–-]\s*|\s+to\s+){SEC})*)")
NAMED = re.compile(rf"{WORD}s?\s+\[?({NN}){LINK}((?:(?:,\s*|\s+and\s+|\s+or\s+|\s*[–-]\s*|\s+to\s+)\[?{NN}\b{LINK})*)")
FILE_LINK = re.compile(r"\]\(([^)\s:#]+\.ipynb)(?:#[^)]*)?\)")
# the stop hook's pattern (/work/shared/hooks/before-stop), kept as it is: this test is at least as strict
XREF = re.compile(r"(?:(?:[Nn]otebook|[Ll]esson|[Ee]xercise)s?\s+\[?(\d\d[a-z]?)\]?(?:\([^)]*\))?(?:'s)?,?\s+)?"
                  r"(?:[Ss]ection|§)\s?(\d+(?:\.\d+)*)")

# A notebook named for a topic must teach it: the topic's words in its headings (or its title).
TOPICS = {
    "mask": re.compile(r"\bmask", re.I),
    "True = may attend": re.compile(r"\bmask", re.I),
    "positional encoding": re.compile(r"position", re.I),
    "nn.MultiheadAttention": re.compile(r"MultiheadAttention"),
    "key_padding_mask": re.compile(r"key_padding_mask|padding mask", re.I),
    "multi-head": re.compile(r"multi-?head", re.I),
}
# "notebook 01 (... masks ...)": the parenthesis right after a pointer says what it is pointed at for
FOR_WHAT = re.compile(rf"{WORD}s?\s+({NN})\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
# "(... `in_proj_weight`, as in notebook 03)": the code named in the clause that points is in that notebook
AS_IN = re.compile(rf"\b(?:as\s+in|from|see|like)\s+{WORD}\s+({NN})\b(?!')")
TAUGHT = re.compile(rf"(?:taught|built|introduced|defined|written)\s+in\s+(?:{WORD}\s+)?({NN})\b")


def key(path: Path) -> str:
    return path.name.split("_")[0]


def markdown(path: Path) -> list[tuple[int, str]]:
    return [(i, "".join(c["source"])) for i, c in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"])
            if c["cell_type"] == "markdown"]


@cache
def headings() -> dict[str, list[str]]:
    """{notebook key: its heading lines} (the solution twin's when there is one: the same text)."""
    found = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        twin = NOTEBOOKS / "solutions" / path.name
        text = "\n".join(src for _, src in markdown(twin if twin.exists() else path))
        found[key(path)] = [line for line in text.splitlines() if line.startswith("#")]
    return found


@cache
def sections() -> dict[str, set[str]]:
    return {nb: set(HEADING.findall("\n".join(lines))) for nb, lines in headings().items()}


def numbers(group: str) -> list[str]:
    """"2 and 3" -> [2, 3]; "2–4" -> [2, 3, 4] (whole sections only)."""
    out = []
    for part in re.split(r",\s*|\s+and\s+|\s+or\s+|\s+to\s+", group):
        ends = re.split(r"\s*[–-]\s*", part)
        if len(ends) == 2 and ends[0].isdigit() and ends[1].isdigit():
            out += [str(n) for n in range(int(ends[0]), int(ends[1]) + 1)]
        else:
            out += ends
    return out


def broken(text: str, me: str) -> list[str]:
    """The pointers in one markdown text (of notebook `me`) that name a notebook or section that does not exist."""
    have, problems = sections(), []

    def need(nb: str, sec: str | None, said: str) -> None:
        if nb not in have:
            problems.append(f"'{said}': there is no notebook {nb}")
        elif sec is not None and sec not in have[nb]:
            problems.append(f"'{said}': notebook {nb} has no section {sec} (it has {', '.join(sorted(have[nb], key=_order)) or 'none'})")

    taken = []  # spans already read as "notebook NN, section X", so that "section X" is not read again as our own
    for pattern, order in ((NAMED_SECTION, (1, 2)), (SECTION_OF, (2, 1)), (SHORT, (1, 2))):
        for m in pattern.finditer(text):
            if any(a <= m.start() < b for a, b in taken):
                continue
            need(m.group(order[0]), m.group(order[1]), m.group(0))
            taken.append(m.span())
    for m in OWN.finditer(text):
        if not any(a <= m.start() < b for a, b in taken):
            for sec in numbers(m.group(1)):
                need(me, sec, m.group(0))
    for m in NAMED.finditer(text):
        for nb in [m.group(1)] + re.findall(NN + r"\b", re.sub(r"\([^)]*\)", "", m.group(2))):
            need(nb, None, m.group(0))
    for m in XREF.finditer(text):  # the stop hook's reading, which must agree
        need(m.group(1) or me, m.group(2), m.group(0))
    return sorted(set(problems))


def _order(sec: str) -> list[int]:
    return [int(p) for p in sec.split(".")]


def wrong_topics(text: str) -> list[str]:
    """Pointers that name a notebook for a topic its headings never mention."""
    out = []
    for nb, what in [(m.group(1), m.group(2)) for m in FOR_WHAT.finditer(text)] + \
                    [(m.group(1), text[max(0, m.start() - 80):m.start()]) for m in TAUGHT.finditer(text)]:
        if nb not in headings():
            continue  # broken() reports it
        titles = "\n".join(headings()[nb])
        for topic, pattern in TOPICS.items():
            if topic.lower() in what.lower() and not pattern.search(titles):
                out.append(f"notebook {nb} is named for {topic!r}, which none of its headings mentions")
    return out


@cache
def source(nb: str) -> str:
    """Every cell of a notebook (its solution twin when there is one), as one text."""
    path = NOTEBOOKS / "solutions" / next(p.name for p in NOTEBOOKS.glob(f"{nb}_*.ipynb"))
    path = path if path.exists() else NOTEBOOKS / path.name
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"])


def missing_code(text: str) -> list[str]:
    """Code names in the clause of "as in notebook NN" that notebook NN never shows."""
    out = []
    for m in AS_IN.finditer(text):
        if m.group(1) not in headings():
            continue
        start = max(text.rfind(b, 0, m.start()) for b in (". ", "(", ")", ";", "\n\n"))
        for name in re.findall(r"`([A-Za-z_][\w.]*)`", text[start + 1:m.start()]):
            if name not in source(m.group(1)):
                out.append(f"'{m.group(0)}': `{name}` is not in notebook {m.group(1)}")
    return out


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(NOTEBOOKS).as_posix())
def test_every_pointer_names_a_notebook_and_section_that_exist(path):
    problems = [f"cell {i}: {p}" for i, src in markdown(path) for p in broken(src, key(path))]
    problems += [f"cell {i}: link to {m.group(1)}, which is not beside it" for i, src in markdown(path)
                 for m in FILE_LINK.finditer(src) if not (path.parent / m.group(1)).exists()]
    assert problems == []


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(NOTEBOOKS).as_posix())
def test_a_notebook_named_for_a_topic_teaches_it(path):
    problems = [f"cell {i}: {p}" for i, src in markdown(path) for p in wrong_topics(src) + missing_code(src)]
    assert problems == []


def test_the_course_has_numbered_sections_to_point_at():
    assert len(sections()) >= 20
    assert {"1", "3", "3.1"} <= sections()["03b"] and "7" not in sections()["03"]


@pytest.mark.parametrize("text, me, bad", [
    ("Notebook 03, section 7, goes further.", "05", "notebook 03 has no section 7"),
    ("(lesson 03, section 5)", "03b", None),
    ("as 03 §7 shows", "05", "notebook 03 has no section 7"),
    ("notebook 03's section 9", "05", "notebook 03 has no section 9"),
    ("see section 9 of notebook 03b", "05", "notebook 03b has no section 9"),
    ("notebook [03](03_multi_head_attention.ipynb), section 8", "06", "notebook 03 has no section 8"),
    ("as section 3 showed", "03b", None),
    ("sections 2 and 7", "03b", "notebook 03b has no section 7"),
    ("sections 1–4", "03b", "notebook 03b has no section 4"),
    ("§3.1", "03b", None),
    ("§3.9", "03b", "notebook 03b has no section 3.9"),
    ("notebooks 09 and 09c", "11", "there is no notebook 09c"),
    ("notebook 42 explains", "11", "there is no notebook 42"),
    ("Lesson 01b shows why", "01", None),
])
def test_the_reader_of_pointers(text, me, bad):
    found = broken(text, me)
    assert (found == []) if bad is None else any(bad in p for p in found), found


@pytest.mark.parametrize("text, bad", [
    ("**Assumes** notebook 01 (scaled dot-product attention; masks with True = may attend)", True),
    ("**Assumes** notebook 01b (masks, True = may attend)", False),
    ("masks are taught in notebook 01", True),
    ("masks are taught in 01b", False),
    ("notebook 02 (reading attention heatmaps)", False),
    ("notebook 03 (splitting heads, `nn.MultiheadAttention` and its mask convention)", True),
    ("(PyTorch stacks them into one `in_proj_weight`, as in notebook 03)", True),
    ("(PyTorch stacks them into one `in_proj_weight`, as in notebook 03b)", False),
])
def test_the_reader_of_topics(text, bad):
    assert bool(wrong_topics(text) + missing_code(text)) == bad
