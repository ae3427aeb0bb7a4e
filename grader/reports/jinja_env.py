"""The Jinja environment every rendered report shares (grader/reports/templates/)."""
from __future__ import annotations

import re
from functools import lru_cache

import jinja2


@lru_cache(maxsize=2)
def environment(autoescape: bool) -> jinja2.Environment:
    """Autoescaping for HTML; off for Markdown, whose templates put student text through the
    `fence` and `md` filters instead (grader/reports/render.py)."""
    from grader.reports.formatting import format_points
    from grader.reports.render import fence, markdown_inline
    env = jinja2.Environment(loader=jinja2.PackageLoader("grader.reports", "templates"),
                             autoescape=autoescape, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["fence"] = fence
    env.filters["md"] = markdown_inline
    env.filters["points"] = format_points
    return env


def tidy(text: str) -> str:
    """Templates stay readable with blank lines around blocks; the output keeps at most one."""
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
