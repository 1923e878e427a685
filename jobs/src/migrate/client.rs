//! The HTTP side of reading another platform: one GET at a time, its rate limits honoured
//! (`Retry-After`, Resend's `ratelimit-reset`, a growing pause where the platform names none),
//! its 5xx answers and dropped connections retried with backoff, and its refusals (a 401 for
//! wrong credentials) reported with the platform's own words. Credentials travel only in the
//! `Authorization` header and never appear in an error.

use serde_json::Value;
use std::time::Duration;

/// Longest pause for one rate-limit answer.
const MAX_PAUSE: Duration = Duration::from_secs(30);
/// Rate-limit answers in a row before the job gives the page back to the queue.
const MAX_LIMITED: u32 = 10;
/// Tries for a page failing on the platform's side.
const MAX_TRIES: u32 = 5;

/// Why a read stopped.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    /// The platform refused (wrong credentials, a missing permission, a bad request): the
    /// migration fails with this message.
    #[error("{0}")]
    Refused(String),
    /// The platform is down, slow or limiting past the retries: the job retries later and
    /// resumes where it stopped.
    #[error("{0}")]
    Unavailable(String),
}

/// How a platform takes its credentials.
#[derive(Clone)]
pub enum Auth {
    Bearer(String),
    Basic(String, String),
}

/// A platform's API.
#[derive(Clone)]
pub struct Platform {
    http: reqwest::Client,
    /// As people know it: `Resend`, `Mailchimp`, `listmonk`.
    pub name: &'static str,
    /// The API's root, without a trailing `/`.
    pub base: String,
    auth: Auth,
}

impl Platform {
    pub fn new(name: &'static str, base: &str, auth: Auth) -> anyhow::Result<Platform> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("Herald-Migrations/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Platform { http, name, base: base.trim_end_matches('/').to_string(), auth })
    }

    /// GETs `path` (with its query) and answers the JSON body.
    pub async fn get(&self, path: &str) -> Result<Value, Fault> {
        self.get_as(path).await
    }

    /// GETs `path` and reads the JSON body as `T` (only the fields Herald uses are kept).
    pub async fn get_as<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, Fault> {
        let url = format!("{}{path}", self.base);
        let (mut limited, mut failed) = (0u32, 0u32);
        loop {
            let request = match &self.auth {
                Auth::Bearer(token) => self.http.get(&url).bearer_auth(token),
                Auth::Basic(user, password) => self.http.get(&url).basic_auth(user, Some(password)),
            };
            let wait = match request.send().await {
                Err(error) => {
                    failed += 1;
                    (failed < MAX_TRIES).then(|| backoff(failed)).ok_or_else(|| self.unavailable(&format!("could not be reached ({})", error.without_url())))?
                }
                Ok(answer) if answer.status().is_success() => {
                    return answer.json().await.map_err(|_| self.unavailable("answered with a body that is not JSON"));
                }
                Ok(answer) if answer.status().as_u16() == 429 => {
                    limited += 1;
                    let pause = pause(answer.headers(), limited);
                    (limited < MAX_LIMITED).then_some(pause).ok_or_else(|| self.unavailable("kept answering 429 Too Many Requests"))?
                }
                Ok(answer) if answer.status().is_server_error() => {
                    failed += 1;
                    let status = answer.status().as_u16();
                    (failed < MAX_TRIES).then(|| backoff(failed)).ok_or_else(|| self.unavailable(&format!("answered {status}")))?
                }
                Ok(answer) => return Err(self.refused(answer).await),
            };
            tokio::time::sleep(wait).await;
        }
    }

    fn unavailable(&self, what: &str) -> Fault {
        Fault::Unavailable(format!("{} {what}", self.name))
    }

    /// The platform's refusal in its own words: Resend's `message`, Mailchimp's `detail`,
    /// listmonk's `message`.
    async fn refused(&self, answer: reqwest::Response) -> Fault {
        let status = answer.status();
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        let said = ["message", "detail", "title"].iter().find_map(|k| body[*k].as_str()).unwrap_or_else(|| status.canonical_reason().unwrap_or(""));
        let said: String = said.chars().take(300).collect();
        Fault::Refused(format!("{} answered {}: {said}", self.name, status.as_u16()))
    }
}

/// How long a 429 asks to wait: `Retry-After` (seconds), else Resend's `ratelimit-reset`, else
/// a second more for each 429 in a row (Mailchimp names no wait); at most [`MAX_PAUSE`].
fn pause(headers: &reqwest::header::HeaderMap, limited: u32) -> Duration {
    let seconds = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<f64>().ok());
    let wait = seconds("retry-after").or_else(|| seconds("ratelimit-reset")).map(Duration::from_secs_f64).unwrap_or(Duration::from_secs(u64::from(limited)));
    wait.min(MAX_PAUSE)
}

/// A quarter second, doubling with each failure.
fn backoff(failed: u32) -> Duration {
    Duration::from_millis(250 << failed.min(6))
}
