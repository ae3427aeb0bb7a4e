"""What the checks measure reaches result.json as each assignment's `measurements`."""
from grader.scoring.check_results import measurements as collect_measurements


def test_measurements_of_several_cases_merge():
    report = {"tests": [
        {"metadata": {"check": "hw3.task4.all_gpus_hold_layers",
                      "measured": {"task4": {"2": {"step_time_ms": 13.0}}}}},
        {"metadata": {"check": "hw3.task4.all_gpus_hold_layers",
                      "measured": {"task4": {"5": {"step_time_ms": 14.0}}}}},
        {"metadata": {"check": "hw3.task1.layout", "measured": {"task1.layers_per_gpu": [3, 3]}}},
        {"metadata": {"check": "hw3.task2.trend"}},
        {"nodeid": "no metadata at all"},
    ]}
    assert collect_measurements(report) == {
        "task4": {"2": {"step_time_ms": 13.0}, "5": {"step_time_ms": 14.0}},
        "task1.layers_per_gpu": [3, 3]}
