-- Billable contacts as a counter (#24): each contact carries whether it is billable, and each
-- team's count moves with every statement that changes one, so `GET /billing` reads a row
-- instead of counting contacts.
--
-- The rule lives here once: a contact is billable when it has not unsubscribed, its address is
-- not suppressed, and it is opted in to at least one live topic, by its own choice or by the
-- topic's default.

CREATE FUNCTION contact_is_billable(c_team uuid, c_id uuid, c_email text, c_unsubscribed boolean) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT NOT c_unsubscribed
       AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.team_id = c_team AND s.email = c_email)
       AND EXISTS (SELECT 1 FROM topics tp LEFT JOIN contact_topics ct ON ct.topic_id = tp.id AND ct.contact_id = c_id
                   WHERE tp.team_id = c_team AND tp.deleted_at IS NULL
                     AND COALESCE(ct.subscription, tp.default_subscription) = 'opt_in')
$$;

-- A new contact has no topic choices yet, so the rule reduces to this team-wide part; bulk
-- writers pass it with the suppression check joined in, one statement for a whole batch.
CREATE FUNCTION team_opts_in_by_default(c_team uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM topics WHERE team_id = c_team AND deleted_at IS NULL AND default_subscription = 'opt_in')
$$;

-- NULL means "not known yet": the row trigger works it out.
ALTER TABLE contacts ADD COLUMN billable boolean;
UPDATE contacts SET billable = contact_is_billable(team_id, id, email, unsubscribed);

CREATE TABLE billable_contact_counts (
    team_id     uuid PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
    billable    bigint NOT NULL DEFAULT 0
);
INSERT INTO billable_contact_counts (team_id, billable)
SELECT t.id, (SELECT count(*) FROM contacts c WHERE c.team_id = t.id AND c.billable) FROM teams t;

CREATE FUNCTION contacts_work_out_billable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.billable := contact_is_billable(NEW.team_id, NEW.id, NEW.email, NEW.unsubscribed);
    RETURN NEW;
END $$;

CREATE TRIGGER contacts_billable_on_insert BEFORE INSERT ON contacts
    FOR EACH ROW WHEN (NEW.billable IS NULL) EXECUTE FUNCTION contacts_work_out_billable();
CREATE TRIGGER contacts_billable_on_update BEFORE UPDATE ON contacts
    FOR EACH ROW WHEN (NEW.billable IS NULL OR OLD.unsubscribed IS DISTINCT FROM NEW.unsubscribed OR OLD.email IS DISTINCT FROM NEW.email)
    EXECUTE FUNCTION contacts_work_out_billable();

-- Adds a statement's change to a team's count and raises the month's peak with it. A team
-- deleted in the same statement (its contacts going with it) is left alone.
CREATE FUNCTION billable_contacts_move(c_team uuid, delta bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    total bigint;
BEGIN
    IF delta = 0 THEN
        RETURN;
    END IF;
    INSERT INTO billable_contact_counts AS c (team_id, billable)
    SELECT id, delta FROM teams WHERE id = c_team
    ON CONFLICT (team_id) DO UPDATE SET billable = c.billable + excluded.billable
    RETURNING billable INTO total;
    IF delta > 0 AND total IS NOT NULL THEN
        INSERT INTO billable_contact_peaks AS p (team_id, month, peak)
        VALUES (c_team, date_trunc('month', now())::date, total)
        ON CONFLICT (team_id, month) DO UPDATE SET peak = GREATEST(p.peak, excluded.peak), counted_at = now();
    END IF;
END $$;

CREATE FUNCTION contacts_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM billable_contacts_move(team_id, n) FROM (
        SELECT team_id, count(*) AS n FROM new_rows WHERE billable GROUP BY team_id ORDER BY team_id
    ) d;
    RETURN NULL;
END $$;

CREATE FUNCTION contacts_count_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM billable_contacts_move(team_id, n) FROM (
        SELECT team_id, sum(d) AS n FROM (
            SELECT team_id, 1 AS d FROM new_rows WHERE billable
            UNION ALL SELECT team_id, -1 FROM old_rows WHERE billable
        ) x GROUP BY team_id ORDER BY team_id
    ) d;
    RETURN NULL;
END $$;

CREATE FUNCTION contacts_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM billable_contacts_move(team_id, -n) FROM (
        SELECT team_id, count(*) AS n FROM old_rows WHERE billable GROUP BY team_id ORDER BY team_id
    ) d;
    RETURN NULL;
END $$;

CREATE TRIGGER contacts_count_billable_inserted AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contacts_count_inserted();
CREATE TRIGGER contacts_count_billable_updated AFTER UPDATE ON contacts
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contacts_count_updated();
CREATE TRIGGER contacts_count_billable_deleted AFTER DELETE ON contacts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contacts_count_deleted();

-- A topic choice, a suppression or a topic's change makes the contacts it touches work out
-- their flag again; only rows whose answer changes are written.
CREATE FUNCTION contacts_recheck_billable(ids uuid[]) RETURNS void LANGUAGE sql AS $$
    UPDATE contacts c SET billable = NULL
    WHERE c.id = ANY(ids) AND c.billable IS DISTINCT FROM contact_is_billable(c.team_id, c.id, c.email, c.unsubscribed)
$$;

CREATE FUNCTION contact_topics_recheck() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM contacts_recheck_billable(ARRAY(SELECT contact_id FROM old_rows));
    ELSE
        PERFORM contacts_recheck_billable(ARRAY(SELECT contact_id FROM new_rows));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER contact_topics_billable_inserted AFTER INSERT ON contact_topics
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_topics_recheck();
CREATE TRIGGER contact_topics_billable_updated AFTER UPDATE ON contact_topics
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_topics_recheck();
CREATE TRIGGER contact_topics_billable_deleted AFTER DELETE ON contact_topics
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_topics_recheck();

CREATE FUNCTION suppressions_recheck() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM contacts_recheck_billable(ARRAY(SELECT c.id FROM old_rows s JOIN contacts c ON c.team_id = s.team_id AND c.email = s.email));
    ELSE
        PERFORM contacts_recheck_billable(ARRAY(SELECT c.id FROM new_rows s JOIN contacts c ON c.team_id = s.team_id AND c.email = s.email));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER suppressions_billable_inserted AFTER INSERT ON suppressions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressions_recheck();
CREATE TRIGGER suppressions_billable_deleted AFTER DELETE ON suppressions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressions_recheck();

-- A topic added, removed, or whose default or liveness changed: the teams it belongs to.
CREATE FUNCTION topics_recheck() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE contacts c SET billable = NULL
        WHERE c.team_id IN (SELECT team_id FROM new_rows WHERE deleted_at IS NULL AND default_subscription = 'opt_in')
          AND NOT c.billable AND NOT c.unsubscribed
          AND contact_is_billable(c.team_id, c.id, c.email, c.unsubscribed);
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE contacts c SET billable = NULL
        WHERE c.team_id IN (SELECT team_id FROM old_rows WHERE deleted_at IS NULL)
          AND c.billable AND NOT contact_is_billable(c.team_id, c.id, c.email, c.unsubscribed);
    ELSE
        UPDATE contacts c SET billable = NULL
        WHERE c.team_id IN (SELECT n.team_id FROM new_rows n JOIN old_rows o ON o.id = n.id
                            WHERE n.deleted_at IS DISTINCT FROM o.deleted_at OR n.default_subscription <> o.default_subscription)
          AND NOT c.unsubscribed
          AND c.billable IS DISTINCT FROM contact_is_billable(c.team_id, c.id, c.email, c.unsubscribed);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER topics_billable_inserted AFTER INSERT ON topics
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION topics_recheck();
CREATE TRIGGER topics_billable_updated AFTER UPDATE ON topics
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION topics_recheck();
CREATE TRIGGER topics_billable_deleted AFTER DELETE ON topics
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION topics_recheck();
