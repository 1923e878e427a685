-- Revoking an email's view links finds them by email.
CREATE INDEX email_shares_email_idx ON email_shares (email_id);
