"""Runs of the student's code that stopped before their end, as the checks' feedback says.

A script that does not run (a SyntaxError, an exception in Part 1, a hang) fails every check
that needed it, each with the same "Observed: ... stopped with ..." line: the terminal summary
shows it as one cause (grader/reports/terminal.py), and the report names it once at the top of
its assignment, the checks below pointing there instead of repeating it.
"""
from __future__ import annotations

import re
from typing import Iterable

# A check's "Observed:" line saying its run crashed or hung (not a missing or unreadable
# answer, whose fix is an answer even when the run crashed too), or a message that is only that
# run's problem ("practical5/practical5_dp.py (2 GPU(s)) stopped with ...").
CRASH = re.compile(r"^(?:Observed: (?!no answer found|your answer )|(?=\S+\.py \())(.*\b(?:stopped with|"
                   r"exited with status|did not finish in time|was killed)\b.*)$", re.M)
# The configuration a run is named by: "(2 GPU(s), BATCH_SIZE=63)".
CONFIGURATION = re.compile(r" \([^()]*GPU\(s\)[^()]*\)")
# What an answer check says before the run's stop: the code did not reach what the answer is
# about, or did not run to its end (grader/checks/practical_answers.py). The stop is the same.
LEAD = re.compile(r"your code did not (?:get that far|run to the end): ")
# Which ranks of a run of several processes raised its exception (Observation.problem): over 2
# processes "on rank 1 only (rank 0 raised no error of its own)", over 4 "on ranks 1, 2 and 3
# only (...)": one stop in two configurations, as the configuration itself is.
_RANK_LIST = r"ranks? \d+(?:(?:, | and )\d+)*"
RANKS = re.compile(rf" on (?:every rank|{_RANK_LIST}(?: only)?"
                   rf"(?: \({_RANK_LIST} raised [^()]*\))?)")
# The lines a stop carries after its first (Observation.problem: what the exception usually
# means and how to fix it, a script's last lines of output), up to what the check says next:
# where to look, or its next case.
_CARRIED = r"(?P<carried>(?:\n(?!Where to look:|Expected:|Observed:|- \S+: )[^\n]*)*)"
# The same, where the report may shorten it: a run named by its script and configuration
# (an answer check first says the code did not reach what the answer is about).
_OBSERVED_STOP = re.compile(rf"^Observed: (?P<lead>(?:{LEAD.pattern}))?"
                            r"(?P<run>\S+\.py \([^()\n]*GPU\(s\)[^()\n]*\)) "
                            r"(?P<stop>(?:stopped with|exited with status|did not finish in time|"
                            r"was killed)\b[^\n]*)" + _CARRIED, re.M)


def carried(rest: str) -> str:
    """The lines a stop carries, read from the text right after its first line ("" if none)."""
    return "".join(f"\n{line}" for line in
                   re.match(_CARRIED, rest)["carried"].split("\n") if line.strip())


def without_configuration(observed: str) -> str:
    return " ".join(CONFIGURATION.sub("", observed).split())


def stop_key(observed: str) -> str:
    """What tells one stop from another: its text without the lead an answer check puts before
    it, the configuration it stopped in and the ranks that raised it there (they differ by
    check and configuration; the stop does not)."""
    return RANKS.sub("", without_configuration(LEAD.sub("", observed)))


def stopped_runs(feedbacks: Iterable[str]) -> list[dict]:
    """The distinct stops that the feedbacks (one per check) observe, in order, each with
    "text" (the run without its configuration), "carried" (the lines it carries: how to fix
    it, told with it at the top), "configurations" (as the runs were named: "2 GPU(s),
    BATCH_SIZE=63") and "checks" (how many feedbacks observe it)."""
    found: dict[str, dict] = {}
    for feedback in feedbacks:
        seen = set()
        for match in _OBSERVED_STOP.finditer(feedback or ""):
            text = _stop_text(match)
            key = stop_key(text)
            entry = found.setdefault(key, {"text": text, "configurations": [], "checks": 0,
                                           "carried": carried(match["carried"]).strip("\n")})
            configuration = CONFIGURATION.search(match.group("run")).group(0).strip()[1:-1]
            if configuration not in entry["configurations"]:
                entry["configurations"].append(configuration)
            if key not in seen:
                entry["checks"] += 1
                seen.add(key)
    return list(found.values())


def _stop_text(match: re.Match) -> str:
    return without_configuration(f"{match.group('run')} {match.group('stop')}")


def point_to_the_stop(feedback: str, told: set[str]) -> str:
    """The feedback with each "Observed:" stop among `told` (texts of stopped_runs, told in
    full at the top of the assignment, with the lines they carry) shortened to the run it
    names and a pointer there."""
    told = {stop_key(text) for text in told}

    def shortened(match: re.Match) -> str:
        if stop_key(_stop_text(match)) not in told:
            return match.group(0)
        return (f"Observed: {match.group('lead') or ''}{match.group('run')} did not run to its "
                "end (what stopped it: at the top of this assignment)")
    return _OBSERVED_STOP.sub(shortened, feedback)
