"""A claim is one module: what it reads, what it measures, its verdict, its words and its figures
live in ``fade/experiments/claims/<name>.py`` as its ``CLAIM``, registered by the module's name, and
the report writes every claim the same way, knowing none of them.

These tests read the source where the rule is about where things live (no claim key, no result
type and no claim module named by the report's writers; no role in the design's records that only
one claim reads), and run the report on a claim it has never seen.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
from pathlib import Path

import pytest

from fade.experiments import claims
from fade.experiments.claims import CHECK_MODULES, CHECKS, CLAIM_MODULES, CLAIMS
from fade.experiments.claims.base import (
    Claim,
    Drawing,
    Figures,
    Finding,
    Reads,
    Table,
    VerdictLine,
    Words,
    every_task,
    judge,
    line,
    no_arms,
    no_drawings,
    section,
)
from fade.experiments.design import TaskPlan
from fade.experiments.runs import summarise
from fade.experiments.stats import SUPPORTED, Stat, compare

EXPERIMENTS = Path(claims.__file__).resolve().parent.parent
CLAIMS_DIR = EXPERIMENTS / "claims"
#: The modules that write the report: none of them may know a claim.
WRITERS = ("results_report.py", "report_numbers.py")
#: The modules of the claims package that are not claims.
NOT_CLAIMS = ("__init__", "base")


def _claim_modules() -> dict[str, object]:
    return {name: importlib.import_module(f"{claims.__name__}.{name}") for name in (*CHECK_MODULES, *CLAIM_MODULES)}


def test_every_module_of_the_package_is_one_claim_registered_by_its_name():
    files = sorted(p.stem for p in CLAIMS_DIR.glob("*.py") if p.stem not in NOT_CLAIMS)
    assert sorted((*CHECK_MODULES, *CLAIM_MODULES)) == files
    assert len(set(CHECK_MODULES) | set(CLAIM_MODULES)) == len(CHECK_MODULES) + len(CLAIM_MODULES)
    modules = _claim_modules()
    assert CHECKS == tuple(modules[name].CLAIM for name in CHECK_MODULES)
    assert CLAIMS == tuple(modules[name].CLAIM for name in CLAIM_MODULES)
    keys = [claim.key for claim in (*CHECKS, *CLAIMS)]
    assert len(set(keys)) == len(keys), keys
    # Registered by name, not by the side effect of an import: the package imports no claim module.
    init = ast.parse((CLAIMS_DIR / "__init__.py").read_text())
    imported = {alias.name for node in ast.walk(init) if isinstance(node, ast.ImportFrom) and node.level == 1
                for alias in node.names} | {node.module for node in ast.walk(init)
                                            if isinstance(node, ast.ImportFrom) and node.level == 1}
    assert not imported & set(files), imported & set(files)


@pytest.mark.parametrize("name", [*CHECK_MODULES, *CLAIM_MODULES])
def test_a_claims_pieces_live_in_its_module(name):
    module = importlib.import_module(f"{claims.__name__}.{name}")
    claim = module.CLAIM
    assert isinstance(claim, Claim) and isinstance(claim.reads, Reads) and isinstance(claim.figures, Figures)
    assert module.__doc__ and claim.key
    own = module.__name__
    pieces = {"measure": claim.measure, "verdict": claim.verdict, "words": claim.words}
    for piece, fn in pieces.items():
        assert callable(fn) and fn.__module__ == own, f"{name}: CLAIM.{piece} is {fn.__module__}.{fn.__qualname__}"
    defaults = {every_task, no_arms, no_drawings}
    hooks = {"reads.tasks": claim.reads.tasks, "figures.arms": claim.figures.arms,
             "figures.of_result": claim.figures.of_result, "figures.of_runs": claim.figures.of_runs}
    for piece, fn in hooks.items():
        assert fn in defaults or fn.__module__ == own, f"{name}: CLAIM.{piece} is {fn.__module__}.{fn.__qualname__}"
    assert bool(claim.figures.group) == (claim.figures.arms is not no_arms), name


def _sources(*names: str) -> dict[str, ast.Module]:
    return {name: ast.parse((EXPERIMENTS / name).read_text()) for name in names}


def _result_types() -> set[str]:
    """Every class a claim module defines: its result and the records inside it."""
    found = set()
    for module in _claim_modules().values():
        found |= {n for n, obj in vars(module).items() if inspect.isclass(obj) and obj.__module__ == module.__name__}
    return found


def test_the_report_writers_name_no_claim():
    keys = {claim.key for claim in (*CHECKS, *CLAIMS)}
    types = _result_types()
    claim_modules = {f"{claims.__name__}.{name}" for name in (*CHECK_MODULES, *CLAIM_MODULES)}
    wrong = []
    for name, tree in _sources(*WRITERS).items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in keys:
                wrong.append(f"{name}:{node.lineno} names the claim {node.value!r}")
            if isinstance(node, ast.Name) and node.id in types:
                wrong.append(f"{name}:{node.lineno} names the result type {node.id}")
            if isinstance(node, ast.Compare) and any(isinstance(x, ast.Attribute) and x.attr == "key"
                                                     for x in (node.left, *node.comparators)):
                wrong.append(f"{name}:{node.lineno} compares a section's key")
            if isinstance(node, ast.ImportFrom):
                target = (node.module or "") if not node.level else "fade.experiments." + (node.module or "")
                modules = {target} | {f"{target}.{alias.name}" for alias in node.names}
                if modules & claim_modules:
                    wrong.append(f"{name}:{node.lineno} imports {sorted(modules & claim_modules)}")
    assert not wrong, "\n".join(wrong)


def test_write_report_is_a_loop_over_the_claims():
    """write_report, and every function of the report it calls, has no claim-specific branch: the
    sections word themselves (``claim_lines``, ``check_lines``) and the claims draw their own figures."""
    from fade.experiments import report_numbers, results_report

    source = inspect.getsource(results_report.write_report)
    assert "for section in sections:\n        lines += report_numbers.claim_lines(section)" in source
    assert "isinstance" not in source and ".key" not in source
    assert "claim.figures.of_result" in inspect.getsource(results_report._figures)
    assert "claim.figures.group" in inspect.getsource(results_report._role_groups)
    assert "isinstance" not in inspect.getsource(report_numbers.verdict_count)


def _names(source: str) -> set[str]:
    """Every name a module reads: bare, or as an attribute (``design.BALANCED``)."""
    tree = ast.parse(source)
    return ({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)})


def test_a_role_only_one_claim_reads_lives_in_that_claim():
    """The design's records hold the roles several modules read (the balanced baselines, the static
    baselines, FADE); a role of one claim is a constant of its module."""
    design = (EXPERIMENTS / "design.py").read_text()
    constants = [t.id for node in ast.parse(design).body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                 if isinstance(t, ast.Name) and t.id.isupper()]
    readers = {p: p.read_text() for p in EXPERIMENTS.rglob("*.py")
               if "presets" not in p.parts and p.name != "design.py"}
    lonely = []
    for name in constants:
        users = [p for p, text in readers.items() if name in _names(text)]
        if len(users) == 1 and users[0].parent == CLAIMS_DIR:
            lonely.append(f"{name}: read by {users[0].name} alone")
    assert not lonely, "\n".join(lonely)


# -- a claim the report has never seen --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Higher:
    task: str
    psr: Stat
    grpo: Stat


def _measure(task, context):
    runs = context.runs(task)
    if not (runs.has("psr") and runs.has("grpo")):
        return None
    return _Higher(task, runs.stat("psr", "entropy_first"), runs.stat("grpo", "entropy_first"))


def _verdict(r: _Higher) -> list[VerdictLine]:
    return [line("psr starts with more entropy than grpo",
                 judge([("entropy", compare(r.psr, r.grpo, greater=True))]))]


def _words(r: _Higher) -> Words:
    table = Table(["arm", "first entropy"], [["psr", r.psr.text()], ["grpo", r.grpo.text()]])
    return Words("A claim the report never saw", [table], notes=["Its note."])


def _drawing(r: _Higher, view) -> list[Drawing]:
    return [Drawing(f"{view.task}-unseen.png", "its own figure", lambda p: Path(p).write_bytes(b"\x89PNG"))]


UNSEEN = Claim("unseen", reads=Reads(), measure=_measure, verdict=_verdict, words=_words,
               figures=Figures(of_result=_drawing))


def _write_run(out: Path, run, first_entropy: float) -> None:
    directory = run.directory(out)
    directory.mkdir(parents=True)
    with open(directory / "metrics.jsonl", "w") as f:
        for step in range(1, run.steps + 1):
            f.write(json.dumps({
                "step": step, "entropy": first_entropy - 0.001 * step, "rank1_share": 0.5, "positive_mass": 0.2,
                "negative_mass": 0.2, "sign_balance": 0.5, "difficulty": 0.5, "effective_sample_fraction": 0.5,
                "step_seconds": 0.1,
            }) + "\n")
    with open(directory / "eval.jsonl", "w") as f:
        for step in (0, run.steps):
            f.write(json.dumps({"step": step, "pass@1": 0.2 + step / 1000, "pass@2": 0.3 + step / 1000}) + "\n")


def test_the_report_writes_a_claim_it_has_never_seen(tmp_path):
    """A new claim is its module: the report writes its section, its verdict at a glance, its figure
    and its numbers in results.json, with nothing added to the report."""
    from fade.experiments.design import Preset
    from fade.experiments.results_report import write_report

    plan = TaskPlan(task="arithmetic", estimators=("grpo", "psr"), steps=30, eval_every=30, eval_prompts=4,
                    eval_samples=2)
    preset = Preset(name="unseen", description="One claim no report knows.", seeds=(0, 1, 2), plans=(plan,))
    summaries = []
    for run in preset.runs():
        _write_run(tmp_path / "sweep", run, 2.0 if run.name == "psr" else 1.0)
        summaries.append(summarise(run, tmp_path / "sweep"))
    context = claims.Context(summaries, preset)
    sections = [section(Finding(UNSEEN, task, r)) for task in UNSEEN.reads.tasks(context)
                if (r := UNSEEN.measure(task, context)) is not None]
    assert [(s.key, s.task) for s in sections] == [("unseen", "arithmetic")]
    out = tmp_path / "sweep"
    write_report(out, preset=preset, runs=preset.runs(), summaries=summaries, sections=sections, failures={},
                 command="fade sweep", workers=1)
    text = (out / "README.md").read_text()
    assert "## A claim the report never saw — arithmetic" in text
    assert f"- **{SUPPORTED}** — psr starts with more entropy than grpo." in text
    assert "| arm | first entropy |" in text and "\n| psr | " in text and "Its note." in text
    assert "![its own figure](arithmetic-unseen.png)" in text and (out / "arithmetic-unseen.png").is_file()
    results = json.loads((out / "results.json").read_text())
    (entry,) = results["claims"]
    assert entry["key"] == "unseen" and entry["verdicts"][0]["outcome"] == SUPPORTED
    assert [c["key"] for c in results["design_checks"]] == ["regime", "collapse"]


def test_the_architecture_map_lists_every_claim_module():
    text = (EXPERIMENTS.parents[2] / "docs" / "architecture.md").read_text()
    missing = [name for name in (*CHECK_MODULES, *CLAIM_MODULES) if f"{name}.py" not in text]
    assert not missing, f"docs/architecture.md's map of experiments/claims/ lacks {missing}"
    assert "sections/" not in text
