//! Which image a chart's output file asks for, by its extension.

use std::path::Path;

/// An image format a chart is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// Scalable vector graphics, as drawn.
    Svg,
    /// The SVG rasterised.
    Png,
}

/// A file name that names no image format this crate writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageFormatError {
    /// An extension other than .svg or .png.
    #[error("{path}: unknown image extension '.{ext}'; use .svg or .png")]
    Unknown {
        /// The file as given.
        path: String,
        /// Its extension.
        ext: String,
    },
    /// No extension at all.
    #[error("{0}: no extension; end the file name in .svg or .png")]
    None(String),
}

impl ImageFormat {
    /// The format `path`'s extension names (either case).
    pub fn of(path: &Path) -> Result<ImageFormat, ImageFormatError> {
        let shown = path.display().to_string();
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("svg") => Ok(ImageFormat::Svg),
            Some(e) if e.eq_ignore_ascii_case("png") => Ok(ImageFormat::Png),
            Some(e) => Err(ImageFormatError::Unknown {
                path: shown,
                ext: e.to_string(),
            }),
            None => Err(ImageFormatError::None(shown)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_format_follows_the_extension() {
        assert_eq!(
            ImageFormat::of(Path::new("a.svg")).unwrap(),
            ImageFormat::Svg
        );
        assert_eq!(
            ImageFormat::of(Path::new("d/a.PNG")).unwrap(),
            ImageFormat::Png
        );
        let err = ImageFormat::of(Path::new("a.jpg")).unwrap_err().to_string();
        assert!(
            err.contains("'.jpg'") && err.contains(".svg or .png"),
            "{err}"
        );
        let err = ImageFormat::of(Path::new("chart")).unwrap_err().to_string();
        assert!(err.contains("no extension"), "{err}");
    }
}
