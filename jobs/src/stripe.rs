//! Stripe's API, the few calls billing makes: a small typed client over reqwest speaking
//! Stripe's form-encoded requests and JSON answers, and the check of a webhook's
//! `Stripe-Signature`. (Why not async-stripe: `docs/decisions.md`, "Billing (#24)".)

use ring::hmac;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

/// Stripe's own API.
pub const DEFAULT_API_BASE: &str = "https://api.stripe.com";

/// How far a webhook's timestamp may be from now.
pub const SIGNATURE_TOLERANCE_SECONDS: i64 = 300;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum StripeError {
    /// Stripe could not be reached, timed out or failed on its side (5xx): retry later.
    #[error("the payment provider is unavailable: {0}")]
    Unavailable(String),
    /// Stripe refused the request (4xx), with its message.
    #[error("the payment provider refused the request: {0}")]
    Refused(String),
}

/// A page of a Stripe list.
#[derive(Debug, Deserialize)]
pub struct List<T> {
    pub data: Vec<T>,
    #[serde(default)]
    pub has_more: bool,
}

#[derive(Debug, Deserialize)]
pub struct Customer {
    pub id: String,
}

#[derive(Debug, Deserialize)]
pub struct Price {
    pub id: String,
    #[serde(default)]
    pub lookup_key: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct CheckoutSession {
    pub id: String,
    pub url: String,
    /// Unix seconds.
    pub expires_at: i64,
}

#[derive(Debug, Deserialize)]
pub struct PortalSession {
    pub url: String,
}

#[derive(Debug, Deserialize)]
pub struct Invoice {
    pub id: String,
    #[serde(default)]
    pub number: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub total: i64,
    #[serde(default)]
    pub currency: String,
    /// Unix seconds.
    pub created: i64,
    #[serde(default)]
    pub hosted_invoice_url: Option<String>,
    #[serde(default)]
    pub invoice_pdf: Option<String>,
}

/// A webhook event.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Unix seconds.
    pub created: i64,
    pub data: EventData,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EventData {
    pub object: Value,
}

/// A recurring monthly price to create under its own product when its lookup key is missing.
pub struct PriceSpec<'a> {
    pub lookup_key: &'a str,
    pub name: &'a str,
    pub unit_amount_cents: i64,
}

/// What a checkout buys.
pub struct CheckoutRequest<'a> {
    pub customer: &'a str,
    pub price_id: &'a str,
    pub quantity: u32,
    pub success_url: &'a str,
    pub cancel_url: &'a str,
    /// The team, so the session and its subscription name it.
    pub team_id: &'a str,
    /// Made once per attempt: a retried call opens the same session.
    pub idempotency_key: &'a str,
}

/// A charge for a closed period's metered usage.
pub struct InvoiceItemRequest<'a> {
    pub customer: &'a str,
    /// The subscription whose next invoice carries it (`None`: the customer's next invoice).
    pub subscription: Option<&'a str>,
    pub amount_cents: i64,
    pub description: &'a str,
    /// The period the usage was in, unix seconds.
    pub period_start: i64,
    pub period_end: i64,
    pub team_id: &'a str,
    /// `emails` or `contacts`.
    pub meter: &'a str,
    pub idempotency_key: &'a str,
}

#[derive(Debug, Deserialize)]
pub struct InvoiceItem {
    pub id: String,
}

/// Stripe's API with a secret key.
#[derive(Clone)]
pub struct Stripe {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl std::fmt::Debug for Stripe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stripe").field("base", &self.base).finish_non_exhaustive()
    }
}

impl Stripe {
    /// A client of `base` (Stripe's own, or a stand-in) with `key`, each call bounded by `timeout`.
    pub fn new(base: &str, key: &str, timeout: Duration) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder().timeout(timeout).build()?;
        Ok(Self { http, base: base.trim_end_matches('/').to_string(), key: key.to_string() })
    }

    async fn answer<T: DeserializeOwned>(response: Result<reqwest::Response, reqwest::Error>) -> Result<T, StripeError> {
        let response = response.map_err(|e| StripeError::Unavailable(e.to_string()))?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| StripeError::Unavailable(e.to_string()))?;
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(StripeError::Unavailable(format!("HTTP {status}")));
        }
        if !status.is_success() {
            let message = body["error"]["message"].as_str().unwrap_or("no message").to_string();
            return Err(StripeError::Refused(message));
        }
        serde_json::from_value(body).map_err(|e| StripeError::Unavailable(format!("an answer Herald cannot read: {e}")))
    }

    async fn post<T: DeserializeOwned>(&self, path: &str, form: &[(String, String)], idempotency_key: Option<&str>) -> Result<T, StripeError> {
        let mut request = self.http.post(format!("{}{path}", self.base)).bearer_auth(&self.key).form(form);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        Self::answer(request.send().await).await
    }

    async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(String, String)]) -> Result<T, StripeError> {
        Self::answer(self.http.get(format!("{}{path}", self.base)).bearer_auth(&self.key).query(query).send().await).await
    }

    /// Creates the team's customer.
    pub async fn create_customer(&self, team_id: &str, name: &str, email: Option<&str>) -> Result<Customer, StripeError> {
        let mut form = pairs(&[("name", name), ("metadata[team_id]", team_id)]);
        if let Some(email) = email {
            form.push(("email".into(), email.into()));
        }
        self.post("/v1/customers", &form, Some(&format!("herald-customer-{team_id}"))).await
    }

    /// The active price with `lookup_key`, if Stripe has one.
    pub async fn price_by_lookup_key(&self, lookup_key: &str) -> Result<Option<Price>, StripeError> {
        let found: List<Price> = self.get("/v1/prices", &pairs(&[("lookup_keys[]", lookup_key), ("active", "true"), ("limit", "1")])).await?;
        Ok(found.data.into_iter().find(|p| p.lookup_key.as_deref() == Some(lookup_key)))
    }

    /// Creates a monthly USD price with its product.
    pub async fn create_price(&self, spec: &PriceSpec<'_>) -> Result<Price, StripeError> {
        let amount = spec.unit_amount_cents.to_string();
        let form = pairs(&[
            ("lookup_key", spec.lookup_key),
            ("currency", "usd"),
            ("unit_amount", &amount),
            ("recurring[interval]", "month"),
            ("product_data[name]", spec.name),
        ]);
        self.post("/v1/prices", &form, Some(&format!("herald-price-{}-{amount}", spec.lookup_key))).await
    }

    /// Opens a hosted checkout for a subscription.
    pub async fn checkout_session(&self, request: &CheckoutRequest<'_>) -> Result<CheckoutSession, StripeError> {
        let quantity = request.quantity.to_string();
        let form = pairs(&[
            ("mode", "subscription"),
            ("customer", request.customer),
            ("line_items[0][price]", request.price_id),
            ("line_items[0][quantity]", &quantity),
            ("success_url", request.success_url),
            ("cancel_url", request.cancel_url),
            ("client_reference_id", request.team_id),
            ("subscription_data[metadata][team_id]", request.team_id),
        ]);
        self.post("/v1/checkout/sessions", &form, Some(request.idempotency_key)).await
    }

    /// Opens the hosted billing portal for a customer.
    pub async fn portal_session(&self, customer: &str, return_url: &str) -> Result<PortalSession, StripeError> {
        self.post("/v1/billing_portal/sessions", &pairs(&[("customer", customer), ("return_url", return_url)]), None).await
    }

    /// The card a customer pays with by default: `(brand, last4)`, or `None` without one.
    pub async fn default_card(&self, customer: &str) -> Result<Option<(String, String)>, StripeError> {
        let found: Value = self.get(&format!("/v1/customers/{customer}"), &[]).await?;
        let Some(method) = found["invoice_settings"]["default_payment_method"].as_str().map(str::to_string) else { return Ok(None) };
        let method: Value = self.get(&format!("/v1/payment_methods/{method}"), &[]).await?;
        let card = &method["card"];
        Ok(card["last4"].as_str().map(|last4| (card["brand"].as_str().unwrap_or("card").to_string(), last4.to_string())))
    }

    /// A subscription as Stripe holds it now.
    pub async fn subscription(&self, id: &str) -> Result<Value, StripeError> {
        self.get(&format!("/v1/subscriptions/{id}"), &[]).await
    }

    /// Updates a subscription with `form` (Stripe's parameters); answers it as updated.
    pub async fn update_subscription(&self, id: &str, form: &[(&str, &str)], idempotency_key: &str) -> Result<Value, StripeError> {
        self.post(&format!("/v1/subscriptions/{id}"), &pairs(form), Some(idempotency_key)).await
    }

    /// Adds an item (an add-on's price) to a subscription, prorated; answers the item.
    pub async fn create_subscription_item(&self, subscription: &str, price: &str, quantity: u32, idempotency_key: &str) -> Result<Value, StripeError> {
        let quantity = quantity.to_string();
        let form = pairs(&[("subscription", subscription), ("price", price), ("quantity", &quantity), ("proration_behavior", "create_prorations")]);
        self.post("/v1/subscription_items", &form, Some(idempotency_key)).await
    }

    /// Sets a subscription item's quantity, prorated; answers the item.
    pub async fn update_subscription_item(&self, id: &str, quantity: u32, idempotency_key: &str) -> Result<Value, StripeError> {
        let quantity = quantity.to_string();
        self.post(&format!("/v1/subscription_items/{id}"), &pairs(&[("quantity", &quantity), ("proration_behavior", "create_prorations")]), Some(idempotency_key)).await
    }

    /// Removes an item from its subscription, prorated.
    pub async fn delete_subscription_item(&self, id: &str) -> Result<Value, StripeError> {
        let request = self.http.delete(format!("{}/v1/subscription_items/{id}", self.base)).bearer_auth(&self.key).query(&[("proration_behavior", "create_prorations")]);
        Self::answer(request.send().await).await
    }

    /// Adds a charge to the customer's next invoice of `request.subscription` (Stripe's
    /// invoice items); the idempotency key makes a retried call add it once.
    pub async fn create_invoice_item(&self, request: &InvoiceItemRequest<'_>) -> Result<InvoiceItem, StripeError> {
        let (amount, start, end) = (request.amount_cents.to_string(), request.period_start.to_string(), request.period_end.to_string());
        let mut form = pairs(&[
            ("customer", request.customer),
            ("amount", &amount),
            ("currency", "usd"),
            ("description", request.description),
            ("period[start]", &start),
            ("period[end]", &end),
            ("metadata[team_id]", request.team_id),
            ("metadata[meter]", request.meter),
        ]);
        if let Some(subscription) = request.subscription {
            form.push(("subscription".into(), subscription.into()));
        }
        self.post("/v1/invoiceitems", &form, Some(request.idempotency_key)).await
    }

    /// Invoices the customer's pending items now (a final charge after a subscription ended),
    /// collected automatically.
    pub async fn invoice_pending_items(&self, customer: &str, idempotency_key: &str) -> Result<Invoice, StripeError> {
        let form = pairs(&[("customer", customer), ("pending_invoice_items_behavior", "include"), ("auto_advance", "true")]);
        self.post("/v1/invoices", &form, Some(idempotency_key)).await
    }

    /// The customer's invoices, newest first.
    pub async fn invoices(&self, customer: &str, limit: u32) -> Result<List<Invoice>, StripeError> {
        self.get("/v1/invoices", &pairs(&[("customer", customer), ("limit", &limit.to_string())])).await
    }
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect()
}

/// Why a webhook's signature was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the Stripe-Signature header is missing or unreadable")]
    Malformed,
    #[error("the signature's timestamp is outside the tolerance")]
    Stale,
    #[error("no signature matches")]
    Mismatch,
}

/// Checks `Stripe-Signature` (`t=<unix>,v1=<hex>[,v1=...]`) over `body` with the endpoint's
/// signing `secret`, the timestamp within [`SIGNATURE_TOLERANCE_SECONDS`] of `now` (unix seconds).
pub fn verify_signature(secret: &str, header: &str, body: &[u8], now: i64) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", sig)) => signatures.extend(hex::decode(sig).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now - timestamp).abs() > SIGNATURE_TOLERANCE_SECONDS {
        return Err(SignatureError::Stale);
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut signed = format!("{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    signatures.iter().any(|sig| hmac::verify(&key, &signed, sig).is_ok()).then_some(()).ok_or(SignatureError::Mismatch)
}

/// Signs `body` at `timestamp` as Stripe does (`t=..,v1=..`); the tests' stand-in uses it.
pub fn sign(secret: &str, body: &[u8], timestamp: i64) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut signed = format!("{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    format!("t={timestamp},v1={}", hex::encode(hmac::sign(&key, &signed).as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_only_with_its_secret_body_and_a_fresh_timestamp() {
        let header = sign("whsec_test", b"{\"id\":\"evt_1\"}", 1_000_000);
        assert_eq!(verify_signature("whsec_test", &header, b"{\"id\":\"evt_1\"}", 1_000_100), Ok(()));
        assert_eq!(verify_signature("whsec_other", &header, b"{\"id\":\"evt_1\"}", 1_000_100), Err(SignatureError::Mismatch));
        assert_eq!(verify_signature("whsec_test", &header, b"{\"id\":\"evt_2\"}", 1_000_100), Err(SignatureError::Mismatch));
        assert_eq!(verify_signature("whsec_test", &header, b"{\"id\":\"evt_1\"}", 1_000_301), Err(SignatureError::Stale));
        assert_eq!(verify_signature("whsec_test", "v1=abcd", b"{}", 1_000_000), Err(SignatureError::Malformed));
        let rotated = format!("{header},v1={}", "00".repeat(32));
        assert_eq!(verify_signature("whsec_test", &rotated, b"{\"id\":\"evt_1\"}", 1_000_000), Ok(()), "any v1 may match");
    }
}
