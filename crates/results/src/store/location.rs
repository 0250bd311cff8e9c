//! Where the results database is when a command does not say: `--db`, else `$LINERATE_DB`
//! (a file path or a `postgresql://` URL), else the XDG data directory's
//! `linerate/results.sqlite`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{StoreError, StoreLocation};

impl StoreLocation {
    /// The store a command uses: `given` (`--db`), else `$LINERATE_DB` when set and not empty,
    /// else [`StoreLocation::default_file`].
    pub fn resolve(given: Option<&Path>) -> Result<StoreLocation, StoreError> {
        let given = given
            .map(|p| p.as_os_str().to_owned())
            .or_else(|| std::env::var_os("LINERATE_DB").filter(|p| !p.is_empty()));
        match given {
            Some(g) => StoreLocation::parse(&g.to_string_lossy()),
            None => Self::default_file()
                .map(StoreLocation::File)
                .ok_or(StoreError::NoDefault),
        }
    }

    /// The default database file: `$XDG_DATA_HOME/linerate/results.sqlite`, or
    /// `$HOME/.local/share/linerate/results.sqlite`; `None` without either variable.
    pub fn default_file() -> Option<PathBuf> {
        Self::default_file_from(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
    }

    /// [`StoreLocation::default_file`] over given variables. A relative `XDG_DATA_HOME` is
    /// ignored, as the XDG base directory spec asks.
    pub fn default_file_from(
        xdg_data_home: Option<OsString>,
        home: Option<OsString>,
    ) -> Option<PathBuf> {
        let xdg = xdg_data_home.map(PathBuf::from).filter(|p| p.is_absolute());
        let base = xdg.or_else(|| {
            home.filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })?;
        Some(base.join("linerate").join("results.sqlite"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_follows_xdg() {
        let p = |x: Option<&str>, h: Option<&str>| {
            StoreLocation::default_file_from(x.map(Into::into), h.map(Into::into))
        };
        assert_eq!(
            p(Some("/data"), Some("/home/a")),
            Some(PathBuf::from("/data/linerate/results.sqlite"))
        );
        let home = Some(PathBuf::from(
            "/home/a/.local/share/linerate/results.sqlite",
        ));
        assert_eq!(p(Some("relative"), Some("/home/a")), home);
        assert_eq!(p(None, Some("/home/a")), home);
        assert_eq!(p(None, None), None);
    }

    #[test]
    fn a_given_location_wins_and_is_parsed() {
        let given = StoreLocation::resolve(Some(Path::new("/tmp/x.sqlite"))).unwrap();
        assert_eq!(given, StoreLocation::File(PathBuf::from("/tmp/x.sqlite")));
        assert!(StoreLocation::resolve(Some(Path::new("ftp://h/db"))).is_err());
    }
}
