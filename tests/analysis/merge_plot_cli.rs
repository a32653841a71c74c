//! `merge` keeps every case (renaming duplicates), and `plot` / the exporters produce a
//! valid SVG naming every case and a Markdown table.
use crate::util::reports::*;
use wan_vae_bench::report::{CaseStatus, Report};

#[test]
fn merge_keeps_every_case_and_disambiguates_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let mut b_case = case("bf16", &steady(1.0), &steady(1.0));
    b_case.quality = Some(quality("fp32", Some(40.0), Some(50.0)));
    let a = report(
        "alpha",
        vec![case("fp32", &steady(1.0), &steady(1.0)), case("only-a", &[1.0], &[1.0])],
    );
    let b = report("beta", vec![case("fp32", &steady(2.0), &steady(2.0)), b_case]);
    let c = report("alpha", vec![case("fp32", &steady(3.0), &steady(3.0))]);
    let paths = [
        save(dir.path(), "a.json", &a),
        save(dir.path(), "b.json", &b),
        save(dir.path(), "c.json", &c),
    ];
    let all = dir.path().join("all.json");
    let mut args = vec!["merge".to_string()];
    args.extend(paths.iter().map(|p| p.display().to_string()));
    args.extend(["-o".to_string(), all.display().to_string()]);
    let out = bench(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("fp32@beta"), "{}", out.stderr);

    let merged = Report::load(&all).unwrap();
    let ids: Vec<&str> = merged.cases.iter().map(|c| c.id.as_str()).collect();
    // Issue 67: a second run of alpha is named by when it ran, not `@alpha`, which said
    // nothing of which of alpha's two runs it was.
    assert_eq!(
        ids,
        ["fp32", "only-a", "fp32@beta", "bf16", "fp32@alpha-20250101T000000Z"]
    );
    let host = |i: usize| merged.cases[i].system.as_ref().unwrap().hostname.clone().unwrap();
    assert_eq!([host(0), host(2), host(3), host(4)], ["alpha", "beta", "beta", "alpha"]);
    assert_eq!(merged.system.hostname.as_deref(), Some("alpha"));
    // The reference of b's bf16 was renamed with b's fp32.
    assert_eq!(merged.cases[3].quality.as_ref().unwrap().reference_id, "fp32@beta");

    // Same host three times, one time stamp: fall back to the input position.
    let d = report("alpha", vec![case("fp32", &steady(4.0), &steady(4.0))]);
    let pd = save(dir.path(), "d.json", &d);
    let out = bench(&[
        "merge".as_ref(),
        paths[0].as_os_str(),
        paths[2].as_os_str(),
        pd.as_os_str(),
        "-o".as_ref(),
        all.as_os_str(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ids: Vec<String> = Report::load(&all).unwrap().cases.into_iter().map(|c| c.id).collect();
    assert_eq!(ids, ["fp32", "only-a", "fp32@alpha-20250101T000000Z", "fp32@input3"]);
}

#[test]
fn merge_refuses_other_weights_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let a = report("a", vec![case("x", &[1.0], &[1.0])]);
    let mut b = report("b", vec![case("y", &[1.0], &[1.0])]);
    b.model.source = "hf://other".into();
    let (pa, pb) = (save(dir.path(), "a.json", &a), save(dir.path(), "b.json", &b));
    let all = dir.path().join("all.json");
    let args = |force: bool| {
        let mut v = vec!["merge".to_string(), pa.display().to_string(), pb.display().to_string()];
        v.extend(["-o".to_string(), all.display().to_string()]);
        if force {
            v.push("--force".into());
        }
        v
    };
    let out = bench(&args(false));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("different model weights"), "{}", out.stderr);
    assert!(!all.exists());
    assert_eq!(bench(&args(true)).code, 0);
    assert_eq!(Report::load(&all).unwrap().cases.len(), 2);
}

fn chart_report() -> Report {
    let mut big = case("bf16-128x96 <tiled & chunked>", &steady(2.0), &steady(4.0));
    big.settings.width = 128;
    big.settings.height = 96;
    let mut refc = case("fp32-128x96-ref", &steady(2.5), &steady(5.0));
    (refc.settings.width, refc.settings.height, refc.added_as_reference) = (128, 96, true);
    report(
        "h",
        vec![
            big,
            case("fp32-64x64", &steady(1.0), &steady(2.0)),
            failed_case("fp16-64x64", CaseStatus::Timeout),
            refc,
        ],
    )
}

#[test]
fn svg_is_valid_xml_naming_every_case() {
    let r = chart_report();
    let svg = wan_vae_bench::analysis::export::svg_chart(&r).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("valid XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect();
    for c in &r.cases {
        assert!(
            texts.iter().any(|t| t.contains(&c.id)),
            "{} missing from {texts:?}",
            c.id
        );
    }
    assert!(texts.iter().any(|t| t.contains("not measured: timeout")), "{texts:?}");
    assert!(texts.iter().any(|t| t == "64x64, 5 frames"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "encode") && texts.iter().any(|t| t == "decode"));
}

#[test]
fn plot_command_writes_the_svg() {
    let dir = tempfile::tempdir().unwrap();
    let path = save(dir.path(), "r.json", &chart_report());
    let svg = dir.path().join("sub/chart.svg");
    let out = bench(&["plot".as_ref(), path.as_os_str(), "-o".as_ref(), svg.as_os_str()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    roxmltree::Document::parse(&text).unwrap();
    let out = bench(&[
        "plot".as_ref(),
        dir.path().join("nope.json").as_os_str(),
        "-o".as_ref(),
        svg.as_os_str(),
    ]);
    assert_eq!(out.code, 2);
}

#[test]
fn markdown_table_has_a_row_per_case() {
    let mut r = chart_report();
    r.cases[0].quality = Some(quality("fp32-128x96-ref", Some(42.123), None));
    let md = wan_vae_bench::analysis::export::markdown_table(&r);
    let lines: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(lines.len(), 2 + r.cases.len(), "{md}");
    // Quality on synthetic weights is labelled under the table (issue 28).
    assert!(r.model.is_synthetic());
    assert!(
        lines[0].contains("latent †") && md.contains("\n† PSNR on synthetic weights"),
        "{md}"
    );
    assert!(lines[0].starts_with("| case | encode [s] | decode [s] |") && lines[0].contains("PSNR"));
    assert!(md.contains("| 42.12 / ∞ |"), "{md}");
    assert!(md.contains("2.000 ± 0.0316"), "{md}");
    // Relative within one size (issue 10): fp32-64x64 (1 + 2 s) is the fastest 64x64 case,
    // the 2 + 4 s case the fastest 128x96 one; the 128x96 reference (2.5 + 5 s) is 1.25x.
    // Rows by size, then id (issue 67): fp16-64x64, fp32-64x64, bf16-128x96, its reference.
    assert!(
        lines[2].contains("fp16-64x64") && lines[4].contains("bf16-128x96"),
        "{md}"
    );
    assert!(lines[3].contains("| 1.00 |") && lines[4].contains("| 1.00 |"), "{md}");
    assert!(lines[5].contains("| 1.25 |"), "{md}");
    assert!(md.contains("| timeout |") && md.contains("reference"), "{md}");
}

#[test]
fn merge_and_history_exports_never_replace_an_input_or_each_other() {
    // Issue 48: `merge`'s --export-bmf/--export-gab could name an input or -o, and
    // `history`'s exports an input report; two exports naming one file kept one.
    let dir = tempfile::tempdir().unwrap();
    let a = save(
        dir.path(),
        "a.json",
        &report("alpha", vec![case("fp32", &steady(1.0), &steady(1.0))]),
    );
    let b = save(
        dir.path(),
        "b.json",
        &report("alpha", vec![case("bf16", &steady(1.0), &steady(1.0))]),
    );
    let before = std::fs::read(&a).unwrap();
    let all = dir.path().join("all.json");
    let bmf = dir.path().join("bmf.json");
    let (a_s, b_s, all_s, bmf_s) = (
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        all.to_str().unwrap(),
        bmf.to_str().unwrap(),
    );
    let tries: [&[&str]; 6] = [
        &["merge", a_s, b_s, "-o", all_s, "--export-bmf", a_s],
        &["merge", a_s, b_s, "-o", all_s, "--export-gab", all_s],
        &[
            "merge",
            a_s,
            b_s,
            "-o",
            all_s,
            "--export-bmf",
            bmf_s,
            "--export-gab",
            bmf_s,
        ],
        &["history", a_s, b_s, "--export-json", a_s],
        &["history", a_s, b_s, "--export-svg", b_s],
        &["history", a_s, b_s, "--export-json", bmf_s, "--export-bmf", bmf_s],
    ];
    for args in tries {
        let out = bench(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("are the same file"), "{args:?}: {}", out.stderr);
        assert_eq!(std::fs::read(&a).unwrap(), before, "{args:?}");
        assert!(!all.exists() && !bmf.exists(), "{args:?}");
    }
}

#[test]
fn cases_from_two_machines_are_never_compared_as_if_from_one() {
    // Issue 48: parts of one sweep run on two runners; the merged report's answer named a
    // winner across them ("2.64x faster"), merge said nothing, and compare ignored each
    // pair's machine (--strict-system too).
    let dir = tempfile::tempdir().unwrap();
    let a = save(
        dir.path(),
        "a.json",
        &report("alpha", vec![case("fp32", &steady(2.0), &steady(2.0))]),
    );
    let b = save(
        dir.path(),
        "b.json",
        &report("beta", vec![case("bf16", &steady(1.0), &steady(1.0))]),
    );
    let all = dir.path().join("all.json");
    let out = bench(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        all.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("timed on 2 machines"), "{}", out.stderr);
    let merged = Report::load(&all).unwrap();
    let s = wan_vae_bench::analysis::answer::summarize(&merged, 40.0);
    let two: Vec<_> = s.answers.iter().filter(|a| a.cases == 2).collect();
    assert_eq!(two.len(), 1, "{:?}", s.answers);
    assert_eq!(two[0].verdict.name(), "machines", "{:?}", two[0]);
    assert!(two[0].fastest.is_none() && two[0].sentence.contains("alpha") && two[0].sentence.contains("beta"));

    // compare: the same merged report against itself has no machine difference; against a
    // report whose pairs ran elsewhere, each pair's machine is named, and --strict-system refuses.
    let mut merged = merged;
    for c in &mut merged.cases {
        if let Some(sys) = c.system.as_mut() {
            sys.cpu_model = Some("Zen 5".into());
        }
    }
    let all = save(dir.path(), "all2.json", &merged);
    let same = bench(&["compare", all.to_str().unwrap(), all.to_str().unwrap()]);
    assert!(!same.stderr.contains("different"), "{}", same.stderr);
    let mut moved = merged.clone();
    for c in &mut moved.cases {
        if let Some(sys) = c.system.as_mut() {
            sys.cpu_model = Some("Other CPU".into());
        }
    }
    let moved_path = save(dir.path(), "moved.json", &moved);
    let out = bench(&["compare", all.to_str().unwrap(), moved_path.to_str().unwrap()]);
    assert!(
        out.stderr.contains("compared pair(s) of a merged report"),
        "{}",
        out.stderr
    );
    let strict = bench(&[
        "compare",
        "--strict-system",
        all.to_str().unwrap(),
        moved_path.to_str().unwrap(),
    ]);
    assert_eq!(strict.code, 2, "{}", strict.stderr);
}
