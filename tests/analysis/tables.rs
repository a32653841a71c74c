//! Issue 67, item 8: output that shows the answer. Rows in the order of their axes (not the
//! shuffled order they ran in) in the terminal table, the Markdown, the CSV and the SVG;
//! ids cut to what differs in the tables (the full id in the report and the CSV); each
//! ratio saying what it divides; the engines' cross-check in the terminal; and the SVG's
//! legend naming only the passes that ran.
use crate::util::reports::*;
use wan_vae_bench::analysis::export::{rows, svg_chart, text, Exporter, MarkdownTable};
use wan_vae_bench::model::{Precision, TemporalTiling, Tiling};
use wan_vae_bench::report::settings::CaseSettings;
use wan_vae_bench::report::values::{Conv3dMode, Engine, Layout, MiopenDb, Passes, Switch};
use wan_vae_bench::report::{CaseRecord, CrossEngine, Report};

/// An ok case of `settings`, its id the tool's own, timed around `seconds`.
fn real(settings: CaseSettings, seconds: f64) -> CaseRecord {
    let mut c = case("x", &steady(seconds), &steady(seconds * 2.0));
    c.id = settings.id();
    c.settings = settings;
    c
}

/// A Strix Halo sweep as `run` shuffles it: torch, bf16 and fp32, chunk 1 and 4, the knobs,
/// the levers and an env sweep's variant name: ids of about 130 characters.
fn sweep() -> Report {
    let mut cases = Vec::new();
    let mut k = 0.0;
    for precision in [Precision::Fp32, Precision::Bf16] {
        for chunk in [1, 4] {
            for env in [
                "MIOPEN_FIND_MODE=2,MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD=0",
                "baseline",
            ] {
                let mut s = CaseSettings::defaults();
                s.engine = Engine::Torch;
                s.precision = precision;
                s.chunk = chunk;
                s.tiling = Some(Tiling {
                    tile_px: 256,
                    overlap_px: 64,
                });
                s.temporal_tile = Some(TemporalTiling::new(64, 8).unwrap());
                (s.frames, s.width, s.height) = (81, 832, 480);
                s.env_variant = env.to_string();
                s.passes = Passes::Decode;
                s.layout = Layout::ChannelsLast3d;
                s.conv3d = Conv3dMode::Split;
                s.knobs.cudnn = Switch::Off;
                s.knobs.cudnn_benchmark = Switch::On;
                s.knobs.miopen_db = MiopenDb::Fresh;
                k += 1.0;
                cases.push(real(s, 1.0 + k / 10.0));
            }
        }
    }
    // The run's shuffled order: the fastest 7th of 8.
    let order = [5, 2, 7, 0, 3, 6, 1, 4];
    let mut r = report("strix", order.iter().map(|&i| cases[i].clone()).collect());
    for c in &mut r.cases {
        c.outcome.encode = None;
    }
    r
}

/// The names of the rows in `lines` that name a case of `r`, in their order.
fn row_order(r: &Report, names: &rows::ShortIds, lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| {
            r.cases
                .iter()
                .map(|c| names.name(&c.id).to_string())
                .filter(|n| l.contains(n.as_str()))
                .max_by_key(|n| n.len())
        })
        .collect()
}

#[test]
fn tables_sort_by_the_axes_and_name_rows_by_what_differs() {
    let r = sweep();
    assert!(r.cases.iter().any(|c| c.id.len() > 120), "{:?}", r.cases[0].id);
    let names = rows::ShortIds::of(&r);
    let sorted: Vec<String> = rows::sorted(&r).iter().map(|c| names.name(&c.id).to_string()).collect();
    assert_eq!(
        sorted,
        [
            "bf16-chunk1-MIOPEN_FIND_MODE=2,MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD=0",
            "bf16-chunk1-baseline",
            "bf16-chunk4-MIOPEN_FIND_MODE=2,MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD=0",
            "bf16-chunk4-baseline",
            "fp32-chunk1-MIOPEN_FIND_MODE=2,MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD=0",
            "fp32-chunk1-baseline",
            "fp32-chunk4-MIOPEN_FIND_MODE=2,MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD=0",
            "fp32-chunk4-baseline",
        ]
    );
    // The terminal: sorted, what every case shares said once, no line 200 columns wide.
    let table = text::render_table(&r);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(row_order(&r, &names, &lines), sorted, "{table}");
    let common = lines[0];
    for shared in [
        "torch",
        "tile256o64",
        "ttile64o8",
        "81x832x480",
        "decode",
        "cl3d",
        "split",
        "cudnn_off",
    ] {
        assert!(
            common.starts_with("every case: ") && common.contains(shared),
            "{shared}: {common}"
        );
    }
    // The rows: from the header to the first footnote (the decode-only run has no encode columns).
    let end = lines.iter().position(|l| l.starts_with("* ")).unwrap();
    assert!(!lines[1].contains("encode"), "{}", lines[1]);
    let widest = lines[1..end].iter().map(|l| l.chars().count()).max().unwrap();
    assert!(widest < 150, "{widest} columns:\n{table}");
    for c in &r.cases {
        assert!(!table.contains(&c.id), "the full id {} is in the table:\n{table}", c.id);
    }
    // Markdown, CSV and SVG in the same order; the CSV keeps the full ids.
    let md = MarkdownTable.render(&r).unwrap();
    let md_lines: Vec<&str> = md.lines().filter(|l| l.starts_with("| `")).collect();
    assert_eq!(row_order(&r, &names, &md_lines), sorted, "{md}");
    let csv = wan_vae_bench::analysis::export::csv_table::csv_rows(&r).unwrap();
    let full: Vec<String> = rows::sorted(&r).iter().map(|c| c.id.clone()).collect();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let ids: Vec<String> = reader.records().map(|r| r.unwrap()[0].to_string()).collect();
    assert_eq!(ids, full, "{csv}");
    let svg = svg_chart(&r).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "text")
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(row_order(&r, &names, &texts), sorted, "{texts:?}");
}

#[test]
fn each_ratio_says_what_it_divides_and_the_cross_check_is_shown() {
    let mut r = sweep();
    let table = text::render_table(&r);
    assert!(table.contains("time / fastest*"), "{table}");
    assert!(
        table.contains("* time / fastest = this case's median / the fastest ok case's")
            && table.contains("the default's time / the case's"),
        "{table}"
    );
    let md = MarkdownTable.render(&r).unwrap();
    assert!(
        md.contains("| time / fastest |") && md.contains("the default's time / the case's"),
        "{md}"
    );
    assert!(!table.contains("cross-checked"), "{table}");

    // A torch reference with candle's twin: the terminal says how far apart they are.
    let twin = r.cases[1].clone();
    let c = &mut r.cases[0];
    let mut q = quality(&c.id, None, None);
    q.cross_engine = Some(CrossEngine {
        reference_engine: "candle".into(),
        reference_id: twin.id.clone(),
        max_abs_error: 1.24e-5,
        mean_abs_error: 1e-6,
        psnr_db: Some(110.2),
        max_abs_reference: 2.42,
    });
    c.quality = Some(q);
    let table = text::render_table(&r);
    let line = table
        .lines()
        .find(|l| l.contains("max abs 1.24e-5"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("fp32 bound 2.42e-4") && line.contains("agree"), "{line}");
    assert!(
        table.contains("engines cross-checked (decoded video against candle's"),
        "{table}"
    );
}

#[test]
fn a_decode_only_chart_has_no_encode_in_its_legend() {
    let r = sweep();
    let svg = svg_chart(&r).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).map(str::trim).collect();
    assert!(texts.contains(&"decode"), "{texts:?}");
    assert!(
        !texts.contains(&"encode"),
        "a decode-only run's legend says encode: {texts:?}"
    );
}
