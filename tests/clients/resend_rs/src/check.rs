//! Reporting: one line per call (`ok`, `FAIL`, `skip`, `diverge`), the listed divergences, and
//! the reading of a parse failure (which field of the answer the SDK's types could not take).

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use crate::proxy::Recorder;

/// Why a step failed: a message, and for an answer the SDK could not parse, where in it.
#[derive(Debug)]
pub struct Fail {
    pub message: String,
    /// The answer's field the SDK's types could not read (`tags`, `data[0].properties.plan`,
    /// or the field serde names as missing), when the failure is a parse failure.
    pub parse: Option<String>,
}

impl Fail {
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), parse: None }
    }
}

pub type Checked<T> = Result<T, Fail>;

/// Fails the step with a message unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return Err($crate::check::Fail::new(format!($($arg)+)));
        }
    };
}

/// Fails the step unless the two are equal (compared by `Debug`, shown on failure).
pub fn eq<A: std::fmt::Debug + PartialEq<B>, B: std::fmt::Debug>(actual: A, expected: B, what: &str) -> Checked<()> {
    if actual == expected { Ok(()) } else { Err(Fail::new(format!("{what} is {actual:?}, expected {expected:?}"))) }
}

/// The value a step needs from an earlier one (the step is skipped when it is missing).
pub fn need<T>(value: &Option<T>) -> Checked<&T> {
    value.as_ref().ok_or_else(|| Fail::new("a value this step needs is missing"))
}

pub fn clip(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit { text.to_owned() } else { format!("{}...", text.chars().take(limit).collect::<String>()) }
}

pub struct Ctx {
    pub recorder: Recorder,
    listed: Vec<String>,
    failures: RefCell<Vec<String>>,
    skipped: RefCell<Vec<String>>,
    divergences: RefCell<Vec<String>>,
}

impl Ctx {
    pub fn new(recorder: Recorder, listed: Vec<String>) -> Self {
        Self { recorder, listed, failures: RefCell::default(), skipped: RefCell::default(), divergences: RefCell::default() }
    }

    /// Runs one call and its checks; answers its result, or `None` when it (or a need) failed.
    pub async fn step<T>(&self, name: &str, needs: &[bool], fut: impl Future<Output = Checked<T>>) -> Option<T> {
        self.run(name, None, needs, fut).await
    }

    /// A step whose answer may differ from the SDK's types in the way `key` (a row of the table
    /// in docs/decisions.md) says: a parse failure in that field is a divergence, not a failure.
    pub async fn diverge_step<T>(&self, name: &str, key: &str, needs: &[bool], fut: impl Future<Output = Checked<T>>) -> Option<T> {
        self.run(name, Some(key), needs, fut).await
    }

    async fn run<T>(&self, name: &str, key: Option<&str>, needs: &[bool], fut: impl Future<Output = Checked<T>>) -> Option<T> {
        if needs.iter().any(|have| !have) {
            println!("skip {name} (a call it needs failed)");
            self.skipped.borrow_mut().push(name.to_owned());
            return None;
        }
        self.recorder.clear();
        match fut.await {
            Ok(value) => {
                println!("ok {name}");
                Some(value)
            }
            Err(fail) => {
                match (&fail.parse, key) {
                    (Some(at), Some(key)) if field_matches(key, at, &fail.message) => {
                        if self.listed.iter().any(|listed| listed == key) {
                            println!("diverge {name} [{key}]: {}", fail.message);
                            self.divergences.borrow_mut().push(format!("{name} [{key}]"));
                        } else {
                            println!("FAIL {name}: divergence [{key}] is not listed in docs/decisions.md: {}", fail.message);
                            self.failures.borrow_mut().push(name.to_owned());
                        }
                    }
                    _ => {
                        println!("FAIL {name}: {}", fail.message);
                        self.failures.borrow_mut().push(name.to_owned());
                    }
                }
                None
            }
        }
    }

    /// Awaits an SDK call; an error becomes a failure that says what the SDK said, the request
    /// and Herald's answer, and for a parse failure which field of the answer it could not read.
    pub async fn sdk<T>(&self, fut: impl Future<Output = resend_rs::Result<T>>) -> Checked<T> {
        match fut.await {
            Ok(value) => Ok(value),
            Err(error) => Err(self.explain(&error)),
        }
    }

    /// Awaits an SDK call that must be refused with this status.
    pub async fn refused<T: std::fmt::Debug>(&self, fut: impl Future<Output = resend_rs::Result<T>>, status: u16) -> Checked<()> {
        match fut.await {
            Ok(value) => Err(Fail::new(format!("expected {status}, the call succeeded: {}", clip(&format!("{value:?}"), 300)))),
            Err(resend_rs::Error::Resend(answer)) if answer.status_code == status => Ok(()),
            Err(error) => Err(self.explain(&error)),
        }
    }

    fn explain(&self, error: &resend_rs::Error) -> Fail {
        let mut text = error.to_string();
        let mut source = std::error::Error::source(error);
        let mut serde_message = None;
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            if let Some(serde) = cause.downcast_ref::<serde_json::Error>() {
                serde_message = Some((serde.to_string(), serde.line(), serde.column()));
            }
            source = cause.source();
        }
        let exchange = self.recorder.last();
        let mut parse = None;
        if let (Some((_, line, column)), Some(exchange)) = (&serde_message, &exchange) {
            let at = path_at(&exchange.answer, *line, *column);
            text = format!("the SDK could not parse the answer at `{}`: {text}", if at.is_empty() { "(top level)" } else { &at });
            parse = Some(at);
        }
        let shown = exchange.map_or_else(|| "(no request reached Herald)".to_owned(), |e| e.show());
        Fail { message: format!("{text}\n      {shown}"), parse }
    }

    pub fn summary(&self) -> bool {
        let (failures, skipped, divergences) = (self.failures.borrow(), self.skipped.borrow(), self.divergences.borrow());
        println!("\n{} failed, {} skipped, {} divergences from the SDK's types", failures.len(), skipped.len(), divergences.len());
        for name in failures.iter() {
            println!("  failed: {name}");
        }
        for name in skipped.iter() {
            println!("  skipped: {name}");
        }
        for line in divergences.iter() {
            println!("  diverges: {line}");
        }
        failures.is_empty() && skipped.is_empty()
    }
}

/// Whether a parse failure is about the field a divergence key names (`email.tags` → `tags`):
/// the path where parsing stopped ends in it, or serde's message names it (`missing field`).
fn field_matches(key: &str, at: &str, message: &str) -> bool {
    let field = key.rsplit('.').next().unwrap_or(key);
    at.split(['.', '[']).any(|part| part == field) || message.contains(&format!("`{field}`"))
}

/// The path (`data[0].tags`) of the value being read at serde_json's line and column (the
/// position just after the last byte it read) in the JSON text.
pub fn path_at(json: &str, line: usize, column: usize) -> String {
    enum Frame {
        Object { key: Option<String>, want_key: bool },
        Array { index: usize },
    }
    let mut offset = 0;
    for (number, text) in json.split_inclusive('\n').enumerate() {
        if number + 1 == line {
            offset += column.min(text.len());
            break;
        }
        offset += text.len();
    }
    let bytes = &json.as_bytes()[..offset.min(json.len())];
    let mut stack: Vec<Frame> = Vec::new();
    let (mut in_string, mut escaped, mut string) = (false, false, Vec::new());
    for &byte in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
                if let Some(Frame::Object { key, want_key: want @ true }) = stack.last_mut() {
                    *key = Some(String::from_utf8_lossy(&string).into_owned());
                    *want = false;
                }
            } else {
                string.push(byte);
            }
            continue;
        }
        match byte {
            b'"' => {
                in_string = true;
                string.clear();
            }
            b'{' => stack.push(Frame::Object { key: None, want_key: true }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { key, want_key }) => {
                    *key = None;
                    *want_key = true;
                }
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            _ => {}
        }
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(key), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object { .. } => {}
            Frame::Array { index } => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

/// Polls until `probe` answers `Some`, or fails after `seconds`.
pub async fn wait_for<T, F, Fut>(what: &str, seconds: u64, mut probe: F) -> Checked<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Checked<Option<T>>>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(found) = probe().await? {
            return Ok(found);
        }
        if std::time::Instant::now() > deadline {
            return Err(Fail::new(format!("gave up after {seconds} s waiting for {what}")));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
