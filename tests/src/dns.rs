//! A real authoritative DNS server for tests: hickory-server on 127.0.0.1 (UDP and TCP on one
//! port), answering for every name from records the test changes between calls.

use hickory_proto::op::{Edns, Header, HeaderCounts, Metadata, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, CNAME, MX, SOA, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use hickory_server::Server;
use hickory_server::net::runtime::Time;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::net::{TcpListener, UdpSocket};

fn fqdn(name: &str) -> Name {
    let mut name = Name::from_ascii(name).unwrap_or_else(|e| panic!("bad name {name:?}: {e}")).to_lowercase();
    name.set_fqdn(true);
    name
}

#[derive(Default)]
struct Records {
    sets: HashMap<(Name, RecordType), Vec<RData>>,
    /// Answer SERVFAIL to everything (a broken nameserver).
    failing: bool,
}

impl Records {
    fn answer(&self, name: &Name, kind: RecordType) -> (ResponseCode, Vec<Record>, Vec<Record>) {
        if self.failing {
            return (ResponseCode::ServFail, vec![], vec![]);
        }
        let soa = || {
            let soa = SOA::new(fqdn("ns.test"), fqdn("hostmaster.test"), 1, 3600, 600, 86400, 0);
            vec![Record::from_rdata(Name::root(), 0, RData::SOA(soa))]
        };
        if let Some(set) = self.sets.get(&(name.clone(), kind)) {
            let answers = set.iter().map(|data| Record::from_rdata(name.clone(), 60, data.clone())).collect();
            return (ResponseCode::NoError, answers, vec![]);
        }
        if self.sets.keys().any(|(owner, _)| name.zone_of(owner)) {
            (ResponseCode::NoError, vec![], soa())
        } else {
            (ResponseCode::NXDomain, vec![], soa())
        }
    }
}

/// A handle to change the records; clones share them.
#[derive(Clone, Default)]
pub struct Zone {
    records: Arc<RwLock<Records>>,
}

impl Zone {
    /// Replaces the TXT records at `name`: one record per entry, each a list of strings.
    pub fn set_txt(&self, name: &str, records: &[&[&str]]) {
        let data = records.iter().map(|strings| RData::TXT(TXT::new(strings.iter().map(|s| s.to_string()).collect()))).collect();
        self.set(name, RecordType::TXT, data);
    }

    pub fn set_cname(&self, name: &str, target: &str) {
        self.set(name, RecordType::CNAME, vec![RData::CNAME(CNAME(fqdn(target)))]);
    }

    pub fn set_mx(&self, name: &str, priority: u16, host: &str) {
        self.set(name, RecordType::MX, vec![RData::MX(MX::new(priority, fqdn(host)))]);
    }

    pub fn set_a(&self, name: &str, address: Ipv4Addr) {
        self.set(name, RecordType::A, vec![RData::A(A(address))]);
    }

    pub fn remove(&self, name: &str, kind: RecordType) {
        self.records.write().unwrap().sets.remove(&(fqdn(name), kind));
    }

    /// Makes every answer SERVFAIL (or stops doing so).
    pub fn set_failing(&self, failing: bool) {
        self.records.write().unwrap().failing = failing;
    }

    fn set(&self, name: &str, kind: RecordType, data: Vec<RData>) {
        self.records.write().unwrap().sets.insert((fqdn(name), kind), data);
    }
}

#[async_trait::async_trait]
impl RequestHandler for Zone {
    async fn handle_request<R: ResponseHandler, T: Time>(&self, request: &Request, mut response: R) -> ResponseInfo {
        let edns = request.edns.as_ref().map(|asked| {
            let mut edns = Edns::new();
            edns.set_max_payload(asked.max_payload().max(512));
            edns.set_version(0);
            edns
        });
        let mut metadata = Metadata::response_from_request(&request.metadata);
        metadata.authoritative = true;
        let (code, answers, authorities) = match request.request_info() {
            Err(_) => (ResponseCode::FormErr, vec![], vec![]),
            Ok(_) if request.metadata.op_code != OpCode::Query => (ResponseCode::NotImp, vec![], vec![]),
            Ok(info) => self.records.read().unwrap().answer(&Name::from(info.query.name()), info.query.query_type()),
        };
        metadata.response_code = code;
        let mut builder = MessageResponseBuilder::from_message_request(request);
        if let Some(edns) = &edns {
            builder.edns(edns);
        }
        let message = builder.build(metadata, &answers, &authorities, std::iter::empty(), std::iter::empty());
        match response.send_response(message).await {
            Ok(info) => info,
            Err(_) => {
                let mut failed = Metadata::response_from_request(&request.metadata);
                failed.response_code = ResponseCode::ServFail;
                ResponseInfo::from(Header { metadata: failed, counts: HeaderCounts::default() })
            }
        }
    }
}

/// A running DNS server; stops when dropped.
pub struct TestDns {
    pub zone: Zone,
    pub addr: SocketAddr,
    _server: Server<Zone>,
}

impl TestDns {
    /// Starts a server on 127.0.0.1, UDP and TCP on the same free port.
    pub async fn start() -> TestDns {
        let zone = Zone::default();
        for _ in 0..16 {
            let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
            let addr = udp.local_addr().unwrap();
            if let Ok(tcp) = TcpListener::bind(addr).await {
                let mut server = Server::new(zone.clone());
                server.register_socket(udp);
                server.register_listener(tcp, Duration::from_secs(5), 64);
                return TestDns { zone, addr, _server: server };
            }
        }
        panic!("no free port for the test DNS server");
    }
}
