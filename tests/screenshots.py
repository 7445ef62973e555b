"""Screenshots that are byte-stable, for the pictures the README shows (docs/lab.png, docs/chat.png)."""

from __future__ import annotations

import math


def stable_png(page, locator, tries: int = 10) -> bytes:
    """A screenshot of ``locator``, cropped to the whole pixels inside it (a fractional
    edge would show a line of what lies below), taken until two in a row are
    byte-identical (nothing is still drawing)."""
    def shot() -> bytes:
        box = locator.bounding_box()
        x, y = math.ceil(box["x"]), math.ceil(box["y"])
        clip = {"x": x, "y": y, "width": math.floor(box["x"] + box["width"]) - x,
                "height": math.floor(box["y"] + box["height"]) - y}
        return page.screenshot(clip=clip, animations="disabled", caret="hide")

    last = shot()
    for _ in range(tries):
        page.wait_for_timeout(150)
        now = shot()
        if now == last:
            return now
        last = now
    raise AssertionError("the page never stopped changing: no stable screenshot")
