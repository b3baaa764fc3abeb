"""The rank-1 share of a weight update against hand-built low-rank matrices."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fade.geometry import rank1_share


def test_rank_one_update_has_share_one():
    u, v = torch.randn(18, 1, dtype=torch.float64), torch.randn(1, 128, dtype=torch.float64)
    assert rank1_share(u @ v) == pytest.approx(1.0, abs=1e-12)


def test_isotropic_update_has_share_one_over_rank():
    q, _ = torch.linalg.qr(torch.randn(64, 16, dtype=torch.float64))
    assert rank1_share(q) == pytest.approx(1 / 16, rel=1e-10)  # 16 equal singular values


def test_hand_built_spectrum():
    # U diag(3, 2, 1) V^T: share = 9 / (9 + 4 + 1)
    u, _ = torch.linalg.qr(torch.randn(10, 3, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(7, 3, dtype=torch.float64))
    w = u @ torch.diag(torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64)) @ v.T
    assert rank1_share(w) == pytest.approx(9 / 14, rel=1e-10)
    assert rank1_share(w.float()) == pytest.approx(9 / 14, rel=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8), st.integers(1, 8), st.floats(1e-150, 1e150), st.integers(0, 2**31 - 1))
def test_share_is_scale_free_and_bounded(m, n, scale, seed):
    w = torch.randn(m, n, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    share = rank1_share(w)
    assert 1 / min(m, n) - 1e-12 <= share <= 1 + 1e-12
    assert rank1_share(w * scale) == pytest.approx(share, rel=1e-9)


def test_zero_update_and_bad_input():
    assert rank1_share(torch.zeros(3, 4)) == 0.0
    with pytest.raises(ValueError, match="2-D"):
        rank1_share(torch.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        rank1_share(torch.tensor([[1.0, math.nan]]))
    with pytest.raises(ValueError, match="non-empty"):
        rank1_share(torch.zeros(0, 3))
