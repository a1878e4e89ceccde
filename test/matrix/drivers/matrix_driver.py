"""The Python client at each door of the matrix (test/matrix/run.ts): for each
entity of $MATRIX_ENTITIES (key=secret;…) a take of $TAKE ids (business
numbers, with take_numbers, for the keys of $MATRIX_NUMBERS), then $LEASED
leased ids, one line each on stdout: `ids KEY DOOR ID…`, `refused KEY DOOR
STATUS CODE` (the service's answer), or `error KEY DOOR MESSAGE` (anything
else the client raised). The same protocol as the Java and Go drivers beside it.
"""

import os

from idpool_client import IdpoolClient, IdpoolHttpError


def answer(key, door, call):
    try:
        print("ids", key, door, *call(), flush=True)
    except IdpoolHttpError as err:
        print("refused", key, door, err.status, err.code, flush=True)
    except Exception as err:  # the cell shows what the client raised
        print("error", key, door, repr(err).replace("\n", " "), flush=True)


def main():
    entities = dict(e.split("=", 1) for e in os.environ["MATRIX_ENTITIES"].split(";"))
    numbers = set(os.environ.get("MATRIX_NUMBERS", "").split(","))
    take, leased = int(os.environ["TAKE"]), int(os.environ["LEASED"])
    # A 5 s deadline: a cell waiting longer fails (issue 45).
    with IdpoolClient([os.environ["MATRIX_URL"]], entities, deadline=5.0, lease_wait=5.0) as c:
        for key in entities:
            answer(key, "take", lambda: (c.take_numbers if key in numbers else c.take)(key, take))
            answer(key, "leased", lambda: [c.leased(key).next() for _ in range(leased)])


main()
