//! Contact properties, topics, segments, contacts (and their topics and segments), imports,
//! suppressions.

use resend_rs::list_opts::ListOptions;
use resend_rs::types::{
    AddSuppressionOptions, BatchAddSuppressionOptions, BatchRemoveSuppressionOptions, ContactChanges, ContactImportColumnMap, ContactImportOnConflict, ContactImportStatus,
    ContactPropertyChanges, CreateContactImportOptions, CreateContactOptions, CreateContactPropertyOptions, CreateTopicOptions, PropertyType,
    SubscriptionType, SuppressionOrigin, UpdateContactTopicOptions, UpdateTopicOptions,
};

use crate::check::{Checked, Fail, eq, need, wait_for};
use crate::{App, ensure};

/// Answers the property's id and key.
pub async fn properties(app: &App) -> Option<(String, String)> {
    let (c, r) = (&app.c, &app.r);
    let key = format!("sdk_plan_{}", app.e.run);
    let id = c
        .step("contacts.create_property", &[], async {
            Ok(c.sdk(r.contacts.create_property(CreateContactPropertyOptions::new(&key, PropertyType::String).with_fallback("free"))).await?.id.to_string())
        })
        .await;

    c.step("contacts.get_property", &[id.is_some()], async {
        let found = c.sdk(r.contacts.get_property(need(&id)?)).await?;
        eq((found.key.as_str(), found.fallback_value), (key.as_str(), Some(serde_json::json!("free"))), "key and fallback_value")?;
        ensure!(matches!(found.r#type, PropertyType::String), "type is {:?}", found.r#type);
        Ok(())
    })
    .await;

    c.step("contacts.list_properties", &[id.is_some()], async {
        let list = c.sdk(r.contacts.list_properties(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|p| p.id.as_ref() == id.as_deref().unwrap_or_default()), "the property is not listed");
        Ok(())
    })
    .await;

    c.step("contacts.update_property", &[id.is_some()], async {
        let id = need(&id)?;
        eq(c.sdk(r.contacts.update_property(id, ContactPropertyChanges::default().with_fallback("basic"))).await?.id.to_string(), id.clone(), "id")?;
        eq(c.sdk(r.contacts.get_property(id)).await?.fallback_value, Some(serde_json::json!("basic")), "fallback_value after update")
    })
    .await;
    id.map(|id| (id, key))
}

pub async fn remove_property(app: &App, id: Option<&str>) {
    let (c, r) = (&app.c, &app.r);
    c.step("contacts.delete_property", &[id.is_some()], async {
        let id = id.unwrap_or_default();
        let deleted = c.sdk(r.contacts.delete_property(id)).await?;
        eq((deleted.id.to_string(), deleted.deleted), (id.to_owned(), true), "id and deleted")?;
        c.refused(r.contacts.get_property(id), 404).await
    })
    .await;
}

pub async fn topics(app: &App) -> Option<String> {
    let (c, r) = (&app.c, &app.r);
    let name = format!("SDK topic {}", app.e.run);
    let id = c
        .step("topics.create", &[], async {
            let options = CreateTopicOptions::new(&name, SubscriptionType::OptIn).with_description("from the Rust SDK".to_owned());
            Ok(c.sdk(r.topics.create(options)).await?.id.to_string())
        })
        .await;

    c.step("topics.get", &[id.is_some()], async {
        let found = c.sdk(r.topics.get(need(&id)?)).await?;
        eq((found.name.as_str(), found.description.as_deref()), (name.as_str(), Some("from the Rust SDK")), "name and description")?;
        ensure!(matches!(found.default_subscription, SubscriptionType::OptIn), "default_subscription is {:?}", found.default_subscription);
        Ok(())
    })
    .await;

    c.step("topics.list", &[id.is_some()], async {
        let list = c.sdk(r.topics.list(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|t| t.id.as_ref() == id.as_deref().unwrap_or_default()), "the topic is not listed");
        Ok(())
    })
    .await;

    c.step("topics.update", &[id.is_some()], async {
        let id = need(&id)?;
        let renamed = format!("{name} renamed");
        eq(c.sdk(r.topics.update(id, UpdateTopicOptions::new().with_name(&renamed))).await?.id.to_string(), id.clone(), "id")?;
        eq(c.sdk(r.topics.get(id)).await?.name, renamed, "name after update")
    })
    .await;
    id
}

pub async fn remove_topic(app: &App, id: Option<&str>) {
    let (c, r) = (&app.c, &app.r);
    c.step("topics.delete", &[id.is_some()], async {
        let id = id.unwrap_or_default();
        let deleted = c.sdk(r.topics.delete(id)).await?;
        eq((deleted.id.to_string(), deleted.deleted), (id.to_owned(), true), "id and deleted")?;
        c.refused(r.topics.get(id), 404).await
    })
    .await;
}

pub async fn segments(app: &App) -> Option<String> {
    let (c, r) = (&app.c, &app.r);
    let name = format!("SDK segment {}", app.e.run);
    let id = c
        .step("segments.create", &[], async {
            let created = c.sdk(r.segments.create(&name)).await?;
            eq(created.name.as_str(), name.as_str(), "name")?;
            Ok(created.id.to_string())
        })
        .await;

    c.step("segments.get", &[id.is_some()], async {
        let found = c.sdk(r.segments.get(need(&id)?)).await?;
        eq((found.id.to_string(), found.name.as_str()), (need(&id)?.clone(), name.as_str()), "id and name")
    })
    .await;

    c.step("segments.list", &[id.is_some()], async {
        let list = c.sdk(r.segments.list(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|s| s.id.as_ref() == id.as_deref().unwrap_or_default()), "the segment is not listed");
        Ok(())
    })
    .await;

    c.step("segments.update", &[id.is_some()], async {
        let id = need(&id)?;
        let renamed = format!("{name} renamed");
        eq(c.sdk(r.segments.update(id, &renamed)).await?.id.to_string(), id.clone(), "id")?;
        eq(c.sdk(r.segments.get(id)).await?.name, renamed, "name after update")
    })
    .await;
    id
}

pub async fn remove_segment(app: &App, id: Option<&str>) {
    let (c, r) = (&app.c, &app.r);
    c.step("segments.delete", &[id.is_some()], async {
        let id = id.unwrap_or_default();
        eq(c.sdk(r.segments.delete(id)).await?, true, "deleted")?;
        c.refused(r.segments.get(id), 404).await
    })
    .await;
}

pub async fn contacts(app: &App, property_key: Option<&str>, topic_id: Option<&str>, segment_id: Option<&str>) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let address = format!("sdk-contact-{run}@example.test");
    let all = [property_key.is_some(), topic_id.is_some(), segment_id.is_some()];
    let contact_id = c
        .step("contacts.create (properties, segments, topics)", &all, async {
            let options = CreateContactOptions::new(&address)
                .with_first_name("Ada")
                .with_last_name("Lovelace")
                .with_property(property_key.unwrap_or_default(), "pro")
                .with_segment(segment_id.unwrap_or_default())
                .with_topic(UpdateContactTopicOptions::new(topic_id.unwrap_or_default(), SubscriptionType::OptIn));
            Ok(c.sdk(r.contacts.create(options)).await?.to_string())
        })
        .await;
    let have = contact_id.is_some();

    c.diverge_step("contacts.get (by id)", "contact.properties", &[have], async {
        let found = c.sdk(r.contacts.get(need(&contact_id)?)).await?;
        eq((found.email.as_str(), found.first_name.as_deref(), found.last_name.as_deref()), (address.as_str(), Some("Ada"), Some("Lovelace")), "contact")?;
        ensure!(!found.unsubscribed, "unsubscribed");
        let value = found.properties.as_ref().and_then(|p| p.get(property_key.unwrap_or_default())).map(|p| p.value.clone());
        eq(value.as_deref(), Some("pro"), "the property's value")
    })
    .await;

    c.diverge_step("contacts.get (by email)", "contact.properties", &[have], async {
        eq(c.sdk(r.contacts.get(&address)).await?.id.to_string(), need(&contact_id)?.clone(), "id by email")
    })
    .await;

    c.step("contacts.update (by id)", &[have], async {
        let id = need(&contact_id)?;
        eq(c.sdk(r.contacts.update(id, ContactChanges::new().with_first_name("Grace"))).await?.id.to_string(), id.clone(), "id")?;
        Ok(())
    })
    .await;

    c.diverge_step("contacts.update (by email, read back)", "contact.properties", &[have], async {
        let id = need(&contact_id)?;
        eq(c.sdk(r.contacts.update(&address, ContactChanges::new().with_last_name("Hopper"))).await?.id.to_string(), id.clone(), "id")?;
        let found = c.sdk(r.contacts.get(id)).await?;
        eq((found.first_name.as_deref(), found.last_name.as_deref()), (Some("Grace"), Some("Hopper")), "names after the updates")
    })
    .await;

    c.diverge_step("contacts.list", "contact-list.has_more", &[have], async {
        let list = c.sdk(r.contacts.list(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|x| x.id.as_ref() == contact_id.as_deref().unwrap_or_default()), "the contact is not listed");
        Ok(())
    })
    .await;

    c.diverge_step("segments.list_contacts", "contact-list.has_more", &[have, segment_id.is_some()], async {
        let list = c.sdk(r.segments.list_contacts(segment_id.unwrap_or_default(), ListOptions::default())).await?;
        ensure!(list.data.iter().any(|x| x.id.as_ref() == contact_id.as_deref().unwrap_or_default()), "the contact is not in the segment's list");
        Ok(())
    })
    .await;

    // The contact's segments.
    c.step("contacts.list_contact_segment", &[have, segment_id.is_some()], async {
        let list = c.sdk(r.contacts.list_contact_segment(need(&contact_id)?, ListOptions::default())).await?;
        ensure!(list.data.iter().any(|s| s.id.as_ref() == segment_id.unwrap_or_default()), "the segment is not among the contact's");
        Ok(())
    })
    .await;

    c.step("contacts.delete_contact_segment (by email)", &[have, segment_id.is_some()], async {
        let answer = c.sdk(r.contacts.delete_contact_segment(&address, segment_id.unwrap_or_default())).await?;
        eq((answer.id.to_string(), answer.deleted), (segment_id.unwrap_or_default().to_owned(), true), "id and deleted")
    })
    .await;

    c.step("contacts.add_contact_segment (by id)", &[have, segment_id.is_some()], async {
        let answer = c.sdk(r.contacts.add_contact_segment(need(&contact_id)?, segment_id.unwrap_or_default())).await?;
        eq(answer.id.to_string(), segment_id.unwrap_or_default().to_owned(), "id")
    })
    .await;

    // The contact's topics.
    c.step("contacts.get_contact_topics", &[have, topic_id.is_some()], async {
        let list = c.sdk(r.contacts.get_contact_topics(need(&contact_id)?, ListOptions::default())).await?;
        let found = list.data.iter().find(|t| t.id.as_ref() == topic_id.unwrap_or_default()).ok_or_else(|| Fail::new("the topic is not listed"))?;
        ensure!(matches!(found.subscription, SubscriptionType::OptIn), "subscription is {:?}", found.subscription);
        Ok(())
    })
    .await;

    c.step("contacts.update_contact_topics (by email)", &[have, topic_id.is_some()], async {
        let topics = vec![UpdateContactTopicOptions::new(topic_id.unwrap_or_default(), SubscriptionType::OptOut)];
        eq(c.sdk(r.contacts.update_contact_topics(&address, topics)).await?.id.to_string(), need(&contact_id)?.clone(), "id")?;
        let list = c.sdk(r.contacts.get_contact_topics(&address, ListOptions::default())).await?;
        let found = list.data.iter().find(|t| t.id.as_ref() == topic_id.unwrap_or_default()).ok_or_else(|| Fail::new("the topic is not listed"))?;
        ensure!(matches!(found.subscription, SubscriptionType::OptOut), "subscription after the update is {:?}", found.subscription);
        Ok(())
    })
    .await;

    c.step("contacts.delete (by id)", &[have], async {
        let id = need(&contact_id)?;
        eq(c.sdk(r.contacts.delete(id)).await?, true, "deleted")?;
        c.refused(r.contacts.get(id), 404).await
    })
    .await;

    let other = format!("sdk-contact-2-{run}@example.test");
    c.step("contacts.delete (by email)", &[], async {
        c.sdk(r.contacts.create(CreateContactOptions::new(&other))).await?;
        eq(c.sdk(r.contacts.delete(&other)).await?, true, "deleted")?;
        c.refused(r.contacts.get(&other), 404).await
    })
    .await;
}

pub async fn imports(app: &App) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let address = format!("sdk-import-{run}@example.test");
    let import_id = c
        .step("contacts.create_import", &[], async {
            let path = std::env::temp_dir().join(format!("resend-rs-check-{run}.csv"));
            std::fs::write(&path, format!("Email,Given name\n{address},Grace\n")).map_err(|e| Fail::new(format!("{}: {e}", path.display())))?;
            let file = std::fs::File::open(&path).map_err(|e| Fail::new(format!("{}: {e}", path.display())))?;
            let options = CreateContactImportOptions::new()
                .with_column_map(ContactImportColumnMap::new().with_email("Email").with_first_name("Given name"))
                .with_on_conflict(ContactImportOnConflict::Upsert);
            let answer = c.sdk(r.contacts.create_import(file, options)).await;
            let _ = std::fs::remove_file(&path);
            Ok(answer?.id.to_string())
        })
        .await;

    c.step("contacts.get_import", &[import_id.is_some()], async {
        let id = need(&import_id)?;
        let found = wait_for("the import to complete", 30, || async {
            let found = c.sdk(r.contacts.get_import(id)).await?;
            ensure!(!matches!(found.status, ContactImportStatus::Failed), "the import failed: {found:?}");
            Ok(matches!(found.status, ContactImportStatus::Completed).then_some(found))
        })
        .await?;
        eq(found.id.to_string(), id.clone(), "id")?;
        // The counts' fields are private in the SDK: read them from its Debug text.
        ensure!(format!("{:?}", found.counts).contains("created: 1"), "counts are {:?}", found.counts);
        let contact = c.sdk(r.contacts.get(&address)).await;
        let _ = r.contacts.delete(&address).await;
        eq(contact?.first_name.as_deref(), Some("Grace"), "the imported contact's first_name")
    })
    .await;

    c.step("contacts.list_imports", &[import_id.is_some()], async {
        let list = c.sdk(r.contacts.list_imports(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|i| i.id.as_ref() == import_id.as_deref().unwrap_or_default()), "the import is not listed");
        Ok(())
    })
    .await;
}

pub async fn suppressions(app: &App) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let address = format!("sdk-suppressed-{run}@example.test");
    let id = c
        .step("suppressions.add", &[], async { Ok(c.sdk(r.suppressions.add(AddSuppressionOptions::new().with_email(&address))).await?.id.to_string()) })
        .await;

    c.step("suppressions.get (by id)", &[id.is_some()], async {
        let found = c.sdk(r.suppressions.get(need(&id)?)).await?;
        eq((found.id.to_string(), found.email.as_str()), (need(&id)?.clone(), address.as_str()), "id and email")?;
        ensure!(matches!(found.origin, SuppressionOrigin::Manual), "origin is {:?}", found.origin);
        Ok(())
    })
    .await;

    c.step("suppressions.get (by email)", &[id.is_some()], async { eq(c.sdk(r.suppressions.get(&address)).await?.id.to_string(), need(&id)?.clone(), "id") })
        .await;

    c.step("suppressions.list", &[id.is_some()], async {
        let list = c.sdk(r.suppressions.list(ListOptions::default().with_limit(100))).await?;
        ensure!(list.data.iter().any(|s| s.id.as_ref() == id.as_deref().unwrap_or_default()), "the suppression is not listed");
        Ok(())
    })
    .await;

    c.step("suppressions.remove (by email)", &[id.is_some()], async {
        let answer = c.sdk(r.suppressions.remove(&address)).await?;
        ensure!(answer.deleted, "deleted is false");
        c.refused(r.suppressions.get(need(&id)?), 404).await
    })
    .await;

    let emails: Vec<String> = (0..2).map(|i| format!("sdk-batch-{i}-{run}@example.test")).collect();
    let ids = c
        .step("suppressions.batch_add", &[], async {
            let answer = c.sdk(r.suppressions.batch_add(BatchAddSuppressionOptions::new().add_emails(emails.clone()))).await?;
            let ids: Vec<String> = answer.data.iter().map(|s| s.id.to_string()).collect();
            eq(ids.len(), 2, "suppressions answered")?;
            let mut found = Vec::new();
            for id in &ids {
                found.push(c.sdk(r.suppressions.get(id)).await?.email);
            }
            found.sort();
            eq(found, emails.clone(), "the suppressed addresses")?;
            Ok(ids)
        })
        .await;

    c.step("suppressions.remove (by id)", &[ids.is_some()], async {
        for id in need(&ids)? {
            let answer = c.sdk(r.suppressions.remove(id)).await?;
            eq((answer.id.to_string(), answer.deleted), (id.clone(), true), "id and deleted")?;
        }
        Checked::Ok(())
    })
    .await;

    c.step("suppressions.batch_remove (by address, then by id)", &[], async {
        let extra: Vec<String> = (0..2).map(|i| format!("sdk-batch-rm-{i}-{}@example.test", app.e.run)).collect();
        let added: Vec<String> = c.sdk(r.suppressions.batch_add(BatchAddSuppressionOptions::new().add_emails(extra.clone()))).await?.data.iter().map(|s| s.id.to_string()).collect();
        let miss = format!("nobody-{}@example.test", app.e.run);
        let by_email = c.sdk(r.suppressions.batch_remove(BatchRemoveSuppressionOptions::new().add_emails(vec![extra[0].clone(), miss]))).await?;
        eq(by_email.data.iter().map(|s| (s.id.to_string(), s.deleted)).collect::<Vec<_>>(), vec![(added[0].clone(), true)], "removed by address (a miss is left out)")?;
        let by_id = c.sdk(r.suppressions.batch_remove(BatchRemoveSuppressionOptions::new().add_ids(vec![added[1].clone()]))).await?;
        eq(by_id.data.iter().map(|s| s.id.to_string()).collect::<Vec<_>>(), vec![added[1].clone()], "removed by id")?;
        c.refused(r.suppressions.get(&added[1]), 404).await
    })
    .await;
}
