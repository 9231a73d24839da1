//! Plots of the papers' shapes — throughput against file size on a log
//! scale, TPS against utilization, cost per operation against directory
//! size, and bars per phase — drawn once onto a [`Canvas`] and written as
//! SVG ([`svg`]) and PNG ([`png`], which needs a TrueType font: DejaVu
//! Sans from Debian's `fonts-dejavu-core`, or the file `FSLAB_FONT` names).
//! A series measured on several seeds carries a band: its line is the
//! median, drawn over a pale band from the least value to the greatest
//! (on a bar chart, a bar from the least to the greatest over each bar).

pub mod png;
pub mod svg;

/// Width and height of every plot, in pixels.
pub const WIDTH: f32 = 860.0;
/// See [`WIDTH`].
pub const HEIGHT: f32 = 520.0;

const LEFT: f32 = 90.0;
const RIGHT: f32 = 210.0;
const TOP: f32 = 50.0;
const BOTTOM: f32 = 70.0;

/// An RGB colour.
pub type Rgb = (u8, u8, u8);

const PALETTE: [Rgb; 8] = [
    (31, 119, 180),
    (214, 39, 40),
    (44, 160, 44),
    (255, 127, 14),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
];
const INK: Rgb = (30, 30, 30);
/// A band is pale enough that lines and other bands show through it.
const BAND_OPACITY: f32 = 0.18;
const GRID: Rgb = (225, 225, 225);

/// How text sits on its point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Starts at the point.
    Start,
    /// Centred on it.
    Middle,
    /// Ends at it.
    End,
}

/// What plots are drawn on.
pub trait Canvas {
    /// A straight line.
    fn line(&mut self, from: (f32, f32), to: (f32, f32), color: Rgb, width: f32);
    /// Connected segments.
    fn polyline(&mut self, points: &[(f32, f32)], color: Rgb, width: f32);
    /// A filled rectangle.
    fn rect(&mut self, at: (f32, f32), size: (f32, f32), color: Rgb);
    /// A filled circle.
    fn circle(&mut self, center: (f32, f32), radius: f32, color: Rgb);
    /// A filled polygon, `opacity` (0–1) of `color` over what is below.
    fn polygon(&mut self, points: &[(f32, f32)], color: Rgb, opacity: f32);
    /// Text whose baseline passes through `at`; `vertical` turns it to read
    /// upwards.
    fn text(&mut self, at: (f32, f32), text: &str, size: f32, anchor: Anchor, vertical: bool, color: Rgb);
}

/// One line (or set of bars) of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its legend.
    pub label: String,
    /// (x, y) points; for bar charts x is the category's index.
    pub points: Vec<(f64, f64)>,
    /// (x, least, greatest) over the seeds at each x of `points`, whose y
    /// is then the median; empty for one seed.
    pub band: Vec<(f64, f64, f64)>,
}

/// A chart to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The title.
    pub title: String,
    /// The x axis's label.
    pub x_label: String,
    /// The y axis's label.
    pub y_label: String,
    /// A log₂ x axis.
    pub log_x: bool,
    /// Category names: then a bar chart, x being the category's index.
    pub categories: Option<Vec<String>>,
    /// The data.
    pub series: Vec<Series>,
}

/// Round tick steps covering 0..max with about five ticks.
fn nice_ticks(max: f64) -> Vec<f64> {
    if max <= 0.0 || !max.is_finite() {
        return vec![0.0, 1.0];
    }
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(magnitude * 10.0);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// A tick label: no trailing zeros.
fn label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Ticks between `lo` and `hi` on a linear axis that need not start at 0.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-9);
    let base = nice_ticks(span);
    let step = if base.len() > 1 { base[1] - base[0] } else { 1.0 };
    let first = (lo / step).floor() * step;
    (0..=((hi - first) / step).ceil() as usize).map(|i| first + i as f64 * step).collect()
}

/// Draws `chart` on `canvas`.
pub fn draw(chart: &Chart, canvas: &mut dyn Canvas) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    canvas.rect((0.0, 0.0), (WIDTH, HEIGHT), (255, 255, 255));
    canvas.text((WIDTH / 2.0, 30.0), &chart.title, 18.0, Anchor::Middle, false, INK);

    let ys: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1).chain(s.band.iter().map(|b| b.2)))
        .filter(|y| y.is_finite())
        .collect();
    // From 0 up, unless some value is negative (a linear model's
    // coefficients): then from below the least.
    let (y_low, y_high) =
        (ys.iter().copied().fold(0.0, f64::min) * 1.05, ys.iter().copied().fold(0.0, f64::max) * 1.05);
    let y_ticks = if y_low < 0.0 { linear_ticks(y_low, y_high) } else { nice_ticks(y_high) };
    let y_min = y_ticks.first().copied().unwrap_or(0.0).min(0.0);
    let y_max = *y_ticks.last().unwrap_or(&1.0);
    let y_of = |y: f64| TOP + plot_h - ((y - y_min) / (y_max - y_min).max(1e-9)) as f32 * plot_h;

    // X: categories, log2, or linear.
    let xs: Vec<f64> = chart.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    let (x_lo, x_hi, x_ticks): (f64, f64, Vec<(f64, String)>) = if let Some(cats) = &chart.categories {
        let n = cats.len().max(1) as f64;
        (-0.5, n - 0.5, cats.iter().enumerate().map(|(i, c)| (i as f64, c.clone())).collect())
    } else if chart.log_x {
        let lo =
            xs.iter().copied().filter(|x| *x > 0.0).fold(f64::INFINITY, f64::min).max(1e-9).log2().floor();
        let hi = xs.iter().copied().fold(1e-9, f64::max).log2().ceil().max(lo + 1.0);
        let every = ((hi - lo) / 8.0).ceil().max(1.0) as i64;
        let ticks = (lo as i64..=hi as i64)
            .filter(|e| (e - lo as i64) % every == 0)
            .map(|e| (e as f64, label(2f64.powi(e as i32))))
            .collect();
        (lo, hi, ticks)
    } else {
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if lo.is_finite() && hi > lo { (lo, hi) } else { (0.0, lo.max(0.0) + 1.0) };
        let ticks: Vec<f64> = linear_ticks(lo, hi);
        let (lo, hi) = (ticks.first().copied().unwrap_or(lo), ticks.last().copied().unwrap_or(hi));
        (lo, hi, ticks.into_iter().map(|t| (t, label(t))).collect())
    };
    let x_pos = |x: f64| -> f64 {
        if chart.log_x && chart.categories.is_none() {
            x.max(1e-9).log2()
        } else {
            x
        }
    };
    let x_of = |x: f64| LEFT + ((x_pos(x) - x_lo) / (x_hi - x_lo).max(1e-9)) as f32 * plot_w;

    for &t in &y_ticks {
        let y = y_of(t);
        canvas.line((LEFT, y), (LEFT + plot_w, y), GRID, 1.0);
        canvas.text((LEFT - 8.0, y + 4.0), &label(t), 12.0, Anchor::End, false, INK);
    }
    for (t, text) in &x_ticks {
        let x = LEFT + ((t - x_lo) / (x_hi - x_lo).max(1e-9)) as f32 * plot_w;
        if chart.categories.is_none() {
            canvas.line((x, TOP), (x, TOP + plot_h), GRID, 1.0);
        }
        canvas.line((x, TOP + plot_h), (x, TOP + plot_h + 5.0), INK, 1.0);
        canvas.text((x, TOP + plot_h + 20.0), text, 12.0, Anchor::Middle, false, INK);
    }
    canvas.line((LEFT, TOP), (LEFT, TOP + plot_h), INK, 1.5);
    canvas.line((LEFT, TOP + plot_h), (LEFT + plot_w, TOP + plot_h), INK, 1.5);
    if y_min < 0.0 {
        canvas.line((LEFT, y_of(0.0)), (LEFT + plot_w, y_of(0.0)), INK, 1.0);
    }
    canvas.text((LEFT + plot_w / 2.0, HEIGHT - 22.0), &chart.x_label, 14.0, Anchor::Middle, false, INK);
    canvas.text((24.0, TOP + plot_h / 2.0), &chart.y_label, 14.0, Anchor::Middle, true, INK);

    // Every band before any line, so that no band hides another's line.
    if chart.categories.is_none() {
        for (i, s) in chart.series.iter().enumerate() {
            let band: Vec<&(f64, f64, f64)> =
                s.band.iter().filter(|b| b.1.is_finite() && b.2.is_finite()).collect();
            if band.len() > 1 {
                let upper = band.iter().map(|b| (x_of(b.0), y_of(b.2)));
                let lower = band.iter().rev().map(|b| (x_of(b.0), y_of(b.1)));
                let outline: Vec<(f32, f32)> = upper.chain(lower).collect();
                canvas.polygon(&outline, PALETTE[i % PALETTE.len()], BAND_OPACITY);
            }
        }
    }
    let n = chart.series.len().max(1) as f32;
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        if chart.categories.is_some() {
            let slot = plot_w / (x_hi - x_lo) as f32;
            let bar = slot * 0.8 / n;
            let left_of = |x: f64| x_of(x) - slot * 0.4 + bar * i as f32;
            for &(x, y) in s.points.iter().filter(|p| p.1.is_finite()) {
                let left = left_of(x);
                let (end, zero) = (y_of(y), y_of(0.0));
                canvas.rect((left, end.min(zero)), (bar * 0.92, (end - zero).abs()), color);
            }
            for &(x, low, high) in s.band.iter().filter(|b| b.1.is_finite() && b.2.is_finite()) {
                // A range under a pixel would only be a cap on the bar.
                if y_of(low) - y_of(high) < 1.0 {
                    continue;
                }
                let middle = left_of(x) + bar * 0.46;
                let cap = (bar * 0.2).min(6.0);
                canvas.line((middle, y_of(low)), (middle, y_of(high)), INK, 1.2);
                for y in [low, high] {
                    canvas.line((middle - cap, y_of(y)), (middle + cap, y_of(y)), INK, 1.2);
                }
            }
        } else {
            let points: Vec<(f32, f32)> =
                s.points.iter().filter(|p| p.1.is_finite()).map(|&(x, y)| (x_of(x), y_of(y))).collect();
            canvas.polyline(&points, color, 2.0);
            for &p in &points {
                canvas.circle(p, 3.5, color);
            }
        }
        let ly = TOP + 10.0 + 22.0 * i as f32;
        let lx = WIDTH - RIGHT + 20.0;
        canvas.rect((lx, ly - 9.0), (18.0, 10.0), color);
        canvas.text((lx + 26.0, ly), &s.label, 13.0, Anchor::Start, false, INK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_data() {
        assert_eq!(nice_ticks(2.3), vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
        assert_eq!(nice_ticks(0.0), vec![0.0, 1.0]);
        assert_eq!(label(0.25), "0.25");
        assert_eq!(label(1500.0), "1500");
        let t = linear_ticks(-96.4, 18.9);
        assert!(t[0] <= -96.4 && t.contains(&0.0) && *t.last().expect("ticks") >= 18.9, "{t:?}");
        let t = linear_ticks(48.0, 80.0);
        assert!(t[0] <= 48.0 && *t.last().expect("ticks") >= 80.0, "{t:?}");
    }
}
