//! Kubernetes `resource.Quantity`: parsing and canonical formatting.
//!
//! A faithful port of `k8s.io/apimachinery/pkg/api/resource` (`ParseQuantity`,
//! `CanonicalizeBytes`): values keep the format family of their input (binary `Ki..Ei`, decimal
//! `n u m "" k M G T P E`, or exponent `e<N>`), non-zero values are rounded up to `1n`, binary
//! values are capped at `2^63-1`, and the canonical string uses the largest suffix that
//! represents the value exactly. Arbitrary precision is kept as a decimal digit string, so no
//! input can overflow or panic.

use std::fmt;

/// Results of quantity parsing: Kubernetes' error texts.
type Result<T, E = QuantityError> = std::result::Result<T, E>;

/// Why a text is not a Kubernetes quantity (Kubernetes' `ErrFormatWrong`, `ErrNumeric`,
/// `ErrSuffix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not of the quantity form.
    #[error("{}", ERR_FORMAT_WRONG)]
    FormatWrong,
    /// The number does not parse.
    #[error("{}", ERR_NUMERIC)]
    Numeric,
    /// The suffix is not a known one.
    #[error("{}", ERR_SUFFIX)]
    Suffix,
}

/// Kubernetes' `ErrFormatWrong` text.
pub const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// Kubernetes' `ErrNumeric` text.
pub const ERR_NUMERIC: &str = "unable to parse quantity's numeric portion";
/// Kubernetes' `ErrSuffix` text.
pub const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

/// Smallest representable exponent (`Nano`).
const NANO: i64 = -9;
/// `maxInt64Factors` of quantity.go.
const MAX_INT64_FACTORS: i64 = 18;

/// Format family of a quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `e3`, `E6`, ...
    DecimalExponent,
    /// `Ki`, `Mi`, ...
    BinarySI,
    /// `m`, `k`, `M`, ...
    DecimalSI,
}

/// A parsed quantity: `±digits × 10^exp`, plus the format and the cached input string
/// (Kubernetes reuses the input verbatim when it is already in canonical form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    /// Decimal digits, most significant first, no leading zeros; empty means zero.
    digits: Vec<u8>,
    exp: i64,
    format: Format,
    cached: Option<String>,
}

impl Quantity {
    /// Format family the quantity prints in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Canonical string (`String()` / `MarshalJSON` of Kubernetes).
    pub fn canonical(&self) -> String {
        if let Some(s) = &self.cached {
            return s.clone();
        }
        if self.is_zero() {
            return "0".to_string();
        }
        let mut format = self.format;
        if format == Format::BinarySI {
            match self.as_exact_i64() {
                Some(v) if v > -1024 && v < 1024 => format = Format::DecimalSI,
                Some(v) => return binary_string(v),
                None => format = Format::DecimalSI,
            }
        }
        decimal_string(self.negative, &self.digits, self.exp, format)
    }

    /// The value in thousandths, rounded up as Kubernetes' `MilliValue` rounds (`100m` → 100,
    /// `1.5` → 1500, `1Ki` → 1,024,000, `1n` → 1); saturating at the bounds of `i128`.
    pub fn milli_value(&self) -> i128 {
        let shift = self.exp + 3;
        let mut v: i128 = 0;
        let mut rest_nonzero = false;
        let keep = if shift >= 0 {
            self.digits.len()
        } else {
            let cut = usize::try_from(-shift).unwrap_or(usize::MAX);
            self.digits.len().saturating_sub(cut)
        };
        for (i, &d) in self.digits.iter().enumerate() {
            if i < keep {
                v = v.saturating_mul(10).saturating_add(i128::from(d));
            } else if d != 0 {
                rest_nonzero = true;
            }
        }
        for _ in 0..shift.max(0) {
            v = v.saturating_mul(10);
        }
        if self.negative {
            -v
        } else {
            v + i128::from(rest_nonzero)
        }
    }

    /// `RoundUp(-3)`, as `SetDefaults_ResourceList` applies it (`pkg/apis/core/v1/defaults.go`):
    /// the value rounded up, away from zero, to thousandths, as its canonical text; `None` when
    /// it is already a whole number of thousandths (the quantity, and its text, stay as they
    /// were).
    pub fn rounded_up_to_milli(&self) -> Option<String> {
        if self.exp >= -3 {
            return None;
        }
        let cut = usize::try_from(-3 - self.exp).unwrap_or(usize::MAX);
        let split = self.digits.len().saturating_sub(cut);
        if self.digits[split..].iter().all(|&d| d == 0) {
            return None;
        }
        let mut keep = self.digits[..split].to_vec();
        // Add one thousandth.
        let mut i = keep.len();
        loop {
            if i == 0 {
                keep.insert(0, 1);
                break;
            }
            i -= 1;
            if keep[i] == 9 {
                keep[i] = 0;
            } else {
                keep[i] += 1;
                break;
            }
        }
        let first = keep.iter().position(|&d| d != 0).unwrap_or(keep.len());
        let rounded = Quantity {
            negative: self.negative,
            digits: keep[first..].to_vec(),
            exp: -3,
            format: self.format,
            cached: None,
        };
        Some(rounded.canonical())
    }

    /// The value as an exact integer, if it is integral and fits an `i64`.
    fn as_exact_i64(&self) -> Option<i64> {
        let (int_digits, frac_nonzero) = if self.exp >= 0 {
            let extra = usize::try_from(self.exp).ok()?;
            if self.digits.len() + extra > 19 {
                return None;
            }
            let mut d = self.digits.clone();
            d.extend(std::iter::repeat_n(0u8, extra));
            (d, false)
        } else {
            let cut = usize::try_from(-self.exp).ok()?;
            if cut >= self.digits.len() {
                (Vec::new(), !self.digits.is_empty())
            } else {
                let split = self.digits.len() - cut;
                let frac = self.digits[split..].iter().any(|&d| d != 0);
                (self.digits[..split].to_vec(), frac)
            }
        };
        if frac_nonzero {
            return None;
        }
        let mut v: i128 = 0;
        for d in int_digits {
            v = v * 10 + i128::from(d);
            if v > i128::from(i64::MAX) + 1 {
                return None;
            }
        }
        if self.negative {
            v = -v;
        }
        i64::try_from(v).ok()
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// Canonical form of a quantity string (`2000m` → `2`, `1024Mi` → `1Gi`, `0.5` → `500m`).
pub fn canonicalize(s: &str) -> Result<String> {
    Ok(parse(s)?.canonical())
}

/// Parse a quantity exactly as Kubernetes' `ParseQuantity` does (the caller trims whitespace
/// where Kubernetes does, e.g. in `UnmarshalJSON`).
pub fn parse(s: &str) -> Result<Quantity> {
    if s.is_empty() {
        return Err(QuantityError::FormatWrong);
    }
    if s == "0" {
        return Ok(Quantity {
            negative: false,
            digits: Vec::new(),
            exp: 0,
            format: Format::DecimalSI,
            cached: Some("0".to_string()),
        });
    }
    let parts = split_quantity(s)?;
    let (base, exponent, format) = interpret_suffix(parts.suffix).ok_or(QuantityError::Suffix)?;
    if let Some(q) = fast_path(s, &parts, base, exponent, format) {
        return Ok(q);
    }
    slow_path(&parts, base, exponent, format)
}

/// The pieces `parseQuantityString` extracts.
struct Parts<'a> {
    positive: bool,
    /// Numeric portion as written (sign, leading zeros, point), for the digit check.
    value: &'a str,
    /// Integer digits without leading zeros (`"0"` when none).
    num: &'a str,
    /// Fraction digits.
    denom: &'a str,
    suffix: &'a str,
}

fn digits_end(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// Port of `parseQuantityString`.
fn split_quantity(s: &str) -> Result<Parts<'_>> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    let zero = Parts {
        positive,
        value: "0",
        num: "0",
        denom: "",
        suffix: "",
    };
    if pos >= end {
        return Ok(zero);
    }
    let num_end = digits_end(b, pos);
    let mut num = &s[pos..num_end];
    if num_end >= end {
        return Ok(Parts {
            positive,
            value: s,
            num,
            denom: "",
            suffix: "",
        });
    }
    pos = num_end;
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let denom_end = digits_end(b, pos);
        denom = &s[pos..denom_end];
        if denom_end >= end {
            return Ok(Parts {
                positive,
                value: s,
                num,
                denom,
                suffix: "",
            });
        }
        pos = denom_end;
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    if digits_end(b, pos) < end {
        return Err(QuantityError::FormatWrong);
    }
    Ok(Parts {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// Port of `suffixHandler.interpret`: (base, exponent, format).
fn interpret_suffix(suffix: &str) -> Option<(u32, i64, Format)> {
    let dec = match suffix {
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "" => Some(0),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = dec {
        return Some((10, e, Format::DecimalSI));
    }
    let bin = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(e) = bin {
        return Some((2, e, Format::BinarySI));
    }
    let rest = suffix.strip_prefix(['e', 'E'])?;
    if rest.is_empty() {
        return None;
    }
    // strconv.ParseInt(.., 10, 64) then int32(): wraps like Go.
    let parsed: i64 = rest.parse().ok()?;
    Some((10, i64::from(parsed as i32), Format::DecimalExponent))
}

fn to_digits(s: &str) -> Vec<u8> {
    let v: Vec<u8> = s.bytes().map(|c| c - b'0').collect();
    let first = v.iter().position(|&d| d != 0).unwrap_or(v.len());
    v[first..].to_vec()
}

fn digits_of_u128(mut v: u128) -> Vec<u8> {
    let mut out = Vec::new();
    while v > 0 {
        out.push((v % 10) as u8);
        v /= 10;
    }
    out.reverse();
    out
}

/// The int64 fast path of `ParseQuantity`, including its "reuse the input string" rule.
fn fast_path(s: &str, p: &Parts<'_>, base: u32, exponent: i64, format: Format) -> Option<Quantity> {
    let shifted = format!("{}{}", p.num, p.denom);
    let (scale, mantissa_shift) = match format {
        Format::DecimalExponent | Format::DecimalSI => {
            let precision = MAX_INT64_FACTORS - (p.num.len() + p.denom.len()) as i64;
            if precision < 0 {
                return None;
            }
            (exponent - p.denom.len() as i64, 0)
        }
        Format::BinarySI => {
            if !(exponent >= 0 && p.denom.is_empty()) {
                return None;
            }
            let precision = 15 - p.num.len() as i64 - ((exponent as f32) * 3.0 / 10.0) as i64 - 1;
            if precision < 0 {
                return None;
            }
            (0, exponent)
        }
    };
    let _ = base;
    if scale < NANO {
        return None;
    }
    let value: i64 = shifted.parse().ok()?;
    let result = value.checked_mul(1i64.checked_shl(u32::try_from(mantissa_shift).ok()?)?)?;
    let cache = match format {
        Format::BinarySI => exponent % 10 == 0 && (value & 0x07) != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    };
    Some(Quantity {
        negative: !p.positive && result != 0,
        digits: digits_of_u128(result.unsigned_abs() as u128),
        exp: scale,
        format,
        cached: cache.then(|| s.to_string()),
    })
}

/// The arbitrary-precision path of `ParseQuantity`.
fn slow_path(p: &Parts<'_>, base: u32, exponent: i64, mut format: Format) -> Result<Quantity> {
    if !p.value.bytes().any(|c| c.is_ascii_digit()) {
        return Err(QuantityError::Numeric);
    }
    let mut digits = to_digits(&format!("{}{}", p.num, p.denom));
    let mut exp = -(p.denom.len() as i64);
    if base == 10 {
        exp += exponent;
    } else {
        for _ in 0..exponent {
            digits = mul_small(&digits, 2);
        }
    }
    round_up_to_nano(&mut digits, &mut exp);
    if format == Format::BinarySI {
        cap_binary(&mut digits, &mut exp);
        if !digits.is_empty() && less_than_one(&digits, exp) {
            format = Format::DecimalSI;
        }
    }
    Ok(Quantity {
        negative: !p.positive && !digits.is_empty(),
        digits,
        exp,
        format,
        cached: None,
    })
}

fn mul_small(digits: &[u8], m: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(digits.len() + 1);
    let mut carry = 0u32;
    for &d in digits.iter().rev() {
        let v = u32::from(d) * m + carry;
        out.push((v % 10) as u8);
        carry = v / 10;
    }
    while carry > 0 {
        out.push((carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    let first = out.iter().position(|&d| d != 0).unwrap_or(out.len());
    out[first..].to_vec()
}

/// `amount.Round(amount, Nano, inf.RoundUp)` for non-zero values.
fn round_up_to_nano(digits: &mut Vec<u8>, exp: &mut i64) {
    if digits.is_empty() || *exp >= NANO {
        return;
    }
    let drop = (NANO - *exp) as u128;
    let keep = (digits.len() as u128).saturating_sub(drop) as usize;
    let dropped_nonzero = digits[keep..].iter().any(|&d| d != 0);
    digits.truncate(keep);
    *exp = NANO;
    if dropped_nonzero {
        add_one(digits);
    }
}

fn add_one(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

/// Integer digits of `digits × 10^exp` when it is at least 1 (fraction truncated).
fn integer_len(digits: &[u8], exp: i64) -> i64 {
    digits.len() as i64 + exp
}

fn less_than_one(digits: &[u8], exp: i64) -> bool {
    integer_len(digits, exp) <= 0
}

/// Cap the magnitude at `2^63-1` (`maxAllowed`).
fn cap_binary(digits: &mut Vec<u8>, exp: &mut i64) {
    const MAX: &str = "9223372036854775807";
    let len = integer_len(digits, *exp);
    let over = match len.cmp(&(MAX.len() as i64)) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => {
            let max = to_digits(MAX);
            let mut ours: Vec<u8> = digits.clone();
            ours.resize(max.len().max(ours.len()), 0);
            let int_part = &ours[..max.len()];
            match int_part.cmp(&max[..]) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => ours[max.len()..].iter().any(|&d| d != 0),
            }
        }
    };
    if over {
        *digits = to_digits(MAX);
        *exp = 0;
    }
}

/// `AsCanonicalBytes` + decimal/exponent suffix.
fn decimal_string(negative: bool, digits: &[u8], exp: i64, format: Format) -> String {
    let trailing = digits.iter().rev().take_while(|&&d| d == 0).count();
    let mut mant: Vec<u8> = digits[..digits.len() - trailing].to_vec();
    let mut exp = exp + trailing as i64;
    while exp % 3 != 0 {
        mant.push(0);
        exp -= 1;
    }
    let mut out = String::with_capacity(mant.len() + 4);
    if negative {
        out.push('-');
    }
    out.extend(mant.iter().map(|&d| char::from(b'0' + d)));
    match format {
        Format::DecimalExponent => {
            if exp != 0 {
                out.push('e');
                out.push_str(&exp.to_string());
            }
        }
        _ => out.push_str(decimal_suffix(exp)),
    }
    out
}

/// Decimal SI suffix for an exponent; Kubernetes prints no suffix when none exists.
fn decimal_suffix(exp: i64) -> &'static str {
    match exp {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

/// `AsCanonicalBase1024Bytes` + binary suffix.
fn binary_string(v: i64) -> String {
    let mut amount = v;
    let mut times = 0;
    while amount.unsigned_abs() >= 1024 && amount % 1024 == 0 {
        amount /= 1024;
        times += 1;
    }
    let suffix = match times {
        1 => "Ki",
        2 => "Mi",
        3 => "Gi",
        4 => "Ti",
        5 => "Pi",
        6 => "Ei",
        _ => "",
    };
    format!("{amount}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> String {
        canonicalize(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn milli_values_round_up_as_kubernetes_does() {
        for (q, want) in [
            ("0", 0),
            ("100m", 100),
            ("1.5", 1500),
            ("2", 2000),
            ("1Ki", 1_024_000),
            ("128Mi", 134_217_728_000),
            ("1n", 1),
            ("1500u", 2),
            ("-1500u", -1),
            ("1e3", 1_000_000),
        ] {
            assert_eq!(parse(q).expect(q).milli_value(), want, "{q}");
        }
    }

    #[test]
    fn canonical_forms_from_the_spec() {
        for (i, o) in [
            ("2000m", "2"),
            ("1024Mi", "1Gi"),
            ("0.5", "500m"),
            ("100m", "100m"),
            ("128Mi", "128Mi"),
            ("4000m", "4"),
            ("3000m", "3"),
            ("1000m", "1"),
            ("0", "0"),
            ("1.5Gi", "1536Mi"),
            ("1e3", "1e3"),
            ("1000", "1k"),
            ("2Gi", "2Gi"),
            ("1Gi", "1Gi"),
            ("10", "10"),
        ] {
            assert_eq!(c(i), o, "{i}");
        }
    }

    #[test]
    fn decimal_rules() {
        assert_eq!(c("1500m"), "1500m");
        assert_eq!(c("1.5"), "1500m");
        assert_eq!(c("0.1"), "100m");
        assert_eq!(c("12345"), "12345");
        assert_eq!(c("1M"), "1M");
        assert_eq!(c("1000k"), "1M");
        assert_eq!(c("0.000001"), "1u");
        assert_eq!(c("1n"), "1n");
        assert_eq!(c("-1000"), "-1k");
        assert_eq!(c("-0"), "0");
        assert_eq!(c("000"), "0");
        assert_eq!(c("0m"), "0");
        assert_eq!(c("10e3"), "10e3");
        assert_eq!(c("1E3"), "1E3");
        assert_eq!(c("100e-3"), "100e-3");
        assert_eq!(c("1000e-3"), "1");
        assert_eq!(c("12e1"), "120");
    }

    #[test]
    fn sub_nano_values_round_up() {
        assert_eq!(c("0.0000000001"), "1n");
        assert_eq!(c("1e-12"), "1e-9");
        assert_eq!(c("1.0000000001"), "1000000001n");
        assert_eq!(c("-1e-12"), "-1e-9");
    }

    #[test]
    fn binary_rules() {
        assert_eq!(c("512Ki"), "512Ki");
        assert_eq!(c("1024Ki"), "1Mi");
        assert_eq!(c("0.5Gi"), "512Mi");
        assert_eq!(c("0.5Ki"), "512");
        assert_eq!(c("1Ki"), "1Ki");
        assert_eq!(c("8Ki"), "8Ki");
        assert_eq!(c("1.5Ki"), "1536");
        assert_eq!(c("2048Mi"), "2Gi");
        assert_eq!(c("-2048Ki"), "-2Mi");
        assert_eq!(c("1.0001Ki"), "1024102400u");
        assert_eq!(c("16Ei"), "9223372036854775807");
    }

    #[test]
    fn input_reused_when_already_canonical() {
        assert_eq!(c("+1"), "+1");
        assert_eq!(c("5Ki"), "5Ki");
        assert_eq!(c("+100m"), "+100m");
    }

    #[test]
    fn errors_use_kubernetes_texts() {
        for bad in ["", "abc", "1x", "1.5.5", "1KiB", " 1", "1 "] {
            let e = canonicalize(bad).unwrap_err().to_string();
            assert_eq!(e, ERR_FORMAT_WRONG, "{bad:?}");
        }
        for bad in ["1ki", "1e", "1Gi5", "--1", "1e-"] {
            let e = canonicalize(bad).unwrap_err().to_string();
            assert_eq!(e, ERR_SUFFIX, "{bad:?}");
        }
        assert_eq!(canonicalize("+.e-10").unwrap_err().to_string(), ERR_NUMERIC);
    }

    #[test]
    fn huge_values_do_not_panic() {
        assert_eq!(c("1e100"), "10e99");
        assert_eq!(c("1e99"), "1e99");
        assert_eq!(
            c("123456789012345678901234567890"),
            "123456789012345678901234567890"
        );
        assert_eq!(
            c("123456789012345678901234567890m"),
            "123456789012345678901234567890m"
        );
        assert_eq!(c("99999999999999999999Ei"), "9223372036854775807");
        let _ = canonicalize("1e99999999999");
    }
}
