//! Plots of the papers' shapes — throughput against file size on a log
//! scale, TPS against utilization, cost per operation against directory
//! size, and bars per phase — drawn once onto a [`Canvas`] and written as
//! SVG ([`svg`]) and PNG ([`png`], which needs a TrueType font: DejaVu
//! Sans from Debian's `fonts-dejavu-core`, or the file `FSLAB_FONT` names).
//! A series measured on several seeds carries a band: its line is the
//! median, drawn over a pale band from the least value to the greatest
//! (on a bar chart, a bar from the least to the greatest over each bar).
//!
//! Beside the measurements a chart may carry what they are judged by: the
//! paper's published values ([`Paper`], drawn as a cross in the colour of
//! the series they belong to) and the ranges a claim's checks require
//! ([`Criterion`], shaded grey under everything else). Series that
//! coincide at every point would hide one another: the later ones are
//! dashed and their legend names the series they equal.

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

/// Okabe and Ito's colour-blind-safe palette, its yellow (too pale on
/// white) replaced by a dark olive; every series also has its own marker
/// shape, so that colour is never the only thing telling two apart.
const PALETTE: [Rgb; 8] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (230, 159, 0),
    (86, 180, 233),
    (0, 0, 0),
    (136, 136, 34),
];
const INK: Rgb = (30, 30, 30);
/// A band is pale enough that lines and other bands show through it.
const BAND_OPACITY: f32 = 0.18;
const GRID: Rgb = (225, 225, 225);
/// Criteria are grey, a colour no series has, so that a shaded range
/// cannot be taken for a seed band.
const CRITERION: Rgb = (120, 120, 120);
const CRITERION_OPACITY: f32 = 0.16;
const CRITERION_TEXT: Rgb = (80, 80, 80);
/// Half the width of a criterion at a single x, in pixels.
const STRIP: f32 = 9.0;
const WHITE: Rgb = (255, 255, 255);

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
    /// Connected segments, dashed `dash` pixels on and `dash` off.
    fn dashed(&mut self, points: &[(f32, f32)], color: Rgb, width: f32, dash: f32);
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

/// A value the paper published for one of a chart's series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paper {
    /// The index of the series in [`Chart::series`] it belongs to, whose
    /// colour it takes.
    pub series: usize,
    /// Where, in the series' x units (a category's index on a bar chart).
    pub x: f64,
    /// The published value.
    pub y: f64,
}

/// A range of y a claim's check requires over a range of x, shaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    /// The least value that passes; `f64::NEG_INFINITY` for no floor.
    pub low: f64,
    /// The greatest; `f64::INFINITY` for no ceiling.
    pub high: f64,
    /// The least x it applies at; `from == to` for a single x, drawn as a
    /// narrow strip there.
    pub from: f64,
    /// The greatest x it applies at (`f64::INFINITY`: to the axis's end).
    pub to: f64,
    /// Written inside the shaded range; may be empty.
    pub label: String,
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
    /// The paper's values over the data.
    pub paper: Vec<Paper>,
    /// The claims' required ranges under the data.
    pub criteria: Vec<Criterion>,
}

impl Chart {
    /// A chart of `series` with no published values or criteria.
    pub fn new(title: String, x_label: String, y_label: String, log_x: bool, series: Vec<Series>) -> Chart {
        Chart { title, x_label, y_label, log_x, categories: None, series, paper: vec![], criteria: vec![] }
    }
}

/// How far two series at the same x may differ and still hide one
/// another: a half percent is under a pixel on any of the lab's axes.
const HIDDEN: f64 = 0.005;

/// Whether two series are at the same x and within `tolerance` (a share
/// of the greater value) of each other at every one.
fn same_points(a: &Series, b: &Series, tolerance: f64) -> bool {
    let close = |u: f64, v: f64| u == v || (u - v).abs() <= tolerance * u.abs().max(v.abs());
    !a.points.is_empty()
        && a.points.len() == b.points.len()
        && a.points.iter().zip(&b.points).all(|(p, q)| p.0 == q.0 && close(p.1, q.1))
}

/// Two series that would be drawn over each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coincides {
    /// The earlier series, drawn plainly under this one.
    pub with: usize,
    /// Equal at every point (to a part in a billion, so that a value that
    /// took another path through the arithmetic still counts); otherwise
    /// only too close to tell apart.
    pub exactly: bool,
}

/// For each series, the first earlier series it coincides with at every
/// point, if any: that one is drawn plainly and this one over it dashed,
/// and the legend says which it equals, so that neither is lost.
pub fn coinciding(series: &[Series]) -> Vec<Option<Coincides>> {
    (0..series.len())
        .map(|i| {
            let j = (0..i).find(|&j| same_points(&series[j], &series[i], HIDDEN))?;
            Some(Coincides { with: j, exactly: same_points(&series[j], &series[i], 1e-9) })
        })
        .collect()
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

/// The outline of marker `shape` (one per series, cycling) of radius `r`
/// at `c`; `None` for the circle, which the canvas draws itself.
fn marker_outline(shape: usize, c: (f32, f32), r: f32) -> Option<Vec<(f32, f32)>> {
    let regular = |n: usize, turn: f32, r: f32| -> Vec<(f32, f32)> {
        (0..n)
            .map(|k| {
                let a = turn + k as f32 * std::f32::consts::TAU / n as f32;
                (c.0 + r * a.cos(), c.1 + r * a.sin())
            })
            .collect()
    };
    let quarter = std::f32::consts::FRAC_PI_2;
    match shape % 8 {
        0 => None,
        1 => Some(regular(4, quarter / 2.0, r * 1.2)),
        2 => Some(regular(3, -quarter, r * 1.35)),
        3 => Some(regular(4, 0.0, r * 1.35)),
        4 => Some(regular(3, quarter, r * 1.35)),
        5 => Some(regular(5, -quarter, r * 1.2)),
        6 => Some(regular(6, 0.0, r * 1.15)),
        _ => {
            // A star: the points of two pentagons, the inner one turned.
            let outer = regular(5, -quarter, r * 1.5);
            let inner = regular(5, -quarter + std::f32::consts::PI / 5.0, r * 0.65);
            Some(outer.into_iter().zip(inner).flat_map(|(o, i)| [o, i]).collect())
        }
    }
}

fn marker(canvas: &mut dyn Canvas, shape: usize, c: (f32, f32), r: f32, color: Rgb) {
    match marker_outline(shape, c, r) {
        None => canvas.circle(c, r, color),
        Some(outline) => canvas.polygon(&outline, color, 1.0),
    }
}

/// The paper's mark: a cross, unlike every series' filled marker, with a
/// white edge so that it reads over a line of its own colour.
fn paper_mark(canvas: &mut dyn Canvas, c: (f32, f32), color: Rgb) {
    let r = 6.0;
    for (width, ink) in [(4.5, WHITE), (2.2, color)] {
        canvas.line((c.0 - r, c.1 - r), (c.0 + r, c.1 + r), ink, width);
        canvas.line((c.0 - r, c.1 + r), (c.0 + r, c.1 - r), ink, width);
    }
}

/// Draws `chart` on `canvas`.
pub fn draw(chart: &Chart, canvas: &mut dyn Canvas) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    canvas.rect((0.0, 0.0), (WIDTH, HEIGHT), WHITE);
    canvas.text((WIDTH / 2.0, 30.0), &chart.title, 18.0, Anchor::Middle, false, INK);
    let log_x = chart.log_x && chart.categories.is_none();
    // A log axis has no place for x <= 0: such points are left out rather
    // than drawn far off the plot.
    let x_ok = |x: f64| x.is_finite() && (!log_x || x > 0.0);

    let ys: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1).chain(s.band.iter().map(|b| b.2)))
        .chain(chart.paper.iter().map(|p| p.y))
        .chain(chart.criteria.iter().flat_map(|c| [c.low, c.high]))
        .filter(|y| y.is_finite())
        .collect();
    // From 0 up, unless some value is negative (a linear model's
    // coefficients): then from below the least.
    let (y_low, y_high) =
        (ys.iter().copied().fold(0.0, f64::min) * 1.05, ys.iter().copied().fold(0.0, f64::max) * 1.05);
    let y_ticks = if y_low < 0.0 { linear_ticks(y_low, y_high) } else { nice_ticks(y_high) };
    let y_min = y_ticks.first().copied().unwrap_or(0.0).min(0.0);
    let y_max = *y_ticks.last().unwrap_or(&1.0);
    let y_of = |y: f64| {
        let y = y.clamp(y_min, y_max);
        TOP + plot_h - ((y - y_min) / (y_max - y_min).max(1e-9)) as f32 * plot_h
    };

    // X: categories, log2, or linear.
    let xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(chart.paper.iter().map(|p| p.x))
        .filter(|&x| x_ok(x))
        .collect();
    let (x_lo, x_hi, x_ticks): (f64, f64, Vec<(f64, String)>) = if let Some(cats) = &chart.categories {
        let n = cats.len().max(1) as f64;
        (-0.5, n - 0.5, cats.iter().enumerate().map(|(i, c)| (i as f64, c.clone())).collect())
    } else if log_x {
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min).clamp(1e-9, 1e300).log2().floor();
        let hi = xs.iter().copied().fold(1e-9, f64::max).log2().ceil().max(lo + 1.0);
        let every = ((hi - lo) / 8.0).ceil().max(1.0) as i64;
        let ticks = (lo as i64..=hi as i64)
            .filter(|e| (e - lo as i64) % every == 0)
            .map(|e| (e as f64, label(2f64.powi(e as i32))))
            .collect();
        // A margin of a third of an octave, so that the first and last
        // sizes' markers and ranges are not cut by the axes.
        (lo - 1.0 / 3.0, hi + 1.0 / 3.0, ticks)
    } else {
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if lo.is_finite() && hi > lo { (lo, hi) } else { (0.0, lo.max(0.0) + 1.0) };
        let ticks: Vec<f64> = linear_ticks(lo, hi);
        let (lo, hi) = (ticks.first().copied().unwrap_or(lo), ticks.last().copied().unwrap_or(hi));
        (lo, hi, ticks.into_iter().map(|t| (t, label(t))).collect())
    };
    let x_pos = |x: f64| -> f64 {
        if log_x {
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

    // Criteria first: they are the background the data is read against.
    for c in &chart.criteria {
        let (low, high) = (y_of(c.low), y_of(c.high));
        let clip = |x: f32| x.clamp(LEFT, LEFT + plot_w);
        let (left, right) = if c.from == c.to {
            let x = if x_ok(c.from) { x_of(c.from) } else { continue };
            (clip(x - STRIP), clip(x + STRIP))
        } else {
            let left = if x_ok(c.from) { clip(x_of(c.from)) } else { LEFT };
            let right = if x_ok(c.to) { clip(x_of(c.to)) } else { LEFT + plot_w };
            (left, right)
        };
        if right <= left || low <= high {
            continue;
        }
        let outline = [(left, high), (right, high), (right, low), (left, low)];
        canvas.polygon(&outline, CRITERION, CRITERION_OPACITY);
        for (edge, y) in [(c.low, low), (c.high, high)] {
            if edge.is_finite() && edge > y_min && edge < y_max {
                canvas.dashed(&[(left, y), (right, y)], CRITERION, 1.0, 4.0);
            }
        }
        if !c.label.is_empty() {
            // Beside a strip, which is too narrow to hold it; inside a
            // wider range, at its top left.
            // A strip at the axis's end takes its label on its left, clear
            // of the legend, and under it, clear of the line it judges.
            let wide = c.label.chars().count() as f32 * 6.0;
            let (at, anchor) = if c.from != c.to {
                ((left + 4.0, high + 12.0), Anchor::Start)
            } else if right + 3.0 + wide > LEFT + plot_w {
                ((left - 3.0, low + 12.0), Anchor::End)
            } else {
                ((right + 3.0, high + 11.0), Anchor::Start)
            };
            canvas.text(at, &c.label, 10.5, anchor, false, CRITERION_TEXT);
        }
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
                s.band.iter().filter(|b| x_ok(b.0) && b.1.is_finite() && b.2.is_finite()).collect();
            if band.len() > 1 {
                let upper = band.iter().map(|b| (x_of(b.0), y_of(b.2)));
                let lower = band.iter().rev().map(|b| (x_of(b.0), y_of(b.1)));
                let outline: Vec<(f32, f32)> = upper.chain(lower).collect();
                canvas.polygon(&outline, PALETTE[i % PALETTE.len()], BAND_OPACITY);
            }
        }
    }
    let equals = coinciding(&chart.series);
    let n = chart.series.len().max(1) as f32;
    let slot = plot_w / (x_hi - x_lo).max(1e-9) as f32;
    let bar = slot * 0.8 / n;
    let bar_left = |i: usize, x: f64| x_of(x) - slot * 0.4 + bar * i as f32;
    let mut legend_y = TOP + 10.0;
    let lx = WIDTH - RIGHT + 20.0;
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        if chart.categories.is_some() {
            for &(x, y) in s.points.iter().filter(|p| p.0.is_finite() && p.1.is_finite()) {
                let left = bar_left(i, x);
                let (end, zero) = (y_of(y), y_of(0.0));
                canvas.rect((left, end.min(zero)), (bar * 0.92, (end - zero).abs()), color);
            }
            for &(x, low, high) in
                s.band.iter().filter(|b| b.0.is_finite() && b.1.is_finite() && b.2.is_finite())
            {
                // A range under a pixel would only be a cap on the bar.
                if y_of(low) - y_of(high) < 1.0 {
                    continue;
                }
                let middle = bar_left(i, x) + bar * 0.46;
                let cap = (bar * 0.2).min(6.0);
                canvas.line((middle, y_of(low)), (middle, y_of(high)), INK, 1.2);
                for y in [low, high] {
                    canvas.line((middle - cap, y_of(y)), (middle + cap, y_of(y)), INK, 1.2);
                }
            }
        } else {
            let points: Vec<(f32, f32)> = s
                .points
                .iter()
                .filter(|p| x_ok(p.0) && p.1.is_finite())
                .map(|&(x, y)| (x_of(x), y_of(y)))
                .collect();
            // A series equal to an earlier one goes over it dashed, with
            // smaller markers, so that the earlier one shows through.
            let (r, dashed) = if equals[i].is_some() { (2.6, true) } else { (4.0, false) };
            if dashed {
                canvas.dashed(&points, color, 2.0, 6.0);
            } else {
                canvas.polyline(&points, color, 2.0);
            }
            for &p in &points {
                marker(canvas, i, p, r, color);
            }
        }
        if chart.categories.is_some() {
            canvas.rect((lx, legend_y - 9.0), (18.0, 10.0), color);
        } else {
            let (a, b) = ((lx, legend_y - 4.0), (lx + 18.0, legend_y - 4.0));
            if equals[i].is_some() {
                canvas.dashed(&[a, b], color, 2.0, 3.0);
            } else {
                canvas.line(a, b, color, 2.0);
            }
            marker(canvas, i, (lx + 9.0, legend_y - 4.0), 3.5, color);
        }
        canvas.text((lx + 26.0, legend_y), &s.label, 13.0, Anchor::Start, false, INK);
        if let Some(c) = equals[i] {
            legend_y += 15.0;
            let same = format!("{} {}", if c.exactly { "=" } else { "≈" }, chart.series[c.with].label);
            canvas.text((lx + 26.0, legend_y), &same, 10.5, Anchor::Start, false, INK);
        }
        legend_y += 22.0;
    }

    // The paper's values over everything measured.
    for p in chart.paper.iter().filter(|p| p.series < chart.series.len() && x_ok(p.x) && p.y.is_finite()) {
        let x = if chart.categories.is_some() { bar_left(p.series, p.x) + bar * 0.46 } else { x_of(p.x) };
        paper_mark(canvas, (x, y_of(p.y)), PALETTE[p.series % PALETTE.len()]);
    }
    if !chart.paper.is_empty() {
        paper_mark(canvas, (lx + 9.0, legend_y - 4.0), INK);
        canvas.text((lx + 26.0, legend_y), "paper", 13.0, Anchor::Start, false, INK);
        legend_y += 22.0;
    }
    if !chart.criteria.is_empty() {
        canvas.polygon(
            &[
                (lx, legend_y - 10.0),
                (lx + 18.0, legend_y - 10.0),
                (lx + 18.0, legend_y + 1.0),
                (lx, legend_y + 1.0),
            ],
            CRITERION,
            CRITERION_OPACITY * 2.0,
        );
        canvas.text((lx + 26.0, legend_y), "claim's range", 13.0, Anchor::Start, false, INK);
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

    fn line(label: &str, points: &[(f64, f64)]) -> Series {
        Series { label: label.into(), points: points.to_vec(), band: vec![] }
    }

    fn chart(series: Vec<Series>) -> Chart {
        Chart::new("t".into(), "x".into(), "y".into(), false, series)
    }

    #[test]
    fn coinciding_series_are_found_whatever_their_names() {
        let a = line("a", &[(48.0, 33.2), (56.0, 32.7)]);
        let b = line("b", &[(48.0, 33.2), (56.0, 32.7)]);
        let near = line("near", &[(48.0, 33.25), (56.0, 32.7)]);
        let apart = line("apart", &[(48.0, 30.0), (56.0, 32.7)]);
        let shorter = line("shorter", &[(48.0, 33.2)]);
        let found = coinciding(&[a, b, near, apart, shorter, line("empty", &[]), line("empty too", &[])]);
        assert_eq!(found[0], None, "the first of a group is drawn plainly");
        assert_eq!(found[1], Some(Coincides { with: 0, exactly: true }));
        assert_eq!(found[2], Some(Coincides { with: 0, exactly: false }), "within a pixel hides it too");
        assert_eq!(&found[3..], &[None, None, None, None]);
    }

    #[test]
    fn a_coinciding_series_is_dashed_and_named_in_the_legend() {
        let svg = svg::render(&chart(vec![
            line("lfs", &[(1.0, 2.0), (2.0, 3.0)]),
            line("other", &[(1.0, 2.0), (2.0, 3.0)]),
        ]));
        assert!(svg.contains("stroke-dasharray=\"6\""), "{svg}");
        assert!(svg.contains(">= lfs</text>"), "{svg}");
        let apart = svg::render(&chart(vec![line("lfs", &[(1.0, 2.0)]), line("other", &[(1.0, 5.0)])]));
        assert!(!apart.contains("stroke-dasharray=\"6\"") && !apart.contains(">= lfs<"), "{apart}");
    }

    #[test]
    fn criteria_are_shaded_and_labelled_only_where_given() {
        let mut c = chart(vec![line("ffs", &[(1.0, 0.5), (4.0, 0.55)])]);
        let plain = svg::render(&c);
        assert!(
            !plain.contains(&format!("fill-opacity=\"{CRITERION_OPACITY}\""))
                && !plain.contains("claim's range")
        );
        c.criteria.push(Criterion { low: 0.45, high: 0.6, from: 4.0, to: 4.0, label: "FFS 0.45-0.6".into() });
        c.criteria.push(Criterion {
            low: 8.0,
            high: f64::INFINITY,
            from: 0.0,
            to: 2.0,
            label: String::new(),
        });
        let shaded = svg::render(&c);
        assert_eq!(shaded.matches(&format!("fill-opacity=\"{CRITERION_OPACITY}\"")).count(), 2, "{shaded}");
        assert!(shaded.contains(">FFS 0.45-0.6</text>") && shaded.contains("claim's range"), "{shaded}");
        // The open-ended range reaches to the top of the axis, which
        // grows to hold its floor.
        assert!(shaded.contains(">8</text>") || shaded.contains(">10</text>"), "{shaded}");
    }

    #[test]
    fn the_papers_values_are_marked_only_where_given() {
        let mut c = chart(vec![line("lfs", &[(48.0, 47.0), (80.0, 46.0)])]);
        assert!(!svg::render(&c).contains(">paper</text>"));
        c.paper.push(Paper { series: 0, x: 48.0, y: 44.0 });
        let marked = svg::render(&c);
        assert!(marked.contains(">paper</text>"), "{marked}");
        let crosses = marked
            .matches(&format!(
                "stroke=\"#{:02x}{:02x}{:02x}\" stroke-width=\"2.2\"",
                PALETTE[0].0, PALETTE[0].1, PALETTE[0].2
            ))
            .count();
        assert_eq!(crosses, 2, "one cross of two strokes in the series' colour: {marked}");
    }

    #[test]
    fn odd_data_draws_without_panicking() {
        let odd = vec![
            line("single", &[(1024.0, 3.0)]),
            line("zero x", &[(0.0, 1.0), (2.0, 0.0)]),
            line("not a number", &[(4.0, f64::NAN), (f64::INFINITY, 1.0)]),
            line("empty", &[]),
        ];
        for log_x in [false, true] {
            let mut c = chart(odd.clone());
            c.log_x = log_x;
            c.paper = vec![Paper { series: 9, x: 1.0, y: 1.0 }, Paper { series: 0, x: 0.0, y: f64::NAN }];
            c.criteria = vec![
                Criterion {
                    low: f64::NEG_INFINITY,
                    high: f64::INFINITY,
                    from: 0.0,
                    to: f64::INFINITY,
                    label: "all".into(),
                },
                Criterion { low: 1.0, high: 0.5, from: 2.0, to: 1.0, label: "upside down".into() },
            ];
            let svg = svg::render(&c);
            assert!(svg.contains("</svg>") && !svg.contains("NaN"), "{svg}");
            c.categories = Some(vec!["a".into()]);
            let _ = svg::render(&c);
            c.series.clear();
            let _ = svg::render(&c);
        }
    }

    #[test]
    fn every_series_has_its_own_marker_among_eight() {
        let shapes: Vec<Option<usize>> =
            (0..8).map(|k| marker_outline(k, (0.0, 0.0), 4.0).map(|o| o.len())).collect();
        assert_eq!(shapes[0], None, "a circle");
        // Square and diamond share a corner count: they differ in turn.
        assert_ne!(marker_outline(1, (0.0, 0.0), 4.0), marker_outline(3, (0.0, 0.0), 4.0));
        assert_ne!(marker_outline(2, (0.0, 0.0), 4.0), marker_outline(4, (0.0, 0.0), 4.0));
        assert_eq!(shapes[7], Some(10), "a star");
    }
}
