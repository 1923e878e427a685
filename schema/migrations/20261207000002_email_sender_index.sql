-- `GET /emails?search=` with a whole address finds the emails from it by index (and those to it
-- by `email_recipients_email_idx`), instead of reading every email of the team.
CREATE INDEX emails_team_from_idx ON emails (team_id, from_email, id);
