//! From a `postgresql://` URL to a connected client: the URL's settings, the password from
//! the URL, `PGPASSWORD` or the password file (`PGPASSFILE`, else `~/.pgpass`), TLS by rustls
//! with the system's root certificates unless `sslmode=disable`, and a 10 s connect timeout
//! unless the URL sets one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::{Client, Config, NoTls};
use results::store::{redact, StoreError};

/// PostgreSQL's port when the URL gives none.
const DEFAULT_PORT: u16 = 5432;

/// A server to connect to, as a URL said.
pub struct PgTarget {
    config: Config,
    url: String,
}

impl PgTarget {
    /// Reads `url`; the password comes from it, or `PGPASSWORD`, or the password file.
    pub fn parse(url: &str) -> Result<PgTarget, StoreError> {
        let location = redact(url);
        let mut config: Config = url.parse().map_err(|e| StoreError::Server {
            location: location.clone(),
            detail: format!("not a PostgreSQL URL: {e}"),
        })?;
        if config.get_user().is_none() {
            return Err(StoreError::Server {
                location,
                detail: "the URL names no user: postgresql://USER@HOST/DB".into(),
            });
        }
        if config.get_password().is_none() {
            if let Some(password) = password_for(&config) {
                config.password(password);
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        Ok(PgTarget {
            config,
            url: url.to_string(),
        })
    }

    /// The URL without its password, for messages.
    pub fn location(&self) -> String {
        redact(&self.url)
    }

    /// Connects (over TLS unless `sslmode=disable`).
    pub fn connect(&self) -> Result<Client, StoreError> {
        let location = self.location();
        let connected = if self.config.get_ssl_mode() == SslMode::Disable {
            self.config.connect(NoTls)
        } else {
            self.config.connect(tls(&location)?)
        };
        connected.map_err(|e| server_error(&location, &e))
    }
}

/// rustls with the system's root certificates (none loadable: TLS to a server with a
/// certificate fails, plain connections still work with `sslmode=prefer`).
fn tls(location: &str) -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Server {
            location: location.to_string(),
            detail: format!("TLS: {e}"),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// A client error as one line: the server's own message for a database error (a wrong
/// password, a missing database), else the connection's.
pub fn server_error(location: &str, e: &postgres::Error) -> StoreError {
    let detail = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        }
    };
    StoreError::Server {
        location: location.to_string(),
        detail,
    }
}

/// `PGPASSWORD`, else the first matching line of the password file.
fn password_for(config: &Config) -> Option<String> {
    if let Some(p) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
        return p.into_string().ok();
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        _ => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(DEFAULT_PORT)
        .to_string();
    let user = config.get_user().unwrap_or_default();
    let db = config.get_dbname().unwrap_or(user);
    pgpass_lookup(&text, [&host, &port, db, user])
}

/// The password of the first line of a password file whose host, port, database and user
/// match (`*` matches anything; `\:` and `\\` are a literal colon and backslash).
pub fn pgpass_lookup(text: &str, want: [&str; 4]) -> Option<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .find_map(|line| {
            let fields = split_fields(line);
            let [h, p, d, u, password] = <[String; 5]>::try_from(fields).ok()?;
            let matches = [h, p, d, u]
                .iter()
                .zip(want)
                .all(|(field, w)| field == "*" || field == w);
            matches.then_some(password)
        })
}

/// A password-file line's colon-separated fields, escapes resolved.
fn split_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => field.extend(chars.next()),
            ':' => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_password_file_line_wins_with_wildcards_and_escapes() {
        let text = "# comment\nother:5432:*:u:no\n127.0.0.1:*:lr:u:pa\\:ss\n*:*:*:*:any\n";
        assert_eq!(
            pgpass_lookup(text, ["127.0.0.1", "5433", "lr", "u"]),
            Some("pa:ss".into())
        );
        assert_eq!(
            pgpass_lookup(text, ["db", "5432", "x", "v"]),
            Some("any".into())
        );
        assert_eq!(pgpass_lookup("h:1:d:u\n", ["h", "1", "d", "u"]), None);
    }

    #[test]
    fn a_url_without_a_user_or_of_another_shape_is_refused() {
        let err = PgTarget::parse("postgresql://db.example/lr").err().unwrap();
        assert!(err.to_string().contains("names no user"), "{err}");
        let err = PgTarget::parse("postgresql://u:pw@db/lr?sslmode=bogus")
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(
            text.starts_with("postgresql://u:***@db/lr?sslmode=bogus: not a PostgreSQL URL"),
            "{text}"
        );
    }
}
