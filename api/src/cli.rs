//! The `herald` command line: the operator's contract.

use schema::store::switches::Switch;
use crate::app::Application;
use crate::config::Config;
use clap::{Parser, Subcommand};
use schema::model::Permission;
use schema::store::{api_keys, teams};
use serde_json::json;
use std::time::Duration;

/// Herald: a self-hostable email platform.
#[derive(Parser)]
#[command(name = "herald", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the API on HERALD_HTTP_ADDR (or every interface on PORT), with the job workers and,
    /// when HERALD_SMTP_ADDR is set, the inbound SMTP server, unless --no-worker.
    Serve {
        /// Serve the API only (no job workers, no inbound SMTP server).
        #[arg(long)]
        no_worker: bool,
    },
    /// Run the job workers only.
    Worker,
    /// Run the inbound SMTP server on HERALD_SMTP_ADDR (default 127.0.0.1:2525).
    Inbound,
    /// Apply the database migrations (safe to repeat).
    Migrate,
    /// Print the OpenAPI document.
    Openapi,
    /// Manage teams.
    Team {
        #[command(subcommand)]
        command: TeamCommand,
    },
    /// Show job counts per queue and status, and the failed jobs with their last error.
    Jobs,
    /// Pause or resume marketing (broadcast) sends for every team: while paused,
    /// `POST /broadcasts/{id}/send` answers 403. Prints { "marketing": "paused" | "enabled" }.
    Marketing {
        #[command(subcommand)]
        command: SwitchCommand,
    },
    /// Pause or resume every send accepted through the API, for every team: while paused,
    /// `POST /emails` and `POST /emails/batch` answer `503 service_unavailable` with
    /// `retry-after`; mail accepted before keeps going out. Prints { "sending": "paused" | "enabled" }.
    Sending {
        #[command(subcommand)]
        command: SwitchCommand,
    },
}

#[derive(Subcommand)]
pub enum SwitchCommand {
    /// Switch it off for every team.
    Pause,
    /// Switch it back on.
    Resume,
}

#[derive(Subcommand)]
pub enum TeamCommand {
    /// Create a team and its first full-access key; prints { "team_id", "api_key" }.
    Create {
        /// The team's name (1 to 80 characters).
        #[arg(long)]
        name: String,
        /// Do nothing (and print nothing) when the database already has a team.
        #[arg(long)]
        if_none: bool,
    },
    /// Change a team's plan or its sending sandbox; prints { "team_id", "plan", "sandbox_regions" }.
    Update {
        /// The team's id.
        #[arg(long)]
        team: uuid::Uuid,
        /// The plan's code (`free`, `pro`, `scale`): its quotas apply at once.
        #[arg(long)]
        plan: Option<String>,
        /// The regions kept in the sending sandbox, comma-separated; `none` lets the team send
        /// to anyone.
        #[arg(long)]
        sandbox: Option<String>,
    },
    /// Invite an address to a team and mail the invitation (into the outbox in development);
    /// prints { "invitation_id", "team_id", "email", "role", "link", "mailed" }. The link works
    /// for 7 days; opening it signs in to, or creates, the address's account.
    Invite {
        /// The team's id.
        #[arg(long)]
        team: uuid::Uuid,
        /// The address to invite.
        #[arg(long)]
        email: String,
        /// `admin`, `member` or `viewer`; by default `admin` while the team has no admin (a team
        /// made by `herald team create`), else `member`.
        #[arg(long)]
        role: Option<String>,
    },
    /// Move a team to sending tier 3 (`trusted`) after an operator's review, or with
    /// `--revoke` back to what its domains and payments allow; prints { "team_id", "tier" }.
    Trust {
        /// The team's id.
        #[arg(long)]
        team: uuid::Uuid,
        /// Take the trust back.
        #[arg(long)]
        revoke: bool,
    },
    /// Decide a team's limit request; prints the request as `GET /billing/limit-requests`
    /// lists it. An approval becomes the team's own limit at once.
    Review {
        /// The request's id.
        #[arg(long)]
        request: uuid::Uuid,
        /// `approve` or `decline`.
        #[arg(long)]
        decision: String,
        /// A note the team reads with the decision.
        #[arg(long)]
        note: Option<String>,
    },
    /// Print a team's contacts for billing: { "team_id", "contacts", "billable_contacts",
    /// "peak_billable_contacts" } (billable: subscribed to a topic, not suppressed).
    Usage {
        /// The team's id.
        #[arg(long)]
        team: uuid::Uuid,
    },
}

/// Runs one command.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Openapi => {
            print!("{}", crate::document::document_json());
            Ok(())
        }
        Command::Marketing { command } => flip(Switch::Marketing, "marketing", command).await,
        Command::Sending { command } => flip(Switch::Sending, "sending", command).await,
        Command::Migrate => {
            let config = Config::from_env()?;
            let pool = schema::connect(&config.database_url, 2).await?;
            schema::migrate(&pool).await?;
            eprintln!("migrations applied");
            Ok(())
        }
        Command::Team { command: TeamCommand::Create { name, if_none } } => {
            let config = Config::from_env()?;
            let pool = schema::connect(&config.database_url, 2).await?;
            let mut conn = pool.acquire().await?;
            if if_none && teams::count(&mut conn).await? > 0 {
                return Ok(());
            }
            let (team_id, token) = create_team(&pool, &name).await?;
            if config.is_development() {
                crate::routes::pages::outbox::ensure_dev_senders(&pool).await?;
            }
            println!("{}", json!({ "team_id": team_id, "api_key": token }));
            Ok(())
        }
        Command::Team { command: TeamCommand::Update { team, plan, sandbox } } => {
            let sandbox = sandbox.as_deref().map(sandbox_regions).transpose()?;
            let config = Config::from_env()?;
            let pool = schema::connect(&config.database_url, 2).await?;
            let mut conn = pool.acquire().await?;
            if let Some(plan) = &plan {
                anyhow::ensure!(teams::plan_exists(&mut conn, plan).await?, "there is no plan {plan:?}");
            }
            anyhow::ensure!(
                teams::set_plan_and_sandbox(&mut conn, team, plan.as_deref(), sandbox.as_deref()).await?,
                "there is no team {team}"
            );
            let updated = teams::get(&mut conn, team).await?.ok_or_else(|| anyhow::anyhow!("there is no team {team}"))?;
            println!("{}", json!({ "team_id": team, "plan": updated.plan_code, "sandbox_regions": updated.sandbox_regions }));
            Ok(())
        }
        Command::Team { command: TeamCommand::Invite { team, email, role } } => {
            let config = Config::from_env()?;
            let pool = schema::connect(&config.database_url, 2).await?;
            if config.is_development() {
                crate::routes::pages::outbox::ensure_dev_senders(&pool).await?;
            }
            let invited = invite(&pool, &config, team, &email, role).await?;
            println!("{invited}");
            Ok(())
        }
        Command::Team { command: TeamCommand::Trust { team, revoke } } => {
            let config = Config::from_env()?;
            let pool = schema::connect(&config.database_url, 2).await?;
            let mut tx = pool.begin().await?;
            let tier = schema::store::stripe::trust(&mut tx, team, !revoke).await?.ok_or_else(|| anyhow::anyhow!("there is no team {team}"))?;
            tx.commit().await?;
            println!("{}", json!({ "team_id": team, "tier": tier }));
            Ok(())
        }
        Command::Team { command: TeamCommand::Review { request, decision, note } } => {
            let approve = match decision.as_str() {
                "approve" => true,
                "decline" => false,
                other => anyhow::bail!("--decision is approve or decline, not {other:?}"),
            };
            let config = Config::from_env()?;
            let pool = schema::connect(&config.database_url, 2).await?;
            let mut tx = pool.begin().await?;
            let decided = schema::store::billing_changes::review(&mut tx, request, approve, note.as_deref())
                .await?
                .ok_or_else(|| anyhow::anyhow!("there is no pending limit request {request}"))?;
            tx.commit().await?;
            let printed = poem_openapi::types::ToJSON::to_json(&crate::routes::billing::limits::view(decided)).unwrap_or_default();
            println!("{printed}");
            Ok(())
        }
        Command::Team { command: TeamCommand::Usage { team } } => {
            let config = Config::from_env()?;
            let pool = schema::connect(&config.database_url, 2).await?;
            let mut conn = pool.acquire().await?;
            anyhow::ensure!(teams::get(&mut conn, team).await?.is_some(), "there is no team {team}");
            let contacts = schema::store::contacts::count(&mut conn, team).await?;
            let (billable, peak) = schema::store::contacts::billable(&mut conn, team).await?;
            println!("{}", json!({ "team_id": team, "contacts": contacts, "billable_contacts": billable, "peak_billable_contacts": peak }));
            Ok(())
        }
        Command::Jobs => {
            let config = Config::from_env()?;
            let pool = schema::connect(&config.database_url, 2).await?;
            let mut conn = pool.acquire().await?;
            let counts = schema::store::jobs::counts(&mut conn).await?;
            let failed = schema::store::jobs::failed(&mut conn, 50).await?;
            let health = schema::store::jobs::queue_health(&mut conn, 3.0 * jobs::runtime::HEARTBEAT.as_secs_f64()).await?;
            let stuck = schema::store::jobs::stuck_loops(&mut conn, 3.0 * jobs::supervise::REPORT_EVERY.as_secs_f64()).await?;
            println!("{}", serde_json::to_string_pretty(&json!({ "queues": counts, "health": health, "stuck_loops": stuck, "failed": failed }))?);
            Ok(())
        }
        Command::Serve { no_worker } => serve(!no_worker).await,
        Command::Worker => work().await,
        Command::Inbound => inbound().await,
    }
}

/// `herald team invite`: the ordinary invitation, made and mailed by the operator.
async fn invite(pool: &sqlx::PgPool, config: &Config, team: uuid::Uuid, email: &str, role: Option<String>) -> anyhow::Result<serde_json::Value> {
    let refused = |error: crate::http::error::ApiError| {
        let fields: Vec<String> = error.errors.iter().map(|e| format!("{} {}", e.path, e.message)).collect();
        anyhow::anyhow!("{} {}", error.message, fields.join("; "))
    };
    let email = crate::routes::people::login::address(Some(email.to_string())).map_err(refused)?;
    let mut tx = pool.begin().await?;
    anyhow::ensure!(teams::get(&mut tx, team).await?.is_some(), "there is no team {team}");
    let role = match role {
        Some(role) => role,
        None if schema::store::people::members(&mut tx, team).await?.iter().any(|m| m.role == "admin") => "member".to_string(),
        None => "admin".to_string(),
    };
    let role = crate::routes::people::session::role(Some(crate::http::fields::Choice::new(role))).map_err(refused)?;
    let invited = crate::routes::people::invite::invite(&mut tx, config, team, &email, &role, crate::routes::people::invite::Inviter::Operator).await.map_err(refused)?;
    tx.commit().await?;
    if !invited.mailed {
        eprintln!("account mail is off (set HERALD_SYSTEM_FROM to a sender on a verified domain): hand the link over yourself");
    }
    Ok(json!({
        "invitation_id": invited.invitation.id,
        "team_id": team,
        "email": email,
        "role": role,
        "link": invited.link,
        "mailed": invited.mailed,
    }))
}

/// `none`, or comma-separated region names.
fn sandbox_regions(raw: &str) -> anyhow::Result<Vec<String>> {
    if raw.trim() == "none" {
        return Ok(Vec::new());
    }
    let mut regions = Vec::new();
    for name in raw.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let region: schema::domain::Region = serde_json::from_value(json!(name))
            .map_err(|_| anyhow::anyhow!("{name:?} is not a region (us-east-1, eu-west-1, sa-east-1, ap-northeast-1)"))?;
        if !regions.contains(&region.as_str().to_string()) {
            regions.push(region.as_str().to_string());
        }
    }
    anyhow::ensure!(!regions.is_empty(), "--sandbox takes `none` or region names");
    Ok(regions)
}

/// Creates a team on the free plan with a full-access key named "Default".
pub async fn create_team(pool: &sqlx::PgPool, name: &str) -> anyhow::Result<(uuid::Uuid, String)> {
    let name = name.trim();
    anyhow::ensure!((1..=80).contains(&name.chars().count()), "a team name has 1 to 80 characters");
    let team_id = schema::ids::new_id();
    let slug = format!("{}-{}", slugify(name), &team_id.simple().to_string()[24..]);
    let token = schema::secret::mint("rk_");
    let mut tx = pool.begin().await?;
    teams::insert(&mut tx, team_id, name, &slug).await?;
    api_keys::insert(
        &mut tx,
        &api_keys::NewApiKey {
            id: schema::ids::new_id(),
            team_id,
            name: "Default",
            permission: Permission::FullAccess,
            domain_id: None,
            token_hash: &token.hash,
            key_prefix: &token.prefix,
            inbox_access: schema::model::InboxAccess::None,
            inbox_channel_ids: None,
        },
    )
    .await?;
    tx.commit().await?;
    Ok((team_id, token.plaintext))
}

fn slugify(name: &str) -> String {
    let slug: String = name
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    if slug.is_empty() { "team".into() } else { slug.chars().take(40).collect() }
}

async fn serve(with_workers: bool) -> anyhow::Result<()> {
    let mut config = Config::from_env()?;
    if with_workers {
        config.db_max_connections = jobs::runtime::pool_size(config.db_max_connections);
    }
    let app = Application::build(config.clone()).await?;
    tracing::info!(addr = %config.http_addr, port = app.port(), with_workers, "serving");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let workers = with_workers.then(|| {
        let pool = app.state().pool.clone();
        let mut stopped = stopped.clone();
        let options = worker_options(&config, app.state().checker.clone());
        tokio::spawn(async move {
            jobs::run(pool, options, async move {
                let _ = stopped.wait_for(|s| *s).await;
            })
            .await
        })
    });
    // `--no-worker` is the API alone (the Procfile's `web`): the `inbound` process, which reads
    // the same environment, serves HERALD_SMTP_ADDR.
    let inbound = match config.smtp_addr.filter(|_| with_workers) {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            tracing::info!(%addr, "inbound SMTP");
            let (pool, settings, mut stopped) = (app.state().pool.clone(), config.inbound()?, stopped.clone());
            Some(tokio::spawn(jobs::inbound::serve(pool, settings, listener, async move {
                let _ = stopped.wait_for(|s| *s).await;
            })))
        }
        None => None,
    };
    let server = {
        let mut stopped = stopped.clone();
        app.run(async move {
            let _ = stopped.wait_for(|s| *s).await;
        })
    };
    let signal = async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        let _ = stop.send(true);
    };
    let (served, ()) = tokio::join!(server, signal);
    if let Some(workers) = workers {
        workers.await??;
    }
    if let Some(inbound) = inbound {
        inbound.await??;
    }
    served
}

async fn inbound() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let addr = config.smtp_addr.unwrap_or_else(|| ([127, 0, 0, 1], 2525).into());
    let pool = schema::connect_when_up(&config.database_url, config.db_max_connections, schema::WORKER_ACQUIRE_TIMEOUT).await?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "inbound SMTP");
    jobs::inbound::serve(pool, config.inbound()?, listener, shutdown_signal()).await
}

async fn work() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let pool = schema::connect_when_up(&config.database_url, jobs::runtime::pool_size(config.db_max_connections), schema::WORKER_ACQUIRE_TIMEOUT).await?;
    tracing::info!("running job workers");
    jobs::run(pool, worker_options(&config, config.domain_checker()?), shutdown_signal()).await
}

pub fn worker_options(config: &Config, checker: jobs::domains::DomainChecker) -> jobs::WorkerOptions {
    let delivery = config.delivery(checker.dns.clone());
    jobs::WorkerOptions {
        concurrency: config.worker_concurrency,
        deliver_concurrency: config.deliver_concurrency,
        delivery,
        webhooks: jobs::webhooks::WebhookSettings {
            retry_schedule: config.webhook_retry_schedule.clone(),
            timeout: Duration::from_secs(config.webhook_timeout_seconds),
            allow_private: config.webhook_allow_private,
            concurrency: config.webhook_concurrency,
            per_endpoint: config.webhook_concurrency.div_ceil(4).max(1),
            disable_after: config.webhook_disable_after,
        },
        shutdown_timeout: Duration::from_secs(config.shutdown_seconds),
        schedules: true,
        checker,
        broadcasts: jobs::broadcasts::BroadcastSettings {
            public_url: config.public_url.clone(),
            page_size: config.broadcast_page_size,
            development: config.is_development(),
        },
        automations: jobs::automations::AutomationSettings {
            public_url: config.public_url.clone(),
            concurrency: config.automation_concurrency,
            development: config.is_development(),
        },
        stripe: config.stripe.as_ref().and_then(|s| jobs::stripe::Stripe::new(&s.api_base, &s.secret_key, s.timeout).ok()),
        migrations: config.migration_settings(),
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = terminate => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_slugs_are_lower_case_words_joined_by_dashes() {
        assert_eq!(slugify("Acme, Inc."), "acme-inc");
        assert_eq!(slugify("!!!"), "team");
    }
}

/// Sets a platform-wide switch and prints its new state.
async fn flip(switch: Switch, name: &str, command: SwitchCommand) -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let pool = schema::connect(&config.database_url, 2).await?;
    let enabled = matches!(command, SwitchCommand::Resume);
    schema::store::switches::set(&mut *pool.acquire().await?, switch, enabled).await?;
    println!("{}", json!({ name: if enabled { "enabled" } else { "paused" } }));
    Ok(())
}
