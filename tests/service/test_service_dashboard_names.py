"""Issue 45, defect 7: campaign names that are markup, submitted to a real ``paretotune serve`` and shown by its
dashboard (and in a finished campaign's report) in headless Chromium, stay text: no payload runs and none
becomes an element.

A name is a label, so the server accepts such names where they pass the name rule (no '/', '\\', '..' or
control character: one payload below has a '/' and is refused); the pages must escape them. Each runnable
payload appends a marker to ``document.title``, which Chromium's ``--dump-dom`` shows after the page's scripts
ran. A control page puts the same names into a table through ``innerHTML`` without escaping, in the same
browser: there every runnable marker appears, so the check would catch an escape that stopped working.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path


from tests.browsers import chromium
from tests.service.conftest import Server, small_campaign

# name -> the marker it appends to document.title when it runs as markup ("" : inert through innerHTML, which
# never runs <script>, so only the DOM check below covers it)
PAYLOADS = {
    "<img src=x onerror=\"document.title+='|img'\">": "|img",
    "<svg onload=\"document.title+='|svg'\">": "|svg",
    "<details open ontoggle=\"document.title+='|details'\">": "|details",
    "\"><img src=x onerror=\"document.title+='|dquote'\">": "|dquote",  # breaks out of a "..." attribute
    "'><img src=x onerror='document.title+=`|squote`'>": "|squote",  # breaks out of a '...' attribute
    "<iframe src=\"javascript:parent.document.title+='|jsurl'\"></iframe>": "",  # has '/': refused
    "<iframe src=\"javascript:parent.document.title+='|jsurl'\">": "|jsurl",  # a javascript: URL, no click
    "<script>document.title+='|script'": "",
    "&lt;img src=x onerror=\"document.title+='|entity'\"&gt;": "",  # escaped once must not become markup
}


def dump_dom(url: str, home: Path) -> str:
    """The page's DOM after its scripts ran for 8 s of virtual time (the dashboard polls every second)."""
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=8000",
                           f"--user-data-dir={home / 'profile'}", "--dump-dom", url], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, HOME=str(home)), check=False)
    assert proc.returncode == 0 and "</html>" in proc.stdout, proc.stderr[-3000:]
    return proc.stdout


class Cells(HTMLParser):
    """The document's title (the ``<title>`` in ``<head>``: an SVG ``<title>``, a point's tooltip in the
    dashboard's plot, is not it), and each ``<td>`` and ``<h1>``: its tag, its text and the tags of any elements
    inside it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title, self._in_title, self._in_head = "", False, False
        self.cells: list[tuple[str, str, list[str]]] = []
        self._cell: tuple[str, list[str], list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "head":
            self._in_head = True
        elif tag == "title" and self._in_head:
            self._in_title = True
        elif tag in ("td", "h1") and self._cell is None:
            self._cell = (tag, [], [])
        elif self._cell is not None:
            self._cell[2].append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self._in_head = False
        elif tag == "title":
            self._in_title = False
        elif self._cell is not None and tag == self._cell[0]:
            self.cells.append((tag, "".join(self._cell[1]), self._cell[2]))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._cell is not None:
            self._cell[1].append(data)


def parse(dom: str) -> Cells:
    cells = Cells()
    cells.feed(dom)
    return cells


def test_markup_in_campaign_names_stays_text_in_the_dashboard(start_server: Callable[..., Server],
                                                              tmp_path: Path) -> None:
    chromium()
    server = start_server()
    accepted = {}
    for name in PAYLOADS:
        r = server.client.post("/campaigns", content=small_campaign(name=name),
                               headers={"content-type": "application/yaml"})
        if "/" in name:  # the name rule: a name is never a path
            assert r.status_code == 422 and r.json()["detail"]["field"] == "name", r.text
            continue
        assert r.status_code == 201, r.text
        accepted[r.json()["id"]] = name
    for cid in accepted:  # nothing needs to run: the names are what is shown
        assert server.client.post(f"/campaigns/{cid}/cancel", json={}).status_code == 200
    listed = {c["id"]: c["name"] for c in server.client.get("/campaigns").json()["campaigns"]}
    assert listed == accepted  # the API returns each name as it was sent

    page = parse(dump_dom(f"{server.url}/", tmp_path / "dashboard"))
    assert page.title == "paretotune", f"a name ran as script: title {page.title!r}"
    shown = {text: tags for tag, text, tags in page.cells if tag == "td" and text in accepted.values()}
    assert set(shown) == set(accepted.values()), f"names not shown as text: {set(accepted.values()) - set(shown)}"
    assert all(tags == [] for tags in shown.values()), f"a name became elements: {shown}"

    # the control: the same names unescaped through innerHTML, in a cell and in an attribute, in the same browser
    names = json.dumps(list(accepted.values())).replace("<", "\\u003c")
    control = tmp_path / "control.html"
    control.write_text(
        "<!doctype html><html><head><title>control</title></head><body><table><tbody id=b></tbody></table><script>"
        f"document.getElementById('b').innerHTML = {names}.map(n => `<tr title=\"${{n}}\"><td>${{n}}</td>` + "
        "`<td title='${n}'>x</td></tr>`).join('');</script></body></html>")
    ran = parse(dump_dom(control.as_uri(), tmp_path / "control"))
    expected = {marker for name, marker in PAYLOADS.items() if marker and name in accepted.values()}
    assert expected and all(marker in ran.title for marker in expected), (expected, ran.title)
    assert any(tags for _, _, tags in ran.cells)


def test_markup_in_a_campaign_name_stays_text_in_its_report(start_server: Callable[..., Server],
                                                            tmp_path: Path) -> None:
    """The report the server serves (its own origin, like the dashboard) shows the name in its title and heading:
    a finished CPU quickstart named with a payload that breaks out of an attribute and runs on load."""
    chromium()
    server = start_server()
    name = next(n for n, marker in PAYLOADS.items() if marker == "|dquote")
    cid = server.submit(small_campaign(name=name))
    st = server.wait(cid, lambda s: s["status"] in {"done", "failed", "cancelled"}, limit_s=300)
    assert st["status"] == "done", st
    page = parse(dump_dom(f"{server.url}/campaigns/{cid}/report", tmp_path / "report"))
    assert page.title == f"paretotune report: {name}", f"the name ran as script: title {page.title!r}"
    assert [(text, tags) for tag, text, tags in page.cells if tag == "h1"] == [(f"paretotune report: {name}", [])]
