-- AI functions in SQL (docs/ai.md): the model endpoints an admin registers, who may call them,
-- the cache of their answers, and the functions users call, as macros over the Python bodies
-- that warehouse/ai binds on every connection (their names start with wanka_ai_).
--
-- The embedded model `wordllama` (offline, in its PyPI wheel) needs no row here. Any other
-- model is an OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp's server) registered here,
-- and a function reaches no other URL. The key is never stored: only the environment variable
-- or the file it is read from when a call is made.

CREATE TABLE wanka.ai_models (
    name          VARCHAR PRIMARY KEY,    -- what SQL names it: ai_gen(prompt, 'name')
    task          VARCHAR NOT NULL CHECK (task IN ('chat', 'embed')),
    endpoint      VARCHAR NOT NULL,       -- the API's base URL: http://10.0.0.7:8000/v1
    model         VARCHAR NOT NULL,       -- the model as the server names it
    key_env       VARCHAR,                -- environment variable holding the API key, or
    key_file      VARCHAR,                -- a file holding it (one line)
    timeout_s     DOUBLE NOT NULL DEFAULT 60 CHECK (timeout_s > 0),    -- per request, retries included
    concurrency   INTEGER NOT NULL DEFAULT 4 CHECK (concurrency > 0),  -- requests in flight, per process
    call_budget   BIGINT NOT NULL DEFAULT 10000 CHECK (call_budget >= 0),  -- uncached calls per query
    context_chars INTEGER NOT NULL DEFAULT 16000 CHECK (context_chars > 0), -- longer text is cut
    version       VARCHAR NOT NULL DEFAULT '1',  -- in the cache key: change it when the weights change
    is_default    BOOLEAN NOT NULL DEFAULT false -- the chat model of ai_gen(prompt) and the like
);

-- Readers may call a registered model only when it is granted to their role (writers and
-- admins may call every registered model; everyone may call wordllama).
CREATE TABLE wanka.ai_grants (
    model         VARCHAR NOT NULL,
    role          VARCHAR NOT NULL CHECK (role IN ('reader', 'writer', 'admin')),
    PRIMARY KEY (model, role)
);

-- Answers of registered models: a row sent once is never sent again (errors are not kept).
CREATE TABLE wanka.ai_cache (
    model         VARCHAR NOT NULL,
    model_version VARCHAR NOT NULL,
    input_sha256  VARCHAR NOT NULL,   -- of the task, the request's parameters and the text
    output        VARCHAR NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (model, model_version, input_sha256)
);

-- A vector of the embedded model from a text, or a vector given as it is: ai_similarity takes
-- either. typeof() is a constant, so DuckDB keeps one branch of the CASE when it plans.
CREATE MACRO wanka_ai_vector(x) AS
    CASE WHEN typeof(x) = 'VARCHAR' THEN wanka_ai_embed_local(x::VARCHAR) ELSE x::FLOAT[256] END;

-- A JSON object given as text or as a DuckDB value ({'max_tokens': 20}), as text.
CREATE MACRO wanka_ai_json_text(x) AS
    CASE WHEN typeof(x) = 'VARCHAR' THEN x::VARCHAR ELSE to_json(x)::VARCHAR END;

-- What the _detail forms return: the answer, the error, and a note (a text that was cut).
CREATE MACRO wanka_ai_detail(answer) AS
    json_transform(answer, '{"value": "VARCHAR", "error": "VARCHAR", "note": "VARCHAR"}');

-- Every function that calls a registered model passes the transaction's id: its call budget
-- holds per query (per transaction inside BEGIN ... COMMIT). on_error: 'null' (a failed row
-- gives NULL), 'raise' (it stops the query) or 'detail'.

-- ai_embed(text [, model]): the embedded model's FLOAT[256], or a registered model's FLOAT[]
CREATE MACRO ai_embed(text) AS wanka_ai_embed_local(text),
    (text, model, on_error := 'null') AS
        wanka_ai_embed_model(model, text, on_error, current_transaction_id());

-- ai_similarity(a, b [, model]): cosine similarity of two texts, or of a text and an embedding
CREATE MACRO ai_similarity(a, b) AS
        array_cosine_similarity(wanka_ai_vector(a), wanka_ai_vector(b))::DOUBLE,
    (a, b, model) AS list_cosine_similarity(
        wanka_ai_embed_model(model, a, 'null', current_transaction_id()),
        wanka_ai_embed_model(model, b, 'null', current_transaction_id()))::DOUBLE;

-- ai_gen(prompt [, model, params]): a chat model's answer; params a JSON object (max_tokens, ...)
CREATE MACRO ai_gen(prompt) AS
        wanka_ai_call('gen', '', prompt, '{}', 'null', current_transaction_id()),
    (prompt, model, params := '{}', on_error := 'null') AS
        wanka_ai_call('gen', model, prompt, wanka_ai_json_text(params), on_error,
                      current_transaction_id());
CREATE MACRO ai_gen_detail(prompt, model, params := '{}') AS wanka_ai_detail(
    wanka_ai_call('gen', model, prompt, wanka_ai_json_text(params), 'detail',
                  current_transaction_id()));

-- ai_extract(text, json_schema [, model]) -> JSON: an object following the schema
CREATE MACRO ai_extract(text, json_schema) AS
        wanka_ai_call('extract', '', text, wanka_ai_json_text(json_schema), 'null',
                      current_transaction_id())::JSON,
    (text, json_schema, model, on_error := 'null') AS
        wanka_ai_call('extract', model, text, wanka_ai_json_text(json_schema), on_error,
                      current_transaction_id())::JSON;
CREATE MACRO ai_extract_detail(text, json_schema, model) AS wanka_ai_detail(
    wanka_ai_call('extract', model, text, wanka_ai_json_text(json_schema), 'detail',
                  current_transaction_id()));

-- ai_summarize(text [, model])
CREATE MACRO ai_summarize(text) AS
        wanka_ai_call('summarize', '', text, '', 'null', current_transaction_id()),
    (text, model, on_error := 'null') AS
        wanka_ai_call('summarize', model, text, '', on_error, current_transaction_id());
CREATE MACRO ai_summarize_detail(text, model) AS wanka_ai_detail(
    wanka_ai_call('summarize', model, text, '', 'detail', current_transaction_id()));

-- ai_agg(text, task [, model]): an aggregate; the group's rows, sorted, one per line, and the
-- task ('list the distinct causes') go to the model in one request
CREATE MACRO ai_agg(text, task) AS
        wanka_ai_call('agg', '', array_to_string(list(text ORDER BY text), chr(10)), task,
                      'null', current_transaction_id()),
    (text, task, model, on_error := 'null') AS
        wanka_ai_call('agg', model, array_to_string(list(text ORDER BY text), chr(10)), task,
                      on_error, current_transaction_id());

-- ai_classify(text, labels [, examples]): one of labels or NULL; examples are a list of
-- {'input': text, 'label': label}: the label of the nearest example wins
CREATE MACRO ai_classify(text, labels) AS
        wanka_ai_classify_local(text, labels, []::STRUCT(input VARCHAR, label VARCHAR)[]),
    (text, labels, examples) AS
        wanka_ai_classify_local(text, labels, examples);

-- Kernel log lines (`wanka ingest kernel-log`: dmesg -T, journalctl -k, syslog), free text for the
-- AI functions; an NVRM Xid line's code and PCI address parsed out, so that its cause stays a
-- join (interruption_xids) and never a model's guess.
-- table kernel_messages: tracked; lake
CREATE TABLE kernel_messages (
    ts                  TIMESTAMPTZ,        -- NULL for dmesg's seconds since boot
    host                VARCHAR,            -- the syslog host, else --host
    message             VARCHAR NOT NULL,   -- the text after the timestamp, host and "kernel:"
    xid                 INTEGER,            -- NVRM: Xid (PCI:...): N
    pci                 VARCHAR,            -- the Xid line's PCI address, 0000:3b:00
    source              VARCHAR,            -- the file it came from
    batch_id            BIGINT DEFAULT nextval('wanka.batch_seq')
);

@include(parts/tracked_table.sql, table=kernel_messages);

-- Labelled examples written for the taxonomy's host-level causes, which wanka's XID reference
-- text does not cover (NIC, fans, PSU, disks, ...): ai_classify's examples beside that text
-- (sql/analyses/parts/cause_examples.sql).
-- table interruption_examples: reference; lake
CREATE TABLE interruption_examples (
    text                VARCHAR NOT NULL,
    cause               VARCHAR NOT NULL,   -- joins interruption_causes.cause
    source              VARCHAR NOT NULL
);

-- A labelled set of real public text (kernel XID lines with their code taken out, fault
-- descriptions, drain reasons), each with the interruption cause it belongs to: what the
-- analysis interruption_text_accuracy scores ai_classify on. Sources, licences and how each
-- row was labelled: sql/reference/interruption_texts.md.
-- table interruption_texts: reference; lake
CREATE TABLE interruption_texts (
    text                VARCHAR NOT NULL,
    cause               VARCHAR NOT NULL,   -- joins interruption_causes.cause
    source              VARCHAR NOT NULL,   -- repository@commit path (licence)
    basis               VARCHAR NOT NULL    -- why this cause
);
