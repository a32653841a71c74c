//! `history --export-svg`: one panel per series (case, pass, machine): its run medians as
//! points, each segment's level as a line, each step as a dashed line labelled with its
//! change and what changed in the stack.
//!
//! Must not: fit or judge; it draws the [`History`] it is given.
use std::fmt::Write;

use super::History;

const WIDTH: f64 = 900.0;
const PANEL: f64 = 190.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 34.0;
const PLOT: f64 = 120.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The SVG document.
pub fn render(h: &History) -> String {
    let height = (h.series.len().max(1) as f64) * PANEL + 10.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    if h.series.is_empty() {
        out.push_str("<text x=\"10\" y=\"20\">no measured case</text>\n");
    }
    for (i, s) in h.series.iter().enumerate() {
        let y0 = i as f64 * PANEL;
        let _ = writeln!(
            out,
            "<text x=\"10\" y=\"{:.1}\" font-weight=\"bold\">{} {} on {}{}</text>",
            y0 + 18.0,
            esc(&s.case_id),
            s.pass,
            esc(&s.machine),
            if s.verdict.regressed() { " (slower now)" } else { "" }
        );
        let ys: Vec<f64> = s.points.iter().map(|p| p.median_s).collect();
        let (lo, hi) = ys
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
        let pad = ((hi - lo) * 0.1).max(hi * 0.01).max(1e-12);
        let (lo, hi) = ((lo - pad).max(0.0), hi + pad);
        let n = s.points.len();
        let x = |j: f64| LEFT + (WIDTH - LEFT - RIGHT) * if n > 1 { j / (n - 1) as f64 } else { 0.5 };
        let y = |v: f64| y0 + TOP + PLOT * (1.0 - (v - lo) / (hi - lo));
        let _ = writeln!(
            out,
            "<rect x=\"{LEFT}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{PLOT}\" fill=\"none\" stroke=\"#ccc\"/>",
            y0 + TOP,
            WIDTH - LEFT - RIGHT
        );
        for (v, anchor) in [(hi, y0 + TOP + 4.0), (lo, y0 + TOP + PLOT)] {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{anchor:.1}\" text-anchor=\"end\">{}</text>",
                LEFT - 4.0,
                crate::util::format::seconds(v)
            );
        }
        for g in &s.segments {
            let (a, b) = (
                x(g.first_point as f64 - 0.4).max(LEFT),
                x(g.last_point as f64 + 0.4).min(WIDTH - RIGHT),
            );
            let _ = writeln!(
                out,
                "<line x1=\"{a:.1}\" x2=\"{b:.1}\" y1=\"{0:.1}\" y2=\"{0:.1}\" stroke=\"#2a6\" stroke-width=\"2\"/>",
                y(g.median_s)
            );
        }
        for (j, p) in s.points.iter().enumerate() {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#357\"><title>{} {}</title></circle>",
                x(j as f64),
                y(p.median_s),
                esc(&h.reports[p.report].created_at),
                crate::util::format::seconds(p.median_s)
            );
        }
        for (k, st) in s.steps.iter().enumerate() {
            let sx = x(st.point as f64 - 0.5);
            let _ = writeln!(
                out,
                "<line x1=\"{sx:.1}\" x2=\"{sx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#c33\" stroke-dasharray=\"4 3\"/>",
                y0 + TOP,
                y0 + TOP + PLOT
            );
            let mut label = format!("{:+.1}%: {}", st.change * 100.0, super::render::changed(st));
            if label.chars().count() > 110 {
                label = label.chars().take(107).collect::<String>() + "...";
            }
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#c33\">{}</text>",
                (sx + 4.0).min(WIDTH - 300.0),
                y0 + TOP + PLOT + 14.0 + 12.0 * (k % 2) as f64,
                esc(&label)
            );
        }
    }
    out + "</svg>\n"
}
