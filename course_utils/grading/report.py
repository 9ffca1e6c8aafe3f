"""The class report beside grades.csv: per task, how many passed and the mistakes the checkers named.

Written as Markdown (``grades_report.md``) and HTML (``grades_report.html``) next to the CSV;
both come from the rows of the table alone (and the isolation the run had), so a rerun gives the
same report. Answers flagged as copies of the course's own code are listed apart: they are graded
on what they compute; whether a copy is acceptable is the instructor's call, not the grader's.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .exercises import exercises

OUTCOMES = ("correct", "wrong", "not done", "crashed", "timed out")
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_MARKDOWN = re.compile(r"([\\\[\]|!`])")  # links and images, table cells, code spans; line starts are the report's own


@dataclass
class Result:
    """One submission's outcome, before it becomes a row of grades.csv.

    ``values``: task name -> "correct", "wrong: ...", "not done...", "crashed: ...", "timed out";
    ``problem``: when the submission was not graded ("invalid: ...", "crashed: the grader failed...",
    "timed out"), the value of every task column; ``flags``: "task: copy of ..." notes."""

    submission: str
    exercise: str = ""
    values: dict[str, str] = field(default_factory=dict)
    flags: str = ""
    seconds: float = 0.0
    problem: str = ""
    isolation: str = ""


def clean(text: object, limit: int = 2000) -> str:
    """``text`` as one line of plain, printable text: a byte that was not UTF-8 (a lone surrogate, as
    a Latin-1 file name arrives) becomes ``\\xe9``, control characters and line breaks a space (no
    terminal escape, no forged line), bidirectional overrides are dropped; at most ``limit`` characters."""
    out = []
    for ch in str(text):
        category = unicodedata.category(ch)
        if category == "Cs":
            code = ord(ch)
            out.append(f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}")
        elif category in ("Cc", "Zl", "Zp"):
            out.append(" ")
        elif ch not in _BIDI:
            out.append(ch)
    line = "".join(out)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def csv_cell(text: object) -> str:
    """A cleaned value that no spreadsheet reads as a formula (a leading = + - @ gets a ' before it)."""
    value = clean(text)
    return "'" + value if value.lstrip()[:1] in ("=", "+", "-", "@") else value


def md_text(text: object) -> str:
    """A cleaned value as literal Markdown text: HTML escaped (no raw tag, no autolink), and the characters
    that make links, images, table cells or code spans escaped (a value never starts a line: no heading)."""
    return _MARKDOWN.sub(r"\\\1", html.escape(clean(text), quote=False))


def _kind(value: str) -> str:
    for kind in OUTCOMES:
        if value == kind or value.startswith(kind + ":") or value.startswith(kind + " "):
            return kind
    return "invalid" if value.startswith("invalid") else "other"


def task_sections(rows: list[dict[str, str]]) -> list[dict]:
    """Per exercise and task: counts of each outcome and the hints of the wrong answers, most common first."""
    sections = []
    for exercise, spec in exercises().items():
        mine = [r for r in rows if r["exercise"] == exercise]
        if not mine:
            continue
        tasks = []
        for name in (t.name for t in spec.tasks):
            values = [r.get(name, "") for r in mine]
            counts = Counter(_kind(v) for v in values)
            mistakes = Counter(v.split(":", 1)[1].strip() for v in values if _kind(v) == "wrong")
            crashes = Counter(v.split(":", 1)[1].strip() for v in values if _kind(v) == "crashed")
            tasks.append({"task": name, "counts": counts, "students": len(mine),
                          "mistakes": sorted(mistakes.items(), key=lambda kv: (-kv[1], kv[0])),
                          "crashes": sorted(crashes.items(), key=lambda kv: (-kv[1], kv[0]))})
        full = sum(r["correct"] == r["tasks"] for r in mine)
        sections.append({"exercise": exercise, "submissions": len(mine), "all_correct": full, "tasks": tasks})
    return sections


def _invalid(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    out = []
    for r in rows:
        if not r["exercise"]:
            reason = next((v for k, v in r.items() if k not in ("submission", "exercise", "correct", "tasks", "flags")
                           and v), "invalid")
            out.append((r["submission"], reason))
    return out


def _counts_text(task: dict) -> str:
    c = task["counts"]
    parts = [f"{c[k]} {k}" for k in OUTCOMES[1:] if c[k]]
    return f"{c['correct']} of {task['students']} passed" + (f" ({', '.join(parts)})" if parts else "")


def _flagged(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(r["submission"], r["flags"]) for r in rows if r.get("flags")]


FLAGGED = ("Graded on what they compute: a copy of the course's code computes the right answer, and a correct "
           "answer whose code the grader's static check cannot follow (dynamic code, a course function used as "
           "a value) may hand its work to the course's own function. Whether either is acceptable is your call:")


def _isolation_text(isolation: str) -> str:
    return f"Student code ran with isolation: {isolation} (INSTRUCTORS.md, \"Grade a class\", says what that guarantees)."


def markdown(rows: list[dict[str, str]], isolation: str = "") -> str:
    lines = ["# Class report", "",
             f"{len(rows)} submissions. Per task: how many passed, then the mistakes the checkers named, "
             "most common first: what to go over in the next class.", ""]
    lines += [md_text(_isolation_text(isolation)), ""] if isolation else []
    for section in task_sections(rows):
        lines += [f"## {md_text(section['exercise'])}", "",
                  f"{section['submissions']} submissions, {section['all_correct']} with every task correct.", ""]
        for task in section["tasks"]:
            lines += [f"### {md_text(task['task'])}: {_counts_text(task)}", ""]
            if task["mistakes"]:
                lines += ["| students | mistake the checker named |", "| ---: | --- |"]
                lines += [f"| {n} | {md_text(hint)} |" for hint, n in task["mistakes"]]
                lines.append("")
            if task["crashes"]:
                lines += ["Crashes to look at:", ""]
                lines += [f"- {n} x {md_text(why)}" for why, n in task["crashes"]]
                lines.append("")
    flagged = _flagged(rows)
    if flagged:
        lines += ["## Answers to look at", "", FLAGGED, ""]
        lines += [f"- {md_text(sub)}: {md_text(why)}" for sub, why in flagged] + [""]
    invalid = _invalid(rows)
    if invalid:
        lines += ["## Not graded", "", "| submission | reason |", "| --- | --- |"]
        lines += [f"| {md_text(sub)} | {md_text(why)} |" for sub, why in invalid]
        lines.append("")
    return "\n".join(lines)


def html_report(rows: list[dict[str, str]], isolation: str = "") -> str:
    def e(text: object) -> str:
        return html.escape(clean(text))

    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>Class report</title>',
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
             "td.n{text-align:right}</style></head><body>", "<h1>Class report</h1>",
             f"<p>{len(rows)} submissions. Per task: how many passed, then the mistakes the checkers named, "
             "most common first: what to go over in the next class.</p>"]
    parts += [f"<p>{e(_isolation_text(isolation))}</p>"] if isolation else []
    for section in task_sections(rows):
        parts += [f"<h2>{e(section['exercise'])}</h2>",
                  f"<p>{section['submissions']} submissions, {section['all_correct']} with every task correct.</p>"]
        for task in section["tasks"]:
            parts.append(f"<h3>{e(task['task'])}: {e(_counts_text(task))}</h3>")
            if task["mistakes"]:
                parts.append("<table><tr><th>students</th><th>mistake the checker named</th></tr>")
                parts += [f'<tr><td class="n">{n}</td><td>{e(hint)}</td></tr>' for hint, n in task["mistakes"]]
                parts.append("</table>")
            if task["crashes"]:
                parts.append("<p>Crashes to look at:</p><ul>")
                parts += [f"<li>{n} &times; {e(why)}</li>" for why, n in task["crashes"]]
                parts.append("</ul>")
    flagged = _flagged(rows)
    if flagged:
        parts += ["<h2>Answers to look at</h2>", f"<p>{e(FLAGGED)}</p><ul>"]
        parts += [f"<li>{e(sub)}: {e(why)}</li>" for sub, why in flagged] + ["</ul>"]
    invalid = _invalid(rows)
    if invalid:
        parts.append("<h2>Not graded</h2><table><tr><th>submission</th><th>reason</th></tr>")
        parts += [f"<tr><td>{e(sub)}</td><td>{e(why)}</td></tr>" for sub, why in invalid]
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_reports(rows: list[dict[str, str]], csv_path: Path, isolation: str = "") -> list[Path]:
    """Write ``<stem>_report.md`` and ``<stem>_report.html`` beside the CSV; their paths."""
    md = csv_path.with_name(csv_path.stem + "_report.md")
    page = csv_path.with_name(csv_path.stem + "_report.html")
    md.write_text(markdown(rows, isolation), encoding="utf-8")
    page.write_text(html_report(rows, isolation), encoding="utf-8")
    return [md, page]
