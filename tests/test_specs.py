"""The spec grammar: parse, format, identity and building an estimator from text."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import fade
from fade.specs import format_spec, identity, merge_params, parse_spec, parse_value


def test_parse_value_types():
    assert parse_value("3") == 3 and isinstance(parse_value("3"), int)
    assert parse_value("0.5") == 0.5
    assert parse_value("1e-4") == 1e-4
    assert parse_value("true") is True and parse_value("False") is False
    assert parse_value("none") is None
    assert parse_value("population") == "population"


@pytest.mark.parametrize("text", ["grpo:eps=1e-4:std=population", "grpo:eps=1e-4,std=population",
                                  " grpo : eps = 1e-4 , std = population "])
def test_both_separators_read_the_same(text):
    assert parse_spec(text) == ("grpo", {"eps": 1e-4, "std": "population"})


@pytest.mark.parametrize("bad", ["", ":alpha=3", "power:alpha", "power:alpha=1:alpha=2", "po-wer", "power:=3", 3])
def test_bad_specs_are_refused_with_the_grammar(bad):
    with pytest.raises(ValueError, match="spec|parameter"):
        parse_spec(bad)


_values = st.one_of(
    st.integers(-10**6, 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.sampled_from(["population", "group", "batch"]),
)


@given(st.dictionaries(st.from_regex(r"[a-z][a-z_0-9]{0,8}", fullmatch=True), _values, max_size=4))
def test_format_then_parse_is_the_identity(params):
    name, back = parse_spec(format_spec("power", params))
    assert name == "power"
    assert back == params
    assert {k: type(v) for k, v in back.items()} == {k: type(v) for k, v in params.items()}


def test_format_is_canonical_and_refuses_unreadable_strings():
    assert (
        format_spec("power", {"alpha": 3, "k": 2}) == format_spec("power", {"k": 2, "alpha": 3}) == "power:alpha=3:k=2"
    )
    assert format_spec("power", {"alpha": 3.0, "eps": 1e-4}) == "power:alpha=3.0:eps=0.0001"
    with pytest.raises(ValueError, match="read back"):
        format_spec("grpo", {"std": "a,b"})
    with pytest.raises(ValueError, match="read back"):
        format_spec("grpo", {"std": "3"})


def test_identity_fills_defaults():
    assert identity("asym_grpo") == identity("asym_grpo", {"delta": 0.5})
    assert identity("power", {"alpha": 3}) == identity("power", {"alpha": 3.0})
    assert identity("power", {"alpha": 3}) != identity("power")
    with pytest.raises(ValueError, match=r"got unknown parameter\(s\) \[.beta.\]; accepted \(with defaults\): alpha="):
        identity("power", {"beta": 1})
    with pytest.raises(ValueError, match="unknown estimator"):
        identity("powr")


def test_estimator_from_spec_builds_the_named_estimator():
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    est = fade.estimator_from_spec("power:alpha=3")
    assert est.name == "power" and est.params["alpha"] == 3
    torch.testing.assert_close(est(r, 4), fade.advantages("power", r, 4, alpha=3))
    assert fade.estimator_from_spec("grpo", eps=1e-4).params["eps"] == 1e-4
    assert fade.estimator_from_spec("power:alpha=3", alpha=3).params["alpha"] == 3  # the same value twice is fine


@pytest.mark.parametrize(("text", "extra", "match"), [
    ("powr:alpha=3", {}, "unknown estimator 'powr'"),
    ("power:beta=3", {}, "unknown parameter"),
    ("power:alpha=-1", {}, "alpha must be >= 0"),
    ("power:alpha=3", {"alpha": 2}, "given twice with different values: alpha=3 and alpha=2"),
])
def test_estimator_from_spec_errors_quote_the_spec(text, extra, match):
    with pytest.raises(ValueError, match="estimator spec") as info:
        fade.estimator_from_spec(text, **extra)
    assert match in str(info.value)


def test_merge_params():
    assert merge_params({"a": 1}, {"b": 2}) == {"a": 1, "b": 2}
    with pytest.raises(ValueError, match="a=1 and a=2"):
        merge_params({"a": 1}, {"a": 2})


def test_a_list_of_specs_keeps_each_spec_whole_for_every_command():
    """The spec grammar's own example has a comma inside one spec: every --estimators list (analyze,
    atlas, sweep) splits with fade.specs.split_specs, which keeps it whole."""
    from fade.specs import SPEC_SYNTAX, split_specs

    assert "grpo:eps=1e-4,std=population" in SPEC_SYNTAX
    assert split_specs("grpo:eps=1e-4,std=population,dr_grpo") == ["grpo:eps=1e-4,std=population", "dr_grpo"]
    assert split_specs("power:alpha=3, fade") == ["power:alpha=3", "fade"]
    with pytest.raises(ValueError, match="--estimators 'grpo,,fade' has an empty spec"):
        split_specs("grpo,,fade")
    with pytest.raises(ValueError, match="starts with a parameter 'eps=1'"):
        split_specs("eps=1,grpo", option="--estimators")
