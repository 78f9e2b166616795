"""What a postgres store's login is in the environment: libpq's variables that carry
one, and the secrets a DSN holds (`dsn_credentials`).

Standard library only (`stockade exec` withholds them from its command without
loading psycopg): the DSN is parsed, which loads psycopg, only when it may carry a
password inline; else it is withheld whole and no password is looked for.
"""

from __future__ import annotations

# libpq's variables that carry a login: with a postgres session store the harness's
# own connection reads them, so no command gets them whatever its policy says
# (docs/security.md, "Secrets: the environment").
LIBPQ_CREDENTIALS: tuple[str, ...] = (
    "PGPASSWORD",
    "PGPASSFILE",
    "PGSERVICE",
    "PGSERVICEFILE",
    "PGSSLCERT",
    "PGSSLKEY",
)

# A DSN with none of these carries no password inline: `password=` (a keyword, or a
# URI's query parameter), a URI's `user:password@`, or a keyword percent-encoded.
_PASSWORD_WORDS = ("password", "@", "%")


def dsn_credentials(dsn: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names, values) no command's environment may hold beside a store on `dsn`:
    libpq's login variables, and the DSN and its password as values (so whatever
    variable `dsn: !env VAR` read them from is dropped too)."""
    password = ""
    lowered = dsn.lower()
    if any(word in lowered for word in _PASSWORD_WORDS):
        from ....errors import ConfigError
        from .connections import dsn_parts

        try:
            password = dsn_parts(dsn).get("password", "")
        except ConfigError:  # the store says so when made; the whole DSN is still withheld
            password = ""
    return LIBPQ_CREDENTIALS, (dsn, password)
