//! Automations: the list, one automation's graph read-only (its steps and connections) with
//! each step's runs counted from its recent runs, and one run with its steps.

use super::client::Api;
use super::emails::urlencoding;
use super::kit::{self, Paging};
use super::layout::{page, time};
use crate::routes::pages::html::escape;
use poem::http::StatusCode;
use poem::web::{Data, Path, Query};
use poem::{Request, Response, handler};

use std::collections::HashMap;

/// `GET /app/automations`.
#[handler]
pub async fn list(req: &Request, api: Data<&Api>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = api.get(req, &paging.unsearched().path("/automations", 50)).await?;
    let table = kit::table(
        &["Automation", "Status", "Trigger", "Steps", "Updated"],
        &kit::rows(&answer),
        |a| {
            let trigger = a["trigger"]["event"].as_str().or(a["trigger"]["type"].as_str()).unwrap_or_default();
            vec![kit::link(&format!("/app/automations/{}", kit::id(&a["id"])), a["name"].as_str().unwrap_or_default()), kit::status(a), format!("<code>{}</code>", escape(trigger)), a["steps"].as_array().map_or(0, Vec::len).to_string(), time(&a["updated_at"])]
        },
        "No automation yet. Build one with <code>POST /automations</code>: a trigger, then steps that wait, branch and send.",
    );
    let body = format!("<h1>Automations</h1>{table}{}", kit::pager("/app/automations", &answer));
    Ok(page(StatusCode::OK, "Automations", Some(&session), &body))
}

/// `GET /app/automations/{id}`: the graph with counts, and the latest runs.
#[handler]
pub async fn detail(req: &Request, api: Data<&Api>, Path(id): Path<String>, Query(paging): Query<Paging>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let path = format!("/automations/{}", urlencoding(&id));
    let automation = match kit::one(req, &api, &session, &path).await? {
        Ok(automation) => automation,
        Err(page) => return Ok(page),
    };
    let runs = api.get(req, &paging.unsearched().path(&format!("{path}/runs"), 50)).await?;
    let runs_rows = kit::rows(&runs);
    // How many of these runs reached each step (a run's `steps` lists those it reached).
    let mut reached: HashMap<String, usize> = HashMap::new();
    for each in &runs_rows {
        for step in each["steps"].as_array().into_iter().flatten() {
            *reached.entry(step["key"].as_str().unwrap_or_default().to_string()).or_default() += 1;
        }
    }
    let next: HashMap<&str, Vec<String>> = automation["connections"].as_array().into_iter().flatten().fold(HashMap::new(), |mut map, c| {
        let label = match c["type"].as_str() {
            Some(kind) if kind != "default" => format!("{} ({})", c["to"].as_str().unwrap_or_default(), kind.replace('_', " ")),
            _ => c["to"].as_str().unwrap_or_default().to_string(),
        };
        map.entry(c["from"].as_str().unwrap_or_default()).or_default().push(label);
        map
    });
    let steps = kit::table(
        &["Step", "Kind", "Then", "Reached by recent runs"],
        automation["steps"].as_array().map_or(&[][..], Vec::as_slice),
        |s| {
            let key = s["key"].as_str().unwrap_or_default();
            let then = next.get(key).map_or_else(|| "—".to_string(), |to| escape(&to.join(", ")));
            vec![format!("<code>{}</code>", escape(key)), kit::word(&s["type"]), then, reached.get(key).copied().unwrap_or(0).to_string()]
        },
        "No step.",
    );
    let base = format!("/app/automations/{}", urlencoding(&id));
    let runs_table = kit::table(
        &["Run", "Status", "Started", "Ended"],
        &runs_rows,
        |r| vec![kit::link(&format!("{base}/runs/{}", kit::id(&r["id"])), "Steps"), kit::status(r), time(&r["started_at"]), time(&r["completed_at"])],
        "No run yet: each event or contact that matches the trigger starts one.",
    );
    let trigger = serde_json::to_string_pretty(&automation["trigger"]).unwrap_or_default();
    let facts = kit::facts(&[("Status", kit::status(&automation)), ("Version", kit::text(&automation["version"])), ("Trigger", format!("<code>{}</code>", escape(&trigger))), ("Updated", time(&automation["updated_at"]))]);
    let title = automation["name"].as_str().unwrap_or("Automation").to_string();
    let body = format!(
        "<p><a href=\"/app/automations\">← Automations</a></p><h1>{}</h1><section class=\"card\">{facts}</section>{}{}",
        escape(&title),
        kit::card("graph", "Steps", &steps),
        kit::card("runs", "Runs", &format!("{runs_table}{}", kit::pager(&base, &runs)))
    );
    Ok(page(StatusCode::OK, &title, Some(&session), &body))
}

/// `GET /app/automations/{id}/runs/{run_id}`: one run and each step it took.
#[handler]
pub async fn run(req: &Request, api: Data<&Api>, Path((id, run_id)): Path<(String, String)>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let run = match kit::one(req, &api, &session, &format!("/automations/{}/runs/{}", urlencoding(&id), urlencoding(&run_id))).await? {
        Ok(run) => run,
        Err(page) => return Ok(page),
    };
    let steps = kit::table(
        &["Step", "Kind", "Status", "Outcome", "Started", "Error"],
        run["steps"].as_array().map_or(&[][..], Vec::as_slice),
        |s| vec![format!("<code>{}</code>", kit::text(&s["key"])), kit::word(&s["type"]), kit::status(s), kit::text(&s["outcome"]), time(&s["started_at"]), kit::text(&s["error"])],
        "No step yet.",
    );
    let contact = run["contact_id"].as_str().map_or_else(|| "—".to_string(), |c| kit::link(&format!("/app/contacts/{}", urlencoding(c)), c));
    let facts = kit::facts(&[("Status", kit::status(&run)), ("Contact", contact), ("Started", time(&run["started_at"])), ("Ended", time(&run["completed_at"])), ("Error", kit::text(&run["error"]))]);
    let body = format!(
        "<p><a href=\"/app/automations/{}\">← The automation</a></p><h1>Run</h1><section class=\"card\">{facts}</section>{}",
        escape(&urlencoding(&id)),
        kit::card("steps", "Steps", &steps)
    );
    Ok(page(StatusCode::OK, "Run", Some(&session), &body))
}

