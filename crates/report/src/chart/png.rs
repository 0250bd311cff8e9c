//! PNG by rasterising a chart's SVG with resvg.
//!
//! Text needs fonts: the system's are loaded (Debian: fonts-dejavu-core), and the generic
//! `sans-serif` the charts ask for is pointed at the first common family present. With no
//! fonts at all the PNG still has every line and bar, without text.

use resvg::{tiny_skia, usvg};

use crate::{Error, Result};

/// Families tried, in order, for the charts' `sans-serif`.
const SANS: [&str; 5] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "Arial",
    "Helvetica",
];

fn options() -> usvg::Options<'static> {
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    let available = |name: &str| {
        db.faces()
            .any(|f| f.families.iter().any(|(family, _)| family == name))
    };
    let chosen = SANS
        .iter()
        .find(|n| available(n))
        .map(|n| n.to_string())
        .or_else(|| {
            // Any font at all beats no text.
            db.faces()
                .next()
                .and_then(|f| f.families.first().map(|(family, _)| family.clone()))
        });
    if let Some(family) = chosen {
        db.set_sans_serif_family(family);
    }
    opt
}

/// Renders `svg` at `scale` × its size to PNG bytes.
pub(crate) fn render(svg: &str, scale: f32) -> Result<Vec<u8>> {
    if !(scale.is_finite() && scale > 0.0 && scale <= 16.0) {
        return Err(Error::Png(format!(
            "scale {scale} is out of range; use a value above 0 and at most 16, e.g. 2"
        )));
    }
    let tree = usvg::Tree::from_str(svg, &options()).map_err(|e| Error::Png(e.to_string()))?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(scale)
        .ok_or_else(|| Error::Png(format!("scale {scale} gives an empty image")))?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| Error::Png("could not allocate the image".into()))?;
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| Error::Png(e.to_string()))
}
