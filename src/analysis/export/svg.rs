//! SVG bar chart of a report (`plot`, `run --export-svg`): one row per case with its median
//! encode and decode time as horizontal bars and min–max whiskers, rows grouped by size
//! (width x height, frames). Cases that were not measured keep a labelled empty row. When the
//! cases carry telemetry, a panel under the bars draws the device's clock (% of its maximum,
//! with the 75% throttle line) and temperature over the run, the cases one after another, so
//! a person sees where a sweep ran hot. A case run with `--profile` has each bar split by op
//! kind (conv3d, conv2d, attention, norm, other), in the shares of its profiled pass.
//! Drawn with plotters' SVG backend only: text is emitted as SVG `<text>`, no system fonts.
//!
//! Must not: write files (the [`super::ExportManager`] does).
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::report::{CaseRecord, CaseStatus, PassStats, Report};

const ROW_PX: u32 = 30;
const PLOT_PX: u32 = 720;
const TOP_PX: u32 = 70;
const BOTTOM_PX: u32 = 50;
const ENCODE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const DECODE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const CLOCK: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const TEMP: RGBColor = RGBColor(0xd6, 0x27, 0x28);
/// The op kinds of a profile's roll-up (`crate::report::profile::complete::op_of`), as the bars split them.
const OPS: [(&str, RGBColor); 5] = [
    ("conv3d", RGBColor(0x94, 0x67, 0xbd)),
    ("conv2d", RGBColor(0x8c, 0x56, 0x4b)),
    ("attention", RGBColor(0xe3, 0x77, 0xc2)),
    ("norm", RGBColor(0x17, 0xbe, 0xcf)),
    ("other", RGBColor(0x7f, 0x7f, 0x7f)),
];
/// Height of the telemetry panel, when drawn.
const TELEMETRY_PX: u32 = 240;

/// A row of the chart, top to bottom.
enum Row<'a> {
    Group(String),
    Case(&'a CaseRecord),
}

/// Cases grouped by frames and size, in the order of their axes within a group
/// ([`super::rows::sorted`]), not the order they ran in.
fn rows(report: &Report) -> Vec<Row<'_>> {
    let cases = super::rows::sorted(report);
    let key = |c: &CaseRecord| {
        let s = &c.settings;
        (s.width * s.height, s.width, s.height, s.frames)
    };
    let mut out = Vec::new();
    let mut last = None;
    for c in cases {
        if last != Some(key(c)) {
            last = Some(key(c));
            let s = &c.settings;
            out.push(Row::Group(format!("{}x{}, {} frames", s.width, s.height, s.frames)));
        }
        out.push(Row::Case(c));
    }
    out
}

/// A row's label: the case's name among the report's ([`super::rows::ShortIds`]).
fn case_label(c: &CaseRecord, names: &super::rows::ShortIds) -> String {
    let name = names.name(&c.id);
    if c.added_as_reference {
        format!("{name} (reference)")
    } else {
        name.to_string()
    }
}

/// Render the chart as an SVG document.
pub fn svg_chart(report: &Report) -> anyhow::Result<String> {
    let rows = rows(report);
    let names = super::rows::ShortIds::of(report);
    let n = rows.len().max(1);
    let label_chars = rows
        .iter()
        .map(|r| match r {
            Row::Group(g) => g.chars().count(),
            Row::Case(c) => case_label(c, &names).chars().count(),
        })
        .max()
        .unwrap_or(10);
    let label_px = (label_chars as u32 * 7 + 24).clamp(120, 900);
    let timeline = timeline(report);
    let bars_px = TOP_PX + BOTTOM_PX + n as u32 * ROW_PX;
    let extra = if timeline.is_some() { TELEMETRY_PX } else { 0 };
    let size = (label_px + PLOT_PX + 30, bars_px + extra);
    let measured = || report.cases.iter().filter(|c| c.outcome.status == CaseStatus::Ok);
    let xmax = measured()
        .flat_map(|c| {
            super::passes(c)
                .into_iter()
                .filter_map(|(_, p)| p.map(|p| p.max_s.max(p.median_s)))
        })
        .fold(0.0f64, f64::max);
    let xmax = if xmax > 0.0 && xmax.is_finite() {
        xmax * 1.08
    } else {
        1.0
    };

    let mut buf = String::new();
    {
        let whole = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        whole.fill(&WHITE).map_err(plot_err)?;
        let (root, below) = whole.split_vertically(bars_px);
        if let Some(t) = &timeline {
            telemetry_panel(&below, t)?;
        }
        let title = match names.common.is_empty() {
            true => format!("wan-vae-bench: median time per case ({})", report.run.device),
            false => format!(
                "wan-vae-bench: median time per case ({}; every case: {})",
                report.run.device,
                names.common.join(", ")
            ),
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(label_px)
            .build_cartesian_2d(0f64..xmax, 0f64..n as f64)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("seconds (bar: median, whiskers: min–max)")
            .draw()
            .map_err(plot_err)?;

        let label_style = TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
        let group_style = TextStyle::from(("sans-serif", 14).into_font().style(FontStyle::Bold))
            .pos(Pos::new(HPos::Left, VPos::Center));
        let note_style = ("sans-serif", 12)
            .into_font()
            .style(FontStyle::Italic)
            .color(&RGBColor(0x80, 0x80, 0x80))
            .pos(Pos::new(HPos::Left, VPos::Center));
        let mut bars: [Vec<Rectangle<(f64, f64)>>; 2] = [Vec::new(), Vec::new()];
        let mut by_op: Vec<Vec<Rectangle<(f64, f64)>>> = OPS.iter().map(|_| Vec::new()).collect();
        let mut whiskers = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let top = (n - i) as f64;
            let (lx, ly) = chart.backend_coord(&(0.0, top - 0.5));
            match row {
                Row::Group(g) => {
                    root.draw(&Text::new(g.clone(), (10, ly), group_style.clone()))
                        .map_err(plot_err)?;
                }
                Row::Case(c) => {
                    root.draw(&Text::new(case_label(c, &names), (lx - 8, ly), label_style.clone()))
                        .map_err(plot_err)?;
                    let measured = c.outcome.status == CaseStatus::Ok
                        && (c.outcome.encode.is_some() || c.outcome.decode.is_some());
                    if !measured {
                        let note = format!("not measured: {}", c.outcome.status.name());
                        chart
                            .draw_series(std::iter::once(Text::new(
                                note,
                                (xmax * 0.01, top - 0.5),
                                note_style.clone(),
                            )))
                            .map_err(plot_err)?;
                        continue;
                    }
                    for (k, (_, p)) in super::passes(c).into_iter().enumerate() {
                        if let Some(p) = p {
                            let (y0, y1) = (top - 0.12 - 0.38 * k as f64, top - 0.48 - 0.38 * k as f64);
                            let color = if k == 0 { ENCODE } else { DECODE };
                            bars[k].push(Rectangle::new([(0.0, y0), (p.median_s, y1)], color.filled()));
                            split_by_op(c, k, p.median_s, (y0, y1), &mut by_op);
                            whiskers.extend(whisker(p, (y0 + y1) / 2.0, 0.12));
                        }
                    }
                }
            }
        }
        // A pass no case ran has no bar, and no legend entry (a decode-only run's legend
        // said `encode` too).
        let mut labelled = false;
        let [enc, dec] = bars;
        for (name, color, rects) in [("encode", ENCODE, enc), ("decode", DECODE, dec)] {
            if rects.is_empty() {
                continue;
            }
            labelled = true;
            chart
                .draw_series(rects)
                .map_err(plot_err)?
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        }
        for ((name, color), rects) in OPS.iter().zip(by_op) {
            if !rects.is_empty() {
                labelled = true;
                chart
                    .draw_series(rects)
                    .map_err(plot_err)?
                    .label(format!("profiled: {name}"))
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
            }
        }
        chart.draw_series(whiskers).map_err(plot_err)?;
        if labelled {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(plot_err)?;
        }
        if report.cases.is_empty() {
            root.draw(&Text::new(
                "no cases in this report",
                (label_px as i32, TOP_PX as i32),
                note_style,
            ))
            .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(buf)
}

/// The bar of pass `k` (0 encode, 1 decode) of a profiled case, `median_s` long between `y`,
/// cut into one segment per op kind in the shares of its profiled pass, pushed onto `by_op`
/// (in [`OPS`] order); nothing for a case or pass without a profile.
fn split_by_op(c: &CaseRecord, k: usize, median_s: f64, y: (f64, f64), by_op: &mut [Vec<Rectangle<(f64, f64)>>]) {
    let pass = c
        .profile
        .as_ref()
        .and_then(|p| if k == 0 { p.encode.as_ref() } else { p.decode.as_ref() });
    let Some(pass) = pass.filter(|p| !p.by_op.is_empty()) else {
        return;
    };
    let total: f64 = pass.by_op.iter().map(|r| r.share).sum();
    if total.is_nan() || total <= 0.0 {
        return;
    }
    let mut x = 0.0;
    for (i, (name, color)) in OPS.iter().enumerate() {
        let share: f64 = pass.by_op.iter().filter(|r| r.name == *name).map(|r| r.share).sum();
        if share > 0.0 {
            let w = median_s * share / total;
            by_op[i].push(Rectangle::new([(x, y.0), (x + w, y.1)], color.filled()));
            x += w;
        }
    }
}

/// The device's clock (% of its maximum) and temperature over the run: the sampled cases'
/// series one after another in report order (seconds since the first sample); `None` when no
/// case has one.
struct Timeline {
    clock_pct: Vec<(f64, f64)>,
    temp_c: Vec<(f64, f64)>,
    end_s: f64,
}

fn timeline(report: &Report) -> Option<Timeline> {
    let mut t = Timeline {
        clock_pct: Vec::new(),
        temp_c: Vec::new(),
        end_s: 0.0,
    };
    for c in &report.cases {
        let Some(tel) = &c.outcome.telemetry else {
            continue;
        };
        let mut last = 0.0;
        for [ts, mhz, temp] in &tel.series {
            let Some(ts) = *ts else {
                continue;
            };
            if let (Some(m), Some(max)) = (*mhz, tel.clock_max_mhz.filter(|m| *m > 0.0)) {
                t.clock_pct.push((t.end_s + ts, 100.0 * m / max));
            }
            if let Some(temp) = *temp {
                t.temp_c.push((t.end_s + ts, temp));
            }
            last = ts;
        }
        t.end_s += last;
    }
    (!t.clock_pct.is_empty() || !t.temp_c.is_empty()).then_some(t)
}

/// The telemetry panel under the bars.
fn telemetry_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    t: &Timeline,
) -> anyhow::Result<()> {
    let ymax = t.temp_c.iter().map(|p| p.1).fold(110.0, f64::max) * 1.05;
    let xmax = t.end_s.max(1e-3);
    let mut chart = ChartBuilder::on(area)
        .caption(
            "device during the run: clock (% of its maximum) and temperature (°C)",
            ("sans-serif", 15),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("seconds sampled, the cases one after another")
        .draw()
        .map_err(plot_err)?;
    let limit = 100.0 * crate::report::telemetry::THROTTLE_CLOCK_FRACTION;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, limit), (xmax, limit)],
            ShapeStyle::from(&RGBColor(0x99, 0x99, 0x99)).stroke_width(1),
        )))
        .map_err(plot_err)?
        .label("throttle line: 75% of the maximum clock")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], RGBColor(0x99, 0x99, 0x99)));
    chart
        .draw_series(LineSeries::new(t.clock_pct.iter().copied(), CLOCK.stroke_width(2)))
        .map_err(plot_err)?
        .label("clock, % of its maximum")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], CLOCK));
    chart
        .draw_series(LineSeries::new(t.temp_c.iter().copied(), TEMP.stroke_width(2)))
        .map_err(plot_err)?
        .label("temperature, °C")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], TEMP));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

/// Min–max whisker at height `y` with end caps of half-height `cap`.
fn whisker(p: &PassStats, y: f64, cap: f64) -> [PathElement<(f64, f64)>; 3] {
    let style = ShapeStyle::from(&BLACK).stroke_width(1);
    [
        PathElement::new(vec![(p.min_s, y), (p.max_s, y)], style),
        PathElement::new(vec![(p.min_s, y - cap), (p.min_s, y + cap)], style),
        PathElement::new(vec![(p.max_s, y - cap), (p.max_s, y + cap)], style),
    ]
}

fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the SVG chart: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::profile::{CaseProfile, PassProfile, Rollup};
    use crate::report::settings::CaseSettings;
    use crate::report::{testing, ModelInfo};

    fn ok_case(median_s: f64) -> CaseRecord {
        let s = CaseSettings::defaults();
        let mut outcome = testing::ok();
        outcome.decode = Some(PassStats::from_samples(vec![median_s; 3], vec![], 5, 10.0));
        testing::case(s, outcome)
    }

    fn report_of(cases: Vec<CaseRecord>) -> Report {
        testing::report(ModelInfo::default(), cases)
    }

    /// A profiled case's bars are split by op kind, in its profile's shares; an unprofiled
    /// report's chart has no such segment.
    #[test]
    fn a_profiled_case_has_its_bars_split_by_op_kind() {
        let mut c = ok_case(2.0);
        let plain = svg_chart(&report_of(vec![c.clone()])).unwrap();
        assert!(!plain.contains("profiled: conv3d"), "{plain}");
        let roll = |name: &str, share: f64| Rollup {
            name: name.into(),
            ms: share * 2000.0,
            share,
            ..Default::default()
        };
        c.profile = Some(CaseProfile {
            decode: Some(PassProfile {
                by_op: vec![roll("conv3d", 0.75), roll("norm", 0.25)],
                ..Default::default()
            }),
            ..Default::default()
        });
        let svg = svg_chart(&report_of(vec![c])).unwrap();
        assert!(
            svg.contains("profiled: conv3d") && svg.contains("profiled: norm"),
            "{svg}"
        );
        assert!(!svg.contains("profiled: attention"), "{svg}");
        // The conv3d segment is three times the norm one: 75% and 25% of the 2 s median.
        let fill = |c: RGBColor| format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let widths = |c: RGBColor| -> Vec<f64> {
            svg.lines()
                .filter(|l| l.contains("<rect") && l.contains(&fill(c)))
                .filter_map(|l| {
                    let w = l.split("width=\"").nth(1)?.split('"').next()?;
                    w.parse().ok()
                })
                .collect()
        };
        let (conv, norm) = (widths(OPS[0].1), widths(OPS[3].1));
        let (conv, norm) = (
            conv.iter().cloned().fold(0.0, f64::max),
            norm.iter().cloned().fold(0.0, f64::max),
        );
        assert!(norm > 0.0 && (conv / norm - 3.0).abs() < 0.2, "{conv} {norm}");
    }
}
