-- The Inbox list's other filters in order (#23's measure): an assignee's conversations by place
-- and status ("mine, open"), and a status in a place across channels, each newest first, so a
-- page reads its rows from the index instead of sorting every match.
DROP INDEX inbox_conversations_assignee_idx;
CREATE INDEX inbox_conversations_assignee_idx ON inbox_conversations (team_id, assignee_id, place, status, id DESC);
CREATE INDEX inbox_conversations_status_idx ON inbox_conversations (team_id, place, status, id DESC);

-- Every message updates its conversation (count, latest message, version): room on each page
-- keeps those updates HOT (no new index entries), as busy tables of counters are kept.
ALTER TABLE inbox_conversations SET (fillfactor = 80);
