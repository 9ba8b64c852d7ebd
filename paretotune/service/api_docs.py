"""The service's API reference as one self-contained HTML page, rendered from its OpenAPI schema.

FastAPI's own ``/docs`` (Swagger UI) loads its scripts and styles from a CDN, so it is blank on a machine
without internet access, and no installed package ships those assets. This page lists every endpoint with
its method, summary, parameters, request body types and responses; ``/openapi.json`` stays the full schema.
"""
from __future__ import annotations

import html
import json
from typing import Any

STYLE = ("body{font:14px/1.45 system-ui,sans-serif;margin:24px;max-width:980px}code{background:#f3f3f3;padding:1px 4px}"
         ".op{border:1px solid #ddd;border-radius:4px;margin:10px 0;padding:8px 12px}.m{font-weight:bold;"
         "display:inline-block;min-width:60px}.get{color:#06c}.post{color:#080}.delete{color:#b00}"
         "pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:260px}")


def render_api_docs(schema: dict[str, Any]) -> str:
    """One HTML page: the API's title and description, then one block per operation."""
    info = schema.get("info", {})
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(info.get('title', 'API'))} API</title>"
             f"<style>{STYLE}</style></head><body><h1>{_e(info.get('title', 'API'))} API "
             f"<small>v{_e(info.get('version', ''))}</small></h1><p>{_e(info.get('description', ''))}</p>"
             "<p>Machine-readable schema: <a href='/openapi.json'>/openapi.json</a>. Send "
             "<code>Authorization: Bearer TOKEN</code> when the server has a token.</p>"]
    for path, ops in schema.get("paths", {}).items():
        for method, op in ops.items():
            parts.append(_operation(path, method, op))
    parts.append("</body></html>")
    return "".join(parts)


def _operation(path: str, method: str, op: dict[str, Any]) -> str:
    out = [f"<div class='op'><span class='m {_e(method)}'>{_e(method.upper())}</span> <code>{_e(path)}</code>"
           f" &mdash; {_e(op.get('summary', ''))}"]
    if op.get("description"):
        out.append(f"<p>{_e(op['description'])}</p>")
    params = op.get("parameters", [])
    if params:
        out.append("<p>parameters: " + ", ".join(
            f"<code>{_e(p.get('name'))}</code> ({_e(p.get('in'))}{', required' if p.get('required') else ''})"
            for p in params) + "</p>")
    body = op.get("requestBody", {}).get("content", {})
    if body:
        out.append("<p>body: " + ", ".join(f"<code>{_e(t)}</code>" for t in body) + "</p>")
    responses = op.get("responses", {})
    if responses:
        out.append("<p>responses: " + ", ".join(
            f"{_e(code)} {_e(r.get('description', ''))}" for code, r in responses.items()) + "</p>")
    return "".join(out) + "</div>"


def _e(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else json.dumps(value))
