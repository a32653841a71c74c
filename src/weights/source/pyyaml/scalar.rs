//! Scalars typed and built as PyYAML's `SafeLoader` does: its implicit resolvers (YAML 1.1:
//! booleans in `yes`/`no`/`on`/`off`/`true`/`false` spellings, ints in bases 2, 8, 10, 16
//! and 60, floats with a signed exponent only, dates, `<<`, `=`), tried in its order on plain
//! scalars (and on those tagged `!`), and its constructors for the core tags.
//!
//! Must not: type a quoted scalar without a tag as anything but a string.
use std::sync::LazyLock;

use regex::Regex;

use super::{Error, Py};

pub(super) const TAG: &str = "tag:yaml.org,2002:";

/// PyYAML's implicit resolvers, in the order it tries them.
static RESOLVERS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    let r = |s: &str| Regex::new(&format!("^(?:{s})$")).expect("a valid pattern");
    vec![
        (
            "bool",
            r("yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"),
        ),
        (
            "float",
            r(
                r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
            ),
        ),
        (
            "int",
            r(
                r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
            ),
        ),
        ("merge", r("<<")),
        ("null", r("~|null|Null|NULL|")),
        (
            "timestamp",
            r(
                r"[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?",
            ),
        ),
        ("value", r("=")),
    ]
});

/// The parts of a date the timestamp resolver matched (year, month, day, then the time's
/// hour, minute, second, and its zone's sign, hours, minutes).
const DATE: &str = r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:(?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]*)?(?:[ \t]*(?:Z|([-+])([0-9]{1,2})(?::([0-9]{2}))?))?)?";

/// The tag PyYAML gives a plain scalar.
pub(super) fn resolve(value: &str) -> &'static str {
    RESOLVERS
        .iter()
        .find(|(_, re)| re.is_match(value))
        .map_or("str", |(tag, _)| tag)
}

pub(super) fn scalar(tag: Option<&str>, value: &str, plain: bool, line: u64, is_key: bool) -> Result<Py, Error> {
    let explicit = tag.is_some_and(|t| t != "!");
    let tag = match tag {
        None if plain => resolve(value),
        None => "str",
        Some("!") => resolve(value),
        Some(t) => match t.strip_prefix(TAG) {
            Some(k @ ("str" | "null" | "bool" | "int" | "float" | "timestamp")) => k,
            _ => return Err(Error::NotRead(format!("the tag {t} (line {line})"))),
        },
    };
    // An explicit !!int, !!float or !!timestamp is read only on text its resolver types alike.
    if explicit && matches!(tag, "int" | "float" | "timestamp") && resolve(value) != tag {
        return Err(Error::NotRead(format!("!!{tag} {value:?} (line {line})")));
    }
    let raises = |what: String| Err(Error::Raises(format!("{what} (line {line})")));
    match tag {
        "str" => Ok(Py::Str(value.into())),
        "null" => Ok(Py::None),
        "bool" => match value.to_lowercase().as_str() {
            "yes" | "true" | "on" => Ok(Py::Bool(true)),
            "no" | "false" | "off" => Ok(Py::Bool(false)),
            _ => raises(format!("!!bool {value:?} is no boolean")),
        },
        "int" => match int(value) {
            Some(n) => Ok(Py::Num(n)),
            None => raises(format!("{value:?} is no int")),
        },
        "float" => Ok(Py::Num(float(value))),
        "timestamp" => match valid_date(value) {
            true => Ok(Py::Date(value.into())),
            false => raises(format!("{value:?} is no valid date")),
        },
        "value" if is_key => Ok(Py::Str(value.into())),
        other => raises(format!(
            "could not determine a constructor for the tag 'tag:yaml.org,2002:{other}'"
        )),
    }
}

/// PyYAML's `construct_yaml_int` on text its resolver typed as int; `None` where it raises.
fn int(value: &str) -> Option<f64> {
    let v = value.replace('_', "");
    let (sign, v) = match v.strip_prefix('-') {
        Some(rest) => (-1.0, rest.to_string()),
        None => (1.0, v.strip_prefix('+').unwrap_or(&v).to_string()),
    };
    let digits = |s: &str, base: u32| -> Option<f64> {
        let mut n = 0.0;
        for c in s.chars() {
            n = n * f64::from(base) + f64::from(c.to_digit(base)?);
        }
        (!s.is_empty()).then_some(n)
    };
    let n = if v == "0" {
        0.0
    } else if let Some(b) = v.strip_prefix("0b") {
        digits(b, 2)?
    } else if let Some(x) = v.strip_prefix("0x") {
        digits(x, 16)?
    } else if v.starts_with('0') {
        digits(&v, 8)?
    } else if v.contains(':') {
        v.split(':')
            .try_fold(0.0, |acc, part| Some(acc * 60.0 + digits(part, 10)?))?
    } else {
        digits(&v, 10)?
    };
    Some(sign * n)
}

/// PyYAML's `construct_yaml_float` on text its resolver typed as float.
fn float(value: &str) -> f64 {
    let v = value.replace('_', "").to_lowercase();
    let (sign, v) = match v.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, v.strip_prefix('+').unwrap_or(&v)),
    };
    let n = if v == ".inf" {
        f64::INFINITY
    } else if v == ".nan" {
        f64::NAN
    } else if v.contains(':') {
        v.split(':')
            .fold(0.0, |acc, part| acc * 60.0 + part.parse::<f64>().unwrap_or(f64::NAN))
    } else {
        v.parse().unwrap_or(f64::NAN)
    };
    sign * n
}

/// Whether PyYAML's `construct_yaml_timestamp` builds a date of `value` without raising.
fn valid_date(value: &str) -> bool {
    static RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!("^{DATE}$")).expect("a valid pattern"));
    let Some(c) = RE.captures(value) else { return false };
    let n = |i: usize| c.get(i).map_or(0, |m| m.as_str().parse::<u32>().unwrap_or(u32::MAX));
    let (year, month, day) = (n(1), n(2), n(3));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let tz_minutes = n(8) * 60 + n(9);
    (1..=9999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=days).contains(&day)
        && n(4) < 24
        && n(5) < 60
        && n(6) < 60
        && tz_minutes < 24 * 60
}

#[cfg(test)]
mod tests {
    use super::super::safe_load;
    use super::*;

    fn one(text: &str) -> Py {
        let doc = safe_load(&format!("k: {text}\n")).unwrap_or_else(|e| panic!("{text:?}: {e:?}"));
        doc.get("k").cloned().unwrap()
    }

    #[test]
    fn plain_scalars_are_typed_by_yaml_1_1_as_pyyaml_types_them() {
        for t in ["yes", "Yes", "YES", "on", "ON", "true", "True", "! yes", "! 'on'"] {
            assert_eq!(one(t), Py::Bool(true), "{t}");
        }
        for t in ["no", "No", "NO", "off", "Off", "false", "FALSE", "!!bool 'No'"] {
            assert_eq!(one(t), Py::Bool(false), "{t}");
        }
        for t in [
            "y",
            "n",
            "yEs",
            "'no'",
            "\"off\"",
            "0o7",
            "1e3",
            "0:00",
            "0b",
            "2024-1-1",
            "!!str yes",
            "|\n  no",
        ] {
            assert!(matches!(one(t), Py::Str(_)), "{t}: {:?}", one(t));
        }
        for (t, n) in [
            ("0", 0.0),
            ("00", 0.0),
            ("0_0", 0.0),
            ("0x1f", 31.0),
            ("017", 15.0),
            ("1:30", 90.0),
        ] {
            assert_eq!(one(t), Py::Num(n), "{t}");
        }
        for (t, n) in [("1.0e+3", 1000.0), ("-0.0", 0.0), (".5", 0.5), ("1:30.5", 90.5)] {
            assert_eq!(one(t), Py::Num(n), "{t}");
        }
        assert!(matches!(one(".NaN"), Py::Num(n) if n.is_nan()));
        for t in ["~", "null", "NULL", "", "!!null x"] {
            assert_eq!(one(t), Py::None, "{t}");
        }
        assert_eq!(one("2024-01-01"), Py::Date("2024-01-01".into()));
        // Truthiness as Python's: a quoted "no" is a non-empty string.
        assert!(one("'no'").truthy() && !one("no").truthy() && !one("0.0").truthy() && one(".nan").truthy());
    }
}
