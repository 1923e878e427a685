//! Attachments given by `path`: fetched over https from public addresses only (unless the
//! operator allows private ones), pinned to the checked address, bounded in size and time.

use schema::email::{self as rules};
use std::time::Duration;

/// How attachment `path`s are fetched: by default only from public addresses, trusting the
/// public roots; operators may allow private addresses and add their own CA.
#[derive(Clone, Default)]
pub struct Fetcher {
    pub allow_private: bool,
    pub extra_roots: Vec<reqwest::Certificate>,
}

impl Fetcher {
    /// From `HERALD_ATTACHMENT_ALLOW_PRIVATE` and `HERALD_ATTACHMENT_CA_FILE`.
    pub fn from_config(config: &crate::config::Config) -> anyhow::Result<Self> {
        let extra_roots = match &config.attachment_ca_file {
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| anyhow::anyhow!("HERALD_ATTACHMENT_CA_FILE {path}: {e}"))?;
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| anyhow::anyhow!("HERALD_ATTACHMENT_CA_FILE {path}: {e}"))?
            }
            None => Vec::new(),
        };
        Ok(Self { allow_private: config.attachment_allow_private, extra_roots })
    }

    /// Fetches an attachment: the host's every address must be public (unless allowed), the
    /// connection is pinned to the checked address, no redirects, at most 40 MB within 10
    /// seconds.
    pub async fn fetch(&self, url: &str) -> Result<Vec<u8>, String> {
        let parsed = reqwest::Url::parse(url).map_err(|_| "is not a URL".to_string())?;
        let host = parsed.host_str().unwrap_or_default().trim_matches(['[', ']']).to_string();
        let port = parsed.port_or_known_default().unwrap_or(443);
        let addresses = schema::net::resolve_public(&host, port, self.allow_private).await?;
        let first = addresses[0];
        let mut client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).timeout(Duration::from_secs(10)).resolve(&host, first);
        for root in &self.extra_roots {
            client = client.add_root_certificate(root.clone());
        }
        let client = client.build().map_err(|e| e.to_string())?;
        let mut response = client.get(parsed).send().await.map_err(|e| format!("could not be fetched: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("could not be fetched: the server answered {}", response.status()));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("could not be fetched: {e}"))? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > rules::MAX_ATTACHMENT_BYTES {
                return Err("is larger than 40 MB".into());
            }
        }
        Ok(bytes)
    }
}
