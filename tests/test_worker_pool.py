"""The worker pool drawing on a generator: answers in order, honest progress, and no stale answer or lone
worker left behind (each case one a review of the streaming pool found wrong)."""

from __future__ import annotations

import errno
import functools
import gc
import os
import time
from collections.abc import Iterator

import pytest

from kvlint.running.worker_pool import WorkerPool, in_worker, shared


def _square(x: int) -> int:
    return x * x


def _slow_square(x: int) -> int:
    time.sleep(0.05)
    return x * x


def _pid(x: int) -> tuple[int, int]:
    return x, os.getpid()


def _inside(x: int) -> tuple[int, bool]:
    return os.getpid(), in_worker()


def _with_shared(x: int) -> tuple[int, int, int]:
    """The item plus the map's shared offset, and which process answered."""
    return x + shared()["offset"], os.getpid(), id(shared())


def _crash_on_three(x: int) -> int:
    if x == 3:
        os._exit(9)
    return x + shared()


def _limit_forks(monkeypatch: pytest.MonkeyPatch, allowed: int) -> None:
    """A process limit: the parent may fork `allowed` children, then EAGAIN."""
    real_fork, parent, forked = os.fork, os.getpid(), [0]

    def limited() -> int:
        if os.getpid() == parent:
            forked[0] += 1
            if forked[0] > allowed:
                raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return real_fork()

    monkeypatch.setattr(os, "fork", limited)


def test_answers_in_order_from_a_generator_read_while_the_workers_work() -> None:
    read: list[int] = []

    def source() -> Iterator[int]:
        for number in range(40):
            read.append(number)
            yield number

    with WorkerPool(2, 100) as pool:
        assert pool.map(_slow_square, source()) == [n * n for n in range(40)]
        assert len(pool.workers) == 2 and read == list(range(40))
        assert pool.map(_square, [3, 4]) == [9, 16]  # the same workers, a second call


def test_progress_counts_against_the_whole_list() -> None:
    calls: list[tuple[int, int]] = []
    with WorkerPool(4, 100) as pool:
        pool.map(_square, list(range(50)), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(done, 50) for done in range(1, 51)]


def test_a_single_item_and_a_process_limit_mean_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    with WorkerPool(4, 100) as pool:
        assert pool.map(_pid, [1]) == [(1, os.getpid())]  # one item: no fork
        assert not pool.workers
    _limit_forks(monkeypatch, 1)  # one worker would only add a copy of the work
    calls: list[tuple[int, int]] = []
    with WorkerPool(4, 100) as pool:
        answers = pool.map(_pid, list(range(6)), progress=lambda done, total: calls.append((done, total)))
        assert answers == [(n, os.getpid()) for n in range(6)] and not pool.workers
        assert pool.problem.endswith("analysing with this process only")
    assert calls == [(done, 6) for done in range(1, 7)]


def test_a_worker_knows_it_is_one_and_this_process_that_it_is_none() -> None:
    """What a map's function returns in a worker is pickled for the parent (`in_worker`: the runner sends back
    a slim copy of a prepared file from there, the file itself here)."""
    with WorkerPool(2, 100) as pool:
        answers = pool.map(_inside, range(20))
        assert {pid for pid, _ in answers} <= {w.pid for w in pool.workers} and all(inside for _, inside in answers)
    with WorkerPool(1, 100) as pool:
        assert pool.map(_inside, range(3)) == [(os.getpid(), False)] * 3
    assert not in_worker()


def test_a_failing_source_leaves_no_answer_for_the_next_call() -> None:
    def source() -> Iterator[int]:
        yield from range(4)
        raise ValueError("the source failed")

    with WorkerPool(2, 100) as pool:
        with pytest.raises(ValueError, match="the source failed"):
            pool.map(_slow_square, source())
        assert pool.map(_square, [10, 20]) == [100, 400]


def test_a_maps_shared_object_reaches_every_worker_once_and_each_map_its_own() -> None:
    with WorkerPool(2, 100) as pool:
        answers = pool.map(_with_shared, range(30), shared={"offset": 100})
        assert [a for a, _, _ in answers] == list(range(100, 130))
        workers = {pid for _, pid, _ in answers}
        assert workers <= {w.pid for w in pool.workers} and os.getpid() not in workers
        per_worker = {pid: {ident for _, p, ident in answers if p == pid} for pid in workers}
        assert all(len(idents) == 1 for idents in per_worker.values())  # unpickled once, not once per item
        again = pool.map(_with_shared, range(5), shared={"offset": -1})  # the same workers get the new one
        assert [a for a, _, _ in again] == [-1, 0, 1, 2, 3]
        assert pool.map(_with_shared_or_none, range(4)) == [None] * 4  # a map without one: none, not the last


def test_shared_in_this_process_and_after_a_crash() -> None:
    with WorkerPool(1, 100) as pool:  # one job: the map runs here, and `shared()` is set only meanwhile
        assert [a for a, _, _ in pool.map(_with_shared, [1, 2], shared={"offset": 10})] == [11, 12]
    assert shared() is None
    with WorkerPool(2, 100) as pool:  # the retry of a crashed item, and the replacement worker, get it too
        assert pool.map(_crash_on_three, range(6), on_crash=lambda x: -x, shared=1000) == [
            1000, 1001, 1002, -3, 1004, 1005]


def _dies_in_a_worker(parent: int, x: int) -> int:
    if os.getpid() != parent:
        os._exit(9)
    return x + shared()


def test_items_left_to_this_process_when_the_workers_are_gone_see_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both workers die and no process can be forked any more: the rest runs here, with the map's object."""
    _limit_forks(monkeypatch, 2)
    work = functools.partial(_dies_in_a_worker, os.getpid())
    with WorkerPool(2, 100) as pool:
        assert pool.map(work, range(6), on_crash=lambda x: -1, shared=7) == [-1, -1, 9, 10, 11, 12]


def _with_shared_or_none(x: int) -> object:
    return shared()


def test_a_source_may_say_it_is_still_reading_and_the_largest_waiting_item_goes_first() -> None:
    from kvlint.running.worker_pool import STILL_READING, _Feed

    def source() -> Iterator[object]:
        yield from ["ab", STILL_READING, "abcdef", STILL_READING, STILL_READING, "abc"]

    with WorkerPool(2, 100) as pool:  # the markers are no items: answers for the items only, in their order
        assert pool.map(len, source(), size=len) == [2, 6, 3]
    feed = _Feed(iter(["ab", STILL_READING, "abcdef", "a", "abc"]), [], size=len)
    assert feed.read() and feed.read() and feed.items == ["ab"]  # a marker is read, and adds nothing
    assert feed.read() and feed.read() and feed.read() and not feed.read()
    assert [feed.items[feed.take()] for _ in range(4)] == ["abcdef", "abc", "ab", "a"]  # the largest first
    fifo = _Feed(iter(["ab", "abcdef", "a"]), [])
    assert fifo.waiting() and fifo.items[fifo.take()] == "ab" and fifo.rest() == [1, 2]  # no size: in order


def _timed(x: int) -> tuple[float, float]:
    started = time.monotonic()
    time.sleep(0.15)
    return started, time.monotonic()


def test_while_this_process_reads_one_worker_fewer_works() -> None:
    """On two CPUs, reading and scanning is the run's critical path: one worker works meanwhile, both after."""
    reading_ends: list[float] = []

    def source() -> Iterator[object]:
        from kvlint.running.worker_pool import STILL_READING

        yield from range(4)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:  # reading on: about 1 s of skipped files
            time.sleep(0.01)
            yield STILL_READING
        reading_ends.append(time.monotonic())
        yield from range(4, 8)

    with WorkerPool(2, 100) as pool:
        spans = pool.map(_timed, source())
    during = sorted(span for span in spans if span[0] < reading_ends[0])
    assert len(during) >= 4 and all(a[1] <= b[0] for a, b in zip(during, during[1:]))  # one at a time
    after = [span for span in spans if span[0] >= reading_ends[0]]
    assert any(a[0] < b[1] and b[0] < a[1] for a in after for b in after if a is not b)  # then both at once


def _collector_settings(x: int) -> tuple[int, int, int]:
    return gc.get_freeze_count(), gc.get_threshold()[0], os.getpid()


def test_the_runs_workers_freeze_what_they_inherit_and_collect_young_objects_rarely() -> None:
    from kvlint.running import runner

    before = gc.get_threshold()
    with runner._Pool(2, 10) as pool:
        settings = pool.map(_collector_settings, range(6))
    assert {pid for *_, pid in settings} - {os.getpid()}  # answered by workers
    assert all(frozen > 0 and young == 100_000 for frozen, young, _ in settings)  # as the command line sets it
    assert gc.get_threshold() == before  # this process keeps its own collector settings


def _crash_on_37(x: int) -> int:
    if x == 37:
        os._exit(9)
    return x * 2


def test_small_items_travel_in_batches_and_a_crash_costs_only_its_own_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 small files once went in 10,000 messages each way; now a message carries up to `BATCH_ITEMS`
    of them (a fair share of what is left). A worker dying on one item of a batch costs that item only:
    the others of its batch are retried alone and answer."""
    from kvlint.running import worker_pool

    sent: list[int] = []
    real_send = worker_pool._Worker.send

    def counting(self, task):  # type: ignore[no-untyped-def]
        sent.append(len(task[1]))
        real_send(self, task)

    monkeypatch.setattr(worker_pool._Worker, "send", counting)
    with WorkerPool(2, 1000) as pool:
        assert pool.map(_square, list(range(1000)), size=lambda x: 10) == [n * n for n in range(1000)]
        assert sum(sent) == 1000 and max(sent) == worker_pool.BATCH_ITEMS
        assert len(sent) < 100
        sent.clear()
        crashed = pool.map(_crash_on_37, list(range(200)), on_crash=lambda x: -1)
    assert crashed == [-1 if n == 37 else n * 2 for n in range(200)]
    assert max(sent) > 1  # 37 was in a batch with others


def test_a_large_item_goes_alone() -> None:
    from kvlint.running.worker_pool import BATCH_BYTES, _Feed

    sizes = [BATCH_BYTES // 4] * 8 + [BATCH_BYTES * 2]
    feed = _Feed(iter(range(len(sizes))), [], size=lambda index: sizes[index])
    feed.read_all()
    assert [feed.take_batch(64) for _ in range(3)] == [[8], [0, 1, 2, 3], [4, 5, 6, 7]]


def _where(item: tuple[int, str]) -> tuple[int, str, int]:
    """The item, what it carried, and which process answered."""
    time.sleep(0.002)
    return item[0], item[1], os.getpid()


def test_routed_items_go_to_their_worker_and_others_get_them_as_away_says() -> None:
    with WorkerPool(2, 100) as pool:
        pids = sorted({pid for _, pid in pool.map(_pid, list(range(8)))})
        assert len(pids) == 2
        routes = {number: pids[number % 2] for number in range(40)}  # half to each worker
        answers = pool.map(_where, [(number, "held") for number in range(40)], route=lambda item: routes[item[0]],
                           away=lambda item: (item[0], "away"))
        assert [number for number, _, _ in answers] == list(range(40))
        for number, carried, pid in answers:  # each at its worker, or elsewhere as `away` made it
            assert (carried == "held") == (pid == routes[number]), (number, carried, pid)
        assert sum(carried == "held" for _, carried, _ in answers) >= 20  # stealing is the exception
        # every item routed to one worker: the other takes some of them, the smallest first, once all are read
        sizes = {number: 100 - number for number in range(40)}
        lopsided = pool.map(_where, [(number, "held") for number in range(40)], route=lambda item: pids[0],
                            away=lambda item: (item[0], "away"), size=lambda item: sizes[item[0]])
        stolen = [number for number, carried, pid in lopsided if carried == "away"]
        assert stolen and all(pid == pids[1] for number, carried, pid in lopsided if carried == "away")
        assert min(stolen) > min(number for number, carried, _ in lopsided if carried == "held")  # smaller ones
        # an item routed to no worker of the pool (its holder died) goes to any, as `away` makes it
        gone = pool.map(_where, [(number, "held") for number in range(6)], route=lambda item: 1,
                        away=lambda item: (item[0], "away"))
        assert {carried for _, carried, _ in gone} == {"away"}


def test_a_run_whose_size_is_found_as_it_goes_asks_when_the_workers_would_start() -> None:
    asked: list[int] = []

    def at_least(count: int, have: int) -> bool:
        asked.append(count)
        return have >= count

    with WorkerPool(2, lambda count: at_least(count, 3), threshold=4) as pool:
        assert {pid for _, pid in pool.map(_pid, [1, 2, 3])} == {os.getpid()}  # too few: this process
        assert {pid for _, pid in pool.map(_pid, [1, 2, 3, 4, 5])} == {os.getpid()}  # and it stays so
    with WorkerPool(2, lambda count: at_least(count, 9), threshold=4) as pool:
        assert os.getpid() not in {pid for _, pid in pool.map(_pid, list(range(20)))}
    assert asked == [4, 4]  # once per pool, when its first map has two items
