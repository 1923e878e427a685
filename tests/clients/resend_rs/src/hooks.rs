//! Webhooks: a local receiver on 127.0.0.1, every webhook call, and real deliveries verified
//! (Standard Webhooks HMAC-SHA256; the SDK has no verifier) and parsed with the SDK's types.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use resend_rs::events::{ContactEventType, Event, try_parse_event};
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{CreateContactOptions, CreateWebhookOptions, UpdateWebhookOptions, WebhookEventStatus, WebhookStatus};
use sha2::{Digest, Sha256};
use tokio::io::BufReader;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::check::{Checked, Fail, eq, need, path_at, wait_for};
use crate::proxy::{read_request, respond};
use crate::{App, ensure};

pub struct Delivery {
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Delivery {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_default()
    }
}

/// Collects POSTs on 127.0.0.1 and answers 200.
pub struct Receiver {
    pub url: String,
    received: Arc<Mutex<Vec<Delivery>>>,
    arrived: Arc<Notify>,
}

impl Receiver {
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let (received, arrived) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Notify::new()));
        let (store, bell) = (received.clone(), arrived.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (store, bell) = (store.clone(), bell.clone());
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    if let Ok(Some(request)) = read_request(&mut reader).await {
                        let delivery = Delivery { headers: request.headers, body: String::from_utf8_lossy(&request.body).into_owned() };
                        store.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(delivery);
                        bell.notify_waiters();
                        let _ = respond(reader.get_mut(), 200, &[], b"ok").await;
                    }
                });
            }
        });
        Ok(Self { url, received, arrived })
    }

    /// The next delivery (in arrival order) that `matches`; earlier non-matching ones are dropped.
    pub async fn next(&self, seconds: u64, matches: impl Fn(&Delivery) -> bool) -> Checked<Delivery> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
        loop {
            {
                let mut received = self.received.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                while !received.is_empty() {
                    let one = received.remove(0);
                    if matches(&one) {
                        return Ok(one);
                    }
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Fail::new(format!("no matching delivery reached the receiver within {seconds} s")));
            }
            let _ = tokio::time::timeout(Duration::from_millis(500), self.arrived.notified()).await;
        }
    }
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner_hash = Sha256::new().chain_update(&inner).chain_update(message).finalize();
    Sha256::new().chain_update(&outer).chain_update(inner_hash).finalize().to_vec()
}

/// Checks a delivery's `webhook-signature` (one of its space-separated `v1,<base64>`) against
/// the secret (`whsec_<base64 key>`).
pub fn verify(delivery: &Delivery, secret: &str) -> Checked<()> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let header = |name: &str| delivery.header(name).ok_or_else(|| Fail::new(format!("the delivery has no `{name}` header")));
    let (id, timestamp, signatures) = (header("webhook-id")?, header("webhook-timestamp")?, header("webhook-signature")?);
    let key = b64.decode(secret.trim_start_matches("whsec_")).map_err(|e| Fail::new(format!("the secret is not base64: {e}")))?;
    let expected = format!("v1,{}", b64.encode(hmac_sha256(&key, format!("{id}.{timestamp}.{}", delivery.body).as_bytes())));
    ensure!(signatures.split(' ').any(|s| s == expected), "no signature matches the secret (webhook-signature: {signatures})");
    let sent: i64 = timestamp.parse().map_err(|e| Fail::new(format!("webhook-timestamp {timestamp}: {e}")))?;
    ensure!((chrono::Utc::now().timestamp() - sent).abs() < 300, "webhook-timestamp {timestamp} is not now");
    Ok(())
}

pub async fn webhooks(app: &App) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let hooks = match Receiver::start().await {
        Ok(hooks) => hooks,
        Err(error) => {
            let _ = c.step("webhooks (a receiver on 127.0.0.1)", &[], async { Checked::<()>::Err(Fail::new(error.to_string())) }).await;
            return;
        }
    };

    c.step("webhook signature check (a payload signed here, and a tampered one)", &[], async {
        let secret = format!("whsec_{}", crate::emails::b64(b"0123456789abcdef0123456789abcdef"));
        let body = r#"{"type":"contact.created","created_at":"2026-01-01T00:00:00Z","data":{"id":"c1"}}"#;
        let ts = chrono::Utc::now().timestamp().to_string();
        let key = base64::engine::general_purpose::STANDARD.decode(secret.trim_start_matches("whsec_")).unwrap_or_default();
        let signature = format!("v1,{}", crate::emails::b64(&hmac_sha256(&key, format!("evt_1.{ts}.{body}").as_bytes())));
        let headers = vec![("webhook-id".into(), "evt_1".into()), ("webhook-timestamp".into(), ts), ("webhook-signature".into(), signature)];
        verify(&Delivery { headers: headers.clone(), body: body.into() }, &secret)?;
        ensure!(verify(&Delivery { headers, body: body.replace("c1", "c2") }, &secret).is_err(), "a tampered body verified");
        Ok(())
    })
    .await;

    let created = c
        .step("webhooks.create (an endpoint on 127.0.0.1)", &[], async {
            let answer = c.sdk(r.webhooks.create(CreateWebhookOptions::new(&hooks.url, [ContactEventType::ContactCreated]))).await?;
            ensure!(answer.signing_secret.starts_with("whsec_"), "the secret does not start with whsec_");
            Ok((answer.id.to_string(), answer.signing_secret))
        })
        .await;
    let webhook_id = created.as_ref().map(|(id, _)| id.clone());
    let secret = created.as_ref().map(|(_, s)| s.clone());
    let have = webhook_id.is_some();

    c.step("webhooks.get", &[have], async {
        let found = c.sdk(r.webhooks.get(need(&webhook_id)?)).await?;
        eq((found.id.to_string(), found.endpoint.as_str(), found.status.as_str()), (need(&webhook_id)?.clone(), hooks.url.as_str(), "enabled"), "webhook")?;
        eq(serde_json::to_value(&found.events).unwrap_or_default(), serde_json::json!(["contact.created"]), "events")
    })
    .await;

    c.step("webhooks.list", &[have], async {
        let list = c.sdk(r.webhooks.list(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|w| w.id.as_ref() == webhook_id.as_deref().unwrap_or_default()), "the webhook is not listed");
        Ok(())
    })
    .await;

    let hooks = &hooks;
    let delivered = move |address: String| async move {
        c.sdk(r.contacts.create(CreateContactOptions::new(&address))).await?;
        hooks.next(30, |d| {
            let body = d.json();
            body["type"] == "contact.created" && body["data"]["email"] == address.as_str()
        })
        .await
    };

    let first = c
        .step("a real delivery (contact.created) verifies with the signing secret", &[have], async {
            let delivery = delivered(format!("sdk-hook-{run}@example.test")).await?;
            verify(&delivery, need(&secret)?)?;
            Ok(delivery)
        })
        .await;
    let event_id = first.as_ref().and_then(|d| d.header("webhook-id").map(str::to_owned));

    c.step("events::try_parse_event (the SDK's types read the delivery)", &[first.is_some()], async {
        let delivery = need(&first)?;
        match try_parse_event(&delivery.body) {
            Ok(Event::ContactEvent(event)) => eq(event.data.email, format!("sdk-hook-{run}@example.test"), "data.email"),
            Ok(other) => Err(Fail::new(format!("parsed as another kind of event: {other:?}"))),
            // The SDK's Event is untagged: parse as a contact event to hear which field is refused.
            Err(error) => {
                let detail = match serde_json::from_str::<resend_rs::events::ContactEvent>(&delivery.body) {
                    Err(serde) => format!("as a ContactEvent, at `{}`: {serde}", path_at(&delivery.body, serde.line(), serde.column())),
                    Ok(_) => "it parses as a ContactEvent".to_owned(),
                };
                Err(Fail::new(format!("{error}; {detail}\n      delivery: {}", crate::check::clip(&delivery.body, 800))))
            }
        }
    })
    .await;

    c.step("webhooks.list_events", &[have, event_id.is_some()], async {
        let list = c.sdk(r.webhooks.list_events(need(&webhook_id)?, ListOptions::default().with_limit(100))).await?;
        let found = list.data.iter().find(|e| e.id.as_ref() == event_id.as_deref().unwrap_or_default()).ok_or_else(|| Fail::new("the delivered event is not listed"))?;
        eq(found.event_type.as_str(), "contact.created", "type")
    })
    .await;

    c.step("webhooks.list_event_attempts", &[have, event_id.is_some()], async {
        let attempts = wait_for("the attempt to be recorded", 15, || async {
            let list = c.sdk(r.webhooks.list_event_attempts(need(&webhook_id)?, need(&event_id)?, ListOptions::default())).await?;
            Ok((!list.data.is_empty()).then_some(list.data))
        })
        .await?;
        eq(attempts.first().map(|a| a.http_status_code), Some(200), "the attempt's http_status_code")
    })
    .await;

    c.step("webhooks.get_event", &[have, event_id.is_some()], async {
        let found = c.sdk(r.webhooks.get_event(need(&webhook_id)?, need(&event_id)?)).await?;
        eq((found.id.to_string(), found.event_type.as_str()), (need(&event_id)?.clone(), "contact.created"), "id and type")?;
        ensure!(matches!(found.status, WebhookEventStatus::Success), "status of a delivered event is {:?}", found.status);
        eq(found.payload["data"]["email"].as_str(), Some(format!("sdk-hook-{run}@example.test").as_str()), "payload.data.email")
    })
    .await;

    c.step("webhooks.replay_event (delivered again)", &[have, event_id.is_some()], async {
        let event = need(&event_id)?;
        eq(c.sdk(r.webhooks.replay_event(need(&webhook_id)?, event)).await?.id.to_string(), event.clone(), "id")?;
        hooks.next(15, |d| d.header("webhook-id") == Some(event.as_str())).await?;
        Ok(())
    })
    .await;

    c.step("webhooks.update", &[have], async {
        let id = need(&webhook_id)?;
        let url = format!("{}?v=2", hooks.url);
        let update = UpdateWebhookOptions::default()
            .with_endpoint(&url)
            .with_events([ContactEventType::ContactCreated, ContactEventType::ContactDeleted])
            .with_status(WebhookStatus::Enabled);
        eq(c.sdk(r.webhooks.update(id, update)).await?.id.to_string(), id.clone(), "id")?;
        let found = c.sdk(r.webhooks.get(id)).await?;
        let mut events: Vec<String> = serde_json::to_value(&found.events).ok().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
        events.sort();
        eq((found.endpoint, events), (url, vec!["contact.created".to_owned(), "contact.deleted".to_owned()]), "endpoint and events after update")
    })
    .await;

    c.step("webhooks.rotate_signing_secret (the next delivery verifies with both secrets)", &[have], async {
        let answer = c.sdk(r.webhooks.rotate_signing_secret(need(&webhook_id)?)).await?;
        ensure!(answer.signing_secret.starts_with("whsec_") && &answer.signing_secret != need(&secret)?, "no new secret");
        eq(answer.id.to_string(), need(&webhook_id)?.clone(), "id")?;
        let delivery = delivered(format!("sdk-hook-2-{run}@example.test")).await?;
        verify(&delivery, &answer.signing_secret)?;
        verify(&delivery, need(&secret)?)
    })
    .await;

    c.step("webhooks.delete", &[have], async {
        let id = need(&webhook_id)?;
        eq(c.sdk(r.webhooks.delete(id)).await?, true, "deleted")?;
        c.refused(r.webhooks.get(id), 404).await
    })
    .await;

    for address in [format!("sdk-hook-{run}@example.test"), format!("sdk-hook-2-{run}@example.test")] {
        let _ = r.contacts.delete(&address).await;
    }
}
