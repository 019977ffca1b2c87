"""Readable contrast of the page's colours (WCAG 2 contrast ratio, relative luminance of sRGB):
text at least 7:1 on its background, phase chips at least 4.5:1 (the AA level for text)."""

from __future__ import annotations

import re

import pytest

from tests.abuse.server import REPO

CSS = (REPO / "server" / "workload_map" / "api" / "static" / "app.css").read_text(encoding="utf-8")


def luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def ratio(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def var(name: str) -> str:
    found = re.search(rf"--{name}: (#[0-9a-f]{{6}})", CSS)
    assert found, name
    return found[1]


def test_the_ratio_matches_known_values() -> None:
    assert ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert ratio("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # the usual AA grey


@pytest.mark.parametrize("fg, bg", [("fg", "bg"), ("muted", "bg"), ("muted", "band"), ("accent", "bg"),
                                    ("fg", "band")])
def test_text_colours_reach_seven_to_one(fg: str, bg: str) -> None:
    assert ratio(var(fg), var(bg)) >= 7.0


def test_every_phase_chip_reaches_four_and_a_half_to_one() -> None:
    chips = re.findall(r"\.phase-[a-z, .-]+\{ color: (#[0-9a-f]{6}); background: (#[0-9a-f]{6}); \}", CSS)
    assert len(chips) == 7  # running, completed, failed, degraded, initializing..., suspended..., undefined...
    for colour, background in chips:
        assert ratio(colour, background) >= 4.5, (colour, background)


@pytest.mark.parametrize("box", ["error-box", "warn-box", "ok-box"])
def test_message_boxes_reach_seven_to_one(box: str) -> None:
    found = re.search(rf"\.{box} \{{[^}}]*background: (#[0-9a-f]{{6}}); color: (#[0-9a-f]{{6}})", CSS)
    assert found, box
    assert ratio(found[2], found[1]) >= 7.0
