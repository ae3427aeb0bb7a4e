import pytest

from grader.scoring import load_rubric, default_rubrics_dir


@pytest.fixture(scope="session")
def rubric_for():
    def load(assignment):
        return load_rubric(default_rubrics_dir() / f"{assignment}.yaml")
    return load
