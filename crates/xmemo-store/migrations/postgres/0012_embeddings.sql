-- The semantic lane (docs/decisions.md, "Semantic recall"): a vector per skill (its Level 0
-- text) and memory, per embedding model, computed by a background worker from fulltext_log.
-- `seq`: the log number of the row's text the vector was made from, so a node tells a stale
-- vector from a current one; `text_hash` lets an unchanged text skip the model.
CREATE TABLE embeddings (
    model TEXT COLLATE "C" NOT NULL,
    kind BIGINT NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    workspace_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    text_hash TEXT NOT NULL,
    scale DOUBLE PRECISION NOT NULL,
    vector BYTEA NOT NULL,
    PRIMARY KEY (model, kind, key)
);
-- How far the worker of a model is: the log up to done_seq is embedded once the backfill of
-- the rows that existed before (up to backfill_until) is done. One node holds the lease.
CREATE TABLE embedding_progress (
    model TEXT COLLATE "C" PRIMARY KEY,
    done_seq BIGINT NOT NULL,
    backfill_until BIGINT NOT NULL,
    backfill_kind BIGINT,
    backfill_key TEXT COLLATE "C" NOT NULL DEFAULT '',
    lease_owner TEXT,
    lease_until TEXT
);
-- "Is there a newer change of this row than its vector?"
CREATE INDEX fulltext_log_by_key ON fulltext_log (kind, key, seq);
