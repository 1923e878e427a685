//! Virus scanning with a clamd at `HERALD_CLAMD_ADDR` (`host:port`), over its `INSTREAM`
//! command. No scanning happens when the variable is unset.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bytes sent per `INSTREAM` chunk.
const CHUNK: usize = 64 * 1024;

/// The signature clamd found in `bytes`, or `None` when it reports the stream clean. An
/// unreachable clamd or an error reply is an error: the message is answered `451` and the
/// sender retries, rather than taken unscanned.
pub async fn scan(addr: &str, bytes: &[u8]) -> anyhow::Result<Option<String>> {
    let mut stream = tokio::time::timeout(std::time::Duration::from_secs(10), TcpStream::connect(addr)).await??;
    stream.write_all(b"zINSTREAM\0").await?;
    for chunk in bytes.chunks(CHUNK) {
        stream.write_all(&(chunk.len() as u32).to_be_bytes()).await?;
        stream.write_all(chunk).await?;
    }
    stream.write_all(&0u32.to_be_bytes()).await?;
    let mut reply = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(60), stream.read_to_end(&mut reply)).await??;
    let reply = String::from_utf8_lossy(&reply).trim_end_matches(['\0', '\n']).to_string();
    let verdict = reply.strip_prefix("stream: ").unwrap_or(&reply);
    if verdict == "OK" {
        Ok(None)
    } else if let Some(name) = verdict.strip_suffix(" FOUND") {
        Ok(Some(name.to_string()))
    } else {
        anyhow::bail!("clamd answered {reply:?}")
    }
}
