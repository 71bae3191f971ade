//! Sprig's number functions (`atoi`, `int`, `float64`, `add`, `max`, `round`, `toDecimal`, the `*f` decimal arithmetic, ...).

use super::lists::until_step;
use super::*;

/// Register Sprig's numbers functions.
pub(super) fn register_numbers(m: &mut Table) {
    use P::*;
    register(m, "atoi", &[Str], None, |a| {
        let s = str_of(&a[0]);
        let v = if s.starts_with(['+', '-']) && s.len() > 1 || !s.starts_with(['+', '-']) {
            strconv::atoi(s).unwrap_or(0)
        } else {
            0
        };
        Ok(V::Int(v, IntTy::Int))
    });
    register(m, "int", &[Any], None, |a| {
        Ok(V::Int(to_i64(&a[0]), IntTy::Int))
    });
    register(m, "int64", &[Any], None, |a| Ok(i64v(to_i64(&a[0]))));
    register(m, "float64", &[Any], None, |a| Ok(V::Float(to_f64(&a[0]))));
    register(m, "add", &[], Some(Any), |a| {
        Ok(i64v(a.iter().map(to_i64).fold(0i64, i64::wrapping_add)))
    });
    register(m, "add1", &[Any], None, |a| {
        Ok(i64v(to_i64(&a[0]).wrapping_add(1)))
    });
    register(m, "sub", &[Any, Any], None, |a| {
        Ok(i64v(to_i64(&a[0]).wrapping_sub(to_i64(&a[1]))))
    });
    register(m, "mul", &[Any], Some(Any), |a| {
        Ok(i64v(a.iter().map(to_i64).fold(1i64, i64::wrapping_mul)))
    });
    register(m, "div", &[Any, Any], None, |a| {
        let (x, y) = (to_i64(&a[0]), to_i64(&a[1]));
        if y == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(i64v(x.wrapping_div(y)))
    });
    register(m, "mod", &[Any, Any], None, |a| {
        let (x, y) = (to_i64(&a[0]), to_i64(&a[1]));
        if y == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(i64v(x.wrapping_rem(y)))
    });
    let max: Func = |a| Ok(i64v(a.iter().map(to_i64).max().unwrap_or(0)));
    register(m, "max", &[Any], Some(Any), max);
    register(m, "biggest", &[Any], Some(Any), max);
    register(m, "min", &[Any], Some(Any), |a| {
        Ok(i64v(a.iter().map(to_i64).min().unwrap_or(0)))
    });
    register(m, "maxf", &[Any], Some(Any), |a| {
        Ok(V::Float(
            a[1..]
                .iter()
                .map(to_f64)
                .fold(to_f64(&a[0]), |x, y| go_extreme(x, y, true)),
        ))
    });
    register(m, "minf", &[Any], Some(Any), |a| {
        Ok(V::Float(
            a[1..]
                .iter()
                .map(to_f64)
                .fold(to_f64(&a[0]), |x, y| go_extreme(x, y, false)),
        ))
    });
    register(m, "toDecimal", &[Any], None, |a| {
        let s = a[0].sprint();
        let parsed = strconv::parse_int(&s, 8, 64).unwrap_or(0);
        Ok(i64v(parsed))
    });
    register(m, "addf", &[], Some(Any), |a| {
        decimal_op(&V::Float(0.0), a, decimal::Op::Add)
    });
    register(m, "add1f", &[Any], None, |a| {
        decimal_op(&a[0], &[V::Int(1, IntTy::Int)], decimal::Op::Add)
    });
    register(m, "subf", &[Any], Some(Any), |a| {
        decimal_op(&a[0], &a[1..], decimal::Op::Sub)
    });
    register(m, "mulf", &[Any], Some(Any), |a| {
        decimal_op(&a[0], &a[1..], decimal::Op::Mul)
    });
    register(m, "divf", &[Any], Some(Any), |a| {
        decimal_op(&a[0], &a[1..], decimal::Op::Div)
    });
    register(m, "floor", &[Any], None, |a| {
        Ok(V::Float(to_f64(&a[0]).floor()))
    });
    register(m, "ceil", &[Any], None, |a| {
        Ok(V::Float(to_f64(&a[0]).ceil()))
    });
    register(m, "round", &[Any, Int], Some(Float), |a| {
        let round_on = match a.get(2) {
            Some(V::Float(f)) => *f,
            _ => 0.5,
        };
        let val = to_f64(&a[0]);
        let places = to_i64(&a[1]) as f64;
        let pow = 10f64.powf(places);
        let digit = pow * val;
        let div = digit.fract();
        let r = if div >= round_on {
            digit.ceil()
        } else {
            digit.floor()
        };
        Ok(V::Float(r / pow))
    });
    register(m, "seq", &[], Some(Int), |a| {
        let n: Vec<i64> = a.iter().map(to_i64).collect();
        let (start, end, step) = match n.as_slice() {
            [] => return Ok(V::s("")),
            [e] => {
                let inc = if *e < 1 { -1 } else { 1 };
                (1, e + inc, inc)
            }
            [s, e] => {
                let st = if e < s { -1 } else { 1 };
                (*s, e + st, st)
            }
            [s, st, e] => {
                let mut inc = 1;
                if e < s {
                    inc = -1;
                    if *st > 0 {
                        return Ok(V::s(""));
                    }
                }
                (*s, e + inc, *st)
            }
            _ => return Ok(V::s("")),
        };
        let items = until_step(start, end, step)?;
        let s: Vec<String> = items.iter().map(i64::to_string).collect();
        Ok(V::string(s.join(" ")))
    });
}

/// Sprig's `execDecimalOp`: shopspring/decimal arithmetic on the shortest decimal forms of the
/// float64 operands, then back to float64.
fn decimal_op<'a>(a: &V<'a>, rest: &[V<'a>], op: decimal::Op) -> R<V<'a>> {
    let mut acc = decimal::Dec::from_f64(to_f64(a))?;
    for x in rest {
        let d = decimal::Dec::from_f64(to_f64(x))?;
        acc = acc.apply(&d, op)?;
    }
    Ok(V::Float(acc.to_f64()))
}

mod decimal {
    //! The subset of shopspring/decimal Sprig uses: exact `Add`, `Sub`, `Mul`, and `Div`
    //! rounded half away from zero to 16 decimal places; float64 conversions through the
    //! shortest decimal form. Mantissas beyond 128 bits fall back to float64 arithmetic.

    /// The operation.
    #[derive(Clone, Copy)]
    pub enum Op {
        Add,
        Sub,
        Mul,
        Div,
    }

    /// A decimal `m × 10^e`, or a float64 when it no longer fits.
    #[derive(Clone, Copy)]
    pub enum Dec {
        Exact(i128, i32),
        Approx(f64),
    }

    impl Dec {
        /// `decimal.NewFromFloat`.
        pub fn from_f64(f: f64) -> Result<Dec, String> {
            if !f.is_finite() {
                return Err(format!(
                    "Cannot create a Decimal from {}",
                    crate::go::float::format_float(f, 'g', -1)
                ));
            }
            if f == 0.0 {
                return Ok(Dec::Exact(0, 0));
            }
            let s = crate::go::float::shortest_sci(f);
            let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
            let exp: i32 = exp.parse().unwrap_or(0);
            let neg = mant.starts_with('-');
            let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
            let frac = digits.len() as i32 - 1;
            let m: i128 = digits.parse().unwrap_or(0);
            Ok(Dec::Exact(if neg { -m } else { m }, exp - frac))
        }

        /// `Decimal.Float64`.
        pub fn to_f64(self) -> f64 {
            match self {
                Dec::Exact(m, e) => format!("{m}e{e}").parse().unwrap_or(0.0),
                Dec::Approx(f) => f,
            }
        }

        fn approx(self) -> f64 {
            self.to_f64()
        }

        /// `d op x`.
        pub fn apply(self, x: &Dec, op: Op) -> Result<Dec, String> {
            let (Dec::Exact(a, ea), Dec::Exact(b, eb)) = (self, *x) else {
                return Ok(Dec::Approx(float_op(self.approx(), x.approx(), op)?));
            };
            let r = match op {
                Op::Add | Op::Sub => {
                    let b = if matches!(op, Op::Sub) { -b } else { b };
                    let e = ea.min(eb);
                    scale(a, ea - e)
                        .zip(scale(b, eb - e))
                        .and_then(|(x, y)| x.checked_add(y))
                        .map(|m| Dec::Exact(m, e))
                }
                Op::Mul => a.checked_mul(b).map(|m| Dec::Exact(m, ea + eb)),
                Op::Div => {
                    if b == 0 {
                        return Err("decimal division by 0".into());
                    }
                    div_round(a, ea, b, eb)
                }
            };
            match r {
                Some(d) => Ok(d),
                None => Ok(Dec::Approx(float_op(self.approx(), x.approx(), op)?)),
            }
        }
    }

    fn float_op(a: f64, b: f64, op: Op) -> Result<f64, String> {
        Ok(match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            Op::Div => {
                if b == 0.0 {
                    return Err("decimal division by 0".into());
                }
                a / b
            }
        })
    }

    fn scale(m: i128, k: i32) -> Option<i128> {
        let mut m = m;
        for _ in 0..k {
            m = m.checked_mul(10)?;
        }
        Some(m)
    }

    /// `DivRound(d2, 16)`: the quotient truncated at 10^-16, then rounded half away from zero.
    fn div_round(a: i128, ea: i32, b: i128, eb: i32) -> Option<Dec> {
        const PREC: i32 = 16;
        // q = a·10^ea / (b·10^eb) at 10^-PREC: numerator a·10^(ea-eb+PREC) over b.
        let shift = ea - eb + PREC;
        let (num, den) = if shift >= 0 {
            (scale(a, shift)?, b)
        } else {
            (a, scale(b, -shift)?)
        };
        let q = num / den;
        let r = num % den;
        let twice = r.checked_abs()?.checked_mul(2)?;
        let q = if twice >= den.checked_abs()? {
            if (num < 0) != (den < 0) {
                q - 1
            } else {
                q + 1
            }
        } else {
            q
        };
        Some(Dec::Exact(q, -PREC))
    }
}

/// Go's `math.Max` (`max`) or `math.Min`: infinities win, then NaN; between zeros +0 is the
/// max and -0 the min.
fn go_extreme(x: f64, y: f64, max: bool) -> f64 {
    let inf = if max {
        f64::INFINITY
    } else {
        f64::NEG_INFINITY
    };
    if x == inf || y == inf {
        inf
    } else if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_negative() == max {
            y
        } else {
            x
        }
    } else if max {
        x.max(y)
    } else {
        x.min(y)
    }
}
