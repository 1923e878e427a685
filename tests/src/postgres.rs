//! A private PostgreSQL server for the fault tests that restart it or fill its connection slots:
//! its own data directory (`initdb`), its own port, started and restarted with `pg_ctl`, so the
//! server every other test shares is never touched. As root, the server runs as the `postgres`
//! user (PostgreSQL refuses to run as root).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running private server, stopped and removed when dropped.
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
}

/// The newest installed server's programs (`HERALD_TEST_PG_BIN` overrides).
fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("HERALD_TEST_PG_BIN") {
        return dir.into();
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL's server programs under /usr/lib/postgresql (or set HERALD_TEST_PG_BIN)")
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, bin)| bin.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions.pop().expect("an installed PostgreSQL server").1
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0").unwrap_or(false)
}

impl Cluster {
    /// Creates and starts a server on a free loopback port with `max_connections` slots.
    pub fn start(max_connections: u32) -> Cluster {
        let bin = bin_dir();
        let port = crate::bench::free_port().expect("a free port");
        let dir = std::env::temp_dir().join(format!("herald-pg-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cluster = Cluster { dir, bin, port };
        if is_root() {
            let chowned = Command::new("chown").args(["postgres:postgres"]).arg(&cluster.dir).status().unwrap();
            assert!(chowned.success(), "chown the data directory to postgres");
        }
        cluster.run("initdb", &["-D", &cluster.data(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
        let settings = format!(
            "listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\nmax_connections = {max_connections}\n\
             fsync = off\nfull_page_writes = off\nshared_buffers = 32MB\n",
            cluster.data()
        );
        let conf = Path::new(&cluster.data()).join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap();
        text.push_str(&settings);
        std::fs::write(&conf, text).unwrap();
        cluster.pg_ctl(&["start", "-w", "-t", "60"]);
        cluster
    }

    fn data(&self) -> String {
        self.dir.join("data").to_string_lossy().into_owned()
    }

    fn log(&self) -> String {
        self.dir.join("server.log").to_string_lossy().into_owned()
    }

    /// Runs one of the server's programs (as `postgres` when root); panics with its output on failure.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let output = self
            .command(program)
            .args(args).current_dir(&self.dir).output().unwrap_or_else(|e| panic!("run {program}: {e}"));
        assert!(
            output.status.success(),
            "{program} {args:?} failed:\n{}{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.log()).unwrap_or_default()
        );
        output
    }

    /// One of the server's programs, run as `postgres` when this process is root.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if is_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    fn pg_ctl(&self, args: &[&str]) {
        let mut all = vec!["-D".to_string(), self.data(), "-l".to_string(), self.log()];
        all.extend(args.iter().map(|a| a.to_string()));
        self.run("pg_ctl", &all.iter().map(String::as_str).collect::<Vec<_>>());
    }

    /// The URL of `database` on this server.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates a database with Herald's migrations applied; answers its URL.
    pub async fn migrated_database(&self, name: &str) -> String {
        use sqlx::Connection;
        let mut admin = sqlx::PgConnection::connect(&self.url("postgres")).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
        let url = self.url(name);
        let pool = sqlx::PgPool::connect(&url).await.unwrap();
        schema::migrate(&pool).await.expect("migrations apply");
        pool.close().await;
        url
    }

    /// Restarts the server as an operator would (`pg_ctl stop -m fast`, then start): every
    /// connection is closed, the server stays away for `down`, and comes back with its data.
    pub fn restart(&self, down: std::time::Duration) {
        self.stop();
        std::thread::sleep(down);
        self.resume();
    }

    /// Stops the server (`pg_ctl stop -m fast`) until [`Cluster::resume`].
    pub fn stop(&self) {
        self.pg_ctl(&["stop", "-m", "fast", "-w", "-t", "60"]);
    }

    /// Starts the stopped server again; answers once it accepts connections.
    pub fn resume(&self) {
        self.pg_ctl(&["start", "-w", "-t", "60"]);
    }

    /// The server's log so far, for a failing assertion.
    pub fn server_log(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.command("pg_ctl").args(["-D", &self.data(), "stop", "-m", "immediate"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
