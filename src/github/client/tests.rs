use super::*;

#[tokio::test]
async fn rejects_bad_api_urls() {
    assert!(matches!(
        Transport::new("not a url", RateLimitPolicy::default()),
        Err(GitHubError::Setup(_))
    ));
    assert!(matches!(
        Transport::new("ftp://example.com", RateLimitPolicy::default()),
        Err(GitHubError::Setup(_))
    ));
}

#[tokio::test]
async fn next_page_only_on_the_same_host() {
    let transport = Transport::new("https://ghes.example/api/v3/", RateLimitPolicy::default())
        .expect("transport");
    let mut headers = HeaderMap::new();
    headers.insert(
        "link",
        HeaderValue::from_static(
            "<https://ghes.example/api/v3/x?page=2>; rel=\"next\", <https://ghes.example/api/v3/x?page=5>; rel=\"last\"",
        ),
    );
    assert_eq!(
        transport.next_page_path(&headers).as_deref(),
        Some("/api/v3/x?page=2")
    );
    headers.insert(
        "link",
        HeaderValue::from_static("<https://evil.example/x?page=2>; rel=\"next\""),
    );
    assert_eq!(transport.next_page_path(&headers), None);
}

#[tokio::test]
async fn graphql_goes_to_api_graphql_on_enterprise_server() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/graphql"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(serde_json::json!({"data": {"ok": 1}})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v3/repos/o/r"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({"id": 7})))
        .mount(&server)
        .await;
    let api = format!("{}/api/v3/", server.uri());
    let client = GitHubClient::with_token(&api, Secret::new("t")).expect("client");
    let data = client
        .graphql("query { ok }", &serde_json::json!({}))
        .await
        .expect("GraphQL at /api/graphql");
    assert_eq!(data["ok"], 1);
    let repo = client
        .get_json("/repos/o/r")
        .await
        .expect("REST under /api/v3");
    assert_eq!(repo["id"], 7);
}

#[tokio::test]
async fn empty_token_is_refused() {
    assert!(matches!(
        GitHubClient::with_token(DEFAULT_API_URL, Secret::new("  ")),
        Err(GitHubError::Credentials(_))
    ));
}
