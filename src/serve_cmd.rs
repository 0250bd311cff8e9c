//! `linerate serve` and `linerate keygen`: the server's flags into a [`ServerConfig`], its keys
//! file read (and reread on SIGHUP), the results database iperf3 clients' runs are stored in,
//! and new keys.

use std::net::{IpAddr, SocketAddr};
use std::os::unix::net::UnixListener;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use engine::{Listener, Signal};
use pgstore::Access;
use results::store::ResultStore;
use session::auth::{ClientKey, KeyTable, Secret};
use session::server::{
    self, listen_tcp, AuthKeys, Budget, RecordSink, RelayPolicy, ServedRun, ServerConfig,
};
use wire::auth::UserName;
use wire::spec::SpecLimits;

use crate::cli::ServeArgs;
use crate::store_args::{open_store as open_store_at, resolve_db};

pub fn stderr_log() -> server::Log {
    Arc::new(|line: String| eprintln!("linerate serve: {line}"))
}

/// `linerate serve`.
pub fn serve(args: &ServeArgs, shutdown: Signal) -> Result<()> {
    // Every flag is checked, and the database opened, before the port is taken.
    let mut config = config(args)?;
    let stored_in = match open_store(args)? {
        Some(store) => {
            let location = store.location();
            config.records = Some(record_sink(store, server::escaping(stderr_log())));
            Some(location)
        }
        None => None,
    };
    let listener = listener(args)?;
    if let Some(addr) = &args.metrics {
        let addr = addr
            .parse()
            .map_err(|_| anyhow::anyhow!("--metrics {addr}: give ADDR:PORT, e.g. 0.0.0.0:9464"))?;
        let metrics = Arc::new(server::ServerMetrics::default());
        config.metrics = Some(Arc::clone(&metrics));
        let bound = ui::metrics::start(addr, move |a| metrics.page(a), shutdown.clone())
            .with_context(|| format!("--metrics {addr}"))?;
        eprintln!("linerate serve: OpenMetrics at http://{bound}/metrics");
    }
    let listening = format!(
        "linerate serve: listening on {} (protocol {}, up to {} tests at once{}{})",
        listener.describe(),
        wire::PROTOCOL_VERSION,
        config.max_sessions,
        match &config.auth {
            Some(keys) => format!(
                ", {} key{} from {} (SIGHUP rereads it)",
                keys.table.len(),
                if keys.table.len() == 1 { "" } else { "s" },
                keys.path.display()
            ),
            None => String::new(),
        },
        if config.one_off {
            ", one test then exit"
        } else {
            ""
        }
    );
    let stored = match &stored_in {
        Some(path) => format!(
            "\nlinerate serve: iperf3 clients' runs are stored in {}{}",
            path,
            if config.auth.is_some() && args.iperf3_open {
                " (--iperf3-open: iperf3 clients run without a key)"
            } else {
                ""
            }
        ),
        None if config.auth.is_some() && args.iperf3_open => {
            "\nlinerate serve: --iperf3-open: iperf3 clients run without a key".to_string()
        }
        None => String::new(),
    };
    // A server runs for weeks: what its busiest moment allocated goes back to the system.
    engine::sys_io::bound_freed_memory_kept();
    // Said once every port is open: a script may connect as soon as it reads `listening`.
    let ready = move || eprintln!("{listening}{stored}");
    server::serve(listener, shutdown, config, stderr_log(), ready);
    Ok(())
}

/// The server's limits, allow-list and keys from its flags; every bad one is one line.
fn config(args: &ServeArgs) -> Result<ServerConfig> {
    if args.max_sessions == 0 {
        bail!("--max-sessions 0: must be at least 1");
    }
    if args.max_sessions_per_address == Some(0) {
        bail!("--max-sessions-per-address 0: must be at least 1");
    }
    use wire::spec::bounds::{MAX_DURATION_MS, MAX_STREAMS};
    if !(1..=MAX_STREAMS).contains(&args.max_streams) {
        bail!(
            "--max-streams {}: must be 1 to {MAX_STREAMS}",
            args.max_streams
        );
    }
    let max_s = MAX_DURATION_MS as f64 / 1e3;
    if !args.max_time.is_finite() || args.max_time <= 0.0 || args.max_time > max_s {
        bail!(
            "--max-time {}: must be above 0 and at most {max_s} seconds",
            args.max_time
        );
    }
    Ok(ServerConfig {
        limits: SpecLimits {
            max_duration_ms: (args.max_time * 1000.0) as u64,
            max_streams: args.max_streams,
            max_rate_bps: args
                .max_rate
                .as_deref()
                .map(|r| {
                    measure::units::parse_bits_per_sec(r)
                        .map_err(|e| anyhow::anyhow!("--max-rate {r}: {e}"))
                })
                .transpose()?,
            max_write_len_bytes: max_length(args)?,
            max_flows_dst: args.max_flows_dst,
            frames: args.frames,
            max_busy_poll_us: match args.allow_busy_poll {
                true => wire::spec::bounds::MAX_BUSY_POLL_US,
                false => wire::spec::bounds::SERVER_BUSY_POLL_US,
            },
        },
        budget: budget(args)?,
        max_sessions: if args.one_off { 1 } else { args.max_sessions },
        max_sessions_per_address: args.max_sessions_per_address,
        auth: auth_keys(args)?,
        auth_addresses: args
            .auth_address
            .iter()
            .map(|a| {
                a.parse::<std::net::SocketAddr>()
                    .map(|a| wire::auth::server_identity(Some(a)))
                    .map_err(|_| {
                        anyhow::anyhow!("--auth-address {a}: not an ADDR:PORT; give e.g. 203.0.113.5:5301 or [2001:db8::5]:5301")
                    })
            })
            .collect::<Result<_>>()?,
        allow: args
            .allow
            .iter()
            .map(|p| p.parse().map_err(|e| anyhow::anyhow!("--allow {e}")))
            .collect::<Result<_>>()?,
        one_off: args.one_off,
        dialects: vec![iperf3::Dialect::plugged(args.iperf3_open)],
        relay: relay_policy(args)?,
        ..ServerConfig::default()
    })
}

/// `--max-length`: within what the protocol carries (64 MiB, the client's own limit).
fn max_length(args: &ServeArgs) -> Result<u32> {
    let v = &args.max_length;
    let bytes =
        measure::units::parse_bytes(v).map_err(|e| anyhow::anyhow!("--max-length {v}: {e}"))?;
    match u32::try_from(bytes) {
        Ok(b) if (1..=wire::spec::bounds::MAX_WRITE_LEN_BYTES).contains(&b) => Ok(b),
        _ => bail!("--max-length {v}: must be between 1 byte and 64M"),
    }
}

/// `--max-sockets`, `--max-buffer-memory`.
fn budget(args: &ServeArgs) -> Result<Budget> {
    if args.max_flows_dst == 0 {
        bail!("--max-flows-dst 0: must be at least 1");
    }
    let v = &args.max_buffer_memory;
    let max_buffer_bytes = measure::units::parse_bytes(v)
        .map_err(|e| anyhow::anyhow!("--max-buffer-memory {v}: {e}"))?;
    let max_sockets = match args.max_sockets {
        Some(0) => bail!("--max-sockets 0: must be at least 1"),
        Some(n) => n,
        None => Budget::default().max_sockets,
    };
    Ok(Budget {
        max_sockets,
        max_buffer_bytes,
    })
}

/// `--relay`, `--relay-to`, `--relay-key`.
fn relay_policy(args: &ServeArgs) -> Result<Option<RelayPolicy>> {
    if !args.relay {
        return Ok(None);
    }
    let to = args
        .relay_to
        .iter()
        .map(|p| p.parse().map_err(|e| anyhow::anyhow!("--relay-to {e}")))
        .collect::<Result<_>>()?;
    if args.relay_key.is_some() && args.relay_to.is_empty() && args.auth_keys.is_none() {
        bail!(
            "--relay-key without --relay-to or --auth-keys: any client could have this server \
             offer its key to a far server of the client's choosing; name where relayed tests \
             may go with --relay-to PREFIX, or who may ask with --auth-keys FILE"
        );
    }
    let key = args
        .relay_key
        .as_deref()
        .map(ClientKey::load)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--relay-key: {e}"))?;
    Ok(Some(RelayPolicy { to, key }))
}

/// The database iperf3 clients' runs go to: `--db`, else where the test commands store theirs;
/// `None` with `--no-store`, and for a `--unix` server, which no iperf3 client can reach. One
/// that cannot be opened is an error before the port is taken.
fn open_store(args: &ServeArgs) -> Result<Option<Box<dyn ResultStore>>> {
    if args.no_store || (args.unix.is_some() && args.db.is_none()) {
        return Ok(None);
    }
    if let Some(db) = args.db.as_deref() {
        // A server runs for months: a password in its argv is in `ps` for all that time.
        if results::store::has_password(&db.to_string_lossy()) {
            anyhow::bail!(
                "--db {}: a password on serve's command line is visible to every user (ps); \
                 give the URL without it and the password in PGPASSWORD or a password file \
                 (PGPASSFILE, else ~/.pgpass), or the whole URL in LINERATE_DB",
                results::store::redact(&db.to_string_lossy())
            );
        }
    }
    open_store_at(&resolve_db(args.db.as_deref())?, Access::Write).map(Some)
}

/// Saves each finished run in `store`, with the host facts the record names as its client's
/// (as a client command stores them); a failed save is one line in the log, and the server
/// goes on.
fn record_sink(store: Box<dyn ResultStore>, log: server::Log) -> RecordSink {
    let store = Mutex::new(store);
    RecordSink(Arc::new(move |run: ServedRun| {
        let facts = run
            .record
            .hosts
            .as_ref()
            .map(|h| h.client.clone())
            .unwrap_or_default();
        let saved = match store.lock() {
            Ok(mut s) => s.insert(&run.record, &run.tags, &facts),
            Err(poisoned) => poisoned.into_inner().insert(&run.record, &run.tags, &facts),
        };
        match saved {
            Ok(id) => log(format!("{}: stored as {id}", run.record.target)),
            Err(e) => log(format!("{}: not stored: {e}", run.record.target)),
        }
    }))
}

/// `--auth-keys`: the file read now (a bad one stops the server from starting) and SIGHUP
/// wired to reread it.
fn auth_keys(args: &ServeArgs) -> Result<Option<AuthKeys>> {
    let Some(path) = &args.auth_keys else {
        return Ok(None);
    };
    let table = KeyTable::load(path)?;
    if table.is_empty() {
        eprintln!(
            "linerate serve: warning: {} holds no key, so every client will be refused",
            path.display()
        );
    }
    let reload = Signal::new();
    signal_hook::flag::register(signal_hook::consts::SIGHUP, reload.flag())
        .context("cannot catch SIGHUP to reread the keys file")?;
    Ok(Some(AuthKeys {
        path: path.clone(),
        table,
        reload,
    }))
}

fn listener(args: &ServeArgs) -> Result<Listener> {
    if let Some(path) = &args.unix {
        let listener = UnixListener::bind(path)
            .with_context(|| format!("--unix {}: cannot listen there", path.display()))?;
        return Ok(Listener::Unix(listener, path.clone()));
    }
    let bind = args
        .bind
        .as_deref()
        .map(|b| {
            b.parse::<IpAddr>()
                .map(|ip| SocketAddr::new(ip, args.port))
                .or_else(|_| b.parse::<SocketAddr>())
        })
        .transpose()
        .map_err(|_| {
            anyhow::anyhow!(
                "--bind {}: not an IP address",
                args.bind.as_deref().unwrap_or("")
            )
        })?;
    listen_tcp(bind, args.port).with_context(|| {
        format!(
            "cannot listen on port {}; is another server using it? (choose one with --port)",
            args.port
        )
    })
}

/// `linerate keygen NAME`: a new key's line, `NAME SECRET`, for the client's key file and the
/// server's keys file alike.
pub fn keygen(name: &str) -> Result<String> {
    let name = UserName::new(name)?;
    let secret = Secret::generate().context("no random numbers from the operating system")?;
    Ok(format!("{name} {}", secret.to_base64()))
}
