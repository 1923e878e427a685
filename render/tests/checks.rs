//! The content checks, each seen passing, warning and failing.

use render::checks::{Check, Input, Status, run};
use std::collections::HashMap;

fn checks(subject: Option<&str>, html: Option<&str>, text: Option<&str>, preview: Option<&str>) -> Vec<Check> {
    let properties = HashMap::from([("company".to_string(), "string".to_string())]);
    let weights = |src: &str| -> Option<u64> {
        src.strip_prefix("https://uploads.test/").and_then(|rest| rest.split('.').next()).and_then(|kb| kb.parse::<u64>().ok()).map(|kb| kb * 1024)
    };
    run(&Input { subject, html, text, preview_text: preview, properties: &properties, uploaded_image_bytes: &weights })
}

fn status(checks: &[Check], name: &str) -> Status {
    checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name}")).status
}

const LONG_TEXT: &str = "Plenty of words here to make this email read like a letter rather than a poster. \
    Plenty of words here to make this email read like a letter rather than a poster. \
    Plenty of words here to make this email read like a letter rather than a poster. ";

fn good_html() -> String {
    format!(
        "<p>{LONG_TEXT}</p><img src=\"https://uploads.test/100.png\" alt=\"Logo\"><a href=\"https://x.test/a\">A</a> <a href='mailto:a@b.test'>mail</a> <a href=\"tel:+123\">call</a> <a href=\"{{{{{{UNSUBSCRIBE_URL}}}}}}\">Unsubscribe</a> <a href=\"{{{{link}}}}\">p</a>"
    )
}

#[test]
fn checks_run_in_order_with_their_names_and_a_good_email_passes_them_all() {
    let html = good_html();
    let checks = checks(Some("Hello {{{FIRST_NAME}}} from {{{COMPANY}}}"), Some(&html), Some("Hi"), Some("A short preview"));
    let names: Vec<&str> = checks.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        ["variables", "links", "link_types", "subject", "preview_text", "alt_text", "image_weight", "text_and_images", "unsubscribe"]
    );
    for check in &checks {
        assert_eq!(check.status, Status::Pass, "{check:?}");
        assert_eq!(check.status.as_str(), "pass");
        assert!(!check.message.is_empty());
    }
}

#[test]
fn variables_fail_on_an_unknown_merge_tag_without_a_default() {
    let failing = checks(Some("{{{nickname}}} {{{event.x}}} {{{item.y}}} {{{PREFERENCES_URL}}}"), None, None, None);
    assert_eq!(status(&failing, "variables"), Status::Fail);
    assert!(failing[0].message.contains("nickname"));
    assert_eq!(status(&checks(Some("{{{nickname|pal}}}"), None, Some("{{{Company}}} {{{event.x}}}"), None), "variables"), Status::Pass);
    assert_eq!(Status::Fail.as_str(), "fail");
}

#[test]
fn links_fail_when_empty_a_hash_or_not_a_full_web_address() {
    for bad in ["", "#", "/relative", "www.example.com", "https://", "ftp://x.test/f"] {
        let html = format!("<a href=\"{bad}\">x</a>");
        assert_eq!(status(&checks(Some("s"), Some(&html), None, None), "links"), Status::Fail, "{bad}");
    }
    let html = "<a href='https://x.test'>x</a><a HREF=\"{{url}}\">y</a><a href=\"mailto:a@b.test\">m</a>";
    assert_eq!(status(&checks(Some("s"), Some(html), None, None), "links"), Status::Pass);
}

#[test]
fn link_types_fail_on_code_and_warn_on_plain_http() {
    for code in ["javascript:alert(1)", " JavaScript:void(0)", "java&#x73;cript:x", "vbscript:x", "data:text/html,hi", "java\tscript:x"] {
        let html = format!("<a href=\"{code}\">x</a>");
        assert_eq!(status(&checks(Some("s"), Some(&html), None, None), "link_types"), Status::Fail, "{code}");
    }
    let plain = checks(Some("s"), Some("<a href='http://x.test'>x</a>"), None, None);
    assert_eq!(status(&plain, "link_types"), Status::Warn);
    assert_eq!(status(&plain, "links"), Status::Pass);
}

#[test]
fn the_subject_fails_when_missing_and_warns_when_long() {
    assert_eq!(status(&checks(None, None, None, None), "subject"), Status::Fail);
    assert_eq!(status(&checks(Some("   "), None, None, None), "subject"), Status::Fail);
    assert_eq!(status(&checks(Some(&"x".repeat(61)), None, None, None), "subject"), Status::Warn);
    assert_eq!(status(&checks(Some(&"é".repeat(60)), None, None, None), "subject"), Status::Pass);
}

#[test]
fn the_preview_text_warns_when_missing_or_long() {
    assert_eq!(status(&checks(Some("s"), None, None, None), "preview_text"), Status::Warn);
    assert_eq!(status(&checks(Some("s"), None, None, Some(&"p".repeat(151))), "preview_text"), Status::Warn);
    assert_eq!(status(&checks(Some("s"), None, None, Some(&"p".repeat(150))), "preview_text"), Status::Pass);
}

#[test]
fn alt_text_warns_on_an_image_without_it() {
    for html in ["<img src=\"a.png\">", "<img src='a.png' alt=''>", "<IMG SRC=a.png ALT=\"  \">"] {
        assert_eq!(status(&checks(Some("s"), Some(html), None, None), "alt_text"), Status::Warn, "{html}");
    }
    assert_eq!(status(&checks(Some("s"), Some("<img src=a.png alt='A > B'>"), None, None), "alt_text"), Status::Pass);
}

#[test]
fn image_weight_warns_past_a_megabyte_of_uploaded_images() {
    let heavy = "<img src='https://uploads.test/600.png' alt=a><img src='https://uploads.test/500.png' alt=b><img src='https://elsewhere.test/9999.png' alt=c>";
    assert_eq!(status(&checks(Some("s"), Some(heavy), None, None), "image_weight"), Status::Warn);
    let reused = "<img src='https://uploads.test/600.png' alt=a><img src='https://uploads.test/600.png' alt=a>";
    assert_eq!(status(&checks(Some("s"), Some(reused), None, None), "image_weight"), Status::Pass);
}

#[test]
fn text_and_images_warns_when_the_email_is_mostly_pictures() {
    let poster = "<div style=\"display:none\">a long hidden preheader that does not count as visible text at all, no, not even a little bit of it, however long it goes on and on and on and on</div><img src=a.png alt=x><p>Buy now</p>";
    assert_eq!(status(&checks(Some("s"), Some(poster), None, None), "text_and_images"), Status::Warn);
    let letter = format!("<img src=a.png alt=x><p>{LONG_TEXT}</p>");
    assert_eq!(status(&checks(Some("s"), Some(&letter), None, None), "text_and_images"), Status::Pass);
    assert_eq!(status(&checks(Some("s"), Some("<p>no images</p>"), None, None), "text_and_images"), Status::Pass);
}

#[test]
fn unsubscribe_warns_when_the_body_has_no_link_of_its_own() {
    assert_eq!(status(&checks(Some("{{{UNSUBSCRIBE_URL}}}"), Some("<p>hi</p>"), None, None), "unsubscribe"), Status::Warn);
    assert_eq!(Status::Warn.as_str(), "warn");
    for html in ["<a href=\"{{{PREFERENCES_URL}}}\">prefs</a>", "<a href=\"https://x.test/Unsubscribe?id=1\">leave</a>", "{{{unsubscribe_url}}}"] {
        assert_eq!(status(&checks(Some("s"), Some(html), None, None), "unsubscribe"), Status::Pass, "{html}");
    }
    assert_eq!(status(&checks(Some("s"), None, Some("Leave: https://x.test/unsubscribe/1"), None), "unsubscribe"), Status::Pass);
}
