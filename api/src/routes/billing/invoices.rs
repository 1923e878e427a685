//! `GET /billing/invoices`: the team's invoices as Stripe lists them, newest first, kept 60
//! seconds per team so a dashboard's refreshes do not each reach Stripe.

use super::provider;
use crate::http::error::ApiResult;
use crate::http::fields::Nullable;
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::payload::Json;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use uuid::Uuid;

pub struct InvoicesApi;

/// How long a team's invoices are kept before Stripe is asked again.
pub const CACHED_FOR: Duration = Duration::from_secs(60);

/// The most invoices Herald lists (Stripe's page size).
const MOST: u32 = 100;

/// Each team's invoices and when Stripe listed them.
#[derive(Default)]
pub struct InvoiceCache(Mutex<HashMap<Uuid, (Instant, Vec<InvoiceView>)>>);

impl InvoiceCache {
    fn get(&self, team_id: Uuid) -> Option<Vec<InvoiceView>> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.get(&team_id).filter(|(at, _)| at.elapsed() < CACHED_FOR).map(|(_, list)| list.clone())
    }

    fn put(&self, team_id: Uuid, list: Vec<InvoiceView>) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.retain(|_, (at, _)| at.elapsed() < CACHED_FOR);
        kept.insert(team_id, (Instant::now(), list));
    }
}

/// An invoice.
#[derive(Object, Clone)]
pub struct InvoiceView {
    /// Stripe's invoice id.
    pub id: String,
    /// The invoice number, or `null` while it is a draft.
    pub number: Nullable<String>,
    /// `draft`, `open`, `paid`, `uncollectible` or `void`.
    pub status: Nullable<String>,
    /// The total in the currency's smallest unit (cents).
    pub total_cents: i64,
    /// The three-letter currency code, lower case.
    pub currency: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Stripe's page for the invoice, or `null` while it is a draft.
    pub hosted_invoice_url: Nullable<String>,
    /// The invoice as a PDF, or `null` while it is a draft.
    pub invoice_pdf: Nullable<String>,
}

/// The team's invoices.
#[derive(Object)]
pub struct InvoiceList {
    /// Always `list`.
    pub object: String,
    /// Whether older invoices exist past the newest 100 listed.
    pub has_more: bool,
    /// The invoices, newest first.
    pub data: Vec<InvoiceView>,
}

#[poem_openapi::OpenApi(tag = "Tag::Billing")]
impl InvoicesApi {
    /// The team's newest 100 invoices, newest first (`full_access`, or a token with
    /// `billing:read`); the list is at most 60 seconds old. A team that never subscribed, or a Herald without a
    /// payment provider, has none.
    #[oai(path = "/billing/invoices", method = "get", operation_id = "list-invoices")]
    async fn list(&self, state: Data<&AppState>, caller: Data<&Caller>) -> ApiResult<Json<InvoiceList>> {
        let all = match state.invoices.get(caller.team_id) {
            Some(kept) => kept,
            None => {
                let listed = fetch(&state, caller.team_id).await?;
                state.invoices.put(caller.team_id, listed.clone());
                listed
            }
        };
        let has_more = all.len() >= MOST as usize;
        Ok(Json(InvoiceList { object: "list".into(), has_more, data: all }))
    }
}

async fn fetch(state: &AppState, team_id: Uuid) -> ApiResult<Vec<InvoiceView>> {
    let Some(stripe) = state.stripe.as_ref() else { return Ok(Vec::new()) };
    let mut conn = state.pool.acquire().await?;
    let (customer, _) = schema::store::stripe::customer(&mut conn, team_id).await?;
    drop(conn);
    let Some(customer) = customer else { return Ok(Vec::new()) };
    let mut listed = stripe.invoices(&customer, MOST).await.map_err(provider::failed)?.data;
    listed.sort_by_key(|invoice| std::cmp::Reverse(invoice.created));
    Ok(listed
        .into_iter()
        .map(|i| InvoiceView {
            id: i.id,
            number: Nullable(i.number),
            status: Nullable(i.status),
            total_cents: i.total,
            currency: i.currency,
            created_at: DateTime::from_timestamp(i.created, 0).unwrap_or_else(Utc::now),
            hosted_invoice_url: Nullable(i.hosted_invoice_url),
            invoice_pdf: Nullable(i.invoice_pdf),
        })
        .collect())
}
