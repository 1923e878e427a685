//! The Inbox benchmark, run by `scripts/bench inbox`.
//!
//! BENCH_CONVERSATIONS (200,000) conversations of five messages each (1,000,000 messages:
//! customers' messages, replies and notes of 24 words) in two channels, written straight into
//! PostgreSQL with the search vectors Herald writes. Then, with the API in this process and
//! BENCH_CLIENTS (8) concurrent clients for BENCH_SECONDS (10) each:
//! (a) `GET /inbox/conversations` with two filters (channel and status, or status and assignee;
//!     a third of the calls from a random page's cursor): p95 < 20 ms;
//! (b) `GET /inbox/search?q=` for a word that is in 0.1% of the messages (50 such words): p95 < 100 ms;
//! (c) BENCH_MESSAGES (5,000) messages written in over 32 SMTP sessions to the channel's
//!     address, half answering a conversation's message (`In-Reply-To`), half new: messages per
//!     second until every one is parsed, committed and threaded (goal >= 500/s), and a check that
//!     each answer landed in the conversation it answers.

use std::time::{Duration, Instant};
use tests::bench::setting;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use uuid::Uuid;

const DOMAIN: &str = "in.bench.test";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let conversations = setting("BENCH_CONVERSATIONS", 200_000) as i64;
    let clients = setting("BENCH_CLIENTS", 8) as usize;
    let seconds = setting("BENCH_SECONDS", 10);
    let inbound = setting("BENCH_MESSAGES", 5_000) as usize;
    // BENCH_INBOX_DATABASE: a database an earlier run loaded, measured again as it is.
    let (database_url, reused) = match std::env::var("BENCH_INBOX_DATABASE") {
        Ok(url) => (url, true),
        Err(_) => (tests::fresh_database().await, false),
    };
    let pool = schema::connect(&database_url, 40).await?;
    let desk = if reused {
        desk(&pool).await?
    } else {
        setup(&pool).await?;
        let desk = desk(&pool).await?;
        let started = Instant::now();
        load(&pool, &desk, conversations).await?;
        println!("== inbox: {} messages in {conversations} conversations written in {:.1} s", conversations * 5, started.elapsed().as_secs_f64());
        desk
    };
    let conversations: i64 = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM inbox_messages WHERE message_id LIKE 'm%@customer.bench.test' AND kind = 'customer'").fetch_one(&pool).await? / 3;

    let mut config = tests::test_config(&database_url);
    config.db_max_connections = 40;
    config.rate_limit_capacity = 1_000_000_000;
    config.rate_limit_refill = 1_000_000_000.0;
    config.smtp_max_connections_per_ip = 1_000;
    let api = tests::bench::Api::serve(&config, &pool, &database_url).await?;
    let base = api.base.clone();
    let client = reqwest::Client::builder().pool_max_idle_per_host(clients).build()?;
    let samples: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM inbox_conversations TABLESAMPLE SYSTEM (1) LIMIT 1000").fetch_all(&pool).await?;

    let list = {
        let (desk, samples) = (desk.clone(), samples.clone());
        measure(&client, &base, &desk.key, clients, seconds, move |n| {
            let status = ["open", "pending", "done"][(n / 7 % 3) as usize];
            let filters = if n % 2 == 0 {
                format!("channel_id={}&status={status}", desk.channels[(n / 3 % 2) as usize])
            } else {
                format!("status={status}&assignee_id={}", desk.people[(n / 5 % desk.people.len() as u64) as usize])
            };
            let cursor = if n % 3 == 0 { format!("&after={}", samples[(n % samples.len() as u64) as usize]) } else { String::new() };
            format!("/inbox/conversations?{filters}{cursor}")
        })
        .await?
    };
    report("(a) conversation list, two filters", &list, 20.0);
    let search = measure(&client, &base, &desk.key, clients, seconds, |n| format!("/inbox/search?q={}", rare_word(n % 50))).await?;
    report("(b) search, a word in 0.1% of messages", &search, 100.0);
    let _ = api.stop().await;

    // (c) Threading mail in through the SMTP server.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let smtp = tokio::spawn(jobs::inbound::serve(pool.clone(), config.inbound()?, listener, std::future::pending()));
    let received_before: i64 = sqlx::query_scalar("SELECT count(*) FROM inbox_messages WHERE kind = 'received'").fetch_one(&pool).await?;
    let threaded_before = threaded(&pool).await?;
    let opened_before: i64 = sqlx::query_scalar("SELECT count(*) FROM inbox_conversations").fetch_one(&pool).await?;
    let started = Instant::now();
    write_in(port, inbound, 32, conversations, received_before).await?;
    let took = started.elapsed().as_secs_f64();
    smtp.abort();
    let received = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM inbox_messages WHERE kind = 'received'").fetch_one(&pool).await? - received_before;
    anyhow::ensure!(received == inbound as i64, "{received} of {inbound} messages became Inbox messages");
    let threaded = threaded(&pool).await? - threaded_before;
    let answers = inbound.div_ceil(2) as i64;
    anyhow::ensure!(threaded == answers, "{threaded} of {answers} answers threaded into the conversation they answer");
    let opened: i64 = sqlx::query_scalar("SELECT count(*) FROM inbox_conversations").fetch_one(&pool).await?;
    println!(
        "(c) inbound mail threaded       {:>8.0} messages/s   ({inbound} over 32 SMTP sessions in {took:.2} s: {threaded} answers threaded, {} new conversations; goal >= 500)",
        inbound as f64 / took,
        opened - opened_before
    );
    Ok(())
}

/// The answers that landed in the conversation they answer: each names the message it answers
/// in its own Message-ID (`a<i>.<m>@...`).
async fn threaded(pool: &sqlx::PgPool) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM inbox_messages r JOIN inbox_messages o
             ON o.team_id = r.team_id AND o.message_id = 'm' || split_part(split_part(r.message_id, '@', 1), '.', 2) || '@customer.bench.test'
         WHERE r.kind = 'received' AND r.message_id LIKE 'a%' AND o.conversation_id = r.conversation_id",
    )
    .fetch_one(pool)
    .await?)
}

/// The team, its people (assignees), two channels and a key that reads the Inbox.
#[derive(Clone)]
struct Desk {
    team_id: Uuid,
    key: String,
    channels: Vec<Uuid>,
    people: Vec<Uuid>,
}

/// A team on the `scale` plan receiving at [`DOMAIN`], with two channels and ten members.
async fn setup(pool: &sqlx::PgPool) -> anyhow::Result<()> {
    let (team_id, _) = api::cli::create_team(pool, "Bench").await?;
    sqlx::query("UPDATE teams SET plan_code = 'scale', sending_tier = 3 WHERE id = $1").bind(team_id).execute(pool).await?;
    let dkim = schema::domain::generate_dkim_key()?;
    let domain_id: Uuid = sqlx::query_scalar(
        "INSERT INTO domains (id, team_id, name, zone, region, mail_from_code, dkim_private_key, dkim_public_key, status,
             first_verified_at, receiving_enabled)
         VALUES (herald_uuid_v7(), $1, $2, $2, 'us-east-1', 'b1', $3, $4, 'verified', now(), true) RETURNING id",
    )
    .bind(team_id)
    .bind(DOMAIN)
    .bind(&dkim.private_pem)
    .bind(&dkim.public_base64)
    .fetch_one(pool)
    .await?;
    sqlx::query(
        "INSERT INTO inbox_channels (id, team_id, domain_id, address, name)
         SELECT herald_uuid_v7(), $1, $2, a || '@' || $3, initcap(a) FROM unnest(ARRAY['support', 'billing']) a",
    )
    .bind(team_id)
    .bind(domain_id)
    .bind(DOMAIN)
    .execute(pool)
    .await?;
    sqlx::query(
        "WITH p AS (INSERT INTO people (id, email, name, password_hash)
             SELECT herald_uuid_v7(), 'agent' || n || '@people.bench.test', 'Agent ' || n, 'unused' FROM generate_series(1, 10) n RETURNING id)
         INSERT INTO memberships (team_id, person_id, role) SELECT $1, id, 'member' FROM p",
    )
    .bind(team_id)
    .execute(pool)
    .await?;
    Ok(())
}

/// The bench team's desk, with a new key that reads the Inbox.
async fn desk(pool: &sqlx::PgPool) -> anyhow::Result<Desk> {
    let team_id: Uuid = sqlx::query_scalar("SELECT team_id FROM inbox_channels LIMIT 1").fetch_one(pool).await?;
    let channels = sqlx::query_scalar("SELECT id FROM inbox_channels WHERE team_id = $1 ORDER BY address DESC").bind(team_id).fetch_all(pool).await?;
    let people = sqlx::query_scalar("SELECT person_id FROM memberships WHERE team_id = $1 ORDER BY person_id").bind(team_id).fetch_all(pool).await?;
    let token = schema::secret::mint("rk_");
    let key = schema::store::api_keys::NewApiKey {
        id: schema::ids::new_id(),
        team_id,
        name: "Desk reader",
        permission: schema::model::Permission::FullAccess,
        domain_id: None,
        token_hash: &token.hash,
        key_prefix: &token.prefix,
        inbox_access: schema::model::InboxAccess::Read,
        inbox_channel_ids: None,
    };
    schema::store::api_keys::insert(&mut *pool.acquire().await?, &key).await?;
    api::http::key_cache::settle(pool).await?;
    Ok(Desk { team_id, key: token.plaintext, channels, people })
}

/// The rare word `j` (0..50): letters only, never one of the generated words.
fn rare_word(j: u64) -> String {
    format!("zq{}{}", (b'a' + (j % 26) as u8) as char, (b'a' + (j / 26) as u8) as char)
}

/// Conversations of five messages each (customer, reply, customer, note, customer), with
/// statuses, places and assignees spread as a busy desk has them. Each message has 24 words of
/// an 8,000-word vocabulary; the messages `m` with `(m / 50) % 20 = 0` also carry the rare word
/// `m % 50`, so each rare word is in 0.1% of the messages.
async fn load(pool: &sqlx::PgPool, desk: &Desk, conversations: i64) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    sqlx::query("SET maintenance_work_mem = '1GB'").execute(&mut *conn).await?;
    sqlx::query(
        "CREATE FUNCTION pg_temp.word(k bigint) RETURNS text IMMUTABLE LANGUAGE sql AS $$
             SELECT (ARRAY['ka','lo','mi','ne','ru','sa','ti','vo','be','da','fe','gu','ha','ji','ko','la','ma','no','pe','ri'])[1 + k % 20]
                 || (ARRAY['ka','lo','mi','ne','ru','sa','ti','vo','be','da','fe','gu','ha','ji','ko','la','ma','no','pe','ri'])[1 + (k / 20) % 20]
                 || (ARRAY['n','s','t','r','l','m','k','d','p','x','y','z','b','c','f','g','h','j','v','w'])[1 + (k / 400) % 20]
         $$",
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query("DROP INDEX inbox_messages_search_idx").execute(&mut *conn).await?;
    sqlx::query(
        "CREATE TEMP TABLE conv AS
             SELECT n, herald_uuid_v7() AS id FROM generate_series(0, $1 - 1) n",
    )
    .bind(conversations)
    .execute(&mut *conn)
    .await?;
    let rare: Vec<String> = (0..50).map(rare_word).collect();
    sqlx::query(
        "CREATE TEMP TABLE msg AS
             SELECT m, m / 5 AS n, m % 5 AS k, herald_uuid_v7() AS id,
                 (SELECT string_agg(pg_temp.word((m * 7919 + i * 104729 + i * i * 31) % 8000), ' ') FROM generate_series(1, 24) i)
                     || CASE WHEN (m / 50) % 20 = 0 THEN ' ' || ($2::text[])[1 + m % 50] ELSE '' END AS text
             FROM generate_series(0, $1 * 5 - 1) m",
    )
    .bind(conversations)
    .bind(&rare)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO inbox_conversations (id, team_id, channel_id, subject, status, place, assignee_id, customer_email, customer_name,
             version, latest_message_id, latest_customer_message_id, message_count)
         SELECT c.id, $1, ($2::uuid[])[1 + c.n % 2], 'Question ' || c.n || ' about ' || pg_temp.word(c.n * 13 % 8000),
             (ARRAY['open', 'open', 'pending', 'done', 'done'])[1 + (c.n / 2) % 5],
             (ARRAY['inbox', 'inbox', 'inbox', 'inbox', 'inbox', 'inbox', 'inbox', 'inbox', 'archive', 'spam'])[1 + (c.n / 10) % 10],
             CASE WHEN c.n % 4 = 0 THEN NULL ELSE ($3::uuid[])[1 + (c.n / 4) % 10] END,
             'customer' || c.n || '@mail.bench.test', 'Customer ' || c.n, 6, last.id, last.id, 5
         FROM conv c JOIN msg last ON last.m = c.n * 5 + 4",
    )
    .bind(desk.team_id)
    .bind(&desk.channels)
    .bind(&desk.people)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO inbox_messages (id, team_id, conversation_id, kind, message_id, from_email, from_name, to_addresses, subject, text,
             author_person_id, author_name, search)
         SELECT g.id, $1, c.id, g.kind, CASE WHEN g.kind = 'note' THEN NULL ELSE 'm' || g.m || '@customer.bench.test' END,
             g.from_email, '', ARRAY[g.to_email], g.subject, g.text,
             CASE WHEN g.kind IN ('reply', 'note') THEN ($3::uuid[])[1 + g.n % 10] END, CASE WHEN g.kind IN ('reply', 'note') THEN 'Agent' END,
             setweight(to_tsvector('simple', g.subject), 'A') || to_tsvector('simple', g.text) || to_tsvector('simple', g.from_email || ' ' || g.to_email)
         FROM (
             SELECT msg.*, (ARRAY['customer', 'reply', 'customer', 'note', 'customer'])[1 + msg.k] AS kind,
                 CASE WHEN msg.k IN (1, 3) THEN 'support@' || $2 ELSE 'customer' || msg.n || '@mail.bench.test' END AS from_email,
                 CASE WHEN msg.k IN (1, 3) THEN 'customer' || msg.n || '@mail.bench.test' ELSE 'support@' || $2 END AS to_email,
                 'Question ' || msg.n AS subject
             FROM msg
         ) g JOIN conv c ON c.n = g.n",
    )
    .bind(desk.team_id)
    .bind(DOMAIN)
    .bind(&desk.people)
    .execute(&mut *conn)
    .await?;
    sqlx::query("CREATE INDEX inbox_messages_search_idx ON inbox_messages USING gin (search)").execute(&mut *conn).await?;
    sqlx::query("VACUUM ANALYZE inbox_conversations").execute(&mut *conn).await?;
    sqlx::query("VACUUM ANALYZE inbox_messages").execute(&mut *conn).await?;
    Ok(())
}

/// `clients` concurrent clients calling `path(n)` for `seconds`: every call's latency, each
/// checked to answer 200.
async fn measure(client: &reqwest::Client, base: &str, key: &str, clients: usize, seconds: u64, path: impl Fn(u64) -> String + Clone + Send + 'static) -> anyhow::Result<Vec<Duration>> {
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for c in 0..clients as u64 {
        let (client, base, key, path) = (client.clone(), base.to_string(), key.to_string(), path.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut n = c * 1_000_003;
            while Instant::now() < until {
                n += 1;
                let at = Instant::now();
                let response = client.get(format!("{base}{}", path(n))).bearer_auth(&key).header("user-agent", "bench/1.0").send().await?;
                let status = response.status();
                let body = response.text().await?;
                anyhow::ensure!(status == 200, "{} answered {status}: {body}", path(n));
                latencies.push(at.elapsed());
            }
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    all.sort();
    Ok(all)
}

fn report(name: &str, latencies: &[Duration], goal_ms: f64) {
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)].as_secs_f64() * 1000.0;
    println!("{name:<40} p50 {:6.2} ms  p95 {:6.2} ms  p99 {:6.2} ms   ({} calls; goal p95 < {goal_ms} ms)", at(0.5), at(0.95), at(0.99), latencies.len());
}

/// `count` messages over `sessions` SMTP sessions to the support channel: even ones answer a
/// conversation's first customer message, odd ones are new. Each session sends its messages one
/// after another on one connection.
async fn write_in(port: u16, count: usize, sessions: usize, conversations: i64, run: i64) -> anyhow::Result<()> {
    let mut tasks = Vec::new();
    for s in 0..sessions {
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
            let (read, mut write) = stream.into_split();
            let mut read = BufReader::new(read);
            expect(&mut read, "220").await?;
            write.write_all(b"EHLO source.bench.test\r\n").await?;
            expect(&mut read, "250").await?;
            for i in (s..count).step_by(sessions) {
                let (message_id, answers) = if i % 2 == 0 {
                    // The first customer message of conversation `n` is message `5n`.
                    let m = (i as i64 * 7_919 % conversations) * 5;
                    (format!("a{i}x{run}.{m}@mail.bench.test"), format!("In-Reply-To: <m{m}@customer.bench.test>\r\n"))
                } else {
                    (format!("n{i}x{run}@mail.bench.test"), String::new())
                };
                let body = format!(
                    "From: Customer {i} <writer{i}@mail.bench.test>\r\nTo: support@{DOMAIN}\r\nSubject: Re: my order {i}\r\nMessage-ID: <{message_id}>\r\n{answers}\
                     Date: Fri, 27 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{}\r\n.\r\n",
                    "Thanks for the quick answer; the parcel has still not arrived and the tracking page shows nothing new.\r\n".repeat(20)
                );
                write.write_all(format!("MAIL FROM:<writer{i}@mail.bench.test>\r\nRCPT TO:<support@{DOMAIN}>\r\nDATA\r\n").as_bytes()).await?;
                expect(&mut read, "250").await?;
                expect(&mut read, "250").await?;
                expect(&mut read, "354").await?;
                write.write_all(body.as_bytes()).await?;
                expect(&mut read, "250").await?;
            }
            write.write_all(b"QUIT\r\n").await?;
            Ok::<_, anyhow::Error>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// Reads one SMTP reply (all its lines) and checks its code.
async fn expect(read: &mut BufReader<tokio::net::tcp::OwnedReadHalf>, code: &str) -> anyhow::Result<()> {
    loop {
        let mut line = String::new();
        anyhow::ensure!(read.read_line(&mut line).await? > 0, "the server closed the session");
        anyhow::ensure!(line.starts_with(code), "expected {code}, got {line:?}");
        if line.as_bytes().get(3) != Some(&b'-') {
            return Ok(());
        }
    }
}
