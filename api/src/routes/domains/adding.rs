//! Adding a domain: the body's checks (name, region, TLS, return path, receiving host), the
//! plan's domain limit, fresh DKIM keys and the insert.

use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::state::AppState;
use poem_openapi::Object;
use schema::domain::{DomainName, DomainStatus, Region, Tls, generate_dkim_key, new_mail_from_code, parse_label};
use schema::store::domains::{self, Domain, NewDomain};
use serde::Deserialize;
use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;
use crate::routes::domains::views::{Capability, Capabilities};

/// Return-path labels suggested when the asked one is taken, in order.
pub const RETURN_PATH_SUGGESTIONS: &[&str] = &["send", "bounces", "mail-from", "rp"];

/// Body of `POST /domains` and `POST /domains/claim`.
#[derive(Object, Deserialize)]
pub struct CreateDomain {
    /// The domain or subdomain, such as `example.com` or `mail.example.com`; IDNA names are accepted.
    pub name: String,
    /// `us-east-1` (default), `eu-west-1`, `sa-east-1` or `ap-northeast-1`; fixed once created.
    pub region: Option<Region>,
    /// `opportunistic` (default) or `enforced`.
    pub tls: Option<Tls>,
    /// The label of the return-path (mail-from) record, default `send`; fixed once created.
    pub custom_return_path: Option<String>,
    /// Where the receiving MX goes: `@` (default, the domain itself) or one label; fixed once created.
    pub receiving_host: Option<String>,
    /// What the domain is used for: sending (default `enabled`) and receiving (default `disabled`).
    pub capabilities: Option<Capabilities>,
    /// Track opens (default false).
    pub open_tracking: Option<bool>,
    /// Track clicks (default false).
    pub click_tracking: Option<bool>,
    /// Turn receiving on although the receiving name's MX delivers elsewhere today (that mail
    /// moves to Herald once the MX is replaced); without it that is `409 receiving_mx_in_use`.
    pub confirm_replace_mx: Option<bool>,
}

/// A create or claim request, validated.
pub struct NewRequest {
    pub name: DomainName,
    pub region: Region,
    pub tls: Tls,
    pub custom_return_path: String,
    pub receiving_host: String,
    pub sending: bool,
    pub receiving: bool,
    pub open_tracking: bool,
    pub click_tracking: bool,
}

impl NewRequest {
    pub fn parse(body: CreateDomain) -> ApiResult<NewRequest> {
        let name = DomainName::parse(&body.name).map_err(|message| ApiError::invalid_field("name", message))?;
        // Nothing under `.localhost` resolves publicly, so none could be verified; and it keeps
        // the development sender's name out of reach of DNS.
        if name.name().ends_with(".localhost") {
            return Err(ApiError::invalid_field(
                "name",
                format!("is under .localhost, which no public DNS serves ({} is Herald's development sender)", domains::DEV_SENDER_DOMAIN),
            ));
        }
        let custom_return_path = parse_label(body.custom_return_path.as_deref().unwrap_or("send"), false)
            .map_err(|message| ApiError::invalid_field("custom_return_path", message))?;
        let receiving_host = parse_label(body.receiving_host.as_deref().unwrap_or("@"), true)
            .map_err(|message| ApiError::invalid_field("receiving_host", message))?;
        let capabilities = body.capabilities.unwrap_or_default();
        let region = body.region.unwrap_or(Region::UsEast1);
        let receiving = capabilities.receiving.is_some_and(Capability::on);
        receiving_offered(region, receiving)?;
        Ok(NewRequest {
            name,
            region,
            tls: body.tls.unwrap_or(Tls::Opportunistic),
            custom_return_path,
            receiving_host,
            sending: capabilities.sending.is_none_or(Capability::on),
            receiving,
            open_tracking: body.open_tracking.unwrap_or(false),
            click_tracking: body.click_tracking.unwrap_or(false),
        })
    }
}

pub fn receiving_offered(region: Region, receiving: bool) -> ApiResult<()> {
    if receiving && !region.offers_receiving() {
        let message = format!("Receiving is offered only in us-east-1 and eu-west-1, not in {}.", region.as_str());
        return Err(ApiError::refused(message).with_error("capabilities.receiving", "not offered in this region"));
    }
    Ok(())
}

pub fn fixed_label(field: &str, given: Option<&str>, current: &str, allow_apex: bool) -> ApiResult<()> {
    match given.map(|raw| parse_label(raw, allow_apex)) {
        Some(Ok(label)) if label == current => Ok(()),
        Some(_) => Err(ApiError::invalid_parameter(field, "is fixed once the domain is created")),
        None => Ok(()),
    }
}

/// The name the receiving MX is published at.
pub fn receiving_name(receiving_host: &str, name: &str) -> String {
    if receiving_host == "@" { name.to_string() } else { format!("{receiving_host}.{name}") }
}

/// Refuses to turn receiving on at a name whose MX delivers to another host than the region's
/// inbound host (`409 receiving_mx_in_use`, listing what was found), unless confirmed. When DNS
/// cannot answer, the check is skipped.
pub async fn receiving_mx_free(state: &AppState, region: Region, name: &str) -> ApiResult<()> {
    let ours = state.checker.hosts.inbound_host(region);
    let jobs::dns::Lookup::Found(found) = state.checker.dns.mx(name).await else { return Ok(()) };
    let elsewhere: Vec<&String> = found.iter().filter(|mx| mx.split_whitespace().last() != Some(ours.as_str())).collect();
    if elsewhere.is_empty() {
        return Ok(());
    }
    let message = format!("The MX of {name} already delivers mail elsewhere; set confirm_replace_mx to true to turn receiving on anyway.");
    Err(ApiError::new(ErrorKind::ReceivingMxInUse, message).with_details(json!({ "name": name, "found": elsewhere })))
}

/// Refuses a return-path label whose name already holds a record that is not the service's.
/// When DNS cannot answer, the check is skipped (verification will show the record's state).
pub async fn return_path_free(state: &AppState, request: &NewRequest) -> ApiResult<()> {
    let dns = &state.checker.dns;
    let taken = |found: &Option<(&str, String)>| match found {
        None => false,
        Some(("CNAME", target)) => !state.checker.hosts.is_mail_from_target(target),
        Some(_) => true,
    };
    let label = &request.custom_return_path;
    let Ok(found) = dns.anything_at(&format!("{label}.{}", request.name.name())).await else { return Ok(()) };
    if !taken(&found) {
        return Ok(());
    }
    let (found_type, found_value) = found.unwrap_or_default();
    let mut suggestion = None;
    for candidate in RETURN_PATH_SUGGESTIONS.iter().filter(|c| *c != label) {
        if let Ok(at) = dns.anything_at(&format!("{candidate}.{}", request.name.name())).await
            && !taken(&at)
        {
            suggestion = Some(candidate.to_string());
            break;
        }
    }
    let suggestion = suggestion.unwrap_or_else(|| format!("{label}-{}", &new_mail_from_code()[..4]));
    let name = request.name.name();
    let message = format!("The return-path name {label}.{name} already holds a {found_type} record; choose another custom_return_path.");
    Err(ApiError::not_allowed(message).with_details(json!({
        "reason": "return_path_in_use",
        "label": label,
        "found": { "type": found_type, "value": found_value },
        "suggestion": suggestion,
    })))
}

pub async fn dkim_key() -> ApiResult<schema::domain::DkimKey> {
    tokio::task::spawn_blocking(generate_dkim_key)
        .await
        .map_err(|e| anyhow::anyhow!("DKIM key generation stopped: {e}"))?
        .map_err(ApiError::from)
}

pub async fn insert(
    conn: &mut PgConnection,
    team_id: Uuid,
    request: &NewRequest,
    key: &schema::domain::DkimKey,
    status: DomainStatus,
) -> ApiResult<Domain> {
    let id = schema::ids::new_id();
    let mail_from_code = new_mail_from_code();
    let inserted = domains::insert(
        conn,
        &NewDomain {
            id,
            team_id,
            name: &request.name,
            region: request.region,
            tls: request.tls,
            custom_return_path: &request.custom_return_path,
            receiving_host: &request.receiving_host,
            sending_enabled: request.sending,
            receiving_enabled: request.receiving,
            open_tracking: request.open_tracking,
            click_tracking: request.click_tracking,
            status,
            mail_from_code: &mail_from_code,
            dkim_private_key: &key.private_pem,
            dkim_public_key: &key.public_base64,
        },
    )
    .await;
    if let Err(error) = &inserted
        && schema::store::violated_constraint(error) == Some("domains_team_name_key")
    {
        return Err(already_added(request.name.name()));
    }
    inserted?;
    domains::get(conn, team_id, id).await?.ok_or_else(|| anyhow::anyhow!("inserted domain vanished").into())
}

pub async fn within_limit(conn: &mut PgConnection, team_id: Uuid, limit: i32) -> ApiResult<()> {
    if domains::count_live(conn, team_id).await? >= i64::from(limit) {
        return Err(ApiError::refused(format!("Domain limit reached: the plan allows {limit} domain(s).")));
    }
    Ok(())
}

pub fn already_added(name: &str) -> ApiError {
    ApiError::refused(format!("This team already has the domain {name}."))
}

pub fn held_elsewhere(name: &str) -> ApiError {
    let mut error = ApiError::new(ErrorKind::ResourceLocked, format!("The domain {name} is verified by another team. Claim it with POST /domains/claim."),
    );
    error.claimable = Some(true);
    error
}
