//! Network addresses the service must never reach on a client's behalf.

/// Whether an address is loopback, private, link-local, CGNAT, unique-local, unspecified,
/// broadcast or multicast: never fetched from or delivered to for a client.
pub fn is_internal(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.octets()[0] == 0
                || (v4.octets()[0] == 100 && (64..128).contains(&v4.octets()[1]))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

/// Resolves `host` and answers its addresses, refusing a name that does not resolve or (unless
/// `allow_private`) one with any internal address. The message reads after the host's name.
pub async fn resolve_public(host: &str, port: u16, allow_private: bool) -> Result<Vec<std::net::SocketAddr>, String> {
    let addresses: Vec<std::net::SocketAddr> =
        tokio::net::lookup_host((host, port)).await.map_err(|_| format!("`{host}` does not resolve"))?.collect();
    if addresses.is_empty() {
        return Err(format!("`{host}` does not resolve"));
    }
    if !allow_private && addresses.iter().any(|a| is_internal(a.ip())) {
        return Err(format!("`{host}` resolves to a loopback, private or link-local address, which is blocked"));
    }
    Ok(addresses)
}
