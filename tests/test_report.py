"""The standalone HTML report (``uncertain-cep report``): content, atomic writes, errors,
and that a browser renders it."""

from __future__ import annotations

import base64
import html
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep import cli
from uncertain_cep.answer_files import read_answer
from uncertain_cep.report import html_report, write_html_report

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "datasets" / "sample" / "office_rfid.parquet"
QUERY = """PATTERN SEQ(A, NOT B, C)
DEFINE A AS tag = 'Room 401', B AS tag = 'Room 403', C AS tag = 'Room 405'
WITHIN 30
CONFIDENCE 0.3"""


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("report") / "ix"
    idx = uc.build_index(pd.read_parquet(SAMPLE), group_by="person", max_speed=2.0)
    idx.save(root)
    return root, idx


class _Outline(HTMLParser):
    """Headings, table rows, images and whether every opened block element closed."""

    BLOCKS = ("html", "head", "body", "table", "thead", "tbody", "tr", "div", "pre", "p")

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.headings: list[str] = []
        self.images: list[str] = []
        self.rows = 0
        self._heading = False

    def handle_starttag(self, tag, attrs):
        if tag in self.BLOCKS:
            self.open.append(tag)
        self.rows += tag == "tr"
        self._heading = tag == "h2"
        if tag == "img":
            self.images.append(dict(attrs)["src"])

    def handle_endtag(self, tag):
        if tag in self.BLOCKS:
            assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
            self.open.pop()
        self._heading = False

    def handle_data(self, data):
        if self._heading:
            self.headings.append(data)


def _outline(page: str) -> _Outline:
    outline = _Outline()
    outline.feed(page)
    outline.close()
    assert outline.open == []
    return outline


def test_the_report_holds_query_plan_timeline_answer_and_index(saved):
    _, idx = saved
    page, res = html_report(idx, QUERY, top=10, source="ix", table_file="answer.parquet")
    outline = _outline(page)
    assert outline.headings == ["Query", "Plan and counters", "Timeline", "Answer", "Index"]
    assert html.escape(QUERY) in page
    assert html.escape(res.summary()) in page and len(res) > 10
    steps = idx.explain(QUERY).steps
    # Plan steps + header, answer rows + header, and the index summary's own table.
    assert outline.rows >= (len(steps) + 1) + (10 + 1)
    assert f"the 10 most confident of {len(res)} rows" in page
    assert "answer.parquet" in page
    (image,) = outline.images
    png = base64.b64decode(image.removeprefix("data:image/png;base64,"))
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
    first = ", ".join(map(str, res["events"].iloc[0]))
    assert first in page
    assert "480 events in 12 groups" in page


def test_an_empty_answer_still_makes_a_report(saved):
    _, idx = saved
    page, res = html_report(idx, QUERY.replace("0.3", "1.0").replace("'Room 405'",
                                                                      "'Nowhere'"))
    assert len(res) == 0
    assert "No tuple reaches the confidence threshold." in page
    assert len(_outline(page).images) == 1


def test_cli_report_writes_the_page_and_the_full_answer(saved, tmp_path, capsys):
    root, idx = saved
    out, table = tmp_path / "r" / "report.html", tmp_path / "r" / "answer.csv"
    assert cli.main(["report", str(root), QUERY, "--out", str(out), "--table", str(table),
                     "--top", "5"]) == 0
    expected = idx.query(QUERY)
    assert f"{expected.summary()}; report written to {out}" in capsys.readouterr().out
    written = read_answer(table)
    assert written["events"].tolist() == expected["events"].tolist()
    np.testing.assert_allclose(written["confidence"], expected["confidence"], rtol=1e-12)
    page = out.read_text()
    assert "the 5 most confident of" in page
    assert sorted(p.name for p in out.parent.iterdir()) == ["answer.csv", "report.html"]


@pytest.mark.parametrize(("args", "message"), [
    (["--out", "report.pdf"], "argument --out: {tmp}/report.pdf must end in .html"),
    (["--out", "report.html", "--table", "answer.txt"],
     "argument --table: {tmp}/answer.txt must end in .parquet or .csv"),
    (["--out", "report.html", "--strategy", "fastest"],
     "argument --strategy: invalid choice: 'fastest'"),
])
def test_cli_report_refuses_bad_options_before_reading_the_index(tmp_path, capsys, args,
                                                                 message):
    # The index does not exist: the options must be refused first, as usage errors.
    with pytest.raises(SystemExit) as e:
        cli.main(["report", str(tmp_path / "missing"), QUERY,
                  *[str(tmp_path / a) if a.endswith((".html", ".pdf", ".txt")) else a
                    for a in args]])
    assert e.value.code == 2
    assert message.format(tmp=tmp_path) in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_malformed_query_is_refused_with_its_position(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path), "PATTERN SEQ(A,", "--out",
                     str(tmp_path / "r.html")]) == 1
    assert "line 1, column" in capsys.readouterr().err


def test_a_failed_write_keeps_the_old_report(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    write_html_report(target, "<p>old</p>")

    def broken(self, *args, **kwargs):
        Path.write_bytes(self, b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(Path, "write_text", broken)
    with pytest.raises(OSError, match="disk full"):
        write_html_report(target, "<p>new</p>")
    assert target.read_bytes() == b"<p>old</p>"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_chromium_renders_the_report(saved, tmp_path):
    _, idx = saved
    page, _ = html_report(idx, QUERY)
    (tmp_path / "report.html").write_text(page)
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                    "--window-size=1200,1600", f"--screenshot={shot}",
                    (tmp_path / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (1600, 1200)
    # Rendered, not blank: a good share of the page is text, tables and the timeline.
    assert (pixels[..., :3].mean(axis=2) < 0.9).mean() > 0.02
    assert re.search(r"<img alt='timeline", page)
