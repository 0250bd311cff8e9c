//! Mutual challenge-response authentication with a shared key (docs/PROTOCOL.md section 12).
//!
//! The server's greeting carries a fresh random nonce; the client answers in its first message
//! with its own fresh nonce, its key's name, the server it proves to (the address it connected
//! to) and `HMAC-SHA-256(secret, "client" ‖ both nonces ‖ name ‖ server)`; the server checks
//! it (in constant time), and that the server named is itself (the address the connection
//! reached, or one of `serve --auth-address`), and answers with the same HMAC over `"server"`,
//! which the client checks in turn. The secret never crosses the wire; because each side's
//! nonce is new for every connection, a recorded exchange proves nothing later, and because
//! the proof names its server, a server that is handed a proof cannot pass it on to another.
//!
//! Invariants: secrets are never formatted (their `Debug` is redacted); MACs are compared only
//! through `hmac`'s constant-time `verify_slice`; every nonce comes from the operating
//! system's random source.

mod keys;
mod private_file;

use hmac::{Hmac, Mac as _};
use sha2::Sha256;
use wire::auth::{ClientProof, Mac, Nonce, UserName, NONCE_LEN};

pub use keys::{ClientKey, KeyEntry, KeyError, KeyLimits, KeyTable, LineProblem};

/// What every MAC starts with, so a linerate MAC is never valid for anything else.
const LABEL: &[u8] = b"linerate auth v2";

/// A shared secret: 16 to 64 random bytes (`linerate keygen` makes 32).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// Fewest bytes a secret may have.
    pub const MIN_LEN: usize = 16;
    /// Most bytes a secret may have.
    pub const MAX_LEN: usize = 64;
    /// Bytes of a secret from `linerate keygen`.
    pub const GENERATED_LEN: usize = 32;

    /// A new random secret.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = vec![0u8; Self::GENERATED_LEN];
        getrandom::fill(&mut bytes)?;
        Ok(Self(bytes))
    }

    /// The secret from its base64 text, or `None` if it is not base64 of 16 to 64 bytes.
    pub fn from_base64(text: &str) -> Option<Self> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?;
        (Self::MIN_LEN..=Self::MAX_LEN)
            .contains(&bytes.len())
            .then_some(Self(bytes))
    }

    /// A secret that is no secret (all zeros), for a MAC computed only to cost the same time
    /// as a real one (an unknown key name); nothing it proves is ever accepted.
    pub(crate) fn stand_in() -> Self {
        Self(vec![0; Self::GENERATED_LEN])
    }

    /// The secret as base64 text, for `keygen` to print once.
    pub fn to_base64(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&self.0)
    }
}

/// Which side a MAC speaks for: the two MACs of one exchange never equal each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Client,
    Server,
}

/// A fresh nonce from the operating system's random source.
pub fn fresh_nonce() -> Result<Nonce, getrandom::Error> {
    let mut bytes = [0u8; NONCE_LEN];
    getrandom::fill(&mut bytes)?;
    Ok(Nonce(bytes))
}

/// A fresh random 64-bit value (session cookies).
pub fn random_u64() -> Result<u64, getrandom::Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)?;
    Ok(u64::from_ne_bytes(bytes))
}

fn hmac(
    secret: &Secret,
    role: Role,
    server: &Nonce,
    client: &Nonce,
    user: &UserName,
    server_id: &str,
) -> Hmac<Sha256> {
    // HMAC takes keys of any length: this cannot fail.
    let mut mac = <Hmac<Sha256> as hmac::Mac>::new_from_slice(&secret.0)
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    mac.update(LABEL);
    mac.update(match role {
        Role::Client => b"\0client\0",
        Role::Server => b"\0server\0",
    });
    mac.update(&server.0);
    mac.update(&client.0);
    mac.update(user.as_str().as_bytes());
    // A name never holds a NUL, so the two fields cannot run into each other.
    mac.update(b"\0");
    mac.update(server_id.as_bytes());
    mac
}

fn tag(mac: Hmac<Sha256>) -> Mac {
    Mac(mac.finalize().into_bytes().into())
}

/// The client's proof for the server's `challenge` to the server at `server_id`
/// (`wire::auth::server_identity` of the address connected to), with a fresh nonce of its own.
pub fn client_proof(
    key: &ClientKey,
    challenge: &Nonce,
    server_id: &str,
) -> Result<ClientProof, getrandom::Error> {
    let nonce = fresh_nonce()?;
    let mac = tag(hmac(
        &key.secret,
        Role::Client,
        challenge,
        &nonce,
        &key.name,
        server_id,
    ));
    Ok(ClientProof {
        user: key.name.clone(),
        nonce,
        server: server_id.to_string(),
        mac,
    })
}

/// Whether `proof` answers `challenge` with `secret` (compared in constant time).
pub fn client_proof_holds(secret: &Secret, challenge: &Nonce, proof: &ClientProof) -> bool {
    hmac(
        secret,
        Role::Client,
        challenge,
        &proof.nonce,
        &proof.user,
        &proof.server,
    )
    .verify_slice(&proof.mac.0)
    .is_ok()
}

/// The server's answer to a client's proof that held.
pub fn server_proof(secret: &Secret, challenge: &Nonce, proof: &ClientProof) -> Mac {
    tag(hmac(
        secret,
        Role::Server,
        challenge,
        &proof.nonce,
        &proof.user,
        &proof.server,
    ))
}

/// Whether the server's `answer` proves it holds `key` (compared in constant time).
pub fn server_proof_holds(
    key: &ClientKey,
    challenge: &Nonce,
    proof: &ClientProof,
    answer: &Mac,
) -> bool {
    hmac(
        &key.secret,
        Role::Server,
        challenge,
        &proof.nonce,
        &proof.user,
        &proof.server,
    )
    .verify_slice(&answer.0)
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, byte: u8) -> ClientKey {
        ClientKey {
            name: UserName::new(name).unwrap(),
            secret: Secret(vec![byte; 32]),
        }
    }

    #[test]
    fn both_proofs_hold_with_the_same_key_only() {
        let alice = key("alice", 1);
        let challenge = fresh_nonce().unwrap();
        let proof = client_proof(&alice, &challenge, "198.18.0.1:5301").unwrap();
        assert!(client_proof_holds(&alice.secret, &challenge, &proof));
        assert!(!client_proof_holds(
            &key("alice", 2).secret,
            &challenge,
            &proof
        ));
        let answer = server_proof(&alice.secret, &challenge, &proof);
        assert!(server_proof_holds(&alice, &challenge, &proof, &answer));
        assert!(!server_proof_holds(
            &key("alice", 2),
            &challenge,
            &proof,
            &answer
        ));
        // The server's MAC is not the client's: a reflected proof is no answer.
        assert!(!server_proof_holds(&alice, &challenge, &proof, &proof.mac));
    }

    #[test]
    fn a_recorded_proof_fails_a_new_challenge_or_another_name() {
        let alice = key("alice", 1);
        let recorded_challenge = fresh_nonce().unwrap();
        let recorded = client_proof(&alice, &recorded_challenge, "198.18.0.1:5301").unwrap();
        let new_challenge = fresh_nonce().unwrap();
        assert_ne!(recorded_challenge, new_challenge);
        assert!(!client_proof_holds(
            &alice.secret,
            &new_challenge,
            &recorded
        ));
        let renamed = ClientProof {
            user: UserName::new("bob").unwrap(),
            ..recorded.clone()
        };
        assert!(!client_proof_holds(
            &alice.secret,
            &recorded_challenge,
            &renamed
        ));
    }

    #[test]
    fn a_proof_for_one_server_does_not_hold_as_one_for_another() {
        let alice = key("alice", 1);
        let challenge = fresh_nonce().unwrap();
        let for_x = client_proof(&alice, &challenge, "198.18.0.1:5301").unwrap();
        assert!(client_proof_holds(&alice.secret, &challenge, &for_x));
        let to_y = ClientProof {
            server: "198.18.0.2:5301".into(),
            ..for_x.clone()
        };
        assert!(!client_proof_holds(&alice.secret, &challenge, &to_y));
        // Nor does the server's answer for X prove anything about Y.
        let answer = server_proof(&alice.secret, &challenge, &for_x);
        assert!(!server_proof_holds(&alice, &challenge, &to_y, &answer));
    }

    #[test]
    fn secrets_round_trip_through_base64_and_never_print() {
        let secret = Secret::generate().unwrap();
        let text = secret.to_base64();
        assert_eq!(Secret::from_base64(&text), Some(secret.clone()));
        assert_eq!(format!("{secret:?}"), "Secret(..)");
        assert!(
            Secret::from_base64("c2hvcnQ=").is_none(),
            "5 bytes is too short"
        );
        assert!(Secret::from_base64("not base64!").is_none());
    }
}
