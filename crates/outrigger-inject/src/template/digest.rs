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

/// `b64dec`: the decoded text, or Go's error text as the value (Sprig returns `err.Error()`).
/// Go skips `\r` and `\n` in the input.
pub fn b64dec(s: &str) -> String {
    use base64::Engine;
    let clean: Vec<u8> = s.bytes().filter(|b| !matches!(b, b'\r' | b'\n')).collect();
    match GO_BASE64.decode(&clean) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(
            base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _),
        ) => format!("illegal base64 data at input byte {at}"),
        Err(_) => "illegal base64 data".into(),
    }
}

/// `b32enc`: base32 with padding (`base32.StdEncoding`).
pub fn b32enc(s: &str) -> String {
    data_encoding::BASE32.encode(s.as_bytes())
}

/// `b32dec`: the decoded text, or the error text as the value (Sprig returns `err.Error()`; the
/// byte offset of Go's message is not reproduced).
pub fn b32dec(s: &str) -> String {
    match data_encoding::BASE32.decode(s.as_bytes()) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) => "illegal base32 data".into(),
    }
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
        assert_eq!(b32dec("not base32!"), "illegal base32 data");
        assert_eq!(b64enc("hello"), "aGVsbG8=");
        assert_eq!(b64dec("aGVsbG8="), "hello");
        assert_eq!(b64dec("aGVs\nbG8="), "hello");
        assert_eq!(b64dec("aGVsbG9="), "hello");
        assert_eq!(b64dec("a!Vs"), "illegal base64 data at input byte 1");
    }
}
