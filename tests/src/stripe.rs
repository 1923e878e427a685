//! Stripe for the billing tests: localstripe (PyPI), a stateful stand-in for Stripe's API,
//! behind a small server of our own that serves, in Stripe's wire format, the endpoints
//! localstripe lacks (Prices with lookup keys, Checkout Sessions and their hosted page, Billing
//! Portal sessions, subscription items past a subscription's first) or takes in an older
//! dialect (subscription updates, invoice items' `period`), and forwards every other call to
//! localstripe unchanged. Customers,
//! payment methods, subscriptions, invoices and their signed webhooks are localstripe's own.

use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Form, Html, Path, Redirect};
use poem::{Body, EndpointExt, IntoResponse, Request, Response, Route, get, handler, http::StatusCode, post};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the stand-in fails checkout calls, when told to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Failure {
    /// `500` with Stripe's error body.
    ServerError,
    /// No answer for 30 seconds.
    Hang,
}

#[derive(Default)]
struct State {
    prices: Vec<Value>,
    sessions: HashMap<String, Value>,
    /// Idempotency-Key to the session it opened.
    opened: HashMap<String, String>,
    fail_checkout: Option<Failure>,
    /// Each subscription update's `proration_behavior`, in order.
    prorations: Vec<String>,
    /// Where Herald receives Stripe's webhooks, and the signing secret.
    webhook: Option<(String, String)>,
    /// Subscription items past a subscription's first (localstripe holds one item each), by
    /// subscription id.
    extra_items: HashMap<String, Vec<Value>>,
    /// Idempotency-Key to the invoice item or invoice it created.
    created: HashMap<String, Value>,
    /// Invoices of pending items alone, which localstripe cannot make (it invoices only
    /// with a subscription); the items they hold.
    invoices: Vec<Value>,
    invoiced: Vec<String>,
}

/// The stand-in; dropping it stops localstripe.
pub struct StripeStandIn {
    /// What Herald calls `HERALD_STRIPE_API_BASE`.
    pub base: String,
    localstripe: String,
    child: Child,
    state: Arc<Mutex<State>>,
    http: reqwest::Client,
}

impl Drop for StripeStandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone)]
struct Shared {
    state: Arc<Mutex<State>>,
    localstripe: String,
    base: String,
    http: reqwest::Client,
}

/// The secret key Herald is given (localstripe takes any `sk_test_` key).
pub const SECRET_KEY: &str = "sk_test_herald";

/// The signing secret of Herald's Stripe webhook endpoint in the tests.
pub const WEBHOOK_SECRET: &str = "whsec_herald_test";

/// A Herald (unthrottled, workers running) configured with the stand-in, whose webhooks reach it.
pub async fn app_with_stripe() -> (crate::TestApp, StripeStandIn) {
    let stripe = StripeStandIn::start().await;
    let base = stripe.base.clone();
    let mut app = crate::TestApp::spawn_with(move |config| {
        config.rate_limit_capacity = 1000;
        config.rate_limit_refill = 1000.0;
        config.stripe = Some(settings(base));
    })
    .await;
    stripe.send_webhooks_to(&app.url("/billing/stripe/webhook"), WEBHOOK_SECRET).await;
    app.start_workers();
    (app, stripe)
}

/// The stand-in's settings for Herald.
fn settings(base: String) -> api::config::StripeSettings {
    api::config::StripeSettings { secret_key: SECRET_KEY.into(), api_base: base, webhook_secret: Some(WEBHOOK_SECRET.into()), timeout: Duration::from_secs(2) }
}

/// A sending Herald ([`crate::mail::setup_with`]: pro plan, a verified domain, workers running)
/// configured with the stand-in, whose webhooks reach it.
pub async fn mail_with_stripe() -> (crate::mail::Mail, StripeStandIn) {
    let stripe = StripeStandIn::start().await;
    let base = stripe.base.clone();
    let mail = crate::mail::setup_with(crate::smtp::SmtpSink::start().await, move |config| config.stripe = Some(settings(base))).await;
    stripe.send_webhooks_to(&mail.app.url("/billing/stripe/webhook"), WEBHOOK_SECRET).await;
    (mail, stripe)
}

/// Pays a checkout as a person would on the hosted page, without following the redirect.
pub async fn pay(url: &str, card: &str) -> reqwest::Response {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    client.post(url).form(&[("card", card)]).send().await.unwrap()
}

/// `GET /billing` once `done` holds for it.
pub async fn billing_when(app: &crate::TestApp, done: impl Fn(&Value) -> bool) -> Value {
    crate::eventually(|| async {
        let b = app.get("/billing").await.body;
        done(&b).then_some(b)
    })
    .await
}

/// Posts an event to Herald's Stripe webhook, signed as Stripe signs it now.
pub async fn post_event(app: &crate::TestApp, id: &str, kind: &str, created: i64, object: Value) -> crate::Answer {
    let body = json!({ "id": id, "object": "event", "type": kind, "created": created, "data": { "object": object } }).to_string();
    let signature = jobs::stripe::sign(WEBHOOK_SECRET, body.as_bytes(), chrono::Utc::now().timestamp());
    let request = app.request(reqwest::Method::POST, "/billing/stripe/webhook").header("Stripe-Signature", signature).header("content-type", "application/json").body(body);
    crate::Answer::from(request.send().await.unwrap()).await
}

/// Subscribes the team to `plan` through a paid checkout; answers the billing object once the
/// subscription is active.
pub async fn subscribe(app: &crate::TestApp, plan: &str) -> Value {
    let opened = app.post("/billing/checkout", json!({ "plan_code": plan, "return_url": "https://app.example.com/billing" })).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    assert_eq!(pay(opened.body["url"].as_str().unwrap(), "4242424242424242").await.status(), 303);
    billing_when(app, |b| b["plan"]["code"] == plan && b["subscription"]["status"] == "active").await
}

fn localstripe_binary() -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    root.join(".venv/bin/localstripe")
}

impl StripeStandIn {
    /// Starts localstripe on a free port and the server in front of it.
    pub async fn start() -> StripeStandIn {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(localstripe_binary())
            .args(["--port", &port.to_string(), "--from-scratch"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("localstripe is installed into .venv by scripts/test (tests/clients/requirements.txt)");
        let localstripe = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
        for _ in 0..200 {
            if http.get(format!("{localstripe}/v1/customers")).bearer_auth(SECRET_KEY).send().await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await.unwrap();
        let base = format!("http://127.0.0.1:{}", acceptor.local_addr()[0].as_socket_addr().unwrap().port());
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Shared { state: state.clone(), localstripe: localstripe.clone(), base: base.clone(), http: http.clone() };
        let app = Route::new()
            .at("/v1/prices", get(list_prices).post(create_price))
            .at("/v1/checkout/sessions", post(create_session))
            .at("/v1/billing_portal/sessions", post(create_portal))
            .at("/v1/subscriptions/:id", post(update_subscription).get(get_subscription).delete(forward))
            .at("/v1/subscription_items", post(create_item))
            .at("/v1/subscription_items/:id", post(update_item).delete(delete_item))
            .at("/v1/invoiceitems", post(create_invoice_item).get(forward))
            .at("/v1/invoices", post(create_invoice).get(forward))
            .at("/pay/:id", get(pay_page).post(complete_payment))
            .at("/portal/:id", get(portal_page))
            .at("/*rest", forward)
            .data(shared);
        tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(app));
        StripeStandIn { base, localstripe, child, state, http }
    }

    /// Sends Stripe's webhooks (localstripe's and the stand-in's) to `url`, signed with `secret`.
    pub async fn send_webhooks_to(&self, url: &str, secret: &str) {
        let answer = self
            .http
            .post(format!("{}/_config/webhooks/herald", self.localstripe))
            .form(&[("url", url), ("secret", secret)])
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success());
        self.state.lock().unwrap().webhook = Some((url.to_string(), secret.to_string()));
    }

    /// Makes the next checkout calls fail (or not, with `None`).
    pub fn fail_checkout(&self, failure: Option<Failure>) {
        self.state.lock().unwrap().fail_checkout = failure;
    }

    /// Each subscription update's `proration_behavior` (`-` when not sent), in order.
    pub fn prorations(&self) -> Vec<String> {
        self.state.lock().unwrap().prorations.clone()
    }

    /// The invoices made of pending items alone (see [`create_invoice`]).
    pub fn invoices_of_items(&self) -> Vec<Value> {
        self.state.lock().unwrap().invoices.clone()
    }

    /// Every price created, as Stripe answered it.
    pub fn prices(&self) -> Vec<Value> {
        self.state.lock().unwrap().prices.clone()
    }

    /// A GET on localstripe's API (`/v1/...`).
    pub async fn get(&self, path: &str) -> Value {
        self.http.get(format!("{}{path}", self.localstripe)).bearer_auth(SECRET_KEY).send().await.unwrap().json().await.unwrap()
    }

    /// A POST on localstripe's API, form-encoded.
    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> Value {
        self.http.post(format!("{}{path}", self.localstripe)).bearer_auth(SECRET_KEY).form(form).send().await.unwrap().json().await.unwrap()
    }
}

fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn stripe_error(status: StatusCode, message: &str) -> Response {
    Response::builder().status(status).content_type("application/json").body(json!({ "error": { "type": "invalid_request_error", "message": message } }).to_string())
}

fn json_response(value: &Value) -> Response {
    Response::builder().content_type("application/json").body(value.to_string())
}

fn random_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

#[handler]
fn list_prices(request: &Request, shared: Data<&Shared>) -> Response {
    let query = form_pairs(request.uri().query().unwrap_or_default().as_bytes());
    let wanted: Vec<&str> = query.iter().filter(|(k, _)| k == "lookup_keys[]").map(|(_, v)| v.as_str()).collect();
    let state = shared.state.lock().unwrap();
    let data: Vec<Value> = state.prices.iter().filter(|p| wanted.is_empty() || wanted.contains(&p["lookup_key"].as_str().unwrap_or_default())).cloned().collect();
    json_response(&json!({ "object": "list", "url": "/v1/prices", "has_more": false, "data": data }))
}

/// A price is a localstripe plan (Stripe gives a recurring price's plan the same id), kept here
/// with its lookup key.
#[handler]
async fn create_price(body: Body, shared: Data<&Shared>) -> Response {
    let pairs = form_pairs(&body.into_vec().await.unwrap());
    let (Some(lookup_key), Some(amount), Some(currency), Some(name)) =
        (field(&pairs, "lookup_key"), field(&pairs, "unit_amount"), field(&pairs, "currency"), field(&pairs, "product_data[name]"))
    else {
        return stripe_error(StatusCode::BAD_REQUEST, "lookup_key, unit_amount, currency and product_data[name] are required here");
    };
    if shared.state.lock().unwrap().prices.iter().any(|p| p["lookup_key"] == lookup_key) {
        return stripe_error(StatusCode::BAD_REQUEST, "A price with this lookup_key already exists.");
    }
    let id = random_id("price");
    let plan: Value = shared
        .http
        .post(format!("{}/v1/plans", shared.localstripe))
        .bearer_auth(SECRET_KEY)
        .form(&[("id", id.as_str()), ("amount", amount), ("currency", currency), ("interval", "month"), ("product[name]", name)])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let price = json!({
        "id": id, "object": "price", "active": true, "currency": currency, "lookup_key": lookup_key,
        "unit_amount": amount.parse::<i64>().unwrap_or(0), "recurring": { "interval": "month", "interval_count": 1 },
        "product": plan["product"], "type": "recurring",
    });
    shared.state.lock().unwrap().prices.push(price.clone());
    json_response(&price)
}

#[handler]
async fn create_session(request: &Request, body: Body, shared: Data<&Shared>) -> Response {
    let failure = shared.state.lock().unwrap().fail_checkout;
    match failure {
        Some(Failure::ServerError) => return stripe_error(StatusCode::INTERNAL_SERVER_ERROR, "An unknown error occurred."),
        Some(Failure::Hang) => tokio::time::sleep(Duration::from_secs(30)).await,
        None => {}
    }
    let pairs = form_pairs(&body.into_vec().await.unwrap());
    let key = request.header("idempotency-key").unwrap_or_default().to_string();
    if let Some(id) = shared.state.lock().unwrap().opened.get(&key) {
        return json_response(&shared.state.lock().unwrap().sessions[id]);
    }
    let (Some(customer), Some(price), Some(success), Some(cancel)) =
        (field(&pairs, "customer"), field(&pairs, "line_items[0][price]"), field(&pairs, "success_url"), field(&pairs, "cancel_url"))
    else {
        return stripe_error(StatusCode::BAD_REQUEST, "customer, line_items[0][price], success_url and cancel_url are required here");
    };
    if field(&pairs, "mode") != Some("subscription") {
        return stripe_error(StatusCode::BAD_REQUEST, "mode must be subscription here");
    }
    let id = random_id("cs_test");
    let session = json!({
        "id": id, "object": "checkout.session", "mode": "subscription", "status": "open", "customer": customer,
        "url": format!("{}/pay/{id}", shared.base), "expires_at": chrono::Utc::now().timestamp() + 86_400,
        "success_url": success, "cancel_url": cancel, "client_reference_id": field(&pairs, "client_reference_id"),
        "line_items": [{ "price": price, "quantity": field(&pairs, "line_items[0][quantity]").unwrap_or("1").parse::<i64>().unwrap_or(1) }],
        "subscription_data": { "metadata": { "team_id": field(&pairs, "subscription_data[metadata][team_id]") } },
    });
    let mut state = shared.state.lock().unwrap();
    state.opened.insert(key, id.clone());
    state.sessions.insert(id, session.clone());
    json_response(&session)
}

#[handler]
fn pay_page(Path(id): Path<String>, shared: Data<&Shared>) -> Response {
    let state = shared.state.lock().unwrap();
    let Some(session) = state.sessions.get(&id) else { return StatusCode::NOT_FOUND.into_response() };
    let price = session["line_items"][0]["price"].as_str().unwrap_or_default();
    Html(format!(
        "<!doctype html><title>Checkout</title><h1>Subscribe</h1><p id=price>{price}</p>\
         <form method=post><input name=card value=4242424242424242><button>Pay</button></form>"
    ))
    .into_response()
}

/// Completes a checkout as Stripe does after payment: the card becomes the customer's default,
/// the subscription is created (localstripe sends its events), and `checkout.session.completed`
/// is sent signed; the browser goes to the success URL.
#[handler]
async fn complete_payment(Path(id): Path<String>, Form(form): Form<HashMap<String, String>>, shared: Data<&Shared>) -> Response {
    let Some(session) = shared.state.lock().unwrap().sessions.get(&id).cloned() else { return StatusCode::NOT_FOUND.into_response() };
    let card = form.get("card").cloned().unwrap_or_else(|| "4242424242424242".into());
    let customer = session["customer"].as_str().unwrap_or_default();
    let call = |path: String, form: Vec<(String, String)>| {
        let http = shared.http.clone();
        async move { http.post(path).bearer_auth(SECRET_KEY).form(&form).send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let ls = &shared.localstripe;
    let pairs = |items: &[(&str, &str)]| items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    let method = call(format!("{ls}/v1/payment_methods"), pairs(&[("type", "card"), ("card[number]", &card), ("card[exp_month]", "12"), ("card[exp_year]", "2040"), ("card[cvc]", "123")])).await;
    let method_id = method["id"].as_str().unwrap_or_default().to_string();
    call(format!("{ls}/v1/payment_methods/{method_id}/attach"), pairs(&[("customer", customer)])).await;
    call(format!("{ls}/v1/customers/{customer}"), pairs(&[("invoice_settings[default_payment_method]", &method_id)])).await;
    let quantity = session["line_items"][0]["quantity"].as_i64().unwrap_or(1).to_string();
    let team = session["subscription_data"]["metadata"]["team_id"].as_str().unwrap_or_default();
    let subscription = call(
        format!("{ls}/v1/subscriptions"),
        pairs(&[("customer", customer), ("items[0][plan]", session["line_items"][0]["price"].as_str().unwrap_or_default()), ("items[0][quantity]", &quantity), ("metadata[team_id]", team)]),
    )
    .await;
    let mut completed = session.clone();
    completed["status"] = json!("complete");
    completed["subscription"] = subscription["id"].clone();
    shared.state.lock().unwrap().sessions.insert(id.clone(), completed.clone());
    send_event(&shared, "checkout.session.completed", completed).await;
    Redirect::see_other(session["success_url"].as_str().unwrap_or("/")).into_response()
}

/// Sends one event signed as Stripe signs it.
async fn send_event(shared: &Shared, kind: &str, object: Value) {
    let Some((url, secret)) = shared.state.lock().unwrap().webhook.clone() else { return };
    let now = chrono::Utc::now().timestamp();
    let event = json!({ "id": random_id("evt"), "object": "event", "type": kind, "created": now, "data": { "object": object }, "livemode": false });
    let body = event.to_string();
    let signature = jobs::stripe::sign(&secret, body.as_bytes(), now);
    let _ = shared.http.post(url).header("Stripe-Signature", signature).header("content-type", "application/json").body(body).send().await;
}

/// A subscription update as Stripe takes it, passed to localstripe in its older dialect
/// (`items[n][plan]` for `items[n][price]`, `prorate` for `proration_behavior`); the answer is
/// sent on as `customer.subscription.updated`, which localstripe does not send.
#[handler]
async fn update_subscription(Path(id): Path<String>, body: Body, shared: Data<&Shared>) -> Response {
    let pairs = form_pairs(&body.into_vec().await.unwrap());
    let mut translated = Vec::new();
    let mut proration = "-".to_string();
    for (key, value) in pairs {
        if key == "proration_behavior" {
            translated.push(("prorate".to_string(), (value == "create_prorations").to_string()));
            proration = value;
        } else if let Some(index) = key.strip_prefix("items[").and_then(|rest| rest.strip_suffix("][price]")) {
            translated.push((format!("items[{index}][plan]"), value));
        } else {
            translated.push((key, value));
        }
    }
    shared.state.lock().unwrap().prorations.push(proration);
    let answer = shared.http.post(format!("{}/v1/subscriptions/{id}", shared.localstripe)).bearer_auth(SECRET_KEY).form(&translated).send().await.unwrap();
    let status = answer.status().as_u16();
    let object = overlay(&shared, answer.json().await.unwrap_or(Value::Null));
    if status == 200 {
        send_event(&shared, "customer.subscription.updated", object.clone()).await;
    }
    Response::builder().status(StatusCode::from_u16(status).unwrap()).content_type("application/json").body(object.to_string())
}

#[handler]
async fn create_portal(body: Body, shared: Data<&Shared>) -> Response {
    let pairs = form_pairs(&body.into_vec().await.unwrap());
    let (Some(customer), Some(return_url)) = (field(&pairs, "customer"), field(&pairs, "return_url")) else {
        return stripe_error(StatusCode::BAD_REQUEST, "customer and return_url are required");
    };
    let id = random_id("bps");
    json_response(&json!({ "id": id, "object": "billing_portal.session", "customer": customer, "return_url": return_url, "url": format!("{}/portal/{id}", shared.base) }))
}

#[handler]
fn portal_page(Path(id): Path<String>) -> Html<String> {
    Html(format!("<!doctype html><title>Billing portal</title><h1>Manage billing</h1><p id=session>{id}</p>"))
}

/// Everything else goes to localstripe as it came.
#[handler]
async fn forward(request: &Request, body: Body, shared: Data<&Shared>) -> Response {
    let target = format!("{}{}", shared.localstripe, request.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/"));
    let mut outgoing = shared.http.request(request.method().clone(), target).body(body.into_vec().await.unwrap_or_default());
    for name in ["authorization", "content-type", "idempotency-key", "stripe-version"] {
        if let Some(value) = request.header(name) {
            outgoing = outgoing.header(name, value);
        }
    }
    match outgoing.send().await {
        Ok(answer) => {
            let status = answer.status().as_u16();
            let bytes = answer.bytes().await.unwrap_or_default();
            Response::builder().status(StatusCode::from_u16(status).unwrap()).content_type("application/json").body(bytes.to_vec())
        }
        Err(error) => stripe_error(StatusCode::BAD_GATEWAY, &error.to_string()),
    }
}

/// A subscription with the items the stand-in holds past its first.
fn overlay(shared: &Shared, mut subscription: Value) -> Value {
    let Some(id) = subscription["id"].as_str().map(str::to_string) else { return subscription };
    let extra = shared.state.lock().unwrap().extra_items.get(&id).cloned().unwrap_or_default();
    if let Some(items) = subscription["items"]["data"].as_array_mut() {
        items.extend(extra);
    }
    subscription
}

/// A subscription as localstripe holds it, with its further items.
async fn subscription_now(shared: &Shared, id: &str) -> (u16, Value) {
    let answer = shared.http.get(format!("{}/v1/subscriptions/{id}", shared.localstripe)).bearer_auth(SECRET_KEY).send().await.unwrap();
    let status = answer.status().as_u16();
    (status, overlay(shared, answer.json().await.unwrap_or(Value::Null)))
}

#[handler]
async fn get_subscription(Path(id): Path<String>, shared: Data<&Shared>) -> Response {
    let (status, object) = subscription_now(&shared, &id).await;
    Response::builder().status(StatusCode::from_u16(status).unwrap()).content_type("application/json").body(object.to_string())
}

/// Sends the subscription as it is now as `customer.subscription.updated`.
async fn subscription_changed(shared: &Shared, id: &str) {
    let (_, object) = subscription_now(shared, id).await;
    send_event(shared, "customer.subscription.updated", object).await;
}

/// Adds an item past the subscription's first, as Stripe does for `POST /v1/subscription_items`.
#[handler]
async fn create_item(body: Body, shared: Data<&Shared>) -> Response {
    let pairs = form_pairs(&body.into_vec().await.unwrap());
    let (Some(subscription), Some(price)) = (field(&pairs, "subscription"), field(&pairs, "price")) else {
        return stripe_error(StatusCode::BAD_REQUEST, "subscription and price are required");
    };
    let Some(price_object) = shared.state.lock().unwrap().prices.iter().find(|p| p["id"] == price).cloned() else {
        return stripe_error(StatusCode::NOT_FOUND, "No such price");
    };
    let (status, current) = subscription_now(&shared, subscription).await;
    if status != 200 {
        return stripe_error(StatusCode::NOT_FOUND, "No such subscription");
    }
    let taken = current["items"]["data"].as_array().into_iter().flatten().any(|item| item["price"]["id"] == price || item["plan"]["id"] == price);
    if taken {
        return stripe_error(StatusCode::BAD_REQUEST, "Cannot add multiple subscription items with the same price.");
    }
    let quantity = field(&pairs, "quantity").and_then(|q| q.parse::<i64>().ok()).unwrap_or(1);
    let item = json!({
        "id": random_id("si"), "object": "subscription_item", "subscription": subscription, "quantity": quantity,
        "price": price_object, "plan": { "id": price, "object": "plan", "amount": price_object["unit_amount"], "interval": "month" },
        "created": chrono::Utc::now().timestamp(), "metadata": {},
    });
    shared.state.lock().unwrap().extra_items.entry(subscription.to_string()).or_default().push(item.clone());
    subscription_changed(&shared, subscription).await;
    json_response(&item)
}

/// The subscription an item belongs to, and whether the stand-in holds it (else localstripe).
async fn item_home(shared: &Shared, id: &str) -> Option<(String, bool)> {
    let extra = shared.state.lock().unwrap().extra_items.iter().find(|(_, items)| items.iter().any(|i| i["id"] == id)).map(|(sub, _)| sub.clone());
    if let Some(sub) = extra {
        return Some((sub, true));
    }
    let all: Value = shared.http.get(format!("{}/v1/subscriptions?status=all&limit=100", shared.localstripe)).bearer_auth(SECRET_KEY).send().await.ok()?.json().await.ok()?;
    all["data"].as_array()?.iter().find(|s| s["items"]["data"].as_array().into_iter().flatten().any(|i| i["id"] == id)).map(|s| (s["id"].as_str().unwrap_or_default().to_string(), false))
}

#[handler]
async fn update_item(Path(id): Path<String>, body: Body, shared: Data<&Shared>) -> Response {
    let pairs = form_pairs(&body.into_vec().await.unwrap());
    let Some(quantity) = field(&pairs, "quantity").and_then(|q| q.parse::<i64>().ok()).filter(|q| *q > 0) else {
        return stripe_error(StatusCode::BAD_REQUEST, "quantity must be a positive integer here");
    };
    let Some((subscription, extra)) = item_home(&shared, &id).await else { return stripe_error(StatusCode::NOT_FOUND, "No such subscription item") };
    if extra {
        let mut state = shared.state.lock().unwrap();
        for item in state.extra_items.get_mut(&subscription).into_iter().flatten().filter(|i| i["id"] == id.as_str()) {
            item["quantity"] = json!(quantity);
        }
    } else {
        let form = [("items[0][id]", id.clone()), ("items[0][quantity]", quantity.to_string()), ("prorate", "true".to_string())];
        shared.http.post(format!("{}/v1/subscriptions/{subscription}", shared.localstripe)).bearer_auth(SECRET_KEY).form(&form).send().await.unwrap();
    }
    subscription_changed(&shared, &subscription).await;
    let (_, now) = subscription_now(&shared, &subscription).await;
    let item = now["items"]["data"].as_array().into_iter().flatten().find(|i| i["quantity"] == quantity).cloned().unwrap_or(Value::Null);
    json_response(&item)
}

#[handler]
async fn delete_item(Path(id): Path<String>, shared: Data<&Shared>) -> Response {
    let Some((subscription, extra)) = item_home(&shared, &id).await else { return stripe_error(StatusCode::NOT_FOUND, "No such subscription item") };
    if !extra {
        return stripe_error(StatusCode::BAD_REQUEST, "the stand-in removes only items past a subscription's first");
    }
    shared.state.lock().unwrap().extra_items.get_mut(&subscription).into_iter().for_each(|items| items.retain(|i| i["id"] != id.as_str()));
    subscription_changed(&shared, &subscription).await;
    json_response(&json!({ "id": id, "object": "subscription_item", "deleted": true }))
}

/// A call localstripe takes under another dialect, once per Idempotency-Key as Stripe makes it.
async fn once(shared: &Shared, key: Option<&str>, path: &str, form: Vec<(String, String)>) -> Response {
    if let Some(done) = key.and_then(|k| shared.state.lock().unwrap().created.get(k).cloned()) {
        return json_response(&done);
    }
    let answer = shared.http.post(format!("{}{path}", shared.localstripe)).bearer_auth(SECRET_KEY).form(&form).send().await.unwrap();
    let status = answer.status().as_u16();
    let object: Value = answer.json().await.unwrap_or(Value::Null);
    if status == 200
        && let Some(key) = key
    {
        shared.state.lock().unwrap().created.insert(key.to_string(), object.clone());
    }
    Response::builder().status(StatusCode::from_u16(status).unwrap()).content_type("application/json").body(object.to_string())
}

/// `period[start]`/`period[end]` as localstripe's `period_start`/`period_end`.
#[handler]
async fn create_invoice_item(request: &Request, body: Body, shared: Data<&Shared>) -> Response {
    let pairs = form_pairs(&body.into_vec().await.unwrap());
    let translated = pairs
        .into_iter()
        .map(|(k, v)| match k.as_str() {
            "period[start]" => ("period_start".to_string(), v),
            "period[end]" => ("period_end".to_string(), v),
            _ => (k, v),
        })
        .collect();
    once(&shared, request.header("idempotency-key"), "/v1/invoiceitems", translated).await
}

/// An invoice of the customer's pending items: with a subscription, localstripe's (which takes
/// no `auto_advance`); without one, made here as Stripe makes it, since localstripe cannot.
#[handler]
async fn create_invoice(request: &Request, body: Body, shared: Data<&Shared>) -> Response {
    let pairs: Vec<(String, String)> = form_pairs(&body.into_vec().await.unwrap()).into_iter().filter(|(k, _)| k != "auto_advance").collect();
    let key = request.header("idempotency-key");
    if field(&pairs, "subscription").is_some() {
        return once(&shared, key, "/v1/invoices", pairs).await;
    }
    if let Some(done) = key.and_then(|k| shared.state.lock().unwrap().created.get(k).cloned()) {
        return json_response(&done);
    }
    let Some(customer) = field(&pairs, "customer") else { return stripe_error(StatusCode::BAD_REQUEST, "customer is required") };
    let listed: Value = shared.http.get(format!("{}/v1/invoiceitems?customer={customer}", shared.localstripe)).bearer_auth(SECRET_KEY).send().await.unwrap().json().await.unwrap();
    let invoiced = shared.state.lock().unwrap().invoiced.clone();
    let lines: Vec<Value> = listed["data"].as_array().into_iter().flatten().filter(|i| !invoiced.contains(&i["id"].as_str().unwrap_or_default().to_string())).cloned().collect();
    if lines.is_empty() {
        return stripe_error(StatusCode::BAD_REQUEST, "Nothing to invoice for customer");
    }
    let total: i64 = lines.iter().map(|l| l["amount"].as_i64().unwrap_or(0)).sum();
    let invoice = json!({
        "id": random_id("in"), "object": "invoice", "customer": customer, "subscription": null, "status": "open",
        "auto_advance": true, "currency": "usd", "total": total, "amount_due": total, "created": chrono::Utc::now().timestamp(),
        "lines": { "object": "list", "data": lines.iter().map(|l| json!({ "object": "line_item", "type": "invoiceitem", "invoice_item": l["id"], "amount": l["amount"], "description": l["description"], "period": l["period"] })).collect::<Vec<_>>() },
    });
    let mut state = shared.state.lock().unwrap();
    state.invoiced.extend(lines.iter().filter_map(|l| l["id"].as_str().map(str::to_string)));
    state.invoices.push(invoice.clone());
    if let Some(key) = key {
        state.created.insert(key.to_string(), invoice.clone());
    }
    json_response(&invoice)
}
