-- Templates and the team's brand (#9).

-- Images a team uploads for its brand kit (and, later, its templates), served back byte-for-byte
-- at `{HERALD_PUBLIC_URL}/brand-assets/{id}`.
CREATE TABLE brand_assets (
    id            uuid PRIMARY KEY,
    team_id       uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    content_type  text NOT NULL,
    size          integer NOT NULL,
    bytes         bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX brand_assets_team_idx ON brand_assets (team_id, id);

-- A template: its name and alias; its content lives in versions. A deleted template keeps its
-- rows (sent emails name its versions) but frees its alias.
CREATE TABLE templates (
    id                 uuid PRIMARY KEY,
    team_id            uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name               text NOT NULL,
    alias              text,
    -- The newest version (the open draft when it is not the published one).
    current_version    integer NOT NULL DEFAULT 1,
    published_version  integer,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    deleted_at         timestamptz
);
CREATE UNIQUE INDEX templates_alias_idx ON templates (team_id, alias) WHERE deleted_at IS NULL AND alias IS NOT NULL;
CREATE INDEX templates_team_idx ON templates (team_id, id) WHERE deleted_at IS NULL;

-- A version's content. A draft is edited in place; a published version never changes.
CREATE TABLE template_versions (
    template_id      uuid NOT NULL REFERENCES templates (id) ON DELETE CASCADE,
    version          integer NOT NULL,
    team_id          uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    from_address     text,
    subject          text,
    reply_to         text[],
    html             text,
    text             text,
    -- `[{ key, type, fallback_value }]`.
    variables        jsonb NOT NULL DEFAULT '[]'::jsonb,
    -- The block document of a visual template (null for code templates).
    document         jsonb,
    -- Null: follow the team's brand kit; otherwise the fields it overrides.
    brand_overrides  jsonb,
    -- The renderer's compiled form of subject, html and text.
    compiled         jsonb NOT NULL,
    saved_block_ids  uuid[] NOT NULL DEFAULT '{}',
    published_at     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (template_id, version)
);
CREATE INDEX template_versions_saved_blocks_idx ON template_versions USING gin (saved_block_ids);

-- A block or a section saved for reuse across templates.
CREATE TABLE saved_blocks (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name        text NOT NULL,
    -- `block` or `section`.
    kind        text NOT NULL CHECK (kind IN ('block', 'section')),
    content     jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX saved_blocks_team_idx ON saved_blocks (team_id, id);

-- Every send records the exact template version it used.
ALTER TABLE emails ADD COLUMN template_id uuid, ADD COLUMN template_version integer;
