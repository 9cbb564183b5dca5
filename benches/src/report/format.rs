//! Figures as text: times with their unit, ratios, shares, differences.

/// Nanoseconds as text with a unit.
pub(super) fn t(ns: f64) -> String {
    if !ns.is_finite() {
        "n/a".into()
    } else if ns < 0.0 {
        format!("−{}", t(-ns))
    } else if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e4 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// A figure, or "skipped" for one whose step did not run.
pub(super) fn to(ns: Option<f64>) -> String {
    ns.map_or_else(|| "skipped".into(), t)
}

/// `a / b` as "1.23x".
pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "–".into(),
    }
}

/// `a / b` as a percentage.
pub(super) fn pct(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.0}%", a / b * 100.0),
        _ => "–".into(),
    }
}

/// `a - b`.
pub(super) fn minus(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? - b?)
}

/// `a - b` with the change relative to `b`: "823 ns (+19%)".
pub(super) fn cost(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{} ({:+.0}%)", t(a - b), (a / b - 1.0) * 100.0),
        _ => "–".into(),
    }
}

/// Microseconds (the host's bench reports them) as text.
pub(super) fn us(x: Option<f64>) -> String {
    to(x.map(|x| x * 1e3))
}
