//! [`GitHttpServer`]: git's smart HTTP protocol on `127.0.0.1`, as GitHub and GitLab serve
//! it, made by running `git http-backend` (git's own CGI program) for each request. With a
//! token, every request must carry it as HTTP basic authentication (`401` otherwise, with
//! a `WWW-Authenticate` challenge); the `Authorization` header of each request is recorded.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use tokio::io::AsyncWriteExt;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct GitHttpRequest {
    /// The path and query, e.g. `/repo/info/refs?service=git-upload-pack`.
    pub target: String,
    /// The `Authorization` header, when sent.
    pub authorization: Option<String>,
}

struct ServerState {
    root: PathBuf,
    expected_authorization: Option<String>,
    requests: Mutex<Vec<GitHttpRequest>>,
}

/// Serves the repositories under a directory over smart HTTP.
pub struct GitHttpServer {
    addr: std::net::SocketAddr,
    state: Arc<ServerState>,
    task: tokio::task::JoinHandle<()>,
}

impl GitHttpServer {
    /// Serves the repositories under `root` (`http://127.0.0.1:PORT/NAME` for `root/NAME`);
    /// with `basic`, only to requests whose basic authentication is `user:password`.
    pub async fn serve(root: &Path, basic: Option<(&str, &str)>) -> GitHttpServer {
        let expected_authorization = basic.map(|(user, password)| {
            use base64::Engine as _;
            let pair = format!("{user}:{password}");
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        });
        let state = Arc::new(ServerState {
            root: root.to_path_buf(),
            expected_authorization,
            requests: Mutex::new(Vec::new()),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the git server");
        let addr = listener.local_addr().expect("git server address");
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("git server");
        });
        GitHttpServer { addr, state, task }
    }

    /// `http://127.0.0.1:PORT/NAME`.
    pub fn url(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<GitHttpRequest> {
        self.state.requests.lock().expect("requests lock").clone()
    }
}

impl Drop for GitHttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let authorization = header("authorization");
    state
        .requests
        .lock()
        .expect("requests lock")
        .push(GitHttpRequest {
            target: uri.to_string(),
            authorization: authorization.clone(),
        });
    if state.expected_authorization.is_some() && authorization != state.expected_authorization {
        return Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header("www-authenticate", "Basic realm=\"git\"")
            .body(Body::from("authentication required"))
            .expect("401");
    }
    let mut child = tokio::process::Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", &state.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", method.as_str())
        .env("PATH_INFO", uri.path())
        .env("QUERY_STRING", uri.query().unwrap_or_default())
        .env("CONTENT_TYPE", header("content-type").unwrap_or_default())
        .env("CONTENT_LENGTH", body.len().to_string())
        .env(
            "HTTP_CONTENT_ENCODING",
            header("content-encoding").unwrap_or_default(),
        )
        .env("GIT_PROTOCOL", header("git-protocol").unwrap_or_default())
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("git http-backend");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(&body).await.expect("request body");
    drop(stdin);
    let output = child.wait_with_output().await.expect("http-backend output");
    cgi_response(&output.stdout)
}

/// An HTTP response from a CGI program's output: headers (`Status:` among them) up to a
/// blank line, then the body.
fn cgi_response(output: &[u8]) -> Response {
    let split = output
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, at + 4))
        .or_else(|| {
            output
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|at| (at, at + 2))
        })
        .expect("CGI headers");
    let head = String::from_utf8_lossy(&output[..split.0]).into_owned();
    let mut response = Response::builder().status(StatusCode::OK);
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code: u16 = value
                .split_whitespace()
                .next()
                .and_then(|c| c.parse().ok())
                .expect("CGI status");
            response = response.status(code);
        } else {
            response = response.header(name.trim(), value);
        }
    }
    response
        .body(Body::from(output[split.1..].to_vec()))
        .expect("CGI response")
}
