//! Latency charts as hand-written SVG: latency (log scale) against
//! percentile on a "nines" scale, so that p50, p90, p99 and p99.9 are evenly
//! spaced. One line per measured series.

use std::fmt::Write as _;

use crate::latency::Series;

const W: f64 = 900.0;
const H: f64 = 380.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 290.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 45.0;
const COLOURS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf",
];

/// Position of percentile `p` on the nines scale: -log10(1 - p/100), capped
/// at p99.99 (4 nines); the max is drawn at 4.3.
fn nines(p: f64) -> f64 {
    if p >= 100.0 { 4.3 } else { (-(1.0 - p / 100.0).log10()).min(4.0) }
}

fn label(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{} ms", trim(ns / 1e6))
    } else if ns >= 1e3 {
        format!("{} µs", trim(ns / 1e3))
    } else {
        format!("{} ns", trim(ns))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A percentile chart of `series` titled `title`.
pub fn percentile_chart(title: &str, series: &[&Series]) -> String {
    let all = series.iter().flat_map(|s| s.curve.iter().map(|&(_, v)| v.max(1) as f64));
    let (lo, hi) = all.fold((f64::MAX, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo > hi { (1.0, 10.0) } else { (lo, hi) };
    let (y0, y1) = (lo.log10().floor(), hi.log10().ceil().max(lo.log10().floor() + 1.0));
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let x = |p: f64| LEFT + nines(p) / 4.3 * plot_w;
    let y = |ns: f64| TOP + plot_h - (ns.max(1.0).log10() - y0) / (y1 - y0) * plot_h;

    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(out, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = write!(
        out,
        r#"<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>"#,
        LEFT,
        escape(title)
    );
    // Horizontal grid: decades and 2x, 5x.
    let mut decade = y0;
    while decade <= y1 {
        for m in [1.0, 2.0, 5.0] {
            let v = 10f64.powf(decade) * m;
            if v.log10() > y1 + 1e-9 {
                continue;
            }
            let yy = y(v);
            let (stroke, width) = if m == 1.0 { ("#bbb", 1.0) } else { ("#e5e5e5", 0.7) };
            let _ = write!(
                out,
                r#"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{stroke}" stroke-width="{width}"/>"#,
                LEFT + plot_w
            );
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                LEFT - 5.0,
                yy + 4.0,
                label(v)
            );
        }
        decade += 1.0;
    }
    // Vertical grid at the usual percentiles.
    for (p, name) in [
        (0.0, "p0"),
        (50.0, "p50"),
        (90.0, "p90"),
        (99.0, "p99"),
        (99.9, "p99.9"),
        (99.99, "p99.99"),
        (100.0, "max"),
    ] {
        let xx = x(p);
        let _ = write!(
            out,
            r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="#ddd"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{name}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 15.0
        );
    }
    let _ = write!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">percentile (nines scale)</text>"#,
        LEFT + plot_w / 2.0,
        H - 8.0
    );
    let _ = write!(
        out,
        r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">latency (log scale)</text>"#,
        TOP + plot_h / 2.0
    );
    // Series named "server @ rate" share a colour per server and take a dash
    // pattern per rate; others get a colour each.
    let mut servers: Vec<&str> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let server = s.name.split(" @ ").next().unwrap_or(&s.name);
        let k = servers.iter().position(|&x| x == server).unwrap_or_else(|| {
            servers.push(server);
            seen.push(0);
            servers.len() - 1
        });
        let nth = seen[k];
        seen[k] += 1;
        let (colour, dash) = if s.name.contains(" @ ") {
            (COLOURS[k % COLOURS.len()], ["", "7 3", "2 2", "9 3 2 3"][nth % 4])
        } else {
            (COLOURS[i % COLOURS.len()], "")
        };
        let dash = if dash.is_empty() { String::new() } else { format!(r#" stroke-dasharray="{dash}""#) };
        let points: Vec<String> =
            s.curve.iter().map(|&(p, v)| format!("{:.1},{:.1}", x(p), y(v as f64))).collect();
        let _ = write!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.8"{dash} points="{}"/>"#,
            points.join(" ")
        );
        let ly = TOP + 10.0 + i as f64 * 16.0;
        let lx = LEFT + plot_w + 12.0;
        let _ = write!(
            out,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="3"{dash}/><text x="{}" y="{}">{}</text>"#,
            lx + 18.0,
            lx + 23.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    out.push_str("</svg>\n");
    out
}
