-- Segments whose filter names an age (`created_at` `"3 days ago"`): their members change as time
-- passes. A filter never changes after creation, so this is fixed at insert.
ALTER TABLE segments ADD COLUMN time_based boolean NOT NULL DEFAULT false;

-- Up to when an automation started by `svc:segment.entered` on a time-based segment has
-- enrolled the contacts that entered it as time passed (see jobs/src/schedule.rs). Set when the
-- automation is made, enabled again or pointed at another segment, so it never enrols entries
-- from before it watched.
ALTER TABLE automations ADD COLUMN segment_clock_at timestamptz NOT NULL DEFAULT now();

-- The tick reads the enabled automations watching a segment, whatever the team.
CREATE INDEX automations_watching_segments ON automations (trigger_segment_id)
    WHERE trigger_event = 'svc:segment.entered' AND status = 'enabled' AND deleted_at IS NULL;
