//! Go's `strconv.FormatFloat(f, 'g', -1, bits)` (also `fmt`'s `%v` of a float64): shortest
//! round-trip digits, `%e` form (two-digit exponent at least) when the decimal exponent is below
//! -4 or at least 6. One implementation for YAML, typed normalisation and templates.

/// Format `f` as Go's `strconv.FormatFloat(f, 'g', -1, 64)`.
pub fn format_g64(f: f64) -> String {
    if let Some(s) = special(f) {
        return s.to_string();
    }
    if let Some(s) = small_integer(f) {
        return s;
    }
    format_g(&shortest_sci(f))
}

/// Integral values below 1e6 (the common case: ports, counts) print as plain integers in the
/// `'g'` layout; they skip the digit generation. Zero keeps its sign (`-0`).
fn small_integer(f: f64) -> Option<String> {
    if f == 0.0 {
        return Some(if f.is_sign_negative() { "-0" } else { "0" }.to_string());
    }
    // The guard makes the conversion exact.
    #[allow(clippy::cast_possible_truncation)]
    (f.fract() == 0.0 && f.abs() < 1e6).then(|| (f as i64).to_string())
}

/// Format `f` as Go's `strconv.FormatFloat(float64(f), 'g', -1, 32)` (shortest float32 digits).
pub fn format_g32(f: f64) -> String {
    if let Some(s) = special(f) {
        return s.to_string();
    }
    // Narrowing is the point: Go formats with float32 precision here.
    #[allow(clippy::cast_possible_truncation)]
    let narrow = f as f32;
    if narrow.is_infinite() {
        return if narrow > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if let Some(s) = small_integer(f64::from(narrow)) {
        return s;
    }
    format_g(&shortest_sci32(narrow))
}

/// The shortest decimal that reads back as `f`, in Rust's `{:e}` layout (`-1.25e-7`), with
/// Go's choice between two equally short candidates equally close to `f`: the even one (Go's
/// Ryū rounds half to even; Rust's shortest formatting rounds half up). `f` finite.
pub fn shortest_sci(f: f64) -> String {
    let s = format!("{f:e}");
    tie_to_even(
        &s,
        f.abs(),
        |t| t.parse::<f64>().ok() == Some(f.abs()),
        |p| format!("{:.*e}", p, f.abs()),
    )
    .map_or(s, |t| {
        if f.is_sign_negative() {
            format!("-{t}")
        } else {
            t
        }
    })
}

/// [`shortest_sci`] for a float32.
pub fn shortest_sci32(f: f32) -> String {
    let s = format!("{f:e}");
    tie_to_even(
        &s,
        f64::from(f.abs()),
        |t| t.parse::<f32>().ok() == Some(f.abs()),
        |p| format!("{:.*e}", p, f.abs()),
    )
    .map_or(s, |t| {
        if f.is_sign_negative() {
            format!("-{t}")
        } else {
            t
        }
    })
}

/// When `sci` (Rust's shortest digits of `a`, maybe signed) was picked between two candidates
/// at exactly the same distance from `a`, the even candidate if it reads back (`reads_back`);
/// `exact(p)` formats `a` with `p` digits after the point (exactly, when `p` is large).
fn tie_to_even(
    sci: &str,
    a: f64,
    reads_back: impl Fn(&str) -> bool,
    exact: impl Fn(usize) -> String,
) -> Option<String> {
    let body = sci.trim_start_matches('-');
    let (mant, exp) = body.split_once('e')?;
    let digits: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    let n = digits.len();
    // Two shortest candidates can both read back only when the decimal step is below the
    // binary one: from 15 significant digits on.
    if n < 15 || a == 0.0 {
        return None;
    }
    // The exact decimal expansion (a double has at most 767 significant digits).
    let full = exact(800);
    let (fm, fe) = full.split_once('e')?;
    if fe != exp {
        return None;
    }
    let fd: Vec<u8> = fm.bytes().filter(u8::is_ascii_digit).collect();
    if fd.len() <= n || fd[n] != b'5' || fd[n + 1..].iter().any(|&c| c != b'0') {
        return None;
    }
    // `a` is exactly halfway between the truncation and the next value up.
    let mut even = fd[..n].to_vec();
    if (even[n - 1] - b'0') % 2 == 1 {
        let mut i = n;
        loop {
            if i == 0 {
                return None;
            }
            i -= 1;
            if even[i] == b'9' {
                even[i] = b'0';
            } else {
                even[i] += 1;
                break;
            }
        }
    }
    if even == digits {
        return None;
    }
    let mut t = String::with_capacity(n + 8);
    t.push(even[0] as char);
    if n > 1 {
        t.push('.');
        t.extend(even[1..].iter().map(|&c| c as char));
    }
    t.push('e');
    t.push_str(exp);
    reads_back(&t).then_some(t)
}

/// Go's spelling of the non-finite values.
fn special(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("NaN")
    } else if f == f64::INFINITY {
        Some("+Inf")
    } else if f == f64::NEG_INFINITY {
        Some("-Inf")
    } else {
        None
    }
}

/// Turn Rust's shortest `{:e}` output (`-1.25e-7`) into Go's `'g'` layout.
fn format_g(sci: &str) -> String {
    let (neg, sci) = match sci.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, sci),
    };
    let (mant, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    // Shortest formatting uses `%e` when the exponent is below -4 or at least 6.
    let nd = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push('0');
        }
        out.push_str(&a.to_string());
        return out;
    }
    let dp = exp + 1;
    if dp <= 0 {
        out.push_str("0.");
        for _ in 0..(-dp) {
            out.push('0');
        }
        out.push_str(&digits);
    } else if dp >= nd {
        out.push_str(&digits);
        for _ in 0..(dp - nd) {
            out.push('0');
        }
    } else {
        let split = usize::try_from(dp).unwrap_or(0);
        out.push_str(&digits[..split]);
        out.push('.');
        out.push_str(&digits[split..]);
    }
    out
}

/// Go's `strconv.FormatFloat(f, fmt, prec, 64)` for every format: `'b'`, `'e'`/`'E'`,
/// `'f'`/`'F'`, `'g'`/`'G'`, `'x'`/`'X'`; `prec < 0` means the shortest round-trip digits.
/// Unknown formats give `%` followed by the format character, as in Go.
pub fn format_float(f: f64, fmt: char, prec: i32) -> String {
    if let Some(s) = special(f) {
        return s.to_string();
    }
    match fmt {
        'b' => return format_b(f),
        'x' | 'X' => return format_x(f, fmt, prec),
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {}
        other => return format!("%{other}"),
    }
    let neg = f.is_sign_negative();
    let a = f.abs();
    let shortest = prec < 0;
    let mut prec = prec;
    // The decimal digits (no leading or trailing zeros) and the decimal point position.
    let (digits, dp) = if shortest {
        let d = decimal_digits(&shortest_sci(a));
        prec = match fmt {
            'e' | 'E' => (d.0.len() as i32 - 1).max(0),
            'f' | 'F' => (d.0.len() as i32 - d.1).max(0),
            _ => d.0.len() as i32,
        };
        d
    } else {
        match fmt {
            'e' | 'E' => decimal_digits(&format!("{a:.*e}", prec as usize)),
            'f' | 'F' => {
                let s = format!("{a:.*}", prec as usize);
                let mut out = String::new();
                if neg {
                    out.push('-');
                }
                out.push_str(&s);
                return out;
            }
            _ => {
                if prec == 0 {
                    prec = 1;
                }
                decimal_digits(&format!("{a:.*e}", (prec - 1) as usize))
            }
        }
    };
    let nd = digits.len() as i32;
    match fmt {
        'e' | 'E' => fmt_e(neg, &digits, dp, prec, fmt),
        'f' | 'F' => fmt_f(neg, &digits, dp, prec),
        _ => {
            let mut eprec = prec;
            if eprec > nd && nd >= dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = dp - 1;
            if exp < -4 || exp >= eprec {
                let p = if prec > nd { nd } else { prec };
                let e = if fmt == 'g' { 'e' } else { 'E' };
                return fmt_e(neg, &digits, dp, p - 1, e);
            }
            let p = if prec > dp { nd } else { prec };
            fmt_f(neg, &digits, dp, (p - dp).max(0))
        }
    }
}

/// Digits without leading/trailing zeros and the decimal point position of a Rust `{:e}`
/// rendering (`1.2500e-3` → `125`, -2); zero has no digits.
fn decimal_digits(sci: &str) -> (Vec<u8>, i32) {
    let (mant, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    if digits.is_empty() {
        return (digits, 0);
    }
    (digits, exp + 1)
}

fn fmt_e(neg: bool, d: &[u8], dp: i32, prec: i32, e: char) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push(d.first().map_or('0', |&c| c as char));
    if prec > 0 {
        out.push('.');
        for i in 1..=prec as usize {
            out.push(d.get(i).map_or('0', |&c| c as char));
        }
    }
    out.push(e);
    let exp = if d.is_empty() { 0 } else { dp - 1 };
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
    out
}

fn fmt_f(neg: bool, d: &[u8], dp: i32, prec: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if dp > 0 {
        let mut m = dp.min(d.len() as i32);
        out.extend(d[..m as usize].iter().map(|&c| c as char));
        while m < dp {
            out.push('0');
            m += 1;
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            let j = dp + i - 1;
            out.push(if j < 0 || j >= d.len() as i32 {
                '0'
            } else {
                d[j as usize] as char
            });
        }
    }
    out
}

/// Go's `'b'` format: decimal mantissa, `p`, binary exponent.
fn format_b(f: f64) -> String {
    let bits = f.to_bits();
    let neg = bits >> 63 != 0;
    let mut exp = ((bits >> 52) & 0x7FF) as i64;
    let mut mant = bits & ((1u64 << 52) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1u64 << 52;
    }
    exp += -1023 - 52;
    format!(
        "{}{mant}p{}{exp}",
        if neg { "-" } else { "" },
        if exp >= 0 { "+" } else { "" }
    )
}

/// Go's `'x'`/`'X'` format: hexadecimal mantissa and binary exponent.
fn format_x(f: f64, fmt: char, prec: i32) -> String {
    let bits = f.to_bits();
    let neg = bits >> 63 != 0;
    let mut exp = ((bits >> 52) & 0x7FF) as i64;
    let mut mant = bits & ((1u64 << 52) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1u64 << 52;
    }
    exp -= 1023;
    if mant == 0 {
        exp = 0;
    }
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if (0..15).contains(&prec) {
        let shift = (prec * 4) as u32;
        let extra = (mant << shift) & ((1 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let hex: &[u8] = if fmt == 'X' {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push('0');
    out.push(fmt);
    out.push(if (mant >> 60) & 1 == 1 { '1' } else { '0' });
    mant <<= 4;
    if prec < 0 && mant != 0 {
        out.push('.');
        while mant != 0 {
            out.push(hex[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    } else if prec > 0 {
        out.push('.');
        for _ in 0..prec {
            out.push(hex[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    }
    out.push(if fmt == 'X' { 'P' } else { 'p' });
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g64() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (1.5, "1.5"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (1234567.5, "1.2345675e+06"),
            (123456.5, "123456.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e21, "1e+21"),
            (1e100, "1e+100"),
            (-2.5e-7, "-2.5e-07"),
            (0.1, "0.1"),
        ];
        for &(f, s) in cases {
            assert_eq!(format_g64(f), s, "{f}");
        }
        assert_eq!(format_g64(f64::INFINITY), "+Inf");
        assert_eq!(format_g64(f64::NAN), "NaN");
    }

    #[test]
    fn g32() {
        assert_eq!(format_g32(0.1), "0.1");
        assert_eq!(format_g32(1.0), "1");
        assert_eq!(format_g32(1234567.0), "1.234567e+06");
        assert_eq!(format_g32(1.234_567_89), "1.2345679");
        assert_eq!(format_g32(1e39), "+Inf");
    }

    #[test]
    fn small_integers_take_the_short_path_with_the_same_text() {
        for f in [
            0.0, -0.0, 1.0, -1.0, 15020.0, 999_999.0, -999_999.0, 1e6, 123.5, 1e-7,
        ] {
            assert_eq!(format_g64(f), format_g(&format!("{f:e}")), "{f}");
        }
        for f in [0.0, 8.0, 999_999.0, 16_777_217.0] {
            let narrow = f as f32;
            assert_eq!(format_g32(f), format_g(&format!("{narrow:e}")), "{f}");
        }
    }

    #[test]
    fn cases_from_normalisation_and_templates() {
        for (f, want) in [
            (8.0, "8"),
            (15020.0, "15020"),
            (600.0, "600"),
            (123456.0, "123456"),
            (2000000.0, "2e+06"),
            (0.5, "0.5"),
            (1.2, "1.2"),
            (-3.0, "-3"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(format_g64(f), want, "{f}");
        }
        for (f, want) in [
            (1.5, "1.5"),
            (8.0, "8"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
        ] {
            assert_eq!(format_g32(f), want, "{f}");
        }
    }
}
