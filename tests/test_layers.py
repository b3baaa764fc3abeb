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


#: The modules that decide which per-rollout inputs an estimator gets: the registry, which declares
#: them (``EstimatorSpec.inputs``, ``check_inputs``), and fade.weigh, which gives them.
WEIGHING = ("registry.py", "weighing.py")


def _weighing_outside(root: Path) -> list[str]:
    """Each read of a spec's ``needs`` or ``uses``, each call of ``batch_diagnostics`` and each
    ``observe`` fed the step's entropy or step (or ``**signals``) in the modules under ``root`` but
    :data:`WEIGHING`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in WEIGHING:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("needs", "uses"):
                found.append(f"{rel}:{node.lineno} reads .{node.attr}")
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                if name == "batch_diagnostics":
                    found.append(f"{rel}:{node.lineno} calls {name}")
                fed = any(k.arg in (None, "entropy", "step") for k in node.keywords)
                receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
                approved = isinstance(receiver, ast.Name | ast.Attribute) and (
                    getattr(receiver, "id", None) == "weighing" or getattr(receiver, "attr", None) == "weighing")
                if name == "observe" and receiver is not None and not approved and fed:  # est.observe(...)
                    found.append(f"{rel}:{node.lineno} feeds the step's signals")
    return found


def test_one_way_to_weigh_a_batch():
    # Which inputs an estimator weighs with is decided in one place (docs/architecture.md): fade.weigh
    # gives it exactly its spec's inputs, computing each only when wanted, and measures the batch. A
    # module that reads a spec's needs or uses decides them itself: it should weigh through fade.weigh,
    # or refuse before a run with fade.registry.check_inputs (missing_inputs). The diagnostics a
    # trainer or engine logs are a Weighing's: batch_diagnostics is called by fade.weigh alone. Which
    # entropy and step a stateful estimator observes is one rule, fed by fade.weighing.observe alone.
    found = _weighing_outside(SRC)
    assert not found, "\n".join(found)


def test_the_one_way_rule_sees_what_it_forbids(tmp_path):
    code = ("wants = (*est.spec.needs, *fade.spec(n).uses)\nd = fade.mass.batch_diagnostics(est, a, r, g)\n"
            "est.observe(entropy=h)\nest.observe(**signals)\nest.observe(rank1_share=s)\nbonus.observe(h)\n"
            "observe(state, params, **signals)\nweighing.observe(est, entropy=h)\n"
            "fade.weighing.observe(est, **signals)\n")
    for name in ("trainer.py", "registry.py", "weighing.py"):
        (tmp_path / name).write_text(code)
    assert sorted(_weighing_outside(tmp_path)) == [
        "trainer.py:1 reads .needs", "trainer.py:1 reads .uses", "trainer.py:2 calls batch_diagnostics",
        "trainer.py:3 feeds the step's signals", "trainer.py:4 feeds the step's signals"]


#: The one module that reads and writes JSON lines (docs/architecture.md, "One reader of JSON lines").
JSON_LINES = SRC / "jsonl.py"
#: Where lines of JSON are split and parsed, or written, outside it, and why: (module, function) -> reason.
JSON_LINES_ELSEWHERE = {
    ("verifiers/harness.py", "_setup_report"): "the sandbox's supervisor reads its setup report from a pipe, with "
                                               "the standard library only (it runs without fade)",
    ("verifiers/harness.py", "*"): "the supervisor's reports to the sandbox's caller, over a pipe",
    ("verifiers/runner.py", "*"): "the in-sandbox runner's reports, over a pipe (standard library only)",
    ("verifiers/math_answer.py", "*"): "requests and answers to the math worker process, over its pipes",
    ("verifiers/testcases.py", "_functional_args"): "a LiveCodeBench functional test's input text, a JSON value per "
                                                    "line, in memory",
    ("verifiers/judges/lcb.py", "call_test"): "the same LiveCodeBench input text, in memory",
}

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _called(node: ast.Call) -> tuple[str | None, str | None]:
    """(receiver, name) of a call: ``json.loads(...)`` is ("json", "loads"), ``f(...)`` (None, "f")."""
    func = node.func
    if isinstance(func, ast.Attribute):
        return (func.value.id if isinstance(func.value, ast.Name) else None), func.attr
    return None, func.id if isinstance(func, ast.Name) else None


def _parses_json(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _called(node) in {("json", "loads"), ("json", "load"), ("jsonl", "loads")}


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, or a module's top level, without those of functions and
    classes defined inside it (each is judged on its own)."""
    nested = (*_FUNCTIONS, ast.Lambda, ast.ClassDef)
    out, stack = [], [node for node in function.body if not isinstance(node, nested)]
    while stack:
        node = stack.pop()
        out.append(node)
        stack += [c for c in ast.iter_child_nodes(node) if not isinstance(c, nested)]
    return out


def _splits_lines(nodes: list[ast.AST]) -> bool:
    """Whether the code splits text into lines: ``.split("\\n")`` (or ``b"\\n"``), ``.splitlines()``,
    ``.readline()``, ``.readlines()``, or a loop over a file it opened (``for line in f``,
    ``enumerate(f)``, ``f`` bound by ``with ... as f`` or by a call of something named ``*open*``)."""
    files: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.withitem) and node.optional_vars is not None:
            files |= {n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name)}
        opened = isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        if opened and "open" in (_called(node.value)[1] or ""):
            files |= {n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    for node in nodes:
        if isinstance(node, ast.Call):
            name = _called(node)[1]
            if name in ("splitlines", "readline", "readlines") or (
                    name == "split" and node.args and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value in ("\n", b"\n")):
                return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            source = node.iter
            if isinstance(source, ast.Call) and _called(source)[1] == "enumerate" and source.args:
                source = source.args[0]
            if isinstance(source, ast.Name) and source.id in files:
                return True
    return False


def _json_line_written(node: ast.AST) -> bool:
    """``json.dumps(x) + "\\n"`` (no ``indent``: one line, not a document)."""
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.right, ast.Constant)
            and node.right.value == "\n" and isinstance(node.left, ast.Call) and _called(node.left) == ("json", "dumps")
            and not any(k.arg == "indent" for k in node.left.keywords))


def test_json_lines_are_read_and_written_by_fade_jsonl_alone():
    # A JSON-lines file is read by fade.jsonl (its bytes, its lines, its torn last line, the error
    # naming path:line) and written by it. Outside it, no function splits text into lines and parses
    # JSON (directly, or through a function that parses one value: a parser of lines by another
    # name), no code writes json.dumps(...) + "\n", and nothing imports gzip. The pyarrow path of
    # fade.analyze.columns parses the bytes fade.jsonl read, split where it splits them.
    assert not _json_lines_elsewhere(SRC), "\n".join(_json_lines_elsewhere(SRC))
    unused = [key for key in JSON_LINES_ELSEWHERE if not (SRC / key[0]).is_file()]
    assert not unused, f"allowed modules that are gone: {unused}"


def _json_lines_elsewhere(src: Path) -> list[str]:
    """What reads or writes JSON lines outside ``src``/jsonl.py (see the test above)."""
    trees = {path: ast.parse(path.read_text()) for path in sorted(src.rglob("*.py")) if path != src / "jsonl.py"}
    # a function that does one of the two (parses a value, or splits text into lines) lends its name
    # to its callers: a reader split in two is still one reader (dunder names lend nothing)
    parses, splits = set(), set()
    for path, tree in trees.items():
        for fn in ast.walk(tree):
            if not isinstance(fn, _FUNCTIONS) or fn.name.startswith("__"):
                continue
            if {(path.relative_to(src).as_posix(), n) for n in (fn.name, "*")} & JSON_LINES_ELSEWHERE.keys():
                continue
            nodes = _own_nodes(fn)
            parses |= {fn.name} if any(_parses_json(n) for n in nodes) else set()
            splits |= {fn.name} if _splits_lines(nodes) else set()
    parsers, splitters = parses - splits, splits - parses
    found = []
    for path, tree in trees.items():
        where = path.relative_to(src).as_posix()
        for scope in [tree, *(fn for fn in ast.walk(tree) if isinstance(fn, _FUNCTIONS))]:
            name = getattr(scope, "name", "<module>")
            if (where, name) in JSON_LINES_ELSEWHERE or (where, "*") in JSON_LINES_ELSEWHERE:
                continue
            nodes = _own_nodes(scope)
            parses = [n.lineno for n in nodes if _parses_json(n) or (
                isinstance(n, ast.Call) and _called(n)[1] in parsers)]
            splits = _splits_lines(nodes) or any(isinstance(n, ast.Call) and _called(n)[1] in splitters for n in nodes)
            if parses and splits:
                found.append(f"{where}:{parses[0]} ({name}) splits lines and parses JSON: use fade.jsonl")
            found += [f"{where}:{n.lineno} ({name}) writes a JSON line: use fade.jsonl"
                      for n in nodes if _json_line_written(n)]
        found += [f"{where}:{n.lineno} imports gzip: fade.jsonl reads and writes .gz files"
                  for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and "gzip" in (
                      [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""])]
    return found


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
