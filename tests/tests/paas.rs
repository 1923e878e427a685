//! The Procfile deploy a PaaS runs. honcho (the Procfile runner of Heroku's process model)
//! runs `release`, then `web`, `worker` and `inbound` from the repository's own Procfile, giving
//! the web process `PORT` as Heroku, Dokku, Render and Railway do.

use serde_json::json;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use tests::clients::root;
use tests::smtp::SmtpSink;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// honcho from the project's `.venv/` (scripts/test installs it), on the repository's Procfile,
/// with the `herald` binary first on `PATH`.
fn honcho(env: &[(&str, String)]) -> Command {
    let honcho = root().join(".venv/bin/honcho");
    assert!(honcho.exists(), "{} is missing: run scripts/test, which installs the client packages", honcho.display());
    let bin = tests::herald_binary().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut command = Command::new(honcho);
    command.arg("-f").arg(root().join("Procfile")).arg("-d").arg(std::env::temp_dir()).env("PATH", path);
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// Stops honcho and every process it started (its own process group) when the test ends,
/// however it ends: SIGTERM first, SIGKILL to the whole group if any is still there.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(std::process::Stdio::null()).status();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_procfile_deploy_serves_web_on_port_and_its_worker_delivers_a_send_made_through_web() {
    let mail = tests::mail::setup_without_workers(SmtpSink::start().await, |_| {}).await;
    let port = free_port();
    let smtp_port = free_port();
    let spool = std::env::temp_dir().join(format!("herald-paas-spool-{port}"));
    // What a PaaS gives every process: DATABASE_URL (and PORT, which honcho adds per process).
    // HERALD_HTTP_ADDR is not set: the web process must find PORT by itself.
    let env = [
        ("DATABASE_URL", mail.app.database_url.clone()),
        ("HERALD_ENV", "test".to_string()),
        ("HERALD_LOG", "warn".to_string()),
        ("HERALD_DNS_SERVERS", mail.app.dns.addr.to_string()),
        ("HERALD_MX_PORT", mail.sink.port().to_string()),
        ("HERALD_SMTP_ADDR", format!("127.0.0.1:{smtp_port}")),
        ("HERALD_SPOOL_DIR", spool.display().to_string()),
        ("HERALD_SHUTDOWN_SECONDS", "3".to_string()),
    ];

    let release = tokio::task::spawn_blocking({
        let mut command = honcho(&env);
        command.arg("start").arg("release");
        move || command.output().unwrap()
    })
    .await
    .unwrap();
    assert!(release.status.success(), "release failed: {}", String::from_utf8_lossy(&release.stdout));

    // What the processes print, to show when the deploy does not come up.
    let log_path = std::env::temp_dir().join(format!("herald-paas-{port}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let mut command = honcho(&env);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command.args(["start", "-p", &port.to_string(), "web", "worker", "inbound"]).stdout(log.try_clone().unwrap()).stderr(log);
    let printed = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let mut running = Running(command.spawn().expect("start honcho"));

    let web = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().user_agent("herald-tests/1.0").build().unwrap();
    let started = Instant::now();
    loop {
        if let Ok(answer) = client.get(format!("{web}/health")).send().await
            && answer.status() == 200
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the web process never answered on PORT {port}:\n{}", printed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let sent = client
        .post(format!("{web}/emails"))
        .bearer_auth(&mail.app.key)
        .json(&json!({ "from": "Acme <hello@acme.test>", "to": "pat@inbox.test", "subject": "Deployed", "text": "From the web dyno." }))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 200, "{}", sent.text().await.unwrap());
    let id = sent.json::<serde_json::Value>().await.unwrap()["id"].as_str().unwrap().to_string();
    // Nothing in this test process delivers: the Procfile's worker does.
    let sent_at = Instant::now();
    loop {
        let email = mail.app.get(&format!("/emails/{id}")).await;
        if email.body["last_event"] == "delivered" {
            break;
        }
        let ended = running.0.try_wait().unwrap();
        assert!(
            ended.is_none() && sent_at.elapsed() < Duration::from_secs(30),
            "email {id} was not delivered ({}); honcho {}:\n{}",
            email.body["last_event"],
            if ended.is_some() { "has ended" } else { "is running" },
            printed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let received = mail.sink.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(received[0].header("Subject").as_deref(), Some("Deployed"));

    // The inbound process answers SMTP on its address.
    let mut greeting = [0u8; 3];
    let mut stream = tests::eventually(|| async { tokio::net::TcpStream::connect(("127.0.0.1", smtp_port)).await.ok() }).await;
    tokio::io::AsyncReadExt::read_exact(&mut stream, &mut greeting).await.unwrap();
    assert_eq!(&greeting, b"220");
}
