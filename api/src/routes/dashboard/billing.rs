//! Billing (#24): the plan and its prices, this period's usage against the plan's limits, the
//! subscription and a pending change, invoices, and changing plan: a team without a
//! subscription buys a paid plan at the payment provider's checkout (`POST /billing/checkout`,
//! back to this page), a team with one changes it in place (`POST /billing/plan`), and the
//! provider's portal manages the payment method (`POST /billing/portal`).

use super::client::{Answer, Api, Session};
use super::kit::{self, Fields};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use crate::state::AppState;
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form};
use poem::{Request, Response, handler};
use serde_json::{Value, json};

/// `GET /app/billing`.
#[handler]
pub async fn page_handler(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    billing_page(req, &api, &session, None).await
}

/// Cents as dollars (`$20.00`).
fn dollars(cents: &Value) -> String {
    cents.as_i64().map_or_else(|| "—".to_string(), |c| format!("${}.{:02}", c / 100, c % 100))
}

/// A meter: `used` of `limit` (none without a limit).
fn meter(label: &str, used: &Value, limit: &Value) -> String {
    let used_n = used.as_i64().unwrap_or(0);
    match limit.as_i64().filter(|l| *l > 0) {
        Some(limit) => format!(
            "<p>{label}: <b>{used_n}</b> of {limit}</p><meter min=\"0\" max=\"{limit}\" low=\"{}\" high=\"{}\" value=\"{used_n}\" aria-label=\"{label}\">{used_n} of {limit}</meter>",
            limit * 7 / 10,
            limit * 9 / 10
        ),
        None => format!("<p>{label}: <b>{used_n}</b> <span class=\"muted\">(no limit)</span></p>"),
    }
}

async fn billing_page(req: &Request, api: &Api, session: &Session, refused: Option<&Answer>) -> poem::Result<Response> {
    let billing = api.get(req, "/billing").await?;
    if !billing.ok() {
        return Ok(kit::refused_page(session, &billing));
    }
    let b = &billing.body;
    let plan = &b["plan"];
    let usage = &b["usage"];
    let overage = if plan["overage_per_1000_cents"].is_null() { "sending stops at the limit".to_string() } else { format!("{} per 1,000 past it", dollars(&plan["overage_per_1000_cents"])) };
    let facts = kit::facts(&[
        ("Plan", format!("{} <span class=\"muted\">({})</span>", kit::text(&plan["name"]), kit::text(&plan["code"]))),
        ("Price", format!("{} a month", dollars(&plan["monthly_price_cents"]))),
        ("Emails included", format!("{} a period; {overage}", kit::text(&plan["included_emails"]))),
        ("Subscription", b["subscription"]["status"].as_str().map_or_else(|| "none".to_string(), |s| escape(s))),
        ("Period ends", time(&b["subscription"]["current_period_end"])),
        ("Payment", kit::word(&b["payment_state"])),
        ("Pending change", b["pending_change"]["plan_code"].as_str().map_or_else(|| "none".to_string(), |p| format!("to {} on {}", escape(p), time(&b["pending_change"]["effective_at"])))),
    ]);
    let meters = format!(
        "{}{}{}",
        meter("Emails this period", &usage["emails"], &usage["monthly_limit"]),
        meter("Emails today", &usage["emails_today"], &usage["daily_limit"]),
        meter("Billable contacts", &usage["billable_contacts"], &usage["contacts_included"])
    );
    let admin = session.role == "admin";
    let change = if admin {
        let current = plan["code"].as_str().unwrap_or_default();
        let options: String = ["free", "pro", "scale"].iter().filter(|p| **p != current).map(|p| format!("<option value=\"{p}\">{p}</option>")).collect();
        let manage = if b["subscription"].is_object() { kit::button("/app/billing/portal", &session.csrf, "Manage payment method") } else { String::new() };
        format!(
            "<form class=\"row\" method=\"post\" action=\"/app/billing/plan\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><label for=\"plan-code\">Move to</label>\
             <select id=\"plan-code\" name=\"plan_code\">{options}</select><button type=\"submit\">Change plan</button></form>{manage}",
            escape(&session.csrf)
        )
    } else {
        "<p class=\"muted\">Only an admin changes the plan.</p>".to_string()
    };
    let invoices = api.get(req, "/billing/invoices").await?;
    let invoices = if invoices.ok() {
        kit::table(
            &["Number", "Status", "Total", "Created", ""],
            &kit::rows(&invoices),
            |i| {
                let link = i["hosted_invoice_url"].as_str().map_or_else(String::new, |u| kit::link(u, "View"));
                vec![kit::text(&i["number"]), kit::word(&i["status"]), format!("{} {}", dollars(&i["total_cents"]), kit::text(&i["currency"]).to_uppercase()), time(&i["created_at"]), link]
            },
            "No invoice yet. A paid plan's invoices appear here.",
        )
    } else {
        kit::note(false, &invoices.message())
    };
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body =
        format!("<h1>Billing</h1>{alert}{}{}{}", kit::card("plan", "Plan", &format!("{facts}{change}")), kit::card("usage", "This period", &meters), kit::card("invoices", "Invoices", &invoices));
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Billing", Some(session), &body))
}

/// `POST /app/billing/plan`: a paid plan without a subscription goes to checkout (the browser
/// follows the provider's link); otherwise `POST /billing/plan` changes it.
#[handler]
pub async fn change_plan(req: &Request, api: Data<&Api>, state: Data<&AppState>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let plan = kit::given(&form, "plan_code").unwrap_or_default().to_string();
    let billing = api.get(req, "/billing").await?;
    let answer = if billing.body["checkout_available"] == true && plan != "free" {
        let body = json!({ "plan_code": plan, "return_url": format!("{}/app/billing", state.config.public_url) });
        let answer = kit::write(req, &api, Method::POST, "/billing/checkout", Some(&body), &form).await?;
        if let Some(url) = answer.body["url"].as_str().filter(|_| answer.ok()) {
            return Ok(kit::see_other(url));
        }
        answer
    } else {
        kit::write(req, &api, Method::POST, "/billing/plan", Some(&json!({ "plan_code": plan })), &form).await?
    };
    if !answer.ok() {
        return billing_page(req, &api, &session, Some(&answer)).await;
    }
    Ok(kit::see_other("/app/billing"))
}

/// `POST /app/billing/portal`: the provider's portal, back to this page.
#[handler]
pub async fn portal(req: &Request, api: Data<&Api>, state: Data<&AppState>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let body = json!({ "return_url": format!("{}/app/billing", state.config.public_url) });
    let answer = kit::write(req, &api, Method::POST, "/billing/portal", Some(&body), &form).await?;
    match answer.body["url"].as_str().filter(|_| answer.ok()) {
        Some(url) => Ok(kit::see_other(url)),
        None => billing_page(req, &api, &session, Some(&answer)).await,
    }
}
