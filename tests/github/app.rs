//! App authentication (JWT, installation tokens) and pull request look-ups.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use redline::github::{AppAuth, fetch_pull, has_write_access};
use redline::llm::Secret;
use serde_json::Value;

use super::{HEAD_A, OWNER, PR, PRIVATE_KEY, PUBLIC_KEY, REPO, Waits, client, fast_policy};
use crate::common::github_mock::{GitHubMock, PullSpec};

#[tokio::test]
async fn app_jwt_and_installation_token_caching() {
    let gh = GitHubMock::start().await;
    let waits = Waits::default();
    let app = AppAuth::new(&gh.url(), 4242, Secret::new(PRIVATE_KEY))
        .unwrap()
        .with_rate_limit_policy(fast_policy(&waits));
    let installation = app.installation_client(99);
    gh.add_pull(OWNER, REPO, PR, PullSpec::new("base1", HEAD_A));
    fetch_pull(&installation, OWNER, REPO, PR).await.unwrap();
    fetch_pull(&installation, OWNER, REPO, PR).await.unwrap();
    assert_eq!(gh.token_requests(), 1, "one token for two uses");

    let requests = gh.requests();
    let jwt = requests[0]
        .authorization
        .as_deref()
        .unwrap()
        .strip_prefix("Bearer ")
        .unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_required_spec_claims(&["iss", "iat", "exp"]);
    let key = DecodingKey::from_rsa_pem(PUBLIC_KEY.as_bytes()).unwrap();
    let claims = jsonwebtoken::decode::<Value>(jwt, &key, &validation)
        .unwrap()
        .claims;
    let now = chrono::Utc::now().timestamp();
    assert_eq!(claims["iss"], "4242");
    assert!((now - 60 - claims["iat"].as_i64().unwrap()).abs() <= 5);
    let exp = claims["exp"].as_i64().unwrap();
    assert!(exp > now && exp - now < 600);
    for api_call in requests.iter().filter(|r| r.path.starts_with("/repos/")) {
        assert_eq!(
            api_call.authorization.as_deref(),
            Some("Bearer ghs_mock_99_1")
        );
    }

    app.invalidate(99);
    fetch_pull(&installation, OWNER, REPO, PR).await.unwrap();
    assert_eq!(gh.token_requests(), 2, "invalidated token replaced");
}

#[tokio::test]
async fn refused_installation_token_is_renewed_once() {
    let gh = GitHubMock::start().await;
    let waits = Waits::default();
    let app = AppAuth::new(&gh.url(), 4242, Secret::new(PRIVATE_KEY))
        .unwrap()
        .with_rate_limit_policy(fast_policy(&waits));
    let installation = app.installation_client(3);
    gh.add_pull(OWNER, REPO, PR, PullSpec::new("base1", HEAD_A));
    fetch_pull(&installation, OWNER, REPO, PR).await.unwrap();
    gh.fail_next(401, "Bad credentials");
    fetch_pull(&installation, OWNER, REPO, PR).await.unwrap();
    assert_eq!(gh.token_requests(), 2);
    let last = gh.requests().pop().unwrap();
    assert_eq!(last.authorization.as_deref(), Some("Bearer ghs_mock_3_2"));
}

#[tokio::test]
async fn installation_token_renewed_near_expiry() {
    let gh = GitHubMock::start().await;
    let waits = Waits::default();
    let app = AppAuth::new(&gh.url(), "Iv1.test", Secret::new(PRIVATE_KEY))
        .unwrap()
        .with_rate_limit_policy(fast_policy(&waits));
    // Tokens valid for two minutes are inside the five-minute renewal margin.
    gh.set_token_ttl(chrono::Duration::minutes(2));
    let first = app.installation_token(5).await.unwrap();
    let second = app.installation_token(5).await.unwrap();
    assert_eq!(gh.token_requests(), 2);
    assert_ne!(first, second);
    assert!(!format!("{first:?}").contains("ghs_mock"));
}

#[tokio::test]
async fn pull_lookup_and_write_access() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    let mut spec = PullSpec::new("base1", HEAD_A);
    spec.is_fork = true;
    spec.draft = true;
    gh.add_pull(OWNER, REPO, PR, spec);
    let pull = fetch_pull(&client, OWNER, REPO, PR).await.unwrap();
    assert_eq!(
        (pull.base_sha.as_str(), pull.head_sha.as_str()),
        ("base1", HEAD_A)
    );
    assert_eq!(
        (pull.base_ref.as_str(), pull.head_ref.as_str()),
        ("main", "feature")
    );
    assert!(pull.is_fork && pull.draft);

    gh.set_permission("maintainer", "maintain");
    gh.set_permission("writer", "write");
    gh.set_permission("reader", "read");
    assert!(
        has_write_access(&client, OWNER, REPO, "maintainer")
            .await
            .unwrap()
    );
    assert!(
        has_write_access(&client, OWNER, REPO, "writer")
            .await
            .unwrap()
    );
    assert!(
        !has_write_access(&client, OWNER, REPO, "reader")
            .await
            .unwrap()
    );
    assert!(
        !has_write_access(&client, OWNER, REPO, "stranger")
            .await
            .unwrap()
    );
}
