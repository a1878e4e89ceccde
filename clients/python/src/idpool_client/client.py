"""The client: ids over HTTP with failover, leased ids in process, snowflake decoding."""

from __future__ import annotations

import re
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._leased import LeasedIds
from ._transport import Transport
from .errors import BusinessNumberError, IdpoolError

_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_DECIMAL = re.compile(r"^\d{1,19}$")
# An integer id as the service writes one: no sign, no leading zero.
_INTEGER_ID = re.compile(r"^(0|[1-9][0-9]{0,18})$")
# What a take may answer: decimal ids, or business numbers (docs/numbers.md).
_TAKEN = re.compile(r"^[A-Za-z0-9_./-]{1,200}$")


@dataclass(frozen=True)
class SnowflakeParts:
    """A snowflake id explained by the service."""

    id: int
    timestamp: str  # start of the id's time unit, ISO 8601
    timestamp_ms: int
    worker: int
    time_back: int
    sequence: int
    reserved: int


class IdpoolClient:
    """Takes ids from idpool, with failover over several instances. Thread-safe.

    Ids are ``int`` (64-bit); on the wire they are decimal strings. Business numbers
    (``INV20261128-000123``) are ``str``, taken with :meth:`take_numbers`. Times are in
    seconds; the defaults are the TypeScript SDK's. ``wait_on_rate_limit``: a 429
    waits its ``Retry-After`` and asks again within the deadline instead of
    raising ``RateLimitedError`` at once (default off, as the SDK).
    """

    def __init__(self, endpoints: Union[str, Sequence[str]], secrets: Mapping[str, str], *,
                 timeout: float = 2.0, deadline: float = 15.0, max_attempts: int = 20, down_for: float = 1.0,
                 max_retry_after: float = 30.0, wait_on_rate_limit: bool = False, lease_prefetch_at: float = 0.1,
                 lease_min_size: Optional[int] = None, lease_max_size: int = 10_000_000,
                 lease_target_segment: float = 1.0, lease_wait: float = 2.0):
        urls = [endpoints] if isinstance(endpoints, str) else list(endpoints)
        if not urls:
            raise ValueError("endpoints must name at least one URL")
        for url in urls:
            if not re.match(r"^https?://[^/]", url):
                raise ValueError(f'endpoint "{url}" must be an http:// or https:// URL')
        for key, secret in secrets.items():
            if not _KEY.match(key):
                raise ValueError(f'entity key "{key}" must be 1-64 of A-Z a-z 0-9 _ - .')
            if not secret:
                raise ValueError(f'entity "{key}" needs its secret')
        for name, value in (("timeout", timeout), ("deadline", deadline), ("max_attempts", max_attempts),
                            ("max_retry_after", max_retry_after)):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if not 0 <= lease_prefetch_at < 1:
            raise ValueError(f"lease_prefetch_at must be in [0, 1), got {lease_prefetch_at}")
        if lease_min_size is not None and not 1 <= lease_min_size <= lease_max_size:
            raise ValueError("lease sizes must be 1 <= lease_min_size <= lease_max_size")
        self._secrets: Dict[str, str] = dict(secrets)
        self._transport = Transport(urls, timeout, deadline, max_attempts, down_for, max_retry_after,
                                    wait_on_rate_limit)
        self._lease_options = (lease_prefetch_at, lease_min_size, lease_max_size, lease_target_segment, lease_wait)
        self._leased: Dict[str, LeasedIds] = {}
        self._lock = threading.Lock()

    def take(self, entity_key: str, count: int = 1) -> List[int]:
        """``count`` new ids of an entity from the service (``POST /apps/:key/ids``). An entity that
        issues business numbers answers strings such as ``INV20261129-000304``: this raises
        ``BusinessNumberError``, which holds them (they are taken); use :meth:`take_numbers`."""
        taken = self._take_strings(entity_key, count)
        # Canonical decimals only: a number such as 000123 would lose its zeros as an int.
        if not all(_INTEGER_ID.match(i) and int(i) < 2**63 for i in taken):
            raise BusinessNumberError(entity_key, taken)
        return [int(i) for i in taken]

    def next(self, entity_key: str) -> int:
        """One new id from the service."""
        return self.take(entity_key, 1)[0]

    def take_numbers(self, entity_key: str, count: int = 1, *, reference: Optional[str] = None,
                     idempotency_key: Optional[str] = None) -> List[str]:
        """``count`` new business numbers of an entity registered with a ``format`` (e.g.
        ``INV20261129-000304``, docs/numbers.md), as the strings the service answers; of a plain
        entity, its ids as decimal strings.

        For a gapless series (docs/numbers.md "Gapless series"), ``reference`` (the invoice's id,
        1-128 characters) is kept in the ledger beside each number. Every attempt of the call carries
        one ``Idempotency-Key``, so a retry after a timeout is answered the numbers already issued;
        ``idempotency_key`` gives the caller's own (e.g. derived from the invoice's id): asked again
        with it, even from another process, the service answers the same numbers (with another
        count or reference, 409 ``conflict``)."""
        return self._take_strings(entity_key, count, reference, idempotency_key)

    def next_number(self, entity_key: str) -> str:
        """One new business number."""
        return self._take_strings(entity_key, 1)[0]

    def _take_strings(self, entity_key: str, count: int, reference: Optional[str] = None,
                      idempotency_key: Optional[str] = None) -> List[str]:
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be a positive integer, got {count!r}")
        body: Dict[str, Any] = {"count": count}
        if reference is not None:
            body["reference"] = reference
        answer = self._transport.send("POST", self._path(entity_key, "/ids"), self._secret(entity_key),
                                      body, idempotency_key=idempotency_key)
        ids = answer.get("ids") if isinstance(answer, dict) else None
        if not isinstance(ids, list) or len(ids) != count:
            raise IdpoolError(f"idpool answered POST /apps/{entity_key}/ids without {count} ids")
        for i in ids:
            if not isinstance(i, str) or not _TAKEN.match(i):
                raise IdpoolError(f"idpool answered POST /apps/{entity_key}/ids with an id that is not a string: {i!r}")
        return ids

    def leased(self, entity_key: str) -> LeasedIds:
        """The in-process leased ids of a ``trend`` entity: one per entity and
        client, shared by every thread. A ``monotonic`` entity's lease is refused
        (``ConflictError``, code ``conflict``)."""
        secret = self._secret(entity_key)
        path = self._path(entity_key, "/segments")
        with self._lock:
            leased = self._leased.get(entity_key)
            if leased is None:
                def fetch(size: Optional[int]) -> dict:
                    # The caller waits for ids, not for a refusal: a 429 is waited out within the deadline.
                    answer = self._transport.send("POST", path, secret, {} if size is None else {"size": size},
                                                  wait_on_rate_limit=True)
                    if not isinstance(answer, dict):
                        raise IdpoolError(f"the lease of {entity_key} came back malformed")
                    return answer

                leased = LeasedIds(entity_key, fetch, *self._lease_options)
                self._leased[entity_key] = leased
            return leased

    def decode(self, entity_key: str, id: int) -> SnowflakeParts:
        """Explains a snowflake id of a ``snowflake`` entity (``GET /apps/:key/ids/:id``)."""
        if not isinstance(id, int) or id < 0:
            raise ValueError(f"id must be a non-negative integer, got {id!r}")
        a = self._transport.send("GET", self._path(entity_key, f"/ids/{id}"), self._secret(entity_key))
        try:
            return SnowflakeParts(_decimal(a["id"]), a["timestamp"], a["timestampMs"], a["worker"], a["timeBack"],
                                  a["sequence"], a["reserved"])
        except (KeyError, TypeError) as err:
            raise IdpoolError(f"idpool answered a decode of {id} in an unknown shape: {a!r}") from err

    def close(self) -> None:
        """Stops leasing; ids still leased are dropped (never handed out)."""
        with self._lock:
            for leased in self._leased.values():
                leased.close()

    def __enter__(self) -> "IdpoolClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _secret(self, entity_key: str) -> str:
        secret = self._secrets.get(entity_key)
        if secret is None:
            raise ValueError(f'entity "{entity_key}" was not configured (secrets)')
        return secret

    @staticmethod
    def _path(entity_key: str, rest: str) -> str:
        return "/apps/" + urllib.parse.quote(entity_key, safe="") + rest


def _decimal(value: object) -> int:
    if not isinstance(value, str) or not _DECIMAL.match(value):
        raise IdpoolError(f"idpool answered an id that is not a decimal string: {value!r}")
    return int(value)
