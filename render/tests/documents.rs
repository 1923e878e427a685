//! Block documents: validation problems at their paths, the compiled HTML and text, the
//! sanitiser, the brand, and saved blocks.

mod common;

use common::*;
use render::{Brand, Catalog, Compiled, Mode};
use scraper::{Html, Selector};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

fn select<'a>(html: &'a Html, css: &str) -> Vec<scraper::ElementRef<'a>> {
    let selector = Selector::parse(css).expect("selector");
    html.select(&selector).collect()
}

fn parsed(document: &Value) -> Html {
    Html::parse_document(&compile(document, &Catalog::default()).html)
}

// ---- validation ------------------------------------------------------------------------------

#[test]
fn a_document_that_is_not_an_object_is_refused() {
    let problems = problems(&json!([1, 2]), &Catalog::default());
    assert_eq!(problems, vec![render::Problem::new("document", "must be a JSON object")]);
}

#[test]
fn a_wrong_kind_version_or_missing_lang_is_refused_at_its_path() {
    let problems = problems(&json!({ "kind": "other", "version": 2, "sections": [] }), &Catalog::default());
    for path in ["document.kind", "document.version", "document.lang"] {
        assert!(has_problem_at(&problems, path), "{path}: {problems:#?}");
    }
    assert!(has_problem_at(&common::problems(&json!({ "kind": "svc.blocks", "version": 1, "lang": "en" }), &Catalog::default()), "document.sections"));
}

#[test]
fn an_unknown_block_type_is_refused_at_its_type() {
    let document = doc_sections(json!([
        { "columns": [ { "blocks": [] }, { "blocks": [ { "type": "text", "text": "a" }, { "type": "text", "text": "b" }, { "type": "marquee" } ] } ] }
    ]));
    let problems = problems(&document, &Catalog::default());
    assert!(has_problem_at(&problems, "document.sections[0].columns[1].blocks[2].type"), "{problems:#?}");
}

#[test]
fn a_second_preheader_is_refused_at_its_path() {
    let problems = problems(
        &doc(json!([ { "type": "preheader", "text": "one" }, { "type": "text", "text": "x" }, { "type": "preheader", "text": "two" } ])),
        &Catalog::default(),
    );
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].path, "document.sections[0].columns[0].blocks[2]");
    assert!(problems[0].message.contains("second preheader"));
}

#[test]
fn a_preheader_that_is_not_first_is_refused_at_its_path() {
    let problems = problems(&doc(json!([ { "type": "text", "text": "x" }, { "type": "preheader", "text": "late" } ])), &Catalog::default());
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].path, "document.sections[0].columns[0].blocks[1]");
    assert!(problems[0].message.contains("must be the first block"));
}

#[test]
fn zero_or_four_columns_are_refused() {
    let text = json!({ "blocks": [ { "type": "text", "text": "x" } ] });
    let document = doc_sections(json!([ { "columns": [] }, { "columns": [text, text, text, text] }, { "columns": [text, text, text] } ]));
    let problems = problems(&document, &Catalog::default());
    assert!(has_problem_at(&problems, "document.sections[0].columns"));
    assert!(has_problem_at(&problems, "document.sections[1].columns"));
    assert!(!has_problem_at(&problems, "document.sections[2].columns"));
}

#[test]
fn rules_over_undeclared_properties_or_unknown_topics_and_segments_are_refused() {
    let rule = json!({ "match": "any", "conditions": [
        { "field": "properties.plan", "op": "eq", "value": "pro" },
        { "topic": Uuid::from_u128(1).to_string(), "subscription": "opt_in" },
        { "segment": Uuid::from_u128(2).to_string(), "member": true },
        { "field": "properties.age", "op": "gt", "value": 3 }
    ] });
    let catalog = Catalog { properties: HashMap::from([("age".into(), "number".into())]), ..Catalog::default() };
    let problems = problems(&doc(json!([ { "type": "text", "text": "x", "show_when": rule } ])), &catalog);
    let base = "document.sections[0].columns[0].blocks[0].show_when.conditions";
    assert!(has_problem_at(&problems, &format!("{base}[0].field")), "{problems:#?}");
    assert!(has_problem_at(&problems, &format!("{base}[1].topic")));
    assert!(has_problem_at(&problems, &format!("{base}[2].segment")));
    assert_eq!(problems.len(), 3);
}

#[test]
fn a_bad_operator_or_value_in_a_rule_is_refused() {
    let rule = json!({ "match": "most", "conditions": [
        { "field": "unsubscribed", "op": "gt", "value": true },
        { "field": "created_at", "op": "lt", "value": "soon" },
        { "field": "nickname", "op": "eq", "value": "x" }
    ] });
    let problems = problems(&doc(json!([ { "type": "text", "text": "x", "show_when": rule } ])), &Catalog::default());
    let base = "document.sections[0].columns[0].blocks[0].show_when";
    for path in [format!("{base}.match"), format!("{base}.conditions[0].op"), format!("{base}.conditions[1].value"), format!("{base}.conditions[2].field")] {
        assert!(has_problem_at(&problems, &path), "{path}: {problems:#?}");
    }
}

#[test]
fn a_repeat_group_nested_in_a_repeat_group_is_refused() {
    let document = doc_sections(json!([
        { "repeat": { "list": "event.items" }, "columns": [ { "blocks": [
            { "type": "group", "repeat": { "list": "event.others" }, "blocks": [ { "type": "text", "text": "x" } ] }
        ] } ] }
    ]));
    let problems = problems(&document, &Catalog::default());
    assert!(has_problem_at(&problems, "document.sections[0].columns[0].blocks[0].repeat"), "{problems:#?}");
}

#[test]
fn a_repeat_list_must_name_an_event_list_and_item_tags_need_a_repeat_group() {
    let document = doc(json!([
        { "type": "group", "repeat": { "list": "items" }, "blocks": [] },
        { "type": "text", "text": "{{{item.name}}}" }
    ]));
    let problems = problems(&document, &Catalog::default());
    assert!(has_problem_at(&problems, "document.sections[0].columns[0].blocks[0].repeat.list"), "{problems:#?}");
    assert!(has_problem_at(&problems, "document.sections[0].columns[0].blocks[1].text"));
}

#[test]
fn an_unreadable_format_in_a_block_is_refused_at_its_field() {
    let problems = problems(&doc(json!([ { "type": "heading", "text": "{{{event.total|currency:usd}}}" } ])), &Catalog::default());
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].path, "document.sections[0].columns[0].blocks[0].text");
}

#[test]
fn missing_required_fields_are_refused_at_their_path() {
    let document = doc(json!([
        { "type": "button" },
        { "type": "image", "alt": "x" },
        { "type": "heading" },
        { "type": "card", "button": { "label": "Go" } },
        { "type": "video", "url": "https://v.test/1" },
        { "type": "social", "links": [] },
        { "type": "menu", "items": [ { "url": "https://a.test" } ] },
        { "type": "countdown", "target": "someday" },
        { "type": "html" }
    ]));
    let problems = problems(&document, &Catalog::default());
    let block = |i: usize, field: &str| format!("document.sections[0].columns[0].blocks[{i}].{field}");
    for path in [
        block(0, "url"),
        block(0, "label"),
        block(1, "src"),
        block(2, "text"),
        block(3, "heading"),
        block(3, "button.url"),
        block(4, "thumbnail"),
        block(5, "links"),
        block(6, "items[0].label"),
        block(7, "target"),
        block(8, "html"),
    ] {
        assert!(has_problem_at(&problems, &path), "{path}: {problems:#?}");
    }
}

#[test]
fn links_that_are_not_web_mail_or_placeholders_are_refused() {
    let document = doc(json!([
        { "type": "button", "label": "x", "url": "javascript:alert(1)" },
        { "type": "image", "src": "ftp://x.test/a.png" },
        { "type": "image", "src": "mailto:a@b.test" },
        { "type": "button", "label": "ok", "url": "{{url}}" },
        { "type": "button", "label": "ok", "url": "mailto:help@x.test" },
        { "type": "button", "label": "ok", "url": "{{{UNSUBSCRIBE_URL}}}" },
        { "type": "image", "src": "https://{{cdn}}/a.png", "href": "HTTPS://x.test" }
    ]));
    let problems = problems(&document, &Catalog::default());
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "document.sections[0].columns[0].blocks[0].url",
            "document.sections[0].columns[0].blocks[1].src",
            "document.sections[0].columns[0].blocks[2].src"
        ]
    );
}

#[test]
fn unknown_keys_are_ignored() {
    let document = json!({ "kind": "svc.blocks", "version": 1, "lang": "en", "editor": { "zoom": 2 }, "sections": [
        { "id": "s1", "columns": [ { "width": 50, "blocks": [ { "type": "text", "text": "x", "id": "b1", "color_scheme": "dark" } ] } ] }
    ] });
    let visual = compile(&document, &Catalog::default());
    assert_eq!(visual.document, document);
}

#[test]
fn every_problem_is_reported_at_once() {
    let document = json!({ "kind": "svc.blocks", "version": 1, "sections": [
        { "columns": [ { "blocks": [ { "type": "text", "text": "x" }, { "type": "preheader", "text": "p" }, { "type": "nope" }, { "type": "button", "label": "b" } ] } ] },
        { "columns": [] }
    ] });
    let problems = problems(&document, &Catalog::default());
    assert_eq!(problems.len(), 5, "{problems:#?}");
}

#[test]
fn documents_are_limited_to_a_hundred_sections_and_five_hundred_blocks() {
    let section = json!({ "columns": [ { "blocks": [ { "type": "spacer" } ] } ] });
    let many_sections = doc_sections(Value::Array(vec![section; 101]));
    assert!(has_problem_at(&problems(&many_sections, &Catalog::default()), "document.sections"));
    let blocks = Value::Array(vec![json!({ "type": "spacer" }); 501]);
    let many_blocks = doc(blocks);
    let problems = problems(&many_blocks, &Catalog::default());
    assert!(problems.iter().any(|p| p.path == "document.sections" && p.message.contains("501 blocks")), "{problems:#?}");
}

// ---- compiled HTML and text ------------------------------------------------------------------

#[test]
fn the_root_carries_lang_and_the_head_has_charset_and_viewport() {
    let mut document = doc(json!([ { "type": "text", "text": "Bonjour" } ]));
    document["lang"] = json!("fr-CA");
    let html = parsed(&document);
    assert_eq!(select(&html, "html")[0].value().attr("lang"), Some("fr-CA"));
    assert_eq!(select(&html, "meta[charset]").len(), 1);
    assert!(select(&html, "meta[name=viewport]")[0].value().attr("content").unwrap().contains("width=device-width"));
    assert!(select(&html, "table").iter().any(|t| t.value().attr("style").is_some_and(|s| s.contains("max-width:600px"))));
}

#[test]
fn the_preheader_is_a_hidden_div_at_the_very_start_of_body() {
    let html = parsed(&doc(json!([ { "type": "preheader", "text": "Peek {{x}}" }, { "type": "text", "text": "Body" } ])));
    let body = select(&html, "body")[0];
    let first = body.children().find_map(scraper::ElementRef::wrap).expect("an element");
    assert_eq!(first.value().name(), "div");
    assert!(first.value().attr("style").unwrap().contains("display:none"));
    assert!(first.text().collect::<String>().starts_with("Peek {{x}}"));
    let visual = compile(&doc(json!([ { "type": "preheader", "text": "Peek {{x}}" } ])), &Catalog::default());
    assert_eq!(visual.preheader(), Some("Peek {{x}}"));
    assert_eq!(compile(&doc(json!([ { "type": "spacer" } ])), &Catalog::default()).preheader(), None);
}

#[test]
fn images_keep_their_alt_text_and_links_stay_intact() {
    let html = parsed(&doc(json!([
        { "type": "image", "src": "https://cdn.test/a.png?x=1&y=2", "alt": "A \"cat\"", "href": "https://x.test/p?a=1&b=2" },
        { "type": "button", "label": "Reset password", "url": "https://x.test/reset?t={{token}}" }
    ])));
    let img = select(&html, "img")[0];
    assert_eq!(img.value().attr("alt"), Some("A \"cat\""));
    assert_eq!(img.value().attr("src"), Some("https://cdn.test/a.png?x=1&y=2"));
    let hrefs: Vec<&str> = select(&html, "a").iter().filter_map(|a| a.value().attr("href")).collect();
    assert_eq!(hrefs, ["https://x.test/p?a=1&b=2", "https://x.test/reset?t={{token}}"]);
}

#[test]
fn the_text_version_shows_link_targets_sets_headings_apart_and_uses_alt_text() {
    let visual = compile(
        &doc(json!([
            { "type": "heading", "text": "Welcome" },
            { "type": "image", "src": "https://cdn.test/a.png", "alt": "Our logo" },
            { "type": "button", "label": "Reset password", "url": "https://x.test/reset" },
            { "type": "html", "html": "<p>See <a href=\"https://x.test/docs\">the docs</a></p>" }
        ])),
        &Catalog::default(),
    );
    assert_eq!(
        visual.text,
        "Welcome\n=======\n\nOur logo\n\nReset password: https://x.test/reset\n\nSee the docs (https://x.test/docs)\n"
    );
}

#[test]
fn display_output_leaves_placeholders_and_merge_tags_as_written_and_draws_no_items() {
    let visual = compile(
        &doc_sections(json!([
            { "columns": [ { "blocks": [ { "type": "text", "text": "Hi {{ name }} {{{FIRST_NAME|you & me}}}", "show_when": { "match": "all", "conditions": [ { "field": "email", "op": "contains", "value": "@" } ] } } ] } ] },
            { "repeat": { "list": "event.items" }, "columns": [ { "blocks": [ { "type": "text", "text": "ITEM {{{item.name}}}" } ] } ] }
        ])),
        &Catalog::default(),
    );
    assert!(visual.html.contains("Hi {{ name }} {{{FIRST_NAME|you &amp; me}}}"));
    assert!(visual.text.contains("Hi {{ name }} {{{FIRST_NAME|you & me}}}"));
    assert!(!visual.html.contains("ITEM") && !visual.text.contains("ITEM"));
}

#[test]
fn the_brand_styles_headings_buttons_and_fonts_and_shows_the_logo() {
    let brand = Brand {
        logo_url: Some("https://cdn.test/logo.png".into()),
        primary_color: Some("#ff0000".into()),
        accent_color: Some("#00ff00".into()),
        font: Some("georgia".into()),
        button_style: Some("pill".into()),
        company_name: Some("ACME".into()),
        address: Some("1 Road".into()),
        footer_text: Some("Thanks".into()),
    };
    let document = doc(json!([ { "type": "heading", "text": "H" }, { "type": "button", "label": "B", "url": "https://x.test" }, { "type": "footer", "text": "Own words" } ]));
    let visual = Compiled::from_document(None, &document, &brand, &Catalog::default()).unwrap();
    let html = Html::parse_document(&visual.html);
    let h1 = select(&html, "h1")[0].value().attr("style").unwrap().to_string();
    assert!(h1.contains("color:#ff0000") && h1.contains("Georgia"));
    let button = select(&html, "a[href=\"https://x.test\"]")[0].value().attr("style").unwrap().to_string();
    assert!(button.contains("border-radius:9999px") && button.contains("background-color:#00ff00"));
    assert_eq!(select(&html, "img")[0].value().attr("src"), Some("https://cdn.test/logo.png"));
    assert!(visual.text.contains("ACME\n1 Road\nThanks\nOwn words"));
    let mut no_logo = document.clone();
    no_logo["logo"] = json!(false);
    let visual = Compiled::from_document(None, &no_logo, &brand, &Catalog::default()).unwrap();
    assert!(!visual.html.contains("logo.png"));
}

#[test]
fn the_default_brand_uses_the_plain_defaults() {
    let html = parsed(&doc(json!([ { "type": "button", "label": "B", "url": "https://x.test" } ])));
    let style = select(&html, "a")[0].value().attr("style").unwrap().to_string();
    assert!(style.contains("border-radius:6px") && style.contains("#2563eb") && style.contains("-apple-system"));
    assert!(select(&html, "img").is_empty());
}

#[test]
fn every_block_type_compiles_into_parseable_html() {
    let visual = compile(
        &doc_sections(json!([
            { "columns": [ { "blocks": [
                { "type": "heading", "text": "H", "level": 2 },
                { "type": "text", "text": "a\nb\n\nc" },
                { "type": "divider", "color": "#abcdef" },
                { "type": "spacer", "height": 40 },
                { "type": "social", "links": [ { "network": "github", "url": "https://github.com/x" }, { "label": "Blog", "url": "https://b.test" } ] },
                { "type": "menu", "items": [ { "label": "A", "url": "https://a.test" } ] },
                { "type": "countdown", "label": "Sale ends", "target": "2026-11-23T17:00:00Z" },
                { "type": "video", "url": "https://v.test/1", "thumbnail": "https://v.test/1.jpg", "caption": "Watch" }
            ] } ] },
            { "background": "#fafafa", "columns": [
                { "blocks": [ { "type": "card", "image": { "src": "https://c.test/1.png", "alt": "one" }, "heading": "One", "text": "t", "button": { "label": "Go", "url": "https://c.test/1" } } ] },
                { "blocks": [ { "type": "footer", "unsubscribe": true, "preferences": true } ] }
            ] }
        ])),
        &Catalog::default(),
    );
    let html = Html::parse_document(&visual.html);
    assert_eq!(select(&html, "h2").len(), 1);
    assert_eq!(select(&html, "p br").len(), 1);
    assert_eq!(select(&html, "a[href=\"https://v.test/1\"] img").len(), 1, "video is a linked thumbnail");
    assert!(visual.text.contains("Sale ends November 23, 2026, 17:00 UTC"));
    assert!(visual.text.contains("GitHub: https://github.com/x\nBlog: https://b.test"));
    assert!(visual.text.contains("Unsubscribe: {{{UNSUBSCRIBE_URL}}}"));
    assert_eq!(select(&html, "a[href=\"{{{PREFERENCES_URL}}}\"]").len(), 1);
    assert_eq!(select(&html, "div.h-col").len(), 2, "two hybrid columns");
}

// ---- the html block's sanitiser --------------------------------------------------------------

#[test]
fn the_html_block_is_sanitised() {
    let dirty = r#"<script>alert(1)</script><style>p{color:red}</style><link rel="stylesheet" href="https://x.test/s.css">
        <p onclick="steal()" style="color:#333">Hello <b>bold</b> <a href="javascript:alert(1)">bad</a> <a href="https://ok.test/a">good</a> <a href="mailto:a@b.test">mail</a></p>
        <iframe src="https://x.test"></iframe><object data="x"></object><embed src="x">
        <table><tr><td style="padding:4px">cell</td></tr></table><img src="https://x.test/i.png" alt="pic" onerror="x()">"#;
    let html = parsed(&doc(json!([ { "type": "html", "html": dirty } ])));
    assert!(select(&html, "script").is_empty());
    assert!(select(&html, "style").is_empty());
    assert!(select(&html, "link").is_empty());
    assert!(select(&html, "iframe, object, embed").is_empty());
    for element in select(&html, "*") {
        assert!(element.value().attrs().all(|(name, _)| !name.starts_with("on")), "{:?}", element.value());
    }
    let hrefs: Vec<&str> = select(&html, "a").iter().filter_map(|a| a.value().attr("href")).collect();
    assert!(hrefs.iter().all(|h| !h.to_ascii_lowercase().starts_with("javascript:")));
    assert!(hrefs.contains(&"https://ok.test/a") && hrefs.contains(&"mailto:a@b.test"));
    assert_eq!(select(&html, "b").len(), 1);
    assert!(select(&html, "p").iter().any(|p| p.value().attr("style") == Some("color:#333")));
    assert_eq!(select(&html, "td").iter().filter(|t| t.value().attr("style") == Some("padding:4px")).count(), 1);
    assert_eq!(select(&html, "img[alt=pic]").len(), 1);
}

#[test]
fn placeholders_in_the_html_block_are_rendered_and_escaped() {
    let visual = compile(&doc(json!([ { "type": "html", "html": "<p>Hi {{name}}, <a href=\"{{{UNSUBSCRIBE_URL}}}\">leave</a></p>" } ])), &Catalog::default());
    let variables = vars(json!({ "name": "<Ada>" }));
    let contact = render::Contact { unsubscribe_url: Some("https://u.test/x".into()), ..ada() };
    let out = visual.compiled.render(&render::Context { variables: &variables, contact: Some(&contact), event: None }, Mode::PerContact);
    assert!(out.html.contains("Hi &lt;Ada&gt;, <a href=\"https://u.test/x\">leave</a>"), "{}", out.html);
    assert!(out.text.contains("Hi <Ada>, leave (https://u.test/x)"));
}

// ---- saved blocks ----------------------------------------------------------------------------

fn saved_id() -> Uuid {
    Uuid::from_u128(0xabc)
}

fn saved_catalog(content: Value) -> Catalog {
    Catalog { saved_blocks: HashMap::from([(saved_id(), content)]), ..Catalog::default() }
}

#[test]
fn a_saved_block_is_inlined_and_its_copy_embedded() {
    let catalog = saved_catalog(json!({ "type": "text", "text": "SAVED {{x}}" }));
    let document = doc(json!([ { "type": "saved", "saved_block_id": saved_id().to_string() } ]));
    let visual = compile(&document, &catalog);
    assert!(visual.html.contains("SAVED {{x}}"));
    assert_eq!(visual.saved_blocks, vec![saved_id()]);
    assert_eq!(visual.compiled.placeholders().into_iter().collect::<Vec<_>>(), ["x"]);
    let block = &visual.document["sections"][0]["columns"][0]["blocks"][0];
    assert_eq!(block["saved_block_id"], json!(saved_id().to_string()));
    assert_eq!(block["content"]["text"], json!("SAVED {{x}}"));
}

#[test]
fn a_saved_section_is_inlined() {
    let catalog = saved_catalog(json!({ "columns": [ { "blocks": [ { "type": "footer", "text": "SAVED FOOTER" } ] } ] }));
    let document = doc_sections(json!([ { "saved_block_id": saved_id().to_string() } ]));
    let visual = compile(&document, &catalog);
    assert!(visual.text.contains("SAVED FOOTER"));
}

#[test]
fn deleting_a_saved_block_leaves_existing_copies_unchanged() {
    let catalog = saved_catalog(json!({ "type": "text", "text": "VERSION ONE" }));
    let first = compile(&doc(json!([ { "type": "saved", "saved_block_id": saved_id().to_string() } ])), &catalog);
    let again = compile(&first.document, &Catalog::default());
    assert!(again.html.contains("VERSION ONE"));
    assert_eq!(again.saved_blocks, vec![saved_id()]);
    let updated = compile(&first.document, &saved_catalog(json!({ "type": "text", "text": "VERSION TWO" })));
    assert!(updated.html.contains("VERSION TWO"), "the catalog's current copy wins");
}

#[test]
fn a_reference_with_no_catalog_entry_and_no_copy_is_refused() {
    let problems = problems(&doc(json!([ { "type": "saved", "saved_block_id": saved_id().to_string() }, { "type": "saved", "saved_block_id": "nope" } ])), &Catalog::default());
    assert!(has_problem_at(&problems, "document.sections[0].columns[0].blocks[0].saved_block_id"));
    assert!(has_problem_at(&problems, "document.sections[0].columns[0].blocks[1].saved_block_id"));
}

#[test]
fn a_saved_reference_inside_saved_content_is_refused() {
    let nested = json!({ "type": "group", "blocks": [ { "type": "saved", "saved_block_id": Uuid::from_u128(9).to_string() } ] });
    let problems = problems(&doc(json!([ { "type": "saved", "saved_block_id": saved_id().to_string() } ])), &saved_catalog(nested));
    assert!(
        has_problem_at(&problems, "document.sections[0].columns[0].blocks[0].content.blocks[0].saved_block_id"),
        "{problems:#?}"
    );
}

#[test]
fn a_saved_section_used_as_a_block_is_refused() {
    let catalog = saved_catalog(json!({ "columns": [ { "blocks": [] } ] }));
    let problems = problems(&doc(json!([ { "type": "saved", "saved_block_id": saved_id().to_string() } ])), &catalog);
    assert!(problems[0].message.contains("is a section"), "{problems:#?}");
}

// ---- starters --------------------------------------------------------------------------------

#[test]
fn every_starter_declares_exactly_its_placeholders_and_compiles_cleanly() {
    let slugs: HashSet<&str> = render::starters::all().iter().map(|s| s.slug).collect();
    for slug in ["welcome", "receipt", "password-reset", "magic-link", "invitation", "newsletter", "announcement", "event"] {
        assert!(slugs.contains(slug), "{slug} is missing");
    }
    for starter in render::starters::all() {
        let visual = Compiled::from_document(Some(starter.subject), &starter.document, &Brand::default(), &Catalog::default())
            .unwrap_or_else(|p| panic!("{}: {p:#?}", starter.slug));
        let declared: std::collections::BTreeSet<String> = starter.variables.iter().map(|v| v.key.to_string()).collect();
        assert_eq!(visual.compiled.placeholders(), declared, "{}", starter.slug);
        assert!(starter.variables.iter().all(|v| ["string", "number", "boolean", "object", "list"].contains(&v.kind)));
        let html = Html::parse_document(&visual.html);
        let body = select(&html, "body")[0];
        let first = body.children().find_map(scraper::ElementRef::wrap).expect("an element");
        assert!(first.value().attr("style").unwrap().contains("display:none"), "{}: preheader first", starter.slug);
        assert!(!starter.name.is_empty() && !starter.description.is_empty());
        assert!(render::starters::find(starter.slug).is_some());
    }
}
