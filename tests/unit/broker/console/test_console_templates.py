"""The console's templates build URLs only through the ``segment`` filter (broker/console/pages.py)."""

from __future__ import annotations

import re

import pytest

from halfmq.broker.console.pages import HERE, path_segment
from tests.support.crafted_names import CRAFTED, steering_name

URL_ATTRIBUTE = re.compile(r'\b(?:href|src|action|hx-get|hx-post|hx-put|hx-patch|hx-delete)="([^"]*)"')
EXPRESSION = re.compile(r"{{(.*?)}}")
TEMPLATES = sorted((HERE / "templates").glob("*.html"))


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.name for t in TEMPLATES])
def test_every_value_a_template_puts_into_a_url_goes_through_the_segment_filter(template) -> None:
    for url in URL_ATTRIBUTE.findall(template.read_text()):
        for expression in EXPRESSION.findall(url):
            assert re.search(r"\|\s*segment\s*$", expression), f"{template.name}: {url} puts {expression.strip()!r} in unencoded"


def test_the_templates_build_urls_at_all() -> None:  # the audit above is not vacuous
    found = [u for t in TEMPLATES for u in URL_ATTRIBUTE.findall(t.read_text()) if "{{" in u]
    assert len(found) >= 6


@pytest.mark.parametrize("name", [*CRAFTED.values(), "a/b", "x y?z"], ids=[*CRAFTED, "slash", "query"])
def test_a_segment_holds_no_separator_a_browser_would_act_on(name: str) -> None:
    segment = path_segment(name)
    assert not set(segment) & set("/\\?#<>\"' \t\n\x00")
    assert all(c.isascii() and c.isprintable() for c in segment)


def test_the_steering_name_stays_one_segment_under_the_transactional_id() -> None:
    name = steering_name("C0A8000100002A9F0000000000000000")
    assert path_segment(name) == "..%5Ctransactions%5CC0A8000100002A9F0000000000000000%5Crollback%23"

