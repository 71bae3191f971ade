//! The listening socket. `--address ::` (the default) listens dual-stack: one IPv6 socket with
//! `IPV6_V6ONLY` off, which accepts IPv4 connections too (as IPv4-mapped addresses), so the
//! webhook answers on IPv4-only, IPv6-only and dual-stack clusters alike. Where the kernel has
//! no IPv6 (the socket cannot be created or bound), it falls back to `0.0.0.0` with a warning.
//! Any other address is bound as given.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::{Context, Result};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;

/// Pending connections the kernel queues (tokio's default).
const BACKLOG: i32 = 1024;

fn socket(addr: SocketAddr, dual_stack: bool) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if dual_stack {
        socket.set_only_v6(false)?;
    }
    // As tokio's `TcpListener::bind` on Unix: a restarted server rebinds a port whose old
    // connections are still in TIME_WAIT.
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Linux's `EAFNOSUPPORT` (no IPv6 in the kernel); other kernels fall back through the error
/// kinds in [`no_ipv6`].
const EAFNOSUPPORT: i32 = 97;

/// Whether `e` says the host has no IPv6 (rather than, say, a port in use).
fn no_ipv6(e: &io::Error) -> bool {
    e.raw_os_error() == Some(EAFNOSUPPORT)
        || e.kind() == io::ErrorKind::AddrNotAvailable
        || e.kind() == io::ErrorKind::Unsupported
}

/// Listen on `address`:`port` (dual-stack for `::`, see the module documentation).
pub fn bind(address: IpAddr, port: u16) -> Result<TcpListener> {
    let addr = SocketAddr::new(address, port);
    let std = if address == IpAddr::V6(Ipv6Addr::UNSPECIFIED) {
        match socket(addr, true) {
            Ok(s) => s,
            Err(e) if no_ipv6(&e) => {
                let v4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port);
                tracing::warn!(error = %e, "no IPv6 on this host: listening on {v4} (IPv4 only)");
                socket(v4, false).with_context(|| format!("listening on {v4}"))?
            }
            Err(e) => return Err(e).with_context(|| format!("listening on {addr}")),
        }
    } else {
        socket(addr, false).with_context(|| format!("listening on {addr}"))?
    };
    TcpListener::from_std(std).with_context(|| format!("listening on {addr}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv6_here() -> bool {
        std::net::TcpListener::bind("[::1]:0").is_ok()
    }

    #[tokio::test]
    async fn the_default_address_accepts_ipv4_and_ipv6() {
        let listener = bind(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0).expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let v4 = tokio::net::TcpStream::connect(("127.0.0.1", port)).await;
        assert!(v4.is_ok(), "IPv4 client: {v4:?}");
        let (_, peer) = listener.accept().await.expect("accept");
        assert!(peer.ip().to_canonical().is_ipv4(), "{peer}");
        if ipv6_here() {
            let v6 = tokio::net::TcpStream::connect(("::1", port)).await;
            assert!(v6.is_ok(), "IPv6 client: {v6:?}");
            listener.accept().await.expect("accept");
        } else {
            eprintln!("NOTICE: no IPv6 loopback here; the IPv6 client was not tried");
        }
    }

    #[tokio::test]
    async fn an_explicit_ipv4_address_is_ipv4_only() {
        let listener = bind(IpAddr::V4(Ipv4Addr::LOCALHOST), 0).expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert!(tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok());
        if ipv6_here() {
            assert!(tokio::net::TcpStream::connect(("::1", port)).await.is_err());
        }
    }

    #[test]
    fn a_port_in_use_is_an_error_not_a_fallback() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let first = bind(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0).expect("bind");
            let port = first.local_addr().expect("addr").port();
            let e = bind(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port).expect_err("in use");
            assert!(format!("{e:#}").contains(&format!("[::]:{port}")), "{e:#}");
        });
    }
}
