-- A transactional send that asked for Herald's unsubscribe headers (`unsubscribe_link: true`):
-- each recipient's copy carries a signed List-Unsubscribe naming its own address.
ALTER TABLE emails ADD COLUMN unsubscribe_link boolean NOT NULL DEFAULT false;
