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
    """Every attempt failed (network errors, timeouts, 5xx) or the deadline came first, or (``refused``)
    the service refused the entity alone, alike on every instance (503 ``period_exhausted``,
    ``entity_held``): asked once, no endpoint marked down.

    ``attempts`` holds each failure in order, ``last_error`` the final one, ``last_answer`` the
    last answer a service gave (status, code, message), which the message leads with: an endpoint
    that answered 503 says more than another one that refused connections after it.
    """

    def __init__(self, reason: str, attempts: List[Exception], refused: bool = False):
        last = attempts[-1] if attempts else None
        answer = _last_answer(attempts)
        if refused and answer is not None:
            text = f"idpool unavailable: {answer} (the same on every instance: not asked again)"
        else:
            text = f"idpool unavailable: {reason}"
            if answer is not None:
                text += f"; last answer: {answer}"
            if last is not None and last is not answer:
                text += f"; last error: {last}"
        super().__init__(text)
        self.attempts = attempts
        # True when the answer concerns the entity alone, alike on every instance: asked once, no endpoint marked down.
        self.refused = refused
        self.__cause__ = answer if answer is not None else last

    @property
    def last_error(self) -> Optional[Exception]:
        return self.attempts[-1] if self.attempts else None

    @property
    def last_answer(self) -> Optional[IdpoolHttpError]:
        """The last error answer of a service among the attempts; None when none answered."""
        return _last_answer(self.attempts)


def _last_answer(attempts: List[Exception]) -> Optional[IdpoolHttpError]:
    return next((a for a in reversed(attempts) if isinstance(a, IdpoolHttpError)), None)


class BusinessNumberError(IdpoolError):
    """``take`` (int ids) was answered with ids that are not 64-bit integers: the entity issues
    business numbers (registered with a ``format``, e.g. ``INV20261129-000304``). The service has
    handed them out, so they are here, in ``numbers``, for the caller to use or record; take them
    with ``take_numbers`` from now on."""

    def __init__(self, entity_key: str, numbers: List[str]):
        first = f'"{numbers[0]}"' if numbers else "no ids"
        super().__init__(f'entity "{entity_key}" answered {first}, not a 64-bit integer id: it issues business '
                         f'numbers; take them with take_numbers("{entity_key}", count) '
                         f"(the {len(numbers)} taken are in .numbers)")
        self.entity_key = entity_key
        self.numbers = numbers


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
