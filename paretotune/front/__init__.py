"""One model of a run's Pareto front: :class:`FrontReport`, built once, rendered as text, JSON and a table.

``open_run`` is the one reader of a run directory (every command's); ``build_front(run_dir)`` reads a run;
``render_text`` is what ``paretotune front`` and the end of ``paretotune run`` print, ``render_json`` /
``front_document`` what ``--json`` and the service return, ``front_table`` what the API's ``Run.front()`` returns; the
HTML report draws its front table from the same model (:mod:`paretotune.report.build`).
"""
from __future__ import annotations

from paretotune.front.document import front_document, front_table, render_json
from paretotune.front.model import FrontReport, build_front, front_of
from paretotune.front.reader import load_run, open_run
from paretotune.front.text import render_text

__all__ = ["FrontReport", "build_front", "front_document", "front_of", "front_table", "load_run", "open_run",
           "render_json", "render_text"]
