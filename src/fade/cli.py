"""The ``fade`` command line: look at advantage estimators and measure batches of rollouts.

Each subcommand is a pair of functions, ``_add_<name>(subparsers)`` that declares its flags and
``_run_<name>(args)`` that does the work, listed in :data:`COMMANDS`; adding one means adding a
pair. A subcommand names the extras it needs (``needs``, from its arguments), and :func:`main`
checks that they are installed before any work starts (:data:`EXTRAS`). User mistakes (unknown
estimator, bad parameter, unreadable file, malformed input, a missing extra) surface as one line
``fade: error: ...`` on stderr and exit status 2; the core signals them with ValueError, so
that is what :func:`main` catches, together with OSError and argument errors.

Estimator specs, used by every subcommand that takes an estimator, follow :mod:`fade.specs`:
``name`` or ``name:key=value,key2=value2``; values parse as bool (true/false), None
(none/null), int, float, or else stay strings.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .registry import spec as registry_spec
from .specs import SPEC_SYNTAX, format_value, merge_params, parse_params, parse_spec
from .testbed.datasets import VERIFIERS
from .testbed.tasks import TASKS

__all__ = ["EXTRAS", "install_line", "main", "require_extras"]

#: The testbed's built-in tasks (fade.testbed.tasks imports the standard library only).
TASK_NAMES = tuple(TASKS)
#: The verifiers ``--verifier`` accepts: the registry fade.testbed.datasets scores with (stdlib only to import).
VERIFIER_NAMES = tuple(VERIFIERS)

#: The extras of pyproject.toml that commands need, each with the modules whose presence says it
#: is installed (looked up without importing them, so the check costs nothing).
EXTRAS: dict[str, tuple[str, ...]] = {
    "testbed": ("transformers", "tokenizers", "safetensors"),
    "math": ("math_verify",),
}

DATA_FORMAT = (
    "one JSON object a line: 'prompt' and 'answer' (strings), optionally 'id', 'difficulty' (a positive integer "
    "bucket, 1 when absent) and 'split' ('train' or 'test'; without it 20%% of the prompts go to test, by a hash "
    "of the prompt); with --verifier code a line may hold its tests in place of 'answer' (docs/verifiers.md)"
)


def install_line(extra: str) -> str:
    """The pip command that adds ``extra`` to this fade: to the installed distribution when there
    is one (pip reads the extra from its metadata), else from the repository's root."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("fade-rl")
    except PackageNotFoundError:
        return f"pip install -e '.[{extra}]' (from the fade repository's root)"
    return f"pip install 'fade-rl[{extra}]'"


def require_extras(command: str, extras: Sequence[str]) -> None:
    """Raise ValueError naming the first of ``extras`` that is not installed, with its install line."""
    from importlib.util import find_spec

    for extra in extras:
        missing = [module for module in EXTRAS[extra] if find_spec(module) is None]
        if missing:
            raise ValueError(
                f"{command} needs the '{extra}' extra, which is not installed ({', '.join(missing)} missing): "
                f"{install_line(extra)}"
            )

DEFAULT_ATLAS_ESTIMATORS = (
    "dr_grpo",
    "grpo",
    "rloo",
    "reinforce",
    "nsr",
    "w_reinforce",
    "maxrl",
    "power:alpha=2",
    "asym_grpo:delta=0.5",
    "passk:k=4",
    "pkpo:k=4",
    "logmeanexp:beta=2",
    # FADE's two ends, from its defaults: early (entropy above target, low solve rate) hard
    # focus and balanced sign; late (entropy below target, solves common) medium focus and
    # failure-biased.
    f"fade:alpha={format_value(registry_spec('fade').defaults['alpha_max'])}:delta=1",
    f"fade:alpha=1:delta={format_value(registry_spec('fade').defaults['delta_min'])}",
)

SPEC_HELP = f"An estimator spec is {SPEC_SYNTAX}."


class UsageError(Exception):
    """A mistake in the command line itself (argparse's complaints)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become one ``fade: error:`` line instead of usage + exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


class _DefaultsHelpFormatter(argparse.HelpFormatter):
    """Shows every option's default: ``(default: X)`` unless its help already says it, ``off`` for a flag."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "(default" in text or action.default is argparse.SUPPRESS or action.required or not action.option_strings:
            return text
        if action.nargs == 0:
            return f"{text} (default: off)"
        return f"{text} (default: %(default)s)"


def estimator_label(name: str, params: dict[str, Any]) -> str:
    """``power(alpha=3)``: the name with the parameters the user gave."""
    if not params:
        return name
    return f"{name}({', '.join(f'{k}={format_value(v)}' for k, v in params.items())})"


def _estimator_flags(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """``--estimator SPEC`` and ``--estimator-args K=V,...`` as one (name, params)."""
    name, params = parse_spec(args.estimator)
    extra = parse_params(args.estimator_args, where=f"--estimator-args {args.estimator_args}")
    return name, merge_params(params, extra, where="--estimator and --estimator-args")


def _json_safe(x: Any) -> Any:
    """NaN and inf become null so the output is strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def _console():
    from rich.console import Console

    console = Console()
    # Piped or captured output gets a fixed width so that tables do not wrap their headers.
    return console if console.is_terminal else Console(width=140)


def _fmt(x: float) -> str:
    return "nan" if x != x else f"{x:.4f}"


# -- fade atlas --------------------------------------------------------------------------------


def _add_atlas(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "atlas",
        help="draw the gradient-mass profiles m_S(p), m_F(p) of estimators and their sign/difficulty plane",
        description=(
            "Draw, for each estimator, its positive mass m_S(p) and negative mass m_F(p) over the "
            "solve rates p = k/G of a group of G rollouts, and place every estimator on the "
            "sign/difficulty plane. Writes the PNG, a JSON file with the same name and suffix "
            ".json (each profile's rows and scalars), and prints a table."
        ),
        epilog=SPEC_HELP,
        formatter_class=_DefaultsHelpFormatter,
    )
    p.add_argument(
        "--estimators",
        default=",".join(DEFAULT_ATLAS_ESTIMATORS),
        metavar="SPEC[,SPEC...]",
        help="comma-separated estimator specs (default: %(default)s)",
    )
    p.add_argument("--group-size", type=int, default=16, metavar="G", help="rollouts per group, G >= 2 (default: 16)")
    p.add_argument("--out", default="atlas.png", metavar="FILE.png", help="PNG to write; its folder is created (default: atlas.png)")
    p.add_argument(
        "--baseline-reward",
        type=float,
        default=None,
        metavar="B",
        help="baseline reward every rollout gets, for estimators that need one (remax) (default: none)",
    )
    p.add_argument(
        "--length",
        type=float,
        default=1.0,
        metavar="L",
        help="response length every rollout gets, for length-aware estimators (opo, reinforce_pp) (default: 1)",
    )
    p.set_defaults(func=_run_atlas)


def _run_atlas(args: argparse.Namespace) -> int:
    import fade

    specs = [s for s in args.estimators.split(",") if s.strip()]
    if not specs:
        raise ValueError("--estimators is empty: expected at least one estimator spec")
    out = Path(args.out)
    if out.suffix.lower() != ".png":
        raise ValueError(f"--out must name a .png file, got {args.out!r}")

    entries = []
    for text in specs:
        name, params = parse_spec(text)
        s = registry_spec(name)
        if "baseline_rewards" in s.needs and args.baseline_reward is None:
            raise ValueError(f"estimator {name!r} needs --baseline-reward (the reward of its baseline response)")
        try:
            prof = fade.mass_profile(
                name, args.group_size, lengths=args.length, baseline_rewards=args.baseline_reward, **params
            )
        except ValueError as exc:
            raise ValueError(f"{text.strip()}: {exc}") from None
        entries.append((estimator_label(name, params), params, prof))

    from fade import plots

    summaries = [plots.profile_summary(prof) for _, _, prof in entries]
    out.parent.mkdir(parents=True, exist_ok=True)
    plots.draw_atlas([(label, prof) for label, _, prof in entries], out)

    doc = {
        "group_size": args.group_size,
        "estimators": [
            {
                "label": label,
                "name": prof.name,
                "given_params": given,
                "params": prof.params,
                "sign_balance": prof.sign_balance,
                "difficulty": prof.difficulty,
                "effective_sample_fraction": prof.effective_sample_fraction,
                **summary,
                "rows": prof.rows(),
            }
            for (label, given, prof), summary in zip(entries, summaries)
        ],
    }
    json_path = out.with_suffix(".json")
    json_path.write_text(json.dumps(_json_safe(doc), indent=2) + "\n")

    from rich.table import Table

    table = Table(title=f"Gradient mass at G = {args.group_size} (one group per p = k/G)")
    table.add_column("estimator", no_wrap=True)
    for col in ("sign_balance", "difficulty", "effective_sample_fraction", "peak p of total mass", "mass at p=0.5"):
        table.add_column(col, justify="right")
    for (label, _, prof), summary in zip(entries, summaries):
        table.add_row(
            label,
            _fmt(prof.sign_balance),
            _fmt(prof.difficulty),
            _fmt(prof.effective_sample_fraction),
            _fmt(summary["peak_p"]),
            _fmt(summary["mass_at_half"]),
        )
    console = _console()
    console.print(table)
    console.print(f"wrote {out} and {json_path}")
    return 0


# -- fade decompose ----------------------------------------------------------------------------


def _add_decompose(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "decompose",
        help="positive/negative mass, sign balance, difficulty and effective sample fraction of rollouts",
        description=(
            "Read rollouts from a JSON-lines file, one object per line with 'prompt_id' (int or "
            "string) and 'reward' (number), optionally 'advantage', 'length' (response tokens) "
            "and 'baseline_reward'. Blank lines are skipped. With --estimator the advantages are "
            "computed from the rewards grouped by prompt_id; without it every line needs "
            "'advantage'. Prints the batch diagnostics of fade.decompose."
        ),
        epilog=SPEC_HELP,
        formatter_class=_DefaultsHelpFormatter,
    )
    p.add_argument("rollouts", metavar="ROLLOUTS.jsonl", help="the rollouts file")
    p.add_argument("--estimator", default=None, metavar="SPEC",
                   help="compute advantages with this estimator (default: none, read each line's 'advantage')")
    p.add_argument(
        "--estimator-args", default="", metavar="K=V[,K=V...]", help="estimator parameters, comma-separated (default: none)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=_run_decompose)


_NUMBER = (int, float)


def _is_number(v: Any) -> bool:
    return isinstance(v, _NUMBER) and not isinstance(v, bool)


def read_rollouts(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """The rollouts of a JSON-lines file as (line number, object), checked for the keys decompose reads."""
    rows: list[tuple[int, dict[str, Any]]] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line.rstrip())
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            if "prompt_id" not in obj:
                raise ValueError(f"{path}:{lineno}: missing key 'prompt_id'")
            pid = obj["prompt_id"]
            if isinstance(pid, bool) or not isinstance(pid, (int, str)):
                raise ValueError(f"{path}:{lineno}: 'prompt_id' must be an int or a string, got {pid!r}")
            if "reward" not in obj:
                raise ValueError(f"{path}:{lineno}: missing key 'reward'")
            for key in ("reward", "advantage", "length", "baseline_reward"):
                if key in obj and not _is_number(obj[key]):
                    raise ValueError(f"{path}:{lineno}: {key!r} must be a number, got {obj[key]!r}")
            rows.append((lineno, obj))
    if not rows:
        raise ValueError(f"{path}: no rollouts (the file has no non-blank lines)")
    return rows


def _column(rows: list[tuple[int, dict[str, Any]]], key: str, path: str, *, required: bool, why: str) -> list[float] | None:
    """The values of ``key`` on every line, None if on no line; an error if on only some (or none when required)."""
    missing = [lineno for lineno, obj in rows if key not in obj]
    if not missing:
        return [float(obj[key]) for _, obj in rows]
    if len(missing) == len(rows) and not required:
        return None
    raise ValueError(f"{path}:{missing[0]}: missing key {key!r} ({why})")


def _run_decompose(args: argparse.Namespace) -> int:
    import fade

    rows = read_rollouts(args.rollouts)
    path = args.rollouts
    rewards = [float(obj["reward"]) for _, obj in rows]
    # Dense group ids keyed by (type, value), so the int 1 and the string "1" stay distinct prompts.
    dense: dict[tuple[type, Any], int] = {}
    groups = [dense.setdefault((type(obj["prompt_id"]), obj["prompt_id"]), len(dense)) for _, obj in rows]

    if args.estimator is not None:
        name, params = _estimator_flags(args)
        s = registry_spec(name)
        inputs: dict[str, Any] = {}
        for key, field, flag in (("lengths", "length", "response length"), ("baseline_rewards", "baseline_reward", "baseline reward")):
            if key in (*s.needs, *s.uses):
                why = f"estimator {name!r} {'needs' if key in s.needs else 'uses'} the {flag} of every rollout"
                inputs[key] = _column(rows, field, path, required=key in s.needs, why=why)
        est = fade.estimator(name, **params)
        adv = est(rewards, groups, **inputs)
        source = repr(est)
    else:
        if args.estimator_args:
            raise ValueError("--estimator-args needs --estimator")
        adv = _column(rows, "advantage", path, required=True, why="give --estimator to compute advantages from rewards")
        source = f"'advantage' field of {path}"

    report = fade.decompose(adv, rewards, groups)
    if args.json:
        print(json.dumps(_json_safe(report.to_dict())))
        return 0

    from rich.table import Table

    table = Table(title=f"Gradient mass of {report.num_rollouts} rollouts in {report.num_groups} groups")
    table.add_column("diagnostic", no_wrap=True)
    table.add_column("value", justify="right")
    for key, value in report.to_dict().items():
        table.add_row(key, str(value) if isinstance(value, int) else _fmt(value))
    console = _console()
    console.print(table)
    console.print(f"advantages: {source}")
    return 0


# -- fade pretrain / fade train (the testbed) -------------------------------------------------


def _testbed():
    try:
        from . import testbed  # noqa: F401
        from .testbed import pretrain, trainer
    except ImportError as exc:
        raise ValueError(f"the testbed cannot be imported ({exc}); it needs the 'testbed' extra: {install_line('testbed')}") from None
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # fade draws its own bar; per-file load/save bars are noise
    return pretrain, trainer


def _add_calibrate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate",
        help="where a base policy starts on a task: pass@1 per bucket, per-prompt solve rates, the regime's checks",
        description=(
            "Sample the task's shipped base policy (or --model) on training and test prompts and measure the "
            "base pass@1 per difficulty bucket, the spread of per-prompt solve rates and the distinct answers per "
            "problem, against the calibrated regime's requirements. Writes calibration.json and calibration.png."
        ),
        formatter_class=_DefaultsHelpFormatter,
    )
    p.add_argument("--task", required=True, choices=TASK_NAMES, help="the built-in task (required)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for calibration.json and calibration.png (required)")
    p.add_argument("--model", default=None, metavar="DIR",
                   help="a local policy instead of the task's shipped base (default: the shipped base)")
    p.add_argument("--train-prompts", type=int, default=256, metavar="N", help="training prompts sampled")
    p.add_argument("--test-prompts", type=int, default=256, metavar="N", help="test prompts sampled")
    p.add_argument("--samples", type=int, default=64, metavar="N", help="completions per prompt")
    p.add_argument("--seed", type=int, default=0, help="seeds the prompts drawn and the sampling")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_calibrate, needs=lambda args: ("testbed",))


def _run_calibrate(args: argparse.Namespace) -> int:
    _testbed()
    from .atomic import write_json_atomic
    from .experiments.calibrate import calibrate, draw_calibration, regime_checks

    cal = calibrate(
        args.task, model=args.model, train_prompts=args.train_prompts, test_prompts=args.test_prompts,
        samples=args.samples, seed=args.seed, device=args.device, progress=not args.no_progress,
    )
    checks = regime_checks(cal)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "calibration.json", {
        **cal.to_dict(), "checks": [{"requirement": c.requirement, "value": c.value, "ok": c.ok} for c in checks],
    })
    png = draw_calibration(cal, out / "calibration.png")
    from rich.table import Table

    table = Table(title=f"{args.task}: base policy, {cal.samples} samples per prompt")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for b, v in cal.pass1_by_bucket.items():
        table.add_row(f"test pass@1, bucket {b}", _fmt(v))
    for c in checks:
        table.add_row(c.requirement, f"{c.value} {'ok' if c.ok else 'NOT MET'}")
    console = _console()
    console.print(table)
    console.print(f"wrote {out / 'calibration.json'} and {png}")
    return 0


def _add_pretrain(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pretrain",
        help="train the tiny base policy of a task by supervised learning, stopping while it is imperfect",
        description=(
            "Train a tiny Llama (character tokenizer, built locally) on a task's (prompt, answer) pairs "
            "and stop at the first validation check where sampled pass@1 reaches --target-pass1, so RL "
            "starts from a policy that solves easy prompts often and hard ones rarely. Writes the model, "
            "tokenizer, pretrain.jsonl and base_eval.json (test pass@k per bucket) into --out. A stopped run "
            "leaves a checkpoint from its last validation check in --out; --resume continues it to the same weights."
        ),
        formatter_class=_DefaultsHelpFormatter,
    )
    p.add_argument("--task", required=True, choices=TASK_NAMES, help="the built-in task (required)")
    p.add_argument("--out", required=True, metavar="DIR", help="the policy's folder; replaced when done (required)")
    p.add_argument("--seed", type=int, default=0, help="seeds the initial weights and the training problems")
    p.add_argument("--max-steps", type=int, default=2000, metavar="N", help="stop here if the target is never reached")
    p.add_argument("--target-pass1", type=float, default=0.3, metavar="P", help="stop once validation pass@1 reaches this")
    p.add_argument("--resume", action="store_true",
                   help="continue the stopped pretraining in --out from its checkpoint (same settings)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_pretrain, needs=lambda args: ("testbed",))


def _run_pretrain(args: argparse.Namespace) -> int:
    pretrain, _ = _testbed()
    config = pretrain.PretrainConfig(
        task=args.task, out=args.out, seed=args.seed, max_steps=args.max_steps,
        target_pass1=args.target_pass1, device=args.device, progress=not args.no_progress,
    )
    try:
        summary = pretrain.pretrain(config, resume=args.resume)
    except KeyboardInterrupt:
        if (Path(args.out) / pretrain.CHECKPOINT).is_file():
            then = f"its last validation check is saved in {args.out}: rerun with --resume to continue"
        else:
            then = "it stopped before its first validation check (nothing saved): run the same command again"
        print(f"fade: interrupted; {then}", file=sys.stderr)
        return 130
    test = summary["test"]
    ks = [k for k in (1, 4, 16, 64) if f"pass@{k}" in test]
    print(
        f"{args.task}: {summary['steps']} steps in {summary['seconds']} s, {summary['parameters']:,} parameters; test "
        + ", ".join(f"pass@{k} {test[f'pass@{k}']:.3f}" for k in ks)
    )
    print(f"wrote {args.out}")
    return 0


TRAIN_RESUME_RULE = (
    "--resume continues the run in --out from its checkpoint. It is refused, naming each changed "
    "setting with its old and new value, when a setting that changes what the run computes differs "
    "from the checkpoint's: the task, model, data, verifier, seed, estimator and its arguments, "
    "prompts per step, group size, temperature, max new tokens, the optimizer (lr, weight decay, "
    "Adam betas and eps, gradient clip), the PPO settings (epochs, minibatches, clip, loss "
    "aggregation, KL) and the evaluation set (eval prompts and samples). --steps (to extend a run, "
    "or end it early but not before the checkpoint), --eval-every, --checkpoint-every, --device and "
    "--no-progress may change; the changes are recorded in resumes.jsonl. A different --device "
    "continues the run but not bit for bit. A checkpoint that fails its sha256 check or holds NaN "
    "or inf weights is refused; temporary files left by a kill are removed when the run restarts."
)


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="RL-train a policy on a task with any registered estimator (the testbed trainer)",
        description=(
            "Sample G completions per prompt, score them with the task's verifier, weigh them with the "
            "chosen advantage estimator and take PPO-clip steps. Writes metrics.jsonl, eval.jsonl, "
            "TensorBoard events (tb/), a checkpoint, the final policy (policy/) and PNG plots into --out."
        ),
        epilog=TRAIN_RESUME_RULE,
        formatter_class=_DefaultsHelpFormatter,
    )
    # The defaults repeat TrainConfig's (tests/test_cli.py checks they agree).
    p.add_argument("--task", default="arithmetic", choices=TASK_NAMES, help="the built-in task")
    p.add_argument("--estimator", default="fade", metavar="SPEC",
                   help="a registered estimator, with parameters if wanted (power:alpha=3)")
    p.add_argument("--estimator-args", default="", metavar="K=V[,K=V...]",
                   help="more estimator parameters, merged with the spec's (default: none)")
    p.add_argument("--steps", type=int, default=400, metavar="N", help="training steps; with --resume, more extends the run")
    p.add_argument("--seed", type=int, default=0, help="seeds every random draw of the run")
    p.add_argument("--out", required=True, metavar="DIR", help="the run's folder (required)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint (see below)")
    p.add_argument("--eval-every", type=int, default=100, metavar="N", help="evaluate every N steps; 0: never")
    p.add_argument("--eval-prompts", type=int, default=200, metavar="N", help="held-out prompts per evaluation")
    p.add_argument("--eval-samples", type=int, default=64, metavar="N", help="samples per held-out prompt (the n of pass@k)")
    p.add_argument("--model", default=None, metavar="DIR",
                   help="a local transformers causal LM (default: the task's shipped base policy)")
    p.add_argument("--data", default=None, metavar="FILE.jsonl",
                   help=f"your problems in place of --task: {DATA_FORMAT} (default: none, the built-in task)")
    p.add_argument("--verifier", default=None, choices=VERIFIER_NAMES, metavar="NAME",
                   help=f"how --data answers are checked: {', '.join(VERIFIER_NAMES)} (math needs the 'math' extra) "
                        "(default: none; required with --data)")
    p.add_argument("--max-new-tokens", type=int, default=None, metavar="N",
                   help="completion length cap (default: the task's longest answer; 4x it, at least 16, with --model)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--prompts-per-step", type=int, default=32, metavar="N", help="prompts drawn per step")
    p.add_argument("--group-size", type=int, default=8, metavar="G", help="completions sampled per prompt")
    p.add_argument("--temperature", type=float, default=1.0, metavar="T", help="sampling temperature of the rollouts")
    p.add_argument("--optimizer", default="adamw", choices=("adamw", "sgd"),
                   help="adamw, or sgd: plain gradient steps (no momentum), as first-order theory assumes "
                        "(--grad-clip still clips; the --adam-* flags apply to adamw only)")
    p.add_argument("--lr", type=float, default=1e-4, help="learning rate")
    p.add_argument("--weight-decay", type=float, default=0.0, metavar="WD",
                   help="weight decay (AdamW's decoupled decay; an L2 term for sgd)")
    p.add_argument("--adam-beta1", type=float, default=0.9, metavar="B1", help="AdamW beta1")
    p.add_argument("--adam-beta2", type=float, default=0.99, metavar="B2", help="AdamW beta2")
    p.add_argument("--adam-eps", type=float, default=1e-8, metavar="EPS", help="AdamW epsilon")
    p.add_argument("--grad-clip", type=float, default=1.0, metavar="NORM", help="gradient norm clip")
    p.add_argument("--epochs", type=int, default=1, metavar="N", help="passes over each batch")
    p.add_argument("--minibatches", type=int, default=1, metavar="N", help="optimizer steps per pass")
    p.add_argument("--clip-eps", type=float, default=0.2, metavar="EPS", help="PPO ratio clip")
    p.add_argument("--loss-agg", default="token-mean", choices=("token-mean", "seq-mean"), help="how token losses are averaged")
    p.add_argument("--kl-coef", type=float, default=0.0, metavar="C", help="weight of KL to the base policy")
    p.add_argument("--checkpoint-every", type=int, default=50, metavar="N", help="checkpoint every N steps (and at the last)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_train, needs=lambda args: ("testbed", *(("math",) if args.verifier == "math" else ())))


def _disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` reports a full disk or quota: an OSError, or a library's own error (safetensors)
    that carries the OS message."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return True
    text = str(exc)
    return "No space left on device" in text or "Disk quota exceeded" in text or "StorageFull" in text


def _run_train(args: argparse.Namespace) -> int:
    import dataclasses

    _, trainer = _testbed()
    from .testbed import report

    fields = {f.name for f in dataclasses.fields(trainer.TrainConfig)}
    settings = {key: value for key, value in vars(args).items() if key in fields}
    name, params = _estimator_flags(args)
    settings.update(estimator=name, estimator_args=params, progress=not args.no_progress)
    config = trainer.TrainConfig(**settings)
    try:
        out = trainer.train(config, resume=args.resume)
    except KeyboardInterrupt:
        print(f"fade: interrupted; the last checkpoint in {args.out} is intact: rerun with --resume", file=sys.stderr)
        return 130
    except Exception as exc:
        if not _disk_full(exc):
            raise
        where = getattr(exc, "filename", None) or args.out
        if (Path(args.out) / trainer.CHECKPOINT).is_file():
            then = f"the last checkpoint in {args.out} is intact: free some space and rerun with --resume"
        else:
            then = f"no checkpoint was written yet: free some space and start again (remove {args.out} first)"
        raise ValueError(f"no space left on the device while writing {where}; {then}") from None
    run = report.load_run(out)
    _console().print(report.summary_table(run))
    for path in report.plot_run(out):
        print(f"wrote {path}")
    return 0


# -- fade eval ---------------------------------------------------------------------------------


def _parse_ks(text: str) -> tuple[int, ...]:
    ks: list[int] = []
    for item in text.split(","):
        if not item.strip():
            continue
        try:
            k = int(item)
        except ValueError:
            raise ValueError(f"--k {text!r}: {item.strip()!r} is not an integer; expected e.g. 1,10,100") from None
        if k < 1:
            raise ValueError(f"--k {text!r}: every k must be >= 1, got {k}")
        if k not in ks:
            ks.append(k)
    if not ks:
        raise ValueError(f"--k {text!r} is empty: expected positive integers, e.g. 1,10,100")
    return tuple(sorted(ks))


def _add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="score generated samples with the math or code verifier and report pass@k",
        description=(
            "Score the samples of a JSON-lines file (problem id, completion, and the gold answer or the "
            "tests, or --problems to join them by id) with math-verify or the code sandbox. Scores are "
            "appended to DIR/scores.jsonl as they finish; rerunning the same command resumes without "
            "rescoring. Once every sample is scored, writes DIR/report.json (pass@k, per-k problem "
            "counts, solve rates, distinct correct solutions, reasons), DIR/problems.jsonl and "
            "DIR/passk.png. See docs/verifiers.md."
        ),
        formatter_class=_DefaultsHelpFormatter,
    )
    p.add_argument("samples", metavar="SAMPLES.jsonl", help="the samples file")
    p.add_argument("--verifier", required=True, choices=("math", "code"),
                   help="math (math-verify, the 'math' extra) or code (the sandbox) (required)")
    p.add_argument("--k", default="1,10,100", metavar="K[,K...]", help="the k of pass@k (default: %(default)s)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder; an existing one is resumed (required)")
    p.add_argument("--problems", default=None, metavar="FILE.jsonl",
                   help="gold answers or tests, joined to samples by problem id (default: none, read from each sample)")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="samples scored at once (default: CPU count)")
    p.add_argument("--timeout", type=float, default=5.0, metavar="S", help="math: seconds per sample (default: 5)")
    from .verifiers.judges import JUDGES, limit_defaults

    p.add_argument("--judge", default="auto", choices=("auto", *JUDGES),
                   help="code: whose rules judge the programs: each benchmark's official harness, fade's own, or auto, "
                        "the one the problem's format names (default: %(default)s; docs/verifiers.md)")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help=f"code: seconds per test, wall and CPU (default: the judge's: {limit_defaults('time_seconds')})")
    p.add_argument("--memory-mb", type=int, default=None, metavar="MB",
                   help=f"code: address-space limit (default: {limit_defaults('memory_mb')})")
    p.add_argument("--float-tolerance", type=float, default=1e-6, metavar="T", help="code, fade's judge: tolerance for non-integer outputs (default: %(default)s)")
    p.add_argument("--answer-mode", choices=("any", "final", "boxed"), default="any",
                   help="math: where the answer may come from: any expression (math-verify's fallback), only a final "
                        "form (a closed \\boxed{} or a final-answer line), or only a box (default: %(default)s)")
    p.add_argument("--final-answer-pattern", default=None, metavar="REGEX",
                   help="math, --answer-mode final: the regular expression of a final-answer line "
                        "(default: 'final answer' ... 'is' or ':')")
    p.add_argument("--float-rounding", type=int, default=6, metavar="N",
                   help="math: decimal places floats are rounded to before comparing (math-verify's) (default: %(default)s)")
    p.add_argument("--numeric-precision", type=int, default=15, metavar="N",
                   help="math: significant digits of numeric evaluation (math-verify's) (default: %(default)s)")
    p.add_argument("--no-strict", action="store_true",
                   help="math: math-verify's non-strict mode (variables matched by position, sets equal tuples) "
                        "(default: strict)")
    p.add_argument("--set-relation", action="store_true",
                   help="math: an inequality equals its interval (1 < x < 2 = (1, 2); math-verify's allow_set_relation_comp) "
                        "(default: off)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="score at most N new samples, then stop (rerun to continue) (default: no limit)")
    p.add_argument("--compare", default="", metavar="DIR[,DIR...]",
                   help="earlier eval folders drawn on the same pass@k plot (default: none)")
    p.add_argument("--label", default=None, help="this run's name in plots (default: the --out folder's name)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object instead of a table")
    p.set_defaults(func=_run_eval, needs=lambda args: ("math",) if args.verifier == "math" else ())


def _run_eval(args: argparse.Namespace) -> int:
    from .verifiers.evaluate import EvalConfig, evaluate

    overrides = {}
    if args.time_limit is not None:
        overrides["time_seconds"] = args.time_limit
    if args.memory_mb is not None:
        overrides["memory_mb"] = args.memory_mb
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    if not args.timeout > 0:
        raise ValueError(f"--timeout must be > 0 seconds, got {args.timeout}")
    math = {"answer_mode": args.answer_mode, "float_rounding": args.float_rounding,
            "numeric_precision": args.numeric_precision, "strict": not args.no_strict,
            "allow_set_relation_comp": args.set_relation}
    if args.final_answer_pattern is not None:
        if args.answer_mode != "final":
            raise ValueError(f"--final-answer-pattern applies to --answer-mode final only, got --answer-mode {args.answer_mode}")
        math["final_answer_pattern"] = args.final_answer_pattern
    config = EvalConfig(
        samples=args.samples, out=args.out, verifier=args.verifier, ks=_parse_ks(args.k), problems=args.problems,
        workers=args.workers, timeout=args.timeout, math=math, limits=overrides,
        judge=args.judge, float_tolerance=args.float_tolerance,
        limit=args.limit, compare=tuple(d.strip() for d in args.compare.split(",") if d.strip()), label=args.label,
        progress=not args.no_progress,
    )
    try:
        outcome = evaluate(config)
    except KeyboardInterrupt:
        print(f"fade: interrupted; every finished score is in {args.out}/scores.jsonl: rerun the same command to continue",
              file=sys.stderr)
        return 130
    if not outcome.complete:
        print(f"scored {outcome.scored_now} samples; {outcome.remaining} of {outcome.total} remain: rerun to continue")
        return 0
    report = outcome.report
    if args.json:
        print(json.dumps(_json_safe(report)))
        return 0
    from rich.table import Table

    table = Table(title=f"{report['label']}: {report['num_samples']} samples of {report['num_problems']} problems ({args.verifier})")
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right")
    for key, value in report["pass@k"].items():
        k = key.split("@")[1]
        table.add_row(f"{key} ({report['problems_at_k'][k]} problems)", "n/a (too few samples)" if value is None else _fmt(value))
    table.add_row("mean solve rate", _fmt(report["mean_solve_rate"]))
    table.add_row("problems solved", f"{report['problems_solved']}/{report['num_problems']}")
    table.add_row("mean distinct correct", _fmt(report["mean_distinct_correct"]))
    table.add_row("reasons", ", ".join(f"{r} {c}" for r, c in report["reasons"].items()))
    if "sandbox" in report:
        table.add_row("sandbox", ", ".join(f"{m} {c}" for m, c in report["sandbox"]["modes"].items()) or "none ran")
    if report.get("judges"):
        table.add_row("judged by", ", ".join(f"{j} {c}" for j, c in report["judges"].items()))
    console = _console()
    console.print(table)
    for path in outcome.written:
        console.print(f"wrote {path}")
    return 0


# -- fade sweep (experiments) ------------------------------------------------------------------


def _add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="test the paper's claims on the testbed: a grid of runs in parallel, resumable, and a report",
        description=(
            "Train a preset's grid of estimators x seeds x tasks with the testbed trainer in parallel worker "
            "processes (one torch thread each), skip the runs already finished, resume interrupted ones, and "
            "write DIR/README.md (tables, verdicts per claim, the command that regenerates it), its PNGs and "
            "DIR/results.json. Runs live in DIR/runs/<task>/<estimator>/seed<k>/. --estimators, --seeds, "
            "--tasks and --steps turn a preset into a custom sweep with the preset's trainer settings. Exit "
            "status 1 when a run failed (the others are kept and reported)."
        ),
        epilog=SPEC_HELP,
        formatter_class=_DefaultsHelpFormatter,
    )
    p.add_argument("--preset", default="quick", metavar="NAME",
                   help="quick (about 10 minutes on 2 cores), full (every claim on arithmetic and countdown, a few "
                        "hours) or paper (the calibrated instrument: countdown_multi, 5 paired seeds, FADE's arms, "
                        "about 8 CPU hours; --dry-run prints each run's cost) (default: quick)")
    p.add_argument("--out", required=True, metavar="DIR", help="the sweep's folder; rerunning into it resumes (required)")
    p.add_argument("--workers", type=int, default=2, metavar="N", help="runs trained at once, one core each (default: 2)")
    p.add_argument("--dry-run", action="store_true", help="list the runs, their state and estimated CPU minutes; train nothing")
    p.add_argument("--report-only", action="store_true",
                   help="write the report from the runs finished so far; train nothing (safe beside a running sweep)")
    p.add_argument("--estimators", default=None, metavar="SPEC[,SPEC...]",
                   help="train these estimators on every task instead (default: the preset's)")
    p.add_argument("--seeds", default=None, metavar="S[,S...]", help="these seeds instead of the preset's (default: the preset's)")
    p.add_argument("--tasks", default=None, metavar="TASK[,TASK...]",
                   help="only these of the preset's tasks (arithmetic, countdown, countdown_multi, "
                        "countdown_multi-sgd); another testbed task takes the preset's first plan (default: all of them)")
    p.add_argument("--steps", type=int, default=None, metavar="N",
                   help="training steps of every run instead (default: the preset's)")
    p.add_argument("--keep-checkpoints", action="store_true",
                   help="keep each finished run's checkpoint.pt (optimizer state; needed only to train it further)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar; one line per finished run")
    p.set_defaults(func=_run_sweep, needs=lambda args: ("testbed",))


def _sweep_command(args: argparse.Namespace) -> str:
    """The ``fade sweep`` command line that regenerates this sweep's report, as it was typed."""
    import shlex

    parts = ["fade", "sweep", "--preset", args.preset, "--out", args.out]
    for flag, value in (("--estimators", args.estimators), ("--seeds", args.seeds), ("--tasks", args.tasks), ("--steps", args.steps)):
        if value is not None:
            parts += [flag, str(value)]
    if args.workers != 2:
        parts += ["--workers", str(args.workers)]
    return " ".join(shlex.quote(part) for part in parts)


def _run_sweep(args: argparse.Namespace) -> int:
    _testbed()
    from .experiments import presets, sweep

    def items(text: str | None) -> list[str] | None:
        return None if text is None else [item.strip() for item in text.split(",") if item.strip()]

    seeds = items(args.seeds)
    if seeds is not None:
        bad = [s for s in seeds if not s.isdigit()]
        if bad:
            raise ValueError(f"--seeds {args.seeds!r}: {bad[0]!r} is not a non-negative integer; expected e.g. 0,1,2")
    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    preset = presets.get_preset(args.preset).with_overrides(
        estimators=items(args.estimators), seeds=None if seeds is None else [int(s) for s in seeds],
        tasks=items(args.tasks), steps=args.steps,
    )
    preset.check()
    console = _console()
    if args.report_only:
        outcome = sweep.report_sweep(preset, args.out, workers=args.workers, command=_sweep_command(args),
                                     progress=not args.no_progress)
        console.print(f"{len(outcome.skipped)} of {len(outcome.runs)} runs finished; wrote {outcome.readme}")
        return 0
    if args.dry_run:
        from rich.table import Table

        rows = sweep.plan_rows(preset, args.out)
        table = Table(title=f"fade sweep --preset {args.preset}: {len(rows)} runs into {args.out}")
        for col in ("run", "steps", "evaluations", "est. CPU min", "state"):
            table.add_column(col, justify="left" if col in ("run", "state") else "right", no_wrap=col == "run")
        for row in rows:
            run = row["run"]
            table.add_row(row["key"], str(run.steps), f"{run.num_evals} x {run.eval_prompts}x{run.eval_samples}",
                          f"{row['seconds'] / 60:.1f}", row["state"])
        console.print(table)
        console.print(sweep.dry_run_summary(rows, args.workers))
        return 0
    try:
        outcome = sweep.run_sweep(
            preset, args.out, workers=args.workers, keep_checkpoints=args.keep_checkpoints,
            progress=not args.no_progress, command=_sweep_command(args), log=print if args.no_progress else None,
        )
    except KeyboardInterrupt:
        print(f"fade: interrupted; finished runs and checkpoints in {args.out} are intact: rerun the same command to resume",
              file=sys.stderr)
        return 130
    console.print(
        f"{len(outcome.finished)} runs trained, {len(outcome.skipped)} already finished, {len(outcome.failed)} failed"
        + (f"; FADE's parameters chosen on {preset.tuning.task}: {outcome.choice}" if preset.tuning and outcome.choice else "")
    )
    console.print(f"wrote {outcome.readme}")
    for key, message in sorted(outcome.failed.items()):
        print(f"fade: run {key} failed: {message}", file=sys.stderr)
    return 1 if outcome.failed else 0


# -- fade compare / fade demo ------------------------------------------------------------------


def _add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="put finished runs side by side: one figure (pass@1, pass@k, entropy, sign/difficulty plane) and a table",
        description=(
            "Read the run folders `fade train` wrote and draw them on shared axes into --out: pass@1 against "
            "step, the final pass@k curves (under the base's when all runs share it), training entropy (with "
            "FADE's target H*) and each run's path on the sign/difficulty plane. Prints a table of the shared "
            "base evaluation, each run's final one, and the training signals behind them."
        ),
        formatter_class=_DefaultsHelpFormatter,
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders written by fade train or fade sweep")
    p.add_argument("--out", default="compare.png", metavar="FILE.png", help="the figure to write; its folder is created")
    p.add_argument("--label-key", default=None, metavar="KEY",
                   help="label runs by this run.json key, e.g. estimator_args.h_star_ratio (default: the estimator)")
    p.set_defaults(func=_run_compare)


def _print_comparison(runs: Sequence[str | Path], out: Path, *, labels: Sequence[str] | None = None,
                      label_key: str | None = None, title: str | None = None) -> None:
    from .testbed import report

    if out.suffix.lower() != ".png":
        raise ValueError(f"--out must name a .png file, got {str(out)!r}")
    missing = [str(r) for r in runs if not (Path(r) / "metrics.jsonl").is_file()]
    if missing:
        raise ValueError(f"{missing[0]} holds no run (no metrics.jsonl): expected a folder written by fade train")
    figure = report.compare_runs(runs, out, label_key=label_key)
    table = report.compare_table(runs, labels=labels)
    if title is not None:
        table.title = title
    console = _console()
    console.print(table)
    console.print(f"wrote {figure}")


def _run_compare(args: argparse.Namespace) -> int:
    _print_comparison(args.runs, Path(args.out), label_key=args.label_key)
    return 0


DEMO_READING = (
    "How to read it: both runs start from the same base policy (grey) and see the same prompts; only the "
    "advantage differs (second - first: FADE minus the baseline). RL raises pass@1 and narrows the policy, so "
    "pass@k at large k falls below the base's: the run that keeps more of it keeps more distinct correct answers. "
    "The entropy panel shows how fast each run sharpens (dotted: FADE's target H*; its sign knob delta drops "
    "below 1 once the entropy average is under it). On the plane, a run left of the baseline puts its weight on "
    "harder prompts (FADE's alpha > 1), one below 0.5 on failures (delta < 1). One seed is one draw: "
    "docs/results/paper holds the five-seed comparison."
)


def _add_demo(sub: argparse._SubParsersAction) -> None:
    from .experiments.demo import DEMO_BASELINE, DEMO_FADE, DEMO_SEED

    p = sub.add_parser(
        "demo",
        help=f"FADE against {DEMO_BASELINE} on the same seed and prompts, in minutes on two cores, with one figure",
        description=(
            f"Train {DEMO_BASELINE} and {DEMO_FADE} on countdown_multi from the shipped base policy, seed "
            f"{DEMO_SEED}, with the paper preset's settings (G = 16, 16 prompts a step, 200 steps; one core each), "
            "then draw both into DIR/compare.png and print a table of their final evaluations and training "
            "signals. A rerun skips the finished runs and resumes an interrupted one."
        ),
        formatter_class=_DefaultsHelpFormatter,
    )
    p.add_argument("--out", default="runs/demo", metavar="DIR", help="the demo's folder")
    p.add_argument("--workers", type=int, default=2, metavar="N", help="runs trained at once, one core each")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_demo, needs=lambda args: ("testbed",))


def _run_demo(args: argparse.Namespace) -> int:
    _testbed()
    from .experiments.demo import FIGURE, run_demo

    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    try:
        outcome = run_demo(args.out, workers=args.workers, progress=not args.no_progress)
    except KeyboardInterrupt:
        print(f"fade: interrupted; finished runs and checkpoints in {args.out} are intact: rerun the same command to resume",
              file=sys.stderr)
        return 130
    for key, message in sorted(outcome.failed.items()):
        print(f"fade: run {key} failed: {message}", file=sys.stderr)
    if outcome.failed:
        return 1
    _print_comparison(outcome.runs, Path(args.out) / FIGURE, labels=outcome.labels,
                      title="countdown_multi, seed 0: the same base and prompts, two advantages")
    _console().print(DEMO_READING)
    return 0


# -- entry point -------------------------------------------------------------------------------

#: Subcommands in the order ``fade --help`` lists them.
COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_atlas, _add_decompose, _add_pretrain, _add_calibrate, _add_train, _add_eval, _add_sweep, _add_compare,
    _add_demo,
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fade",
        description="Advantage estimators for RL with verifiable rewards: their gradient mass, and FADE.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"fade {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``fade`` command line; returns the exit status (2 for user mistakes)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            names = ", ".join(sub for sub in parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
            raise UsageError(f"choose a command: {names} (see 'fade --help')")
        needs = getattr(args, "needs", None)
        if needs is not None:
            verifier = getattr(args, "verifier", None)
            require_extras(f"fade {args.command}" + (f" --verifier {verifier}" if verifier else ""), needs(args))
        return int(args.func(args))
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except (UsageError, ValueError, OSError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"fade: error: {message}", file=sys.stderr)
        return 2
