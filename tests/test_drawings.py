"""The course's drawings: generated SVGs that are up to date, readable, accessible, in the palette's
colours; and their embedding in notebooks at ``<!-- drawing: NAME -->`` markers."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

from course_utils.authoring.drawings import NAMES, commands, drawings
from course_utils.authoring.drawings import embed as E
from course_utils.authoring.drawings.svg import MIN_SCRIPT, MIN_SIZE, Canvas, text_width
from course_utils.helpers import palette

SVG = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parent.parent
DRAWINGS = drawings()
GENERATED = {name: d.svg() for name, d in DRAWINGS.items()}


def _root(name: str) -> ET.Element:
    return ET.fromstring(GENERATED[name])


# --- The registry and the files --------------------------------------------------------------


def test_every_named_drawing_has_a_source_a_notebook_and_alt_text():
    assert len(NAMES) >= 24 and list(DRAWINGS) == list(NAMES)
    for name, d in DRAWINGS.items():
        assert d.notebook and d.section and d.title, name
        words = len(d.alt.split())
        assert words >= 60, f"{name}: the alt text must describe the structure ({words} words)"


def test_the_committed_svgs_are_what_the_source_draws(capsys):
    """`--check` passes on the repository: the files in notebooks/figures/ and every embedded copy."""
    assert commands.main(["--check"]) == 0, capsys.readouterr().out


def test_check_notices_a_stale_missing_or_stray_file(tmp_path):
    figures, notebooks = tmp_path / "notebooks" / "figures", tmp_path / "notebooks"
    commands.write(figures)
    assert commands.check(figures, notebooks) == []
    (figures / "kv_cache.svg").write_text(GENERATED["kv_cache"].replace("prefill", "pre-fill"))
    (figures / "rope_rotation.svg").unlink()
    (figures / "old_drawing.svg").write_text("<svg/>")
    found = " ".join(commands.check(figures, notebooks))
    assert "kv_cache.svg: differs" in found and "rope_rotation.svg: missing" in found
    assert "old_drawing.svg: belongs to no drawing" in found


def test_drawing_is_deterministic():
    assert {name: d.svg() for name, d in drawings().items()} == GENERATED


# --- Readable and accessible ------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_svg_is_an_accessible_image_on_an_opaque_panel(name):
    root = _root(name)
    assert root.get("role") == "img" and root.get("aria-labelledby") == "title desc"
    width, height = float(root.get("width")), float(root.get("height"))
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert 600 <= width <= 820, "about the width of a notebook or site column at 100 % zoom"
    title, desc = root.find(f"{SVG}title"), root.find(f"{SVG}desc")
    assert title.text == DRAWINGS[name].title and desc.text == DRAWINGS[name].alt
    panel = next(e for e in root if e.tag == f"{SVG}rect")  # the first shape: the background
    assert panel.get("fill") == palette.PANEL and float(panel.get("width")) >= width - 1
    assert float(panel.get("height")) >= height - 1


def _texts(root: ET.Element):
    """(x, anchor, width, size) of every text element, its width measured piece by piece."""
    for t in root.iter(f"{SVG}text"):
        size = float(t.get("font-size"))
        mono = "Mono" in (t.get("font-family") or "")
        width = text_width(t.text or "", size, mono=mono, bold=t.get("font-weight") == "bold")
        for span in t:
            width += text_width(span.text or "", float(span.get("font-size", size)), mono=mono)
        yield float(t.get("x")), t.get("text-anchor", "start"), width, size, "".join(t.itertext())


@pytest.mark.parametrize("name", NAMES)
def test_text_is_large_enough_and_inside_the_drawing(name):
    root = _root(name)
    width = float(root.get("width"))
    for x, anchor, w, size, text in _texts(root):
        assert size >= MIN_SIZE, f"{text!r} at {size} px"
        left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        assert 4 <= left and left + w <= width - 4, f"{text!r} runs off the drawing ({left:.0f} to {left + w:.0f})"
    for span in root.iter(f"{SVG}tspan"):
        assert float(span.get("font-size", MIN_SIZE)) >= MIN_SCRIPT, f"a sub/superscript {span.text!r} is too small"


@pytest.mark.parametrize("name", NAMES)
def test_lines_survive_scaling_down(name):
    widths = [float(e.get("stroke-width")) for e in _root(name).iter() if e.get("stroke-width")]
    assert widths and min(widths) >= 1.0


def test_canvas_refuses_small_text():
    c = Canvas(100, 100)
    with pytest.raises(ValueError, match="too small"):
        c.text(10, 10, "tiny", size=11)
    with pytest.raises(ValueError, match="sub- or superscripts"):
        c.text(10, 10, "W_{Q}", size=13)


# --- The palette's colours --------------------------------------------------------------------


def _rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[k : k + 2], 16) for k in (1, 3, 5))


def _allowed(colour: str) -> bool:
    """A grey, a colour of the palette or a tint of one (mixed with white), or a heatmap colour."""
    r, g, b = _rgb(colour)
    named = {c for role in palette.ROLES.values() for c in (role.strong, role.light)}
    if max(r, g, b) - min(r, g, b) <= 2 or colour.upper() in {c.upper() for c in named}:
        return True
    for lo, hi in zip(palette.VIRIDIS, palette.VIRIDIS[1:]):  # on the heatmaps' colour scale
        a, z = _rgb(lo), _rgb(hi)
        if any(all(abs(c - (p + (q - p) * k / 200)) <= 2 for c, p, q in zip((r, g, b), a, z)) for k in range(201)):
            return True
    for role in palette.ROLES.values():
        strong = _rgb(role.strong)
        for t in [k / 100 for k in range(101)]:  # strong * (1 - t) + white * t
            if all(abs(c - (s + (255 - s) * t)) <= 4 for c, s in zip((r, g, b), strong)):
                return True
    return False


@pytest.mark.parametrize("name", NAMES)
def test_every_colour_comes_from_the_palette(name):
    colours = set(re.findall(r'(?:fill|stroke)="(#[0-9A-Fa-f]{6})"', GENERATED[name]))
    assert not [c for c in sorted(colours) if not _allowed(c)]


@pytest.mark.parametrize(("name", "roles"), [
    ("qkv_projection", "QKV"), ("heads_split_merge", "QKV"), ("decoder_step", "QKV"),
    ("causal_mask_sentence", "QK"), ("transformer_block", "QKV"), ("kv_cache", "QKV"),
    ("tiled_attention", "QKV"), ("rope_rotation", "QK"), ("grouped_query_attention", "QKV"),
    ("induction_circuit", "QKV"), ("softmax_numbers", "QKV"), ("two_heads_vs_one", "QKV"),
    ("heatmap_reading", "QK"), ("cross_attention_who_reads", "QKV"), ("head_patterns", "QK"),
    ("padding_causal_mask", "QK"), ("mha_mask_conventions", "QK"), ("masked_scores_numbers", "QK"),
    ("seq2seq_bottleneck", "QKV"), ("scaling_numbers", "K"),
])
def test_queries_keys_and_values_are_drawn_in_their_colours(name, roles):
    svg = GENERATED[name]
    for letter in roles:
        role = {"Q": palette.QUERY, "K": palette.KEY, "V": palette.VALUE}[letter]
        assert role.strong in svg, f"{name} draws no {role.name} in {role.strong}"


# --- Embedding ------------------------------------------------------------------------------


def _notebook(*sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(s) for s in sources] + [nbformat.v4.new_code_cell("# drawing: x")]
    return nb


def test_embed_inserts_each_drawing_under_its_marker_and_keeps_the_marker():
    nb = _notebook("<!-- drawing: qkv_projection -->",
                   "Prose that explains the heads.\n<!-- drawing: heads_split_merge -->",
                   "Before.\n<!-- drawing: kv_cache -->\nAfter, still prose.")
    assert E.embed(nb, DRAWINGS) == ["qkv_projection", "heads_split_merge", "kv_cache"]
    lines = nb.cells[2].source.split("\n")
    assert lines[:2] == ["Before.", "<!-- drawing: kv_cache -->"]
    assert lines[2].startswith('<img src="data:image/svg+xml')
    assert lines[3:] == ["", "After, still prose."], "a blank line ends the HTML block"
    found = E.find(nb)
    assert [(e.cell, e.name) for e in found] == [(0, "qkv_projection"), (1, "heads_split_merge"), (2, "kv_cache")]
    for e in found:
        assert e.svg == GENERATED[e.name] and e.alt == DRAWINGS[e.name].alt
    assert E.problems(nb, DRAWINGS, GENERATED) == []
    assert nb.cells[-1].source == "# drawing: x", "code cells are left alone"


def test_embed_again_changes_nothing_and_refreshes_an_old_copy():
    nb = _notebook("Text.\n<!-- drawing: rope_rotation -->")
    E.embed(nb, DRAWINGS)
    once = nb.cells[0].source
    E.embed(nb, DRAWINGS)
    assert nb.cells[0].source == once
    old = E.image_line(DRAWINGS["rope_rotation"], GENERATED["rope_rotation"].replace("offset", "shift"))
    nb.cells[0].source = "Text.\n<!-- drawing: rope_rotation -->\n" + old
    stale = "cell 0 (rope_rotation): the stored drawing differs from the generated one"
    assert E.problems(nb, DRAWINGS, GENERATED) == [stale]
    E.embed(nb, DRAWINGS)
    assert nb.cells[0].source == once


def test_problems_names_what_is_missing_or_wrong():
    tiled = re.sub(r'alt="[^"]*"', 'alt=""', E.image_line(DRAWINGS["tiled_attention"]))
    nb = _notebook("<!-- drawing: lm_stack -->", "<!-- drawing: tiled_attention -->\n" + tiled,
                   "<!-- drawing: no_such -->")
    nb.cells.append(nbformat.v4.new_markdown_cell("Lost its marker:\n" + E.image_line(DRAWINGS["kv_cache"])))
    found = E.problems(nb, DRAWINGS, GENERATED)
    assert found == ["cell 0 (lm_stack): marker without its drawing", "cell 1 (tiled_attention): empty alt text",
                     "cell 2 (no_such): no drawing has this name",
                     "cell 4: an embedded drawing without its marker line"]


def test_embed_refuses_an_unknown_name_or_a_marker_inside_a_line():
    with pytest.raises(ValueError, match="no drawing named 'qkv'"):
        E.embed(_notebook("<!-- drawing: qkv -->"), DRAWINGS)
    with pytest.raises(ValueError, match="on a line of its own"):
        E.embed(_notebook("See the picture <!-- drawing: kv_cache -->"), DRAWINGS)


def test_embedded_drawing_renders_as_an_image_in_markdown(tmp_path):
    """nbconvert's Markdown renderer (nbviewer, HTML export) and MyST's (the site, where the site's tools are
    installed) keep the image and the prose after it."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    nb = _notebook("Before.\n<!-- drawing: causal_mask_sentence -->\nAfter *this*.")
    E.embed(nb, DRAWINGS)
    renderers = [markdown2html_mistune]
    try:
        from markdown_it import MarkdownIt  # MyST's parser: docs/requirements.txt
    except ImportError:
        pass
    else:
        renderers.append(MarkdownIt("commonmark").render)
    for render in renderers:
        rendered = render(nb.cells[0].source)
        src = re.search(r'<img src="data:image/svg\+xml;base64,([^"]+)"', rendered)
        assert src and base64.b64decode(src.group(1)).decode() == GENERATED["causal_mask_sentence"], render
        assert "<em>this</em>" in rendered, "the prose after the drawing stays Markdown"


def test_embed_command_writes_only_notebooks_with_markers(tmp_path):
    marked, plain = tmp_path / "a.ipynb", tmp_path / "b.ipynb"
    nbformat.write(_notebook("<!-- drawing: decoder_step -->"), marked)
    nbformat.write(_notebook("No drawing here."), plain)
    before = plain.read_bytes()
    assert commands.embed_files([marked, plain]) == {marked: ["decoder_step"]}
    assert plain.read_bytes() == before
    assert E.problems(nbformat.read(marked, as_version=4), DRAWINGS, GENERATED) == []


def _course_notebooks() -> list[Path]:
    return sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def test_every_drawing_embedded_in_the_course_equals_its_file_and_has_alt_text():
    figures = ROOT / "notebooks" / "figures"
    for path in _course_notebooks():
        nb = nbformat.read(path, as_version=4)
        for e in E.find(nb):
            where = f"{path.relative_to(ROOT)} cell {e.cell} ({e.name})"
            assert e.svg is not None, f"{where}: run `python -m course_utils.authoring.drawings --embed`"
            assert e.svg == (figures / f"{e.name}.svg").read_text(encoding="utf-8"), f"{where}: stale, run --embed"
            assert e.alt and e.alt.strip(), f"{where}: empty alt text"


@pytest.mark.parametrize("name", NAMES)
def test_labels_do_not_overlap(name):
    boxes = []
    for x, anchor, w, _size, text in _texts(_root(name)):
        left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        boxes.append((left, left + w, text))
    ys = [float(t.get("y")) - 0.36 * float(t.get("font-size")) for t in _root(name).iter(f"{SVG}text")]
    sizes = [float(t.get("font-size")) for t in _root(name).iter(f"{SVG}text")]
    clashes = [
        (boxes[i][2], boxes[j][2])
        for i in range(len(boxes)) for j in range(i + 1, len(boxes))
        if boxes[i][0] < boxes[j][1] - 1 and boxes[j][0] < boxes[i][1] - 1
        and abs(ys[i] - ys[j]) < (sizes[i] + sizes[j]) / 2 - 1
    ]
    assert not clashes


# --- Every core lesson draws, and the drawings that show a lesson's numbers show its numbers --------

CORE = ("01", "01b", "02", "03", "03b", "04", "05", "06", "07", "08", "09", "09b", "11")


def _lesson(number: str, folder: Path = ROOT / "notebooks" / "solutions") -> Path:
    (path,) = [p for p in folder.glob(f"{number}_*.ipynb")]
    return path


@pytest.mark.parametrize("number", CORE)
def test_every_core_lesson_shows_a_drawing_in_both_versions(number):
    for folder in (ROOT / "notebooks" / "solutions", ROOT / "notebooks"):
        path = _lesson(number, folder)
        names = [e.name for e in E.find(nbformat.read(path, as_version=4))]
        assert names and all(n in DRAWINGS for n in names), f"{path.relative_to(ROOT)} shows no drawing"


def test_every_drawing_is_shown_in_the_lesson_it_names():
    shown = {}
    for path in (ROOT / "notebooks" / "solutions").glob("*.ipynb"):
        for e in E.find(nbformat.read(path, as_version=4)):
            shown.setdefault(e.name, set()).add(path.name.split("_")[0])
    for name, d in DRAWINGS.items():
        assert shown.get(name, set()) & set(d.notebook.split("/")), f"{name} is not shown in lesson {d.notebook}"


def _outputs(path: Path) -> str:
    """A lesson's numbers: its code (the inputs it types in) and everything it printed, as stored."""
    text = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            text.append(cell.source)
        for out in cell.get("outputs", []):
            text.append(out.get("text", "") if "text" in out else out.get("data", {}).get("text/plain", ""))
    return "\n".join(text)


def _literal(path: Path, name: str, contains: str | None = None, constants: dict | None = None):
    """The literal assigned to ``name`` in the first code cell of a notebook (holding ``contains``) that assigns
    it: ``name = LITERAL``, ``name = np.array(LITERAL)`` or ``name = torch.tensor(LITERAL)``; names in it are
    replaced by their ``constants``."""
    import ast

    class Constants(ast.NodeTransformer):
        def visit_Name(self, node):
            return ast.Constant((constants or {})[node.id]) if node.id in (constants or {}) else node

    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code" or (contains and contains not in cell.source):
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
                value = node.value
                if isinstance(value, ast.Call) and getattr(value.func, "attr", "") in ("array", "tensor"):
                    value = value.args[0]
                return ast.literal_eval(Constants().visit(value))
    raise AssertionError(f"{path.name} assigns no literal to {name}")


def test_the_drawings_start_from_the_lessons_own_inputs():
    """The worked examples are drawn from the very values the lessons use, read here from their code."""
    from course_utils.authoring.drawings import attention, inference, masks, patterns, positions, worked

    n01, n01b, n02, n05, n09, n11, n16 = (_lesson(n) for n in ("01", "01b", "02", "05", "09", "11", "16"))
    assert (worked.Q1, worked.K1, worked.V1) == tuple(_literal(n01, k) for k in ("Q1", "K1", "V1"))
    for name, mine in (("X", attention._X), ("W_Q", attention._W_Q), ("W_K", attention._W_K),
                       ("W_V", attention._W_V)):
        assert _literal(n01, name, contains="W_V" if name != "X" else "# cat") == mine, name
    assert _literal(n01b, "row", contains="15.5") == worked.ROW_01B
    assert _literal(n01b, "PAD") == masks.PAD
    assert _literal(n01b, "tokens_c", constants={"PAD": masks.PAD})[0] == masks.TOKENS_01B
    assert _literal(n02, "rules") == patterns.RULES_02
    assert _literal(n02, "strength") == patterns.STRENGTH_02
    assert _literal(n05, "S", contains="mask3") == worked.S_05
    assert _literal(n11, "example") == worked.TEXT_11
    assert _literal(n16, "row", contains="m_new") == inference.ROW_16
    assert tuple(_literal(n09, "pairs_to_show")) == positions.PAIRS_09
    assert (_literal(n09, "sent_A"), _literal(n09, "sent_B")) == (positions.SENT_A, positions.SENT_B)


@pytest.mark.parametrize(("name", "number"), [
    ("softmax_numbers", "01"), ("qkv_projection", "01"), ("scaling_numbers", "01b"), ("heatmap_reading", "02"),
    ("two_heads_vs_one", "03"),
    ("masked_scores_numbers", "05"), ("tiled_attention", "16"),
])
def test_every_decimal_a_drawing_shows_is_one_its_lesson_printed(name, number):
    """A drawing computes its numbers (never typed in); they must be the ones the lesson types in or prints."""
    printed = _outputs(_lesson(number))
    drawn = {m for t in _root(name).iter(f"{SVG}text") for m in re.findall(r"-?\d+\.\d+", "".join(t.itertext()))}
    assert drawn, f"{name} shows no decimal number"
    missing = sorted(x for x in drawn if x not in printed)
    assert not missing, f"{name} draws numbers lesson {number} does not print: {missing}"
