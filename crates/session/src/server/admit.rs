//! Who a connection is and what it may run: its first message's proof checked against the
//! server's keys (in the gate, before it costs a thread), the keys file reloaded on request,
//! and the spec limits of one key.
//!
//! Invariants: with keys, a first message without a valid proof never reaches a session; the
//! client hears the same refusal for an unknown name and a wrong secret (the log tells them
//! apart); a keys file that fails to reload leaves the previous keys in force.

use std::path::PathBuf;

use engine::Signal;
use wire::auth::{ClientProof, Mac, Nonce, UserName};
use wire::spec::{SpecError, SpecLimits};

use crate::auth::{client_proof_holds, server_proof, KeyLimits, KeyTable, Secret};

/// `serve --auth-keys`: the keys file, its keys as last read, and the request to read it again
/// (SIGHUP in the binary).
#[derive(Debug, Clone)]
pub struct AuthKeys {
    /// The keys file.
    pub path: PathBuf,
    /// Its keys.
    pub table: KeyTable,
    /// Raised to reread the file; lowered again by the server when it has.
    pub reload: Signal,
}

/// What a connection's first message proved.
#[derive(Debug, Clone, Default)]
pub(super) struct Admission {
    /// The key's name; `None` on a server without keys.
    pub user: Option<UserName>,
    /// The key's limits.
    pub limits: KeyLimits,
    /// The server's proof for the client.
    pub answer: Option<Mac>,
}

/// A first message the keys turn away.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum AuthRefusal {
    /// No proof at all.
    #[error("this server asks for a key: pass --auth-key FILE (or set LINERATE_AUTH_KEY)")]
    NoProof,
    /// A name not in the keys file.
    #[error("authentication failed for key {0}: unknown name or wrong secret")]
    UnknownName(UserName),
    /// A known name whose proof does not hold.
    #[error("authentication failed for key {0}: unknown name or wrong secret")]
    WrongSecret(UserName),
    /// A proof that holds, for another server: one handed on by the server it was for, or a
    /// client that reaches this one through NAT or a proxy this server was not told of.
    #[error("authentication failed for key {user}: the proof is for server {server}, not the address this connection reached; a server reached through NAT or a proxy is started with serve --auth-address {server}")]
    OtherServer {
        /// The key's name.
        user: UserName,
        /// The server the proof names.
        server: String,
    },
}

impl AuthRefusal {
    /// The server's log line: says which of the two failures it was.
    pub(super) fn log_text(&self) -> String {
        match self {
            Self::NoProof => "refused: no key (this server asks for one)".into(),
            Self::UnknownName(name) => format!("refused: unknown key name {name}"),
            Self::WrongSecret(name) => format!("refused: wrong secret for key {name}"),
            Self::OtherServer { user, server } => format!(
                "refused: key {user}'s proof is for server {server:?}, not this one (NAT or a proxy: serve --auth-address)"
            ),
        }
    }
}

/// Who this server is to a connection's proof: the address the connection reached, and the
/// addresses of `--auth-address`.
pub(super) struct Reached<'a> {
    pub local: String,
    pub aliases: &'a [String],
}

impl Reached<'_> {
    fn names(&self, server: &str) -> bool {
        self.local == server || self.aliases.iter().any(|a| a == server)
    }
}

/// Checks `proof` against the server's `challenge`, `keys` and the server it names; without
/// keys everyone is admitted and any proof is ignored.
pub(super) fn admit(
    keys: Option<&KeyTable>,
    challenge: &Nonce,
    proof: Option<&ClientProof>,
    reached: &Reached,
) -> Result<Admission, AuthRefusal> {
    admit_with(keys, challenge, proof, reached, client_proof_holds)
}

/// [`admit`] with the proof check passed in (tests count its calls). An unknown name costs
/// the same MAC as a known one, computed against a stand-in secret and thrown away, so the
/// time to a refusal does not tell which names the keys file holds.
fn admit_with(
    keys: Option<&KeyTable>,
    challenge: &Nonce,
    proof: Option<&ClientProof>,
    reached: &Reached,
    holds: impl Fn(&Secret, &Nonce, &ClientProof) -> bool,
) -> Result<Admission, AuthRefusal> {
    let Some(keys) = keys else {
        return Ok(Admission::default());
    };
    let proof = proof.ok_or(AuthRefusal::NoProof)?;
    let Some(entry) = keys.get(&proof.user) else {
        // The stand-in's secret is no secret: whatever the MAC says, the name is unknown.
        let _ = std::hint::black_box(holds(&Secret::stand_in(), challenge, proof));
        return Err(AuthRefusal::UnknownName(proof.user.clone()));
    };
    if !holds(&entry.secret, challenge, proof) {
        return Err(AuthRefusal::WrongSecret(proof.user.clone()));
    }
    // After the MAC, so only a holder of the key learns which server its proof named.
    if !reached.names(&proof.server) {
        return Err(AuthRefusal::OtherServer {
            user: proof.user.clone(),
            server: proof.server.clone(),
        });
    }
    Ok(Admission {
        user: Some(proof.user.clone()),
        limits: entry.limits.clone(),
        answer: Some(server_proof(&entry.secret, challenge, proof)),
    })
}

/// The server's keys as the gate uses them: reread when asked.
pub(super) struct KeyWatch {
    keys: Option<AuthKeys>,
}

impl KeyWatch {
    pub(super) fn new(keys: Option<AuthKeys>) -> Self {
        Self { keys }
    }

    /// The keys in force (`None`: this server asks for none).
    pub(super) fn table(&self) -> Option<&KeyTable> {
        self.keys.as_ref().map(|k| &k.table)
    }

    /// Rereads the keys file if asked to; the log line says what happened.
    pub(super) fn refresh(&mut self, log: &dyn Fn(String)) {
        let Some(keys) = self.keys.as_mut() else {
            return;
        };
        if !keys.reload.take() {
            return;
        }
        match KeyTable::load(&keys.path) {
            Ok(table) => {
                log(format!(
                    "reloaded {}: {} key{}",
                    keys.path.display(),
                    table.len(),
                    if table.len() == 1 { "" } else { "s" }
                ));
                keys.table = table;
            }
            Err(e) => log(format!(
                "{e}; keeping the {} keys read before",
                keys.table.len()
            )),
        }
    }
}

impl Admission {
    /// The server's `limits` narrowed by this key's.
    pub(super) fn spec_limits(&self, server: &SpecLimits) -> SpecLimits {
        let key = &self.limits;
        SpecLimits {
            max_duration_ms: key.max_time.map_or(server.max_duration_ms, |t| {
                server.max_duration_ms.min(t.as_millis() as u64)
            }),
            max_streams: key
                .max_streams
                .map_or(server.max_streams, |n| server.max_streams.min(n)),
            max_rate_bps: match (server.max_rate_bps, key.max_rate_bps) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            ..*server
        }
    }
}

/// The word of a key's limit that `error` ran into.
pub(super) fn limit_word(error: &SpecError) -> &'static str {
    match error {
        SpecError::Streams { .. } => "max-streams",
        SpecError::Duration { .. } => "max-time",
        _ => "max-rate",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_costs_the_same_mac_and_hears_the_same_refusal_as_a_wrong_secret() {
        let keys = KeyTable::parse("alice c2VjcmV0LXNlY3JldC1zZWNyZXQtMTIzNA==\n").unwrap();
        let challenge = crate::auth::fresh_nonce().unwrap();
        let proof = |name: &str| ClientProof {
            user: UserName::new(name).unwrap(),
            nonce: crate::auth::fresh_nonce().unwrap(),
            server: "198.18.0.1:5301".into(),
            mac: Mac([0; 32]),
        };
        let reached = Reached {
            local: "198.18.0.1:5301".into(),
            aliases: &[],
        };
        let macs = std::cell::Cell::new(0);
        let counting = |s: &Secret, c: &Nonce, p: &ClientProof| {
            macs.set(macs.get() + 1);
            client_proof_holds(s, c, p)
        };
        let unknown = admit_with(
            Some(&keys),
            &challenge,
            Some(&proof("mallory")),
            &reached,
            counting,
        )
        .unwrap_err();
        assert_eq!(macs.get(), 1, "the unknown name's MAC was computed");
        let wrong = admit_with(
            Some(&keys),
            &challenge,
            Some(&proof("alice")),
            &reached,
            counting,
        )
        .unwrap_err();
        assert_eq!(macs.get(), 2);
        assert!(matches!(unknown, AuthRefusal::UnknownName(_)));
        assert!(matches!(wrong, AuthRefusal::WrongSecret(_)));
        // The client hears one text for both (the name is its own); the log tells them apart.
        let client_text = |e: &AuthRefusal| e.to_string().replace("mallory", "alice");
        assert_eq!(client_text(&unknown), client_text(&wrong));
        assert_ne!(
            unknown.log_text(),
            wrong.log_text().replace("alice", "mallory")
        );
    }
    use wire::spec::{Direction, Params, UdpParams, UdpRate};
    use wire::TestSpec;

    #[test]
    fn a_keys_max_rate_covers_request_response_kinds() {
        let admission = Admission {
            limits: KeyLimits {
                max_rate_bps: Some(10_000_000),
                ..KeyLimits::default()
            },
            ..Admission::default()
        };
        let mut spec = TestSpec::new(Params::defaults(wire::TestKind::TcpRr), 1, 1000);
        let rr = spec.params.rr_mut().unwrap();
        (rr.request_len_bytes, rr.response_len_bytes) = (1, 4 << 20);
        let server = SpecLimits::default();
        assert!(spec.check(&server).is_ok());
        let err = spec.check(&admission.spec_limits(&server)).unwrap_err();
        assert_eq!(limit_word(&err), "max-rate");
        assert!(err.to_string().contains("limit of 10000000 bit/s"), "{err}");
    }

    #[test]
    fn a_keys_max_rate_covers_the_reverse_rate_of_a_bidirectional_test() {
        let admission = Admission {
            limits: KeyLimits {
                max_rate_bps: Some(100_000_000),
                ..KeyLimits::default()
            },
            ..Admission::default()
        };
        let udp = UdpParams {
            rate: UdpRate::BitsPerSec(50_000_000),
            reverse_rate: Some(UdpRate::BitsPerSec(200_000_000)),
            ..UdpParams::new(Direction::Bidir)
        };
        let spec = TestSpec::new(Params::UdpStream { udp }, 1, 1000);
        let server = SpecLimits::default();
        assert!(spec.check(&server).is_ok());
        let err = spec.check(&admission.spec_limits(&server)).unwrap_err();
        assert_eq!(limit_word(&err), "max-rate");
        assert!(
            err.to_string()
                .starts_with("UDP rate 200000000 bit/s per server -> client stream"),
            "{err}"
        );
    }
}
