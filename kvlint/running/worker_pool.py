"""Worker processes that always end: a small fork-and-pipes pool for the tree run.

concurrent.futures' process pool starts threads of its own, joins its workers
at exit, and lets a worker inherit the parent's signal handlers: SIGTERM to a
run's process group could hang it for good or print worker tracebacks, and a
fork or thread that fails under a process limit left it waiting forever. Here
the parent starts no thread: each worker is forked with SIGINT and SIGTERM
blocked, ignores them, dies with its parent (PR_SET_PDEATHSIG on Linux, and
EOF on its task pipe everywhere), and gets one task at a time. An interrupted
run kills the workers instead of joining them. A fork that fails means fewer
workers, down to none (the work then runs in this process), said once in
`problem`. A worker that dies costs only its own item: the item is retried
alone in a fresh process, and reported with `on_crash` if that dies too.
What every item of a map needs alike (the runner's tree index) is passed as
`shared`: each worker receives it once, not once per item, and reads it with
`shared()`. Small items travel in batches (`BATCH_ITEMS`, `BATCH_BYTES`): one
message, one pickle and one answer for many small files, not one each, and what
the items of a batch share (the run's configuration) is pickled once for all.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import pickle
import select
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import Any, BinaryIO

_SIGNALS = {signal.SIGINT, signal.SIGTERM}
BATCH_ITEMS = 64  # at most this many items in one task ...
BATCH_BYTES = 1 << 16  # ... and, with `size`, about this many bytes: a large item goes alone
READ_AHEAD = 8  # while every worker is busy, items read from the source between two looks at their pipes
_shared: Any = None  # in a worker (or this process, running a map itself): the current map's `shared`


def shared() -> Any:
    """The `shared` object of the map whose item is being worked on."""
    return _shared


_in_worker = False  # set in a forked worker (`_become_worker`)


def in_worker() -> bool:
    """Whether this process is one of a pool's workers: what a map's function returns here is pickled for the
    parent (where the parent runs the items itself, it gets the very objects)."""
    return _in_worker


def _install_shared(blob: bytes | None) -> None:  # with a worker's first task of a map (`_Worker.give`)
    global _shared
    _shared = None if blob is None else pickle.loads(blob)


_END = object()  # what `next` gives when a source of items has run out
STILL_READING = object()  # a source yields it between items: the pool hands out what waits, then reads on


def _items(source: Iterable[Any]) -> Iterator[Any]:
    return (item for item in source if item is not STILL_READING)


class _Worker:
    """One forked worker: its pid, the pipe it reads tasks from and the pipe it answers on."""

    def __init__(self, pid: int, tasks: BinaryIO, results: BinaryIO):
        self.pid, self.tasks, self.results = pid, tasks, results
        self.shared_blob: bytes | None = None  # the `shared` object it holds, as it was sent

    def give(self, function: Callable[[Any], Any], items: list[Any], batch: Callable[[list[Any]], list[Any]] | None,
             blob: bytes | None) -> None:
        """Send the worker a task, with the map's `shared` object (None: none) unless it holds it already (in
        the same message: no round trip of its own); OSError if it died."""
        fresh = blob is not self.shared_blob
        self.send((function, items, batch, fresh, blob if fresh else None))
        self.shared_blob = blob

    def send(self, task: object) -> None:
        pickle.dump(task, self.tasks, protocol=pickle.HIGHEST_PROTOCOL)
        self.tasks.flush()

    def close(self, kill: bool) -> None:
        self.let_go(kill)
        self.wait()

    def let_go(self, kill: bool) -> None:
        """Close its pipes (it reads EOF and exits), or kill it."""
        for stream in (self.tasks, self.results):
            try:
                stream.close()
            except OSError:
                pass
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def wait(self) -> None:
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


class WorkerPool:
    """Map functions over items in worker processes, results in order; see the module's docstring."""

    def __init__(self, jobs: int, size: int | Callable[[int], bool], threshold: int = 1,
                 initializer: Callable[[], None] | None = None):
        """`size`: how many items the run has, or a function that says whether it has at least so many (asked
        when the first map would start the workers)."""
        self._enough: Callable[[], bool] = (
            (lambda: size >= threshold) if isinstance(size, int) else (lambda: size(threshold))  # type: ignore
        )
        self.parallel = jobs > 1 and hasattr(os, "fork")
        self.jobs = jobs
        self.initializer = initializer
        self.workers: list[_Worker] = []
        self.started = False
        self.problem = ""  # why fewer workers than asked for ran, once

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(kill=exc_type is not None)

    def close(self, kill: bool = False) -> None:
        """Let the workers go: at the end of a run they exit on EOF; when interrupted they are killed."""
        workers, self.workers = self.workers, []
        for worker in workers:  # all are let go before any is waited for: they exit at the same time
            worker.let_go(kill)
        for worker in workers:
            worker.wait()

    def map(self, function: Callable[[Any], Any], items: Iterable[Any],
            progress: Callable[[int, int], None] | None = None,
            on_crash: Callable[[Any], Any] | None = None, shared: Any = None,
            size: Callable[[Any], int] | None = None,
            batch: Callable[[list[Any]], list[Any]] | None = None,
            route: Callable[[Any], int | None] | None = None, away: Callable[[Any], Any] | None = None,
            all_working: bool = False) -> list[Any]:
        """`function(item)` for each item, in order; an item whose process dies twice gets `on_crash(item)`.

        `items` may be a generator that does work of its own (the runner reads and scans files in it): it is
        drawn from while the workers are busy, so that its work overlaps theirs. The first call that has two
        items starts two workers (fewer: this process does the work); more are forked as items wait for
        one, up to `jobs`; while this process still reads a generator, one worker fewer works (they take
        turns, the one idle longest first). `progress(done, total)` is called per item once the total is
        known. `shared` is sent to each worker once, where `function` reads it with `shared()`. With `size`,
        the largest waiting item is handed out first.
        `batch(items)`, when given, is what a worker calls for a task's items instead of `function` on each (it
        must give what `function` would, item by item; a retried item gets `function` alone).
        `route(item)`: the process id of the worker that should take the item (it holds what the item needs),
        or None; `away(item)` is what goes in its place to any other process. A worker with no item of its own
        left takes the others' once all are read, the smallest first (it redoes what the holder would have
        skipped). `all_working`: every worker works while this process still reads (what they then hold comes
        out even between them).
        """
        total = len(items) if isinstance(items, Sized) else None
        source = iter(items)
        received: list[Any] = []
        if self.parallel and not self.started:
            received += itertools.islice(_items(source), 2)
            if len(received) < 2:
                return _in_process(function, received, progress, shared, batch, size)
            if not self._enough():  # so few, worker start-up would cost more than it saves
                self.parallel = False
                return _in_process(function, [*received, *_items(source)], progress, shared, batch, size)
            self._start()
        if not self.workers:
            return _in_process(function, [*received, *_items(source)], progress, shared, batch, size)
        feed = _Feed(source, received, size, route)
        if total is not None:
            feed.read_all()  # a list: every item is known at once, and batches can be cut fairly
        blob = None if shared is None else pickle.dumps(shared, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            sent = _Sent(route, away)
            return self._distribute(function, feed, total, progress, on_crash, shared, blob, batch, all_working, sent)
        except BaseException:
            self.close(kill=True)  # a worker may still be on an item: no later call may read its answer
            raise

    def _start(self) -> None:
        """Fork the first two workers; with fewer, one process only adds a copy of the work: do it here."""
        self.started = True
        for _ in range(min(2, self.jobs)):
            worker = self._fork()
            if worker is None:
                break
            self.workers.append(worker)
        if len(self.workers) < 2:
            self.close(kill=True)

    def _distribute(self, function: Callable[[Any], Any], feed: _Feed, total: int | None,
                    progress: Callable[[int, int], None] | None,
                    on_crash: Callable[[Any], Any] | None, shared: Any = None,
                    blob: bytes | None = None, batch: Callable[[list[Any]], list[Any]] | None = None,
                    all_working: bool = False, sent: _Sent | None = None) -> list[Any]:
        """Hand the items out to idle workers, reading ahead while all are busy; the answers, in order."""
        results: dict[int, Any] = {}
        busy: dict[int, tuple[_Worker, list[int]]] = {}  # result fd -> (worker, the indices of its items)
        sent = sent or _Sent(None, None)
        idle = list(self.workers)

        def finished(index: int, value: Any) -> None:
            results[index] = value
            if progress and (total is not None or feed.exhausted):
                progress(len(results), total if total is not None else len(feed.items))

        while True:
            # while this process still reads and scans the items it hands out, it uses a CPU itself: as many
            # workers as the others work meanwhile (on two CPUs, reading alone is the run's critical path)
            working = self.jobs if total is not None or feed.exhausted or all_working else max(1, self.jobs - 1)
            starved = False  # the idle workers' items are still to be read: the others' wait for them
            while len(busy) < working and feed.waiting():
                if not idle and len(self.workers) < self.jobs and not self.problem:
                    worker = self._fork()
                    if worker is not None:
                        self.workers.append(worker)
                        idle.append(worker)
                if not idle:
                    break
                worker, taken = None, []
                for candidate in idle:  # the one idle longest first: while one works (this process reading), the
                    # workers take turns, so that what they hold of a routed map's items comes out even
                    taken = feed.take_batch(self._batch_items(feed, total), candidate.pid, self._pids())
                    if taken:
                        worker = candidate
                        break
                if worker is None:
                    starved = True
                    break
                idle.remove(worker)
                try:
                    worker.give(function, [sent.to(worker.pid, feed.items[index]) for index in taken], batch, blob)
                except (OSError, EOFError, pickle.UnpicklingError):  # it died while idle: the items are done
                    values = self._after_crash(worker, function, [sent.to(0, feed.items[i]) for i in taken], on_crash,
                                               idle, blob)
                    for index, value in zip(taken, values):
                        finished(index, value)
                    continue
                busy[worker.results.fileno()] = (worker, taken)
            if not busy and not starved:  # no worker could be started, or every one died: the rest here
                with _sharing(shared):
                    for index in feed.rest():
                        finished(index, function(feed.items[index]))
                return [results[index] for index in range(len(feed.items))]
            reading = not feed.exhausted and (starved or not idle or len(busy) >= working)  # read rather than wait
            if reading:  # a few items a turn: a `select` and a turn of this loop for each item cost more than
                feed.read(READ_AHEAD)  # reading it (10,000 small files made 20,000 turns)
            ready, _, _ = select.select(list(busy), [], [], 0 if reading else None)
            for fd in ready:
                worker, taken = busy.pop(fd)
                try:
                    succeeded, values = pickle.load(worker.results)
                except Exception:  # noqa: BLE001 - EOF or a torn pickle: the worker died on one of these items
                    values = self._after_crash(worker, function, [sent.to(0, feed.items[i]) for i in taken], on_crash,
                                               idle, blob)
                else:
                    if not succeeded:
                        raise values
                    idle.append(worker)
                for index, value in zip(taken, values):
                    finished(index, value)

    def _batch_items(self, feed: _Feed, total: int | None) -> int:
        """How many items the next task may take: up to `BATCH_ITEMS`, but no more than a fair share of what
        is left, so that the workers finish together (all of it is known once the source is read)."""
        if total is None and not feed.exhausted:
            return max(1, min(BATCH_ITEMS, feed.count() // 2))  # still reading: what waits, shared
        return max(1, min(BATCH_ITEMS, feed.count() // (2 * self.jobs)))

    def _pids(self) -> frozenset[int]:
        return frozenset(worker.pid for worker in self.workers)

    def _after_crash(self, worker: _Worker, function: Callable[[Any], Any], items: list[Any],
                     on_crash: Callable[[Any], Any] | None, idle: list[_Worker],
                     blob: bytes | None = None) -> list[Any]:
        """A worker died: each of its items is retried alone (then reported), and a new worker takes its
        place."""
        self.workers.remove(worker)
        worker.close(kill=True)
        values = [_isolated(function, item, on_crash, self.initializer, self.workers, blob) for item in items]
        replacement = self._fork()
        if replacement is not None:
            self.workers.append(replacement)
            idle.append(replacement)
        return values

    def _fork(self) -> _Worker | None:
        try:
            return _fork_worker(self.initializer, self.workers)
        except OSError as exc:
            reason = (exc.strerror or str(exc)).lower()
            fallback = f"{len(self.workers)} worker processes" if len(self.workers) > 1 else "this process only"
            self.problem = self.problem or f"cannot start worker processes ({reason}); analysing with {fallback}"
            return None


class _Sent:
    """What goes to a process in an item's place: the item to the worker it is routed to, `away(item)` to any
    other (a fresh process retrying it after a crash, too)."""

    def __init__(self, route: Callable[[Any], int | None] | None, away: Callable[[Any], Any] | None):
        self.route, self.away = route, away

    def to(self, pid: int, item: Any) -> Any:
        if self.away is None or self.route is None or self.route(item) == pid:
            return item
        return self.away(item)


class _Feed:
    """The items of one `map`: those read so far from the source, and which wait to be handed out."""

    def __init__(self, source: Iterator[Any], received: list[Any], size: Callable[[Any], int] | None = None,
                 route: Callable[[Any], int | None] | None = None):
        self.source, self.items, self.size, self.route = source, [], size, route
        self.pending: list[tuple[int, int]] = []  # (order, index) of the items read and not handed out: a heap
        self.routed: dict[int, list[tuple[int, int]]] = {}  # the same, of the items routed to a worker's pid
        self.exhausted = False
        for item in received:
            self._add(item)

    def _add(self, item: Any) -> None:
        index = len(self.items)
        self.items.append(item)
        owner = self.route(item) if self.route is not None else None
        heap = self.pending if owner is None else self.routed.setdefault(owner, [])
        heapq.heappush(heap, (-self.size(item) if self.size else 0, index))

    def count(self) -> int:
        """How many items wait to be handed out."""
        return len(self.pending) + sum(map(len, self.routed.values()))

    def read(self, most: int = 1) -> bool:
        """Draw up to `most` more items (a `STILL_READING` counts as one) from the source; False when it has
        none left."""
        if self.exhausted:
            return False
        for _ in range(most):
            item = next(self.source, _END)
            if item is _END:
                self.exhausted = True
                return False
            if item is not STILL_READING:
                self._add(item)
        return True

    def read_all(self) -> None:
        while self.read():
            pass

    def waiting(self) -> bool:
        """Whether an item waits to be handed out (reading on until one does when none is left over)."""
        while not self.pending and not any(self.routed.values()):
            if not self.read():
                return False
        return True

    def take(self) -> int:
        """The next item to hand out: the first read, or with `size` the largest waiting (so that the
        largest item does not end the map alone)."""
        return heapq.heappop(self.pending)[1]

    def take_batch(self, most: int, pid: int = 0, alive: frozenset[int] = frozenset()) -> list[int]:
        """The next item (`take`) and, up to `most` in all, those after it while, with `size`, they come to no
        more than `BATCH_BYTES` together. For the worker `pid`: its own items first, then those routed to none
        (or to a worker no longer alive), then the smallest of another worker's."""
        heap = self.routed.get(pid)
        if not heap:
            for owner in [owner for owner, items in self.routed.items() if items and owner not in alive]:
                for entry in self.routed.pop(owner):  # its worker is gone (or never was one): anyone's
                    heapq.heappush(self.pending, entry)
            heap = self.pending
        if not heap:  # only other workers' items wait: once all are read, some of theirs
            return self._steal(most) if self.exhausted else []
        bytes_taken = -heap[0][0]
        batch = [heapq.heappop(heap)[1]]
        while len(batch) < most and heap and bytes_taken - heap[0][0] <= BATCH_BYTES:
            bytes_taken -= heap[0][0]
            batch.append(heapq.heappop(heap)[1])
        return batch

    def _steal(self, most: int) -> list[int]:
        """The smallest items routed to the worker that has most waiting: about a fair share of them."""
        owner = max(self.routed, key=lambda key: (len(self.routed[key]), -key))
        heap = self.routed[owner]
        share = max(1, min(most, len(heap) // 2))
        smallest = heapq.nlargest(share, heap)  # (-size, index): the largest keys are the smallest items
        taken = set(smallest)
        self.routed[owner] = [entry for entry in heap if entry not in taken]
        heapq.heapify(self.routed[owner])
        return [index for _, index in smallest]

    def rest(self) -> list[int]:
        """Every item not handed out yet, the source read to its end."""
        for item in _items(self.source):
            self._add(item)
        self.exhausted = True
        rest = sorted(index for _, index in self.pending)
        rest = sorted([*rest, *(index for heap in self.routed.values() for _, index in heap)])
        self.pending, self.routed = [], {}
        return rest


def _in_process(function: Callable[[Any], Any], items: list[Any],
                progress: Callable[[int, int], None] | None, shared: Any = None,
                batch: Callable[[list[Any]], list[Any]] | None = None,
                size: Callable[[Any], int] | None = None) -> list[Any]:
    """Each item here; with `batch`, small items a batch at a time, as a worker takes them."""
    results: list[Any] = []
    with _sharing(shared):
        start = 0
        while start < len(items):
            end, taken = start + 1, size(items[start]) if size else 0
            while batch is not None and end < len(items) and end - start < BATCH_ITEMS:
                taken += size(items[end]) if size else 0
                if taken > BATCH_BYTES:
                    break
                end += 1
            results += batch(items[start:end]) if batch is not None else [function(items[start])]
            for done in range(start + 1, end + 1):
                if progress:
                    progress(done, len(items))
            start = end
    return results


@contextlib.contextmanager
def _sharing(shared: Any) -> Iterator[None]:
    """`shared()` is `shared` while this process works on a map's items itself."""
    global _shared
    previous, _shared = _shared, shared
    try:
        yield
    finally:
        _shared = previous


def _fork_worker(initializer: Callable[[], None] | None, siblings: list[_Worker]) -> _Worker:
    """Fork a worker serving tasks; OSError when no process (or pipe) can be made."""
    task_read, task_write = os.pipe()
    result_read, result_write = os.pipe()
    parent = os.getpid()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)  # no parent handler may run in the child
    try:
        pid = os.fork()
    except OSError:
        for fd in (task_read, task_write, result_read, result_write):
            os.close(fd)
        raise
    finally:
        if os.getpid() == parent:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if pid == 0:  # the worker: never returns
        status = 1
        try:
            os.close(task_write)
            os.close(result_read)
            for sibling in siblings:  # so that each worker sees EOF when the parent alone lets go
                for stream in (sibling.tasks, sibling.results):
                    os.close(stream.fileno())
            _become_worker(parent)
            if initializer is not None:
                initializer()
            _serve(os.fdopen(task_read, "rb"), os.fdopen(result_write, "wb"))
            status = 0
        finally:
            os._exit(status)  # never the parent's atexit handlers or its buffered output
    os.close(task_read)
    os.close(result_write)
    return _Worker(pid, os.fdopen(task_write, "wb"), os.fdopen(result_read, "rb"))


def _become_worker(parent: int) -> None:
    """Ignore SIGINT and SIGTERM (the parent stops the run, once) and die with the parent."""
    global _in_worker
    _in_worker = True
    for number in _SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before that: no one waits for this worker
        os._exit(1)


def _serve(tasks: BinaryIO, results: BinaryIO) -> None:
    """Answer each `(function, items, batch, fresh, blob)` with `(True, results)` or `(False, exception)` until
    EOF (`batch`: what gives the results of all the items at once, if not `function` on each; `fresh`: `blob` is
    the map's new `shared` object)."""
    while True:
        try:
            function, items, batch, fresh, blob = pickle.load(tasks)
        except EOFError:
            return
        try:
            if fresh:
                _install_shared(blob)
            values = batch(items) if batch is not None else [function(item) for item in items]
            answer: tuple[bool, object] = (True, values)
        except Exception as exc:  # noqa: BLE001 - raised again in the parent, as a pool would
            answer = (False, exc)
        pickle.dump(answer, results, protocol=pickle.HIGHEST_PROTOCOL)
        results.flush()


def _isolated(function: Callable[[Any], Any], item: Any, on_crash: Callable[[Any], Any] | None,
              initializer: Callable[[], None] | None, siblings: list[_Worker], blob: bytes | None = None) -> Any:
    """Retry one item in a fresh process; if that process dies too, or none can be started, report the item."""
    try:
        worker = _fork_worker(initializer, siblings)
    except OSError:
        worker = None
    if worker is not None:
        try:
            worker.give(function, [item], None, blob)
            succeeded, values = pickle.load(worker.results)
        except Exception:  # noqa: BLE001 - it died as well
            worker.close(kill=True)
        except BaseException:
            worker.close(kill=True)
            raise
        else:
            worker.close(kill=False)
            if not succeeded:
                raise values
            return values[0]
    if on_crash is None:
        raise RuntimeError("a worker process crashed")
    return on_crash(item)
