-- The labelled examples ai_classify files free text by, shared by interruption_text_causes and
-- interruption_text_accuracy: a CTE `cause_examples(labels, examples)` of one row, every cause of
-- interruption_causes and wanka's own reference text labelled with its cause: each XID's
-- description, NVIDIA's mnemonic and possible causes (xid_codes) under the cause interruption_xids
-- gives it, each cause's description, and interruption_examples (written for the host-level
-- causes the XID text does not cover). None of it is in interruption_texts.
cause_examples AS (
    SELECT (SELECT list(cause ORDER BY cause) FROM interruption_causes) AS labels,
           list({'input': input, 'label': label} ORDER BY label, input) AS examples
    FROM (
        SELECT DISTINCT input, label FROM (
            SELECT x.description AS input, i.cause AS label
            FROM xid_codes AS x JOIN interruption_xids AS i USING (xid) WHERE x.xid > 0
            UNION ALL
            SELECT replace(x.mnemonic, '_', ' '), i.cause
            FROM xid_codes AS x JOIN interruption_xids AS i USING (xid)
            WHERE coalesce(x.mnemonic, '') <> ''
            UNION ALL
            SELECT replace(x.possible_causes, '|', ', '), i.cause
            FROM xid_codes AS x JOIN interruption_xids AS i USING (xid)
            WHERE coalesce(x.possible_causes, '') <> '' AND i.cause <> 'Faulty GPU'
            UNION ALL
            SELECT cause || ': ' || description, cause FROM interruption_causes
            UNION ALL
            SELECT text, cause FROM interruption_examples
        ) WHERE coalesce(input, '') <> ''
    )
)
