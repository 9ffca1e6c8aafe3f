"""Plain words for the course website (``site``): titles without LaTeX, alt text for plots.

A page title is shown where no formula is drawn (the browser's tab, the sidebar, search results),
so ``plain_title`` writes its ``$...$`` formulas as text. A plot a code cell outputs gets alt text
that says what it shows (``plot_alt``), never the file path myst-nb would give it.
"""

from __future__ import annotations

import re

_LATEX_WORDS = {r"\times": "×", r"\cdot": "·", r"\le": "≤", r"\ge": "≥", r"\infty": "∞", r"\to": "→",
                r"\ldots": "…", r"\dots": "…", r"\approx": "≈", r"\neq": "≠", r"\ne": "≠"}  # fmt: skip
_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def plain_math(latex: str) -> str:
    r"""A short LaTeX formula as plain text: ``\sqrt{d_k}`` -> ``√d_k``, ``n \times m`` -> ``n × m``, ``n^2`` -> ``n²``."""
    text = re.sub(r"\\sqrt\{([^{}]*)\}", r"√\1", latex)
    text = re.sub(r"\\(?:text|mathrm|mathbf|operatorname)\{([^{}]*)\}", r"\1", text)
    for command, word in sorted(_LATEX_WORDS.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(re.escape(command) + r"(?![A-Za-z])", word, text)
    text = re.sub(r"\^\{?(\d+)\}?", lambda m: m.group(1).translate(_SUPERSCRIPTS), text)
    text = re.sub(r"\\([A-Za-z]+)", r"\1", text)  # any other command: its name
    return re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()


def plain_title(title: str) -> str:
    """A heading's text with every ``$...$`` formula in plain text (``plain_math``)."""
    return re.sub(r"\$([^$]+)\$", lambda m: plain_math(m.group(1)), title)


TITLE_CALL = re.compile(r"""\b(?:suptitle|set_title|title)\(\s*f?(?P<q>["'])(?P<text>.+?)(?P=q)""")
TITLE_ARGUMENT = re.compile(r"""\btitle\s*=\s*f?(?P<q>["'])(?P<text>.+?)(?P=q)""")


def _plain_words(markdown: str) -> str:
    text = re.sub(r"<[^>]+>", " ", markdown)  # HTML tags and comments
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images: their text
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = plain_title(text).replace("`", "").replace("**", "").replace("*", "")
    text = re.sub(r"^#+ .*$", "", text, flags=re.M)  # headings: not what a plot shows
    return re.sub(r"\s+", " ", text).strip()


def plot_alt(source: str, markdown_before: str) -> str:
    """Alt text for the images a code cell outputs: "Plot: " and the figure's titles in the cell's
    code (``fig.suptitle``, ``ax.set_title``, ``title=``; an f-string's fields dropped), else the
    first sentence of the Markdown cell above it."""
    titles = []
    for m in [*TITLE_CALL.finditer(source), *TITLE_ARGUMENT.finditer(source)]:
        text = re.sub(r"\{[^{}]*\}", "…", m.group("text")).replace("\\n", " ")
        text = plain_title(re.sub(r"\s+", " ", text)).strip(" :")
        if len(re.findall(r"[A-Za-z]{2,}", text)) >= 2 and text not in titles:  # words, not only f-string fields
            titles.append(text)
    if titles:
        return "Plot: " + "; ".join(titles[:3])
    words = _plain_words(markdown_before)
    sentence = re.split(r"(?<=[.!?])\s", words, maxsplit=1)[0] if words else ""
    if len(sentence) > 200:
        sentence = sentence[:200].rsplit(" ", 1)[0] + " …"
    return f"Plot: {sentence}" if sentence else "Plot drawn by the code above"
