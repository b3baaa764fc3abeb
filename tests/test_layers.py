"""The architecture as a test: the layer map of docs/architecture.md, no import cycle, one version.

Imports are read from the source (every ``import``, including those inside functions), so a
cycle that only closes at run time is caught too.
"""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

import fade

SRC = Path(fade.__file__).resolve().parent
ROOT = SRC.parent.parent

#: Which layers each layer may import (besides itself). The core is the bottom; the CLI the top.
LAYERS: dict[str, set[str]] = {
    "core": set(),
    "plots": {"core"},
    "progress": set(),
    "verifiers": {"core", "progress"},
    "testbed": {"core", "plots", "progress", "verifiers"},
    "integrations": {"core", "verifiers"},
    "experiments": {"core", "plots", "progress", "testbed"},
    "analyze": {"core", "plots", "progress"},
    "cli": {"core", "plots", "progress", "verifiers", "testbed", "integrations", "experiments", "analyze"},
}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in (
        "testbed",
        "verifiers",
        "integrations",
        "experiments",
        "analyze",
        "plots",
        "progress",
        "cli",
    ):
        return parts[1]
    if len(parts) > 1 and parts[1] == "__main__":
        return "cli"
    return "core"


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _imports(module: str, path: Path, is_package: bool, modules: dict) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            targets = [f"{name}.{a.name}" if f"{name}.{a.name}" in modules else name for a in node.names]
        for target in targets:
            if target.split(".")[0] != "fade":
                continue
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != module:
                found.add(target)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(m, path, pkg, modules) for m, (path, pkg) in modules.items()}


def test_layers_import_only_what_lies_below(graph):
    wrong = sorted(
        f"{m} ({_layer(m)}) imports {t} ({_layer(t)})"
        for m, targets in graph.items()
        for t in targets
        if _layer(t) != _layer(m) and _layer(t) not in LAYERS[_layer(m)]
    )
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle(graph):
    # Tarjan's strongly connected components: any component of two or more modules is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def _matplotlib_imports(path: Path) -> list[tuple[int, str]]:
    """Each import of matplotlib in the file, at the top or inside a function: (line, module)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        found += [(node.lineno, n) for n in names if n.split(".")[0] == "matplotlib"]
    return found


def test_the_verifiers_draw_nothing():
    # Drawing is the plotting layer's (fade eval's pass@k figure is fade.plots.draw_eval_passk):
    # no verifiers module imports matplotlib, at the top or inside a function.
    drawing = [
        f"{path.relative_to(SRC)}:{line} imports {name}"
        for path in sorted((SRC / "verifiers").rglob("*.py"))
        for line, name in _matplotlib_imports(path)
    ]
    assert not drawing, "\n".join(drawing)


#: What drawing means to the test below: matplotlib, or the plotting helpers that wrap it.
DRAWING = ("fade.plots",)
#: What scoring means: the verifiers, and the testbed modules that sample, evaluate or verify.
SCORING = ("fade.verifiers", "fade.testbed.evaluation", "fade.testbed.sampling", "fade.testbed.policy",
           "fade.testbed.tasks")


def test_no_module_both_draws_and_scores(graph):
    # A figure is drawn from numbers a scoring module already returned: no module outside the
    # command line (which runs one, then the other) imports both a drawing and a scoring module.
    modules = _modules()
    mixed = []
    for module, targets in sorted(graph.items()):
        if _layer(module) == "cli":
            continue
        draws = bool(_matplotlib_imports(modules[module][0])) or any(t.startswith(DRAWING) for t in targets)
        scores = sorted(t for t in targets if t.startswith(SCORING))
        if draws and scores:
            mixed.append(f"{module} draws and imports {', '.join(scores)}")
    assert not mixed, "\n".join(mixed)


def test_the_core_imports_torch_and_numpy_only():
    code = (
        "import sys, fade; "
        "heavy = sorted(m for m in ('matplotlib', 'transformers', 'trl', 'verl', 'rich', 'math_verify') "
        "if m in sys.modules); "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_one_version_everywhere():
    assert importlib.metadata.version("fade-rl") == fade.__version__
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    out = subprocess.run([sys.executable, "-m", "fade", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"fade {fade.__version__}"


def test_license_matches_the_declared_one():
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert 'license = "Apache-2.0"' in (ROOT / "pyproject.toml").read_text()
