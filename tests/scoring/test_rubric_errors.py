"""A broken rubric fails on load with a message naming the file, the item and the field."""
import textwrap

import pytest

from grader.scoring import RubricError, load_rubric, parse_rubric

GOOD = """\
assignment: hw3
title: "HW3"
version: "1"
gpus: 5
items:
  - id: hw3.task1
    title: "Task 1"
    points: 3
    checks:
      - {check: hw3.task1.layout, points: 2, partial: proportional}
      - {check: hw3.task1.transfer, points: 1}
  - id: hw3.task2
    title: "Task 2"
    points: 3
    checks:
      - {check: hw3.task2.trend, points: 3}
  - id: hw3.task2.explanation
    title: "Task 2 - written"
    kind: manual
    points: 0
"""


@pytest.fixture
def write_rubric(tmp_path, monkeypatch):
    """Write a rubric at rubrics/hw3.yaml (relative), so messages show that path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rubrics").mkdir()

    def write(text, name="hw3.yaml"):
        path = tmp_path / "rubrics" / name
        path.write_text(textwrap.dedent(text))
        return f"rubrics/{name}"
    return write


def load_error(write_rubric, text, name="hw3.yaml") -> str:
    with pytest.raises(RubricError) as info:
        load_rubric(write_rubric(text, name))
    return str(info.value)


def test_good_rubric_loads(write_rubric):
    rubric = load_rubric(write_rubric(GOOD))
    assert rubric.total_points == 6
    assert rubric.item("hw3.task1").checks[0].partial == "proportional"
    assert rubric.item("hw3.task1").checks[1].when_skipped == "exclude"


def test_a_rubric_edited_at_once_is_read_again(write_rubric):
    """Rubrics are parsed once per text (the batch reads them for every submission): an edit
    of the same size within the file system's time resolution is still seen."""
    first = load_rubric(write_rubric(GOOD))
    edited = GOOD.replace('title: "Task 1"', 'title: "Task 9"')
    assert len(edited) == len(GOOD)
    second = load_rubric(write_rubric(edited))
    assert (first.item("hw3.task1").title, second.item("hw3.task1").title) == ("Task 1", "Task 9")
    assert load_rubric(write_rubric(GOOD)).item("hw3.task1").title == "Task 1"


def test_points_as_text(write_rubric):
    text = GOOD.replace("{check: hw3.task2.trend, points: 3}", "{check: hw3.task2.trend, points: three}")
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: item 'hw3.task2': checks[0].points must be a non-negative number, got 'three'")


def test_missing_check_points(write_rubric):
    text = GOOD.replace("{check: hw3.task2.trend, points: 3}", "{check: hw3.task2.trend}")
    assert load_error(write_rubric, text) == "rubrics/hw3.yaml: item 'hw3.task2': checks[0].points is required"


def test_missing_manual_points(write_rubric):
    text = GOOD.replace("    kind: manual\n    points: 0\n", "    kind: manual\n")
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: item 'hw3.task2.explanation': points is required for a manual item (0 is allowed)")


def test_boolean_points_are_not_numbers(write_rubric):
    text = GOOD.replace("{check: hw3.task1.transfer, points: 1}", "{check: hw3.task1.transfer, points: yes}")
    assert "checks[1].points must be a non-negative number, got True" in load_error(write_rubric, text)


def test_duplicate_item_ids(write_rubric):
    text = GOOD.replace("id: hw3.task2\n", "id: hw3.task1\n").replace("hw3.task2.trend", "hw3.task1.other")
    assert load_error(write_rubric, text) == "rubrics/hw3.yaml: item 'hw3.task1': duplicate item id"


def test_check_scored_twice(write_rubric):
    text = GOOD.replace("hw3.task2.trend", "hw3.task1.layout")
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: item 'hw3.task2': check 'hw3.task1.layout' is already scored by item 'hw3.task1'")


def test_bad_partial(write_rubric):
    text = GOOD.replace("partial: proportional", "partial: some")
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: item 'hw3.task1': checks[0].partial must be one of all, proportional, got 'some'")


def test_unknown_check_key(write_rubric):
    text = GOOD.replace("{check: hw3.task1.transfer, points: 1}", "{check: hw3.task1.transfer, points: 1, weight: 2}")
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: item 'hw3.task1': checks[1] has unknown key 'weight' "
        "(allowed: check, partial, points, when_skipped)")


def test_unknown_top_level_key(write_rubric):
    message = load_error(write_rubric, GOOD.replace("gpus: 5", "gpus: 5\ngpu: 5"))
    assert message.startswith("rubrics/hw3.yaml: unknown key 'gpu' (allowed: ")


def test_bad_yaml(write_rubric):
    message = load_error(write_rubric, GOOD.replace('title: "HW3"', 'title: "HW3'))
    assert message.startswith("rubrics/hw3.yaml: not valid YAML: ")
    assert "line" in message  # PyYAML's position, so the author can find it


def test_item_points_must_match_its_checks(write_rubric):
    text = GOOD.replace("    points: 3\n    checks:\n      - {check: hw3.task2.trend", "    points: 4\n    checks:\n      - {check: hw3.task2.trend")
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: item 'hw3.task2': points is 4 but its checks add up to 3")


def test_item_points_may_be_left_to_its_checks(write_rubric):
    text = GOOD.replace("    points: 3\n    checks:\n      - {check: hw3.task2.trend", "    checks:\n      - {check: hw3.task2.trend")
    assert load_rubric(write_rubric(text)).item("hw3.task2").points == 3


def test_declared_total_must_match(write_rubric):
    assert load_error(write_rubric, GOOD.replace("gpus: 5", "gpus: 5\ntotal_points: 15")) == (
        "rubrics/hw3.yaml: total_points is 15 but the items add up to 6")


def test_item_without_id_is_named_by_index(write_rubric):
    text = GOOD.replace("  - id: hw3.task2\n", "  - name: hw3.task2\n")
    assert load_error(write_rubric, text).startswith("rubrics/hw3.yaml: items[1]: unknown key 'name'")


def test_item_id_must_carry_the_assignment_prefix(write_rubric):
    text = GOOD.replace("id: hw3.task2\n", "id: task2\n")
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: item 'task2': id must look like 'hw3.<name>', got 'task2'")


def test_unknown_kind(write_rubric):
    assert load_error(write_rubric, GOOD.replace("kind: manual", "kind: oral")) == (
        "rubrics/hw3.yaml: item 'hw3.task2.explanation': kind must be one of auto, manual, got 'oral'")


def test_manual_item_cannot_have_checks(write_rubric):
    text = GOOD + "    checks:\n      - {check: hw3.task2.written, points: 0}\n"
    assert "a manual item cannot have checks" in load_error(write_rubric, text)


def test_due_needs_a_time_zone(write_rubric):
    message = load_error(write_rubric, GOOD.replace("gpus: 5", 'gpus: 5\ndue: "2026-04-30T23:59:00"'))
    assert message == ("rubrics/hw3.yaml: due must include a time zone offset (e.g. +03:00) or the "
                       "rubric a timezone (e.g. Europe/Tallinn), got 2026-04-30T23:59:00")


def test_due_in_a_named_zone_takes_that_days_offset(write_rubric):
    # Tartu is on summer time (EEST, +03:00) on 30 April, on +02:00 in winter.
    text = GOOD.replace("gpus: 5", 'gpus: 5\ndue: "2026-04-30 23:59"\ntimezone: Europe/Tallinn')
    rubric = load_rubric(write_rubric(text))
    assert rubric.due.isoformat() == "2026-04-30T23:59:00+03:00"
    assert rubric.timezone == "Europe/Tallinn"
    winter = GOOD.replace("gpus: 5", 'gpus: 5\ndue: "2026-01-15 23:59"\ntimezone: Europe/Tallinn')
    assert load_rubric(write_rubric(winter)).due.isoformat() == "2026-01-15T23:59:00+02:00"


def test_due_offset_must_be_the_zones(write_rubric):
    text = GOOD.replace("gpus: 5", 'gpus: 5\ndue: "2026-04-30T23:59:00+02:00"\ntimezone: Europe/Tallinn')
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: due 2026-04-30T23:59:00+02:00 has the offset +02:00, but "
        "Europe/Tallinn is on +03:00 then; give the local time without an offset")
    same = GOOD.replace("gpus: 5", 'gpus: 5\ndue: "2026-04-30T23:59:00+03:00"\ntimezone: Europe/Tallinn')
    assert load_rubric(write_rubric(same)).due.isoformat() == "2026-04-30T23:59:00+03:00"


def test_timezone_must_be_a_zone_name_and_needs_due(write_rubric):
    text = GOOD.replace("gpus: 5", 'gpus: 5\ndue: "2026-04-30 23:59"\ntimezone: Europe/Tartu')
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: timezone 'Europe/Tartu' is not a time zone name (use an IANA name "
        "such as Europe/Tallinn or UTC)")
    alone = GOOD.replace("gpus: 5", "gpus: 5\ntimezone: Europe/Tallinn")
    assert load_error(write_rubric, alone) == "rubrics/hw3.yaml: timezone needs a due date"


def test_due_skipped_by_summer_time_is_refused(write_rubric):
    # 29 March 2026: Tallinn's clocks jump from 03:00 to 04:00.
    text = GOOD.replace("gpus: 5", 'gpus: 5\ndue: "2026-03-29 03:30"\ntimezone: Europe/Tallinn')
    assert load_error(write_rubric, text) == (
        "rubrics/hw3.yaml: due 2026-03-29 03:30 does not exist in Europe/Tallinn (the clocks skip it)")


def test_due_must_parse(write_rubric):
    message = load_error(write_rubric, GOOD.replace("gpus: 5", 'gpus: 5\ndue: "end of April"'))
    assert message.startswith("rubrics/hw3.yaml: due must be an ISO 8601 date-time")


def test_due_and_late_policy_load(write_rubric):
    text = GOOD.replace("gpus: 5", "gpus: 5\ndue: 2026-04-30T23:59:00+02:00\n"
                        "late_policy: {per_day: 0.1, max_days: 5}")
    rubric = load_rubric(write_rubric(text))
    assert rubric.due.isoformat() == "2026-04-30T23:59:00+02:00"
    assert rubric.late_policy.per_day == 0.1 and rubric.late_policy.max_days == 5


def test_late_policy_needs_due(write_rubric):
    text = GOOD.replace("gpus: 5", "gpus: 5\nlate_policy: {per_day: 0.1, max_days: 5}")
    assert load_error(write_rubric, text) == "rubrics/hw3.yaml: late_policy needs a due date"


def test_late_fraction_range(write_rubric):
    text = GOOD.replace("gpus: 5", 'gpus: 5\ndue: "2026-04-30T23:59:00+02:00"\nlate_policy: {per_day: 10, max_days: 5}')
    assert "late_policy.per_day must be a fraction between 0 and 1, got 10" in load_error(write_rubric, text)


def test_file_name_must_match_assignment(write_rubric):
    assert load_error(write_rubric, GOOD, name="hw4.yaml") == (
        "rubrics/hw4.yaml: assignment 'hw3' does not match the file name (expected 'hw4')")


def test_missing_file():
    with pytest.raises(RubricError, match=r"^nowhere/hw9.yaml: cannot read rubric"):
        load_rubric("nowhere/hw9.yaml")


def test_not_a_mapping():
    with pytest.raises(RubricError, match=r"^x.yaml: the rubric must be a mapping, got list$"):
        parse_rubric([1, 2], "x.yaml")


def test_empty_items():
    with pytest.raises(RubricError, match=r"items must be a non-empty list, got list"):
        parse_rubric({"assignment": "hw3", "title": "t", "version": "1", "gpus": 1, "items": []}, "x.yaml")


@pytest.mark.parametrize("value, ok", [(30, True), (7.5, True), (0, False), (-5, False),
                                       ("30 s", False), (True, False)])
def test_run_timeout_is_a_positive_number_of_seconds(value, ok):
    import yaml
    data = yaml.safe_load(GOOD)
    data["run_timeout_s"] = value
    if ok:
        assert parse_rubric(data, "rubrics/hw3.yaml").run_timeout_s == float(value)
    else:
        with pytest.raises(RubricError, match=r"rubrics/hw3.yaml: run_timeout_s must be a positive "
                                              r"number of seconds, got"):
            parse_rubric(data, "rubrics/hw3.yaml")
    assert parse_rubric(yaml.safe_load(GOOD)).run_timeout_s is None     # optional


@pytest.mark.parametrize("value, ok", [(True, True), (False, True), ("no", False), (0, False),
                                       (None, False)])
def test_trains_is_true_or_false(value, ok):
    import yaml
    data = yaml.safe_load(GOOD)
    data["trains"] = value
    if ok:
        assert parse_rubric(data, "rubrics/hw3.yaml").trains is value
    else:
        with pytest.raises(RubricError, match=r"rubrics/hw3.yaml: trains must be true or false, "
                                              r"got"):
            parse_rubric(data, "rubrics/hw3.yaml")
    assert parse_rubric(yaml.safe_load(GOOD)).trains is True     # optional, default true
