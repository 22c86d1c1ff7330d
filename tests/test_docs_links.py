"""Every relative link of the README, the CHANGELOG and docs/ points at a file
that exists, and every #anchor at a heading of its target (GitHub's slugs,
which MyST's `myst_heading_anchors` makes too), so the pages read the same on
GitHub, in an sdist and in the Sphinx build."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md"),
                *(ROOT / "docs").glob("bench/README.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*?|_(?=\w)", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    text = FENCE.sub("", path.read_text())
    return {slug(m) for m in re.findall(r"^#{1,6} +(.+?) *#*$", text, re.M)}


def links(path):
    """(line, target) of every link outside code blocks and inline code."""
    text = path.read_text()
    blanked = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    blanked = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), blanked)
    for m in LINK.finditer(blanked):
        yield blanked[:m.start()].count("\n") + 1, m.group(1)


def test_the_slugs_are_githubs():
    assert slug("Two GPUs at full speed (stop 25)") == "two-gpus-at-full-speed-stop-25"
    assert slug("cuatomic.dask on one GPU (dask-cuda)") == "cuatomicdask-on-one-gpu-dask-cuda"
    assert slug("Interop, transfers and call latency") == "interop-transfers-and-call-latency"
    assert slug('method="auto"') == "methodauto"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(page):
    if not page.exists():
        pytest.skip(f"{page.name} not in this tree")
    broken = []
    for line, target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        where = f"{page.relative_to(ROOT)}:{line}: {target}"
        if not dest.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{where} (no heading with that anchor in {dest.name})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) `[code](nope.md)`\n\n```\n[x](nope.md)\n```\n")
    found = list(links(page))
    assert [t for _, t in found] == ["#title", "missing.md"]
    assert anchors(page) == {"title"}
