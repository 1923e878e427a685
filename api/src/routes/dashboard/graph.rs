//! An automation drawn as a graph (SVG, no script): its steps in layers from the trigger down,
//! each box with the step's key, kind and counts, and its connections as arrows labelled with
//! their kind where it is not the default. The steps table beside it says the same in text.

use crate::routes::pages::html::escape;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};

const BOX_W: i64 = 215;
const BOX_H: i64 = 66;
const GAP_X: i64 = 30;
const GAP_Y: i64 = 56;
const MARGIN: i64 = 12;

/// A step's counts: reached, completed, waiting, failed.
pub type Counts = HashMap<String, [i64; 4]>;

/// Each step's layer (its distance from a step nothing leads to) and place within the layer.
fn layout(keys: &[&str], connections: &[(String, String, String)]) -> HashMap<String, (usize, usize)> {
    let mut depth: HashMap<&str, usize> = HashMap::new();
    let entered: Vec<&str> = connections.iter().map(|(_, to, _)| to.as_str()).collect();
    let mut queue: VecDeque<&str> = keys.iter().copied().filter(|k| !entered.contains(k)).collect();
    for root in &queue {
        depth.insert(root, 0);
    }
    // Breadth first: each step at its shortest distance, so a loop cannot run forever.
    while let Some(key) = queue.pop_front() {
        let next = depth[key] + 1;
        for (_, to, _) in connections.iter().filter(|(from, _, _)| from == key) {
            if let Some(to) = keys.iter().find(|k| **k == to.as_str()) {
                if !depth.contains_key(to) {
                    depth.insert(to, next);
                    queue.push_back(to);
                }
            }
        }
    }
    // Steps reached from nowhere (a loop of their own) go last.
    let last = depth.values().max().map_or(0, |d| d + 1);
    let mut filled: HashMap<usize, usize> = HashMap::new();
    keys.iter()
        .map(|k| {
            let layer = depth.get(k).copied().unwrap_or(last);
            let place = filled.entry(layer).or_default();
            *place += 1;
            (k.to_string(), (layer, *place - 1))
        })
        .collect()
}

/// The graph as an SVG, or nothing for an automation without steps.
pub fn draw(steps: &[Value], connections: &[Value], counts: &Counts) -> String {
    let keys: Vec<&str> = steps.iter().filter_map(|s| s["key"].as_str()).collect();
    if keys.is_empty() {
        return String::new();
    }
    let edges: Vec<(String, String, String)> = connections
        .iter()
        .map(|c| (c["from"].as_str().unwrap_or_default().to_string(), c["to"].as_str().unwrap_or_default().to_string(), c["type"].as_str().unwrap_or("default").to_string()))
        .collect();
    let places = layout(&keys, &edges);
    let widest = places.values().fold(HashMap::new(), |mut m: HashMap<usize, usize>, (layer, place)| {
        let w = m.entry(*layer).or_default();
        *w = (*w).max(place + 1);
        m
    });
    let columns = widest.values().copied().max().unwrap_or(1) as i64;
    let layers = widest.keys().copied().max().unwrap_or(0) as i64 + 1;
    let width = MARGIN * 2 + columns * BOX_W + (columns - 1) * GAP_X;
    let height = MARGIN * 2 + layers * BOX_H + (layers - 1) * GAP_Y;
    // Each layer centred under the widest.
    let origin = |key: &str| -> Option<(i64, i64)> {
        let (layer, place) = places.get(key)?;
        let in_layer = widest[layer] as i64;
        let offset = (width - (in_layer * BOX_W + (in_layer - 1) * GAP_X)) / 2;
        Some((offset + *place as i64 * (BOX_W + GAP_X), MARGIN + *layer as i64 * (BOX_H + GAP_Y)))
    };
    let mut svg = String::new();
    for (from, to, kind) in &edges {
        let (Some((fx, fy)), Some((tx, ty))) = (origin(from), origin(to)) else { continue };
        let (x1, y1, x2, y2) = (fx + BOX_W / 2, fy + BOX_H, tx + BOX_W / 2, ty);
        svg.push_str(&format!("<line class=\"edge\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" marker-end=\"url(#arrow)\"/>"));
        if kind != "default" {
            svg.push_str(&format!("<text class=\"edge-label\" x=\"{}\" y=\"{}\">{}</text>", (x1 + x2) / 2 + 4, (y1 + y2) / 2, escape(&kind.replace('_', " "))));
        }
    }
    for step in steps {
        let Some(key) = step["key"].as_str() else { continue };
        let Some((x, y)) = origin(key) else { continue };
        let [reached, completed, waiting, failed] = counts.get(key).copied().unwrap_or_default();
        let short: String = key.chars().take(22).collect();
        let mut tally = format!("{reached} reached · {completed} done");
        if waiting > 0 {
            tally.push_str(&format!(" · {waiting} waiting"));
        }
        if failed > 0 {
            tally.push_str(&format!(" · {failed} failed"));
        }
        svg.push_str(&format!(
            "<g class=\"step{}\"><rect x=\"{x}\" y=\"{y}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"6\"/><text x=\"{}\" y=\"{}\" class=\"key\">{}</text>\
             <text x=\"{}\" y=\"{}\" class=\"kind\">{}</text><text x=\"{}\" y=\"{}\" class=\"tally\">{}</text></g>",
            if failed > 0 { " failing" } else { "" },
            x + 10,
            y + 20,
            escape(&short),
            x + 10,
            y + 38,
            escape(&step["type"].as_str().unwrap_or_default().replace('_', " ")),
            x + 10,
            y + 56,
            escape(&tally)
        ));
    }
    format!(
        "<div class=\"scroll graph\"><svg role=\"img\" aria-label=\"The automation's steps as a graph, from the trigger down\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\">\
         <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\"/></marker></defs>{svg}</svg></div>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_branch_draws_its_two_ways_in_one_layer_and_a_loop_still_ends() {
        let steps =
            [json!({ "key": "start", "type": "trigger" }), json!({ "key": "check", "type": "condition" }), json!({ "key": "yes", "type": "send_email" }), json!({ "key": "no", "type": "delay" })];
        let connections = [
            json!({ "from": "start", "to": "check", "type": "default" }),
            json!({ "from": "check", "to": "yes", "type": "condition_met" }),
            json!({ "from": "check", "to": "no", "type": "condition_not_met" }),
            json!({ "from": "no", "to": "check", "type": "default" }),
        ];
        let keys: Vec<&str> = steps.iter().map(|s| s["key"].as_str().unwrap()).collect();
        let edges: Vec<(String, String, String)> = connections.iter().map(|c| (c["from"].as_str().unwrap().into(), c["to"].as_str().unwrap().into(), c["type"].as_str().unwrap().into())).collect();
        let places = layout(&keys, &edges);
        assert_eq!((places["start"], places["check"], places["yes"], places["no"]), ((0, 0), (1, 0), (2, 0), (2, 1)));
        let counts: Counts = [("yes".to_string(), [3, 2, 0, 1])].into();
        let svg = draw(&steps, &connections, &counts);
        assert!(svg.contains("condition met") && svg.contains("3 reached · 2 done · 1 failed") && svg.contains("step failing"), "{svg}");
    }
}
