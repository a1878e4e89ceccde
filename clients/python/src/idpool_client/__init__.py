"""idpool client: ids over HTTP with failover, in-process ids from leased
segments (Leaf's double buffer), snowflake decoding. Standard library only."""

from ._leased import LeasedIds
from .client import IdpoolClient, SnowflakeParts
from .errors import (BusinessNumberError, ConflictError, IdpoolError, IdpoolHttpError, InvalidRequestError, LeaseNotReadyError,
                     NotFoundError, RateLimitedError, UnauthorizedError, UnavailableError)

__all__ = [
    "IdpoolClient", "LeasedIds", "SnowflakeParts", "IdpoolError", "IdpoolHttpError", "InvalidRequestError",
    "UnauthorizedError", "NotFoundError", "ConflictError", "RateLimitedError", "UnavailableError",
    "LeaseNotReadyError", "BusinessNumberError",
]
__version__ = "0.1.0"
