"""The formats of ``fade analyze`` are their modules: one module per format under
``fade/analyze/formats``, each declaring the engine version and writer its rules come from, and
docs/analyze.md lists exactly what the modules declare."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fade.analyze import formats
from fade.analyze.formats import FORMATS, NAMES, Format
from fade.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(formats.__file__).parent
SHARED = {"__init__", "base"}


def format_table() -> str:
    """The writer table of docs/analyze.md, as FORMATS makes it."""
    rows = [f"| `{f.name}` | {f.engine} | {'; '.join(f'`{w}`' for w in f.writer) or '-'} |" for f in FORMATS.values()]
    return "\n".join(["| format | engine | writer |", "|---|---|---|", *rows])


def test_every_module_is_one_format_and_every_format_one_module():
    modules = {p.stem for p in PACKAGE.glob("*.py")} - SHARED
    assert modules == {name.replace("-", "_") for name in NAMES}
    for name in NAMES:
        fmt = FORMATS[name]
        assert isinstance(fmt, Format) and fmt.name == name
    assert NAMES[-1] == "generic"  # it takes any CSV or parquet file: matched last


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("generic", "fade-eval")])
def test_every_engine_format_names_its_version_and_writer(name):
    """An engine's rules hold for the version they were read from (fade's own formats excepted)."""
    fmt = FORMATS[name]
    assert re.search(r"\d", fmt.engine), f"{name}: no version in {fmt.engine!r}"
    assert fmt.writer and all(re.search(r"\.\w+(:\d+)?", w) for w in fmt.writer), fmt.writer
    assert fmt.layout and fmt.keys


def test_format_choices_are_the_modules():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    action = next(a for a in sub.choices["analyze"]._actions if a.dest == "format")
    assert tuple(action.choices) == NAMES


def test_docs_list_every_format_with_its_engine_and_writer():
    text = (ROOT / "docs" / "analyze.md").read_text(encoding="utf-8")
    table = text.split("<!-- formats: begin -->\n", 1)[1].split("\n<!-- formats: end -->", 1)[0]
    assert table == format_table(), "docs/analyze.md's writer table differs from the format modules: regenerate it"
