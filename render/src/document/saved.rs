//! Saved-block references: inlining the catalog's current copy, or the embedded one.

use crate::{Catalog, Problem};
use serde_json::Value;
use uuid::Uuid;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Section,
    Block,
}

/// Embeds the current copy of every saved reference in `document` as its `content` (the
/// catalog's copy when it has one, else the copy already embedded) and returns the ids
/// referenced, in first-use order. Content is not searched for further references: the compiler
/// refuses those at their path.
pub(crate) fn embed(document: &mut Value, catalog: &Catalog, problems: &mut Vec<Problem>) -> Vec<Uuid> {
    let mut ids = Vec::new();
    let Some(sections) = document.get_mut("sections").and_then(Value::as_array_mut) else {
        return ids;
    };
    for (i, section) in sections.iter_mut().enumerate() {
        let path = format!("document.sections[{i}]");
        if section.get("saved_block_id").is_some() {
            resolve(section, &path, Expect::Section, catalog, problems, &mut ids);
            continue;
        }
        let Some(columns) = section.get_mut("columns").and_then(Value::as_array_mut) else { continue };
        for (j, column) in columns.iter_mut().enumerate() {
            let Some(blocks) = column.get_mut("blocks").and_then(Value::as_array_mut) else { continue };
            for (k, block) in blocks.iter_mut().enumerate() {
                walk(block, &format!("{path}.columns[{j}].blocks[{k}]"), catalog, problems, &mut ids, 0);
            }
        }
    }
    ids
}

fn walk(block: &mut Value, path: &str, catalog: &Catalog, problems: &mut Vec<Problem>, ids: &mut Vec<Uuid>, depth: usize) {
    match block.get("type").and_then(Value::as_str) {
        Some("saved") => resolve(block, path, Expect::Block, catalog, problems, ids),
        Some("group") if depth < super::LIMIT_DEPTH => {
            let Some(children) = block.get_mut("blocks").and_then(Value::as_array_mut) else { return };
            for (i, child) in children.iter_mut().enumerate() {
                walk(child, &format!("{path}.blocks[{i}]"), catalog, problems, ids, depth + 1);
            }
        }
        _ => {}
    }
}

fn resolve(reference: &mut Value, path: &str, expect: Expect, catalog: &Catalog, problems: &mut Vec<Problem>, ids: &mut Vec<Uuid>) {
    let id_path = format!("{path}.saved_block_id");
    let Some(id) = reference.get("saved_block_id").and_then(Value::as_str).and_then(|s| Uuid::parse_str(s).ok()) else {
        problems.push(Problem::new(id_path, "must be a saved block id (a UUID)"));
        return;
    };
    let content = catalog
        .saved_blocks
        .get(&id)
        .filter(|c| c.is_object())
        .or_else(|| reference.get("content").filter(|c| c.is_object()))
        .cloned();
    let Some(content) = content else {
        problems.push(Problem::new(id_path, format!("saved block {id} does not exist and the document holds no copy of it")));
        return;
    };
    let is_section = content.get("columns").is_some() && content.get("type").is_none();
    match (expect, is_section) {
        (Expect::Section, false) => {
            problems.push(Problem::new(id_path, format!("saved block {id} is a block; use it as a block of type saved")));
            return;
        }
        (Expect::Block, true) => {
            problems.push(Problem::new(id_path, format!("saved block {id} is a section; use it as a section")));
            return;
        }
        _ => {}
    }
    if let Some(map) = reference.as_object_mut() {
        map.insert("content".into(), content);
    }
    if !ids.contains(&id) {
        ids.push(id);
    }
}
