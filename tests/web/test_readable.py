"""The workflow pages say what their numbers are: publication dates, the columns explained (``kept``),
units, one y-range over the charts that are compared, and each chart's runs as text (keyboard, not only
hover)."""

from __future__ import annotations

import re

from tests.web.test_workflows import section


def test_each_version_says_when_it_was_published(seeded, client) -> None:
    html = client.get("/workflows/max-cut").text
    assert re.search(r'<p class="published" id="published">published <time datetime="[^"]+">\d{4}-\d\d-\d\d '
                     r"\d\d:\d\d UTC</time></p>", html)  # fmt: skip
    versions = section(html, "versions")
    assert len(re.findall(r'<time class="published" datetime=', versions)) == 2
    card = client.get("/workflows").text
    assert re.search(r'published <time datetime="[^"]+">\d{4}-\d\d-\d\d</time>', card)


def test_the_kept_column_is_explained_and_times_have_units(seeded, client) -> None:
    html = client.get("/workflows/max-cut").text
    noise = section(html, "noise-model-estimate")
    assert "title=\"share of shots kept by the method's own error checks" in noise
    assert "kept: the share of shots the method's own error checks kept" in noise
    assert '<th class="num">time (s)</th>' in section(html, "track-record")
    assert "recorded (UTC)" in section(html, "earlier-results")


def test_the_charts_share_one_y_range_and_list_their_runs(seeded, client) -> None:
    charts = section(client.get("/workflows/max-cut").text, "case-histories")
    figures = re.findall(r'<figure class="chart".*?</figure>', charts, re.S)
    assert len(figures) == 6
    ranges = {tuple(re.findall(r'text-anchor="end" font-size="11" fill="#5b6472">(\d+)%</text>', f))
              for f in figures}  # fmt: skip
    assert len(ranges) == 1, ranges  # the same axis on every chart
    ring = next(f for f in figures if 'data-case="ring-6-with-chord" data-target="sim-cpu"' in f)
    runs = re.search(r'<details class="runs"><summary>3 runs</summary>(.*?)</details>', ring, re.S).group(1)
    assert runs.count("<li>") == 3 and "accuracy 96.0%" in runs and " UTC · " in runs
