//! The tracking spool: how an open or a click is kept durably without the request waiting on
//! PostgreSQL. A hit is appended to a local segment file by one writer thread (the handler
//! waits for that write, which survives the process dying, not for a database round trip);
//! every quarter second the segment is synced to disk and closed, and a drain task writes each
//! closed segment to PostgreSQL in one transaction and then deletes it.
//!
//! The writer holds an exclusive lock on its open segment; a segment nobody holds is complete,
//! so any process sharing the directory drains it, including those a dead process left
//! behind. Hits carry their own ids, so a segment drained twice (a crash between commit and
//! delete) writes each hit once.

use schema::store::engagements::{self, Hit};
use sqlx::PgPool;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a segment takes writes before it is synced and handed to the drain.
const SEGMENT_SECONDS: Duration = Duration::from_millis(250);
/// Hits written in one `write`.
const BATCH: usize = 2048;
/// Hits waiting for the writer before senders wait too.
const QUEUE: usize = 65_536;
/// Hits per insert statement when draining.
const DRAIN_CHUNK: usize = 5_000;
/// How often the drain looks for closed segments.
const DRAIN_EVERY: Duration = Duration::from_millis(250);
/// How long one drain may take before it is abandoned (and readiness would call it stuck).
const DRAIN_BOUND: Duration = Duration::from_secs(60);

type Item = (Hit, oneshot::Sender<()>);

/// What the writer thread is asked: write a hit, or close the open segment (shutdown).
enum Command {
    Write(Item),
    Flush(oneshot::Sender<()>),
}

/// Hands hits to the writer thread.
#[derive(Clone)]
pub struct Spool {
    sender: SyncSender<Command>,
}

/// The drain task; `close` syncs the open segment and drains everything written.
pub struct SpoolTask {
    sender: SyncSender<Command>,
    drain: tokio::task::JoinHandle<()>,
    stop: tokio::sync::watch::Sender<bool>,
    dir: PathBuf,
    pool: PgPool,
}

impl Spool {
    /// Creates `dir` if needed and starts the writer and the drain.
    pub fn start(dir: &Path, pool: PgPool) -> anyhow::Result<(Spool, SpoolTask)> {
        fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("creating the tracking spool {}: {e}", dir.display()))?;
        let (sender, receiver) = mpsc::sync_channel(QUEUE);
        let writer_dir = dir.to_path_buf();
        // The thread ends when the last sender is dropped (the process exits).
        std::thread::Builder::new().name("herald-spool".into()).spawn(move || write_segments(&writer_dir, receiver))?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let drain = tokio::spawn(drain_loop(dir.to_path_buf(), pool.clone(), stopped));
        Ok((Spool { sender: sender.clone() }, SpoolTask { sender, drain, stop, dir: dir.to_path_buf(), pool }))
    }

    /// Appends a hit; returns once it is written to the segment file (or could not be: that is
    /// logged, and the person's redirect or pixel is answered all the same).
    pub async fn push(&self, hit: Hit) {
        let (ack, written) = oneshot::channel();
        match self.sender.try_send(Command::Write((hit, ack))) {
            Ok(()) => {}
            Err(TrySendError::Full(item)) => {
                let sender = self.sender.clone();
                if !tokio::task::spawn_blocking(move || sender.send(item).is_ok()).await.unwrap_or(false) {
                    tracing::error!("the tracking spool writer has stopped; a hit was not recorded");
                    return;
                }
            }
            Err(TrySendError::Disconnected(_)) => {
                tracing::error!("the tracking spool writer has stopped; a hit was not recorded");
                return;
            }
        }
        if written.await.is_err() {
            tracing::error!("a tracking hit could not be written to the spool");
        }
    }
}

impl SpoolTask {
    /// Once the server has stopped taking requests: closes the open segment (every hit queued
    /// before is written and synced), stops the drain and drains what is left.
    pub async fn close(self) {
        let _ = self.stop.send(true);
        let _ = self.drain.await;
        let (ack, flushed) = oneshot::channel();
        let sender = self.sender.clone();
        if tokio::task::spawn_blocking(move || sender.send(Command::Flush(ack)).is_ok()).await.unwrap_or(false) {
            let _ = flushed.await;
        }
        if let Err(error) = drain_once(&self.dir, &self.pool).await {
            tracing::error!(%error, "draining the tracking spool at shutdown failed; the next start drains it");
        }
    }
}

/// The open segment: locked by this writer for as long as it is open.
struct Segment {
    file: File,
    opened: Instant,
}

impl Segment {
    /// A new segment, locked before it takes its drainable name.
    fn create(dir: &Path) -> std::io::Result<Segment> {
        let name = uuid::Uuid::now_v7().simple().to_string();
        let temporary = dir.join(format!("{name}.tmp"));
        let file = OpenOptions::new().create_new(true).append(true).open(&temporary)?;
        file.lock()?;
        fs::rename(&temporary, dir.join(format!("{name}.hits")))?;
        Ok(Segment { file, opened: Instant::now() })
    }

    /// Syncs the segment and lets it go (closing the file releases the lock).
    fn close(self) {
        if let Err(error) = self.file.sync_data() {
            tracing::error!(%error, "syncing a tracking spool segment failed");
        }
    }
}

fn close(segment: &mut Option<Segment>) {
    if let Some(open) = segment.take() {
        open.close();
    }
}

fn write_segments(dir: &Path, receiver: Receiver<Command>) {
    let mut segment: Option<Segment> = None;
    let mut line = Vec::with_capacity(64 * 1024);
    loop {
        let first = match &segment {
            Some(open) => receiver.recv_timeout(SEGMENT_SECONDS.saturating_sub(open.opened.elapsed())),
            None => receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let first = match first {
            Ok(Command::Write(item)) => item,
            Ok(Command::Flush(ack)) => {
                close(&mut segment);
                let _ = ack.send(());
                continue;
            }
            Err(RecvTimeoutError::Timeout) => {
                close(&mut segment);
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => {
                close(&mut segment);
                return;
            }
        };
        let mut batch = vec![first];
        let mut flush = None;
        while batch.len() < BATCH && flush.is_none() {
            match receiver.try_recv() {
                Ok(Command::Write(item)) => batch.push(item),
                Ok(Command::Flush(ack)) => flush = Some(ack),
                Err(_) => break,
            }
        }
        line.clear();
        for (hit, _) in &batch {
            if serde_json::to_writer(&mut line, hit).is_ok() {
                line.push(b'\n');
            }
        }
        let written = match &mut segment {
            Some(open) => open.file.write_all(&line),
            None => Segment::create(dir).and_then(|mut open| {
                let written = open.file.write_all(&line);
                segment = Some(open);
                written
            }),
        };
        match written {
            Ok(()) => batch.into_iter().for_each(|(_, ack)| {
                let _ = ack.send(());
            }),
            Err(error) => {
                tracing::error!(%error, dir = %dir.display(), "writing to the tracking spool failed");
                close(&mut segment);
            }
        }
        if flush.is_some() || segment.as_ref().is_some_and(|open| open.opened.elapsed() >= SEGMENT_SECONDS) {
            close(&mut segment);
        }
        if let Some(ack) = flush {
            let _ = ack.send(());
        }
    }
}

async fn drain_loop(dir: PathBuf, pool: PgPool, mut stopped: tokio::sync::watch::Receiver<bool>) {
    jobs::supervise::expect_beats("spool", DRAIN_EVERY + DRAIN_BOUND);
    tokio::spawn(jobs::supervise::report_beats(pool.clone(), stopped.clone()));
    loop {
        jobs::supervise::beat("spool");
        tokio::select! {
            _ = tokio::time::sleep(DRAIN_EVERY) => {}
            _ = stopped.changed() => return,
        }
        // A drain that cannot finish (a stalled connection) is abandoned and retried: a
        // segment is deleted only after its hits committed, and a hit written twice is kept once (by its id).
        match tokio::time::timeout(DRAIN_BOUND, drain_once(&dir, &pool)).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::error!(%error, "draining the tracking spool failed; it is retried"),
            Err(_) => tracing::error!("draining the tracking spool did not finish within {DRAIN_BOUND:?}; it is retried"),
        }
    }
}

/// Writes every closed segment in `dir` to PostgreSQL and deletes it; answers the hits written.
pub async fn drain_once(dir: &Path, pool: &PgPool) -> anyhow::Result<usize> {
    let mut written = 0;
    let mut names: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "hits"))
        .collect();
    names.sort();
    for path in names {
        let claimed = tokio::task::spawn_blocking(move || claim(&path)).await??;
        let Some((path, file, hits)) = claimed else { continue };
        let mut tx = pool.begin().await?;
        for chunk in hits.chunks(DRAIN_CHUNK) {
            written += engagements::record(&mut tx, chunk).await?;
        }
        tx.commit().await?;
        // Deleted while still locked, so no other drain reads it after this commit.
        fs::remove_file(&path)?;
        drop(file);
    }
    Ok(written)
}

/// A closed segment, locked for this drain, and its hits; `None` when a writer or another
/// drain holds it, or it is gone.
fn claim(path: &Path) -> std::io::Result<Option<(PathBuf, File, Vec<Hit>)>> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    if file.try_lock().is_err() {
        return Ok(None);
    }
    // Another drain may have deleted it between our open and our lock.
    if !path.exists() {
        return Ok(None);
    }
    let mut content = String::new();
    file.read_to_string(&mut content)?;
    // A line cut short by a crash mid-write was never acknowledged: it is skipped.
    let hits = content.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
    Ok(Some((path.to_path_buf(), file, hits)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_held_by_its_writer_is_not_claimed_and_a_released_one_is() {
        let dir = std::env::temp_dir().join(format!("herald-spool-test-{}", uuid::Uuid::now_v7().simple()));
        fs::create_dir_all(&dir).unwrap();
        let mut segment = Segment::create(&dir).unwrap();
        let hit = Hit {
            id: uuid::Uuid::now_v7(),
            email_id: uuid::Uuid::now_v7(),
            link: Some("https://a.test".into()),
            ip_address: None,
            user_agent: None,
            at: chrono::Utc::now(),
        };
        writeln!(segment.file, "{}", serde_json::to_string(&hit).unwrap()).unwrap();
        write!(segment.file, "{{\"torn").unwrap();
        let path = fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
        assert_eq!(path.extension().unwrap(), "hits");
        assert!(claim(&path).unwrap().is_none(), "the writer still holds it");
        segment.close();
        let (_, _, hits) = claim(&path).unwrap().unwrap();
        assert_eq!(hits, vec![hit]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
