//! `X-Hub-Signature-256`: HMAC-SHA256 of the raw request body with the webhook secret.

use hmac::{Hmac, Mac};
use octocrab::models::webhook_events::verify_signature;
use sha2::Sha256;

use crate::llm::Secret;

/// Why a delivery's signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The server has no webhook secret; every delivery is refused rather than trusted.
    #[error("no webhook secret is configured")]
    NotConfigured,
    /// The request has no `X-Hub-Signature-256` header.
    #[error("the X-Hub-Signature-256 header is missing")]
    Missing,
    /// The header is malformed or does not match the body.
    #[error("the X-Hub-Signature-256 header does not match the body")]
    Mismatch,
}

/// Checks `header` (`sha256=<hex>`) against `body`. The comparison is constant-time
/// (octocrab's verifier, built on `hmac`'s `verify_slice`).
pub fn verify(secret: &Secret, header: Option<&str>, body: &[u8]) -> Result<(), SignatureError> {
    if secret.is_empty() {
        return Err(SignatureError::NotConfigured);
    }
    let header = header.ok_or(SignatureError::Missing)?;
    verify_signature(header, secret.expose(), body).map_err(|_| SignatureError::Mismatch)
}

/// The `X-Hub-Signature-256` value GitHub would send for `body` (for tests and load tools).
pub fn sign(secret: &Secret, body: &[u8]) -> String {
    // HMAC accepts keys of any length, so building the MAC cannot fail.
    let digest = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes())
        .map(|mut mac| {
            mac.update(body);
            mac.finalize().into_bytes().to_vec()
        })
        .unwrap_or_default();
    format!("sha256={}", hex::encode(digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GitHub's documented test vector (docs: "Validating webhook deliveries").
    const GITHUB_SECRET: &str = "It's a Secret to Everybody";
    const GITHUB_PAYLOAD: &[u8] = b"Hello, World!";
    const GITHUB_SIGNATURE: &str =
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    #[test]
    fn matches_githubs_test_vector() {
        let secret = Secret::new(GITHUB_SECRET);
        assert_eq!(sign(&secret, GITHUB_PAYLOAD), GITHUB_SIGNATURE);
        assert_eq!(
            verify(&secret, Some(GITHUB_SIGNATURE), GITHUB_PAYLOAD),
            Ok(())
        );
    }

    #[test]
    fn rejects_wrong_missing_and_malformed_signatures() {
        let secret = Secret::new(GITHUB_SECRET);
        let other = Secret::new("another secret");
        let wrong = sign(&other, GITHUB_PAYLOAD);
        assert_eq!(
            verify(&secret, Some(&wrong), GITHUB_PAYLOAD),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(&secret, None, GITHUB_PAYLOAD),
            Err(SignatureError::Missing)
        );
        for malformed in ["sha256=zz", "757107ea", "sha1=757107ea", ""] {
            assert_eq!(
                verify(&secret, Some(malformed), GITHUB_PAYLOAD),
                Err(SignatureError::Mismatch)
            );
        }
        assert_eq!(
            verify(&secret, Some(GITHUB_SIGNATURE), b"Hello, World?"),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn an_empty_secret_refuses_everything() {
        let empty = Secret::new("");
        let signature = sign(&empty, GITHUB_PAYLOAD);
        assert_eq!(
            verify(&empty, Some(&signature), GITHUB_PAYLOAD),
            Err(SignatureError::NotConfigured)
        );
    }
}
