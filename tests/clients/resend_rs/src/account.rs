//! Domains, API keys and request logs through the SDK.

use resend_rs::list_opts::ListOptions;
use resend_rs::types::{CreateApiKeyOptions, CreateDomainOptions, CreateEmailBaseOptions, DomainChanges, DomainId, DomainRecord, DomainStatus, Region, Tls, UpdateApiKeyOptions};
use crate::check::{Fail, eq, need, wait_for};
use crate::{App, DELIVERED, ensure};

pub async fn domains(app: &App) {
    let (c, r) = (&app.c, &app.r);
    let name = format!("sdk-rust-{}.test", app.e.run);
    let id = c
        .step("domains.create", &[], async {
            let domain = c.sdk(r.domains.create(CreateDomainOptions::new(&name).with_region(Region::UsEast1).with_custom_return_path("bounces"))).await?;
            eq(domain.name.as_str(), name.as_str(), "name")?;
            ensure!(!matches!(domain.status, DomainStatus::Verified), "a new domain is verified");
            let records = domain.records.unwrap_or_default();
            ensure!(records.iter().any(|r| matches!(r, DomainRecord::DomainDkimRecord(_))), "no DKIM record");
            ensure!(
                records.iter().any(|r| matches!(r, DomainRecord::DomainSpfRecord(spf) if spf.name.starts_with("bounces"))),
                "no SPF record on the return path `bounces`"
            );
            Ok(domain.id.to_string())
        })
        .await;

    c.step("domains.get", &[id.is_some()], async {
        let domain = c.sdk(r.domains.get(need(&id)?)).await?;
        eq((domain.id.to_string(), domain.name.as_str()), (need(&id)?.clone(), name.as_str()), "id and name")?;
        ensure!(domain.records.is_some_and(|r| !r.is_empty()), "no records");
        Ok(())
    })
    .await;

    c.step("domains.list", &[id.is_some()], async {
        let list = c.sdk(r.domains.list(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|d| d.id.as_ref() == id.as_deref().unwrap_or_default()), "the new domain is not listed");
        ensure!(list.data.iter().any(|d| d.id.as_ref() == app.e.domain_id), "HERALD_DOMAIN_ID is not listed");
        Ok(())
    })
    .await;

    c.step("domains.update", &[id.is_some()], async {
        let id = need(&id)?;
        let changes = DomainChanges::new().with_open_tracking(true).with_click_tracking(true).with_tls(Tls::Enforced);
        eq(c.sdk(r.domains.update(id, changes)).await?.id.to_string(), id.clone(), "id")?;
        let domain = c.sdk(r.domains.get(id)).await?;
        eq((domain.open_tracking, domain.click_tracking), (Some(true), Some(true)), "tracking after update")
    })
    .await;

    c.step("domains.verify (records not published)", &[id.is_some()], async {
        let id = need(&id)?;
        eq(c.sdk(r.domains.verify(id)).await?.id.to_string(), id.clone(), "id")?;
        let domain = c.sdk(r.domains.get(id)).await?;
        ensure!(!matches!(domain.status, DomainStatus::Verified), "an unpublished domain verified");
        Ok(())
    })
    .await;

    c.step("domains.delete", &[id.is_some()], async {
        let id = need(&id)?;
        let deleted = c.sdk(r.domains.delete(id)).await?;
        eq((deleted.id.to_string(), deleted.deleted), (id.clone(), true), "id and deleted")?;
        c.refused(r.domains.get(id), 404).await
    })
    .await;
}

pub async fn api_keys(app: &App) {
    let (c, r) = (&app.c, &app.r);
    let name = format!("sdk-rust-{}", app.e.run);
    let created = c
        .step("api_keys.create (sending access, one domain)", &[], async {
            let options = CreateApiKeyOptions::new(&name).with_sending_access().with_domain_access(&DomainId::new(&app.e.domain_id));
            let answer = c.sdk(r.api_keys.create(options)).await?;
            ensure!(answer.token.starts_with("rk_"), "the token does not start with rk_");
            Ok((answer.id.to_string(), answer.token))
        })
        .await;
    let id = created.as_ref().map(|(id, _)| id.clone());

    c.step("emails.send (with the new sending key)", &[id.is_some()], async {
        let other = app.with_key(&need(&created)?.1).map_err(Fail::new)?;
        let email = CreateEmailBaseOptions::new(&app.e.from, [DELIVERED], format!("SDK pinned key {}", app.e.run)).with_text("pinned");
        ensure!(!c.sdk(other.emails.send(email)).await?.id.is_empty(), "empty id");
        Ok(())
    })
    .await;

    c.step("api_keys.list", &[id.is_some()], async {
        let list = c.sdk(r.api_keys.list(ListOptions::default().with_limit(100))).await?;
        let found = list.data.iter().find(|k| k.id.as_ref() == id.as_deref().unwrap_or_default()).ok_or_else(|| Fail::new("the key is not listed"))?;
        eq(found.name.as_str(), name.as_str(), "name")
    })
    .await;

    c.step("api_keys.update", &[id.is_some()], async {
        let id = need(&id)?;
        let renamed = format!("{name}-renamed");
        eq(c.sdk(r.api_keys.update(id, UpdateApiKeyOptions::new(&renamed))).await?.id.to_string(), id.clone(), "id")?;
        let list = c.sdk(r.api_keys.list(ListOptions::default().with_limit(100))).await?;
        eq(list.data.iter().find(|k| k.id.as_ref() == id.as_str()).map(|k| k.name.clone()), Some(renamed), "name after update")
    })
    .await;

    c.step("api_keys.delete", &[id.is_some()], async {
        c.sdk(r.api_keys.delete(need(&id)?)).await?;
        let list = c.sdk(r.api_keys.list(ListOptions::default().with_limit(100))).await?;
        ensure!(!list.data.iter().any(|k| k.id.as_ref() == id.as_deref().unwrap_or_default()), "the deleted key is still listed");
        Ok(())
    })
    .await;
}

pub async fn logs(app: &App) {
    let (c, r) = (&app.c, &app.r);
    let id = c
        .step("logs.list", &[], async {
            let mine = wait_for("a log of this SDK's requests", 30, || async {
                let list = c.sdk(r.logs.list(ListOptions::default().with_limit(100))).await?;
                Ok(list.data.into_iter().find(|l| l.user_agent.as_deref().is_some_and(|ua| ua.starts_with("resend-rs"))))
            })
            .await?;
            Ok(mine.id.to_string())
        })
        .await;

    c.step("logs.get", &[id.is_some()], async {
        let log = c.sdk(r.logs.get(need(&id)?)).await?;
        eq(log.id.to_string(), need(&id)?.clone(), "id")?;
        ensure!(["GET", "POST", "PATCH", "DELETE"].contains(&log.method.as_str()), "method is {}", log.method);
        ensure!(log.endpoint.starts_with('/'), "endpoint is {}", log.endpoint);
        ensure!(log.user_agent.as_deref().is_some_and(|ua| ua.starts_with("resend-rs/")), "user_agent is {:?}", log.user_agent);
        Ok(())
    })
    .await;
}
