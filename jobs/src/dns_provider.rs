//! DNS auto-configuration through a provider's API, Cloudflare first. A provider proves its
//! token reaches exactly one zone, lists what already exists at a name, and creates records;
//! [`autoconfigure`] never deletes or overwrites, and reports what was in the way.

use schema::domain::{ExpectedRecord, RecordKind};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// Why auto-configuration stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The credential is not acceptable (wrong scope, a global key, invalid).
    #[error("{0}")]
    Refused(String),
    /// The provider could not be reached or answered unexpectedly.
    #[error("the DNS provider is unavailable: {0}")]
    Unavailable(String),
}

/// A record as the provider holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRecord {
    pub record_type: String,
    pub name: String,
    pub value: String,
}

/// The few calls auto-configuration needs from a DNS provider.
pub trait DnsProvider {
    /// Checks the credential reaches exactly the zone `zone` and no other; returns the zone's id.
    fn zone_id(&self, zone: &str) -> impl Future<Output = Result<String, ProviderError>> + Send;
    /// Every record at the fully qualified `name`.
    fn records_at(&self, zone_id: &str, name: &str) -> impl Future<Output = Result<Vec<ProviderRecord>, ProviderError>> + Send;
    /// Creates one record.
    fn create(&self, zone_id: &str, record: &ExpectedRecord) -> impl Future<Output = Result<(), ProviderError>> + Send;
}

/// What auto-configuration did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub written: Vec<ExpectedRecord>,
    /// Our records not written because the name already holds records, with what is there.
    pub conflicts: Vec<(ExpectedRecord, Vec<ProviderRecord>)>,
}

/// Writes `records` into `zone` through `provider`, skipping every name that already holds a record.
pub async fn autoconfigure<P: DnsProvider>(provider: &P, zone: &str, records: &[ExpectedRecord]) -> Result<Outcome, ProviderError> {
    let zone_id = provider.zone_id(zone).await?;
    let mut outcome = Outcome::default();
    for record in records {
        let existing = provider.records_at(&zone_id, &record.fqdn).await?;
        if existing.is_empty() {
            provider.create(&zone_id, record).await?;
            outcome.written.push(record.clone());
        } else {
            outcome.conflicts.push((record.clone(), existing));
        }
    }
    Ok(outcome)
}

/// Cloudflare's v4 API with a scoped API token.
pub struct Cloudflare {
    http: reqwest::Client,
    base: String,
    token: String,
}

#[derive(Deserialize)]
struct Envelope<T> {
    success: bool,
    #[serde(default)]
    errors: Vec<Value>,
    result: Option<T>,
}

#[derive(Deserialize)]
struct Zone {
    id: String,
    name: String,
}

#[derive(Deserialize)]
struct TokenStatus {
    status: String,
}

#[derive(Deserialize)]
struct CfRecord {
    #[serde(rename = "type")]
    record_type: String,
    name: String,
    content: String,
}

impl Cloudflare {
    /// A client for `base` (such as `https://api.cloudflare.com/client/v4`) using `token`.
    /// A global API key (37 hexadecimal characters) is refused: it reaches every zone.
    pub fn new(base: &str, token: &str) -> Result<Cloudflare, ProviderError> {
        let token = token.trim();
        if token.len() == 37 && token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ProviderError::Refused(
                "A global API key reaches every zone of the account; create an API token scoped to this domain's zone."
                    .into(),
            ));
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| ProviderError::Unavailable(e.to_string()))?;
        Ok(Cloudflare { http, base: base.trim_end_matches('/').to_string(), token: token.to_string() })
    }

    async fn call<T: for<'de> Deserialize<'de>>(&self, request: reqwest::RequestBuilder) -> Result<(u16, Envelope<T>), ProviderError> {
        let response = request.bearer_auth(&self.token).send().await.map_err(|e| ProviderError::Unavailable(e.to_string()))?;
        let status = response.status().as_u16();
        let envelope: Envelope<T> = response.json().await.map_err(|e| ProviderError::Unavailable(format!("unreadable answer: {e}")))?;
        if status >= 500 {
            return Err(ProviderError::Unavailable(format!("HTTP {status}")));
        }
        Ok((status, envelope))
    }
}

impl DnsProvider for Cloudflare {
    async fn zone_id(&self, zone: &str) -> Result<String, ProviderError> {
        let (_, verify) = self.call::<TokenStatus>(self.http.get(format!("{}/user/tokens/verify", self.base))).await?;
        if !verify.success || verify.result.is_none_or(|token| token.status != "active") {
            return Err(ProviderError::Refused(format!(
                "Cloudflare did not accept the API token as an active token ({}).",
                json!(verify.errors)
            )));
        }
        let (_, zones) = self.call::<Vec<Zone>>(self.http.get(format!("{}/zones", self.base)).query(&[("per_page", "50")])).await?;
        let zones = zones.result.filter(|_| zones.success).unwrap_or_default();
        match zones.as_slice() {
            [only] if only.name.eq_ignore_ascii_case(zone) => Ok(only.id.clone()),
            [] | [_] => Err(ProviderError::Refused(format!("The API token does not reach the zone {zone}."))),
            _ => Err(ProviderError::Refused(format!(
                "The API token reaches {} zones; create one scoped to {zone} alone.",
                zones.len()
            ))),
        }
    }

    async fn records_at(&self, zone_id: &str, name: &str) -> Result<Vec<ProviderRecord>, ProviderError> {
        let request = self.http.get(format!("{}/zones/{zone_id}/dns_records", self.base)).query(&[("name", name), ("per_page", "100")]);
        let (status, records) = self.call::<Vec<CfRecord>>(request).await?;
        if !records.success {
            return Err(ProviderError::Unavailable(format!("listing records failed with HTTP {status}")));
        }
        Ok(records
            .result
            .unwrap_or_default()
            .into_iter()
            .map(|r| ProviderRecord { record_type: r.record_type, name: r.name, value: r.content })
            .collect())
    }

    async fn create(&self, zone_id: &str, record: &ExpectedRecord) -> Result<(), ProviderError> {
        let content = match record.kind {
            // Two quoted character-strings: a 2048-bit key is longer than one string may be.
            RecordKind::Dkim => {
                let key = record.value.trim_start_matches("p=");
                let [first, second] = schema::domain::dkim_zone_strings(key);
                format!("\"{first}\" \"{second}\"")
            }
            _ => record.value.clone(),
        };
        let mut body = json!({ "type": record.kind.record_type(), "name": record.fqdn, "content": content, "ttl": 1 });
        if record.kind.record_type() == "CNAME" {
            body["proxied"] = json!(false);
        }
        if let Some(priority) = record.priority {
            body["priority"] = json!(priority);
        }
        let request = self.http.post(format!("{}/zones/{zone_id}/dns_records", self.base)).json(&body);
        let (status, created) = self.call::<Value>(request).await?;
        if !created.success {
            return Err(ProviderError::Unavailable(format!(
                "creating {} {} failed with HTTP {status}: {}",
                record.kind.record_type(),
                record.fqdn,
                json!(created.errors)
            )));
        }
        Ok(())
    }
}
