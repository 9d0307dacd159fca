"""The versioned policy store: immutable versions, labels that point at them, optimistic saves.

Where it lives
    `PolicyStore(url)` takes any SQLAlchemy URL (PostgreSQL when several app instances share
    one store). Without a URL it reads `$COACHCTX_STORE` (a URL, or a plain file path meaning
    a SQLite file), and without that it uses the SQLite file `~/.coachctx/policies.sqlite`,
    per user and outside the repository, so a `git pull` never touches saved versions. The
    file, its directory and the tables are created when a store is opened to write (the default,
    as `policy save` and the app open it); `create=False`, as every command that only reads opens
    it, refuses a SQLite file that does not exist instead of creating an empty one.

What it keeps
    A version is immutable: the policy's YAML as the coach wrote it (comments included), its
    digest (`policy_digest`, layout-independent), author, message, time and parent version.
    Every version is validated before it is stored. A label (`live`, `draft`, ...) points at
    one version; every move of a label is logged, so a revert is visible in the history.

Optimistic saving
    A save names the version it was based on. When it moves a label whose head is no longer
    that version, it is refused (`StaleSaveError`) instead of silently replacing another
    coach's change. The label moves by compare-and-swap (`UPDATE ... WHERE version = base`)
    inside the same transaction that inserts the version, so two savers racing on any
    database cannot both win, and a process killed mid-save leaves the version whole or
    absent.

Question labels
    Beside the versions, a table of questions labelled with the intents that would have been
    right (`QuestionLabel`: question, athlete, intents, the fragments the answer needed, author,
    time, the policy digest and route source of the decision that was labelled). They are what
    `coachctx suggest` and the playground's Suggest tab learn from; `coachctx labels export|import`
    moves them as JSONL. Every label is checked before it is stored (`check_question_label`).

`policy show` prints a version with a first line `# coachctx policy version N ...`; `save`
reads that line back as the base, so "show, edit, save" is safe without remembering N.

The parts, one module each: `database` (where the store lives, opening it), `tables` (the schema),
`versions` (versions, labels and saving), `drafts`, `question_labels`, `header` (the first line of
an exported version), `checks` (what a write must pass), `errors`, `policy_ref` (naming a policy),
and `policy_store`, which puts the parts together as `PolicyStore`.
"""

from __future__ import annotations

from coachctx.tools.store.checks import (
    LABEL_PATTERN,
    MAX_AUTHOR_CHARS,
    MAX_MESSAGE_CHARS,
    VERSION_LIKE,
    check_label,
)
from coachctx.tools.store.database import (
    ACCEPTED_STORES,
    DEFAULT_STORE_FILE,
    STORE_ENV,
    default_store_url,
)
from coachctx.tools.store.drafts import (
    DRAFT_ID_PATTERN,
    DRAFT_MAX_AGE,
    MAX_DRAFT_CHARS,
    MAX_DRAFTS,
    Draft,
)
from coachctx.tools.store.errors import (
    ChangedVersionError,
    MissingStoreError,
    NoChangeError,
    StaleSaveError,
    StoreError,
    UnknownVersionError,
)
from coachctx.tools.store.header import (
    HEADER_PREFIX,
    based_on,
    export_text,
    strip_header,
)
from coachctx.tools.store.policy_ref import (
    PolicyRef,
    looks_like_file,
    resolve_policy,
)
from coachctx.tools.store.policy_store import (
    PolicyStore,
)
from coachctx.tools.store.question_labels import (
    ATHLETE_PATTERN,
    DIGEST_PATTERN,
    ORIGINS,
    ROUTE_SOURCES,
    QuestionLabel,
    check_question_label,
)
from coachctx.tools.store.versions import (
    Label,
    LabelMove,
    Version,
)

__all__ = [
    "LABEL_PATTERN",
    "MAX_AUTHOR_CHARS",
    "MAX_MESSAGE_CHARS",
    "VERSION_LIKE",
    "check_label",
    "ACCEPTED_STORES",
    "DEFAULT_STORE_FILE",
    "STORE_ENV",
    "default_store_url",
    "DRAFT_ID_PATTERN",
    "DRAFT_MAX_AGE",
    "MAX_DRAFT_CHARS",
    "MAX_DRAFTS",
    "Draft",
    "MissingStoreError",
    "NoChangeError",
    "StaleSaveError",
    "StoreError",
    "ChangedVersionError",
    "UnknownVersionError",
    "HEADER_PREFIX",
    "based_on",
    "export_text",
    "strip_header",
    "PolicyRef",
    "looks_like_file",
    "resolve_policy",
    "PolicyStore",
    "ATHLETE_PATTERN",
    "DIGEST_PATTERN",
    "ORIGINS",
    "ROUTE_SOURCES",
    "QuestionLabel",
    "check_question_label",
    "Label",
    "LabelMove",
    "Version",
]
