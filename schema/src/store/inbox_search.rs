//! Inbox search: conversations whose messages (subject, text, addresses) match a query,
//! through the GIN index on each message's `tsvector`, best match first, each with a snippet
//! of its best-matching message.

use crate::store::conversations::Conversation;
use crate::page::Cursor;
use crate::store::inbox::Reach;
use sqlx::{PgConnection, QueryBuilder};
use uuid::Uuid;

/// A conversation that matched, with its best message.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Hit {
    #[sqlx(flatten)]
    pub conversation: Conversation,
    pub rank: f32,
    pub message_id: Uuid,
    pub snippet: String,
}

/// The conversations `reach` reaches that match `text` (web-search syntax: words, `"a phrase"`,
/// `-not`), best first; a cursor continues after (`After`) or before (`Before`) that
/// conversation of another page.
pub async fn search(conn: &mut PgConnection, team_id: Uuid, reach: &Reach, text: &str, limit: i64, cursor: Option<Cursor>) -> sqlx::Result<(Vec<Hit>, bool)> {
    let mut query = QueryBuilder::new("WITH q AS (SELECT websearch_to_tsquery('simple', ");
    query.push_bind(text.to_string());
    query.push(
        ") AS query),
         matched AS (
             SELECT m.conversation_id, m.id, ts_rank(m.search, q.query) AS rank
             FROM inbox_messages m, q WHERE m.search @@ q.query AND m.team_id = ",
    );
    query.push_bind(team_id);
    query.push(
        "), best AS (
             SELECT DISTINCT ON (conversation_id) conversation_id, id AS message_id, rank FROM matched ORDER BY conversation_id, rank DESC, id DESC
         ), page AS (
             SELECT b.* FROM best b
             -- A lateral probe per match (a primary-key lookup): a join would let the planner
             -- read every conversation of the team to keep the few that matched.
             JOIN LATERAL (SELECT 1 FROM inbox_conversations v WHERE v.id = b.conversation_id",
    );
    reach.push_among(&mut query, team_id, "v.channel_id");
    query.push(" LIMIT 1) reached ON true WHERE true");
    let backwards = matches!(cursor, Some(Cursor::Before(_)));
    match cursor {
        Some(Cursor::After(id)) => {
            query.push(" AND (b.rank, b.conversation_id) < (SELECT rank, conversation_id FROM best WHERE conversation_id = ").push_bind(id).push(")");
        }
        Some(Cursor::Before(id)) => {
            query.push(" AND (b.rank, b.conversation_id) > (SELECT rank, conversation_id FROM best WHERE conversation_id = ").push_bind(id).push(")");
        }
        None => {}
    }
    query.push(if backwards { " ORDER BY b.rank ASC, b.conversation_id ASC LIMIT " } else { " ORDER BY b.rank DESC, b.conversation_id DESC LIMIT " }).push_bind(limit + 1);
    query.push(") ");
    query.push(format!(
        "SELECT {}, page.rank, page.message_id,
                ts_headline('simple', COALESCE(r.text, hm.text, hm.subject, ''), (SELECT query FROM q), 'MaxFragments=1, MaxWords=24, MinWords=8') AS snippet
         FROM page JOIN inbox_conversations v ON v.id = page.conversation_id {}
         JOIN inbox_messages hm ON hm.id = page.message_id LEFT JOIN received_emails r ON r.id = hm.received_email_id
         WHERE v.team_id = ",
        crate::store::conversations::COLUMNS,
        crate::store::conversations::JOINS
    ));
    query.push_bind(team_id);
    query.push(if backwards { " ORDER BY page.rank ASC, page.conversation_id ASC" } else { " ORDER BY page.rank DESC, page.conversation_id DESC" });
    let mut hits: Vec<Hit> = query.build_query_as().fetch_all(conn).await?;
    let more = hits.len() as i64 > limit;
    hits.truncate(limit as usize);
    if backwards {
        hits.reverse();
    }
    Ok((hits, more))
}
