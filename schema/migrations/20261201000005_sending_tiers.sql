-- Sending tiers (#24) move by themselves: `new` (0), `verified` (1: a verified domain, kept
-- once reached), `paid` (2: verified, with a payment method on file and payments in order),
-- `trusted` (3: an operator's review, left alone here unless `untrust`, when an operator takes
-- it back). Each move is kept with its reason. The team row is locked `FOR NO KEY UPDATE`:
-- rows that reference the team (events, emails) go on being written meanwhile.
CREATE FUNCTION settle_sending_tier(c_team uuid, why text, untrust boolean DEFAULT false) RETURNS smallint LANGUAGE plpgsql AS $$
DECLARE
    was      smallint;
    verified boolean;
    paid     boolean;
    settled  smallint;
BEGIN
    SELECT sending_tier INTO was FROM teams WHERE id = c_team FOR NO KEY UPDATE;
    IF NOT FOUND OR (was = 3 AND NOT untrust) THEN
        RETURN was;
    END IF;
    verified := was IN (1, 2) OR EXISTS (SELECT 1 FROM domains WHERE team_id = c_team AND status = 'verified' AND NOT development);
    paid := EXISTS (SELECT 1 FROM team_billing WHERE team_id = c_team AND payment_method_last4 IS NOT NULL AND payment_state = 'ok');
    settled := CASE WHEN verified AND paid THEN 2 WHEN verified THEN 1 ELSE 0 END;
    IF settled <> was THEN
        UPDATE teams SET sending_tier = settled WHERE id = c_team;
        INSERT INTO sending_tier_moves (id, team_id, from_tier, to_tier, reason) VALUES (herald_uuid_v7(), c_team, was, settled, why);
    END IF;
    RETURN settled;
END $$;
