"""The case store's field checks held at their edges (issue #29). Each test names the bug it was checked against."""

import pytest

from ctxui import casestore
from ctxui.casestore import CREATED_RANGE, CaseError, TEXT_LIMITS, _created, _text


@pytest.mark.parametrize("value, ok", [
    (0, True), (0.0, True), (-0.001, False), (4_102_444_799.9, True), (4_102_444_800, False),
    (1_700_000_000, True), (True, False), ("1700000000", False), (float("nan"), False), (None, False)])
def test_created_is_a_time_from_1970_up_to_but_not_including_2100(value, ok):
    """Plant: ``value <= hi`` (2100-01-01 itself accepted) and ``lo < value`` (0 refused)."""
    assert CREATED_RANGE == (0.0, 4_102_444_800.0)
    if ok:
        assert _created(value) == float(value) and type(_created(value)) is float
    else:
        with pytest.raises(CaseError) as err:
            _created(value)
        assert str(err.value).startswith("field 'created': must be a time in seconds since 1970, between 0 (1970) "
                                         "and 4,102,444,800 (2100) (got ")


@pytest.mark.parametrize("name", ["title", "tag", "note"])
def test_a_text_field_at_its_limit_is_kept_one_over_is_refused(name):
    """Plant: ``len(value) >= limit`` (a title of exactly 200 characters refused)."""
    limit = TEXT_LIMITS[name]
    assert _text({name: "t" * limit}, name) == "t" * limit
    with pytest.raises(CaseError) as err:
        _text({name: "t" * (limit + 1)}, name)
    assert str(err.value) == f"field '{name}': the {name} is longer than {limit:,} characters"


def test_limits_of_the_text_fields():
    assert (TEXT_LIMITS["title"], TEXT_LIMITS["note"], TEXT_LIMITS["tag"]) == (200, 20_000, 60)


def test_a_text_field_that_is_not_text_names_what_it_got():
    assert _text({}, "title") == "" and _text({"title": None}, "title") == ""
    with pytest.raises(CaseError) as err:
        _text({"title": ["x" * 50]}, "title")
    assert str(err.value) == "field 'title': must be text (got ['" + "x" * 35 + "...)"  # repr cut at 37


def test_choice_falls_back_to_its_default_and_names_the_allowed_values():
    assert casestore._choice({}, "tag", ("", "duplicates")) == ""
    assert casestore._choice({"tag": "duplicates"}, "tag", ("", "duplicates")) == "duplicates"
    with pytest.raises(CaseError) as err:
        casestore._choice({"tag": "nope"}, "tag", ("", "duplicates"))
    assert str(err.value) == "field 'tag': must be one of '', 'duplicates' (got 'nope')"
