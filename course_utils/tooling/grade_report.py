"""The class report beside grades.csv: per task, how many passed and the mistakes the checkers named.

Written as Markdown (``grades_report.md``) and HTML (``grades_report.html``) next to the CSV;
both come from the rows of the table alone, so a rerun gives the same report.
"""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path

from .grade import EXERCISES

OUTCOMES = ("correct", "wrong", "not done", "crashed", "timed out")


def _kind(value: str) -> str:
    for kind in OUTCOMES:
        if value == kind or value.startswith(kind + ":") or value.startswith(kind + " "):
            return kind
    return "invalid" if value.startswith("invalid") else "other"


def summarise(rows: list[dict[str, str]]) -> list[dict]:
    """Per exercise and task: counts of each outcome and the hints of the wrong answers, most common first."""
    sections = []
    for exercise, spec in EXERCISES.items():
        mine = [r for r in rows if r["exercise"] == exercise]
        if not mine:
            continue
        tasks = []
        for name, _ in spec.tasks:
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
            reason = next((v for k, v in r.items() if k not in ("submission", "exercise", "correct", "tasks") and v), "invalid")
            out.append((r["submission"], reason))
    return out


def _counts_text(task: dict) -> str:
    c = task["counts"]
    parts = [f"{c[k]} {k}" for k in OUTCOMES[1:] if c[k]]
    return f"{c['correct']} of {task['students']} passed" + (f" ({', '.join(parts)})" if parts else "")


def markdown(rows: list[dict[str, str]]) -> str:
    lines = ["# Class report", "",
             f"{len(rows)} submissions. Per task: how many passed, then the mistakes the checkers named, "
             "most common first: what to go over in the next class.", ""]
    for section in summarise(rows):
        lines += [f"## {section['exercise']}", "",
                  f"{section['submissions']} submissions, {section['all_correct']} with every task correct.", ""]
        for task in section["tasks"]:
            lines += [f"### {task['task']}: {_counts_text(task)}", ""]
            if task["mistakes"]:
                lines += ["| students | mistake the checker named |", "| ---: | --- |"]
                lines += [f"| {n} | {hint.replace('|', '&#124;')} |" for hint, n in task["mistakes"]]
                lines.append("")
            if task["crashes"]:
                lines += ["Crashes to look at:", ""]
                lines += [f"- {n} x {why}" for why, n in task["crashes"]]
                lines.append("")
    invalid = _invalid(rows)
    if invalid:
        lines += ["## Not graded", "", "| submission | reason |", "| --- | --- |"]
        lines += [f"| {sub} | {why.replace('|', '&#124;')} |" for sub, why in invalid]
        lines.append("")
    return "\n".join(lines)


def html_report(rows: list[dict[str, str]]) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>Class report</title>',
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
             "td.n{text-align:right}</style></head><body>", "<h1>Class report</h1>",
             f"<p>{len(rows)} submissions. Per task: how many passed, then the mistakes the checkers named, "
             "most common first: what to go over in the next class.</p>"]
    for section in summarise(rows):
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
    invalid = _invalid(rows)
    if invalid:
        parts.append("<h2>Not graded</h2><table><tr><th>submission</th><th>reason</th></tr>")
        parts += [f"<tr><td>{e(sub)}</td><td>{e(why)}</td></tr>" for sub, why in invalid]
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_reports(rows: list[dict[str, str]], csv_path: Path) -> list[Path]:
    """Write ``<stem>_report.md`` and ``<stem>_report.html`` beside the CSV; their paths."""
    md = csv_path.with_name(csv_path.stem + "_report.md")
    page = csv_path.with_name(csv_path.stem + "_report.html")
    md.write_text(markdown(rows), encoding="utf-8")
    page.write_text(html_report(rows), encoding="utf-8")
    return [md, page]
