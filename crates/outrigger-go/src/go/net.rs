//! Go's `net` host and port rules: `net.SplitHostPort` with Go's `*net.AddrError` texts.

/// Go's `*net.AddrError`: `address ADDR: why` (the reason alone when the address is empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{err}", if .addr.is_empty() { String::new() } else { format!("address {}: ", .addr) })]
pub struct AddrError {
    /// The text given.
    pub addr: String,
    /// What is wrong (`missing port in address`, `too many colons in address`, ...).
    pub err: &'static str,
}

/// Go `net.SplitHostPort` with its error texts.
pub fn split_host_port(hostport: &str) -> Result<(&str, &str), AddrError> {
    let addr_err = |err: &'static str| AddrError {
        addr: hostport.to_string(),
        err,
    };
    let Some(i) = hostport.rfind(':') else {
        return Err(addr_err("missing port in address"));
    };
    let (host, j, k);
    if hostport.starts_with('[') {
        let Some(end) = hostport.find(']') else {
            return Err(addr_err("missing ']' in address"));
        };
        if end + 1 == hostport.len() {
            return Err(addr_err("missing port in address"));
        } else if end + 1 != i {
            if hostport.as_bytes()[end + 1] == b':' {
                return Err(addr_err("too many colons in address"));
            }
            return Err(addr_err("missing port in address"));
        }
        host = &hostport[1..end];
        j = 1;
        k = end + 1;
    } else {
        host = &hostport[..i];
        if host.contains(':') {
            return Err(addr_err("too many colons in address"));
        }
        j = 0;
        k = 0;
    }
    if hostport[j..].contains('[') {
        return Err(addr_err("unexpected '[' in address"));
    }
    if hostport[k..].contains(']') {
        return Err(addr_err("unexpected ']' in address"));
    }
    Ok((host, &hostport[i + 1..]))
}

#[cfg(test)]
mod tests {
    use super::split_host_port;

    /// Go's documented `net.SplitHostPort` results and `*net.AddrError` texts.
    #[test]
    fn split_host_port_as_go() {
        assert_eq!(split_host_port("a.b:80"), Ok(("a.b", "80")));
        assert_eq!(split_host_port("[::1]:15000"), Ok(("::1", "15000")));
        assert_eq!(split_host_port(":x"), Ok(("", "x")));
        let e = |s: &str| split_host_port(s).unwrap_err().to_string();
        assert_eq!(e(""), "missing port in address");
        assert_eq!(e("host"), "address host: missing port in address");
        assert_eq!(e("::1:80"), "address ::1:80: too many colons in address");
        assert_eq!(e("[::1"), "address [::1: missing ']' in address");
        assert_eq!(e("[::1]x:80"), "address [::1]x:80: missing port in address");
        assert_eq!(e("a[b:80"), "address a[b:80: unexpected '[' in address");
        assert_eq!(e("a]b:80"), "address a]b:80: unexpected ']' in address");
    }
}
