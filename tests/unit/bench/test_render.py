"""The terminal table's ratio column: an in-run baseline's ratio, or a ratio to another case of the same run."""

from __future__ import annotations

from halfmq.bench.render import ratio_text


def test_a_case_with_an_in_run_baseline_shows_that_ratio() -> None:
    assert ratio_text({"ratio": 0.5, "baseline": "fastapi_c64", "vs_sdk": 0.9}) == "0.50× fastapi_c64"


def test_a_case_compared_with_another_case_of_its_run_shows_that_ratio() -> None:
    assert ratio_text({"vs_sdk": 0.784}) == "0.78× sdk (same run)"
    assert ratio_text({"vs_jdbc": 0.292}) == "0.29× jdbc (same run)"


def test_a_case_without_a_comparison_shows_none() -> None:
    assert ratio_text({"vs_sdk": None}) == "—" and ratio_text({}) == "—"
