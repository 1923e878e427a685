//! The domain as the API shows it: its records with their last checks, capabilities, DKIM
//! rotation; finding a team's domain by a path id; the `domain.*` events.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Nullable;
use crate::routes::path_id;
use crate::state::AppState;
use chrono::{DateTime, Utc};
use jobs::domains::event_for;
use poem_openapi::{Enum, Object};
use schema::domain::{DomainStatus, RecordKind, RecordName, RecordStatus, Region, Tls};
use schema::store::domains::{self, Domain, RecordState};
use schema::store::events;
use serde::Deserialize;
use sqlx::PgConnection;
use uuid::Uuid;

/// On or off, for a capability.
#[derive(Enum, Clone, Copy, PartialEq, Eq, Deserialize, Debug)]
#[oai(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    Enabled,
    Disabled,
}

impl Capability {
    pub fn of(on: bool) -> Capability {
        if on { Capability::Enabled } else { Capability::Disabled }
    }

    pub fn on(self) -> bool {
        self == Capability::Enabled
    }
}

/// What a domain is used for. Sending is on by default; receiving needs a region with inbound mail.
#[derive(Object, Deserialize, Default)]
pub struct Capabilities {
    /// Sending mail from the domain (default `enabled`).
    pub sending: Option<Capability>,
    /// Receiving mail at the domain's MX (default `disabled`); only in `us-east-1` and `eu-west-1`.
    pub receiving: Option<Capability>,
}

/// A DNS record the domain publishes, with what the last check found.
#[derive(Object)]
pub struct DnsRecord {
    /// The record as the Resend SDKs name it: `DKIM`, `SPF` (the mail-from record, which
    /// carries SPF), `Receiving MX` or `Tracking`.
    pub record: RecordName,
    /// Which record it is: `dkim`, `mail_from`, `receiving` or `tracking`.
    pub kind: RecordKind,
    /// Name relative to the zone (`@` is the zone itself).
    pub name: String,
    /// Fully qualified name.
    pub fqdn: String,
    /// `TXT`, `CNAME` or `MX`.
    #[oai(rename = "type")]
    pub record_type: String,
    /// The value to publish. DKIM is the bare `p=` value; publish it as two quoted strings
    /// when the DNS host does not split long TXT values itself.
    pub value: String,
    /// MX priority.
    pub priority: Nullable<u16>,
    /// Always `Auto`.
    pub ttl: String,
    /// What DNS said about the record at its last check.
    pub status: RecordStatus,
    /// Whether the domain's capabilities need this record (DKIM and mail-from always).
    pub required: bool,
    /// What the last check found at the name instead, when it did not match.
    pub found: Nullable<String>,
    /// When the record was last checked, or `null` before the first check.
    pub checked_at: Nullable<DateTime<Utc>>,
}

/// A DKIM rotation waiting for its new key to appear in DNS.
#[derive(Object)]
pub struct DkimRotation {
    /// The TXT value to publish at the DKIM name in place of the current one; signing switches
    /// to the new key once a check sees it.
    pub next_value: String,
    /// When the rotation started.
    pub started_at: DateTime<Utc>,
}

/// A sending domain.
#[derive(Object)]
pub struct DomainView {
    /// Always `domain`.
    pub object: String,
    /// The domain's id.
    pub id: String,
    /// The domain's name.
    pub name: String,
    /// The domain's state.
    pub status: DomainStatus,
    /// Where the domain's mail leaves from; fixed once created.
    pub region: Region,
    /// How delivery treats TLS.
    pub tls: Tls,
    /// The label of the return-path (mail-from) record; fixed once created.
    pub custom_return_path: String,
    /// Where the receiving MX goes: `@` (the domain itself) or one label; fixed once created.
    pub receiving_host: String,
    /// What the domain is used for.
    pub capabilities: CapabilitiesView,
    /// Whether opens are tracked.
    pub open_tracking: bool,
    /// Whether clicks are tracked.
    pub click_tracking: bool,
    /// The DNS records the domain publishes, with what the last check found.
    pub records: Vec<DnsRecord>,
    /// The DKIM rotation waiting for its new key to appear in DNS, or `null` when none is under way.
    pub dkim_rotation: Nullable<DkimRotation>,
    /// Whether a DNS provider token is kept for auto-configuration.
    pub autoconfigure_credential: bool,
    /// When DNS was last checked, or `null` before the first check.
    pub checked_at: Nullable<DateTime<Utc>>,
    /// When the domain last became verified.
    pub verified_at: Nullable<DateTime<Utc>>,
    /// When the domain was added.
    pub created_at: DateTime<Utc>,
}

/// The domain's capabilities.
#[derive(Object)]
pub struct CapabilitiesView {
    /// Whether sending mail from the domain is on.
    pub sending: Capability,
    /// Whether receiving mail at the domain's MX is on.
    pub receiving: Capability,
}

/// A page of domains.
#[derive(Object)]
pub struct DomainList {
    /// Always `list`.
    pub object: String,
    /// Whether more items follow this page.
    pub has_more: bool,
    /// The items of this page, newest first.
    pub data: Vec<DomainView>,
}

pub async fn emit(conn: &mut PgConnection, event_type: &'static str, domain: &Domain) -> ApiResult<()> {
    let event = event_for(conn, event_type, domain).await?;
    events::emit(conn, &[event]).await?;
    Ok(())
}


pub async fn find(conn: &mut PgConnection, team_id: Uuid, raw: &str) -> ApiResult<Domain> {
    let id = path_id(raw, "Domain")?;
    domains::get(conn, team_id, id).await?.ok_or_else(|| ApiError::not_found("Domain"))
}

pub async fn full_view(state: &AppState, conn: &mut PgConnection, domain: Domain) -> ApiResult<DomainView> {
    let records = domains::records(conn, &[domain.id]).await?;
    Ok(view(state, domain, &records))
}

pub fn view(state: &AppState, domain: Domain, states: &[RecordState]) -> DomainView {
    let records = state
        .checker
        .records_of(&domain)
        .into_iter()
        .map(|record| {
            let checked = states.iter().find(|s| s.kind == record.kind);
            DnsRecord {
                record: record.kind.sdk_name(),
                kind: record.kind,
                record_type: record.kind.record_type().into(),
                required: domain.needs(record.kind),
                name: record.name,
                fqdn: record.fqdn,
                value: record.value,
                priority: record.priority.into(),
                ttl: "Auto".into(),
                status: checked.map_or(RecordStatus::NotStarted, |s| s.status),
                found: checked.and_then(|s| s.found.clone()).into(),
                checked_at: checked.and_then(|s| s.checked_at).into(),
            }
        })
        .collect();
    DomainView {
        object: "domain".into(),
        id: domain.id.to_string(),
        name: domain.name,
        status: domain.status,
        region: domain.region,
        tls: domain.tls,
        custom_return_path: domain.custom_return_path,
        receiving_host: domain.receiving_host,
        capabilities: CapabilitiesView {
            sending: Capability::of(domain.sending_enabled),
            receiving: Capability::of(domain.receiving_enabled),
        },
        open_tracking: domain.open_tracking,
        click_tracking: domain.click_tracking,
        records,
        dkim_rotation: Nullable::from(domain.dkim_next_public_key.zip(domain.dkim_rotation_started_at).map(|(key, started_at)| DkimRotation {
            next_value: schema::domain::dkim_value(&key),
            started_at,
        })),
        autoconfigure_credential: domain.has_credential,
        checked_at: domain.checked_at.into(),
        verified_at: domain.verified_at.into(),
        created_at: domain.created_at,
    }
}
