//! Reference values from SciPy 1.x: `scipy.stats.ttest_ind(a, b, equal_var=False)`,
//! `scipy.stats.t.cdf`, `scipy.special.betainc`, `scipy.special.gammaln`.
//!
//! Must not: be compiled outside tests.
use super::*;

/// Student t cumulative distribution function `P(T <= t)`, from the two-sided p-value
/// (only the tests need it: they check that p-value against SciPy's cdf).
fn student_t_cdf(t: f64, df: f64) -> f64 {
    let tail = student_t_two_sided_p(t, df) / 2.0;
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

fn close(got: f64, want: f64, rel: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs().max(1e-300),
        "got {got:e}, want {want:e}"
    );
}

#[test]
fn welch_matches_scipy() {
    let cases: [(&[f64], &[f64], f64, f64); 5] = [
        (
            &[1.0, 2.0, 3.0, 4.0, 5.0],
            &[2.0, 3.0, 4.0, 5.0, 9.0],
            -1.1428571428571426,
            0.2937254912355014,
        ),
        (
            &[1.00, 1.01, 0.99, 1.02, 0.98],
            &[1.50, 1.51, 1.49, 1.52, 1.48],
            -50.0,
            2.834410645091804e-11,
        ),
        (
            &[1.0, 1.4, 0.7, 1.3, 0.8],
            &[1.1, 1.5, 0.75, 1.35, 0.9],
            -0.4117480101239845,
            0.6913371963120308,
        ),
        (
            &[10.1, 9.8, 10.3, 10.0],
            &[11.2, 12.9, 10.4, 13.5, 11.8, 12.2, 14.0],
            -4.531475426962914,
            0.003194363041048942,
        ),
        (&[1.0, 1.2], &[1.5, 1.9], -2.6832815729997477, 0.15796345394903621),
    ];
    for (a, b, t, p) in cases {
        let w = welch_t_test(a, b).unwrap();
        close(w.t, t, 1e-9);
        close(w.p_value, p, 1e-7);
    }
}

#[test]
fn student_t_cdf_matches_scipy() {
    for (t, df, want) in [
        (2.0, 3.0, 0.9303370157205785),
        (1.0, 1.0, 0.75),
        (-0.5, 10.0, 0.3139468028714865),
        (3.5, 2.5, 0.9738272265198398),
        (0.0, 5.0, 0.5),
    ] {
        close(student_t_cdf(t, df), want, 1e-10);
    }
}

#[test]
fn incomplete_beta_and_ln_gamma_match_scipy() {
    close(regularized_incomplete_beta(0.3, 2.0, 3.0), 0.34829999999999994, 1e-12);
    close(regularized_incomplete_beta(0.9, 0.5, 0.5), 0.7951672353008665, 1e-12);
    close(
        regularized_incomplete_beta(0.1, 10.0, 0.5),
        1.8480273740563758e-11,
        1e-9,
    );
    close(ln_gamma(0.5), 0.5723649429247, 1e-12);
    close(ln_gamma(10.0), 12.801827480081469, 1e-13);
    close(ln_gamma(0.1), 2.252712651734206, 1e-12);
}

#[test]
fn degenerate_samples() {
    assert!(welch_t_test(&[1.0], &[1.0, 2.0]).is_none());
    assert!(welch_t_test(&[1.0, f64::NAN], &[1.0, 2.0]).is_none());
    let same = welch_t_test(&[1.0, 1.0], &[1.0, 1.0]).unwrap();
    assert_eq!(same.p_value, 1.0);
    let differ = welch_t_test(&[1.0, 1.0], &[2.0, 2.0]).unwrap();
    assert_eq!(differ.p_value, 0.0);
    assert!(differ.t < 0.0);
}
