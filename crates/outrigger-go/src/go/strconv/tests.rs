//! Go's documented `strconv` results (the Go-compared table is `tests/go_strconv.rs`).

use super::*;

fn err<T: std::fmt::Debug>(r: Result<T, NumError<'_>>) -> String {
    r.expect_err("an error").to_string()
}

#[test]
fn atoi_reads_signed_decimal_only() {
    assert_eq!(atoi("15021"), Ok(15021));
    assert_eq!(atoi("+7"), Ok(7));
    assert_eq!(atoi("-9223372036854775808"), Ok(i64::MIN));
    assert_eq!(err(atoi("")), r#"strconv.Atoi: parsing "": invalid syntax"#);
    assert_eq!(
        err(atoi("0x10")),
        r#"strconv.Atoi: parsing "0x10": invalid syntax"#
    );
    assert_eq!(
        err(atoi("1_000")),
        r#"strconv.Atoi: parsing "1_000": invalid syntax"#
    );
    assert_eq!(
        err(atoi("9223372036854775808")),
        r#"strconv.Atoi: parsing "9223372036854775808": value out of range"#
    );
}

#[test]
fn parse_int_base_zero_reads_prefixes_and_separators() {
    assert_eq!(parse_int("0x1F", 0, 64), Ok(31));
    assert_eq!(parse_int("-0b101", 0, 64), Ok(-5));
    assert_eq!(parse_int("0o17", 0, 64), Ok(15));
    assert_eq!(parse_int("017", 0, 64), Ok(15));
    assert_eq!(parse_int("0", 0, 64), Ok(0));
    assert_eq!(parse_int("1_000", 0, 64), Ok(1000));
    assert_eq!(parse_int("0x_1f", 0, 64), Ok(31));
    assert_eq!(
        err(parse_int("1__0", 0, 64)),
        r#"strconv.ParseInt: parsing "1__0": invalid syntax"#
    );
    assert_eq!(
        err(parse_int("08", 0, 64)),
        r#"strconv.ParseInt: parsing "08": invalid syntax"#
    );
    assert_eq!(
        err(parse_int("1_0", 10, 64)),
        r#"strconv.ParseInt: parsing "1_0": invalid syntax"#
    );
}

#[test]
fn parse_int_checks_the_bit_size() {
    assert_eq!(parse_int("127", 10, 8), Ok(127));
    assert_eq!(parse_int("-128", 10, 8), Ok(-128));
    assert_eq!(
        err(parse_int("128", 10, 8)),
        r#"strconv.ParseInt: parsing "128": value out of range"#
    );
    assert_eq!(parse_int("-17", 8, 64), Ok(-15));
    assert_eq!(
        err(parse_int("-99999999999999999999", 10, 64)),
        r#"strconv.ParseInt: parsing "-99999999999999999999": value out of range"#
    );
}

#[test]
fn parse_uint_reports_range_before_a_later_bad_digit() {
    assert_eq!(parse_uint("65535", 10, 16), Ok(65535));
    assert_eq!(
        err(parse_uint("65536", 10, 16)),
        r#"strconv.ParseUint: parsing "65536": value out of range"#
    );
    assert_eq!(
        err(parse_uint("-1", 10, 64)),
        r#"strconv.ParseUint: parsing "-1": invalid syntax"#
    );
    // Go reads digits left to right: the overflow comes before the `x`.
    assert_eq!(
        err(parse_uint("700000x", 10, 16)),
        r#"strconv.ParseUint: parsing "700000x": value out of range"#
    );
    assert_eq!(parse_uint("18446744073709551615", 0, 64), Ok(u64::MAX));
}

#[test]
fn parse_float_reads_go_float_syntax() {
    assert_eq!(parse_float("1.5e3"), Ok(1500.0));
    assert_eq!(parse_float(".5"), Ok(0.5));
    assert_eq!(parse_float("1_000.5"), Ok(1000.5));
    assert_eq!(parse_float("0x1.8p1"), Ok(3.0));
    assert_eq!(parse_float("-Infinity"), Ok(f64::NEG_INFINITY));
    assert_eq!(parse_float("+inf"), Ok(f64::INFINITY));
    assert!(parse_float("NaN").is_ok_and(f64::is_nan));
    assert_eq!(
        err(parse_float("+nan")),
        r#"strconv.ParseFloat: parsing "+nan": invalid syntax"#
    );
    assert_eq!(
        err(parse_float("0x1.8")),
        r#"strconv.ParseFloat: parsing "0x1.8": invalid syntax"#
    );
    assert_eq!(
        err(parse_float("1e400")),
        r#"strconv.ParseFloat: parsing "1e400": value out of range"#
    );
    assert_eq!(
        err(parse_float("e5")),
        r#"strconv.ParseFloat: parsing "e5": invalid syntax"#
    );
}
