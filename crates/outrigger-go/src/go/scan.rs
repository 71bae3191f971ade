//! Go's `fmt.Sscanf` for the one format shape Istio's dependencies apply to annotation values:
//! `"%d<sep>%d"` into two `uint32`s (OpenShift's `uid.ParseBlock`). Leading blanks before each
//! number are skipped (Go's `fmt` space set, a newline is an error), the separator must follow
//! the first number at once, and text after the second number is ignored. Errors are Go's texts.

/// Whether `c` is a space to `fmt`'s scanner (its `space` table; `\n` is handled apart).
fn is_space(c: char) -> bool {
    matches!(
        c as u32,
        0x09..=0x0d
            | 0x20
            | 0x85
            | 0xa0
            | 0x1680
            | 0x2000..=0x200a
            | 0x2028
            | 0x2029
            | 0x202f
            | 0x205f
            | 0x3000
    )
}

/// `fmt.Sscanf(text, "%d" + sep + "%d", &a, &b)` with `a`, `b` of type `uint32`: both numbers,
/// or Go's error text (`expected integer`, `unexpected newline`, `input does not match format`,
/// `unexpected EOF`, `EOF`, `unsigned integer overflow on token N`, or strconv's range error).
pub fn sscanf_u32_pair(text: &str, sep: char) -> Result<(u32, u32), String> {
    let mut rest = text;
    let a = scan_u32(&mut rest)?;
    let mut chars = rest.chars();
    match chars.next() {
        None => return Err("unexpected EOF".into()),
        Some(c) if c != sep => return Err("input does not match format".into()),
        Some(_) => rest = chars.as_str(),
    }
    let b = scan_u32(&mut rest)?;
    Ok((a, b))
}

/// One `%d` operand into a `uint32`: skip blanks, then decimal digits (no sign, no base prefix,
/// no underscores).
fn scan_u32(rest: &mut &str) -> Result<u32, String> {
    skip_space(rest)?;
    if rest.is_empty() {
        return Err("EOF".into());
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err("expected integer".into());
    }
    let token = &rest[..digits];
    *rest = &rest[digits..];
    let value: u64 = token
        .parse()
        .map_err(|_| format!("strconv.ParseUint: parsing {token:?}: value out of range"))?;
    u32::try_from(value).map_err(|_| format!("unsigned integer overflow on token {token}"))
}

/// `ss.SkipSpace` with newlines not counting as space (`Sscanf`): `\r\n` and `\n` are errors.
fn skip_space(rest: &mut &str) -> Result<(), String> {
    loop {
        let mut chars = rest.chars();
        let Some(c) = chars.next() else {
            return Ok(());
        };
        if c == '\n' || (c == '\r' && chars.as_str().starts_with('\n')) {
            return Err("unexpected newline".into());
        }
        if !is_space(c) {
            return Ok(());
        }
        *rest = chars.as_str();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(sscanf_u32_pair("100/10", '/'), Ok((100, 10)));
        assert_eq!(sscanf_u32_pair(" 100/ 10trailing", '/'), Ok((100, 10)));
        assert_eq!(
            sscanf_u32_pair("100 /10", '/'),
            Err("input does not match format".into())
        );
        assert_eq!(sscanf_u32_pair("100", '/'), Err("unexpected EOF".into()));
        assert_eq!(sscanf_u32_pair("100/", '/'), Err("EOF".into()));
        assert_eq!(sscanf_u32_pair("+1/2", '/'), Err("expected integer".into()));
        assert_eq!(
            sscanf_u32_pair("\n1/2", '/'),
            Err("unexpected newline".into())
        );
        assert_eq!(
            sscanf_u32_pair("4294967296/1", '/'),
            Err("unsigned integer overflow on token 4294967296".into())
        );
    }
}
