//! Domain verification and claims: checking a domain's records against DNS, storing what was
//! found with its `domain.updated` events and the sending-tier raise, the hourly sweep over
//! every domain and every pending claim, and the transfer of a claimed domain.

use crate::dns::{Dns, Lookup};
use chrono::{DateTime, TimeDelta, Utc};
use futures::{StreamExt, stream};
use schema::domain::{
    CheckOutcome, DomainStatus, ExpectedRecord, RecordKind, RecordSource, RecordStatus, RegionHosts, expected_records,
    next_record_status, sending_status, txt_has_dkim_key,
};
use schema::store::claims::{self, Claim};
use schema::store::domains::{self, CheckResult, Domain, RecordCheck, RecordState};
use schema::store::events::{self, NewEvent};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use uuid::Uuid;
use apalis::prelude::{Attempt, BoxDynError, Data};
use apalis_postgres::PgTaskId;

/// How long a never-verified domain is `pending` before its missing records read `failed`.
pub const GRACE: TimeDelta = TimeDelta::hours(72);
/// A verify call this soon after the last check answers without rechecking.
pub const VERIFY_THROTTLE: TimeDelta = TimeDelta::seconds(15);
/// The transfer waits while the holder verified this recently...
pub const CLAIM_RECENTLY_VERIFIED: TimeDelta = TimeDelta::hours(72);
/// ...or sent from the domain this recently.
pub const CLAIM_RECENTLY_SENT: TimeDelta = TimeDelta::hours(24);
/// How long a claim stays open.
pub const CLAIM_LIFETIME: TimeDelta = TimeDelta::days(7);
/// Domains checked per sweep batch (one read and two writes per batch).
const SWEEP_BATCH: i64 = 1000;
/// Domains checked at once during a sweep (each looks its four records up together).
const SWEEP_IN_FLIGHT: usize = 32;

/// Checks domains against DNS. Cheap to clone.
#[derive(Clone, Debug)]
pub struct DomainChecker {
    pub dns: Dns,
    pub hosts: RegionHosts,
}

impl DomainChecker {
    /// The records a domain publishes.
    pub fn records_of(&self, domain: &Domain) -> Vec<ExpectedRecord> {
        let name = domain.domain_name();
        let source = RecordSource {
            name: &name,
            region: domain.region,
            custom_return_path: &domain.custom_return_path,
            receiving_host: &domain.receiving_host,
            mail_from_code: &domain.mail_from_code,
            dkim_public_key: &domain.dkim_public_key,
        };
        expected_records(&source, &self.hosts)
    }

    /// Looks every record of `domain` up and decides the new statuses from the previous ones.
    pub async fn check(&self, domain: &Domain, previous: &[RecordState], now: DateTime<Utc>) -> CheckResult {
        let expected = self.records_of(domain);
        let past_grace = now - domain.created_at > GRACE;
        let outcomes = futures::future::join_all(expected.iter().map(|record| self.look(domain, record))).await;
        let mut promote_dkim = false;
        let mut records = Vec::with_capacity(expected.len());
        for (record, (outcome, found, promote)) in expected.iter().zip(outcomes) {
            promote_dkim |= promote;
            let before = previous.iter().find(|p| p.kind == record.kind).map_or(RecordStatus::NotStarted, |p| p.status);
            records.push(RecordCheck { kind: record.kind, status: next_record_status(before, outcome, past_grace), found });
        }
        let status_of = |kind| records.iter().find(|r: &&RecordCheck| r.kind == kind).map_or(RecordStatus::NotStarted, |r| r.status);
        let status = sending_status(
            status_of(RecordKind::Dkim),
            status_of(RecordKind::MailFrom),
            domain.first_verified_at.is_some(),
        );
        CheckResult { domain_id: domain.id, status, promote_dkim, records }
    }

    /// One record: its outcome, what was found instead when it does not match, and whether the
    /// DNS carries the rotation's next DKIM key.
    async fn look(&self, domain: &Domain, record: &ExpectedRecord) -> (CheckOutcome, Option<String>, bool) {
        let lookup = match record.kind {
            RecordKind::Dkim => self.dns.txt(&record.fqdn).await,
            RecordKind::MailFrom | RecordKind::Tracking => self.dns.cname(&record.fqdn).await,
            RecordKind::Receiving => self.dns.mx(&record.fqdn).await,
        };
        let values = match lookup {
            Lookup::Unreachable(error) => return (CheckOutcome::Unreachable, Some(error), false),
            Lookup::NotFound => return (CheckOutcome::Missing, None, false),
            Lookup::Found(values) => values,
        };
        let matches = |value: &String| match record.kind {
            RecordKind::Dkim => txt_has_dkim_key(value, &domain.dkim_public_key),
            RecordKind::Receiving => value.split_once(' ').is_some_and(|(_, host)| host == record.value),
            RecordKind::MailFrom | RecordKind::Tracking => *value == record.value,
        };
        if record.kind == RecordKind::Dkim
            && let Some(next) = &domain.dkim_next_public_key
            && values.iter().any(|value| txt_has_dkim_key(value, next))
        {
            return (CheckOutcome::Matches, None, true);
        }
        if values.iter().any(matches) {
            (CheckOutcome::Matches, None, false)
        } else {
            (CheckOutcome::Missing, values.into_iter().next().map(|v| truncate(v, 300)), false)
        }
    }
}

fn truncate(mut value: String, max: usize) -> String {
    if value.len() > max {
        let mut end = max;
        while !value.is_char_boundary(end) {
            end -= 1;
        }
        value.truncate(end);
    }
    value
}

/// The `data` of a `domain.*` event: the domain's id, name, status, region, creation time and
/// each record's name (as the Resend SDKs read it), kind, type and status.
pub fn event_data(domain: &Domain, status: DomainStatus, records: &[(RecordKind, RecordStatus)]) -> Value {
    json!({
        "id": domain.id,
        "name": domain.name,
        "status": status.as_str(),
        "region": domain.region.as_str(),
        "created_at": domain.created_at,
        "records": records.iter().map(|(kind, status)| json!({
            "record": kind.sdk_name().as_str(),
            "kind": kind.as_str(),
            "type": kind.record_type(),
            "status": status.as_str(),
        })).collect::<Vec<_>>(),
    })
}

/// A `domain.*` event carrying the domain as it stands, with its records' statuses.
pub async fn event_for(conn: &mut PgConnection, event_type: &'static str, domain: &Domain) -> sqlx::Result<NewEvent> {
    let records: Vec<_> = domains::records(conn, &[domain.id]).await?.iter().map(|r| (r.kind, r.status)).collect();
    Ok(NewEvent { team_id: domain.team_id, event_type, data: event_data(domain, domain.status, &records), email_id: None })
}

/// `domain.updated` for a domain whose status a claim changed (the row is read back).
async fn claim_changed(conn: &mut PgConnection, team_id: Uuid, domain_id: Uuid, events: &mut Vec<NewEvent>) -> sqlx::Result<()> {
    if let Some(domain) = domains::get(conn, team_id, domain_id).await? {
        events.push(event_for(conn, "domain.updated", &domain).await?);
    }
    Ok(())
}

/// Stores checks in one transaction: statuses, a `domain.updated` event for each domain whose
/// status or any record's status changed, and the sending tier of teams whose first domain
/// verified.
pub async fn store_checks(
    conn: &mut PgConnection,
    checked: &[(Domain, Vec<RecordState>, CheckResult)],
) -> sqlx::Result<()> {
    let results: Vec<CheckResult> = checked.iter().map(|(_, _, result)| result.clone()).collect();
    let saved = domains::save_checks(conn, &results).await?;
    let saved: HashMap<Uuid, DomainStatus> = saved.into_iter().map(|s| (s.id, s.status)).collect();
    let mut events = Vec::new();
    let mut verified_teams = Vec::new();
    for (domain, previous, result) in checked {
        let Some(&status) = saved.get(&domain.id) else { continue };
        let records_changed = result.records.iter().any(|record| {
            previous.iter().find(|p| p.kind == record.kind).is_none_or(|p| p.status != record.status)
        });
        if status == DomainStatus::Verified {
            verified_teams.push(domain.team_id);
        }
        if status != domain.status || records_changed || result.promote_dkim {
            let records: Vec<_> = result.records.iter().map(|r| (r.kind, r.status)).collect();
            events.push(NewEvent { team_id: domain.team_id, event_type: "domain.updated", data: event_data(domain, status, &records), email_id: None });
        }
    }
    if !verified_teams.is_empty() {
        domains::raise_sending_tier(conn, &verified_teams).await?;
    }
    events::emit(conn, &events).await
}

/// Checks one domain now and stores the outcome.
pub async fn verify_now(pool: &PgPool, checker: &DomainChecker, domain: &Domain) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let previous = domains::records(&mut conn, &[domain.id]).await?;
    drop(conn);
    let result = checker.check(domain, &previous, Utc::now()).await;
    let mut tx = pool.begin().await?;
    store_checks(&mut tx, &[(domain.clone(), previous, result)]).await?;
    tx.commit().await?;
    Ok(())
}

/// Rechecks every domain in batches, then every pending claim. Returns how many domains it checked.
pub async fn sweep(pool: &PgPool, checker: &DomainChecker) -> anyhow::Result<usize> {
    let mut after = None;
    let mut checked_count = 0;
    loop {
        let mut conn = pool.acquire().await?;
        let batch = domains::batch_to_check(&mut conn, after, SWEEP_BATCH).await?;
        if batch.is_empty() {
            break;
        }
        after = batch.last().map(|d| d.id);
        let ids: Vec<Uuid> = batch.iter().map(|d| d.id).collect();
        let mut previous: HashMap<Uuid, Vec<RecordState>> = HashMap::new();
        for record in domains::records(&mut conn, &ids).await? {
            previous.entry(record.domain_id).or_default().push(record);
        }
        drop(conn);
        let now = Utc::now();
        let checked: Vec<_> = stream::iter(batch)
            .map(|domain| {
                let previous = previous.remove(&domain.id).unwrap_or_default();
                async move {
                    let result = checker.check(&domain, &previous, now).await;
                    (domain, previous, result)
                }
            })
            .buffer_unordered(SWEEP_IN_FLIGHT)
            .collect()
            .await;
        checked_count += checked.len();
        let mut tx = pool.begin().await?;
        store_checks(&mut tx, &checked).await?;
        tx.commit().await?;
    }
    check_claims(pool, &checker.dns, None).await?;
    Ok(checked_count)
}

/// The apalis handler of the hourly sweep.
pub async fn handle_sweep(
    job: schema::jobs::DomainSweep,
    pool: Data<PgPool>,
    checker: Data<DomainChecker>,
    id: PgTaskId,
    attempt: Attempt,
) -> Result<usize, BoxDynError> {
    match sweep(&pool, &checker).await {
        Ok(checked) => {
            tracing::info!(period = %job.period, checked, "domain sweep done");
            Ok(checked)
        }
        Err(error) => Err(crate::backoff::retry_later(&pool, &id, attempt.current(), error).await),
    }
}

/// Why a resolved claim has not transferred yet, or `None` when it may.
pub fn transfer_blocked(holder: &claims::Holder, now: DateTime<Utc>) -> Option<&'static str> {
    if holder.verified_at.is_some_and(|at| now - at < CLAIM_RECENTLY_VERIFIED) {
        Some("owner_recently_verified")
    } else if holder.last_sent_at.is_some_and(|at| now - at < CLAIM_RECENTLY_SENT) {
        Some("owner_recently_sent")
    } else if holder.has_scheduled_mail {
        Some("owner_has_scheduled_mail")
    } else {
        None
    }
}

/// Checks pending claims (all, or just `only`): expires the ones past 7 days, looks their TXT
/// record up, and transfers the resolved ones the holder no longer blocks.
pub async fn check_claims(pool: &PgPool, dns: &Dns, only: Option<Uuid>) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    let pending = claims::lock_pending(&mut tx, only).await?;
    let now = Utc::now();
    let mut events = Vec::new();
    for claim in pending {
        if claim.expires_at <= now {
            claims::expire(&mut tx, &claim).await?;
            claim_changed(&mut tx, claim.team_id, claim.domain_id, &mut events).await?;
            continue;
        }
        let published = dns.txt(&claim.name).await.values().iter().any(|text| text.trim() == claim.token);
        if !published {
            claims::set_blocked(&mut tx, claim.id, "record_not_found").await?;
            continue;
        }
        let holder = claims::holder(&mut tx, claim.team_id, &claim.name).await?;
        if let Some(reason) = holder.as_ref().and_then(|holder| transfer_blocked(holder, now)) {
            claims::set_blocked(&mut tx, claim.id, reason).await?;
            continue;
        }
        transfer(&mut tx, &claim, holder.as_ref(), &mut events).await?;
    }
    events::emit(&mut tx, &events).await?;
    tx.commit().await?;
    Ok(())
}

async fn transfer(
    conn: &mut PgConnection,
    claim: &Claim,
    holder: Option<&claims::Holder>,
    events: &mut Vec<NewEvent>,
) -> sqlx::Result<()> {
    claims::transfer(conn, claim, holder.map(|h| h.id)).await?;
    for (team_id, domain_id) in holder.map(|h| (h.team_id, h.id)).into_iter().chain([(claim.team_id, claim.domain_id)]) {
        claim_changed(conn, team_id, domain_id, events).await?;
    }
    Ok(())
}
