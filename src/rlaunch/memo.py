"""A bounded memo: a mapping that forgets its least recently used entry beyond a fixed size.

Preflight and spec parsing keep results keyed by exactly what produced them (rlaunch.spec.io,
rlaunch.preflight.engine.runner); a search over role plans sees the same few models, datasets
and settings thousands of times. The bound keeps a long search from growing memory without
limit.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """At most `size` entries; `get` marks an entry used, `put` evicts the least recently used.
    Safe to share between threads (a sweep launches its points from several): `put` takes a
    lock; `get` needs none, as each OrderedDict operation it makes is one step under the GIL
    for keys of builtin types (the memos' keys are bytes, and tuples of ints, str and bytes),
    and an entry evicted between its two steps is a miss."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a memo holds at least 1 entry, got size {size}")
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The entry of `key`, or None when there is none (values are never None)."""
        entries = self._entries
        try:
            entries.move_to_end(key)
            return entries[key]
        except KeyError:
            return None

    def put(self, key: K, value: V) -> V:
        """Keep `value` under `key` and return it."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)
            return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
