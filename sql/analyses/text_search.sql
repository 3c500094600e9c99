-- text_search: The kernel lines, job messages and labelled fault texts closest in meaning to a query: semantic search, top-k by ai_similarity.
--
-- Every text of kernel_messages, job_events' details and interruption_texts is compared with
-- $query by ai_similarity (cosine of the embedded model's vectors, offline): the $k closest
-- come first. Words need not match: "graphics card vanished from PCIe" finds "GPU Lost" and
-- "GPU device not found".
-- For a large log, keep the vectors in a dynamic table (SELECT ..., ai_embed(message) AS v):
-- it embeds each new line once, and ai_similarity(v, $query) then ranks 100,000 lines in
-- milliseconds (bench/bench_ai.py).
--
-- Parameters:
--   $query                    VARCHAR = 'GPU fell off the bus'   what to look for
--   $k                        INTEGER = 10                        texts to return
-- Columns:
--   origin                    'kernel', 'job' or 'labelled' (interruption_texts)
--   ts                        when it was logged (NULL for a labelled text)
--   host                      where
--   text                      the text
--   similarity                ai_similarity(text, $query), -1 to 1
WITH texts AS (
    SELECT 'kernel' AS origin, ts, host, message AS text FROM kernel_messages
    UNION ALL
    SELECT 'job', ts, host, detail FROM job_events WHERE coalesce(detail, '') <> ''
    UNION ALL
    SELECT 'labelled', NULL, NULL, text FROM interruption_texts
)
SELECT origin, ts, host, text, ai_similarity(text, $query) AS similarity
FROM texts
ORDER BY similarity DESC, text
LIMIT $k
