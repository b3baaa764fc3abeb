"""Segment operations over ragged groups of rollouts.

Every estimator reduces rewards within the group of rollouts that share a prompt. This module
is the one place that turns user-facing group ids into a dense index and does those reductions
(sum, mean, variance, max) without a Python loop over groups. When the groups are consecutive
and of equal size, reductions run on a reshaped view, which is several times faster than a
scatter; ragged groups and arbitrary ids go through ``index_add_`` / ``scatter_reduce``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["Groups", "as_tensor", "as_rewards", "as_groups", "check_finite", "first_non_finite"]


def as_tensor(x: torch.Tensor | np.ndarray | Sequence[float], name: str) -> torch.Tensor:
    """``x`` as a tensor holding real numbers; anything else raises ValueError naming ``name``.

    Numpy arrays with negative strides (a reversed view) are copied, which ``torch.as_tensor``
    refuses to do; meta tensors (shape without data) are refused.
    """
    if not isinstance(x, torch.Tensor):
        arr = np.asarray(x) if not isinstance(x, np.ndarray) else x
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be a 1-D array of numbers, got {type(x).__name__} of dtype {arr.dtype}")
        if any(s < 0 for s in arr.strides):
            arr = arr.copy()
        try:
            x = torch.as_tensor(arr)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a 1-D array of numbers, got {type(x).__name__}: {exc}") from None
    if x.is_meta:
        raise ValueError(f"{name} is a meta tensor (a shape without data): expected values on a real device")
    if x.is_complex():
        raise ValueError(f"{name} must be real numbers, got dtype {x.dtype}")
    return x


def as_rewards(rewards: torch.Tensor | np.ndarray | Sequence[float], *, name: str = "rewards") -> torch.Tensor:
    """Return ``rewards`` as a 1-D floating tensor with finite values.

    Integer and boolean inputs become the default float dtype; floating inputs keep their dtype
    and device.
    """
    rewards = as_tensor(rewards, name)
    if not rewards.is_floating_point():
        rewards = rewards.to(torch.get_default_dtype())
    if rewards.dim() != 1:
        raise ValueError(f"{name} must be 1-D (one value per rollout), got shape {tuple(rewards.shape)}")
    if rewards.numel() == 0:
        raise ValueError(f"{name} is empty: expected at least one rollout")
    check_finite(rewards, name)
    return rewards


def first_non_finite(x: torch.Tensor) -> int | None:
    """The position of the first non-finite entry of ``x``, or None when all are finite."""
    # One reduction decides the common case: a finite sum means every entry is finite. A
    # non-finite sum can also come from overflow, so only then scan for the offending entry.
    if bool(torch.isfinite(x.sum())):
        return None
    bad = ~torch.isfinite(x)
    return int(bad.nonzero()[0, 0]) if bool(bad.any()) else None


def check_finite(x: torch.Tensor, name: str) -> None:
    """Raise ValueError naming the first non-finite entry of ``x``."""
    i = first_non_finite(x)
    if i is not None:
        count = int((~torch.isfinite(x)).sum())
        raise ValueError(
            f"{name} must be finite, got {x[i].item()} at position {i} ({count} non-finite value(s) in {x.numel()})"
        )


def _is_integer_dtype(dtype: torch.dtype) -> bool:
    return dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


@dataclass(frozen=True)
class Groups:
    """A dense grouping of ``n`` rollouts into ``num_groups`` groups.

    Attributes:
        index: int64 tensor (n,), the dense group of each rollout, values in [0, num_groups).
        counts: int64 tensor (num_groups,), rollouts per group (all >= 1).
        size: the common group size when groups are consecutive blocks of equal size, else None;
            reductions then use a reshape instead of a scatter.
    """

    index: torch.Tensor
    counts: torch.Tensor
    size: int | None

    @property
    def num_groups(self) -> int:
        return int(self.counts.numel())

    @property
    def n(self) -> int:
        return int(self.index.numel())

    # -- reductions: each returns one value per group ------------------------------------------

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        if self.size is not None:
            return x.view(-1, self.size).sum(dim=1)
        out = torch.zeros(self.num_groups, dtype=x.dtype, device=x.device)
        return out.scatter_add_(0, self.index, x)

    def count(self, dtype: torch.dtype) -> torch.Tensor:
        return self.counts.to(dtype)

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        m = self._plain_mean(x)
        # A group sum can overflow though its mean cannot (four rewards of 3e38 in float32): one
        # check of the group means decides the rare rescaled pass.
        if bool(torch.isfinite(m.sum())):
            return m
        s = self.magnitude(x)
        return self._plain_mean(x / self.expand(s)) * s

    def _plain_mean(self, x: torch.Tensor) -> torch.Tensor:
        if self.size is not None:
            return x.view(-1, self.size).mean(dim=1)
        return self.sum(x) / self.count(x.dtype)

    def magnitude(self, x: torch.Tensor) -> torch.Tensor:
        """Per group, the power of two s with max |x| / s in [1, 2) (1 for an all-zero group).

        Dividing by s is exact (short of underflow) and bounds the group's values by 2, so sums,
        squares and differences of the scaled values cannot overflow.
        """
        peak = self.max(x.abs())
        _, e = torch.frexp(peak)
        one = torch.ones_like(peak)
        return torch.where(peak > 0, torch.ldexp(one, e - 1), one)

    def var(self, x: torch.Tensor, *, unbiased: bool = True, mean: torch.Tensor | None = None) -> torch.Tensor:
        """Within-group variance. Unbiased variance of a one-rollout group is defined as 0."""
        if mean is None:
            mean = self.mean(x)
        sq = self.sum((x - self.expand(mean)) ** 2)
        n = self.count(x.dtype)
        denom = (n - 1).clamp_min(1) if unbiased else n
        return sq / denom

    def std(self, x: torch.Tensor, *, unbiased: bool = True, mean: torch.Tensor | None = None) -> torch.Tensor:
        return self.var(x, unbiased=unbiased, mean=mean).sqrt()

    def max(self, x: torch.Tensor) -> torch.Tensor:
        if self.size is not None:
            return x.view(-1, self.size).amax(dim=1)
        out = torch.full((self.num_groups,), -torch.inf, dtype=x.dtype, device=x.device)
        return out.scatter_reduce_(0, self.index, x, reduce="amax", include_self=True)

    # -- broadcasting back to rollouts ----------------------------------------------------------

    def expand(self, per_group: torch.Tensor) -> torch.Tensor:
        """Per-group values broadcast to one value per rollout."""
        if self.size is not None:
            return per_group.unsqueeze(1).expand(-1, self.size).reshape(-1)
        return per_group.index_select(0, self.index)

    def mean_of(self, x: torch.Tensor) -> torch.Tensor:
        """Group mean of ``x`` at every rollout."""
        return self.expand(self.mean(x))

    def sizes(self, dtype: torch.dtype) -> torch.Tensor:
        """Size of each rollout's group, at every rollout."""
        if self.size is not None:
            return torch.full((self.n,), float(self.size), dtype=dtype, device=self.index.device)
        return self.counts.to(dtype).index_select(0, self.index)


def as_groups(groups: int | torch.Tensor | np.ndarray | Sequence, n: int, device: torch.device | str) -> Groups:
    """Build a :class:`Groups` for ``n`` rollouts.

    Args:
        groups: an int ``G`` (consecutive groups of ``G`` rollouts; ``n`` must be a multiple), or
            one id per rollout: integers of any value (ragged sizes, any order), or strings
            (such as verl's ``uid`` array).
        n: number of rollouts.
        device: where the index lives (the rewards' device).
    """
    if isinstance(groups, bool):
        raise ValueError(f"groups must be an int group size or one id per rollout, got {groups!r}")
    if isinstance(groups, (int, np.integer)):
        g = int(groups)
        if g < 1:
            raise ValueError(f"group size must be a positive integer, got {g}")
        if n % g != 0:
            raise ValueError(
                f"{n} rollouts cannot be split into consecutive groups of {g}: "
                f"expected a multiple of {g}, or one group id per rollout"
            )
        # repeat_interleave, not arange // g: integer division is an order of magnitude slower.
        index = torch.arange(n // g, device=device).repeat_interleave(g)
        counts = torch.full((n // g,), g, dtype=torch.int64, device=device)
        return Groups(index=index, counts=counts, size=g)

    if isinstance(groups, torch.Tensor):
        if groups.is_meta:
            raise ValueError("groups is a meta tensor (a shape without data): expected one id per rollout")
        ids = groups
    else:
        if isinstance(groups, (list, tuple)):
            # np.asarray(["1", 1]) turns every id into a string and np.asarray([1, True]) every id
            # into an int, silently merging groups: look at the Python types first.
            _check_id_types(set(map(type, groups)))
        arr = np.asarray(groups)
        if arr.dtype.kind in "OUS":  # strings or objects: map to dense ids in numpy
            if arr.ndim != 1:
                raise ValueError(f"groups must be 1-D (one id per rollout), got shape {arr.shape}")
            # A dict maps ids in order of first appearance in one pass: np.unique sorts the
            # strings, ten times slower for verl's 10^6 uuid uids (0.6-1.1 s against 0.1 s).
            first: dict = {}
            values = arr.tolist()
            try:
                dense = [first.setdefault(v, len(first)) for v in values]
            except TypeError as exc:
                raise ValueError(f"group ids must be integers or strings: {exc}") from None
            kinds = set(map(type, first))
            if not kinds <= {str} and not kinds <= {bytes}:
                # A bool or a float equal to an int id lands on that id's key (True == 1), so
                # only the types of all ids tell; strings never equal anything else.
                _check_id_types(set(map(type, values)), objects=True)
            ids = torch.tensor(dense, dtype=torch.int64)
        else:
            if arr.dtype.kind == "b" or arr.dtype.kind not in "iu":
                raise ValueError(f"group ids must be integers, got dtype {arr.dtype}")
            ids = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.int64))

    if ids.dtype == torch.bool or not _is_integer_dtype(ids.dtype):
        raise ValueError(f"group ids must be integers, got dtype {ids.dtype}")
    if ids.dim() != 1:
        raise ValueError(f"groups must be 1-D (one id per rollout), got shape {tuple(ids.shape)}")
    if ids.numel() != n:
        raise ValueError(f"got {ids.numel()} group ids for {n} rollouts: expected one id per rollout")
    ids = ids.to(device=device, dtype=torch.int64)
    index, counts = _densify(ids)
    return Groups(index=index, counts=counts, size=None)


def _check_id_types(types: set[type], *, objects: bool = False) -> None:
    """Refuse bool ids and ids that mix strings with anything else.

    With ``objects`` (the values of an object array, which numpy will not check) every id must
    be an int or every id a string.
    """
    kinds = set()
    for t in types:
        if issubclass(t, (bool, np.bool_)):
            raise ValueError("group ids must be integers or strings, got a bool: True, False would merge with 1, 0")
        if issubclass(t, str):
            kinds.add("str")
        elif issubclass(t, bytes):
            kinds.add("bytes")
        else:
            kinds.add("int" if issubclass(t, (int, np.integer)) else t.__name__)
    if len(kinds) > 1 and (kinds & {"str", "bytes"} or objects):
        raise ValueError(
            f"group ids must be integers or strings of one type, got a mix of {sorted(kinds)}: "
            "'1' and 1 would silently become one group"
        )
    if objects and kinds and not kinds <= {"str", "bytes", "int"}:
        raise ValueError(f"group ids must be integers or strings, got {sorted(kinds)[0]}")


def _densify(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Map arbitrary integer ids to 0..K-1 (in increasing id order) and count each group."""
    lo_t, hi_t = torch.aminmax(ids)
    lo, hi = int(lo_t), int(hi_t)
    span = hi - lo + 1
    if span <= 4 * ids.numel() + 1024:
        # Ids in a compact range: a bincount and a cumulative sum relabel them in O(n).
        shifted = ids - lo if lo != 0 else ids
        counts_all = torch.bincount(shifted, minlength=span)
        present = counts_all > 0
        if bool(present.all()):  # already dense (0..K-1, every id used): nothing to relabel
            return shifted, counts_all
        relabel = torch.cumsum(present, dim=0) - 1
        return relabel.index_select(0, shifted), counts_all[present]
    _, index, counts = torch.unique(ids, return_inverse=True, return_counts=True)
    return index, counts
