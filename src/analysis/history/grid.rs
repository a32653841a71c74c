//! The exact best segmentation of run levels whose noise is a mixture of normals (issue 66:
//! runs of their own spread, [`super::spread`]), where no prefix sums give a segment's cost:
//! optimal partitioning over a grid of levels, by the functional recursion of FPOP
//! (Maidstone et al. 2017) on that grid. For each level `m` of the grid, `Q(m)` is the least
//! cost of the runs so far whose last segment is at `m`; a new run either continues it or
//! starts a segment after the best segmentation so far, `F + pen`:
//! `Q(m) <- min(Q(m), F + pen) + cost(y - m)`, `F <- min Q`. Exact for the grid's levels, in
//! O(runs x levels) time and O(runs + levels) memory, whatever the noise.
//!
//! The grid spans the run levels (a segment's best level lies between its lowest and highest
//! run: each run's cost grows with its distance), at the narrowest run's
//! standard deviation times [`STEP`], at most [`MAX_LEVELS`] levels.
//!
//! Must not: know how the noise was estimated; numbers and noises in, segments out.
use super::spread::Noise;
use super::steps::Fit;

/// The most levels a grid holds.
pub const MAX_LEVELS: usize = 2048;

/// The grid's step, in standard deviations of the narrowest run.
pub const STEP: f64 = 0.4;

/// Run levels, their noises, and the grid of levels a segment may take.
pub struct Grid<'a> {
    y: &'a [f64],
    noise: &'a [Noise],
    levels: Vec<f64>,
}

impl<'a> Grid<'a> {
    pub fn new(y: &'a [f64], noise: &'a [Noise]) -> Grid<'a> {
        let (lo, hi) = y
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        let narrowest = noise.iter().map(Noise::scale).fold(f64::INFINITY, f64::min);
        let count = match hi > lo {
            true => (((hi - lo) / (STEP * narrowest)).ceil() as usize + 1).clamp(2, MAX_LEVELS),
            false => 1,
        };
        let levels = (0..count)
            .map(|j| {
                if count == 1 {
                    lo
                } else {
                    lo + (hi - lo) * j as f64 / (count - 1) as f64
                }
            })
            .collect();
        Grid { y, noise, levels }
    }

    /// The least cost of runs `runs` as one segment, over the grid's levels.
    fn segment(&self, runs: &[usize]) -> f64 {
        self.levels
            .iter()
            .map(|m| runs.iter().map(|&i| self.noise[i].cost(self.y[i] - m)).sum::<f64>())
            .fold(f64::INFINITY, f64::min)
    }
}

/// [`super::steps::detect`] where each run's noise is a mixture of normals
/// ([`super::spread::Noise`]): the exact best segmentation on a grid of levels.
pub fn detect(y: &[f64], noise: &[super::spread::Noise], pen: f64) -> Vec<usize> {
    super::steps::detect_with(&Grid::new(y, noise), y.len(), pen)
}

impl Fit for Grid<'_> {
    fn optimal(&self, kept: &[usize], pen: f64) -> Vec<usize> {
        let n = kept.len();
        if n < 2 {
            return vec![n];
        }
        let mut q = vec![0.0; self.levels.len()];
        // Where the last segment starts, for each level; and for each run, where the best
        // segmentation up to it starts its last segment.
        let mut start = vec![0usize; self.levels.len()];
        let mut last = vec![0usize; n + 1];
        let mut best = 0.0;
        for (t, &i) in kept.iter().enumerate() {
            let fresh = best + pen;
            let mut low = (f64::INFINITY, 0);
            for (j, m) in self.levels.iter().enumerate() {
                if t > 0 && fresh < q[j] {
                    q[j] = fresh;
                    start[j] = t;
                }
                q[j] += self.noise[i].cost(self.y[i] - m);
                if q[j] < low.0 {
                    low = (q[j], j);
                }
            }
            best = low.0;
            last[t + 1] = start[low.1];
        }
        let mut right = Vec::new();
        let mut r = n;
        while r > 0 {
            right.push(r);
            r = last[r];
        }
        right.reverse();
        right
    }

    fn agree(&self, kept: &[usize], a: std::ops::Range<usize>, b: std::ops::Range<usize>, pen: f64) -> bool {
        let (ra, rb) = (&kept[a], &kept[b]);
        let both: Vec<usize> = ra.iter().chain(rb).copied().collect();
        self.segment(&both) <= self.segment(ra) + self.segment(rb) + pen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every segmentation of a short series, its cost on the grid and steps' penalty summed.
    fn brute(grid: &Grid, n: usize, pen: f64) -> f64 {
        (0..1u32 << (n - 1))
            .map(|mask| {
                let mut total = 0.0;
                let mut l = 0;
                for r in 1..=n {
                    if r == n || mask & (1 << (r - 1)) != 0 {
                        total += grid.segment(&(l..r).collect::<Vec<_>>()) + if r < n { pen } else { 0.0 };
                        l = r;
                    }
                }
                total
            })
            .fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn the_grid_fit_is_the_least_cost_on_its_grid() {
        let noise = |i: usize| -> Noise {
            match i % 3 {
                0 => Noise::normal(0.01),
                1 => Noise::of(vec![(0.8, 0.0004), (0.2, 0.04)]),
                _ => Noise::normal(0.002),
            }
        };
        for seed in 0..60usize {
            let n = 2 + seed % 9;
            let y: Vec<f64> = (0..n)
                .map(|i| {
                    let x = ((seed * 31 + i) as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                    0.1 * (u - 0.5) + if (i + seed) % 5 < 2 { 0.3 } else { 0.0 }
                })
                .collect();
            let noises: Vec<Noise> = (0..n).map(|i| noise(i + seed)).collect();
            let grid = Grid::new(&y, &noises);
            let pen = 2.0 + (seed % 5) as f64;
            let kept: Vec<usize> = (0..n).collect();
            let right = grid.optimal(&kept, pen);
            let mut total = pen * (right.len() - 1) as f64;
            let mut l = 0;
            for &r in &right {
                total += grid.segment(&(l..r).collect::<Vec<_>>());
                l = r;
            }
            let least = brute(&grid, n, pen);
            assert!(
                (total - least).abs() < 1e-9 * (1.0 + least.abs()),
                "seed {seed}: {total} vs {least}"
            );
        }
    }
}
