//! The team profile: its plan and limits, sending tier, sender identity (the postal address
//! every marketing message carries) and brand kit (the defaults templates draw with).

use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult, ErrorKind};
use crate::http::fields::{Choice, Choices, Nullable};
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::Object;
use schema::model::RiskState;
use schema::store::sso::{self, Sso};
use schema::store::teams::{self, ProfileChange, Team};
use crate::routes::team::sso::{SsoView, sso_view};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use crate::routes::team::brand_kit::{checked_brand_kit, MAX_LINE, optional_line, one_line, BrandKit};

pub struct TeamApi;

crate::choices! {
    /// The sending tier's name, from 0 to 3: `new`, `verified`, `paid`, `trusted`.
    TierName = &["new", "verified", "paid", "trusted"];
    /// What raises the sending tier next: `verify_domain`, `add_payment_method` or `operator_review`.
    NextUnlock = &["verify_domain", "add_payment_method", "operator_review"];
    /// An officially assigned ISO 3166-1 alpha-2 country code, upper case.
    Country = &[
        "AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX", "AZ", "BA", "BB", "BD", "BE",
        "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ", "BR", "BS", "BT", "BV", "BW", "BY", "BZ", "CA", "CC", "CD",
        "CF", "CG", "CH", "CI", "CK", "CL", "CM", "CN", "CO", "CR", "CU", "CV", "CW", "CX", "CY", "CZ", "DE", "DJ", "DK", "DM",
        "DO", "DZ", "EC", "EE", "EG", "EH", "ER", "ES", "ET", "FI", "FJ", "FK", "FM", "FO", "FR", "GA", "GB", "GD", "GE", "GF",
        "GG", "GH", "GI", "GL", "GM", "GN", "GP", "GQ", "GR", "GS", "GT", "GU", "GW", "GY", "HK", "HM", "HN", "HR", "HT", "HU",
        "ID", "IE", "IL", "IM", "IN", "IO", "IQ", "IR", "IS", "IT", "JE", "JM", "JO", "JP", "KE", "KG", "KH", "KI", "KM", "KN",
        "KP", "KR", "KW", "KY", "KZ", "LA", "LB", "LC", "LI", "LK", "LR", "LS", "LT", "LU", "LV", "LY", "MA", "MC", "MD", "ME",
        "MF", "MG", "MH", "MK", "ML", "MM", "MN", "MO", "MP", "MQ", "MR", "MS", "MT", "MU", "MV", "MW", "MX", "MY", "MZ", "NA",
        "NC", "NE", "NF", "NG", "NI", "NL", "NO", "NP", "NR", "NU", "NZ", "OM", "PA", "PE", "PF", "PG", "PH", "PK", "PL", "PM",
        "PN", "PR", "PS", "PT", "PW", "PY", "QA", "RE", "RO", "RS", "RU", "RW", "SA", "SB", "SC", "SD", "SE", "SG", "SH", "SI",
        "SJ", "SK", "SL", "SM", "SN", "SO", "SR", "SS", "ST", "SV", "SX", "SY", "SZ", "TC", "TD", "TF", "TG", "TH", "TJ", "TK",
        "TL", "TM", "TN", "TO", "TR", "TT", "TV", "TW", "TZ", "UA", "UG", "UM", "US", "UY", "UZ", "VA", "VC", "VE", "VG", "VI",
        "VN", "VU", "WF", "WS", "YE", "YT", "ZA", "ZM", "ZW",
    ];
}

/// Longest sender name.
const MAX_SENDER_NAME: usize = 200;
/// A plan's limits.
#[derive(Object)]
pub struct PlanLimits {
    /// Emails a month the plan includes.
    pub included_emails: i32,
    /// Emails a day, or `null` for no daily cap.
    pub daily_cap: Nullable<i32>,
    /// Domains the team may hold.
    pub domain_limit: i32,
    /// Webhook endpoints the team may hold.
    pub webhook_endpoint_limit: i32,
    /// Days logs and events are kept.
    pub retention_days: i32,
}

/// The team's plan.
#[derive(Object)]
pub struct PlanView {
    /// The plan's code.
    pub code: String,
    /// The plan's display name.
    pub name: String,
    /// What the plan allows.
    pub limits: PlanLimits,
}

/// The team's postal address.
#[derive(Object, Deserialize, Serialize, Clone)]
pub struct PostalAddress {
    /// The first line.
    pub line1: String,
    /// The second line, or `null` when there is none.
    pub line2: Nullable<String>,
    /// The city.
    pub city: String,
    /// The state or region, or `null` when there is none.
    pub state: Nullable<String>,
    /// The postal code, or `null` when there is none.
    pub postal_code: Nullable<String>,
    /// ISO 3166-1 alpha-2, upper case.
    pub country: Choice<Country>,
}

/// A postal address sent in `PATCH /team`: `line1`, `city` and `country` are required.
#[derive(Object, Deserialize)]
pub struct PostalAddressInput {
    /// 1 to 200 characters, one line.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"\S"))]
    pub line1: String,
    /// Up to 200 characters, one line.
    #[oai(validator(max_length = 200))]
    pub line2: Option<String>,
    /// 1 to 200 characters, one line.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"\S"))]
    pub city: String,
    /// Up to 200 characters, one line.
    #[oai(validator(max_length = 200))]
    pub state: Option<String>,
    /// Up to 200 characters, one line.
    #[oai(validator(max_length = 200))]
    pub postal_code: Option<String>,
    /// ISO 3166-1 alpha-2, upper case (`US`, `DE`).
    pub country: Choice<Country>,
}

/// Who the team's mail says it is from, and where it can be reached by post.
#[derive(Object)]
pub struct SenderIdentity {
    /// The name the team's mail says it is from, or `null` when unset.
    pub sender_name: Nullable<String>,
    /// The postal address every marketing message carries, or `null` when unset.
    pub postal_address: Nullable<PostalAddress>,
}

/// The sending tier: what the team may do and what unlocks more.
#[derive(Object)]
pub struct SendingView {
    /// Regions still in the sending sandbox; empty when none.
    pub sandbox_regions: Vec<String>,
    /// 0 to 3.
    pub tier: i16,
    /// The tier's name.
    pub tier_name: Choice<TierName>,
    /// What raises the tier next, or `null` at the top tier.
    pub next_unlock: Nullable<Choice<NextUnlock>>,
    /// Emails a day (UTC) this tier allows whatever the plan does, or `null` when only the
    /// plan's cap applies; `usage.daily_limit` in `GET /billing` is the lower of the two.
    pub daily_cap: Nullable<i32>,
    /// Emails a day the next tier allows, or `null` when it has no cap of its own or at the top
    /// tier.
    pub next_daily_cap: Nullable<i32>,
}

/// The team.
#[derive(Object)]
pub struct TeamView {
    /// Always `team`.
    pub object: String,
    /// The team's id.
    pub id: String,
    /// 1 to 80 characters; not unique.
    pub name: String,
    /// The team's unique URL-safe name, set when the team is made.
    pub slug: String,
    /// When the team was created.
    pub created_at: DateTime<Utc>,
    /// The team's standing: `suspended` stops every key of the team.
    pub risk_state: RiskState,
    /// The team's plan and its limits.
    pub plan: PlanView,
    /// Who the team's mail says it is from, and where it can be reached by post.
    pub sender_identity: SenderIdentity,
    /// Whether AI assist is on.
    pub ai_assist_enabled: bool,
    /// The brand templates draw with.
    pub brand_kit: BrandKit,
    /// The sending tier: what the team may do and what unlocks more.
    pub sending: SendingView,
    /// The team's single sign-on, or `null` when it has none.
    pub sso: Nullable<SsoView>,
}

/// Body of `PATCH /team`: only the fields sent change.
#[derive(Object, Deserialize)]
pub struct UpdateTeam {
    /// 1 to 80 characters, trimmed, one line.
    #[oai(validator(min_length = 1, max_length = 80, pattern = r"\S"))]
    pub name: Option<String>,
    /// One line, 1 to 200 characters; `null` clears it.
    #[serde(default)]
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"\S"))]
    pub sender_name: MaybeUndefined<String>,
    /// `null` clears it.
    #[serde(default)]
    pub postal_address: MaybeUndefined<PostalAddressInput>,
    /// `true` answers `503 service_unavailable` until AI assist is configured; `false` always works.
    pub ai_assist_enabled: Option<bool>,
    /// Sent whole: every field must be present; `null` means the default.
    pub brand_kit: Option<BrandKit>,
}

#[poem_openapi::OpenApi(tag = "Tag::Team")]
impl TeamApi {
    /// Retrieve the team: plan and limits, sending tier, sender identity and brand kit.
    #[oai(path = "/team", method = "get", operation_id = "get-team")]
    async fn get(&self, state: Data<&AppState>, caller: Data<&Caller>) -> ApiResult<Json<TeamView>> {
        let mut conn = state.pool.acquire().await?;
        let team = teams::get(&mut conn, caller.team_id).await?.ok_or_else(|| ApiError::not_found("Team"))?;
        let sso = sso::get(&mut conn, caller.team_id).await?;
        Ok(Json(view(team, sso.as_ref())))
    }

    /// Change the team's name, sender identity, brand kit or AI assist; answers the team. The
    /// name needs a team admin (the admin's dashboard session beside the key); a key alone or
    /// an OAuth token (`team:write`) changes everything but the name, and a `name` from either
    /// is `403 invalid_permission`.
    #[oai(path = "/team", method = "patch", operation_id = "update-team")]
    async fn update(&self, state: Data<&AppState>, caller: Data<&Caller>, body: Body<UpdateTeam>) -> ApiResult<Json<TeamView>> {
        let raw: Value = serde_json::from_slice(&body.1).unwrap_or_default();
        let body = body.0;
        if caller.token.is_some() && body.name.is_some() {
            return Err(ApiError::invalid_permission("An OAuth token cannot rename the team; a team admin does it from the dashboard or with an API key."));
        }
        let name = body.name.as_deref().map(|name| one_line("name", name, 80, false)).transpose()?;
        let sender_name = match &body.sender_name {
            MaybeUndefined::Undefined => None,
            MaybeUndefined::Null => Some(None),
            MaybeUndefined::Value(text) => Some(Some(one_line("sender_name", text, MAX_SENDER_NAME, false)?)),
        };
        let postal_address = match body.postal_address {
            MaybeUndefined::Undefined => None,
            MaybeUndefined::Null => Some(None),
            MaybeUndefined::Value(address) => Some(Some(serde_json::to_value(checked_address(address)?).map_err(anyhow::Error::from)?)),
        };
        let brand_kit = match body.brand_kit {
            None => None,
            Some(kit) => Some(serde_json::to_value(checked_brand_kit(kit, &raw["brand_kit"], &state.config.public_url)?).map_err(anyhow::Error::from)?),
        };
        if body.ai_assist_enabled == Some(true) && state.ai.is_none() {
            return Err(ApiError::new(ErrorKind::ServiceUnavailable, "AI assist is not configured on this Herald; `ai_assist_enabled: false` always works.",
            ));
        }
        if name.is_some() && caller.signed_in_admin.is_none() {
            return Err(ApiError::invalid_permission(
                "Renaming the team needs a team admin: send the request with an admin's dashboard session (its cookie and `x-csrf-token`) beside the key. A key alone changes the other fields.",
            ));
        }
        let change = ProfileChange {
            name: name.as_deref(),
            sender_name: sender_name.as_ref().map(|name| name.as_deref()),
            postal_address,
            ai_assist_enabled: body.ai_assist_enabled,
            brand_kit,
        };
        let mut conn = state.pool.acquire().await?;
        if !teams::update_profile(&mut conn, caller.team_id, &change).await? {
            return Err(ApiError::not_found("Team"));
        }
        let team = teams::get(&mut conn, caller.team_id).await?.ok_or_else(|| ApiError::not_found("Team"))?;
        let sso = sso::get(&mut conn, caller.team_id).await?;
        Ok(Json(view(team, sso.as_ref())))
    }
}

fn checked_address(address: PostalAddressInput) -> ApiResult<PostalAddress> {
    let country = address.country.as_str();
    if !Country::allows(country) {
        return Err(ApiError::invalid_field("postal_address.country", "must be an upper-case ISO 3166-1 alpha-2 code (`US`, `DE`)"));
    }
    Ok(PostalAddress {
        line1: one_line("postal_address.line1", &address.line1, MAX_LINE, false)?,
        line2: optional_line("postal_address.line2", Nullable(address.line2), MAX_LINE)?,
        city: one_line("postal_address.city", &address.city, MAX_LINE, false)?,
        state: optional_line("postal_address.state", Nullable(address.state), MAX_LINE)?,
        postal_code: optional_line("postal_address.postal_code", Nullable(address.postal_code), MAX_LINE)?,
        country: Choice::new(country),
    })
}

fn view(team: Team, sso: Option<&Sso>) -> TeamView {
    let tier = team.sending_tier.clamp(0, 3);
    let postal_address = team.postal_address.and_then(|value| serde_json::from_value(value).ok());
    let brand_kit = serde_json::from_value(team.brand_kit).unwrap_or_default();
    TeamView {
        object: "team".into(),
        id: team.id.to_string(),
        name: team.name,
        slug: team.slug,
        created_at: team.created_at,
        risk_state: team.risk_state,
        plan: PlanView {
            code: team.plan_code,
            name: team.plan_name,
            limits: PlanLimits {
                included_emails: team.included_emails,
                daily_cap: Nullable(team.daily_cap),
                domain_limit: team.domain_limit,
                webhook_endpoint_limit: team.webhook_endpoint_limit,
                retention_days: team.retention_days,
            },
        },
        sender_identity: SenderIdentity { sender_name: Nullable(team.sender_name), postal_address: Nullable(postal_address) },
        ai_assist_enabled: team.ai_assist_enabled,
        brand_kit,
        sending: SendingView {
            sandbox_regions: team.sandbox_regions,
            tier,
            tier_name: Choice::new(schema::model::tier_name(tier)),
            next_unlock: Nullable(schema::model::next_unlock(tier).map(Choice::new)),
            daily_cap: Nullable(team.tier_daily_cap),
            next_daily_cap: Nullable(team.next_tier_daily_cap),
        },
        sso: Nullable(sso.map(sso_view)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_country_list_holds_the_249_assigned_codes_once_each() {
        let mut codes = Country::VALUES.to_vec();
        assert_eq!(codes.len(), 249);
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), 249);
        assert!(Country::allows("US") && Country::allows("DE") && !Country::allows("us") && !Country::allows("XX"));
    }
}
