//! Go's `net/netip` address and prefix parsing (`ParseAddr`, `ParsePrefix`): which texts are
//! valid, and Go's error texts for the rest (the annotation checks report them as Istio does).

use super::quote::quote;
use super::strconv::atoi;

/// Go's `netip.parseAddrError`: `ParseAddr("x"): msg`, with ` (at "rest")` where Go names the
/// place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ParseAddr({}): {msg}{}", quote(.input), .at.as_deref().map(|a| format!(" (at {})", quote(a))).unwrap_or_default())]
pub struct AddrError {
    /// The address text.
    pub input: String,
    /// What is wrong.
    pub msg: &'static str,
    /// The rest of the text where it went wrong (never empty).
    pub at: Option<String>,
}

/// Go's `netip.ParsePrefix` error: `netip.ParsePrefix("x"): why`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("netip.ParsePrefix({}): {why}", quote(.input))]
pub struct PrefixError {
    /// The prefix text.
    pub input: String,
    /// What is wrong.
    pub why: PrefixWhy,
}

/// What is wrong with a prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixWhy {
    /// No `/`.
    #[error("no '/'")]
    NoSlash,
    /// The address before the `/`.
    #[error(transparent)]
    Addr(AddrError),
    /// An IPv6 zone (`%eth0`) before the `/`.
    #[error("IPv6 zones cannot be present in a prefix")]
    Zone,
    /// The bits after the `/` are not a canonical decimal.
    #[error("bad bits after slash: {}", quote(.0))]
    BadBits(String),
    /// More bits than the address has.
    #[error("prefix length out of range")]
    Length,
}

/// Go `netip.ParsePrefix` (validity and error texts).
pub fn parse_prefix(s: &str) -> Result<(), PrefixError> {
    let err = |why: PrefixWhy| PrefixError {
        input: s.to_string(),
        why,
    };
    let Some(i) = s.rfind('/') else {
        return Err(err(PrefixWhy::NoSlash));
    };
    let is6 = parse_addr(&s[..i]).map_err(|e| err(PrefixWhy::Addr(e)))?;
    if is6 && s[..i].contains('%') {
        return Err(err(PrefixWhy::Zone));
    }
    let bits_str = &s[i + 1..];
    let bad_bits = || err(PrefixWhy::BadBits(bits_str.to_string()));
    if bits_str.len() > 1 && !(b'1'..=b'9').contains(&bits_str.as_bytes()[0]) {
        return Err(bad_bits());
    }
    let bits: i64 = atoi(bits_str).map_err(|_| bad_bits())?;
    let max = if is6 { 128 } else { 32 };
    if !(0..=max).contains(&bits) {
        return Err(err(PrefixWhy::Length));
    }
    Ok(())
}

/// Go `netip.ParseAddr` (validity and error texts); `Ok(true)` for IPv6.
pub fn parse_addr(s: &str) -> Result<bool, AddrError> {
    for c in s.bytes() {
        match c {
            b'.' => return parse_ipv4_fields(s, 0, s.len()).map(|_| false),
            b':' => return parse_ipv6(s).map(|_| true),
            b'%' => return Err(addr_err(s, "missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(addr_err(s, "unable to parse IP", None))
}

/// Go's `parseAddrError`.
fn addr_err(input: &str, msg: &'static str, at: Option<&str>) -> AddrError {
    AddrError {
        input: input.to_string(),
        msg,
        at: at.filter(|a| !a.is_empty()).map(str::to_string),
    }
}

/// Go `parseIPv4Fields` over `input[off..end]`.
fn parse_ipv4_fields(input: &str, off: usize, end: usize) -> Result<(), AddrError> {
    let s = &input[off..end];
    let b = s.as_bytes();
    let (mut val, mut pos, mut dig_len) = (0u32, 0, 0);
    for i in 0..b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                if dig_len == 1 && val == 0 {
                    return Err(addr_err(
                        input,
                        "IPv4 field has octet with leading zero",
                        None,
                    ));
                }
                val = val * 10 + u32::from(c - b'0');
                dig_len += 1;
                if val > 255 {
                    return Err(addr_err(input, "IPv4 field has value >255", None));
                }
            }
            b'.' => {
                if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                    let msg = "IPv4 field must have at least one digit";
                    return Err(addr_err(input, msg, Some(&s[i..])));
                }
                if pos == 3 {
                    return Err(addr_err(input, "IPv4 address too long", None));
                }
                pos += 1;
                val = 0;
                dig_len = 0;
            }
            _ => return Err(addr_err(input, "unexpected character", Some(&s[i..]))),
        }
    }
    if pos < 3 {
        return Err(addr_err(input, "IPv4 address too short", None));
    }
    Ok(())
}

/// Go `parseIPv6` (netip), validity and error texts.
fn parse_ipv6(input: &str) -> Result<(), AddrError> {
    let err = |msg: &'static str, at: &str| Err(addr_err(input, msg, Some(at)));
    let (mut s, zone) = match input.find('%') {
        Some(i) if i + 1 == input.len() => {
            return Err(addr_err(input, "zone must be a non-empty string", None))
        }
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, ""),
    };
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok(());
        }
    }
    let mut i = 0;
    while i < 16 {
        let b = s.as_bytes();
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < b.len() {
            let Some(d) = (b[off] as char).to_digit(16) else {
                break;
            };
            acc = (acc << 4) + d;
            if off > 3 {
                return err("each group must have 4 or less digits", s);
            }
            if acc > 0xffff {
                return err("IPv6 field has value >=2^16", s);
            }
            off += 1;
        }
        if off == 0 {
            return err("each colon-separated field must have at least one digit", s);
        }
        if off < b.len() && b[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                let msg = "embedded IPv4 address must replace the final 2 fields of the address";
                return err(msg, s);
            }
            if i + 4 > 16 {
                let msg = "too many hex fields to fit an embedded IPv4 at the end of the address";
                return err(msg, s);
            }
            let end = input.len() - if zone.is_empty() { 0 } else { zone.len() + 1 };
            parse_ipv4_fields(input, end - s.len(), end)?;
            s = "";
            i += 4;
            break;
        }
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return err("unexpected character, want colon", s);
        } else if s.len() == 1 {
            return err("colon must be followed by more characters", s);
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return err("multiple :: in address", s);
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return err("trailing garbage after address", s);
    }
    if i < 16 && ellipsis.is_none() {
        return Err(addr_err(input, "address string too short", None));
    }
    if i >= 16 && ellipsis.is_some() {
        return err("the :: must expand to at least one field of zeros", s);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
