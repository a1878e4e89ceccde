"""Errors the client raises; HTTP ones carry the service's stable ``code``."""

from __future__ import annotations

from typing import List, Optional


class IdpoolError(Exception):
    """Base of every error the client raises."""


class IdpoolHttpError(IdpoolError):
    """The service answered with an error status.

    ``code`` is the service's stable error code (the JSON ``error.code``:
    ``invalid_request``, ``unauthorized``, ``not_found``, ``conflict``,
    ``rate_limited``, ``pool_exhausted``, ``unavailable``, ...);
    ``retry_after`` is ``Retry-After`` in seconds (capped), or None.
    """

    def __init__(self, status: int, code: str, message: str, endpoint: str, retry_after: Optional[float]):
        super().__init__(f"{endpoint}: {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.endpoint = endpoint
        self.retry_after = retry_after


class InvalidRequestError(IdpoolHttpError):
    """400: a malformed request (bad count, key or size)."""


class UnauthorizedError(IdpoolHttpError):
    """401: the entity's secret is wrong (or was rotated)."""


class NotFoundError(IdpoolHttpError):
    """404: no such entity."""


class ConflictError(IdpoolHttpError):
    """409: e.g. a lease asked of a monotonic entity."""


class RateLimitedError(IdpoolHttpError):
    """429: the entity's ids-per-second limit; ``retry_after`` says when to try again. Not retried."""


class UnavailableError(IdpoolError):
    """Every attempt failed (network errors, timeouts, 5xx) or the deadline came first."""

    def __init__(self, reason: str, attempts: List[Exception]):
        last = f"; last error: {attempts[-1]}" if attempts else ""
        super().__init__(f"idpool unavailable: {reason}{last}")
        self.attempts = attempts

    @property
    def last_error(self) -> Optional[Exception]:
        return self.attempts[-1] if self.attempts else None


class LeaseNotReadyError(IdpoolError):
    """Both leased segments are used up and the next lease did not come within ``lease_wait``."""


_BY_STATUS = {
    400: InvalidRequestError,
    401: UnauthorizedError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitedError,
}


def http_error(status: int, code: str, message: str, endpoint: str, retry_after: Optional[float]) -> IdpoolHttpError:
    """The typed error for an error answer."""
    return _BY_STATUS.get(status, IdpoolHttpError)(status, code, message, endpoint, retry_after)
