//! Render and compile benchmark: `cargo run --release --example bench_templates`.
//!
//! (a) renders/s of a realistic block document (12 variables, 3 show-when rules, one repeat
//! group of 10 items) in `Mode::PerContact` for distinct contacts, beside minijinja rendering an
//! equivalent template (the same literal HTML, with `{{ }}`, `{% if %}` and `{% for %}`, made by
//! translating the stored program) in the same run; (b) `from_document` compile time.

use render::{Brand, Catalog, Compiled, Contact, Context, Mode};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::time::{Duration, Instant};
use uuid::Uuid;

const TOPIC: u128 = 0x7091c;
const CONTACTS: usize = 1000;

fn document() -> Value {
    let topic = Uuid::from_u128(TOPIC).to_string();
    json!({
      "kind": "svc.blocks", "version": 1, "lang": "en",
      "sections": [
        { "columns": [ { "blocks": [
          { "type": "preheader", "text": "Order {{order_number}} from {{store_name}} — {{total}}" },
          { "type": "heading", "text": "Thanks for your order, {{first_name}}!" },
          { "type": "text", "text": "Order {{order_number}} was placed on {{order_date}} and ships to {{city}}.\nWe'll email {{email_address}} when it leaves our warehouse.\n\nExpected delivery: {{delivery_window}}. Questions? Reply or visit {{support_url}}." },
          { "type": "button", "label": "Track your order", "url": "{{tracking_url}}" },
          { "type": "text", "text": "Pro tip for {{{FIRST_NAME|you}}}: your plan includes priority shipping.",
            "show_when": { "match": "all", "conditions": [ { "field": "properties.plan", "op": "eq", "value": "pro" } ] } },
          { "type": "divider" }
        ] } ] },
        { "repeat": { "list": "event.items" }, "columns": [
          { "blocks": [ { "type": "text", "text": "{{{item.name}}} × {{{item.quantity|1}}}" } ] },
          { "blocks": [ { "type": "text", "text": "{{{item.price|0|currency:USD}}}", "align": "right" } ] }
        ] },
        { "columns": [
          { "blocks": [ { "type": "divider" }, { "type": "heading", "text": "Total", "level": 3 } ] },
          { "blocks": [ { "type": "divider" }, { "type": "heading", "text": "{{total}}", "level": 3, "align": "right" } ] }
        ] },
        { "show_when": { "match": "any", "conditions": [ { "field": "properties.seats", "op": "gte", "value": 10 } ] },
          "columns": [ { "blocks": [
            { "type": "card", "image": { "src": "https://cdn.example.com/team.png", "alt": "Teams" }, "heading": "Ordering for {{company}}?",
              "text": "Team accounts get consolidated invoices.", "button": { "label": "Learn more", "url": "{{team_url}}" } }
          ] } ] },
        { "columns": [ { "blocks": [
          { "type": "text", "text": "New arrivals every Friday — you're on the list.",
            "show_when": { "match": "all", "conditions": [ { "topic": topic, "subscription": "opt_in" } ] } },
          { "type": "social", "links": [ { "network": "x", "url": "https://x.com/shop" }, { "network": "instagram", "url": "https://instagram.com/shop" } ] },
          { "type": "footer", "text": "You receive this because you shopped at {{store_name}}.", "unsubscribe": true, "preferences": true }
        ] } ] }
      ]
    })
}

fn catalog() -> Catalog {
    Catalog {
        properties: HashMap::from([("plan".into(), "string".into()), ("seats".into(), "number".into())]),
        topics: HashSet::from([Uuid::from_u128(TOPIC)]),
        ..Catalog::default()
    }
}

fn brand() -> Brand {
    Brand { company_name: Some("Example Shop".into()), address: Some("1 Market St, San Francisco".into()), logo_url: Some("https://cdn.example.com/logo.png".into()), ..Brand::default() }
}

const SUBJECT: &str = "Your {{store_name}} order {{order_number}}";

/// One recipient in both shapes.
struct Recipient {
    variables: Map<String, Value>,
    contact: Contact,
    jinja: minijinja::Value,
}

fn recipients(event: &Map<String, Value>) -> Vec<Recipient> {
    let topic = Uuid::from_u128(TOPIC);
    (0..CONTACTS)
        .map(|i| {
            let first = format!("Name{i}");
            let plan = if i % 3 == 0 { "pro" } else { "free" };
            let seats = i % 20;
            let opted = i % 2 == 0;
            let variables = json!({
                "first_name": first, "order_number": format!("A-{:05}", i), "order_date": "Nov 23, 2026",
                "city": format!("City {i}"), "email_address": format!("user{i}@example.com"), "support_url": "https://shop.example.com/help",
                "tracking_url": format!("https://shop.example.com/track/{i}"), "total": format!("${}.00", 100 + i), "store_name": "Example Shop",
                "company": format!("Company {i} & Sons"), "team_url": "https://shop.example.com/teams", "delivery_window": "Nov 25 – Nov 27"
            });
            let variables = variables.as_object().cloned().unwrap_or_default();
            let properties = json!({ "plan": plan, "seats": seats }).as_object().cloned().unwrap_or_default();
            let contact = Contact {
                email: format!("user{i}@example.com"),
                first_name: Some(first.clone()),
                last_name: Some("Doe".into()),
                properties: properties.clone(),
                topics: HashMap::from([(topic, opted)]),
                unsubscribe_url: Some(format!("https://mail.example.com/u/{i}")),
                preferences_url: Some(format!("https://mail.example.com/p/{i}")),
                ..Contact::default()
            };
            let jinja = minijinja::Value::from_serialize(json!({
                "vars": variables,
                "contact": {
                    "first_name": first, "properties": properties, "topics": { topic.to_string(): opted },
                    "unsubscribe_url": format!("https://mail.example.com/u/{i}"), "preferences_url": format!("https://mail.example.com/p/{i}")
                },
                "event": event
            }));
            Recipient { variables, contact, jinja }
        })
        .collect()
}

/// Translates a stored program (its serialized JSON) into an equivalent minijinja template.
fn to_jinja(nodes: &[Value]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < nodes.len() {
        let node = nodes[i].as_object().expect("node");
        let (kind, body) = node.iter().next().expect("one key");
        match kind.as_str() {
            "l" => out.push_str(body.as_str().expect("literal")),
            "v" => out.push_str(&format!("{{{{ vars.{} }}}}", body.as_str().expect("key"))),
            "m" => {
                let key = body["k"].as_str().expect("key");
                let source = match key {
                    "FIRST_NAME" => "contact.first_name".to_string(),
                    "UNSUBSCRIBE_URL" => "contact.unsubscribe_url".to_string(),
                    "PREFERENCES_URL" => "contact.preferences_url".to_string(),
                    other if other.starts_with("item.") => other.to_string(),
                    other => format!("contact.properties.{other}"),
                };
                let fallback = body.get("d").and_then(Value::as_str).map(|d| format!(" or {d:?}")).unwrap_or_default();
                match body.get("f").and_then(Value::as_str) {
                    Some(format) => {
                        let code = format.strip_prefix("currency:").expect("currency only");
                        out.push_str(&format!("{{{{ ({source}{fallback})|currency({code:?}) }}}}"));
                    }
                    None => out.push_str(&format!("{{{{ {source}{fallback} }}}}")),
                }
            }
            "w" => {
                let rule = &body[0];
                let n = body[1].as_u64().expect("len") as usize;
                let joiner = if rule.get("a").and_then(Value::as_bool) == Some(true) { " or " } else { " and " };
                let conditions: Vec<String> = rule["c"]
                    .as_array()
                    .expect("conditions")
                    .iter()
                    .map(|c| {
                        if let Some(f) = c.get("f") {
                            let field = f[0].as_str().expect("field").replace("properties.", "contact.properties.");
                            match (f[1].as_str().expect("op"), &f[2]) {
                                ("eq", Value::String(s)) => format!("({field}|lower) == {s:?}"),
                                ("gte", v) => format!("{field} >= {v}"),
                                (op, _) => panic!("unsupported {op}"),
                            }
                        } else {
                            let t = &c["t"];
                            let want = if t[1].as_bool() == Some(true) { "true" } else { "false" };
                            format!("contact.topics[{:?}] == {want}", t[0].as_str().expect("id"))
                        }
                    })
                    .collect();
                out.push_str(&format!("{{% if {} %}}", conditions.join(joiner)));
                out.push_str(&to_jinja(&nodes[i + 1..i + 1 + n]));
                out.push_str("{% endif %}");
                i += n;
            }
            "r" => {
                let n = body[1].as_u64().expect("len") as usize;
                out.push_str(&format!("{{% for item in event.{}[:50] %}}", body[0].as_str().expect("list")));
                out.push_str(&to_jinja(&nodes[i + 1..i + 1 + n]));
                out.push_str("{% endfor %}");
                i += n;
            }
            other => panic!("unknown node {other}"),
        }
        i += 1;
    }
    out
}

fn currency(value: minijinja::Value, code: String) -> String {
    let v = f64::try_from(value.clone()).ok().or_else(|| value.as_str().and_then(|s| s.parse().ok())).unwrap_or(0.0);
    let digits = format!("{:.2}", v.abs());
    let (int, frac) = digits.split_once('.').unwrap_or((&digits, "00"));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let symbol = if code == "USD" { "$" } else { "" };
    format!("{}{symbol}{grouped}.{frac}", if v < 0.0 { "-" } else { "" })
}

fn rate(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

fn main() {
    let document = document();
    let (brand, catalog) = (brand(), catalog());
    let visual = Compiled::from_document(Some(SUBJECT), &document, &brand, &catalog).expect("the bench document compiles");
    assert_eq!(visual.compiled.placeholders().len(), 12, "12 variables");

    // (b) compile time.
    let runs = 300;
    let start = Instant::now();
    for _ in 0..runs {
        black_box(Compiled::from_document(Some(SUBJECT), black_box(&document), &brand, &catalog).expect("compiles"));
    }
    let compile_ms = start.elapsed().as_secs_f64() * 1000.0 / runs as f64;

    // The equivalent minijinja templates, from the stored form.
    let stored = serde_json::to_value(&visual.compiled).expect("serializes");
    let mut env = minijinja::Environment::new();
    env.add_filter("currency", currency);
    env.set_keep_trailing_newline(true);
    for (part, name) in [("s", "subject.txt"), ("h", "body.html"), ("t", "body.txt")] {
        let source = to_jinja(stored[part]["n"].as_array().expect("nodes"));
        env.add_template_owned(name.to_string(), source).expect("jinja template");
    }
    let (subject_t, html_t, text_t) =
        (env.get_template("subject.txt").expect("t"), env.get_template("body.html").expect("t"), env.get_template("body.txt").expect("t"));

    let items: Vec<Value> = (0..10).map(|i| json!({ "name": format!("Item {i} <deluxe>"), "quantity": i % 3 + 1, "price": 9.5 * (i + 1) as f64 })).collect();
    let event = json!({ "items": items }).as_object().cloned().unwrap_or_default();
    let recipients = recipients(&event);

    // The two agree on what they print (spot check on one contact).
    let sample = &recipients[0];
    let context = Context { variables: &sample.variables, contact: Some(&sample.contact), event: Some(&event) };
    let ours = visual.compiled.render(&context, Mode::PerContact);
    // minijinja also escapes `/` and spells the apostrophe differently; otherwise the output is identical.
    let theirs = html_t.render(&sample.jinja).expect("renders").replace("&#x2f;", "/").replace("&#x27;", "&#39;");
    if ours.html != theirs {
        let at = ours.html.bytes().zip(theirs.bytes()).position(|(a, b)| a != b).unwrap_or(0);
        eprintln!("differ at {at}:\nherald:    {}\nminijinja: {}", ours.html.get(at.saturating_sub(80)..(at + 120).min(ours.html.len())).unwrap_or(""), theirs.get(at.saturating_sub(80)..(at + 120).min(theirs.len())).unwrap_or(""));
    }
    assert!(ours.html == theirs, "herald and minijinja print the same HTML");
    assert!(ours.html.contains("Item 9 &lt;deluxe&gt;") && ours.html.contains("$95.00") && ours.html.contains("Pro tip for Name0"));

    let rounds = 3;
    let per_round = 20_000;
    let (mut herald_best, mut jinja_best) = (0f64, 0f64);
    for _ in 0..rounds {
        let start = Instant::now();
        let mut bytes = 0;
        for i in 0..per_round {
            let r = &recipients[i % CONTACTS];
            let context = Context { variables: &r.variables, contact: Some(&r.contact), event: Some(&event) };
            let out = visual.compiled.render(black_box(&context), Mode::PerContact);
            bytes += out.html.len() + out.text.len() + out.subject.len();
        }
        herald_best = herald_best.max(rate(per_round, start.elapsed()));
        black_box(bytes);

        let start = Instant::now();
        let mut bytes = 0;
        for i in 0..per_round {
            let r = &recipients[i % CONTACTS];
            let subject = subject_t.render(black_box(&r.jinja)).expect("renders");
            let html = html_t.render(&r.jinja).expect("renders");
            let text = text_t.render(&r.jinja).expect("renders");
            bytes += html.len() + text.len() + subject.len();
        }
        jinja_best = jinja_best.max(rate(per_round, start.elapsed()));
        black_box(bytes);
    }
    println!("html_bytes={} text_bytes={} stored_json_bytes={}", ours.html.len(), ours.text.len(), stored.to_string().len());
    println!("renders/s herald={herald_best:.0} minijinja={jinja_best:.0} ratio={:.2}", herald_best / jinja_best);
    println!("compile_ms={compile_ms:.3}");
}
