-- interruption_text_accuracy: How well ai_classify files real public text under its interruption cause, beside always answering the commonest cause.
--
-- Each row of interruption_texts (kernel XID lines of gpud's and NVSentinel's tests with the XID
-- code taken out, InfiniteHBD's fault descriptions, Slurm and NHC drain reasons; sources in
-- sql/reference/interruption_texts.md) is classified by ai_classify over the labelled examples of
-- sql/analyses/parts/cause_examples.sql (the embedded model, nearest example), and scored
-- against its label. The baseline answers every row of a source with the cause commonest in the
-- whole set. A line that still carries its XID code needs no model: its cause is a join
-- (interruption_text_causes does that); here the code is gone on purpose.
--
-- Columns:
--   source                    the repository the texts come from, or 'all'
--   texts                     labelled texts, count
--   correct                   those ai_classify files under their label, count
--   accuracy                  correct / texts
--   majority_cause            the commonest cause of the whole set
--   baseline_accuracy         the share of texts labelled majority_cause
WITH @include(parts/cause_examples.sql), majority AS (
    SELECT cause FROM interruption_texts GROUP BY cause ORDER BY count(*) DESC, cause LIMIT 1
), scored AS (
    SELECT split_part(t.source, '@', 1) AS source, t.cause,
           ai_classify(t.text, e.labels, e.examples) AS answer
    FROM interruption_texts AS t, cause_examples AS e
)
SELECT coalesce(s.source, 'all') AS source, count(*) AS texts,
       count(*) FILTER (WHERE s.answer = s.cause) AS correct,
       round(count(*) FILTER (WHERE s.answer = s.cause) / count(*), 3) AS accuracy,
       any_value(m.cause) AS majority_cause,
       round(count(*) FILTER (WHERE s.cause = m.cause) / count(*), 3) AS baseline_accuracy
FROM scored AS s, majority AS m
GROUP BY ROLLUP (s.source)
ORDER BY s.source IS NULL, s.source
