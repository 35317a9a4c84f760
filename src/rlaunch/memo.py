"""A bounded memo: a mapping that forgets its oldest entry beyond a fixed size.

Preflight and spec parsing keep results keyed by exactly what produced them (rlaunch.spec.io,
rlaunch.preflight.engine.runner); a search over role plans sees the same few models, datasets
and settings thousands of times. The bound keeps a long search from growing memory without
limit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from itertools import islice
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
A = TypeVar("A")


class Memo(Generic[K, V]):
    """At most `size` entries; `put` evicts the oldest beyond it (first in, first out: a hit
    costs one dict read in C, where keeping the least recently used would cost a Python call per
    hit, and preflight makes tens of hits per plan; a hot entry evicted is computed once again).
    It evicts the oldest eighth at once: a dict keeps a deleted entry's slot until it resizes,
    and finding the oldest live entry walks those slots, so one at a time a full memo paid a
    walk of hundreds of slots on every put.
    Safe to share between threads (a sweep launches its points from several): `put` and `clear`
    take a lock; `get` is the dict's own, one step under the GIL."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a memo holds at least 1 entry, got size {size}")
        self.size = size
        self._evicted = max(1, size // 8)
        """How many of the oldest entries `put` evicts at once beyond `size`."""
        self._entries: dict[K, V] = {}
        self._lock = threading.Lock()
        self.get: Callable[[K], V | None] = self._entries.get
        """The entry of `key`, or None when there is none (values are never None)."""

    def put(self, key: K, value: V) -> V:
        """Keep `value` under `key` and return it."""
        with self._lock:
            entries = self._entries
            entries[key] = value
            if len(entries) > self.size:
                for oldest in list(islice(entries, self._evicted)):
                    del entries[oldest]
            return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def per_object(function: Callable[[A], V], size: int = 256) -> Callable[[A], V]:
    """`function(value)` kept per `value` object, by its identity, the object held (no other
    takes its identity while the entry lives). For values a search hands preflight again and
    again, the very same object (parse_spec reuses the part beside the plan: a model's facts),
    where an LRU would hash and compare a pydantic model field by field on every call. An
    equal copy is a new entry, never a wrong one."""
    memo: Memo[int, tuple[A, V]] = Memo(size)
    get, put = memo.get, memo.put

    def kept(value: A) -> V:
        known = get(id(value))
        if known is None:
            known = put(id(value), (value, function(value)))
        return known[1]

    kept.__name__ = function.__name__
    kept.__doc__ = function.__doc__
    return kept
