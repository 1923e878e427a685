//! The root index and the browsable API reference: served from the binary, without a key, at the
//! root and under `/api/v1`.

use tests::{Answer, TestApp};

/// Every `<tag …>` opening in `html` whose name is `tag`, attributes included.
fn openings<'a>(html: &'a str, tag: &str) -> Vec<&'a str> {
    let lower = html.to_ascii_lowercase();
    let needle = format!("<{tag}");
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find(&needle) {
        let start = from + at;
        let end = lower[start..].find('>').map_or(html.len(), |e| start + e + 1);
        if lower[start + needle.len()..].starts_with(|c: char| c.is_ascii_whitespace() || c == '>') {
            found.push(&html[start..end]);
        }
        from = start + needle.len();
    }
    found
}

async fn reference(app: &TestApp, path: &str) -> (u16, String, String) {
    let response = app.client.get(app.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    (status, content_type, response.text().await.unwrap())
}

#[tokio::test]
async fn docs_is_a_page_loading_nothing_from_the_network_and_showing_the_served_document() {
    let app = TestApp::spawn().await;
    for path in ["/docs", "/docs/", "/api/v1/docs"] {
        let (status, content_type, page) = reference(&app, path).await;
        assert_eq!(status, 200, "{path}");
        assert!(content_type.starts_with("text/html"), "{path}: {content_type}");
        for script in openings(&page, "script") {
            assert!(!script.to_ascii_lowercase().contains("src="), "{path}: a script loaded from elsewhere: {script}");
        }
        for tag in ["link", "img", "iframe"].iter().flat_map(|tag| openings(&page, tag)) {
            assert!(!tag.contains("http://") && !tag.contains("https://") && !tag.contains("//"), "{path}: {tag}");
        }
        let lower = page.to_ascii_lowercase();
        for fetch in ["url(http", "url(\"http", "url('http", "url(//", "@import"] {
            assert!(!lower.contains(fetch), "{path}: the style fetches {fetch}");
        }
        // The document in the page is the one `/openapi.json` serves, not poem-openapi's raw one.
        let served = Answer::from(app.client.get(app.url("/openapi.json")).send().await.unwrap()).await;
        assert!(page.contains(&serde_json::to_string(&served.body).unwrap().replace("</", "<\\/")), "{path}");
        assert!(page.contains("\"openapi\":\"3.1.0\"") && page.contains("x-svc-permission"), "{path}");
    }
}

#[tokio::test]
async fn the_root_is_an_index_whose_links_all_answer() {
    let app = TestApp::spawn().await;
    for root in ["/", "/api/v1", "/api/v1/"] {
        let index = Answer::from(app.client.get(app.url(root)).send().await.unwrap()).await;
        assert_eq!(index.status, 200, "{root}: {}", index.body);
        assert_eq!(
            index.body,
            serde_json::json!({
                "name": "Herald",
                "version": "1.0.0",
                "docs": "/docs",
                "openapi": "/openapi.json",
                "health": "/health",
            }),
            "{root}"
        );
    }
    let index = Answer::from(app.client.get(app.url("/")).send().await.unwrap()).await;
    for link in ["docs", "openapi", "health"] {
        let path = index.body[link].as_str().unwrap();
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{link}: {path}");
    }
}

#[tokio::test]
async fn the_index_and_docs_need_no_key_and_ignore_a_bad_one() {
    let app = TestApp::spawn().await;
    for path in ["/", "/docs"] {
        let response = app.request_as("rk_not_a_key", reqwest::Method::GET, path).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let answer = Answer::from(app.client.post(app.url("/")).send().await.unwrap()).await;
    answer.assert_error(404, "not_found");
}
