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

-- ai_embed(text [, model]): the embedded model's FLOAT[256], or a registered model's FLOAT[]
CREATE MACRO ai_embed(text) AS wanka_ai_embed_local(text);

-- ai_similarity(a, b): cosine similarity of two texts, or of a text and an embedding
CREATE MACRO ai_similarity(a, b) AS
    array_cosine_similarity(wanka_ai_vector(a), wanka_ai_vector(b))::DOUBLE;

-- ai_classify(text, labels [, examples]): one of labels or NULL; examples are a list of
-- {'input': text, 'label': label}: the label of the nearest example wins
CREATE MACRO ai_classify(text, labels) AS
        wanka_ai_classify_local(text, labels, []::STRUCT(input VARCHAR, label VARCHAR)[]),
    (text, labels, examples) AS
        wanka_ai_classify_local(text, labels, examples);
