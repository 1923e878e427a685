//! Unsubscribes by mail: the `mailto:` of a broadcast's `List-Unsubscribe` reaches
//! `unsubscribe@` on the team's return-path host with the signed unsubscribe token in its
//! subject; it does what the one-click `POST` does (the link's topic only, or every email when
//! the link names none or its topic is gone), with a consent record of source `mailto`. The
//! link of a transactional send's `unsubscribe_link` suppresses its address instead.

use schema::links::{Link, Unsubscribe};
use schema::store::automations::SegmentWatch;
use schema::store::contacts::{self, Consent};
use schema::store::{suppressions, topics};
use sqlx::PgConnection;
use uuid::Uuid;

/// Applies the link's unsubscribe for the team; `false` when the contact or email is not the
/// team's (or no longer exists).
pub async fn apply(conn: &mut PgConnection, team_id: Uuid, unsubscribe: &Unsubscribe) -> anyhow::Result<bool> {
    match unsubscribe {
        Unsubscribe::Contact(link) => apply_contact(conn, team_id, *link).await,
        Unsubscribe::Address(link) => Ok(suppressions::unsubscribe_address(conn, Some(team_id), link).await?.is_some()),
    }
}

async fn apply_contact(conn: &mut PgConnection, team_id: Uuid, link: Link) -> anyhow::Result<bool> {
    let Some(contact) = contacts::by_id(conn, link.contact_id, true).await?.filter(|c| c.team_id == team_id) else {
        return Ok(false);
    };
    let watch = SegmentWatch::before(conn, team_id, Some(contact.id)).await?;
    let live_topic = match link.topic_id {
        Some(topic_id) => topics::live_ids(conn, team_id, &[topic_id]).await?.into_iter().next(),
        None => None,
    };
    let consent = |topic_id, choice| Consent {
        team_id,
        contact_id: contact.id,
        email: &contact.email,
        topic_id,
        choice,
        source: "mailto",
        ip_address: None,
        user_agent: None,
    };
    match live_topic {
        Some(topic_id) => {
            for (topic_id, _) in topics::choose(conn, contact.id, &[(topic_id, "opt_out".into())]).await? {
                contacts::record_consent(conn, &consent(Some(topic_id), "opt_out")).await?;
            }
        }
        None if !contact.unsubscribed => {
            contacts::set_unsubscribed(conn, contact.id, true).await?;
            contacts::record_consent(conn, &consent(None, "unsubscribed")).await?;
        }
        None => {}
    }
    if let Some(watch) = watch {
        watch.enrol_entered(conn, contact.id).await?;
    }
    Ok(true)
}
