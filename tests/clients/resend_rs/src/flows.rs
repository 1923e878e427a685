//! Custom events and automations through the SDK.

use resend_rs::events::types::{ContactIdOrEmail, CreateEventOptions, SendEventOptions, UpdateEventOptions};
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{AutomationStatus, AutomationTemplate, Connection, CreateAutomationOptions, CreateContactOptions, SendEmailStepConfig, Step, TriggerStepConfig, UpdateAutomationOptions};
use serde_json::json;
use crate::check::{eq, need, wait_for};
use crate::{App, DELIVERED, ensure};

pub async fn events_and_automations(app: &App, template_id: Option<&str>) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let event = format!("sdk.signed_up.{run}");
    let event_id = c
        .step("events.create", &[], async {
            Ok(c.sdk(r.events.create(CreateEventOptions { name: event.clone(), schema: json!({ "plan": "string" }) })).await?.id.to_string())
        })
        .await;

    c.step("events.get (by id and by name)", &[event_id.is_some()], async {
        let found = c.sdk(r.events.get(need(&event_id)?)).await?;
        eq((found.id.to_string(), found.name.as_str()), (need(&event_id)?.clone(), event.as_str()), "id and name")?;
        eq(found.schema, Some(json!({ "plan": "string" })), "schema")?;
        eq(c.sdk(r.events.get(&event)).await?.id.to_string(), need(&event_id)?.clone(), "id by name")
    })
    .await;

    c.step("events.list", &[event_id.is_some()], async {
        let list = c.sdk(r.events.list(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|e| e.id.as_ref() == event_id.as_deref().unwrap_or_default()), "the event is not listed");
        Ok(())
    })
    .await;

    c.step("events.update", &[event_id.is_some()], async {
        let id = need(&event_id)?;
        let schema = json!({ "plan": "string", "seats": "number" });
        eq(c.sdk(r.events.update(id, UpdateEventOptions { schema: schema.clone() })).await?.id.to_string(), id.clone(), "id")?;
        eq(c.sdk(r.events.get(id)).await?.schema, Some(schema), "schema after update")
    })
    .await;

    let name = format!("SDK automation {run}");
    let steps = || {
        vec![
            Step::Trigger { key: "start".into(), config: TriggerStepConfig { event_name: event.clone() } },
            Step::SendEmail {
                key: "welcome".into(),
                config: SendEmailStepConfig::new(AutomationTemplate::new(template_id.unwrap_or_default()).with_variables(json!({ "NAME": "Ada" })))
                    .with_from(&app.e.from)
                    .with_subject(format!("SDK automation {run}")),
            },
        ]
    };
    let automation_id = c
        .step("automations.create (an event trigger and a send_email step)", &[event_id.is_some(), template_id.is_some()], async {
            let options = CreateAutomationOptions { name: name.clone(), status: AutomationStatus::Enabled, steps: steps(), connections: vec![Connection::new("start", "welcome")] };
            Ok(c.sdk(r.automations.create(options)).await?.id.to_string())
        })
        .await;
    let have = automation_id.is_some();

    c.step("automations.get", &[have], async {
        let found = c.sdk(r.automations.get(need(&automation_id)?)).await?;
        eq((found.id.to_string(), found.name.as_str()), (need(&automation_id)?.clone(), name.as_str()), "id and name")?;
        ensure!(matches!(found.status, AutomationStatus::Enabled), "status is {:?}", found.status);
        eq(found.steps.len(), 2, "steps")?;
        eq(found.connections.iter().map(|x| (x.from.as_str(), x.to.as_str())).collect::<Vec<_>>(), vec![("start", "welcome")], "connections")
    })
    .await;

    c.step("automations.list", &[have], async {
        let list = c.sdk(r.automations.list(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|a| a.id.as_ref() == automation_id.as_deref().unwrap_or_default()), "the automation is not listed");
        Ok(())
    })
    .await;

    c.step("automations.update", &[have], async {
        let id = need(&automation_id)?;
        let renamed = format!("{name} renamed");
        eq(c.sdk(r.automations.update(id, UpdateAutomationOptions::new().with_name(&renamed))).await?.id.to_string(), id.clone(), "id")?;
        eq(c.sdk(r.automations.get(id)).await?.name, renamed, "name after update")
    })
    .await;

    let contact = c
        .step("events.send (to the contact delivered@)", &[event_id.is_some()], async {
            if r.contacts.get(DELIVERED).await.is_err() {
                c.sdk(r.contacts.create(CreateContactOptions::new(DELIVERED))).await?;
            }
            let options = SendEventOptions { event: event.clone(), contact_id_or_email: ContactIdOrEmail::Email(DELIVERED.into()), payload: json!({ "plan": "pro" }) };
            eq(c.sdk(r.events.send(options)).await?.event, event.clone(), "event")
        })
        .await;

    let run_id = c
        .step("automations.list_runs", &[have, contact.is_some()], async {
            wait_for("a run of the automation", 30, || async {
                let list = c.sdk(r.automations.list_runs(need(&automation_id)?, None, ListOptions::default())).await?;
                // The run's fields are private in the SDK: read its id from its serialized form.
                Ok(list.data.first().and_then(|run| serde_json::to_value(run).ok()).and_then(|v| v["id"].as_str().map(str::to_owned)))
            })
            .await
        })
        .await;

    c.step("automations.get_run", &[run_id.is_some()], async {
        let found = c.sdk(r.automations.get_run(need(&automation_id)?, need(&run_id)?)).await?;
        let value = serde_json::to_value(&found).unwrap_or_default();
        eq(value["id"].as_str(), Some(need(&run_id)?.as_str()), "id")?;
        eq(value["trigger"]["event_name"].as_str(), Some(event.as_str()), "trigger.event_name")
    })
    .await;

    c.step("automations.stop", &[have], async {
        let answer = c.sdk(r.automations.stop(need(&automation_id)?)).await?;
        eq(answer.id.to_string(), need(&automation_id)?.clone(), "id")?;
        ensure!(matches!(answer.status, AutomationStatus::Disabled), "status after stop is {:?}", answer.status);
        Ok(())
    })
    .await;

    c.step("automations.duplicate (and automations.delete of the copy)", &[have], async {
        let id = need(&automation_id)?;
        let copy = c.sdk(r.automations.duplicate(id)).await?.id.to_string();
        ensure!(copy != *id, "the copy has the original's id");
        let found = serde_json::to_value(c.sdk(r.automations.get(&copy)).await?).unwrap_or_default();
        eq(found["status"].as_str(), Some("disabled"), "the copy's status")?;
        c.sdk(r.automations.delete(&copy)).await?;
        Ok(())
    })
    .await;

    c.step("automations.delete", &[have], async {
        let id = need(&automation_id)?;
        let answer = c.sdk(r.automations.delete(id)).await?;
        eq((answer.id.to_string(), answer.deleted), (id.clone(), true), "id and deleted")?;
        c.refused(r.automations.get(id), 404).await
    })
    .await;

    c.step("events.delete", &[event_id.is_some()], async {
        let id = need(&event_id)?;
        eq(c.sdk(r.events.delete(id)).await?.id.to_string(), id.clone(), "id")?;
        c.refused(r.events.get(id), 404).await
    })
    .await;
}
