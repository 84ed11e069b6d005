"""Schema migration 13: what finding a trace reads (storage/trace_query.py) and the
per-session summary (storage/session_summaries.py).

* An index of the summaries for each sort (the same expressions as the queries'), and
  one for the user filter.
* The LLM text of each stored span row that has any (`span_texts`, as its distinct
  words, case-folded, from storage/text_words.py), indexed: an FTS5 table over it on
  SQLite, a `tsvector` column and a GIN index on PostgreSQL; neither stems, nor drops
  diacritics (FTS5's tokenizer told not to).
* The attribute index (`trace_attributes`: project, key, value hash, trace; one row a
  distinct pair of a trace) and the span-name index (`trace_span_names`, with the
  project's distinct names in `project_span_names`).
* The session summaries.

A stored span row that is replaced or deleted (the re-sending rules, erasure, SQLite's
retention) has a trigger delete its text and copy its name and attributes to
`trace_index_stale` (on SQLite, from migration 14, the writer does it for a replaced
row): the writer then removes those of its trace's attribute and name rows that no
stored span of the trace still gives (storage/trace_index.py), so neither table needs
an index by trace, which every insert would pay for. A trace summary written or
deleted has a trigger note its sessions in `session_stale`, whose summaries are made
anew the same way.
"""

from __future__ import annotations

from storage.find_upgrade import WORDED
from storage.text_words import TOKENIZE
from storage.trace_query import COST, DURATION, TOKENS

_COMMON = (
    f"CREATE INDEX trace_summaries_duration ON trace_summaries (project_id, {DURATION}, trace_id)",
    f"CREATE INDEX trace_summaries_cost ON trace_summaries (project_id, {COST}, trace_id)",
    f"CREATE INDEX trace_summaries_tokens ON trace_summaries (project_id, {TOKENS}, trace_id)",
    "CREATE INDEX trace_summaries_user ON trace_summaries "
    "(project_id, user_id, sort_ns, trace_id) WHERE user_id IS NOT NULL",
    """CREATE TABLE trace_attributes (
        project_id TEXT NOT NULL,
        attr_key TEXT NOT NULL,
        value_hash BIGINT NOT NULL,
        trace_id TEXT NOT NULL,
        PRIMARY KEY (project_id, attr_key, value_hash, trace_id)){keyed}""",
    """CREATE TABLE trace_span_names (
        project_id TEXT NOT NULL,
        name TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        PRIMARY KEY (project_id, name, trace_id)){keyed}""",
    """CREATE TABLE project_span_names (
        project_id TEXT NOT NULL,
        name TEXT NOT NULL,
        PRIMARY KEY (project_id, name)){keyed}""",
    """CREATE TABLE trace_index_stale (
        project_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        name TEXT NOT NULL,
        attributes TEXT NOT NULL)""",
    """CREATE TABLE session_summaries (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        trace_count BIGINT NOT NULL,
        start_ns BIGINT NOT NULL,
        end_ns BIGINT,
        last_ns BIGINT NOT NULL,
        error_count BIGINT NOT NULL,
        input_tokens BIGINT,
        output_tokens BIGINT,
        cost_usd DOUBLE PRECISION,
        user_id TEXT,
        PRIMARY KEY (project_id, session_id))""",
    "CREATE INDEX session_summaries_recent ON session_summaries (project_id, last_ns, session_id)",
    "CREATE INDEX session_summaries_user ON session_summaries "
    "(project_id, user_id, last_ns, session_id) WHERE user_id IS NOT NULL",
    """CREATE TABLE session_stale (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        PRIMARY KEY (project_id, session_id))""",
)

_SAME_ROW = (
    "project_id = OLD.project_id AND trace_id = OLD.trace_id AND span_id = OLD.span_id "
    "AND start_day = OLD.start_day"
)


def _sqlite_stale(row: str) -> str:
    """SQLite: a trigger's statement noting the session of `row` (NEW or OLD) stale. Not
    INSERT OR IGNORE: a trigger's statement takes the conflict policy of the statement
    that fired it (an upsert's: abort)."""
    return (
        f"INSERT INTO session_stale SELECT {row}.project_id, {row}.session_id "
        f"WHERE {row}.session_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM session_stale "
        f"WHERE project_id = {row}.project_id AND session_id = {row}.session_id);"
    )


#: The tables that are their key: SQLite keeps them in the key's b-tree alone (no rowid
#: table beside it: half the size, one b-tree written a row).
SQLITE = (
    *(statement.replace("{keyed}", " WITHOUT ROWID") for statement in _COMMON),
    """CREATE TABLE span_texts (
        id INTEGER PRIMARY KEY,
        project_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        span_id TEXT NOT NULL,
        start_day TEXT NOT NULL,
        body TEXT NOT NULL,
        UNIQUE (project_id, trace_id, span_id, start_day))""",
    "CREATE INDEX span_texts_day ON span_texts (start_day)",
    "CREATE VIRTUAL TABLE span_text_words USING fts5(body, content='span_texts', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    """CREATE TRIGGER span_texts_added AFTER INSERT ON span_texts BEGIN
        INSERT INTO span_text_words (rowid, body) VALUES (NEW.id, NEW.body); END""",
    """CREATE TRIGGER span_texts_removed AFTER DELETE ON span_texts BEGIN
        INSERT INTO span_text_words (span_text_words, rowid, body)
        VALUES ('delete', OLD.id, OLD.body); END""",
    *(
        f"""CREATE TRIGGER spans_{what} AFTER {event} ON spans BEGIN
        DELETE FROM span_texts WHERE {_SAME_ROW};
        INSERT INTO trace_index_stale
        VALUES (OLD.project_id, OLD.trace_id, OLD.name, OLD.attributes); END"""
        for what, event in (("replaced", "UPDATE"), ("removed", "DELETE"))
    ),
    *(
        f"""CREATE TRIGGER trace_summaries_{what} AFTER {event} ON trace_summaries
        WHEN {" OR ".join(f"{r}.session_id IS NOT NULL" for r in rows)} BEGIN
        {" ".join(_sqlite_stale(r) for r in rows)} END"""
        for what, event, rows in (
            ("added", "INSERT", ("NEW",)),
            ("changed", "UPDATE", ("NEW", "OLD")),
            ("removed", "DELETE", ("OLD",)),
        )
    ),
)

#: The insert trigger of SQLite's texts, dropped: the writer gives FTS5 a batch's texts
#: in one statement (storage/trace_index.py, `_insert`), where the trigger's insert of
#: each made FTS5 write a segment of one text at its statement's savepoint (then merged
#: with the others): a GenAI span's 3.3 KB text cost 100-113 us to store and index,
#: 57-60 us in one statement.
SQLITE_WRITER_INDEXES_TEXTS = "DROP TRIGGER span_texts_added"

#: SQLite, schema migration 19: the full-text index keeps which texts hold each word,
#: not where in them (`detail=none`), which a text of distinct words does not need and
#: the `text` filter never asked: GenAI spans were stored 30-45% faster (bench_worker
#: --genai, alternated runs). FTS5 then refuses a phrase of more than one token, and the
#: filter asks for each token (storage/index_filters.py); the tokenizer keeps whole the
#: few letters of Python's its tables split at (storage/text_words.py: TOKENIZER), so
#: that a stored word is one token. The texts stored are indexed anew, in the migration
#: (19-26 us a text: about 20 s a million).
SQLITE_TEXT_INDEX_WITHOUT_POSITIONS = (
    "DROP TABLE IF EXISTS span_text_words",
    "CREATE VIRTUAL TABLE span_text_words USING fts5(body, content='span_texts', "
    f"content_rowid='id', detail=none, tokenize={TOKENIZE})",
    "INSERT INTO span_text_words (span_text_words) VALUES ('rebuild')",
)

#: PostgreSQL: a text's words are the worker's to give (storage/text_words.py), no
#: longer computed from the text by PostgreSQL's parser (`to_tsvector`), which cost the
#: server about 500 us a model call's 3 KB of text. The words stored keep their values
#: until the worker's next start gives them anew (storage/find_upgrade.py).
POSTGRES_WORKER_GIVES_WORDS = "ALTER TABLE span_texts ALTER COLUMN words DROP EXPRESSION"

#: The update trigger of SQLite's spans, dropped: the writer notes a replaced row
#: itself (storage/trace_index.py, `note_replaced`).
SQLITE_WRITER_NOTES_REPLACED = "DROP TRIGGER spans_replaced"

POSTGRES = (
    *(statement.replace("{keyed}", "") for statement in _COMMON),
    """CREATE TABLE span_texts (
        project_id TEXT COLLATE "C" NOT NULL,
        trace_id TEXT COLLATE "C" NOT NULL,
        span_id TEXT COLLATE "C" NOT NULL,
        start_day TEXT COLLATE "C" NOT NULL,
        body TEXT NOT NULL,
        words tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED,
        PRIMARY KEY (project_id, trace_id, span_id, start_day))""",
    "CREATE INDEX span_texts_words ON span_texts USING GIN (words)",
    "CREATE INDEX span_texts_day ON span_texts (start_day)",
    f"""CREATE FUNCTION spans_changed() RETURNS trigger LANGUAGE plpgsql AS $body$
    BEGIN
        DELETE FROM span_texts WHERE {_SAME_ROW};
        INSERT INTO trace_index_stale
        VALUES (OLD.project_id, OLD.trace_id, OLD.name, OLD.attributes);
        RETURN NULL;
    END $body$""",
    "CREATE TRIGGER spans_changed AFTER UPDATE OR DELETE ON spans "
    "FOR EACH ROW EXECUTE FUNCTION spans_changed()",
    """CREATE FUNCTION trace_summaries_changed() RETURNS trigger LANGUAGE plpgsql AS $body$
    BEGIN
        IF TG_OP <> 'DELETE' AND NEW.session_id IS NOT NULL THEN
            INSERT INTO session_stale VALUES (NEW.project_id, NEW.session_id)
            ON CONFLICT DO NOTHING;
        END IF;
        IF TG_OP <> 'INSERT' AND OLD.session_id IS NOT NULL THEN
            INSERT INTO session_stale VALUES (OLD.project_id, OLD.session_id)
            ON CONFLICT DO NOTHING;
        END IF;
        RETURN NULL;
    END $body$""",
    *(
        f"CREATE TRIGGER trace_summaries_{what} AFTER {event} ON trace_summaries "
        f"FOR EACH ROW WHEN ({when}) EXECUTE FUNCTION trace_summaries_changed()"
        for what, event, when in (
            ("added", "INSERT", "NEW.session_id IS NOT NULL"),
            ("changed", "UPDATE", "NEW.session_id IS NOT NULL OR OLD.session_id IS NOT NULL"),
            ("removed", "DELETE", "OLD.session_id IS NOT NULL"),
        )
    ),
)

#: PostgreSQL, schema migration 15: what the planner needs to choose between walking
#: a sort's index and driving from a filter's matches, and a bound on what a word's
#: lookup reads.
#:
#: * It guessed that `LOWER(root_name) LIKE …` keeps few rows (it has no statistics of
#:   the expression) and sorted the project's summaries.
#: * It multiplied the selectivities of an attribute's key and value hash as if they
#:   were independent (the hash gives the key): of pairs that 1 trace in 20 has, it
#:   guessed 1 in 130, and joined all of them.
#: * A GIN index keeps new entries in a pending list that every search reads whole, up
#:   to `gin_pending_list_limit` (4 MB by default) until a vacuum or an insert past the
#:   limit merges it: a rare word cost 3.9 ms on a store of 200,000 spans with a full
#:   list, 0.12 ms without. 128 kB bounds that read; the insert that passes the limit
#:   merges the list, more often and each time less (the find indexes' lists are 4 MB
#:   from schema 27, merged by each of the worker's batches: storage/gin_pending.py).
#:
#: The tables are analysed at once, so that an upgraded store plans by the statistics
#: before autovacuum's next pass.
POSTGRES_PLANNING = (
    "CREATE STATISTICS trace_summaries_root_name ON (LOWER(root_name)) FROM trace_summaries",
    "CREATE STATISTICS trace_attributes_pairs (dependencies, mcv) "
    "ON attr_key, value_hash FROM trace_attributes",
    "ALTER INDEX span_texts_words SET (gin_pending_list_limit = 128)",
    "ANALYZE trace_summaries",
    "ANALYZE trace_attributes",
)

#: Schema migration 20: the LLM text's words kept as documents of a trace's day
#: (`trace_texts`, storage/trace_texts.py), each a batch's spans of it, their words given
#: once, where a row of each span gave its own; `span_texts` keeps each span's previews.
#: A row noted stale notes its start day, whose documents are made anew. The documents
#: of the texts stored are made on SQLite here, one a trace's day, of their words; on
#: PostgreSQL by the words walk (storage/find_upgrade.py), from the spans.
SQLITE_TRACE_TEXTS = (
    """CREATE TABLE trace_texts (
        id INTEGER PRIMARY KEY,
        project_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        start_day TEXT NOT NULL,
        body TEXT NOT NULL)""",
    "INSERT INTO trace_texts (project_id, trace_id, start_day, body) "
    "SELECT project_id, trace_id, start_day, group_concat(body, ' ') FROM span_texts "
    "GROUP BY project_id, trace_id, start_day ORDER BY MAX(id)",
    "CREATE INDEX trace_texts_trace ON trace_texts (project_id, trace_id, start_day)",
    "CREATE INDEX trace_texts_day ON trace_texts (start_day)",
    "CREATE VIRTUAL TABLE trace_text_words USING fts5(body, content='trace_texts', "
    f"content_rowid='id', detail=none, tokenize={TOKENIZE})",
    "INSERT INTO trace_text_words (trace_text_words) VALUES ('rebuild')",
    """CREATE TRIGGER trace_texts_removed AFTER DELETE ON trace_texts BEGIN
        INSERT INTO trace_text_words (trace_text_words, rowid, body)
        VALUES ('delete', OLD.id, OLD.body); END""",
    # span_texts made anew without its words (ALTER TABLE DROP COLUMN wants SQLite 3.35),
    # before the trigger that names it is created again
    "DROP TRIGGER span_texts_removed",
    "DROP TABLE span_text_words",
    "DROP TRIGGER spans_removed",
    """CREATE TABLE span_previews (
        id INTEGER PRIMARY KEY,
        project_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        span_id TEXT NOT NULL,
        start_day TEXT NOT NULL,
        previews TEXT,
        UNIQUE (project_id, trace_id, span_id, start_day))""",
    "INSERT INTO span_previews SELECT id, project_id, trace_id, span_id, start_day, previews "
    "FROM span_texts",
    "DROP TABLE span_texts",
    "ALTER TABLE span_previews RENAME TO span_texts",
    "CREATE INDEX span_texts_day ON span_texts (start_day)",
    "ALTER TABLE trace_index_stale ADD COLUMN start_day TEXT",
    f"""CREATE TRIGGER spans_removed AFTER DELETE ON spans BEGIN
        DELETE FROM span_texts WHERE {_SAME_ROW};
        INSERT INTO trace_index_stale (project_id, trace_id, name, attributes, start_day)
        VALUES (OLD.project_id, OLD.trace_id, OLD.name, OLD.attributes, OLD.start_day); END""",
)
POSTGRES_TRACE_TEXTS = (
    """CREATE TABLE trace_texts (
        project_id TEXT COLLATE "C" NOT NULL,
        trace_id TEXT COLLATE "C" NOT NULL,
        start_day TEXT COLLATE "C" NOT NULL,
        id BIGINT GENERATED ALWAYS AS IDENTITY,
        body TEXT NOT NULL,
        words tsvector NOT NULL,
        PRIMARY KEY (project_id, trace_id, start_day, id))""",
    "CREATE INDEX trace_texts_words ON trace_texts USING GIN (words) "
    "WITH (gin_pending_list_limit = 128)",
    "CREATE INDEX trace_texts_day ON trace_texts (start_day)",
    "ALTER TABLE span_texts DROP COLUMN words",
    "ALTER TABLE span_texts DROP COLUMN body",
    "ALTER TABLE trace_index_stale ADD COLUMN start_day TEXT",
    f"""CREATE OR REPLACE FUNCTION spans_changed() RETURNS trigger LANGUAGE plpgsql AS $body$
    BEGIN
        DELETE FROM span_texts WHERE {_SAME_ROW};
        INSERT INTO trace_index_stale (project_id, trace_id, name, attributes, start_day)
        VALUES (OLD.project_id, OLD.trace_id, OLD.name, OLD.attributes, OLD.start_day);
        RETURN NULL;
    END $body$""",
    # the words walk runs again at the worker's next start: each stored trace's documents
    # made from its spans (a text stored before held the whole text, or a word too long
    # for a lexeme, and a trace's day may hold more words than a tsvector takes)
    f"DELETE FROM schema_migrations WHERE version = {WORDED}",
)

#: Schema migration 21: a trace's attributes and span names as documents of tokens
#: (`trace_facets`, storage/trace_facets.py), where `trace_attributes` and
#: `trace_span_names` held a row for each; a project's span names with their tokens. A
#: row noted stale notes its trace and start day only: its trace's documents are made
#: anew from the rows stored. The documents of the traces stored are made by a walk at
#: the worker's next start (storage/find_upgrade.py: their tokens are hashes Python
#: makes).
_FACETS_COMMON = (
    "DROP TABLE trace_attributes",
    "DROP TABLE trace_span_names",
    "DROP TABLE project_span_names",
    """CREATE TABLE project_span_names (
        project_id TEXT NOT NULL,
        name TEXT NOT NULL,
        token BIGINT NOT NULL,
        PRIMARY KEY (project_id, name)){keyed}""",
)
SQLITE_TRACE_FACETS = (
    *(statement.replace("{keyed}", " WITHOUT ROWID") for statement in _FACETS_COMMON),
    """CREATE TABLE trace_facets (
        id INTEGER PRIMARY KEY,
        project_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        body TEXT NOT NULL)""",
    "CREATE INDEX trace_facets_trace ON trace_facets (project_id, trace_id)",
    "CREATE VIRTUAL TABLE trace_facet_tokens USING fts5(body, content='trace_facets', "
    "content_rowid='id', detail=none, columnsize=0, tokenize='ascii')",
    """CREATE TRIGGER trace_facets_removed AFTER DELETE ON trace_facets BEGIN
        INSERT INTO trace_facet_tokens (trace_facet_tokens, rowid, body)
        VALUES ('delete', OLD.id, OLD.body); END""",
    "DROP TRIGGER spans_removed",
    """CREATE TABLE trace_index_days (
        project_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        start_day TEXT)""",
    "INSERT INTO trace_index_days SELECT project_id, trace_id, start_day FROM trace_index_stale",
    "DROP TABLE trace_index_stale",
    "ALTER TABLE trace_index_days RENAME TO trace_index_stale",
    f"""CREATE TRIGGER spans_removed AFTER DELETE ON spans BEGIN
        DELETE FROM span_texts WHERE {_SAME_ROW};
        INSERT INTO trace_index_stale (project_id, trace_id, start_day)
        VALUES (OLD.project_id, OLD.trace_id, OLD.start_day); END""",
)
POSTGRES_TRACE_FACETS = (
    *(statement.replace("{keyed}", "") for statement in _FACETS_COMMON),
    """CREATE TABLE trace_facets (
        project_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        id BIGINT GENERATED ALWAYS AS IDENTITY,
        tokens BIGINT[] NOT NULL,
        PRIMARY KEY (project_id, trace_id, id))""",
    "CREATE INDEX trace_facets_tokens ON trace_facets USING GIN (tokens) "
    "WITH (gin_pending_list_limit = 128)",
    f"""CREATE OR REPLACE FUNCTION spans_changed() RETURNS trigger LANGUAGE plpgsql AS $body$
    BEGIN
        DELETE FROM span_texts WHERE {_SAME_ROW};
        INSERT INTO trace_index_stale (project_id, trace_id, start_day)
        VALUES (OLD.project_id, OLD.trace_id, OLD.start_day);
        RETURN NULL;
    END $body$""",
    "ALTER TABLE trace_index_stale DROP COLUMN name, DROP COLUMN attributes",
)
