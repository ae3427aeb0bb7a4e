import pytest

from tests.support.report_fixtures import fresh


@pytest.fixture
def result():
    """fresh(name): a result.json fixture as a copy the test may edit."""
    return fresh
