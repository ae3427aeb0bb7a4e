"""Report PDFs built once per session, shared by the tests in this folder.

Building with LibreOffice or a browser takes seconds, so each PDF is made the
first time a test asks for it and cached in a session tmp dir.
"""

from __future__ import annotations

import pytest

from report_builders import BUILDS, ToolMissing


@pytest.fixture(scope="session")
def built_report(tmp_path_factory):
    """built_report(name) -> (variant, PDF path); skips when the tool is not installed."""
    cache: dict[str, object] = {}

    def get(name: str):
        if name not in cache:
            variant, build = BUILDS[name]
            workdir = tmp_path_factory.mktemp(name)
            try:
                cache[name] = (variant, build(workdir, variant))
            except ToolMissing as missing:
                cache[name] = missing
            except Exception as error:  # remembered, so a broken tool fails its tests fast
                cache[name] = error
        result = cache[name]
        if isinstance(result, ToolMissing):
            pytest.skip(str(result))
        if isinstance(result, Exception):
            raise result
        return result

    return get
