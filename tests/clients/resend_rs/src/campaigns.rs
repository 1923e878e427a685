//! Broadcasts through the SDK, to a segment holding the mailbox simulator.

use resend_rs::list_opts::ListOptions;
use resend_rs::types::{BroadcastRecipientEventType, CreateBroadcastOptions, CreateContactOptions, ListRecipientsOptions, SendBroadcastOptions, UpdateBroadcastOptions};
use serde_json::json;
use crate::check::{Checked, Fail, eq, need, wait_for};
use crate::emails::iso_in;
use crate::{App, DELIVERED, ensure};

/// A segment holding the contact `delivered@simulator.herald.test` (made here when missing).
async fn delivered_segment(app: &App, name: &str) -> Checked<String> {
    let (c, r) = (&app.c, &app.r);
    let segment = c.sdk(r.segments.create(name)).await?.id.to_string();
    if r.contacts.get(DELIVERED).await.is_err() {
        c.sdk(r.contacts.create(CreateContactOptions::new(DELIVERED).with_first_name("Dee"))).await?;
    }
    let _ = c.sdk(r.contacts.add_contact_segment(DELIVERED, &segment)).await?;
    Ok(segment)
}

pub async fn broadcasts(app: &App) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    // Every marketing email carries the team's postal address; the SDK has no call to set it.
    c.step("PATCH /team postal_address (raw HTTP, no SDK call: a broadcast needs it)", &[], async {
        let response = app
            .http
            .patch(format!("{}/team", app.e.base))
            .bearer_auth(&app.e.api_key)
            .json(&json!({ "postal_address": { "line1": "1 SDK Street", "city": "Testville", "postal_code": "12345", "country": "US" } }))
            .send()
            .await
            .map_err(|e| Fail::new(format!("PATCH /team: {e}")))?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        ensure!(status.is_success(), "PATCH /team answered {status} {body}");
        Ok(())
    })
    .await;
    let segment = c.step("segments.create (for broadcasts, with a delivered@ contact)", &[], delivered_segment(app, &format!("SDK broadcast {run}"))).await;
    let have_segment = segment.is_some();
    let name = format!("SDK broadcast {run}");
    let subject = format!("SDK broadcast {run}");
    let draft = |label: &str| {
        CreateBroadcastOptions::new(segment.as_deref().unwrap_or_default(), &app.e.from, &subject)
            .with_name(&format!("{name} {label}"))
            .with_html("<p>Hello from a <a href=\"https://example.test/sdk\">broadcast</a></p>")
            .with_text("Hello from a broadcast")
    };

    let id = c.step("broadcasts.create", &[have_segment], async { Ok(c.sdk(r.broadcasts.create(draft("main"))).await?.id.to_string()) }).await;

    c.step("broadcasts.get", &[id.is_some()], async {
        let found = c.sdk(r.broadcasts.get(need(&id)?)).await?;
        eq((found.id.to_string(), found.name.clone(), found.audience_id.to_string()), (need(&id)?.clone(), format!("{name} main"), need(&segment)?.clone()), "id, name, audience_id")?;
        eq((found.status.as_str(), found.subject.as_deref()), ("draft", Some(subject.as_str())), "status and subject")
    })
    .await;

    let subject2 = format!("{subject} (updated)");
    c.step("broadcasts.update", &[id.is_some()], async {
        let id = need(&id)?;
        eq(c.sdk(r.broadcasts.update(id, UpdateBroadcastOptions::new().with_subject(&subject2))).await?.id.to_string(), id.clone(), "id")?;
        eq(c.sdk(r.broadcasts.get(id)).await?.subject, Some(subject2.clone()), "subject after update")
    })
    .await;

    c.step("broadcasts.list", &[id.is_some()], async {
        let list = c.sdk(r.broadcasts.list(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|b| b.id.as_ref() == id.as_deref().unwrap_or_default()), "the broadcast is not listed");
        Ok(())
    })
    .await;

    let sent = c
        .step("broadcasts.send", &[id.is_some()], async {
            let id = need(&id)?;
            eq(c.sdk(r.broadcasts.send(SendBroadcastOptions::new(id))).await?.id.to_string(), id.clone(), "id")?;
            wait_for("the broadcast to be sent", 60, || async {
                let found = c.sdk(r.broadcasts.get(id)).await?;
                Ok((found.status == "sent").then_some(()))
            })
            .await
        })
        .await;

    c.step("broadcasts.recipients (delivered)", &[sent.is_some()], async {
        wait_for("delivered@ among the delivered recipients", 60, || async {
            let list = c.sdk(r.broadcasts.recipients(need(&id)?, ListRecipientsOptions::new(BroadcastRecipientEventType::Delivered))).await?;
            Ok(list.data.iter().any(|x| x.email == DELIVERED).then_some(()))
        })
        .await
    })
    .await;

    c.step("broadcasts.clicked_links", &[sent.is_some()], async {
        let list = c.sdk(r.broadcasts.clicked_links(need(&id)?, ListOptions::default())).await?;
        ensure!(list.data.iter().all(|l| l.clicks >= l.unique_clicks), "clicks below unique_clicks: {:?}", list.data);
        Ok(())
    })
    .await;

    c.step("broadcasts.duplicate (and broadcasts.delete of the draft copy)", &[id.is_some()], async {
        let copy = c.sdk(r.broadcasts.duplicate(need(&id)?)).await?.id.to_string();
        ensure!(&copy != need(&id)?, "the copy has the original's id");
        let found = c.sdk(r.broadcasts.get(&copy)).await?;
        eq((found.status.as_str(), found.subject), ("draft", Some(subject2.clone())), "the copy's status and subject")?;
        eq(c.sdk(r.broadcasts.delete(&copy)).await?, true, "deleted")?;
        c.refused(r.broadcasts.get(&copy), 404).await
    })
    .await;

    c.step("broadcasts.delete (a draft)", &[have_segment], async {
        let other = c.sdk(r.broadcasts.create(draft("draft"))).await?.id.to_string();
        eq(c.sdk(r.broadcasts.delete(&other)).await?, true, "deleted")?;
        c.refused(r.broadcasts.get(&other), 404).await
    })
    .await;

    c.step("broadcasts.cancel (a scheduled one)", &[have_segment], async {
        let other = c.sdk(r.broadcasts.create(draft("scheduled"))).await?.id.to_string();
        let at = iso_in(60);
        c.sdk(r.broadcasts.send(SendBroadcastOptions::new(&other).with_scheduled_at(&at))).await?;
        let found = c.sdk(r.broadcasts.get(&other)).await?;
        eq(found.status.as_str(), "scheduled", "status once scheduled")?;
        eq(c.sdk(r.broadcasts.cancel(&other)).await?.id.to_string(), other.clone(), "id")?;
        let found = c.sdk(r.broadcasts.get(&other)).await?;
        ensure!(found.status != "scheduled", "still scheduled after cancel");
        Ok(())
    })
    .await;

    if let Some(segment) = segment {
        let _ = r.segments.delete(&segment).await;
    }
}
