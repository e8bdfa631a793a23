//! `repr(float)` and `repr(complex)`: CPython's `float_repr_style == 'short'`.

use std::fmt::Write as _;

/// Python's `repr(x)` (and `str(x)`) for a float.
///
/// The shortest digit string that reads back as `x`, choosing between two equally short
/// candidates by round-half-even on the exact binary value as CPython's `dtoa` does (Rust's
/// `{:e}` rounds those ties up: `247600580198296.62`, not `.63`); fixed notation for decimal
/// exponents -4 to 15 with `.0` on integral values, exponent form (`1e-05`, `1.5e+16`) outside
/// it; `inf`, `-inf`, `nan` and `-0.0`.
///
/// ```
/// assert_eq!(baton_py::float_repr(1e16), "1e+16");
/// assert_eq!(baton_py::float_repr(247600580198296.62), "247600580198296.62");
/// ```
#[must_use]
pub fn float_repr(x: f64) -> String {
    format_short(x, true)
}

/// Python's `repr(complex(re, im))`: `2j`, `(1-2j)`, `(-0-1j)`, `(nan+infj)`.
///
/// The parts use the float rules of [`float_repr`] without the `.0`; the real part and the
/// parentheses are left out only when the real part is `+0.0`.
///
/// ```
/// assert_eq!(baton_py::complex_repr(0.0, 2.0), "2j");
/// assert_eq!(baton_py::complex_repr(-0.0, -1.0), "(-0-1j)");
/// ```
#[must_use]
pub fn complex_repr(re: f64, im: f64) -> String {
    let imag = format_short(im, false);
    if re == 0.0 && re.is_sign_positive() {
        return format!("{imag}j");
    }
    let sign = if imag.starts_with('-') { "" } else { "+" };
    format!("({}{sign}{imag}j)", format_short(re, false))
}

/// CPython's `PyOS_double_to_string(x, 'r', 0, flags, NULL)`; `add_dot_0` is
/// `Py_DTSF_ADD_DOT_0`.
fn format_short(x: f64, add_dot_0: bool) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}{}", if add_dot_0 { "0.0" } else { "0" });
    }
    let (digits, exp) = shortest_digits(x.abs());
    let mut out = String::from(sign);
    if (-4..16).contains(&exp) {
        // Fixed notation: the decimal point sits after `exp + 1` digits.
        let point = exp + 1;
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
            out.push_str(&digits);
        } else if point as usize >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
            if add_dot_0 {
                out.push_str(".0");
            }
        } else {
            out.push_str(&digits[..point as usize]);
            out.push('.');
            out.push_str(&digits[point as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let exp_sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{exp_sign}{:02}", exp.unsigned_abs());
    }
    out
}

/// The significant digits (no leading or trailing zeros) and the decimal exponent of the first
/// digit of the shortest round-trip form of a finite, positive `x`, ties to even.
fn shortest_digits(x: f64) -> (String, i32) {
    // `{:e}` gives the shortest round-trip digit count. When the exact binary value lies halfway
    // between two strings of that length, Rust picks the upper and CPython the even one;
    // `{:.N$e}` rounds the exact value half-to-even, and a string of that length that is at
    // least as close as a round-tripping one round-trips as well, except when the exact value
    // is a power of two, whose lower neighbour is nearer: that case is checked and falls back.
    let shortest = format!("{x:e}");
    let significant = count_digits(&shortest);
    let even = format!("{x:.*e}", significant - 1);
    let chosen = if even.parse::<f64>() == Ok(x) {
        even
    } else {
        shortest
    };
    let (mantissa, exp) = chosen.split_once('e').unwrap_or((chosen.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    (digits.to_owned(), exp.parse().unwrap_or(0))
}

fn count_digits(sci: &str) -> usize {
    sci.split_once('e')
        .map_or(sci, |(m, _)| m)
        .chars()
        .filter(char::is_ascii_digit)
        .count()
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_cpython() {
        let cases = [
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (123_456_789_012_345_678.0, "1.2345678901234568e+17"),
            (-2.5e-7, "-2.5e-07"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-0.0, "-0.0"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            // Ties that Rust's shortest form rounds up and CPython rounds to even.
            (2.675, "2.675"),
            (247_600_580_198_296.62, "247600580198296.62"),
            (1_273_812_973_436_447.2, "1273812973436447.2"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x), want, "repr of {x:?}");
        }
    }

    #[test]
    fn complex_parts_drop_the_dot_zero() {
        assert_eq!(complex_repr(0.0, 2.0), "2j");
        assert_eq!(complex_repr(0.0, 1e16), "1e+16j");
        assert_eq!(complex_repr(1.0, -2.0), "(1-2j)");
        assert_eq!(complex_repr(-0.0, -1.0), "(-0-1j)");
        assert_eq!(complex_repr(1.5, f64::INFINITY), "(1.5+infj)");
    }
}
