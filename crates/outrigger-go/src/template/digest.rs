//! Sprig's digest and encoding functions: `sha1sum`, `sha256sum`, `sha512sum`, `adler32sum`,
//! `b64enc`, `b64dec`, `b32enc`, `b32dec` (Go's `crypto/*`, `hash/adler32`, and the StdEncoding
//! of `encoding/base64` and `encoding/base32`).

use std::fmt::Write;

use sha1::Digest;

/// Lower-case hex of `bytes` (`hex.EncodeToString`).
fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// `sha1sum`.
pub fn sha1sum(s: &str) -> String {
    hex(&sha1::Sha1::digest(s.as_bytes()))
}

/// `sha256sum`.
pub fn sha256sum(s: &str) -> String {
    hex(&sha2::Sha256::digest(s.as_bytes()))
}

/// `sha512sum`.
pub fn sha512sum(s: &str) -> String {
    hex(&sha2::Sha512::digest(s.as_bytes()))
}

/// `adler32sum`: the checksum in decimal (`fmt.Sprintf("%d", adler32.Checksum(...))`).
pub fn adler32sum(s: &str) -> String {
    let mut a = adler2::Adler32::new();
    a.write_slice(s.as_bytes());
    a.checksum().to_string()
}

/// Go's `base64.StdEncoding`: padded, and lenient about non-zero trailing bits.
const GO_BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// `b64enc`.
pub fn b64enc(s: &str) -> String {
    use base64::Engine;
    GO_BASE64.encode(s.as_bytes())
}

/// `b64dec`: the decoded text, or Go's error text as the value (Sprig returns `err.Error()`):
/// `illegal base64 data at input byte N` with Go's offsets; `\r` and `\n` are skipped.
pub fn b64dec(s: &str) -> String {
    match go_base64_decode(s.as_bytes()) {
        Ok(b) => super::gostr::lossy(&b),
        Err(at) => format!("illegal base64 data at input byte {at}"),
    }
}

/// Go's `base64.StdEncoding.DecodeString` (`decodeQuantum` step by step), the error offset
/// included.
fn go_base64_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    let dec = |c: u8| -> u8 {
        match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => 0xFF,
        }
    };
    let mut out = Vec::with_capacity(src.len() * 3 / 4);
    let mut si = 0;
    while si < src.len() {
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0;
        let mut err = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            let d = dec(c);
            if d != 0xFF {
                dbuf[j] = d;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' {
                return Err(si - 1);
            }
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && matches!(src[si], b'\n' | b'\r') {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && matches!(src[si], b'\n' | b'\r') {
                si += 1;
            }
            if si < src.len() {
                err = Some(si);
            }
            dlen = j;
            break;
        }
        let val = u32::from(dbuf[0]) << 18
            | u32::from(dbuf[1]) << 12
            | u32::from(dbuf[2]) << 6
            | u32::from(dbuf[3]);
        let bytes = [(val >> 16) as u8, (val >> 8) as u8, val as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(at) = err {
            return Err(at);
        }
    }
    Ok(out)
}

/// `b32enc`: base32 with padding (`base32.StdEncoding`).
pub fn b32enc(s: &str) -> String {
    data_encoding::BASE32.encode(s.as_bytes())
}

/// `b32dec`: the decoded text, or Go's error text as the value (Sprig returns `err.Error()`),
/// `illegal base32 data at input byte N` with Go's offsets (input without `\r`/`\n`).
pub fn b32dec(s: &str) -> String {
    let src: Vec<u8> = s.bytes().filter(|b| !matches!(b, b'\r' | b'\n')).collect();
    match go_base32_decode(&src) {
        Ok(b) => super::gostr::lossy(&b),
        Err(at) => format!("illegal base32 data at input byte {at}"),
    }
}

/// Go's `base32.StdEncoding` decoder (`encoding/base32.decode`), its error offset included.
fn go_base32_decode(input: &[u8]) -> Result<Vec<u8>, usize> {
    let dec = |c: u8| -> u8 {
        match c {
            b'A'..=b'Z' => c - b'A',
            b'2'..=b'7' => c - b'2' + 26,
            _ => 0xFF,
        }
    };
    let olen = input.len();
    let mut src = input;
    let mut out = Vec::with_capacity(olen * 5 / 8);
    let mut end = false;
    while !src.is_empty() && !end {
        let mut dbuf = [0u8; 8];
        let mut dlen = 8;
        let mut j = 0;
        while j < 8 {
            if src.is_empty() {
                return Err(olen - src.len() - j);
            }
            let c = src[0];
            src = &src[1..];
            if c == b'=' && j >= 2 && src.len() < 8 {
                if src.len() + j < 7 {
                    return Err(olen);
                }
                for k in 0..7 - j {
                    if src.len() > k && src[k] != b'=' {
                        return Err(olen - src.len() + k - 1);
                    }
                }
                dlen = j;
                end = true;
                if matches!(dlen, 1 | 3 | 6) {
                    return Err(olen - src.len() - 1);
                }
                break;
            }
            dbuf[j] = dec(c);
            if dbuf[j] == 0xFF {
                return Err(olen - src.len() - 1);
            }
            j += 1;
        }
        let mut q = [0u8; 5];
        let n = match dlen {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => 0,
        };
        q[4] = dbuf[6] << 5 | dbuf[7];
        q[3] = dbuf[4] << 7 | dbuf[5] << 2 | dbuf[6] >> 3;
        q[2] = dbuf[3] << 4 | dbuf[4] >> 1;
        q[1] = dbuf[1] << 6 | dbuf[2] << 1 | dbuf[3] >> 4;
        q[0] = dbuf[0] << 3 | dbuf[1] >> 2;
        out.extend_from_slice(&q[..n]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values printed by Go 1.x (`crypto/sha1`, `crypto/sha256`, `crypto/sha512`,
    /// `hash/adler32`, `encoding/base32`).
    #[test]
    fn digests_and_base32_match_go() {
        assert_eq!(sha1sum("hello"), "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d");
        assert_eq!(
            sha256sum("hello"),
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(
            sha512sum("hello"),
            "9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca7\
             2323c3d99ba5c11d7c7acc6e14b8c5da0c4663475c2e5c3adef46f73bcdec043"
        );
        assert_eq!(adler32sum("hello"), "103547413");
        assert_eq!(adler32sum(""), "1");
        assert_eq!(b32enc("hello"), "NBSWY3DP");
        assert_eq!(b32enc("hi"), "NBUQ====");
        assert_eq!(b32dec("NBUQ===="), "hi");
        assert_eq!(b64enc("hello"), "aGVsbG8=");
        assert_eq!(b64dec("aGVsbG8="), "hello");
        assert_eq!(b64dec("aGVs\nbG8="), "hello");
        assert_eq!(b64dec("aGVsbG9="), "hello");
        assert_eq!(b64dec("a!Vs"), "illegal base64 data at input byte 1");
    }
}
