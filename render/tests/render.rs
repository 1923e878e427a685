//! Placeholders, merge tags, formats, show-when rules and repeat groups at render time.

mod common;

use common::*;
use render::{Catalog, Compiled, Contact, Context, Mode};
use serde_json::{Map, Value, json};
use std::collections::{BTreeSet, HashMap, HashSet};
use uuid::Uuid;

fn parts(subject: &str, html: &str, text: &str) -> Compiled {
    Compiled::from_parts(Some(subject), Some(html), Some(text)).expect("compiles")
}

fn with_vars(compiled: &Compiled, variables: Value) -> render::Rendered {
    let variables = vars(variables);
    compiled.render(&Context { variables: &variables, contact: None, event: None }, Mode::Transactional)
}

#[test]
fn placeholders_are_read_with_either_spacing_and_listed_once() {
    let compiled = parts("Hi {{name}}", "<p>{{ name }} and {{other}}</p>", "{{name}}");
    assert_eq!(compiled.placeholders(), BTreeSet::from(["name".to_string(), "other".to_string()]));
    let out = with_vars(&compiled, json!({ "name": "Ada", "other": "Bo" }));
    assert_eq!(out.subject, "Hi Ada");
    assert_eq!(out.html, "<p>Ada and Bo</p>");
    assert_eq!(out.text, "Ada");
}

#[test]
fn a_value_containing_a_placeholder_is_inserted_literally() {
    let compiled = parts("{{a}}", "{{a}}", "{{a}}");
    let out = with_vars(&compiled, json!({ "a": "{{b}} {{{FIRST_NAME}}}", "b": "never" }));
    assert_eq!(out.subject, "{{b}} {{{FIRST_NAME}}}");
    assert_eq!(out.text, "{{b}} {{{FIRST_NAME}}}");
    assert_eq!(out.html, "{{b}} {{{FIRST_NAME}}}");
}

#[test]
fn strings_are_escaped_in_html_and_raw_in_subject_and_text() {
    let compiled = parts("{{x}}", "<b>{{x}}</b>", "{{x}}");
    let out = with_vars(&compiled, json!({ "x": "<Tom & \"Jerry\">" }));
    assert_eq!(out.subject, "<Tom & \"Jerry\">");
    assert_eq!(out.text, "<Tom & \"Jerry\">");
    assert_eq!(out.html, "<b>&lt;Tom &amp; &quot;Jerry&quot;&gt;</b>");
}

#[test]
fn values_render_by_their_json_type() {
    let compiled = parts("{{n}} {{f}} {{t}} {{o}} {{l}}", "{{o}}", "{{l}}");
    let out = with_vars(&compiled, json!({ "n": 42, "f": 1.5, "t": true, "o": { "a": "<b>" }, "l": [1, "x"] }));
    assert_eq!(out.subject, r#"42 1.5 true {"a":"<b>"} [1,"x"]"#);
    assert_eq!(out.html, "{&quot;a&quot;:&quot;&lt;b&gt;&quot;}");
    assert_eq!(out.text, r#"[1,"x"]"#);
}

#[test]
fn a_missing_variable_renders_empty() {
    let out = with_vars(&parts("[{{gone}}]", "[{{gone}}]", "[{{gone}}]"), json!({}));
    assert_eq!(out.subject, "[]");
}

#[test]
fn text_that_only_looks_like_a_placeholder_stays_literal() {
    let compiled = parts("{{ not valid! }}", "{{}} {{a-b}}", "{ {x} }");
    assert!(compiled.placeholders().is_empty());
    let out = with_vars(&compiled, json!({}));
    assert_eq!(out.subject, "{{ not valid! }}");
    assert_eq!(out.html, "{{}} {{a-b}}");
}

#[test]
fn absent_parts_render_empty_and_say_so() {
    let compiled = Compiled::from_parts(Some("S"), None, Some("T")).unwrap();
    assert!(compiled.has_subject() && !compiled.has_html() && compiled.has_text());
    let out = with_vars(&compiled, json!({}));
    assert_eq!((out.subject.as_str(), out.html.as_str(), out.text.as_str()), ("S", "", "T"));
}

#[test]
fn a_compiled_template_survives_a_json_round_trip() {
    let visual = compile(&render::starters::find("receipt").unwrap().document, &Catalog::default());
    let stored = serde_json::to_value(&visual.compiled).unwrap();
    let back: Compiled = serde_json::from_value(stored).unwrap();
    assert_eq!(back, visual.compiled);
}

#[test]
fn merge_tags_resolve_inline_default_then_property_fallback_then_empty() {
    let compiled = parts("{{{company|ACME}}}|{{{company}}}|{{{nickname}}}", "", "");
    let mut contact = ada();
    contact.fallbacks = HashMap::from([("company".to_string(), "your company".to_string())]);
    let out = render(&compiled, Some(&contact), None, Mode::PerContact);
    assert_eq!(out.subject, "ACME|your company|");
    contact.properties = vars(json!({ "company": "Initech" }));
    assert_eq!(render(&compiled, Some(&contact), None, Mode::PerContact).subject, "Initech|Initech|");
}

#[test]
fn property_keys_and_reserved_names_match_ignoring_case() {
    let compiled = parts("{{{COMPANY}}} {{{Plan}}} {{{first_name}}}", "", "");
    let mut contact = ada();
    contact.properties = vars(json!({ "company": "Initech", "plan": "pro" }));
    assert_eq!(render(&compiled, Some(&contact), None, Mode::PerContact).subject, "Initech pro Ada");
}

#[test]
fn reserved_merge_tags_read_the_contact_and_are_escaped_in_html() {
    let compiled = parts(
        "{{{FIRST_NAME}}} {{{LAST_NAME|X}}} {{{EMAIL}}}",
        "<a href=\"{{{UNSUBSCRIBE_URL}}}\">u</a><a href=\"{{{PREFERENCES_URL}}}\">p</a>",
        "{{{UNSUBSCRIBE_URL}}}",
    );
    let contact = Contact {
        unsubscribe_url: Some("https://h.test/u?a=1&b=2".into()),
        preferences_url: Some("https://h.test/p".into()),
        ..ada()
    };
    let out = render(&compiled, Some(&contact), None, Mode::PerContact);
    assert_eq!(out.subject, "Ada X ada@example.com");
    assert_eq!(out.html, "<a href=\"https://h.test/u?a=1&amp;b=2\">u</a><a href=\"https://h.test/p\">p</a>");
    assert_eq!(out.text, "https://h.test/u?a=1&b=2");
}

#[test]
fn merge_tag_formats_apply_to_event_values() {
    let compiled = parts(
        "{{{event.total|0|currency:USD}}} / {{{event.when|date:short}}} / {{{event.when|date:medium}}} / {{{event.when|date:long}}} / {{{event.n|number:0}}} / {{{event.n|number:2}}} / {{{event.eur|currency:EUR}}} / {{{event.yen|currency:JPY}}} / {{{event.chf|currency:CHF}}}",
        "",
        "",
    );
    let event = vars(json!({ "total": 1234.5, "when": "2026-11-23T08:00:00Z", "n": 1234567.891, "eur": "10", "yen": 1500, "chf": 2 }));
    let out = render(&compiled, None, Some(&event), Mode::PerContact);
    assert_eq!(
        out.subject,
        "$1,234.50 / 11/23/2026 / Nov 23, 2026 / November 23, 2026 / 1,234,568 / 1,234,567.89 / €10.00 / ¥1,500 / CHF 2.00"
    );
}

#[test]
fn an_unformattable_value_renders_the_fallback_else_the_raw_value() {
    let compiled = parts("{{{event.total|0|currency:USD}}} {{{event.total|currency:USD}}} {{{event.missing|0|currency:GBP}}}", "", "");
    let event = vars(json!({ "total": "lots" }));
    assert_eq!(render(&compiled, None, Some(&event), Mode::PerContact).subject, "$0.00 lots £0.00");
}

#[test]
fn unreadable_formats_are_refused_at_their_part() {
    let problems = Compiled::from_parts(
        Some("{{{event.n|number:7}}}"),
        Some("{{{event.n|0|currency:usd}}}"),
        Some("{{{event.n|date:weird}}} {{{event.n|0|foo:bar}}}"),
    )
    .unwrap_err();
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["subject", "html", "text", "text"]);
}

// ---- show-when rules -------------------------------------------------------------------------

fn catalog() -> Catalog {
    Catalog {
        properties: HashMap::from([
            ("plan".to_string(), "string".to_string()),
            ("seats".to_string(), "number".to_string()),
        ]),
        topics: HashSet::from([topic()]),
        segments: HashSet::from([segment()]),
        saved_blocks: HashMap::new(),
    }
}

fn topic() -> Uuid {
    Uuid::from_u128(0x11)
}

fn segment() -> Uuid {
    Uuid::from_u128(0x22)
}

fn shown(rule: Value) -> Compiled {
    compile(
        &doc(json!([
            { "type": "text", "text": "ALWAYS" },
            { "type": "text", "text": "MAYBE", "show_when": rule }
        ])),
        &catalog(),
    )
    .compiled
}

fn sees(compiled: &Compiled, contact: &Contact, mode: Mode) -> bool {
    let out = render(compiled, Some(contact), None, mode);
    assert!(out.html.contains("ALWAYS") && out.text.contains("ALWAYS"));
    assert_eq!(out.html.contains("MAYBE"), out.text.contains("MAYBE"));
    out.html.contains("MAYBE")
}

fn pro() -> Contact {
    let mut contact = ada();
    contact.properties = vars(json!({ "plan": "Pro", "seats": 12 }));
    contact.topics = HashMap::from([(topic(), true)]);
    contact.segments = HashMap::from([(segment(), true)]);
    contact
}

#[test]
fn a_rule_is_decided_per_contact_only_in_per_contact_mode() {
    let compiled = shown(json!({ "match": "all", "conditions": [ { "field": "properties.plan", "op": "eq", "value": "pro" } ] }));
    let mut free = pro();
    free.properties = vars(json!({ "plan": "free" }));
    assert!(sees(&compiled, &pro(), Mode::PerContact));
    assert!(!sees(&compiled, &free, Mode::PerContact));
    assert!(sees(&compiled, &free, Mode::Transactional));
}

#[test]
fn all_needs_every_condition_and_any_needs_one() {
    let conditions = json!([
        { "field": "properties.seats", "op": "gte", "value": 10 },
        { "field": "email", "op": "contains", "value": "@other.test" }
    ]);
    let all = shown(json!({ "match": "all", "conditions": conditions }));
    let any = shown(json!({ "match": "any", "conditions": conditions }));
    assert!(!sees(&all, &pro(), Mode::PerContact));
    assert!(sees(&any, &pro(), Mode::PerContact));
}

#[test]
fn topic_segment_and_contact_field_conditions_are_decided() {
    let opted_in = shown(json!({ "match": "all", "conditions": [ { "topic": topic().to_string(), "subscription": "opt_in" } ] }));
    let member = shown(json!({ "match": "all", "conditions": [ { "segment": segment().to_string(), "member": true } ] }));
    let outsider = shown(json!({ "match": "all", "conditions": [ { "segment": segment().to_string(), "member": false } ] }));
    let named = shown(json!({ "match": "all", "conditions": [ { "field": "first_name", "op": "in", "value": ["ada", "bo"] } ] }));
    assert!(sees(&opted_in, &pro(), Mode::PerContact));
    assert!(sees(&member, &pro(), Mode::PerContact));
    assert!(!sees(&outsider, &pro(), Mode::PerContact));
    assert!(sees(&named, &pro(), Mode::PerContact));
    let mut out = pro();
    out.topics.insert(topic(), false);
    out.segments.insert(segment(), false);
    assert!(!sees(&opted_in, &out, Mode::PerContact));
    assert!(!sees(&member, &out, Mode::PerContact));
    assert!(sees(&outsider, &out, Mode::PerContact));
}

#[test]
fn a_deleted_property_topic_or_segment_hides_the_block() {
    let by_property = shown(json!({ "match": "any", "conditions": [
        { "field": "properties.plan", "op": "neq", "value": "enterprise" },
        { "field": "email", "op": "contains", "value": "@" }
    ] }));
    let by_topic = shown(json!({ "match": "any", "conditions": [
        { "topic": topic().to_string(), "subscription": "opt_out" },
        { "field": "email", "op": "contains", "value": "@" }
    ] }));
    let by_segment = shown(json!({ "match": "all", "conditions": [ { "segment": segment().to_string() } ] }));
    let by_non_member = shown(json!({ "match": "all", "conditions": [ { "segment": segment().to_string(), "member": false } ] }));
    assert!(sees(&by_property, &pro(), Mode::PerContact));
    let mut deleted = pro();
    deleted.properties.remove("plan");
    deleted.topics.clear();
    deleted.segments.clear();
    assert!(!sees(&by_property, &deleted, Mode::PerContact));
    assert!(!sees(&by_topic, &deleted, Mode::PerContact));
    assert!(!sees(&by_segment, &deleted, Mode::PerContact));
    assert!(!sees(&by_non_member, &deleted, Mode::PerContact), "a deleted segment hides a non-member rule too");
    assert!(sees(&by_topic, &deleted, Mode::Transactional));
}

#[test]
fn an_event_condition_reads_the_trigger_event() {
    let compiled = shown(json!({ "match": "all", "conditions": [ { "field": "event.total", "op": "gt", "value": 100 } ] }));
    let variables = Map::new();
    let contact = pro();
    let big = vars(json!({ "total": 250 }));
    let small = vars(json!({ "total": 50 }));
    let render = |event: &Map<String, Value>| {
        compiled.render(&Context { variables: &variables, contact: Some(&contact), event: Some(event) }, Mode::PerContact).html
    };
    assert!(render(&big).contains("MAYBE"));
    assert!(!render(&small).contains("MAYBE"));
}

// ---- repeat groups ---------------------------------------------------------------------------

fn repeating() -> Compiled {
    compile(
        &doc_sections(json!([
            { "columns": [ { "blocks": [ { "type": "text", "text": "Items:" } ] } ] },
            { "repeat": { "list": "event.items" }, "columns": [
                { "blocks": [ { "type": "text", "text": "<{{{item.name}}}>" } ] },
                { "blocks": [ { "type": "text", "text": "{{{item.price|0|currency:USD}}}" } ] }
            ] }
        ])),
        &Catalog::default(),
    )
    .compiled
}

fn items(n: usize) -> Map<String, Value> {
    let list: Vec<Value> = (0..n).map(|i| json!({ "name": format!("thing{i}"), "price": i })).collect();
    vars(json!({ "items": list }))
}

#[test]
fn a_repeat_group_draws_each_item_with_its_fields() {
    let out = render(&repeating(), Some(&ada()), Some(&items(3)), Mode::PerContact);
    assert_eq!(out.text.matches("<thing").count(), 3);
    assert!(out.html.contains("&lt;thing2&gt;"));
    assert!(out.text.contains("$2.00"));
}

#[test]
fn a_repeat_group_draws_at_most_fifty_items() {
    let out = render(&repeating(), Some(&ada()), Some(&items(80)), Mode::PerContact);
    assert_eq!(out.text.matches("<thing").count(), render::LIMIT_ITEMS);
    assert!(out.text.contains("<thing49>") && !out.text.contains("<thing50>"));
}

#[test]
fn a_repeat_group_draws_nothing_when_the_list_is_missing_or_in_transactional_mode() {
    let compiled = repeating();
    assert!(!render(&compiled, Some(&ada()), None, Mode::PerContact).text.contains("<thing"));
    assert!(!render(&compiled, Some(&ada()), Some(&vars(json!({}))), Mode::PerContact).text.contains("<"));
    assert!(!render(&compiled, Some(&ada()), Some(&items(3)), Mode::Transactional).text.contains("<thing"));
    assert!(render(&compiled, Some(&ada()), None, Mode::PerContact).text.contains("Items:"));
}

#[test]
fn a_block_level_repeat_and_an_item_rule_work_inside_a_column() {
    let compiled = compile(
        &doc(json!([
            { "type": "group", "repeat": { "list": "event.items" }, "blocks": [
                { "type": "text", "text": "[{{{item.name}}}]" },
                { "type": "text", "text": "cheap", "show_when": { "match": "all", "conditions": [ { "field": "item.price", "op": "lt", "value": 2 } ] } }
            ] }
        ])),
        &Catalog::default(),
    )
    .compiled;
    let out = render(&compiled, Some(&ada()), Some(&items(4)), Mode::PerContact);
    assert_eq!(out.text.matches('[').count(), 4);
    assert_eq!(out.text.matches("cheap").count(), 2);
}

#[test]
fn what_follows_a_repeat_group_or_a_hidden_block_is_printed_once() {
    let compiled = compile(
        &doc_sections(json!([
            { "repeat": { "list": "event.items" }, "columns": [ { "blocks": [ { "type": "text", "text": "<{{{item.name}}}>" } ] } ] },
            { "columns": [ { "blocks": [
                { "type": "text", "text": "HIDDEN", "show_when": { "match": "all", "conditions": [ { "field": "email", "op": "eq", "value": "nobody@x.test" } ] } },
                { "type": "text", "text": "AFTER {{x}}" }
            ] } ] }
        ])),
        &Catalog::default(),
    )
    .compiled;
    let variables = vars(json!({ "x": "X" }));
    let event = items(3);
    let contact = ada();
    let out = compiled.render(&Context { variables: &variables, contact: Some(&contact), event: Some(&event) }, Mode::PerContact);
    assert_eq!(out.text.matches("<thing").count(), 3);
    assert_eq!(out.text.matches("AFTER X").count(), 1);
    assert_eq!(out.html.matches("</html>").count(), 1);
    assert!(!out.html.contains("HIDDEN"));
}
