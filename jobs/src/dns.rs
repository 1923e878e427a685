//! DNS lookups through hickory-resolver against the operator's nameservers
//! (`HERALD_DNS_SERVERS`), or the system's. No cache: a check always asks the servers.

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::rr::rdata::CNAME;
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use std::net::SocketAddr;
use std::time::Duration;

/// What a lookup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Records of the asked type at the name: TXT strings joined, CNAME targets and MX
    /// exchanges lower-case without the trailing dot (MX as `priority host`).
    Found(Vec<String>),
    /// NXDOMAIN, or the name has no record of that type.
    NotFound,
    /// DNS did not answer usefully (timeout, refused connection, SERVFAIL, REFUSED).
    Unreachable(String),
}

impl Lookup {
    pub fn values(&self) -> &[String] {
        match self {
            Lookup::Found(values) => values,
            _ => &[],
        }
    }
}

/// A shareable resolver.
#[derive(Clone)]
pub struct Dns {
    resolver: TokioResolver,
}

impl std::fmt::Debug for Dns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dns")
    }
}

impl Dns {
    /// A resolver asking `servers` (UDP, then TCP for truncated answers), or the system's
    /// nameservers when the list is empty.
    pub fn new(servers: &[SocketAddr], timeout: Duration) -> anyhow::Result<Dns> {
        let config = if servers.is_empty() {
            let (config, _) = hickory_resolver::system_conf::read_system_conf()?;
            config
        } else {
            ResolverConfig::from_name_servers(
                servers
                    .iter()
                    .map(|server| {
                        let mut udp = ConnectionConfig::udp();
                        udp.port = server.port();
                        let mut tcp = ConnectionConfig::tcp();
                        tcp.port = server.port();
                        NameServerConfig::new(server.ip(), true, vec![udp, tcp])
                    })
                    .collect(),
            )
        };
        let mut options = ResolverOpts::default();
        options.cache_size = 0;
        options.timeout = timeout;
        options.attempts = 1;
        options.ndots = 0;
        options.use_hosts_file = ResolveHosts::Never;
        let resolver = TokioResolver::builder_with_config(config, TokioRuntimeProvider::default()).with_options(options).build()?;
        Ok(Dns { resolver })
    }

    /// TXT records at `name`, each record's strings joined.
    pub async fn txt(&self, name: &str) -> Lookup {
        self.lookup(name, RecordType::TXT, |data| match data {
            RData::TXT(txt) => Some(txt.txt_data.iter().map(|s| String::from_utf8_lossy(s).into_owned()).collect()),
            _ => None,
        })
        .await
    }

    /// The CNAME target at `name`.
    pub async fn cname(&self, name: &str) -> Lookup {
        self.lookup(name, RecordType::CNAME, |data| match data {
            RData::CNAME(CNAME(target)) => Some(host(target)),
            _ => None,
        })
        .await
    }

    /// MX records at `name`, as `priority host`.
    pub async fn mx(&self, name: &str) -> Lookup {
        self.lookup(name, RecordType::MX, |data| match data {
            RData::MX(mx) => Some(format!("{} {}", mx.preference, host(&mx.exchange))),
            _ => None,
        })
        .await
    }

    /// The first record found at `name` among CNAME, MX, TXT and A, as `(type, value)`.
    pub async fn anything_at(&self, name: &str) -> Result<Option<(&'static str, String)>, String> {
        for (kind, lookup) in [
            ("CNAME", self.cname(name).await),
            ("MX", self.mx(name).await),
            ("TXT", self.txt(name).await),
            ("A", self.a(name).await),
        ] {
            match lookup {
                Lookup::Found(values) => return Ok(values.into_iter().next().map(|v| (kind, v))),
                Lookup::NotFound => {}
                Lookup::Unreachable(error) => return Err(error),
            }
        }
        Ok(None)
    }

    /// The addresses of a host: its A records, else its AAAA records.
    pub async fn ip(&self, name: &str) -> Lookup {
        match self.a(name).await {
            Lookup::NotFound => {
                self.lookup(name, RecordType::AAAA, |data| match data {
                    RData::AAAA(aaaa) => Some(aaaa.0.to_string()),
                    _ => None,
                })
                .await
            }
            found => found,
        }
    }

    async fn a(&self, name: &str) -> Lookup {
        self.lookup(name, RecordType::A, |data| match data {
            RData::A(a) => Some(a.0.to_string()),
            _ => None,
        })
        .await
    }

    async fn lookup(&self, name: &str, kind: RecordType, value: impl Fn(&RData) -> Option<String>) -> Lookup {
        let Ok(mut fqdn) = Name::from_ascii(name) else {
            return Lookup::NotFound;
        };
        fqdn.set_fqdn(true);
        match self.resolver.lookup(fqdn.clone(), kind).await {
            Ok(lookup) => {
                // Answers may carry a CNAME chain: keep records of the asked type owned by the name.
                let values: Vec<String> = lookup
                    .answers()
                    .iter()
                    .filter(|record| record.record_type() == kind && record.name == fqdn)
                    .filter_map(|record| value(&record.data))
                    .collect();
                if values.is_empty() { Lookup::NotFound } else { Lookup::Found(values) }
            }
            Err(NetError::Dns(DnsError::NoRecordsFound(_))) => Lookup::NotFound,
            Err(error) => Lookup::Unreachable(error.to_string()),
        }
    }
}

fn host(name: &Name) -> String {
    name.to_ascii().trim_end_matches('.').to_ascii_lowercase()
}
