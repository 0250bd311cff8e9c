//! A mesh as a heatmap: a square per ordered pair (rows: from, columns: to), its colour from
//! the lowest to the highest figure of the mesh (pale to dark blue whichever way is better),
//! its value written in it; grey with `error` where the pair failed, hatched-grey `-` on the
//! diagonal.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{draw_error, ChartKind, FONT, HEIGHT, WIDTH};
use crate::mesh::MeshMatrix;
use crate::{Error, Result};

/// Left margin for the host names, pixels.
const LABELS: i32 = 140;
/// Room for the title.
const TITLE: i32 = 40;

pub(crate) fn draw(m: &MeshMatrix) -> Result<String> {
    let values: Vec<f64> = m.cells.iter().filter_map(|c| m.figure.value(c)).collect();
    if m.hosts.len() < 2 {
        return Err(Error::NoData {
            chart: ChartKind::Mesh.name(),
            reason: "a mesh needs two hosts".into(),
        });
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let err = draw_error(ChartKind::Mesh);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(&err)?;
        let n = m.hosts.len() as i32;
        let (x0, y0) = (LABELS, TITLE + 30);
        let side = ((WIDTH as i32 - x0 - 20).min(HEIGHT as i32 - y0 - 20) / n).max(8);
        let title = format!("{} mesh: {}", m.test.as_str(), m.figure.caption());
        root.draw(&Text::new(title, (10, 12), (FONT, 14).into_font()))
            .map_err(&err)?;
        let centered =
            |size| TextStyle::from((FONT, size)).pos(Pos::new(HPos::Center, VPos::Center));
        let right = TextStyle::from((FONT, 12)).pos(Pos::new(HPos::Right, VPos::Center));
        for (i, h) in m.hosts.iter().enumerate() {
            let mid = side * i as i32 + side / 2;
            root.draw(&Text::new(fit(h), (x0 - 8, y0 + mid), right.clone()))
                .map_err(&err)?;
            let top = TextStyle::from((FONT, 12)).pos(Pos::new(HPos::Center, VPos::Bottom));
            root.draw(&Text::new(fit(h), (x0 + mid, y0 - 6), top))
                .map_err(&err)?;
        }
        root.draw(&Text::new(
            "from \\ to",
            (10, y0 - 6),
            (FONT, 12).into_font(),
        ))
        .map_err(&err)?;
        for (r, from) in m.hosts.iter().enumerate() {
            for (c, to) in m.hosts.iter().enumerate() {
                let (x, y) = (x0 + side * c as i32, y0 + side * r as i32);
                let cell = m.cell(from, to);
                let value = cell.and_then(|c| m.figure.value(c));
                let (fill, text) = match (from == to, value) {
                    (true, _) => (RGBColor(235, 235, 235), "-".to_string()),
                    (false, Some(v)) => (shade(v, lo, hi), m.figure.format(v)),
                    (false, None) => (RGBColor(200, 200, 200), "error".to_string()),
                };
                root.draw(&Rectangle::new(
                    [(x, y), (x + side - 2, y + side - 2)],
                    fill.filled(),
                ))
                .map_err(&err)?;
                let ink = if luminance(fill) < 0.5 { WHITE } else { BLACK };
                let size = (side / 6).clamp(9, 14);
                let style = centered(size).color(&ink);
                root.draw(&Text::new(
                    text,
                    (x + side / 2 - 1, y + side / 2 - 1),
                    style,
                ))
                .map_err(&err)?;
            }
        }
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

/// A host name cut to fit its label room.
fn fit(h: &str) -> String {
    if h.chars().count() <= 18 {
        h.to_string()
    } else {
        let mut s: String = h.chars().take(17).collect();
        s.push('…');
        s
    }
}

/// Pale blue at `lo`, dark blue at `hi`.
fn shade(v: f64, lo: f64, hi: f64) -> RGBColor {
    let t = if hi > lo { (v - lo) / (hi - lo) } else { 1.0 };
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(mix(222.0, 8.0), mix(235.0, 69.0), mix(247.0, 148.0))
}

fn luminance(c: RGBColor) -> f64 {
    (0.2126 * f64::from(c.0) + 0.7152 * f64::from(c.1) + 0.0722 * f64::from(c.2)) / 255.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::MeshCell;
    use wire::TestKind;

    #[test]
    fn every_cell_is_drawn_with_its_value_or_error() {
        let mut m = MeshMatrix::new(
            "m".into(),
            TestKind::TcpStream,
            vec!["a".into(), "b".into()],
        );
        m.cells.push(MeshCell {
            throughput_bps: Some(94.1e6),
            ..MeshCell::failed("a", "b", String::new())
        });
        m.cells[0].error = None;
        m.cells.push(MeshCell::failed("b", "a", "down".into()));
        let svg = draw(&m).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains("94.1 Mbit/s") && svg.contains("error"),
            "{svg}"
        );
        assert_eq!(
            svg.matches("<rect").count(),
            1 + 4,
            "background and 4 squares"
        );
    }
}
