"""AI functions in SQL: embed, classify, search and generate over the cluster's own text.

The embedded default model (`embedded`: wordllama, offline, loaded once per process) serves
`ai_embed`, `ai_similarity` and `ai_classify` (`local`, `classify`). Everything else goes to an
OpenAI-compatible endpoint an admin registered in `wanka.ai_models` (`models`), through one
client that reaches no other URL (`client`), with bounded concurrency, retries that honour 429
and Retry-After, a per-query call budget (`calls`), and a persistent cache so that a row is
never sent twice (`cache`). `grants` decides, on the statement's parse, which models a reader
may name. `functions` binds the Python bodies; the SQL names are macros of
sql/schema/0024_ai_functions.sql. docs/ai.md is the user's page.
"""
