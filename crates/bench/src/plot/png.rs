//! Plots as PNG: shapes through tiny-skia, text through fontdue with a
//! TrueType font found on the system (DejaVu Sans; `FSLAB_FONT` names
//! another).

use super::{Anchor, Canvas, Chart, Rgb, HEIGHT, WIDTH};
use fontdue::{Font, FontSettings};
use std::io;
use std::path::PathBuf;
use tiny_skia::{FillRule, Paint, PathBuilder, Pixmap, Rect, Stroke, StrokeDash, Transform};

/// Where fonts are looked for, first found wins.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Loads the font PNG text is drawn with.
pub fn load_font() -> io::Result<Font> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("FSLAB_FONT") {
        candidates.push(PathBuf::from(p));
    }
    candidates.extend(FONT_PATHS.iter().map(PathBuf::from));
    for path in &candidates {
        if let Ok(bytes) = std::fs::read(path) {
            return Font::from_bytes(bytes, FontSettings::default())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "no TrueType font for PNG plots: install fonts-dejavu-core (Debian) or set FSLAB_FONT to a .ttf file",
    ))
}

struct Png<'a> {
    pixmap: Pixmap,
    font: &'a Font,
}

fn paint(c: Rgb) -> Paint<'static> {
    let mut paint = Paint::default();
    paint.set_color_rgba8(c.0, c.1, c.2, 255);
    paint.anti_alias = true;
    paint
}

/// The path through `points` in order, `closed` back to the first; `None`
/// for fewer than two points.
fn path_through(points: &[(f32, f32)], closed: bool) -> Option<tiny_skia::Path> {
    let mut pb = PathBuilder::new();
    for (i, &(x, y)) in points.iter().enumerate() {
        if i == 0 {
            pb.move_to(x, y);
        } else {
            pb.line_to(x, y);
        }
    }
    if closed {
        pb.close();
    }
    pb.finish()
}

impl Png<'_> {
    /// Blends `color` at pixel (x, y) with coverage `alpha` (0–255).
    fn blend(&mut self, x: i32, y: i32, color: Rgb, alpha: u8) {
        let (w, h) = (self.pixmap.width() as i32, self.pixmap.height() as i32);
        if x < 0 || y < 0 || x >= w || y >= h || alpha == 0 {
            return;
        }
        let i = ((y * w + x) * 4) as usize;
        let data = self.pixmap.data_mut();
        let a = alpha as u32;
        for (k, c) in [color.0, color.1, color.2].into_iter().enumerate() {
            data[i + k] = ((data[i + k] as u32 * (255 - a) + c as u32 * a) / 255) as u8;
        }
        data[i + 3] = 255;
    }
}

impl Canvas for Png<'_> {
    fn line(&mut self, from: (f32, f32), to: (f32, f32), c: Rgb, width: f32) {
        self.polyline(&[from, to], c, width);
    }

    fn polyline(&mut self, points: &[(f32, f32)], c: Rgb, width: f32) {
        if let Some(path) = path_through(points, false) {
            let stroke = Stroke { width, ..Stroke::default() };
            self.pixmap.stroke_path(&path, &paint(c), &stroke, Transform::identity(), None);
        }
    }

    fn dashed(&mut self, points: &[(f32, f32)], c: Rgb, width: f32, dash: f32) {
        if let Some(path) = path_through(points, false) {
            let stroke = Stroke { width, dash: StrokeDash::new(vec![dash, dash], 0.0), ..Stroke::default() };
            self.pixmap.stroke_path(&path, &paint(c), &stroke, Transform::identity(), None);
        }
    }

    fn rect(&mut self, at: (f32, f32), size: (f32, f32), c: Rgb) {
        if let Some(rect) = Rect::from_xywh(at.0, at.1, size.0.max(0.01), size.1.max(0.01)) {
            self.pixmap.fill_rect(rect, &paint(c), Transform::identity(), None);
        }
    }

    fn circle(&mut self, center: (f32, f32), radius: f32, c: Rgb) {
        if let Some(path) = PathBuilder::from_circle(center.0, center.1, radius) {
            self.pixmap.fill_path(&path, &paint(c), FillRule::Winding, Transform::identity(), None);
        }
    }

    fn polygon(&mut self, points: &[(f32, f32)], c: Rgb, opacity: f32) {
        if let Some(path) = path_through(points, true) {
            let mut fill = paint(c);
            fill.set_color_rgba8(c.0, c.1, c.2, (opacity.clamp(0.0, 1.0) * 255.0).round() as u8);
            self.pixmap.fill_path(&path, &fill, FillRule::Winding, Transform::identity(), None);
        }
    }

    fn text(&mut self, at: (f32, f32), text: &str, size: f32, anchor: Anchor, vertical: bool, c: Rgb) {
        let width: f32 = text.chars().map(|ch| self.font.metrics(ch, size).advance_width).sum();
        let start = match anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => -width / 2.0,
            Anchor::End => -width,
        };
        let mut pen = start;
        for ch in text.chars() {
            let (m, coverage) = self.font.rasterize(ch, size);
            for row in 0..m.height {
                for col in 0..m.width {
                    let alpha = coverage[row * m.width + col];
                    // Along the text (u) and down from the baseline (v).
                    let u = pen + m.xmin as f32 + col as f32;
                    let v = row as f32 - m.height as f32 - m.ymin as f32;
                    let (x, y) = if vertical { (at.0 + v, at.1 - u) } else { (at.0 + u, at.1 + v) };
                    self.blend(x.round() as i32, y.round() as i32, c, alpha);
                }
            }
            pen += m.advance_width;
        }
    }
}

/// `chart` as PNG bytes, text drawn with `font`.
pub fn render(chart: &Chart, font: &Font) -> io::Result<Vec<u8>> {
    let pixmap =
        Pixmap::new(WIDTH as u32, HEIGHT as u32).ok_or_else(|| io::Error::other("cannot make a pixmap"))?;
    let mut png = Png { pixmap, font };
    super::draw(chart, &mut png);
    png.pixmap.encode_png().map_err(io::Error::other)
}
