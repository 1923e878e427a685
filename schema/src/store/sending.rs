//! What accepting a send reads before its transaction, in one statement.

use crate::store::domains::{self, Domain};
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

/// The team's sandbox regions and verified domain names, its (not disabled) domains among the
/// senders' domains (with their records' statuses), and the recipients suppressed for it with
/// their origin.
#[derive(Debug)]
pub struct SendContext {
    pub sandbox_regions: Vec<String>,
    pub verified_domains: Vec<String>,
    pub domains: Vec<Domain>,
    pub suppressed: Vec<(String, String)>,
    /// The recipients that are confirmed identities of the team.
    pub identities: Vec<String>,
}

#[derive(sqlx::FromRow)]
struct Row {
    sandbox_regions: Vec<String>,
    verified_domains: Vec<String>,
    domains: Json<Vec<Domain>>,
    suppressed: Json<Vec<(String, String)>>,
    identities: Vec<String>,
}

/// Reads the context of sends from `from_domains` to `recipients` (bare, lower-case); `None`
/// when the team is gone.
pub async fn context(
    conn: &mut PgConnection,
    team_id: Uuid,
    from_domains: &[String],
    recipients: &[String],
) -> sqlx::Result<Option<SendContext>> {
    let row: Option<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT t.sandbox_regions,
                ARRAY(SELECT name FROM domains WHERE team_id = $1 AND status = 'verified') AS verified_domains,
                (SELECT COALESCE(json_agg(d), '[]') FROM
                    (SELECT {}, (SELECT json_agg(json_build_array(r.kind, r.status) ORDER BY r.kind) FROM domain_records r
                                 WHERE r.domain_id = domains.id) AS record_statuses
                     FROM domains WHERE team_id = $1 AND name = ANY($2) AND status <> 'disabled') d) AS domains,
                (SELECT COALESCE(json_agg(json_build_array(email, origin)), '[]')
                 FROM suppressions WHERE team_id = $1 AND email = ANY($3)) AS suppressed,
                ARRAY(SELECT email FROM verified_identities
                      WHERE team_id = $1 AND email = ANY($3) AND confirmed_at IS NOT NULL) AS identities
         FROM teams t WHERE t.id = $1",
        domains::COLUMNS
    )))
    .bind(team_id)
    .bind(from_domains)
    .bind(recipients)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|row| SendContext {
        sandbox_regions: row.sandbox_regions,
        verified_domains: row.verified_domains,
        domains: row.domains.0,
        suppressed: row.suppressed.0,
        identities: row.identities,
    }))
}
