//! Go's `netip.ParsePrefix` error texts.

use super::*;

#[test]
fn netip_prefix_errors() {
    let e = |s: &str| parse_prefix(s).unwrap_err().to_string();
    assert_eq!(
        e("1.2.3.4/01"),
        "netip.ParsePrefix(\"1.2.3.4/01\"): bad bits after slash: \"01\""
    );
    assert_eq!(
        e("01.2.3.4/8"),
        "netip.ParsePrefix(\"01.2.3.4/8\"): ParseAddr(\"01.2.3.4\"): IPv4 field has octet with leading zero"
    );
    assert_eq!(
        e("1.2.3/8"),
        "netip.ParsePrefix(\"1.2.3/8\"): ParseAddr(\"1.2.3\"): IPv4 address too short"
    );
    assert_eq!(
        e("1.2.3.256/8"),
        "netip.ParsePrefix(\"1.2.3.256/8\"): ParseAddr(\"1.2.3.256\"): IPv4 field has value >255"
    );
    assert_eq!(
        e("fe80::1%eth0/64"),
        "netip.ParsePrefix(\"fe80::1%eth0/64\"): IPv6 zones cannot be present in a prefix"
    );
    assert_eq!(
        e("::1/129"),
        "netip.ParsePrefix(\"::1/129\"): prefix length out of range"
    );
    assert_eq!(
        e("1:2:3/64"),
        "netip.ParsePrefix(\"1:2:3/64\"): ParseAddr(\"1:2:3\"): address string too short"
    );
    assert_eq!(
        e("1::2::3/64"),
        "netip.ParsePrefix(\"1::2::3/64\"): ParseAddr(\"1::2::3\"): multiple :: in address (at \":3\")"
    );
    assert_eq!(
        e("12345::/64"),
        "netip.ParsePrefix(\"12345::/64\"): ParseAddr(\"12345::\"): each group must have 4 or less digits (at \"12345::\")"
    );
    assert_eq!(
        e("::ffff:1.2.3/96"),
        "netip.ParsePrefix(\"::ffff:1.2.3/96\"): ParseAddr(\"::ffff:1.2.3\"): IPv4 address too short"
    );
    assert_eq!(
        e("1:2:3:4:5:6:7:8:9/64"),
        "netip.ParsePrefix(\"1:2:3:4:5:6:7:8:9/64\"): ParseAddr(\"1:2:3:4:5:6:7:8:9\"): trailing garbage after address (at \"9\")"
    );
    assert_eq!(e("fe80::1%/64"), "netip.ParsePrefix(\"fe80::1%/64\"): ParseAddr(\"fe80::1%\"): zone must be a non-empty string");
    assert!(parse_prefix("::ffff:1.2.3.4/128").is_ok());
    assert!(parse_prefix("1:2:3:4:5:6:7:8/128").is_ok());
    assert!(parse_prefix("1.2.3.4/32").is_ok());
    assert!(parse_prefix("::/0").is_ok());
}
