//! Plots as SVG text.

use super::{Anchor, Canvas, Chart, Rgb, HEIGHT, WIDTH};
use std::fmt::Write as _;

/// A canvas that writes SVG elements.
pub struct Svg {
    body: String,
}

fn color(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

impl Canvas for Svg {
    fn line(&mut self, from: (f32, f32), to: (f32, f32), c: Rgb, width: f32) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="{width}"/>"#,
            from.0,
            from.1,
            to.0,
            to.1,
            color(c)
        );
    }

    fn polyline(&mut self, points: &[(f32, f32)], c: Rgb, width: f32) {
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{width}"/>"#,
            pts.join(" "),
            color(c)
        );
    }

    fn dashed(&mut self, points: &[(f32, f32)], c: Rgb, width: f32, dash: f32) {
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{width}" stroke-dasharray="{dash}"/>"#,
            pts.join(" "),
            color(c)
        );
    }

    fn rect(&mut self, at: (f32, f32), size: (f32, f32), c: Rgb) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
            at.0,
            at.1,
            size.0.max(0.0),
            size.1.max(0.0),
            color(c)
        );
    }

    fn circle(&mut self, center: (f32, f32), radius: f32, c: Rgb) {
        let _ = writeln!(
            self.body,
            r#"<circle cx="{:.1}" cy="{:.1}" r="{radius}" fill="{}"/>"#,
            center.0,
            center.1,
            color(c)
        );
    }

    fn polygon(&mut self, points: &[(f32, f32)], c: Rgb, opacity: f32) {
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(
            self.body,
            r#"<polygon points="{}" fill="{}" fill-opacity="{opacity}"/>"#,
            pts.join(" "),
            color(c)
        );
    }

    fn text(&mut self, at: (f32, f32), text: &str, size: f32, anchor: Anchor, vertical: bool, c: Rgb) {
        let anchor = match anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let rotate = if vertical {
            format!(r#" transform="rotate(-90 {:.1} {:.1})""#, at.0, at.1)
        } else {
            String::new()
        };
        let _ = writeln!(
            self.body,
            r#"<text x="{:.1}" y="{:.1}" font-size="{size}" text-anchor="{anchor}" fill="{}"{rotate}>{}</text>"#,
            at.0,
            at.1,
            color(c),
            escape(text)
        );
    }
}

/// `chart` as an SVG document.
pub fn render(chart: &Chart) -> String {
    let mut svg = Svg { body: String::new() };
    super::draw(chart, &mut svg);
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n{}</svg>\n",
        svg.body
    )
}
