"""Leaf's double buffer over segments the service leases."""

from __future__ import annotations

import itertools
import math
import re
import sys
import threading
import time
from typing import Callable, List, Optional

from .errors import IdpoolError, InvalidRequestError, LeaseNotReadyError

_DECIMAL = re.compile(r"^\d{1,19}$")


# itertools.count's next() is one C call: with the GIL no other thread runs inside it, so each
# value comes out once without a lock. A free-threaded build (3.13t) takes the lock instead.
_GIL = getattr(sys, "_is_gil_enabled", lambda: True)()


class _Segment:
    __slots__ = ("ids", "last", "load_next_at")

    def __init__(self, first: int, last: int, delta: int, load_next_at: int):
        self.ids = itertools.count(first, delta)  # the ids still to hand out; past `last` it is spent
        self.last = last
        self.load_next_at = load_next_at  # handing this id out starts the next lease


def next_step(previous: int, since_last_lease: float, least: int, most: int, target: float) -> int:
    """Leaf's adaptive step: a segment used up faster than ``target`` doubles the
    next, one that lasted more than twice as long halves it; within [least, most]."""
    step = previous
    if since_last_lease < target:
        step = previous * 2
    elif since_last_lease >= 2 * target:
        step = previous // 2
    return min(max(step, least), max(most, least))


class LeasedIds:
    """Ids of one ``trend`` entity handed out in this process from segments the
    service leases (``POST /apps/:key/segments``). Once ``prefetch_at`` (10 %)
    of the current segment is used, the next one is leased in a background
    thread; the lease size doubles while a segment lasts less than
    ``target_segment`` (1 s) and halves when one lasts more than twice that.

    Thread-safe: ``next()`` from the current segment is one ``itertools.count``
    step and a compare (a lock on free-threaded Python); switching segments takes
    the lock. Every id is ``≡ remainder (mod delta)`` as the lease
    says. Ids grow within a segment; across threads and processes they are
    unique, not ordered (what a ``trend`` entity promises). Ids left when the
    process stops are wasted, never repeated.
    """

    def __init__(self, entity_key: str, fetch: Callable[[Optional[int]], dict], prefetch_at: float,
                 min_size: Optional[int], max_size: int, target_segment: float, wait: float):
        self._key = entity_key
        self._fetch = fetch
        self._prefetch_at = prefetch_at
        self._min_size = min_size
        self._max_size = max_size
        self._target = target_segment
        self._wait = wait
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._current = _Segment(0, -1, 1, -1)
        self._spare: Optional[_Segment] = None
        self._loading = False
        self._failure: Optional[Exception] = None
        self._closed = False
        self._size: Optional[int] = None
        self._base_size: Optional[int] = None
        self._last_lease_at: Optional[float] = None
        self.leases = 0
        # Read and written by one lease at a time (_start_lease runs one).
        self._granted = 0  # the largest lease granted so far
        self._cap: Optional[int] = None  # no lease above it, once one larger than _granted was refused
        if not _GIL:
            # The slow path takes the lock and serves from the current segment first.
            self.next = self._next_slow  # type: ignore[method-assign]

    def next(self) -> int:
        """The next id; waits (up to ``lease_wait``) only when both segments are used up."""
        segment = self._current
        value = next(segment.ids)
        if value <= segment.last:
            if value == segment.load_next_at:
                self._prefetch()
            return value
        return self._next_slow()

    def _prefetch(self) -> None:
        with self._lock:
            if self._spare is None:
                self._start_lease()

    def open(self) -> None:
        """Leases the first segment (if none was yet) and waits for it, however long the lease
        takes (it ends within the client's ``deadline``); raises its failure.
        Else the first :meth:`next` leases it and waits at most ``lease_wait``."""
        with self._lock:
            while True:
                if self._closed:
                    raise IdpoolError(f"leased ids of {self._key} are closed")
                if self._spare is not None or self.leases > 0:
                    return
                if self._failure is not None and not self._loading:
                    failure, self._failure = self._failure, None
                    raise failure
                self._start_lease()
                self._changed.wait()

    def take(self, count: int) -> List[int]:
        """``count`` ids, each as :meth:`next` hands them out."""
        return [self.next() for _ in range(count)]

    def close(self) -> None:
        """Stops leasing; later calls raise. Ids still leased are dropped, never handed out."""
        with self._lock:
            self._closed = True
            self._spare = None
            self._current = _Segment(0, -1, 1, -1)
            self._changed.notify_all()

    def _next_slow(self) -> int:
        deadline = time.monotonic() + self._wait
        with self._lock:
            while True:
                if self._closed:
                    raise IdpoolError(f"leased ids of {self._key} are closed")
                segment = self._current
                value = next(segment.ids)
                if value <= segment.last:
                    if value == segment.load_next_at and self._spare is None:
                        self._start_lease()
                    return value
                if self._spare is not None:
                    self._current, self._spare = self._spare, None
                    continue
                if self._failure is not None and not self._loading:
                    failure, self._failure = self._failure, None
                    raise failure
                self._start_lease()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LeaseNotReadyError(f"no leased ids for {self._key} within {self._wait} s")
                self._changed.wait(left)

    def _start_lease(self) -> None:
        """Called with the lock held."""
        if self._loading or self._closed:
            return
        self._loading = True
        now = time.monotonic()
        size = self._min_size
        if self._size is not None and self._last_lease_at is not None:
            least = self._min_size or self._base_size or 1
            size = next_step(self._size, now - self._last_lease_at, least, self._max_size, self._target)
        threading.Thread(target=self._lease, args=(size, now), name=f"idpool-lease-{self._key}", daemon=True).start()

    def _lease_capped(self, size: Optional[int]) -> dict:
        """The adaptive size doubles while segments go fast, but an entity leases no more than its
        ``maxSizePerSecond`` at once (400 above it), a limit the client is not told. A size refused
        as invalid once a smaller one was granted caps the sizes at the largest granted and is asked
        again at that size at once: a default ``trend`` entity (5,000 a second) leases 4,000 ids at
        a time instead of failing at its first 8,000."""
        if size is not None and self._cap is not None:
            size = min(size, self._cap)
        try:
            return self._fetch(size)
        except InvalidRequestError:
            if size is None or self._granted == 0 or size <= self._granted:
                raise
            self._cap = self._granted
            return self._fetch(self._granted)

    def _lease(self, size: Optional[int], started_at: float) -> None:
        segment: Optional[_Segment] = None
        error: Optional[Exception] = None
        count = 0
        try:
            answer = self._lease_capped(size)
            first, last = answer.get("first"), answer.get("last")
            count, delta = answer.get("count"), answer.get("delta")
            if not (isinstance(first, str) and _DECIMAL.match(first) and isinstance(last, str)
                    and _DECIMAL.match(last) and isinstance(count, int) and count >= 1
                    and isinstance(delta, int) and delta >= 1
                    and int(last) - int(first) == (count - 1) * delta):
                raise IdpoolError(f"the lease of {self._key} came back malformed: {answer!r}")
            load_at = max(0, math.ceil(count * self._prefetch_at) - 1)
            segment = _Segment(int(first), int(last), delta, int(first) + load_at * delta)
            self._granted = max(self._granted, count)
        except Exception as err:  # kept for the callers, as the TypeScript SDK does
            error = err
        with self._lock:
            self._loading = False
            if segment is not None:
                self._size = count
                if self._base_size is None:
                    self._base_size = count
                self._last_lease_at = started_at
                self.leases += 1
                self._failure = None
                if not self._closed:
                    self._spare = segment
            else:
                self._failure = error
            self._changed.notify_all()
