//! An OpenAI-compatible server for the AI assist tests, following the public API reference of
//! `POST /v1/chat/completions`: it checks each request's shape (model, messages, a
//! `json_schema` response format, the bearer key) and answers scripted completions, including
//! malformed ones, slow ones and 500s; without a script it answers a plausible completion for
//! the task's schema. The official `openai` Python library is pointed at it in the tests to
//! confirm that it speaks the wire format Herald relies on.

use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Json};
use poem::{EndpointExt, IntoResponse, Request, Response, Route, http::StatusCode, post};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The key Herald is given.
pub const API_KEY: &str = "sk-herald-test";

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The model's content: this JSON.
    Answer(Value),
    /// The model's content as raw text (e.g. not JSON).
    Content(String),
    /// A completion with an empty `choices` list.
    NoChoices,
    /// An HTTP error with OpenAI's error body.
    Status(u16),
    /// The next reply after a pause.
    Slow(Duration, Box<Reply>),
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    requests: Vec<Value>,
}

/// The running server.
pub struct OpenAiStandIn {
    /// What Herald calls `HERALD_AI_BASE_URL` (ends in `/v1`).
    pub base: String,
    state: Arc<Mutex<State>>,
}

impl OpenAiStandIn {
    /// Starts the server on a free port.
    pub async fn start() -> OpenAiStandIn {
        let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await.unwrap();
        let port = acceptor.local_addr()[0].as_socket_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let app = Route::new().at("/v1/chat/completions", post(completions)).data(state.clone());
        tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(app));
        OpenAiStandIn { base: format!("http://127.0.0.1:{port}/v1"), state }
    }

    /// Answers the next calls with `replies`, in order (then the default answers again).
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.state.lock().unwrap().script.extend(replies);
    }

    /// Every request received, as sent.
    pub fn requests(&self) -> Vec<Value> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    let code = if status == StatusCode::UNAUTHORIZED { json!("invalid_api_key") } else { Value::Null };
    let body = json!({ "error": { "message": message, "type": "invalid_request_error", "param": null, "code": code } });
    Response::builder().status(status).content_type("application/json").body(body.to_string())
}

/// Why a request does not follow the API reference, if it does not.
fn misshapen(body: &Value) -> Option<String> {
    if body["model"].as_str().is_none_or(str::is_empty) {
        return Some("you must provide a model parameter".into());
    }
    let Some(messages) = body["messages"].as_array() else { return Some("messages must be an array".into()) };
    if messages.is_empty() {
        return Some("messages must be a non-empty array".into());
    }
    for message in messages {
        if !matches!(message["role"].as_str(), Some("system" | "developer" | "user" | "assistant")) || !message["content"].is_string() {
            return Some(format!("invalid message: {message}"));
        }
    }
    let format = &body["response_format"];
    if format["type"] != "json_schema" || !format["json_schema"]["name"].is_string() || !format["json_schema"]["schema"].is_object() {
        return Some("response_format must be a json_schema with a name and a schema".into());
    }
    let schema = &format["json_schema"]["schema"];
    if format["json_schema"]["strict"] == true && (schema["additionalProperties"] != false || !schema["required"].is_array()) {
        return Some("a strict schema needs additionalProperties: false and every property required".into());
    }
    None
}

/// A plausible answer to a task, by its schema's name.
fn default_answer(task: &str, input: &Value) -> Value {
    match task {
        "subject_lines" => json!({ "suggestions": ["Your order is on its way", "Thanks for your order", "Good news about your order", "Your receipt", "What happens next"] }),
        "subject_variants" => {
            let count = input["count"].as_u64().unwrap_or(3) as usize;
            let all = ["Don't miss this week's news", "This week, in short", "What's new this week", "Your weekly update", "Fresh this week"];
            json!({ "variants": all[..count.min(all.len())] })
        }
        "draft" => json!({ "html": "<h1>Hello</h1><p>Thanks for joining us, {{first_name}}.</p>", "text": "Hello\n\nThanks for joining us, {{first_name}}." }),
        "alt_text" => json!({ "alt": "A team of three smiling at a laptop" }),
        "draft_blocks" => json!({ "preheader": "Our spring sale starts today", "blocks": [
            { "type": "heading", "text": "The spring sale is here", "url": "" },
            { "type": "text", "text": "Hi {{first_name}}, everything is 20% off this week.\n\nSee you soon.", "url": "" },
            { "type": "button", "text": "Shop the sale", "url": "https://shop.example.com/sale" },
        ] }),
        "diagnosis" => json!({
            "summary": format!("The message to {} bounced: the receiving server refused it.", input["recipients"][0]["address"].as_str().unwrap_or("the recipient")),
            "causes": ["The mailbox does not exist", "The address was mistyped"],
            "next_steps": ["Check the address with the customer", "Remove the suppression once it is corrected"],
        }),
        "rewrite" => json!({ "words": format!("{} (rewritten)", input["words"].as_str().unwrap_or_default()) }),
        _ => json!({}),
    }
}

fn completion(model: &str, content: Option<String>) -> Value {
    let choices = match content {
        Some(content) => json!([{ "index": 0, "message": { "role": "assistant", "content": content, "refusal": null }, "logprobs": null, "finish_reason": "stop" }]),
        None => json!([]),
    };
    json!({
        "id": format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()), "object": "chat.completion",
        "created": chrono::Utc::now().timestamp(), "model": model, "choices": choices,
        "usage": { "prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160 },
    })
}

#[poem::handler]
async fn completions(request: &Request, Json(body): Json<Value>, state: Data<&Arc<Mutex<State>>>) -> Response {
    if request.header("authorization") != Some(&format!("Bearer {API_KEY}")) {
        return error(StatusCode::UNAUTHORIZED, "Incorrect API key provided.");
    }
    if let Some(why) = misshapen(&body) {
        return error(StatusCode::BAD_REQUEST, &why);
    }
    let reply = {
        let mut state = state.lock().unwrap();
        state.requests.push(body.clone());
        state.script.pop_front()
    };
    let task = body["response_format"]["json_schema"]["name"].as_str().unwrap_or_default().to_string();
    let input: Value = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).and_then(|c| serde_json::from_str(c).ok()).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or_default().to_string();
    let mut reply = reply.unwrap_or_else(|| Reply::Answer(default_answer(&task, &input["input"])));
    loop {
        match reply {
            Reply::Slow(pause, next) => {
                tokio::time::sleep(pause).await;
                reply = *next;
            }
            Reply::Answer(value) => return Json(completion(&model, Some(value.to_string()))).into_response(),
            Reply::Content(text) => return Json(completion(&model, Some(text))).into_response(),
            Reply::NoChoices => return Json(completion(&model, None)).into_response(),
            Reply::Status(code) => return error(StatusCode::from_u16(code).unwrap(), "The server had an error while processing your request."),
        }
    }
}
