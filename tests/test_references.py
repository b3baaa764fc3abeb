"""Every reference in the repository's own text points inside it: no document named that the
repository does not hold, no Markdown link that leads nowhere, no absolute path of a machine.

A reader of the code, the docs or a shipped report must be able to open what they cite. The
files read are the ones git tracks (a source distribution, which has no git, skips these tests),
less binaries and the per-step run logs (numbers written by the trainer).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Binary files, and the run logs of shipped sweeps (one JSON record of numbers per step).
SKIPPED_SUFFIXES = (".png", ".safetensors", ".pt", ".whl", ".gz")
SKIPPED_NAMES = ("metrics.jsonl", "eval.jsonl")

#: A Markdown document named in text: a path-like word ending in .md.
DOCUMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b")
#: A Markdown link's target: [text](target).
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: The roots of absolute paths on the machines this project is developed and run on.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|root|home|Users|opt|mnt|scratch)/[\w.-]+")


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name]


def _texts() -> list[tuple[str, str]]:
    texts = []
    for name in _tracked():
        path = PurePosixPath(name)
        if path.suffix in SKIPPED_SUFFIXES or path.name in SKIPPED_NAMES:
            continue
        try:
            texts.append((name, (ROOT / name).read_text(encoding="utf-8")))
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # a binary file, or one deleted in the working tree but not yet in git
    return texts


@pytest.fixture(scope="module")
def texts() -> list[tuple[str, str]]:
    return _texts()


@pytest.fixture(scope="module")
def tracked() -> set[str]:
    return set(_tracked())


def test_every_document_named_is_in_the_repository(texts, tracked):
    names = {PurePosixPath(t).name for t in tracked}
    dangling = sorted({
        f"{name}: {match}"
        for name, text in texts
        for match in DOCUMENT.findall(text)
        if PurePosixPath(match).name not in names
    })
    assert not dangling, "documents named but not in the repository:\n" + "\n".join(dangling)


def test_every_markdown_link_leads_to_a_file_in_the_repository(texts, tracked):
    folders = {str(parent) for t in tracked for parent in PurePosixPath(t).parents}
    broken = []
    for name, text in texts:
        if not name.endswith(".md"):
            continue
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a web address or an anchor in the same page
            resolved = (PurePosixPath(name).parent / target.split("#")[0]).as_posix()
            parts: list[str] = []
            for part in resolved.split("/"):
                if part == "..":
                    if not parts:
                        break
                    parts.pop()
                elif part not in ("", "."):
                    parts.append(part)
            else:
                normal = "/".join(parts)
                if normal in tracked or normal in folders:
                    continue
            broken.append(f"{name}: ({target})")
    assert not broken, "Markdown links that lead outside the repository or nowhere:\n" + "\n".join(broken)


def test_no_absolute_path_of_a_machine(texts):
    found = sorted({f"{name}: {m}" for name, text in texts for m in MACHINE_PATH.findall(text)})
    assert not found, "absolute paths of a machine:\n" + "\n".join(found)


def test_the_checks_catch_what_they_are_for():
    """The patterns find a document outside the repository, a broken link and a machine path."""
    # Assembled from pieces, so that this file does not itself hold what it looks for.
    outside, elsewhere, machine = (
        "NOTES-outside" + ".md",
        "../../elsewhere/notes" + ".md",
        "/" + "/".join(("home", "someone")),
    )
    sample = f"see {outside} section 3, [x]({elsewhere}) and {machine}/fade"
    assert DOCUMENT.findall(sample) == [outside, elsewhere.removeprefix("../../")]
    assert LINK.findall(sample) == [elsewhere]
    assert MACHINE_PATH.findall(sample) == [machine]
