"""Where the store lives and opening it: the URL (`$COACHCTX_STORE`, else a per-user SQLite file),
the checks on a SQLite file, and the database errors every operation turns into `StoreError`."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Self

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from coachctx.reading import control_character, printable
from coachctx.tools.store import tables
from coachctx.tools.store.errors import MissingStoreError, StoreError

STORE_ENV: Final = "COACHCTX_STORE"
DEFAULT_STORE_FILE: Final = Path("~/.coachctx/policies.sqlite")
ACCEPTED_STORES: Final = ("a SQLite file in an existing directory (a path, or sqlite:///PATH), or a SQLAlchemy URL "
                          "such as postgresql://user@host/db")


def default_store_url(env: Mapping[str, str] | None = None) -> str:
    """`$COACHCTX_STORE` (a URL or a SQLite file path), else `~/.coachctx/policies.sqlite`."""
    value = (os.environ if env is None else env).get(STORE_ENV, "").strip()
    if value:
        return value if "://" in value else _sqlite_url(Path(value))
    return _sqlite_url(DEFAULT_STORE_FILE)


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path.expanduser()}"


class Database:
    """An open store: its engine, its tables created, and database errors named as the store's.
    The parts of `PolicyStore` (versions, drafts, question labels) stand on it."""

    def __init__(self, url: str | None = None, *, create: bool = True) -> None:
        """`create=False` opens an existing store only: a SQLite file that does not exist is
        `MissingStoreError`, and nothing is written (for commands that only read)."""
        self.url = url if url is not None else default_store_url()
        bad = control_character(self.url)
        if bad is not None:  # a lone surrogate (bytes that were not UTF-8) or a newline: no URL holds one
            raise StoreError(f"store URL {printable(self.url)[:200]!r} holds the character {bad}, which no "
                             "database URL or file name here may hold")
        try:
            parsed = sa.engine.make_url(self.url)
        except (SQLAlchemyError, ValueError) as e:
            raise StoreError(f"store URL {self.url!r} is not a database URL ({e})") from e
        self.display_url = parsed.render_as_string(hide_password=True)
        self._sqlite = parsed.get_backend_name() == "sqlite"
        if self._sqlite:
            _check_sqlite_url(parsed, self.display_url)
            _check_sqlite_file(Path(parsed.database or "").expanduser(), create=create)
        try:
            self.engine: Engine = sa.create_engine(parsed)
        except ImportError as e:  # the URL names a database whose driver is not installed
            hint = "; for PostgreSQL: pip install 'coachctx[postgres]'" if parsed.get_backend_name() == "postgresql" else ""
            raise StoreError(f"cannot use store {self.display_url}: its database driver is not installed ({e}){hint}") from e
        except (SQLAlchemyError, ValueError, TypeError) as e:
            # ValueError, TypeError: a query argument the driver cannot take (`?timeout=abc`)
            raise StoreError(f"cannot use store {self.display_url}: {e}") from e
        if self._sqlite:
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        with self._errors("open"):
            if self._sqlite:
                self._check_not_foreign()
            tables.metadata.create_all(self.engine)

    def _check_not_foreign(self) -> None:
        """A SQLite file that holds tables but none of the store's is another program's database:
        adding the store's tables to it would change a file coachctx does not own (a typo in
        --store naming an app's data file)."""
        found = set(sa.inspect(self.engine).get_table_names())
        ours = set(tables.metadata.tables)
        if found and not found & ours:
            names = ", ".join(sorted(found)[:5]) + (", ..." if len(found) > 5 else "")
            raise StoreError(f"store {self.display_url} is another program's SQLite database (it holds the tables "
                             f"{names} and none of a policy store's); coachctx adds nothing to it: name a file of "
                             f"its own ({ACCEPTED_STORES})")

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def writing(self, doing: str) -> Iterator[Connection]:
        """A transaction that reads and then writes, with database errors named as the store's
        (`doing`). On SQLite it takes the write lock before its first read (BEGIN IMMEDIATE): the
        driver otherwise begins at the first INSERT, after the reads, and two processes reading the
        same state at once (two `labels import`s of one file) both wrote as if alone. Another
        writer waits for it (`busy_timeout`), as it waits for another."""
        with self._errors(doing), self.engine.begin() as conn:
            if self._sqlite:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            yield conn

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except SQLAlchemyError as e:
            cause = getattr(e, "orig", None) or e
            raise StoreError(f"store {self.display_url}: cannot {doing}: {cause}{locked_hint(cause)}") from e


def locked_hint(cause: object) -> str:
    """What to do about SQLite's "database is locked": another process held the store for longer
    than the wait for a lock."""
    if "locked" not in str(cause):
        return ""
    return "; another process held this store for more than 10 s: try again when it has finished"


SQLITE_QUERY: Final = frozenset({"timeout"})
"""The SQLite URL arguments a store takes: the wait for a lock, in seconds."""
MAX_SQLITE_TIMEOUT_S: Final = 3600.0
"""An hour: `?timeout=-5`, `nan` and `1e999` were taken as they were (an adversarial pass)."""


def _check_sqlite_url(url: sa.engine.URL, shown: str) -> None:
    """A SQLite store is a file, named plainly: an in-memory database would forget every saved
    version when the command ends while reporting it saved, and URI arguments (`mode=ro`,
    `mode=memory`) would be ignored or would change what the path names."""
    if url.database in (None, "", ":memory:"):
        raise StoreError(f"store {shown} is an in-memory SQLite database, which forgets everything when the "
                         f"command ends; name a file: sqlite:///PATH ({ACCEPTED_STORES})")
    if "#" in url.database:
        raise StoreError(f"store {shown}: a '#' in a SQLite URL would become part of the file name "
                         f"({Path(url.database).name}), not a URL fragment; name the file without '#'")
    unknown = sorted(set(url.query) - SQLITE_QUERY)
    if unknown:
        raise StoreError(f"store {shown}: the SQLite URL argument(s) {', '.join(unknown)} are not taken here; "
                         f"a store URL takes only {', '.join(sorted(SQLITE_QUERY))}")
    timeout = url.query.get("timeout")
    if timeout is not None:
        try:
            seconds = float(timeout if isinstance(timeout, str) else timeout[-1])
        except ValueError:
            seconds = math.nan
        if not 0 <= seconds <= MAX_SQLITE_TIMEOUT_S:  # NaN, a negative or an endless wait
            raise StoreError(f"store {shown}: timeout must be a number of seconds from 0 to {MAX_SQLITE_TIMEOUT_S:g}, "
                             f"got {timeout!r}")


def _check_sqlite_file(path: Path, *, create: bool = True) -> None:
    """Only the per-user default's directory is created; any other path must be in a directory that
    exists (a typo in --store must not leave a tree of directories behind), and must be a file
    if it exists (SQLite would block forever on a FIFO). Without `create`, the file must exist:
    SQLite would create an empty one on connecting, and a read must leave nothing behind."""
    default = DEFAULT_STORE_FILE.expanduser()
    if path == default:
        if create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:  # HOME unwritable, or a file where the directory should be
                raise StoreError(f"store {path}: cannot create {path.parent}: {e.strerror or e}") from e
    elif not path.parent.is_dir():
        raise StoreError(f"store {path}: the directory {path.parent} does not exist, and coachctx creates no "
                         f"directories but its default ({default.parent}); use {ACCEPTED_STORES}")
    if not create and not path.exists():
        raise MissingStoreError(f"store {path} does not exist: nothing has been saved there yet (save a "
                                "version with `coachctx policy save FILE -m MESSAGE`)")
    if path.exists() and not path.is_file():
        raise StoreError(f"store {path} is not a regular file; use {ACCEPTED_STORES}")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")  # another process saving: wait, do not fail at once
    cursor.close()
