"""One logical request with failover, as the TypeScript SDK does it."""

from __future__ import annotations

import email.utils
import json
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from typing import Any, List, Optional

from .errors import IdpoolError, IdpoolHttpError, UnavailableError, http_error

# A dead endpoint costs one connection attempt per 8 s.
_MAX_BACKOFF = 8.0

# 503 codes about one entity that every instance answers alike (its period's numbers are spent; it is held):
# the call ends at once and no endpoint is marked down.
_ENTITY_REFUSALS = frozenset(("period_exhausted", "entity_held", "gapless_ledger_behind"))


class _Endpoint:
    __slots__ = ("url", "not_before", "streak")

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.not_before = 0.0  # monotonic time before which it is not asked again
        self.streak = 0  # failures in a row


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # an id service never redirects; follow nothing
        return None


class Transport:
    """Network errors, timeouts and 5xx move on to the next endpoint (one that
    said ``Retry-After`` is not asked again before then; one failing without it
    is skipped for ``down_for``, doubling up to 8 s); 4xx, 429 included, go
    straight back to the caller (unless ``wait_on_rate_limit`` makes a 429 wait
    its ``Retry-After`` within the deadline). A 503 about one entity never marks an endpoint down:
    ``period_exhausted`` and ``entity_held`` end the call at once (``UnavailableError``, ``refused``),
    ``pool_exhausted`` waits its ``Retry-After`` for this request only. Every attempt of one POST
    carries the same ``Idempotency-Key``."""

    def __init__(self, endpoints: List[str], timeout: float, deadline: float, max_attempts: int,
                 down_for: float, max_retry_after: float, wait_on_rate_limit: bool = False):
        self._endpoints = [_Endpoint(u) for u in endpoints]
        self._timeout = timeout
        self._deadline = deadline
        self._max_attempts = max_attempts
        self._down_for = down_for
        self._max_retry_after = max_retry_after
        self._wait_on_rate_limit = wait_on_rate_limit
        self._lock = threading.Lock()
        self._current = 0
        self._opener = urllib.request.build_opener(_NoRedirect)

    def send(self, method: str, path: str, secret: str, body: Optional[dict] = None,
             wait_on_rate_limit: Optional[bool] = None, idempotency_key: Optional[str] = None) -> Any:
        """The 2xx answer, parsed; ``wait_on_rate_limit`` overrides the client's for this request;
        every attempt of a POST carries ``idempotency_key`` (the caller's), else one made for the call."""
        wait_on_429 = self._wait_on_rate_limit if wait_on_rate_limit is None else wait_on_rate_limit
        deadline = time.monotonic() + self._deadline
        headers = {"Authorization": f"Bearer {secret}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        failures: List[Exception] = []
        for _ in range(self._max_attempts):
            with self._lock:
                index = self._pick()
                endpoint = self._endpoints[index]
                wait = endpoint.not_before - time.monotonic()
            if wait > 0:
                if time.monotonic() + wait >= deadline:
                    raise UnavailableError(
                        f"no endpoint may be asked again within the {self._deadline} s deadline", failures)
                time.sleep(wait)
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                answer = self._attempt(endpoint, method, path, headers, data, min(self._timeout, left))
            except IdpoolHttpError as err:
                if (err.status == 429 and wait_on_429 and err.retry_after is not None
                        and time.monotonic() + err.retry_after < deadline):
                    # Opted in: the entity's limit holds on every instance, so wait it out here and ask again.
                    failures.append(err)
                    time.sleep(err.retry_after)
                    continue
                if err.status < 500:
                    raise
                if err.status == 503 and err.code in _ENTITY_REFUSALS:
                    # About this entity alone and the same on every instance: the call ends, the endpoint stays up.
                    failures.append(err)
                    raise UnavailableError(f"{err.code} holds on every instance", failures, refused=True)
                if err.status == 503 and err.code == "pool_exhausted":
                    # One entity's pool is short: wait for this request only, then ask the next endpoint in turn.
                    failures.append(err)
                    wait = err.retry_after if err.retry_after is not None else self._down_for
                    if time.monotonic() + wait >= deadline:
                        raise UnavailableError(f"its Retry-After ends past the {self._deadline} s deadline", failures)
                    with self._lock:
                        self._current = (index + 1) % len(self._endpoints)
                    time.sleep(wait)
                    continue
                self._failed(failures, endpoint, index, err, err.retry_after)
                continue
            except IdpoolError as err:
                self._failed(failures, endpoint, index, err, None)
                continue
            with self._lock:
                endpoint.not_before = 0.0
                endpoint.streak = 0
                self._current = index
            return answer
        reason = (f"{len(failures)} attempts failed" if len(failures) >= self._max_attempts
                  else f"deadline of {self._deadline} s passed")
        raise UnavailableError(reason, failures)

    def _failed(self, failures: List[Exception], endpoint: _Endpoint, index: int, err: Exception,
                retry_after: Optional[float]) -> None:
        with self._lock:
            failures.append(err)
            endpoint.streak += 1
            # The server's Retry-After is obeyed as given; without one, an endpoint that keeps failing
            # is skipped for longer each time while another one may answer.
            backoff = min(self._down_for * 2 ** min(endpoint.streak - 1, 20), _MAX_BACKOFF)
            endpoint.not_before = time.monotonic() + (retry_after if retry_after is not None else backoff)
            self._current = (index + 1) % len(self._endpoints)

    def _pick(self) -> int:
        """The first endpoint, in turn from the current one, that may be asked now; else the one free soonest."""
        now = time.monotonic()
        n = len(self._endpoints)
        soonest = self._current
        for i in range(n):
            index = (self._current + i) % n
            if self._endpoints[index].not_before <= now:
                return index
            if self._endpoints[index].not_before < self._endpoints[soonest].not_before:
                soonest = index
        return soonest

    def _attempt(self, endpoint: _Endpoint, method: str, path: str, headers: dict, data: Optional[bytes],
                 timeout: float) -> Any:
        request = urllib.request.Request(endpoint.url + path, data=data, headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=timeout) as res:
                status, text, retry_after = res.status, res.read(), None
        except urllib.error.HTTPError as res:
            status, retry_after = res.code, res.headers.get("Retry-After")
            try:
                text = res.read()
            except OSError:
                text = b""
            finally:
                res.close()
        except (socket.timeout, TimeoutError) as err:
            raise IdpoolError(f"{endpoint.url}: no answer within {timeout:.3f} s") from err
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise IdpoolError(f"{endpoint.url}: no answer within {timeout:.3f} s") from err
            raise IdpoolError(f"{endpoint.url}: {reason}") from err
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = None
        if 200 <= status < 300:
            if parsed is None:
                raise IdpoolError(f"{endpoint.url}: answer {status} is not JSON")
            return parsed
        code, message = f"http_{status}", text[:200].decode("utf-8", "replace") or "no message"
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(error, dict):
            if isinstance(error.get("code"), str):
                code = error["code"]
            if isinstance(error.get("message"), str):
                message = error["message"]
        # A refusal's Retry-After is never waited for here: the caller gets it as said (the next period may be an hour off).
        cap = float("inf") if code in _ENTITY_REFUSALS else self._max_retry_after
        raise http_error(status, code, message, endpoint.url, retry_after_seconds(retry_after, cap))


def retry_after_seconds(value: Optional[str], cap: float) -> Optional[float]:
    """``Retry-After`` in seconds: delta-seconds or an HTTP date; capped; None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(int(value))
    else:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), cap)
