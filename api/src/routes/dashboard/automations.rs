//! Automations: the list, one automation's graph read-only (drawn, and as a table of its steps
//! and connections) with each step's counts over the latest runs (`step_counts`), and one run
//! with its steps.

use super::client::Api;
use super::graph::{self, Counts};
use super::kit::urlencoding;
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
        &["Automation", "Status", "Trigger", "Version", "Updated"],
        &kit::rows(&answer),
        |a| {
            let trigger = a["trigger"].as_str().unwrap_or_default();
            vec![kit::link(&format!("/app/automations/{}", kit::id(&a["id"])), a["name"].as_str().unwrap_or_default()), kit::status(a), format!("<code>{}</code>", escape(trigger)), kit::text(&a["version"]), time(&a["updated_at"])]
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
    let counts: Counts = automation["step_counts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| (c["key"].as_str().unwrap_or_default().to_string(), ["entered", "completed", "waiting", "failed"].map(|k| c[k].as_i64().unwrap_or(0))))
        .collect();
    let next: HashMap<&str, Vec<String>> = automation["connections"].as_array().into_iter().flatten().fold(HashMap::new(), |mut map, c| {
        let label = match c["type"].as_str() {
            Some(kind) if kind != "default" => format!("{} ({})", c["to"].as_str().unwrap_or_default(), kind.replace('_', " ")),
            _ => c["to"].as_str().unwrap_or_default().to_string(),
        };
        map.entry(c["from"].as_str().unwrap_or_default()).or_default().push(label);
        map
    });
    let steps_list = automation["steps"].as_array().map_or(&[][..], Vec::as_slice);
    let steps = kit::table(
        &["Step", "Kind", "Then", "Reached", "Done", "Waiting", "Failed"],
        steps_list,
        |s| {
            let key = s["key"].as_str().unwrap_or_default();
            let then = next.get(key).map_or_else(|| "—".to_string(), |to| escape(&to.join(", ")));
            let [reached, done, waiting, failed] = counts.get(key).copied().unwrap_or_default();
            vec![format!("<code>{}</code>", escape(key)), kit::word(&s["type"]), then, reached.to_string(), done.to_string(), waiting.to_string(), failed.to_string()]
        },
        "No step.",
    );
    let drawn = graph::draw(steps_list, automation["connections"].as_array().map_or(&[][..], Vec::as_slice), &counts);
    let steps = format!("{drawn}<p class=\"muted\">Counts are over the latest 10,000 runs.</p>{steps}");
    let base = format!("/app/automations/{}", urlencoding(&id));
    let runs_table = kit::table(
        &["Run", "Status", "Started", "Ended"],
        &runs_rows,
        |r| vec![kit::link(&format!("{base}/runs/{}", kit::id(&r["id"])), "Steps"), kit::status(r), time(&r["started_at"]), time(&r["completed_at"])],
        "No run yet: each event or contact that matches the trigger starts one.",
    );
    let trigger = automation["trigger"].as_str().unwrap_or_default().to_string();
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

