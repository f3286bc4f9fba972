"""The small TOML writer used for dict configs round-trips through tomllib."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.cli import _count
from tessera.config import dumps_toml, flatten, loads_toml

keys = st.text(min_size=1, max_size=8)
scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)
documents = st.dictionaries(keys, values, max_size=6)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_round_trip(doc):
    assert loads_toml(dumps_toml(doc)) == doc


def test_none_is_left_out_and_nan_survives():
    back = loads_toml(dumps_toml({"a": None, "b": {"c": float("nan"), "d": None}}))
    assert "a" not in back and "d" not in back["b"]
    assert math.isnan(back["b"]["c"])


def test_flatten():
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": "x"}, "config.") == {
        "config.a.b": 1,
        "config.a.c": "[1,2]",
        "config.d": "x",
    }


@pytest.mark.parametrize(("text", "n"), [("1000", 1000), ("1_000_000", 10**6), ("50M", 5 * 10**7), ("2k", 2000)])
def test_count_argument(text, n):
    assert _count(text) == n
