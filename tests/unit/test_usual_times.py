"""The Pulse's "running past its usual time" memory (cockpit.tui.suspects.UsualTimes):
the median of the runs seen, and bounded however many job names come and go."""

from __future__ import annotations

from cockpit.models import Job
from cockpit.tui.suspects import UsualTimes


def ended(times: UsualTimes, name: str, seconds: float, user: str = "alice") -> None:
    times.ended(Job(job_id=1, name=name, user=user, start_time=1000, end_time=1000 + seconds), 5000)


def test_usual_is_the_median_of_the_runs_seen_once_there_are_three():
    times = UsualTimes()
    ended(times, "train", 100)
    ended(times, "train", 300)
    probe = Job(job_id=2, name="train", user="alice")
    assert times.usual(probe) is None  # two runs say nothing yet
    ended(times, "train", 200)
    assert times.usual(probe) == (200, 3)
    assert times.usual(Job(job_id=3, name="train", user="bob")) is None  # per user


def test_names_that_come_once_do_not_grow_it_without_bound_and_the_busy_name_stays():
    times = UsualTimes(names=100)
    for i in range(3):
        ended(times, "train", 100 + i)
    for i in range(1000):  # a job name with a timestamp in it: every one new
        ended(times, f"sweep-{i}", 50)
        if i % 50 == 0:
            ended(times, "train", 101)  # still ending jobs: kept
    assert len(times._runs) == 100
    assert times.usual(Job(job_id=2, name="train", user="alice")) is not None
    assert times.usual(Job(job_id=2, name="sweep-0", user="alice")) is None
