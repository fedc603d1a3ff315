//! Git's smart HTTP protocol for libgit2 over reqwest and rustls, so that fetching from an
//! `https://` (or `http://`) remote needs no system OpenSSL: libgit2 is built without its
//! own HTTPS support and this transport is registered for both schemes instead.
//!
//! Only fetching is supported (`git-upload-pack`: the ref advertisement, then one POST per
//! negotiation round, as the stateless RPC protocol has it); pushing is refused.
//! Credentials are never in a URL (libgit2 writes remote URLs into `FETCH_HEAD`): a fetch
//! runs inside [`with_token`], which lends the token to this thread's requests, sent as
//! HTTP basic authentication (`x-access-token`, as GitHub and GitLab take it) to the
//! remote's own origin only: a redirect elsewhere ends the fetch with an error
//! ([`crate::redirect`]), so neither the token goes there nor a pack comes from there.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::sync::Once;
use std::time::Duration;

use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};

use crate::llm::Secret;

/// The user name a token is sent with.
const TOKEN_USER: &str = "x-access-token";

/// Longest wait for a connection to the remote.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest wait for an answer, and for each read of it (a pack may take long in all, but
/// never stalls this long).
const READ_TIMEOUT: Duration = Duration::from_secs(120);

thread_local! {
    /// The token this thread's fetch may send (see [`with_token`]).
    static TOKEN: RefCell<Option<Secret>> = const { RefCell::new(None) };
}

/// Runs `fetch` with `token` lent to the HTTP transport's requests on this thread (libgit2
/// runs a fetch's requests on the thread that asked for it); the token is taken back
/// afterwards, whatever happens.
pub(crate) fn with_token<T>(token: Option<&Secret>, fetch: impl FnOnce() -> T) -> T {
    struct Restore(Option<Secret>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            TOKEN.with(|slot| *slot.borrow_mut() = previous);
        }
    }
    let previous = TOKEN.with(|slot| slot.replace(token.cloned()));
    let _restore = Restore(previous);
    fetch()
}

/// Registers the transport for `http://` and `https://` remotes, once per process, before
/// the first fetch (registration is not synchronised with libgit2's own use of its list,
/// so every fetch path calls this first; [`Once`] makes the others wait for it).
pub(crate) fn register() -> Result<(), git2::Error> {
    static REGISTER: Once = Once::new();
    let mut result = Ok(());
    REGISTER.call_once(|| {
        for scheme in ["http", "https"] {
            // SAFETY: run once, before any fetch (every fetch path calls `register` first,
            // and `call_once` blocks concurrent callers until it is done).
            let registered = unsafe {
                git2::transport::register(scheme, |remote| {
                    Transport::smart(remote, true, HttpSubtransport)
                })
            };
            if let Err(error) = registered {
                result = Err(error);
            }
        }
    });
    result
}

/// Makes one stream per request.
struct HttpSubtransport;

impl SmartSubtransport for HttpSubtransport {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let base = url.trim_end_matches('/');
        let request = match action {
            Service::UploadPackLs => {
                Request::Get(format!("{base}/info/refs?service=git-upload-pack"))
            }
            Service::UploadPack => Request::Post(format!("{base}/git-upload-pack")),
            Service::ReceivePackLs | Service::ReceivePack => {
                return Err(git2::Error::from_str(
                    "Redline only fetches; it never pushes",
                ));
            }
        };
        let token = TOKEN.with(|slot| slot.borrow().clone());
        Ok(Box::new(HttpStream {
            request: Some(request),
            body: Vec::new(),
            response: None,
            token,
        }))
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

/// What a stream asks the server.
enum Request {
    /// The ref advertisement.
    Get(String),
    /// A negotiation round: the body is what libgit2 wrote before its first read.
    Post(String),
}

/// One request: libgit2 writes the body (a POST's), then reads the answer.
struct HttpStream {
    request: Option<Request>,
    body: Vec<u8>,
    response: Option<reqwest::blocking::Response>,
    token: Option<Secret>,
}

impl HttpStream {
    /// Sends the request (once, at the first read) and keeps the answer to read from.
    fn send(&mut self) -> io::Result<&mut reqwest::blocking::Response> {
        if let Some(request) = self.request.take() {
            let client = client().map_err(io::Error::other)?;
            let (builder, url, expected) = match request {
                Request::Get(url) => (
                    client.get(&url),
                    url,
                    "application/x-git-upload-pack-advertisement",
                ),
                Request::Post(url) => (
                    client
                        .post(&url)
                        .header("Content-Type", "application/x-git-upload-pack-request")
                        .header("Accept", "application/x-git-upload-pack-result")
                        .body(std::mem::take(&mut self.body)),
                    url,
                    "application/x-git-upload-pack-result",
                ),
            };
            let builder = match &self.token {
                Some(token) => builder.basic_auth(TOKEN_USER, Some(token.expose())),
                None => builder,
            };
            let response = builder
                .send()
                .map_err(|e| match crate::redirect::refused(&e) {
                    Some(refused) => io::Error::other(format!("{}: {refused}", shown_url(&url))),
                    None => io::Error::other(without_url(&e)),
                })?;
            check(&response, &url, expected)?;
            self.response = Some(response);
        }
        self.response
            .as_mut()
            .ok_or_else(|| io::Error::other("the request was already answered"))
    }
}

impl Read for HttpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.send()?.read(buf)
    }
}

impl Write for HttpStream {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.request.is_none() {
            return Err(io::Error::other("the request was already sent"));
        }
        self.body.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The HTTP client of every fetch (rustls, the system's proxy variables).
fn client() -> reqwest::Result<reqwest::blocking::Client> {
    reqwest::blocking::Client::builder()
        .user_agent(concat!("git/2.0 (redline/", env!("CARGO_PKG_VERSION"), ")"))
        .redirect(crate::redirect::same_origin())
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(READ_TIMEOUT)
        .build()
}

/// A refused request as git says it: `401` asks for a token with read access, a server
/// that does not speak git's smart protocol is named as such.
fn check(response: &reqwest::blocking::Response, url: &str, expected: &str) -> io::Result<()> {
    let status = response.status();
    let shown = shown_url(url);
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        return Err(io::Error::other(format!(
            "{shown} answered {status}: the token may not read this repository"
        )));
    }
    if !status.is_success() {
        return Err(io::Error::other(format!("{shown} answered {status}")));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !content_type.starts_with(expected) {
        return Err(io::Error::other(format!(
            "{shown} does not speak git's smart HTTP protocol (content type `{content_type}`)"
        )));
    }
    Ok(())
}

/// `url` as it may be shown: without credentials (a CI clone's remote URL carries its job
/// token) and without the query.
fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.to_string()
        }
        Err(_) => "the remote".to_string(),
    }
}

/// reqwest's error without the URL (it is already in git's message around it).
fn without_url(error: &reqwest::Error) -> String {
    let mut error = error.to_string();
    if let Some(at) = error.find(" for url (") {
        error.truncate(at);
    }
    error
}
