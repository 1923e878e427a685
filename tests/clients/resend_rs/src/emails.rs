//! Emails (send, get, list, attachments, share, metrics, schedule), batch sends, templates.

use base64::Engine;
use resend_rs::idempotent::IdempotentTrait;
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{
    BatchValidation, CreateAttachment, CreateEmailBaseOptions, CreateTemplateOptions, EmailEvent, EmailTemplate, GetEmailMetricsOptions,
    ShareEmailOptions, Tag, TemplateEvent, UpdateEmailOptions, UpdateTemplateOptions, Variable, VariableType,
};
use serde_json::json;

use crate::check::{Checked, Fail, eq, need};
use crate::{App, BCC, CC, DELIVERED, ensure};

pub const TEXT_BYTES: &[u8] = b"Hello from the Resend Rust SDK.\r\n";
const BINARY_BYTES: &[u8] = &[0, 1, 2, 3, 254, 255, b'b', b'i', b'n'];

/// An instant `minutes` from now, to the second, as the SDKs send it.
pub fn iso_in(minutes: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::minutes(minutes)).format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn same_instant(a: Option<&str>, b: &str) -> bool {
    let parse = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok().or_else(|| chrono::DateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f%#z").ok());
    matches!((a.and_then(parse), parse(b)), (Some(x), Some(y)) if (x - y).num_milliseconds().abs() < 1000)
}

/// The bytes behind a download URL the SDK answered. The URL is on Herald's public base URL,
/// which in a test server is not the address it listens on: its path is fetched from
/// HERALD_BASE_URL.
pub async fn download(app: &App, url: &str) -> Checked<Vec<u8>> {
    let path = url.find("://").and_then(|i| url[i + 3..].find('/').map(|j| &url[i + 3 + j..])).ok_or_else(|| Fail::new(format!("download_url {url} has no path")))?;
    let url = &format!("{}{path}", app.e.base);
    let response = app.http.get(url).send().await.map_err(|e| Fail::new(format!("GET {url}: {e}")))?;
    ensure!(response.status().is_success(), "GET {url} answered {}", response.status());
    Ok(response.bytes().await.map_err(|e| Fail::new(format!("GET {url}: {e}")))?.to_vec())
}

pub async fn emails(app: &App) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let subject = format!("SDK check {run}");
    let html = "<p>Hello from the <b>Rust SDK</b></p>";
    let text = "Hello from the Rust SDK";
    let reply_to = format!("reply-{run}@example.test");
    let params = CreateEmailBaseOptions::new(&app.e.from, [DELIVERED], &subject)
        .with_cc(CC)
        .with_bcc(BCC)
        .with_html(html)
        .with_text(text)
        .with_reply(&reply_to)
        .with_header("X-Sdk-Check", run)
        .with_tag(Tag::new("category", "sdk_check"))
        .with_tag(Tag::new("run", run))
        .with_attachment(CreateAttachment::from_content(TEXT_BYTES.to_vec()).with_filename("hello.txt"));
    let key = format!("sdk-rust-{run}");

    let email_id = c
        .step("emails.send (attachment, tags, headers, idempotency key)", &[], async {
            let answer = c.sdk(r.emails.send(params.clone().with_idempotency_key(&key))).await?;
            ensure!(!answer.id.is_empty(), "empty id");
            Ok(answer.id.to_string())
        })
        .await;

    c.step("emails.send (same idempotency key answers the same id)", &[email_id.is_some()], async {
        let answer = c.sdk(r.emails.send(params.clone().with_idempotency_key(&key))).await?;
        eq(answer.id.to_string(), need(&email_id)?.clone(), "id of the replayed send")
    })
    .await;

    let bytes_id = c
        .step("emails.send (binary attachment with content_type)", &[], async {
            let email = CreateEmailBaseOptions::new(&app.e.from, [DELIVERED], format!("SDK bytes {run}")).with_text("bytes").with_attachment(
                CreateAttachment::from_content(BINARY_BYTES.to_vec()).with_filename("data.bin").with_content_type("application/octet-stream"),
            );
            Ok(c.sdk(r.emails.send(email)).await?.id.to_string())
        })
        .await;

    c.diverge_step("emails.get", "email.tags", &[email_id.is_some()], async {
        let id = need(&email_id)?;
        let email = c.sdk(r.emails.get(id)).await?;
        eq(email.id.to_string(), id.clone(), "id")?;
        eq(email.from.as_str(), app.e.from.as_str(), "from")?;
        eq(&email.to, &vec![DELIVERED.to_owned()], "to")?;
        eq((&email.cc, &email.bcc), (&vec![CC.to_owned()], &vec![BCC.to_owned()]), "cc and bcc")?;
        eq(email.subject.as_str(), subject.as_str(), "subject")?;
        eq(email.html.as_deref(), Some(html), "html")?;
        eq(email.text.as_deref(), Some(text), "text")?;
        eq(email.reply_to.clone(), Some(vec![reply_to.clone()]), "reply_to")?;
        ensure!(
            matches!(email.last_event, EmailEvent::Queued | EmailEvent::Sent | EmailEvent::Delivered),
            "last_event is {:?}",
            email.last_event
        );
        ensure!(!email.created_at.is_empty(), "empty created_at");
        Ok(())
    })
    .await;

    c.step("emails.list", &[email_id.is_some()], async {
        let list = c.sdk(r.emails.list(ListOptions::default().with_limit(100))).await?;
        let found = list.data.iter().find(|e| e.id.as_ref() == email_id.as_deref().unwrap_or_default()).ok_or_else(|| Fail::new("the sent email is not in the list"))?;
        eq(found.subject.as_str(), subject.as_str(), "subject in the list")
    })
    .await;

    c.step("emails.list (limit, list_after)", &[email_id.is_some()], async {
        let first = c.sdk(r.emails.list(ListOptions::default().with_limit(1))).await?;
        eq((first.data.len(), first.has_more), (1, true), "one email and has_more")?;
        let after = first.data.first().map(|e| e.id.to_string()).unwrap_or_default();
        let second = c.sdk(r.emails.list(ListOptions::default().with_limit(1).list_after(&after))).await?;
        ensure!(second.data.len() == 1 && second.data.first().is_some_and(|e| e.id.as_ref() != after.as_str()), "`after` did not move to the next email");
        Ok(())
    })
    .await;

    let attachment_id = c
        .step("emails.list_attachments", &[email_id.is_some()], async {
            let list = c.sdk(r.emails.list_attachments(need(&email_id)?, ListOptions::default())).await?;
            let found = list.data.iter().find(|a| a.filename.as_deref() == Some("hello.txt")).ok_or_else(|| Fail::new("hello.txt is not listed"))?;
            eq(found.size as usize, TEXT_BYTES.len(), "size")?;
            Ok(found.id.to_string())
        })
        .await;

    c.step("emails.get_attachment (download_url reads back the bytes)", &[attachment_id.is_some()], async {
        let found = c.sdk(r.emails.get_attachment(need(&email_id)?, need(&attachment_id)?)).await?;
        eq(found.filename.as_deref(), Some("hello.txt"), "filename")?;
        ensure!(found.content_type.starts_with("text/plain"), "content_type is {}", found.content_type);
        eq(download(app, &found.download_url).await?, TEXT_BYTES.to_vec(), "the downloaded bytes")
    })
    .await;

    c.step("emails.get_attachment (the binary attachment)", &[bytes_id.is_some()], async {
        let id = need(&bytes_id)?;
        let list = c.sdk(r.emails.list_attachments(id, ListOptions::default())).await?;
        eq(list.data.len(), 1, "attachments")?;
        let listed = list.data.first().map(|a| a.id.to_string()).unwrap_or_default();
        let found = c.sdk(r.emails.get_attachment(id, &listed)).await?;
        eq(found.content_type.as_str(), "application/octet-stream", "content_type")?;
        eq(download(app, &found.download_url).await?, BINARY_BYTES.to_vec(), "the downloaded bytes")
    })
    .await;

    c.step("emails.share", &[email_id.is_some()], async {
        let answer = c.sdk(r.emails.share(need(&email_id)?, ShareEmailOptions::new().with_expires_in("1h"))).await?;
        ensure!(answer.url.contains("/share/"), "url is {}", answer.url);
        eq(answer.id.to_string(), need(&email_id)?.clone(), "id (the SDK declares the email's id)")
    })
    .await;

    c.step("emails.metrics", &[email_id.is_some()], async {
        let metrics = c.sdk(r.emails.metrics(GetEmailMetricsOptions::default())).await?;
        let received = metrics.totals.get("received").copied().unwrap_or_default();
        ensure!(received >= 1.0, "totals.received is {received}");
        Ok(())
    })
    .await;

    c.step("emails.metrics (start_date, end_date, email_id)", &[email_id.is_some()], async {
        let today = chrono::Utc::now().date_naive();
        let start = (today - chrono::Duration::days(1)).to_string();
        let options = GetEmailMetricsOptions::default().with_start_date(&start).with_end_date(&today.to_string()).with_email_id(need(&email_id)?);
        let metrics = c.sdk(r.emails.metrics(options)).await?;
        eq(metrics.start_date.get(..10), Some(start.as_str()), "start_date")
    })
    .await;
}

pub async fn scheduled(app: &App) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let at = iso_in(60);
    let email_id = c
        .step("emails.send (scheduled_at)", &[], async {
            let email = CreateEmailBaseOptions::new(&app.e.from, [DELIVERED], format!("SDK scheduled {run}")).with_text("later").with_scheduled_at(&at);
            Ok(c.sdk(r.emails.send(email)).await?.id.to_string())
        })
        .await;

    c.step("emails.get (scheduled)", &[email_id.is_some()], async {
        let email = c.sdk(r.emails.get(need(&email_id)?)).await?;
        eq(email.last_event, EmailEvent::Scheduled, "last_event")?;
        ensure!(same_instant(email.scheduled_at.as_deref(), &at), "scheduled_at is {:?}, sent {at}", email.scheduled_at);
        Ok(())
    })
    .await;

    let later = iso_in(120);
    c.step("emails.update (reschedule)", &[email_id.is_some()], async {
        let id = need(&email_id)?;
        eq(c.sdk(r.emails.update(id, UpdateEmailOptions::new().with_scheduled_at(&later))).await?.id.to_string(), id.clone(), "id")?;
        let email = c.sdk(r.emails.get(id)).await?;
        ensure!(same_instant(email.scheduled_at.as_deref(), &later), "scheduled_at is {:?} after the update to {later}", email.scheduled_at);
        Ok(())
    })
    .await;

    c.step("emails.cancel", &[email_id.is_some()], async {
        let id = need(&email_id)?;
        eq(c.sdk(r.emails.cancel(id)).await?.id.to_string(), id.clone(), "id")?;
        eq(c.sdk(r.emails.get(id)).await?.last_event, EmailEvent::Canceled, "last_event after cancel")
    })
    .await;
}

pub async fn batch(app: &App) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let items: Vec<CreateEmailBaseOptions> = (0..2)
        .map(|i| {
            CreateEmailBaseOptions::new(&app.e.from, [DELIVERED], format!("SDK batch {i} {run}"))
                .with_text(&format!("batch {i}"))
                .with_tag(Tag::new("batch", &i.to_string()))
        })
        .collect();
    let key = format!("sdk-rust-batch-{run}");

    let ids = c
        .step("batch.send (idempotency key)", &[], async {
            let answer = c.sdk(r.batch.send(items.clone().with_idempotency_key(&key))).await?;
            let ids: Vec<String> = answer.iter().map(|one| one.id.to_string()).collect();
            eq(ids.len(), 2, "ids answered")?;
            let second = c.sdk(r.emails.get(ids.get(1).map_or("", String::as_str))).await?;
            eq(second.subject, format!("SDK batch 1 {run}"), "the second email's subject")?;
            Ok(ids)
        })
        .await;

    c.step("batch.send (same idempotency key answers the same ids)", &[ids.is_some()], async {
        let answer = c.sdk(r.batch.send(items.clone().with_idempotency_key(&key))).await?;
        eq(answer.iter().map(|one| one.id.to_string()).collect::<Vec<_>>(), need(&ids)?.clone(), "ids of the replay")
    })
    .await;

    c.step("batch.send_with_batch_validation (strict)", &[], async {
        let answer = c.sdk(r.batch.send_with_batch_validation(items[..1].to_vec(), BatchValidation::Strict)).await?;
        eq(answer.data.len(), 1, "ids answered")
    })
    .await;

    c.step("batch.send_with_batch_validation (permissive: the valid email goes, `errors` names the rest)", &[], async {
        let bad = CreateEmailBaseOptions::new(&app.e.from, ["not-an-address"], format!("SDK batch bad {run}")).with_text("bad");
        let answer = c.sdk(r.batch.send_with_batch_validation(vec![items[0].clone(), bad], BatchValidation::Permissive)).await?;
        eq(answer.data.len(), 1, "ids answered (the valid email is sent)")?;
        eq(answer.errors.iter().map(|e| e.index).collect::<Vec<_>>(), vec![1], "indexes of the refused emails")
    })
    .await;
}

/// Templates; answers the published template's id (the automation sends it), removed later.
pub async fn templates(app: &App) -> Option<String> {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let name = format!("SDK template {run}");
    let alias = format!("sdk-template-{run}");
    let html = "<p>Hello {{NAME}} from the Rust SDK</p>";
    c.step("templates.create (Resend's `{{{NAME}}}` placeholders are refused: `template.placeholders`)", &[], async {
        let options = CreateTemplateOptions::new(format!("{name} triple"), "<p>Hello {{{NAME}}}</p>")
            .with_subject("Hello {{{NAME}}}")
            .with_variable(Variable::new("NAME", VariableType::String).with_fallback("friend"));
        // Document B fixes `{{key}}` for templates; the table in docs/decisions.md lists it.
        c.refused(r.templates.create(options), 422).await
    })
    .await;

    // Herald's code templates write placeholders `{{NAME}}` (openapi: CreateTemplate.html).
    let template_id = c
        .step("templates.create", &[], async {
            let options = CreateTemplateOptions::new(&name, html)
                .with_alias(&alias)
                .with_from(&app.e.from)
                .with_subject(&format!("SDK template {run} for {{{{NAME}}}}"))
                .with_text("Hello {{NAME}}")
                .with_variable(Variable::new("NAME", VariableType::String).with_fallback("friend"));
            Ok(c.sdk(r.templates.create(options)).await?.id.to_string())
        })
        .await;

    c.step("templates.get (by id and by alias)", &[template_id.is_some()], async {
        let id = need(&template_id)?;
        let found = c.sdk(r.templates.get(id)).await?;
        eq((found.id.to_string(), found.name.as_str(), found.alias.as_deref()), (id.clone(), name.as_str(), Some(alias.as_str())), "id, name, alias")?;
        eq(found.status, TemplateEvent::Draft, "status of a new template")?;
        eq(found.html.as_deref(), Some(html), "html")?;
        eq(found.variables.iter().map(|v| v.key.as_str()).collect::<Vec<_>>(), vec!["NAME"], "variables")?;
        eq(c.sdk(r.templates.get(&alias)).await?.id.to_string(), id.clone(), "id by alias")
    })
    .await;

    let html2 = "<p>Hi {{NAME}}, again from the Rust SDK</p>";
    c.step("templates.update", &[template_id.is_some()], async {
        let id = need(&template_id)?;
        let update = UpdateTemplateOptions::new(&name, html2)
            .with_alias(&alias)
            .with_from(&app.e.from)
            .with_subject(&format!("SDK template {run}"))
            .with_variable(Variable::new("NAME", VariableType::String).with_fallback("friend"));
        eq(c.sdk(r.templates.update(id, update)).await?.id.to_string(), id.clone(), "id")?;
        eq(c.sdk(r.templates.get(id)).await?.html.as_deref(), Some(html2), "html after update")
    })
    .await;

    c.step("templates.publish", &[template_id.is_some()], async {
        let id = need(&template_id)?;
        eq(c.sdk(r.templates.publish(id)).await?.id.to_string(), id.clone(), "id")?;
        let found = c.sdk(r.templates.get(id)).await?;
        eq(found.status, TemplateEvent::Published, "status after publish")?;
        ensure!(found.published_at.is_some(), "no published_at");
        Ok(())
    })
    .await;

    c.step("templates.duplicate (and templates.delete of the copy)", &[template_id.is_some()], async {
        let id = need(&template_id)?;
        let copy = c.sdk(r.templates.duplicate(id)).await?.id.to_string();
        ensure!(&copy != id, "the copy has the original's id");
        let found = c.sdk(r.templates.get(&copy)).await?;
        eq(found.html.as_deref(), Some(html2), "the copy's html")?;
        let deleted = c.sdk(r.templates.delete(&copy)).await?;
        eq((deleted.id.to_string(), deleted.deleted), (copy.clone(), true), "id and deleted")?;
        c.refused(r.templates.get(&copy), 404).await
    })
    .await;

    c.step("templates.list", &[template_id.is_some()], async {
        let list = c.sdk(r.templates.list(ListOptions::default().with_limit(100))).await?;
        let found = list.data.iter().find(|t| t.id.as_ref() == template_id.as_deref().unwrap_or_default()).ok_or_else(|| Fail::new("the template is not listed"))?;
        eq(found.name.as_str(), name.as_str(), "name in the list")
    })
    .await;

    c.step("emails.send (template with variables)", &[template_id.is_some()], async {
        let email = CreateEmailBaseOptions::new(&app.e.from, [DELIVERED], format!("SDK template send {run}"))
            .with_template(EmailTemplate::new(need(&template_id)?).with_variable("NAME", json!("Ada")));
        let id = c.sdk(r.emails.send(email)).await?.id.to_string();
        let sent = c.sdk(r.emails.get(&id)).await?;
        ensure!(sent.html.as_deref().is_some_and(|h| h.contains("Hi Ada")), "html is {:?}", sent.html);
        Ok(())
    })
    .await;
    template_id
}

pub async fn remove_template(app: &App, template_id: Option<&str>) {
    let (c, r) = (&app.c, &app.r);
    c.step("templates.delete", &[template_id.is_some()], async {
        let id = template_id.unwrap_or_default();
        let deleted = c.sdk(r.templates.delete(id)).await?;
        eq((deleted.id.to_string(), deleted.deleted), (id.to_owned(), true), "id and deleted")?;
        c.refused(r.templates.get(id), 404).await
    })
    .await;
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
