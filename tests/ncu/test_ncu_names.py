"""Range names: reversible, unique, and made only of characters ncu's NVTX filter and CSV treat literally."""
from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paretotune.ncu.names import check_safe, escape_part, parse_range_name, range_name, unescape_part


def test_examples() -> None:
    assert range_name(12, "4096x4096") == "pt_12_4096x4096"
    assert range_name(3, "M=64,N=8") == "pt_3_M-3d64-2cN-3d8"
    assert range_name("c-1", "a_b") == "pt_c-2d1_a-5fb"
    assert parse_range_name("pt_3_M-3d64-2cN-3d8") == ("3", "M=64,N=8")
    assert parse_range_name("cand_1") is None
    assert parse_range_name("pt_1_a_b") is None


@given(st.one_of(st.integers(), st.text(max_size=12)), st.text(max_size=20))
def test_round_trip_and_safe(candidate: int | str, shape: str) -> None:
    name = range_name(candidate, shape)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", name)
    assert name.count("_") == 2
    assert parse_range_name(name) == (str(candidate), shape)


@given(st.text(max_size=8))
def test_escape_round_trip(text: str) -> None:
    assert unescape_part(escape_part(text)) == text


def test_distinct_items_get_distinct_names() -> None:
    shapes = ["a_b", "a-b", "a b", "a.b", "a:b", "a/b", "a@b", "ab", "a-5fb", "a_5fb", ""]
    ids = [1, "1", "1_", 11, "1-1"]
    names = {range_name(c, s) for c, s in itertools.product(ids, shapes)}
    assert len(names) == len({(str(c), s) for c, s in itertools.product(ids, shapes)})


def test_check_safe() -> None:
    assert check_safe("paretotune", "domain") == "paretotune"
    for bad in ("a:b", "a/b", "a@b", "a b", 'a"b', "", "a*"):
        with pytest.raises(ValueError, match="letters, digits"):
            check_safe(bad, "domain")
