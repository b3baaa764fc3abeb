"""The generic contract: one JSON-lines, CSV or parquet file of one record per rollout with
``step``, ``reward`` and ``group_id`` or ``prompt_id``, optionally ``advantage``. Any other
engine is one small export away (docs/analyze.md, "The generic contract")."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..columns import arrow, encode_keys, read_jsonl, read_parquet
from ..records import DumpError, RunRecords, StepBatch
from .base import Format, ReadOptions, first_object, int_column

__all__ = ["FORMAT", "GENERIC_GROUP_KEYS"]

#: The group keys of the generic format, in the order they are looked for.
GENERIC_GROUP_KEYS = ("group_id", "prompt_id")


def _read_generic(where: Path, options: ReadOptions, progress) -> RunRecords:
    suffix = where.suffix.lower()
    if suffix in (".jsonl", ".json"):
        first = first_object(where)
        key = next((k for k in GENERIC_GROUP_KEYS if k in first), GENERIC_GROUP_KEYS[0])
        cols = read_jsonl(where, {"step": "int", "reward": "float", key: "key", "advantage": "float"},
                          required=("step", "reward", key), newest=True)
        keys = cols[key]
    else:
        pa = arrow()
        if suffix == ".csv":
            import pyarrow.csv as pcsv

            # text has no type in a CSV file: the step is parsed here (to name a row that is not an
            # integer) and a group key stays as written ("01" and "1" are two keys)
            text = {k: pa.string() for k in ("step", *GENERIC_GROUP_KEYS)}
            try:
                table = pcsv.read_csv(where, convert_options=pcsv.ConvertOptions(column_types=text))
            except pa.ArrowInvalid as exc:
                raise DumpError(f"{where}: not a readable CSV file ({exc})") from None
        else:
            table = read_parquet(where)
        names = table.schema.names
        key = next((k for k in GENERIC_GROUP_KEYS if k in names), None)
        for need in ("step", "reward"):
            if need not in names:
                raise DumpError(
                    f"{where}: no column {need!r}: expected step, reward and one of {', '.join(GENERIC_GROUP_KEYS)}"
                )
        if key is None:
            raise DumpError(f"{where}: no group column: expected one of {', '.join(GENERIC_GROUP_KEYS)}")
        cols = {
            "step": int_column(table, "step", where),
            "reward": table.column("reward").to_numpy(zero_copy_only=False).astype(np.float64),
        }
        bad = np.flatnonzero(~np.isfinite(cols["reward"]))
        if bad.size:
            raise DumpError(f"{where}: row {bad[0] + 1}: reward {cols['reward'][bad[0]]!r}: expected a finite number")
        cols["advantage"] = (table.column("advantage").to_numpy(zero_copy_only=False).astype(np.float64)
                             if "advantage" in names else np.full(len(cols["step"]), np.nan))
        column = table.column(key)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
                or pa.types.is_integer(column.type)):
            raise DumpError(f"{where}: column {key!r} is {column.type}: expected text or integers")
        keys = column.to_pylist()
        if column.null_count:
            raise DumpError(f"{where}: row {keys.index(None) + 1}: no {key!r}: expected every row to have it")
    steps, adv = cols["step"], cols["advantage"]
    has_adv = ~np.isnan(adv)
    if has_adv.any() and not has_adv.all():
        row = int(np.flatnonzero(~has_adv)[0])
        raise DumpError(
            f"{where}: record {row + 1}: no 'advantage' while others have one: expected it on every record or none"
        )
    out = []
    order = np.argsort(steps, kind="stable")
    bounds = np.flatnonzero(np.diff(steps[order])) + 1
    for idx in np.split(order, bounds):
        groups, names = encode_keys([keys[i] for i in idx])
        out.append(StepBatch(int(steps[idx[0]]), cols["reward"][idx], groups,
                             advantages=adv[idx] if has_adv.all() else None, prompt_keys=names, source=str(where)))
    progress(1, 1)
    return RunRecords("generic", str(where), out)




def _claims(path: Path, keys: frozenset[str]) -> bool:
    if path.suffix.lower() in (".csv", ".parquet"):
        return True  # the reader names a missing column
    return "step" in keys and "reward" in keys and bool(keys & set(GENERIC_GROUP_KEYS))


FORMAT = Format(
    name="generic",
    engine="any (docs/analyze.md, the generic contract)",
    writer=(),
    layout="",
    keys=f"step, reward and one of {', '.join(GENERIC_GROUP_KEYS)}",
    find=lambda folder: None,
    claims=_claims,
    read=_read_generic,
)
