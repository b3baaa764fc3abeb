"""The ``fade`` command line: atlas files, decompose numbers, and one-line errors for user mistakes."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pytest

import fade
from fade.cli import DEFAULT_ATLAS_ESTIMATORS, main
from fade.plots import atlas_pixel_size


def _write_jsonl(path: Path, rows: list, extra_lines: tuple[str, ...] = ()) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "".join(extra_lines))
    return path


def _assert_user_error(capsys, argv: list[str], *needles: str) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fade: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- parameter syntax ----------------------------------------------------------------------------


def test_atlas_pixel_size_formula():
    assert atlas_pixel_size(1) == (1200, 700)
    assert atlas_pixel_size(4) == (1200, 700)
    assert atlas_pixel_size(5) == (1200, 950)
    assert atlas_pixel_size(12) == (1200, 1200)


def test_atlas_writes_png_json_and_table(tmp_path, capsys):
    out = tmp_path / "nested" / "dir" / "atlas.png"
    specs = ["grpo", "maxrl", "psr", "power:alpha=3", "asym_grpo:delta=0.5"]
    code = main(["atlas", "--estimators", ",".join(specs), "--group-size", "8", "--out", str(out)])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr

    image = matplotlib.image.imread(out)
    width, height = atlas_pixel_size(len(specs))
    assert image.shape[:2] == (height, width)

    doc = json.loads((tmp_path / "nested" / "dir" / "atlas.json").read_text())
    assert doc["group_size"] == 8
    labels = [e["label"] for e in doc["estimators"]]
    assert labels == ["grpo", "maxrl", "psr", "power(alpha=3)", "asym_grpo(delta=0.5)"]
    by_label = {e["label"]: e for e in doc["estimators"]}
    power = by_label["power(alpha=3)"]
    assert power["name"] == "power" and power["params"]["alpha"] == 3
    assert len(power["rows"]) == 9
    prof = fade.mass_profile("power", 8, alpha=3)
    assert power["sign_balance"] == pytest.approx(prof.sign_balance)
    assert power["rows"][3]["positive"] == pytest.approx(float(prof.positive[3]))
    # psr puts all its mass on successes: sign balance 1, peak at p = 1.
    assert by_label["psr"]["sign_balance"] == pytest.approx(1.0)
    assert by_label["psr"]["peak_p"] == pytest.approx(1.0)
    # asym_grpo(delta=0.5): m_F = 2 m_S, so sign balance 1/3; dr_grpo-shaped, so peak at 0.5.
    asym = by_label["asym_grpo(delta=0.5)"]
    assert asym["sign_balance"] == pytest.approx(1 / 3)
    assert asym["peak_p"] == pytest.approx(0.5)
    assert asym["mass_at_half"] == pytest.approx(0.25 + 0.5)

    for header in ("estimator", "sign_balance", "difficulty", "effective_sample_fraction", "peak p", "mass at p=0.5"):
        assert header in stdout
    for label in labels:
        assert label in stdout


def test_atlas_default_estimators(tmp_path, capsys):
    out = tmp_path / "atlas.png"
    assert main(["atlas", "--out", str(out)]) == 0
    capsys.readouterr()
    doc = json.loads(out.with_suffix(".json").read_text())
    assert doc["group_size"] == 16
    assert len(doc["estimators"]) == len(DEFAULT_ATLAS_ESTIMATORS)
    assert matplotlib.image.imread(out).shape[:2] == atlas_pixel_size(len(DEFAULT_ATLAS_ESTIMATORS))[::-1]


def test_atlas_user_errors(tmp_path, capsys):
    out = str(tmp_path / "a.png")
    _assert_user_error(capsys, ["atlas", "--estimators", "grpo,nope", "--out", out], "nope", "available")
    _assert_user_error(capsys, ["atlas", "--estimators", "power:gamma=2", "--out", out], "gamma")
    _assert_user_error(capsys, ["atlas", "--estimators", "power:alpha=-1", "--out", out], "alpha")
    _assert_user_error(capsys, ["atlas", "--estimators", "passk:k=32", "--group-size", "8", "--out", out], "passk")
    _assert_user_error(capsys, ["atlas", "--estimators", "remax", "--out", out], "--baseline-reward")
    _assert_user_error(capsys, ["atlas", "--group-size", "1", "--out", out], "group_size")
    _assert_user_error(capsys, ["atlas", "--group-size", "many", "--out", out], "--group-size")
    assert not (tmp_path / "a.png").exists()


def test_help_on_every_subcommand(capsys):
    for argv in (["--help"], ["atlas", "--help"], ["decompose", "--help"]):
        assert main(argv) == 0
        assert "usage:" in capsys.readouterr().out
    _assert_user_error(capsys, [], "choose a command")
    _assert_user_error(capsys, ["nonsense"], "nonsense")


# -- fade decompose ------------------------------------------------------------------------------

# Two prompts, interleaved, one with a string id and one with an int id.
#   "a": rewards [1, 0],       advantages [1.0, -0.5]       group success rate 1/2
#    7 : rewards [1, 0, 0, 0], advantages [2.0, -0.5, -0.5, 0.0]   rate 1/4
HAND_ROWS = [
    {"prompt_id": "a", "reward": 1, "advantage": 1.0},
    {"prompt_id": 7, "reward": 1, "advantage": 2.0},
    {"prompt_id": 7, "reward": 0, "advantage": -0.5},
    {"prompt_id": "a", "reward": 0, "advantage": -0.5},
    {"prompt_id": 7, "reward": 0.0, "advantage": -0.5},
    {"prompt_id": 7, "reward": 0, "advantage": 0.0},
]


def test_decompose_hand_computed(tmp_path, capsys):
    path = _write_jsonl(tmp_path / "r.jsonl", HAND_ROWS[:3], ("\n", "   \n"))
    with path.open("a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in HAND_ROWS[3:]))
    assert main(["decompose", str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    # N = 6; positive = (1 + 2) / 6; negative = (0.5 + 0.5 + 0.5) / 6.
    assert rep["positive_mass"] == pytest.approx(0.5)
    assert rep["negative_mass"] == pytest.approx(0.25)
    assert rep["total_mass"] == pytest.approx(0.75)
    assert rep["sign_balance"] == pytest.approx(2 / 3)
    # sum |A| = 4.5: prompt "a" carries 1.5 at rate 1/2, prompt 7 carries 3.0 at rate 1/4.
    assert rep["difficulty"] == pytest.approx((1.5 * 0.5 + 3.0 * 0.25) / 4.5)
    # (sum |A|)^2 / (N sum A^2) = 4.5^2 / (6 * 5.75).
    assert rep["effective_sample_fraction"] == pytest.approx(4.5**2 / (6 * 5.75))
    assert rep["num_rollouts"] == 6 and rep["num_groups"] == 2


def test_decompose_table(tmp_path, capsys):
    path = _write_jsonl(tmp_path / "r.jsonl", HAND_ROWS)
    assert main(["decompose", str(path)]) == 0
    out = capsys.readouterr().out
    for key in ("positive_mass", "negative_mass", "sign_balance", "difficulty", "effective_sample_fraction"):
        assert key in out
    assert "0.6667" in out  # sign balance


def test_decompose_with_estimator_matches_core(tmp_path, capsys):
    rewards = [1, 0, 0, 1, 1, 1, 0, 0, 0, 1]
    ids = [3, 3, 3, 5, 5, 5, 5, 9, 9, 9]
    rows = [{"prompt_id": i, "reward": r} for i, r in zip(ids, rewards)]
    path = _write_jsonl(tmp_path / "r.jsonl", rows)
    assert main(["decompose", str(path), "--estimator", "grpo", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = fade.decompose(fade.advantages("grpo", rewards, ids), rewards, ids).to_dict()
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value), key

    assert main(["decompose", str(path), "--estimator", "power", "--estimator-args", "alpha=3", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = fade.decompose(fade.advantages("power", rewards, ids, alpha=3), rewards, ids)
    assert got["difficulty"] == pytest.approx(want.difficulty)


def test_decompose_lengths_for_opo(tmp_path, capsys):
    rows = [
        {"prompt_id": 0, "reward": 1, "length": 10},
        {"prompt_id": 0, "reward": 0, "length": 30},
    ]
    path = _write_jsonl(tmp_path / "r.jsonl", rows)
    assert main(["decompose", str(path), "--estimator", "opo", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    # baseline = (10 * 1 + 30 * 0) / 40 = 0.25: advantages 0.75 and -0.25.
    assert got["positive_mass"] == pytest.approx(0.75 / 2)
    assert got["negative_mass"] == pytest.approx(0.25 / 2)

    _write_jsonl(path, [rows[0], {"prompt_id": 0, "reward": 0}])
    _assert_user_error(capsys, ["decompose", str(path), "--estimator", "opo"], "r.jsonl:2", "length")


def test_decompose_all_zero_advantages_give_null(tmp_path, capsys):
    path = _write_jsonl(tmp_path / "r.jsonl", [{"prompt_id": 0, "reward": 1}, {"prompt_id": 0, "reward": 1}])
    assert main(["decompose", str(path), "--estimator", "grpo", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["sign_balance"] is None and got["effective_sample_fraction"] == 0.0


def test_decompose_user_errors(tmp_path, capsys):
    missing = tmp_path / "missing.jsonl"
    _assert_user_error(capsys, ["decompose", str(missing)], "missing.jsonl")

    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"prompt_id": 0, "reward": 1, "advantage": 0.5}\n\n{"prompt_id": 0, "reward": \n')
    _assert_user_error(capsys, ["decompose", str(bad_json)], "bad.jsonl:3", "JSON")

    no_reward = _write_jsonl(
        tmp_path / "noreward.jsonl", [{"prompt_id": 0, "reward": 1}, {"prompt_id": 0, "advantage": 1}]
    )
    _assert_user_error(capsys, ["decompose", str(no_reward), "--estimator", "grpo"], "noreward.jsonl:2", "reward")

    no_adv = _write_jsonl(
        tmp_path / "noadv.jsonl", [{"prompt_id": 0, "reward": 1, "advantage": 1}, {"prompt_id": 0, "reward": 0}]
    )
    _assert_user_error(capsys, ["decompose", str(no_adv)], "noadv.jsonl:2", "advantage")

    good = _write_jsonl(tmp_path / "good.jsonl", [{"prompt_id": 0, "reward": 1}, {"prompt_id": 0, "reward": 0}])
    _assert_user_error(capsys, ["decompose", str(good), "--estimator", "nope"], "nope", "available")
    _assert_user_error(capsys, ["decompose", str(good), "--estimator", "grpo", "--estimator-args", "eps"], "eps")
    _assert_user_error(capsys, ["decompose", str(good), "--estimator", "grpo", "--estimator-args", "std=wide"], "std")

    wrong_type = _write_jsonl(tmp_path / "t.jsonl", [{"prompt_id": 0, "reward": "yes"}])
    _assert_user_error(capsys, ["decompose", str(wrong_type), "--estimator", "grpo"], "t.jsonl:1", "reward")
    not_object = tmp_path / "list.jsonl"
    not_object.write_text("[1, 2]\n")
    _assert_user_error(capsys, ["decompose", str(not_object)], "list.jsonl:1", "object")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    _assert_user_error(capsys, ["decompose", str(empty)], "no rollouts")
    _assert_user_error(capsys, ["decompose"], "ROLLOUTS.jsonl")


# -- fade train (without training) ----------------------------------------------------------------


def _train_help(capsys) -> dict[str, str]:
    """``fade train --help``'s options, each flag with its whole (re-joined) help text."""
    assert main(["train", "--help"]) == 0
    text = capsys.readouterr().out
    options = text.split("options:\n", 1)[1].split("\n\n", 1)[0]
    entries: dict[str, str] = {}
    flag = None
    for line in options.splitlines():
        if line.startswith("  -"):
            flag = line.split()[0].rstrip(",")
            entries[flag] = line
        elif flag is not None:
            entries[flag] += " " + line.strip()
    return entries


def test_train_help_shows_every_default(capsys):
    entries = _train_help(capsys)
    assert len(entries) > 25
    for flag, entry in entries.items():
        if flag == "-h":
            continue
        assert "(default:" in entry or "(required)" in entry, entry
    assert "(default: 0.0001)" in entries["--lr"] and "(default: 0.99)" in entries["--adam-beta2"]


@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--estimator", "nonsense"], "nonsense"),
        (["--estimator", "power", "--estimator-args", "alpha=-1"], "alpha"),
        (["--estimator", "grpo", "--estimator-args", "novel=1"], "novel"),
    ],
)
def test_train_bad_estimator_fails_before_the_folder_exists(flags, needle, tmp_path, capsys):
    out = tmp_path / "X"
    _assert_user_error(capsys, ["train", *flags, "--out", str(out), "--no-progress"], needle)
    assert not out.exists()


# -- the real process ----------------------------------------------------------------------------


def test_python_dash_m_fade_entry_point(tmp_path):
    path = _write_jsonl(tmp_path / "r.jsonl", HAND_ROWS)
    ok = subprocess.run(
        [sys.executable, "-m", "fade", "decompose", str(path), "--json"], capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["sign_balance"] == pytest.approx(2 / 3)

    bad = subprocess.run(
        [sys.executable, "-m", "fade", "decompose", str(tmp_path / "nope.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("fade: error: ")
    assert "Traceback" not in bad.stderr and "nope.jsonl" in bad.stderr
    assert math.isfinite(json.loads(ok.stdout)["difficulty"])


def test_sweep_help_names_every_preset_and_every_planned_task(capsys):
    """The help of `fade sweep` is where a user learns which presets and tasks exist: it must not fall
    behind the registry."""
    from fade.experiments.presets import PRESETS

    assert main(["sweep", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, preset in PRESETS.items():
        assert name in text, name
        for plan in preset.plans:
            assert plan.task in text, plan.task


# -- extras are checked before any work ------------------------------------------------------------


def _write_samples(tmp_path: Path) -> Path:
    return _write_jsonl(tmp_path / "s.jsonl", [{"problem_id": "p", "completion": "\\boxed{2}", "answer": "2"}])


@pytest.mark.parametrize(
    "argv, extra, module",
    [
        (["train", "--out", "{out}", "--no-progress"], "testbed", "transformers"),
        (["train", "--out", "{out}", "--no-progress"], "testbed", "tokenizers"),
        (["pretrain", "--task", "arithmetic", "--out", "{out}", "--no-progress"], "testbed", "transformers"),
        (["calibrate", "--task", "countdown", "--out", "{out}", "--no-progress"], "testbed", "safetensors"),
        (["sweep", "--preset", "quick", "--out", "{out}", "--no-progress"], "testbed", "transformers"),
        (["demo", "--out", "{out}", "--no-progress"], "testbed", "transformers"),
        (["eval", "{samples}", "--verifier", "math", "--out", "{out}", "--no-progress"], "math", "math_verify"),
        (
            ["train", "--data", "{samples}", "--verifier", "math", "--out", "{out}", "--no-progress"],
            "math",
            "math_verify",
        ),
    ],
)
def test_a_missing_extra_is_one_line_naming_it_and_its_install_line(argv, extra, module, tmp_path, capsys, monkeypatch):
    import sys

    out = tmp_path / "out"
    samples = _write_samples(tmp_path)
    monkeypatch.setitem(sys.modules, module, None)  # what an environment without the package looks like to find_spec
    argv = [a.format(out=out, samples=samples) for a in argv]
    line = _assert_user_error(capsys, argv, f"needs the '{extra}' extra", module, f"[{extra}]")
    assert line.startswith(f"fade: error: fade {argv[0]}")
    assert "pip install" in line
    assert not out.exists()


def test_the_install_line_targets_the_installed_fade_or_the_clone(monkeypatch):
    import importlib.metadata

    from fade.cli import install_line

    def absent(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: object())
    assert install_line("math") == "pip install 'fade-rl[math]'"
    monkeypatch.setattr(importlib.metadata, "distribution", absent)
    assert install_line("math") == "pip install -e '.[math]' (from the fade repository's root)"


def test_the_code_verifier_needs_no_math_extra(tmp_path, capsys, monkeypatch):
    import sys

    from fade.cli import require_extras

    monkeypatch.setitem(sys.modules, "math_verify", None)
    require_extras("fade eval --verifier code", ())
    with pytest.raises(ValueError, match="'math' extra"):
        require_extras("fade eval --verifier math", ("math",))


# -- settings that cannot train --------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--group-size", "1"], "--group-size 1 gives every rollout of fade an advantage of 0"),
        (["--estimator", "grpo", "--group-size", "1"], "--group-size 1 gives every rollout of grpo"),
        (
            ["--estimator", "passk:k=4", "--group-size", "4"],
            "passk:k=4 gives every rollout an advantage of 0 at --group-size 4",
        ),
        (["--estimator", "pkpo:k=8", "--group-size", "8"], "pkpo:k=8 gives every rollout an advantage of 0"),
        (["--estimator", "passk:k=8", "--group-size", "4"], "at least k rollouts"),
        (["--verifier", "exact"], "--verifier exact scores --data files only"),
    ],
)
def test_train_refuses_a_setting_that_cannot_train_before_any_work(flags, needle, tmp_path, capsys):
    out = tmp_path / "X"
    _assert_user_error(capsys, ["train", *flags, "--out", str(out), "--no-progress"], needle)
    assert not out.exists()


def test_every_verifier_the_help_lists_is_accepted_and_no_other(capsys):
    from fade.testbed.datasets import VERIFIERS

    assert main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"how --data answers are checked: {', '.join(VERIFIERS)} " in text
    _assert_user_error(
        capsys, ["train", "--data", "x.jsonl", "--verifier", "nonsense", "--out", "o"], "nonsense", "exact"
    )


@pytest.mark.parametrize("command", ["atlas", "decompose", "pretrain", "calibrate", "train", "eval", "sweep"])
def test_help_of_every_command_shows_each_default(command, capsys):
    assert main([command, "--help"]) == 0
    entries: dict[str, str] = {}
    flag = None
    for line in capsys.readouterr().out.split("options:")[1].splitlines():
        stripped = line.strip()
        if line.startswith("  -"):
            flag = stripped.split()[0].rstrip(",")
            entries[flag] = stripped
        elif flag is not None and stripped:
            entries[flag] += " " + stripped
    for flag, entry in entries.items():
        if flag != "-h":
            assert "(default" in entry or "(required)" in entry, entry
