//! Received mail and domain claims in the dashboard (#28): mail received at a domain listed on
//! its page and on its own pages (text, headers, HTML in a frame that runs no script, another
//! team's id the not-found page), and a name another team verified claimed from the add form,
//! its TXT record shown on the domain's page.

use serde_json::json;
use tests::dashboard::{get, post};
use tests::eventually;
use tests::inbox::{desk, person};
use tests::mail::SENDING_DOMAIN;

#[tokio::test]
async fn mail_received_at_a_domain_shows_on_its_page_and_its_own_with_the_html_framed_and_scripts_off() {
    let desk = desk().await;
    let app = desk.app();
    let admin = &desk.admin;
    let raw = format!(
        "From: Dora <dora@customer.example>\r\nTo: orders@{SENDING_DOMAIN}\r\nSubject: Order <17>\r\nMessage-ID: <order17@customer.example>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nWhere is order 17?\r\n--b\r\nContent-Type: text/html\r\n\r\n\
         <p>Where is <b>order 17</b>?</p><script>alert(1)</script><img src=\"https://tracker.example/p.gif\">\r\n--b--\r\n"
    );
    tests::smtp::submit(desk.smtp_port, "dora@customer.example", &format!("orders@{SENDING_DOMAIN}"), raw.as_bytes()).await.expect("the inbound server takes the message");
    let id: String = eventually(|| async { app.get("/emails/receiving").await.body["data"][0]["id"].as_str().map(str::to_string) }).await;

    let (status, list) = get(app, admin, "/app/receiving").await;
    assert_eq!(status, 200);
    assert!(list.contains(&format!("href=\"/app/receiving/{id}\"")) && list.contains("Order &lt;17&gt;"), "the subject escaped: {list}");
    let domain = desk.mail.domain["id"].as_str().unwrap();
    let (_, domain_page) = get(app, admin, &format!("/app/domains/{domain}")).await;
    assert!(domain_page.contains("Received mail") && domain_page.contains(&format!("href=\"/app/receiving/{id}\"")), "{domain_page}");

    let (status, page) = get(app, admin, &format!("/app/receiving/{id}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("Where is order 17?") && page.contains("order17@customer.example") && page.contains("sandbox"), "{page}");
    assert!(!page.contains("<script>alert"), "the page itself carries none of the email's HTML");
    let frame = tests::dashboard::browser().get(app.url(&format!("/app/receiving/{id}/preview"))).header("cookie", format!("herald_session={}", admin.cookie)).send().await.unwrap();
    let policy = frame.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(policy.contains("sandbox") && policy.contains("default-src 'none'") && policy.contains("img-src data:"), "no script, no remote image: {policy}");
    assert!(frame.text().await.unwrap().contains("<b>order 17</b>"));

    let (other, _) = api::cli::create_team(&app.pool, "Other").await.unwrap();
    let stranger = person(app, other, "admin", "Sam").await;
    let (status, foreign) = get(app, &stranger, &format!("/app/receiving/{id}")).await;
    assert_eq!(status, 404);
    assert!(!foreign.contains("order 17"));
}

#[tokio::test]
async fn a_name_another_team_verified_is_claimed_from_the_add_form_and_its_record_shows_on_the_domain_page() {
    let app = tests::TestApp::spawn_unthrottled().await;
    tests::mail::verified_domain(&app, "held.test", json!({})).await;
    let (other, _) = api::cli::create_team(&app.pool, "Claimant").await.unwrap();
    let claimant = person(&app, other, "admin", "Cy").await;

    let (status, _, page) = post(&app, &claimant, "/app/domains", &[("name", "held.test")]).await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("action=\"/app/domains/claim\"") && page.contains("Claim held.test"), "the refusal offers the claim: {page}");
    let (status, location, page) = post(&app, &claimant, "/app/domains/claim", &[("name", "held.test")]).await;
    assert_eq!(status, 303, "{page}");
    let (_, domain_page) = get(&app, &claimant, &location.unwrap()).await;
    assert!(domain_page.contains("svc-domain-verification=") && domain_page.contains("Copy the claim record"), "{domain_page}");
    let (status, _, _) = post(&app, &claimant, "/app/domains/claim", &[("name", "nobody.test")]).await;
    assert_eq!(status, 422, "a name no team holds is not claimed");
    let copies: i64 = sqlx::query_scalar("SELECT count(*) FROM domains WHERE team_id = $1").bind(other).fetch_one(&app.pool).await.unwrap();
    assert_eq!(copies, 1, "one claim, one copy");
}
