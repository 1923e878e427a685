//! Received mail through the SDK: a message sent into Herald's inbound SMTP server, then read back.

use std::time::Duration;
use resend_rs::list_opts::ListOptions;
use resend_rs::types::GetInboundEmailOptions;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use crate::check::{Checked, Fail, eq, need, wait_for};
use crate::emails::{TEXT_BYTES, b64, download};
use crate::{App, ensure};

async fn smtp_send(app: &App, to: &str, subject: &str) -> Checked<()> {
    let io = |e: std::io::Error| Fail::new(format!("SMTP to 127.0.0.1:{}: {e}", app.e.smtp_port));
    let stream = TcpStream::connect(("127.0.0.1", app.e.smtp_port)).await.map_err(io)?;
    let mut stream = BufReader::new(stream);
    async fn reply(stream: &mut BufReader<TcpStream>, expect: &str, after: &str) -> Checked<()> {
        loop {
            let mut line = String::new();
            let read = tokio::time::timeout(Duration::from_secs(30), stream.read_line(&mut line)).await;
            let read = read.map_err(|_| Fail::new(format!("SMTP: no reply after {after}")))?.map_err(|e| Fail::new(format!("SMTP: {e}")))?;
            ensure!(read > 0, "SMTP: the server closed the connection after {after}");
            ensure!(line.starts_with(expect), "SMTP: after {after} the server said {}", line.trim_end());
            if line.as_bytes().get(3) != Some(&b'-') {
                return Ok(());
            }
        }
    }
    reply(&mut stream, "220", "connecting").await?;
    let sender = format!("sender-{}@example.test", app.e.run);
    let boundary = format!("sdk-{}", app.e.run);
    let message = format!(
        "From: Sender <{sender}>\r\nTo: <{to}>\r\nSubject: {subject}\r\nMessage-ID: <{}@example.test>\r\nDate: {}\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"{boundary}\"\r\n\r\n--{boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n\
         Hello Herald, from the Rust SDK check.\r\n--{boundary}\r\nContent-Type: text/plain; name=\"note.txt\"\r\n\
         Content-Disposition: attachment; filename=\"note.txt\"\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n--{boundary}--\r\n.\r\n",
        app.e.run,
        chrono::Utc::now().to_rfc2822(),
        b64(TEXT_BYTES)
    );
    for (command, expect) in [
        ("EHLO sdk-check.example.test\r\n".to_owned(), "250"),
        (format!("MAIL FROM:<{sender}>\r\n"), "250"),
        (format!("RCPT TO:<{to}>\r\n"), "250"),
        ("DATA\r\n".to_owned(), "354"),
        (message, "250"),
        ("QUIT\r\n".to_owned(), "221"),
    ] {
        stream.get_mut().write_all(command.as_bytes()).await.map_err(io)?;
        reply(&mut stream, expect, command.lines().next().unwrap_or_default()).await?;
    }
    Ok(())
}

pub async fn receiving(app: &App) {
    let (c, r, run) = (&app.c, &app.r, &app.e.run);
    let to = format!("sdk-inbound-{run}@{}", app.e.from_domain);
    let subject = format!("SDK inbound {run}");
    let sent = c.step("SMTP: a message with an attachment into 127.0.0.1:HERALD_SMTP_PORT", &[], smtp_send(app, &to, &subject)).await;

    let email_id = c
        .step("receiving.list", &[sent.is_some()], async {
            wait_for("the received email in the list", 30, || async {
                let list = c.sdk(r.receiving.list(ListOptions::default().with_limit(100))).await?;
                Ok(list.data.into_iter().find(|e| e.subject == subject).map(|e| e.id.to_string()))
            })
            .await
        })
        .await;

    c.step("receiving.get", &[email_id.is_some()], async {
        let email = c.sdk(r.receiving.get(need(&email_id)?, GetInboundEmailOptions::default())).await?;
        eq((email.id.to_string(), email.subject.as_str()), (need(&email_id)?.clone(), subject.as_str()), "id and subject")?;
        eq(&email.to, &vec![to.clone()], "to")?;
        ensure!(email.from.contains(&format!("sender-{run}@example.test")), "from is {}", email.from);
        ensure!(email.text.as_deref().is_some_and(|t| t.contains("Hello Herald")), "text is {:?}", email.text);
        eq(email.attachments.iter().map(|a| a.filename.clone()).collect::<Vec<_>>(), vec![Some("note.txt".to_owned())], "attachments")?;
        ensure!(email.headers.keys().any(|k| k.eq_ignore_ascii_case("subject")), "no Subject among the headers: {:?}", email.headers.keys());
        Ok(())
    })
    .await;

    let attachment_id = c
        .step("receiving.list_attachments", &[email_id.is_some()], async {
            let list = c.sdk(r.receiving.list_attachments(need(&email_id)?, ListOptions::default())).await?;
            let found = list.data.iter().find(|a| a.filename.as_deref() == Some("note.txt")).ok_or_else(|| Fail::new("note.txt is not listed"))?;
            eq(found.size as usize, TEXT_BYTES.len(), "size")?;
            eq(download(app, &found.download_url).await?, TEXT_BYTES.to_vec(), "the bytes behind download_url")?;
            Ok(found.id.to_string())
        })
        .await;

    c.step("receiving.get_attachment (download_url reads back the bytes)", &[attachment_id.is_some()], async {
        let found = c.sdk(r.receiving.get_attachment(need(&attachment_id)?, need(&email_id)?)).await?;
        eq(found.filename.as_deref(), Some("note.txt"), "filename")?;
        eq(download(app, &found.download_url).await?, TEXT_BYTES.to_vec(), "the downloaded bytes")
    })
    .await;
}
