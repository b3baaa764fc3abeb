"""Command-line options from config dataclasses (fade.options): every field is a flag with its default
in the help, the parsed flags read back into the config, and a new field is a flag of its command with
no edit to the command."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest

from fade import options
from fade.cli import build_parser, main
from fade.cli.parsing import Parser
from fade.options import option


def _pairs(text: str) -> dict[str, int]:
    return dict(item.split("=") for item in text.split(",") if item)


@dataclasses.dataclass(kw_only=True)
class Sample:
    name: str = option(help="a required string", metavar="NAME")
    count: int = option(3, "how many", metavar="N")
    rate: float = option(0.25, "a fraction, 20% of it")
    mode: str = option("fast", "how", choices=("fast", "slow"))
    limit: int | None = option(None, "an optional cap (default: none)")
    label: str | None = option(None, "a label", flag="--tag")
    verbose: bool = option(False, "say more")
    progress: bool = option(True, "no progress bar")
    pairs: dict[str, int] = option(default_factory=dict, help="K=V pairs (default: none)", parse=_pairs)
    fixed: int = option(7, cli=False)


def _parser(config: type = Sample, **after: Any) -> argparse.ArgumentParser:
    parser = Parser(prog="sample")
    options.add_options(parser, config, after=after)
    return parser


def _help(parser: argparse.ArgumentParser) -> str:
    return " ".join(parser.format_help().split())


def test_every_field_is_a_flag_with_its_default_in_the_help():
    text = _help(_parser())
    for entry in (
        "--name NAME a required string (required)",
        "--count N how many (default: 3)",
        "--rate RATE a fraction, 20% of it (default: 0.25)",
        "--mode {fast,slow} how (default: fast)",
        "--limit LIMIT an optional cap (default: none)",
        "--tag LABEL a label (default: None)",
        "--verbose say more (default: off)",
        "--no-progress no progress bar (default: off)",
        "--pairs PAIRS K=V pairs (default: none)",
    ):
        assert entry in text, entry
    assert "--fixed" not in text
    assert list(options.flags(Sample).values()) == [
        "--name", "--count", "--rate", "--mode", "--limit", "--tag", "--verbose", "--no-progress", "--pairs",
    ]


def test_the_parsed_flags_read_back_into_the_config():
    parser = _parser()
    assert options.from_args(Sample, parser.parse_args(["--name", "x"])) == Sample(name="x")
    args = parser.parse_args(["--name", "y", "--count", "5", "--rate", "0.5", "--mode", "slow", "--limit", "9",
                              "--tag", "t", "--verbose", "--no-progress", "--pairs", "a=1,b=2"])
    assert options.from_args(Sample, args) == Sample(
        name="y", count=5, rate=0.5, mode="slow", limit=9, label="t", verbose=True, progress=False,
        pairs={"a": "1", "b": "2"})
    assert options.from_args(Sample, args, count=8, pairs={}).count == 8
    assert options.from_args(Sample, args, pairs={}).pairs == {}


def test_flag_values_are_checked_by_their_field_type():
    parser = _parser()
    for argv, needle in ((["--count", "many"], "invalid int value: 'many'"), (["--mode", "medium"], "invalid choice"),
                         ([], "the following arguments are required: --name")):
        with pytest.raises(Exception, match=needle):
            parser.parse_args(argv)


def test_flags_that_are_not_settings_keep_their_place():
    parser = _parser(count=lambda p: p.add_argument("--resume", action="store_true", help="continue"))
    flags = [a.option_strings[0] for a in parser._actions if a.option_strings][1:4]
    assert flags == ["--name", "--count", "--resume"]
    with pytest.raises(TypeError, match="no field"):
        _parser(nothing=lambda p: None)


@pytest.mark.parametrize(
    "field, needle",
    [
        (("x", int, dataclasses.field(default=1)), "is not declared with fade.options.option"),
        (("x", int, option(1)), "has no help"),
        (("x", list, option(default_factory=list, help="items")), "give it parse="),
        (("x", dict, option(default_factory=dict, help="pairs", parse=dict)), "state the default in words"),
        (("x", bool, option(help="a switch")), "a switch needs one"),
    ],
)
def test_a_field_no_flag_can_carry_is_refused_by_name(field, needle):
    bad = dataclasses.make_dataclass("Bad", [field])
    with pytest.raises(TypeError, match=needle) as err:
        _parser(bad)
    assert "Bad.x" in str(err.value)


@pytest.mark.parametrize("command, config", [
    ("train", "fade.testbed.config.TrainConfig"),
    ("pretrain", "fade.testbed.config.PretrainConfig"),
    ("calibrate", "fade.experiments.calibrate.CalibrateConfig"),
])
def test_each_config_field_is_its_commands_flag_with_the_fields_default(command, config, capsys):
    import importlib

    module, name = config.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    flags = options.flags(cls)
    required = {f.name: "arithmetic" if f.name == "task" else "x" for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    args = build_parser().parse_args(
        [command, *(part for key, value in required.items() for part in (flags[key], value))]
    )
    assert options.from_args(cls, args) == cls(**required)  # every other field at its default
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for key, flag in flags.items():
        assert f" {flag} " in text, key


def test_a_new_train_config_field_is_a_fade_train_flag_with_no_cli_edit(monkeypatch, capsys):
    import fade.cli.train
    from fade.testbed.config import TrainConfig

    wider = dataclasses.make_dataclass(
        "TrainConfig", [("entropy_coef", float, option(0.001, "weight of the entropy bonus", metavar="C"))],
        bases=(TrainConfig,), kw_only=True)
    monkeypatch.setattr(fade.cli.train, "TrainConfig", wider)
    assert main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "[--no-progress] [--entropy-coef C]" in text
    assert "--entropy-coef C weight of the entropy bonus (default: 0.001)" in text
    args = build_parser().parse_args(["train", "--out", "x", "--entropy-coef", "0.01"])
    config = options.from_args(wider, args)
    assert config.entropy_coef == 0.01 and config.out == "x" and config.lr == TrainConfig.lr


def test_an_interrupt_is_one_line_saying_what_is_intact(monkeypatch, tmp_path, capsys):
    import fade.cli.decompose
    import fade.cli.train

    def stopped(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(fade.cli.train, "run", stopped)
    monkeypatch.setattr(fade.cli.decompose, "run", stopped)
    assert main(["train", "--out", str(tmp_path / "r"), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert err == f"fade: interrupted; the last checkpoint in {tmp_path / 'r'} is intact: rerun with --resume\n"
    with pytest.raises(KeyboardInterrupt):  # a command with nothing to resume does not say so
        main(["decompose", str(tmp_path / "rollouts.jsonl")])
