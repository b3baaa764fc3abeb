"""``fade atlas``: the gradient-mass profiles m_S(p), m_F(p) of estimators and their sign/difficulty plane."""

from __future__ import annotations

import argparse
from pathlib import Path

from fade.atomic import write_json_atomic
from fade.jsonl import json_safe
from fade.plots import FADE_ENDS, atlas_profiles, draw_atlas, profile_summary
from fade.registry import check_inputs
from fade.registry import spec as registry_spec
from fade.specs import parse_spec

from .output import console, fmt
from .parsing import SPEC_HELP, estimator_label

__all__ = ["DEFAULT_ATLAS_ESTIMATORS", "add", "run"]

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
    *(spec for _, spec in FADE_ENDS),
)


def add(sub: argparse._SubParsersAction) -> None:
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
    )
    p.add_argument(
        "--estimators",
        default=",".join(DEFAULT_ATLAS_ESTIMATORS),
        metavar="SPEC[,SPEC...]",
        help="comma-separated estimator specs (default: %(default)s)",
    )
    p.add_argument("--group-size", type=int, default=16, metavar="G", help="rollouts per group, G >= 2 (default: 16)")
    p.add_argument(
        "--out",
        default="atlas.png",
        metavar="FILE.png",
        help="PNG to write; its folder is created (default: atlas.png)",
    )
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fade.specs import split_specs

    specs = split_specs(args.estimators)
    out = Path(args.out)
    if out.suffix.lower() != ".png":
        raise ValueError(f"--out must name a .png file, got {args.out!r}")

    entries = []
    for text in specs:
        name, params = parse_spec(text)
        given = {"lengths", *(["baseline_rewards"] if args.baseline_reward is not None else [])}
        check_inputs(registry_spec(name), given, where="was not given",
                     called={"baseline_rewards": "--baseline-reward (the reward of its baseline response)"})
        entries += atlas_profiles([(estimator_label(name, params), text)], args.group_size, lengths=args.length,
                                  baseline_reward=args.baseline_reward)

    summaries = [profile_summary(prof) for _, _, prof in entries]
    out.parent.mkdir(parents=True, exist_ok=True)
    draw_atlas([(label, prof) for label, _, prof in entries], out)

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
    write_json_atomic(json_path, json_safe(doc))

    from rich.table import Table

    table = Table(title=f"Gradient mass at G = {args.group_size} (one group per p = k/G)")
    table.add_column("estimator", no_wrap=True)
    for col in ("sign_balance", "difficulty", "effective_sample_fraction", "peak p of total mass", "mass at p=0.5"):
        table.add_column(col, justify="right")
    for (label, _, prof), summary in zip(entries, summaries):
        table.add_row(
            label,
            fmt(prof.sign_balance),
            fmt(prof.difficulty),
            fmt(prof.effective_sample_fraction),
            fmt(summary["peak_p"]),
            fmt(summary["mass_at_half"]),
        )
    shown = console()
    shown.print(table)
    shown.print(f"wrote {out} and {json_path}")
    return 0

